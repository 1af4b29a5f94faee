"""The one OpenAI-compatible chat-completions client (over `requests`), and its disk cache.

Used by enrichment (VLM image descriptions, LLM table summaries) and by batch QA answering.

- Endpoint: `settings.llm.llm_base_url`, e.g. "https://api.openai.com/v1" or "http://127.0.0.1:8000/v1";
  calls go to `{base}/chat/completions` (a URL that already ends in `/chat/completions` is used as is).
- Key: only from the environment variable `KBFLOW_LLM_API_KEY`, sent as `Authorization: Bearer …`
  (optional: local servers often need none). It is never a setting, never logged, never written to
  a cache file, and redacted from every error message even when a server echoes it back.
- Retries: HTTP 429 and 5xx, timeouts and connection errors are retried with exponential backoff
  and jitter, honouring `Retry-After` (seconds or an HTTP date, capped); other 4xx fail at once.
  Every failure is an `LLMError` subclass (see `schemas.errors`).
- `DiskCache`: one small JSON file per (model, prompt version, content md5), written atomically, so
  re-running the same work never pays for the same answer twice.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import re
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from urllib.parse import urlsplit

import requests

from schemas.errors import (  # noqa: F401  (re-exported: callers catch them from here)
    LLMAuthError,
    LLMConfigError,
    LLMError,
    LLMRequestError,
    LLMResponseError,
    LLMUnavailableError,
)
from tasks.common.http import redact, retry_after_seconds, safe_url

API_KEY_ENV = "KBFLOW_LLM_API_KEY"
log = logging.getLogger("kbflow.llm")

_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)


def api_key_from_env() -> str | None:
    return os.environ.get(API_KEY_ENV, "").strip() or None


def message_text(content: Any) -> str:
    """A chat message's content as text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type", "text") == "text")
    return ""


@dataclass
class ChatClient:
    """Chat completions against one OpenAI-compatible endpoint. Thread-safe (one session per thread)."""

    base_url: str
    api_key: str | None = field(default=None, repr=False)
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 120.0
    max_retries: int = 4  # after the first attempt
    backoff_s: float = 1.0  # first retry waits ~1 s, then 2, 4, … (with jitter)
    max_backoff_s: float = 60.0  # also caps Retry-After
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    key_env: str = API_KEY_ENV  # where the key came from, for messages (the reranker has its own)

    def __post_init__(self) -> None:
        base = (self.base_url or "").strip().rstrip("/")
        if urlsplit(base).scheme not in ("http", "https") or not urlsplit(base).hostname:
            raise LLMConfigError(f"llm_base_url must be an http(s) URL, got {safe_url(base)!r}")
        self.base_url = base
        self._local = threading.local()
        self._lock = threading.Lock()
        self.requests_sent = 0  # HTTP attempts, retries included

    @classmethod
    def from_env(cls, base_url: str, **kwargs: Any) -> "ChatClient":
        """A client whose key comes from `KBFLOW_LLM_API_KEY` (if set)."""
        return cls(base_url, api_key=api_key_from_env(), **kwargs)

    @property
    def url(self) -> str:
        return self.base_url if self.base_url.endswith("/chat/completions") else f"{self.base_url}/chat/completions"

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        return session

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def _clean(self, text: str, limit: int = 300) -> str:
        text = " ".join(redact(str(text), self.api_key).split())
        return text[:limit] + ("…" if len(text) > limit else "")

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_backoff_s)
        return min(self.max_backoff_s, self.backoff_s * (2 ** attempt)) * random.uniform(0.5, 1.0)

    def chat(self, messages: Sequence[dict[str, Any]], *, model: str, temperature: float = 0.0,
             max_tokens: int | None = 1024, timeout_s: float | None = None, strip_reasoning: bool = True,
             **params: Any) -> str:
        """The assistant's answer to `messages` (OpenAI format; content may hold image_url parts).

        Extra keyword arguments go into the request body as they are (`top_p`, `stop`,
        `response_format`, …). A leading `<think>…</think>` block of reasoning models is dropped
        unless `strip_reasoning=False`. Raises an `LLMError` subclass; never returns "".
        """
        if not model:
            raise LLMConfigError("no model given (set llm_model / vlm_model)")
        body: dict[str, Any] = {"model": model, "messages": list(messages), "temperature": temperature, **params}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        resp = self.post(self.url, body, what=f"chat completion, model {model}", model=model, timeout_s=timeout_s)
        return self._answer(resp, safe_url(self.url), strip_reasoning)

    def post(self, url: str, body: Any, *, what: str, model: str = "", timeout_s: float | None = None,
             ) -> requests.Response:
        """POST `body` as JSON to `url` with the retries above; the HTTP 200 response. Also used by
        the HTTP rerank client (same key handling, same backoff)."""
        timeout = (self.connect_timeout_s, timeout_s or self.read_timeout_s)
        where = safe_url(url)
        last = ""
        status: int | None = None
        for attempt in range(self.max_retries + 1):
            retry_after = None
            with self._lock:
                self.requests_sent += 1
            try:
                resp = self._session().post(url, json=body, headers=self._headers(), timeout=timeout)
            except requests.Timeout:
                last, status = f"timed out after {timeout[1]:g}s", None
            except requests.ConnectionError as exc:
                last, status = f"connection failed ({type(exc).__name__})", None
            except requests.RequestException as exc:  # invalid URL and the like: retrying will not help
                raise LLMConfigError(f"{where}: {self._clean(exc)}") from None
            else:
                status = resp.status_code
                if status == 200:
                    return resp
                detail = self._clean(resp.text, 200)
                if status in (401, 403):
                    raise LLMAuthError(f"{where}: HTTP {status}, the endpoint refused the key "
                                       f"(check {self.key_env}): {detail}", status=status)
                if status != 429 and status < 500 and status != 408:
                    raise LLMRequestError(f"{where}: HTTP {status} for model {model!r}: {detail}", status=status)
                last = f"HTTP {status}: {detail}"
                retry_after = retry_after_seconds(resp.headers.get("Retry-After"))
            if attempt < self.max_retries:
                delay = self._delay(attempt, retry_after)
                log.warning("%s (%s): %s; retry %d/%d in %.1fs", what, where, last, attempt + 1, self.max_retries,
                            delay)
                self.sleep(delay)
        raise LLMUnavailableError(f"{where}: {last} (gave up after {self.max_retries + 1} attempts)", status=status)

    def _answer(self, resp: requests.Response, where: str, strip_reasoning: bool) -> str:
        try:
            data = resp.json()
        except ValueError:
            raise LLMResponseError(f"{where}: HTTP 200 but not JSON: {self._clean(resp.text, 120)}") from None
        try:
            choice = data["choices"][0]
            text = message_text(choice["message"].get("content"))
        except (KeyError, IndexError, TypeError, AttributeError):
            error = data.get("error") if isinstance(data, dict) else None
            what = f"error {self._clean(json.dumps(error, ensure_ascii=False), 200)}" if error else "no choices[0].message"
            raise LLMResponseError(f"{where}: not a chat completion ({what})") from None
        if strip_reasoning:
            text = _THINK.sub("", text)
        text = text.strip()
        if not text:
            reason = choice.get("finish_reason") if isinstance(choice, dict) else None
            raise LLMResponseError(f"{where}: empty answer (finish_reason={reason!r})")
        return text


def chat(messages: Sequence[dict[str, Any]], *, model: str, base_url: str, temperature: float = 0.0,
         max_tokens: int | None = 1024, **params: Any) -> str:
    """One call with a client built from `base_url` and `KBFLOW_LLM_API_KEY` (see `ChatClient.chat`)."""
    return ChatClient.from_env(base_url).chat(messages, model=model, temperature=temperature,
                                              max_tokens=max_tokens, **params)


# ---------------------------------------------------------------- disk cache


def content_md5(*parts: str | bytes) -> str:
    """MD5 over several parts, each length-prefixed so ("ab", "c") and ("a", "bc") differ."""
    digest = hashlib.md5()
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        digest.update(f"{len(data)}:".encode())
        digest.update(data)
    return digest.hexdigest()


class DiskCache:
    """Answers on disk, one JSON file per (model, prompt version, content md5), under `root`.

    The file holds the three key parts and the text (never a key or a URL); writes are temp file +
    rename, so a crash never leaves a half-written entry, and concurrent writers of one entry
    simply both succeed.
    """

    def __init__(self, root: Path):
        self.root = Path(root)

    @staticmethod
    def key(model: str, prompt_version: str, md5: str) -> str:
        return hashlib.sha256(json.dumps([model, prompt_version, md5]).encode("utf-8")).hexdigest()

    def path(self, model: str, prompt_version: str, md5: str) -> Path:
        key = self.key(model, prompt_version, md5)
        return self.root / key[:2] / f"{key}.json"

    def get(self, model: str, prompt_version: str, md5: str) -> str | None:
        path = self.path(model, prompt_version, md5)
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # absent or unreadable: the call is made again and the entry rewritten
        if not isinstance(record, dict) or [record.get("model"), record.get("prompt_version"),
                                            record.get("content_md5")] != [model, prompt_version, md5]:
            return None
        text = record.get("text")
        return text if isinstance(text, str) and text.strip() else None

    def put(self, model: str, prompt_version: str, md5: str, text: str) -> Path:
        path = self.path(model, prompt_version, md5)
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {"model": model, "prompt_version": prompt_version, "content_md5": md5, "text": text,
                  "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem[:16]}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(record, fh, ensure_ascii=False)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return path
