"""The `mineru-api` backend: the MinerU cloud API v4 (mineru.net), one file per batch.

1. POST `{base}/api/v4/file-urls/batch` {"files": [{"name", "data_id"}], "model_version"}
   → `batch_id` and a pre-signed upload URL;
2. PUT the file's bytes to that URL;
3. poll GET `{base}/api/v4/extract-results/batch/{batch_id}` every `poll_interval_s` (5 s) while
   the state is waiting-file/pending/running/converting, within an overall `timeout_s`;
   `done` gives `full_zip_url`, `failed` is an error;
4. download the zip and import it with the `import` backend (`safe_extract`: no absolute paths,
   no `..`, no symlinks; `*_content_list*.json` + `layout.json` by suffix) into the usual layout.

The token comes only from the environment variable `MINERU_API_TOKEN` and is sent only to the
API base URL (never to the storage URLs of steps 2 and 4); it never appears in a message.
Transient failures (HTTP 429/5xx, timeouts, connection errors, "queue full") are retried with
backoff; API error codes become the `MineruApi*Error` classes of `schemas.errors`.
"""
from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import requests

from schemas import errors
from tasks.common.http import redact, retry_after_seconds, safe_url

TOKEN_ENV = "MINERU_API_TOKEN"
API_VERSION = "v4"
MODEL_VERSION = "vlm"  # MinerU's VLM backend: richer v2 content (image descriptions, chart data)
POLL_INTERVAL_S = 5.0
TIMEOUT_S = 30 * 60.0  # overall, from submission to a finished task
REQUEST_TIMEOUT = (10.0, 60.0)  # connect, read: API calls
TRANSFER_TIMEOUT = (10.0, 600.0)  # upload and zip download
MAX_RETRIES = 3
BACKOFF_S = 2.0
MAX_ZIP_BYTES = 1024**3
# what the cloud API takes; other kinds (xlsx, csv, epub, …) go straight to local MinerU
API_EXTENSIONS = frozenset({"pdf", "doc", "docx", "ppt", "pptx", "png", "jpg", "jpeg", "html"})
PENDING_STATES = frozenset({"waiting-file", "pending", "running", "converting"})

log = logging.getLogger("kbflow.parse.mineru_api")

_Err = type[errors.MineruApiError]
# code → (error class, what it means and what to do). Codes from the MinerU API v4 documentation.
API_CODES: dict[str, tuple[_Err, str]] = {
    "A0202": (errors.MineruApiAuthError, f"token rejected (A0202): check {TOKEN_ENV} (the bare token, no 'Bearer ')"),
    "A0211": (errors.MineruApiAuthError, f"token expired (A0211): create a new one at mineru.net and set {TOKEN_ENV}"),
    "-500": (errors.MineruApiError, "request rejected as malformed (-500)"),
    "-10001": (errors.MineruApiError, "MinerU service error (-10001)"),
    "-10002": (errors.MineruApiError, "request parameters rejected (-10002)"),
    "-60001": (errors.MineruApiError, "could not create an upload URL (-60001)"),
    "-60002": (errors.MineruApiFileRejectedError, "file format not recognised (-60002)"),
    "-60003": (errors.MineruApiFileRejectedError, "file could not be read, corrupt or encrypted? (-60003)"),
    "-60004": (errors.MineruApiFileRejectedError, "empty file (-60004)"),
    "-60005": (errors.MineruApiFileRejectedError, "file too large for the API (-60005, limit 200 MB): split it or parse locally"),
    "-60006": (errors.MineruApiFileRejectedError, "too many pages for the API (-60006, limit 600): split the file"),
    "-60007": (errors.MineruApiQuotaError, "MinerU model service temporarily unavailable (-60007): try later"),
    "-60008": (errors.MineruApiTaskFailedError, "MinerU timed out reading the file (-60008)"),
    "-60009": (errors.MineruApiQuotaError, "MinerU task queue is full (-60009): try later"),
    "-60010": (errors.MineruApiTaskFailedError, "MinerU could not parse the file (-60010)"),
    "-60011": (errors.MineruApiTaskFailedError, "MinerU found no valid uploaded file (-60011)"),
    "-60012": (errors.MineruApiError, "task not found (-60012)"),
    "-60013": (errors.MineruApiAuthError, "this token may not access the task (-60013)"),
    "-60015": (errors.MineruApiTaskFailedError, "file conversion failed (-60015): convert it to PDF and retry"),
    "-60016": (errors.MineruApiTaskFailedError, "file conversion failed (-60016)"),
    "-60017": (errors.MineruApiTaskFailedError, "retry limit reached for this file (-60017)"),
    "-60018": (errors.MineruApiQuotaError, "daily parse limit reached (-60018): try again tomorrow"),
    "-60019": (errors.MineruApiQuotaError, "HTML parse quota exhausted (-60019)"),
    "-60020": (errors.MineruApiTaskFailedError, "file split failed (-60020)"),
    "-60021": (errors.MineruApiTaskFailedError, "could not read the page count (-60021)"),
}
TRANSIENT_CODES = frozenset({"-60007", "-60009"})  # retried like HTTP 503


def api_token() -> str | None:
    return os.environ.get(TOKEN_ENV, "").strip() or None


def accepts(path: Path) -> bool:
    return path.suffix.lower().lstrip(".") in API_EXTENSIONS


class _Retry(Exception):
    """A transient failure of one request (internal)."""

    def __init__(self, reason: str, retry_after: float | None = None, error: errors.MineruApiError | None = None):
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.error = error  # raised as is when the retries run out


@dataclass
class MineruApiClient:
    base_url: str
    token: str = field(repr=False)
    model_version: str = MODEL_VERSION
    poll_interval_s: float = POLL_INTERVAL_S
    timeout_s: float = TIMEOUT_S
    max_retries: int = MAX_RETRIES
    backoff_s: float = BACKOFF_S
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)

    def __post_init__(self) -> None:
        self.base_url = (self.base_url or "").strip().rstrip("/")

    # ------------------------------------------------------------ helpers

    def _clean(self, text: Any, limit: int = 200) -> str:
        text = " ".join(redact(str(text), self.token).split())
        return text[:limit] + ("…" if len(text) > limit else "")

    def _error(self, path: Path, cls: _Err, reason: str) -> errors.MineruApiError:
        return cls(str(path), f"MinerU API: {self._clean(reason, 400)}")

    def _code_error(self, path: Path, code: Any, msg: str, status: int | None = None) -> errors.MineruApiError:
        """The error for an API `code` (or, for unknown codes, the HTTP status and message)."""
        code = "" if code is None else str(code).strip()
        msg = self._clean(msg or "")
        if code in API_CODES:
            cls, text = API_CODES[code]
            return self._error(path, cls, f"{text}" + (f" — {msg}" if msg else ""))
        low = msg.lower()
        if status in (401, 403) or "token" in low:
            cls = errors.MineruApiAuthError
            hint = f"check {TOKEN_ENV}"
        elif status == 413 or "too large" in low or ("page" in low and "limit" in low):
            cls, hint = errors.MineruApiFileRejectedError, "the file exceeds the API's limits"
        elif status == 429 or "limit" in low or "quota" in low:
            cls, hint = errors.MineruApiQuotaError, "try later"
        else:
            cls, hint = errors.MineruApiError, ""
        parts = [f"code {code}" if code else "", f"HTTP {status}" if status and status != 200 else "", msg, hint]
        return self._error(path, cls, "; ".join(p for p in parts if p))

    def _request(self, path: Path, what: str, method: str, url: str, *, auth: bool,
                 check: Callable[[requests.Response], Any], timeout: tuple[float, float] = REQUEST_TIMEOUT,
                 deadline: float | None = None, body: Callable[[], Any] | None = None, **kwargs: Any) -> Any:
        """One HTTP exchange with retries on transient failures; `check` turns the response into
        the result (raising `_Retry` for a transient answer). `body` opens the request body afresh
        for each attempt (a file to stream)."""
        headers = {"Authorization": f"Bearer {self.token}"} if auth else {}
        where = safe_url(url)
        final: errors.MineruApiError | None = None
        for attempt in range(self.max_retries + 1):
            retry_after, final = None, None
            try:
                with contextlib.ExitStack() as stack:
                    if body is not None:
                        kwargs["data"] = stack.enter_context(body())
                    resp = stack.enter_context(requests.request(method, url, headers=headers, timeout=timeout,
                                                                **kwargs))
                    if resp.status_code == 429 or resp.status_code >= 500:
                        limited = self._code_error(path, None, resp.text, 429) if resp.status_code == 429 else None
                        raise _Retry(f"HTTP {resp.status_code}: {self._clean(resp.text, 120)}",
                                     _seconds(resp.headers.get("Retry-After")), limited)
                    return check(resp)
            except _Retry as exc:
                reason, retry_after, final = exc.reason, exc.retry_after, exc.error
            except requests.Timeout:
                reason = f"timed out after {timeout[1]:g}s"
            except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError) as exc:
                reason = f"connection failed ({type(exc).__name__})"
            except requests.RequestException as exc:  # an invalid URL and the like: retrying cannot help
                raise self._error(path, errors.MineruApiError, f"{what} ({where}): {type(exc).__name__}") from None
            delay = retry_after if retry_after is not None else self.backoff_s * (2 ** attempt)
            if attempt >= self.max_retries or (deadline is not None and self.clock() + delay > deadline):
                break
            log.warning("MinerU API %s (%s): %s; retry %d/%d in %.1fs", what, where, self._clean(reason),
                        attempt + 1, self.max_retries, delay)
            self.sleep(delay)
        raise final or self._error(path, errors.MineruApiError, f"{what} failed ({where}): {reason}")

    def _json(self, path: Path, resp: requests.Response) -> dict:
        """The `data` of an API answer {"code": 0, "data": …}; a non-zero code is an error."""
        try:
            body = resp.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            if resp.status_code != 200:
                raise self._code_error(path, None, resp.text, resp.status_code)
            raise self._error(path, errors.MineruApiError, f"answer is not JSON: {resp.text[:120]}")
        code = body.get("code")
        if resp.status_code != 200 or str(code) != "0":
            if str(code) in TRANSIENT_CODES:
                error = self._code_error(path, code, body.get("msg", ""))
                raise _Retry(error.reason, error=error)
            raise self._code_error(path, code, body.get("msg") or body.get("message") or "", resp.status_code)
        data = body.get("data")
        if not isinstance(data, dict):
            raise self._error(path, errors.MineruApiError, "answer has no 'data' object")
        return data

    # ------------------------------------------------------------ the four steps

    def submit(self, path: Path, data_id: str = "") -> tuple[str, str]:
        """Ask for an upload URL: (batch_id, upload URL)."""
        entry: dict[str, Any] = {"name": path.name}
        if data_id:
            entry["data_id"] = data_id
        payload = {"files": [entry], "model_version": self.model_version}
        data = self._request(path, "submit", "POST", f"{self.base_url}/api/{API_VERSION}/file-urls/batch",
                             auth=True, json=payload, check=lambda r: self._json(path, r))
        batch_id, urls = data.get("batch_id"), data.get("file_urls") or data.get("files")
        if not isinstance(batch_id, str) or not batch_id or not isinstance(urls, list) or not urls:
            raise self._error(path, errors.MineruApiError, "submit answer lacks batch_id or file_urls")
        return batch_id, _http_url(self, path, urls[0], "upload URL")

    def upload(self, path: Path, url: str) -> None:
        """PUT the bytes to the pre-signed URL (no token, no Content-Type: the signature covers it)."""
        def send(resp: requests.Response) -> None:
            if resp.status_code not in (200, 201, 204):
                raise self._error(path, errors.MineruApiError, f"upload refused: HTTP {resp.status_code}: "
                                  f"{self._clean(resp.text, 120)}")

        self._request(path, "upload", "PUT", url, auth=False, timeout=TRANSFER_TIMEOUT,
                      body=lambda: path.open("rb"), check=send)

    def wait(self, path: Path, batch_id: str, *, started: float | None = None) -> str:
        """Poll until the task is done (→ full_zip_url), failed (error) or the overall timeout."""
        deadline = (started if started is not None else self.clock()) + self.timeout_s
        url = f"{self.base_url}/api/{API_VERSION}/extract-results/batch/{quote(batch_id, safe='')}"
        state = "submitted"
        while True:
            data = self._request(path, "poll", "GET", url, auth=True, deadline=deadline,
                                 check=lambda r: self._json(path, r))
            result = _result_for(data.get("extract_result"), path)
            state = str(result.get("state", "")) if result else "waiting-file"
            if state == "done":
                return _http_url(self, path, result.get("full_zip_url"), "full_zip_url")
            if state == "failed":
                code = result.get("err_code")
                msg = result.get("err_msg") or "no reason given"
                if code not in (None, "", 0) and str(code) in API_CODES:
                    raise self._code_error(path, code, msg)
                raise self._error(path, errors.MineruApiTaskFailedError, f"task failed (batch {batch_id}): {msg}")
            if state not in PENDING_STATES:
                raise self._error(path, errors.MineruApiError, f"unknown task state {state!r} (batch {batch_id})")
            progress = result.get("extract_progress") if result else None
            if isinstance(progress, dict):
                log.debug("%s: %s, %s/%s pages", path.name, state, progress.get("extracted_pages"),
                          progress.get("total_pages"))
            if self.clock() + self.poll_interval_s > deadline:
                raise self._error(path, errors.MineruApiTimeoutError,
                                  f"task not finished after {self.timeout_s:g}s (state {state!r}, batch {batch_id})")
            self.sleep(self.poll_interval_s)

    def download(self, path: Path, url: str, archive: Path) -> None:
        """Stream the result zip to `archive` (no token sent), refusing more than MAX_ZIP_BYTES."""
        tmp = archive.with_name(archive.name + ".part")

        def save(resp: requests.Response) -> None:
            if resp.status_code != 200:
                raise self._error(path, errors.MineruApiError, f"result zip download: HTTP {resp.status_code}")
            size = 0
            with tmp.open("wb") as fh:
                for block in resp.iter_content(1 << 20):
                    size += len(block)
                    if size > MAX_ZIP_BYTES:
                        raise self._error(path, errors.MineruApiError,
                                          f"result zip larger than {MAX_ZIP_BYTES // 1024**2} MiB")
                    fh.write(block)

        try:
            self._request(path, "download", "GET", url, auth=False, timeout=TRANSFER_TIMEOUT, stream=True, check=save)
            tmp.replace(archive)
        finally:
            tmp.unlink(missing_ok=True)

    def parse(self, path: Path, out: Path, *, data_id: str = "") -> None:
        """The whole exchange for one file; the output lands in `out` like any other backend's."""
        from tasks.ingest.parse.mineru_import import import_mineru_output

        started = self.clock()
        batch_id, upload_url = self.submit(path, data_id)
        self.upload(path, upload_url)
        zip_url = self.wait(path, batch_id, started=started)
        archive = out / ".mineru_api_result.zip"
        try:
            self.download(path, zip_url, archive)
            try:
                import_mineru_output(archive, out)
            except errors.ImportFormatError as exc:  # name the user's file, not the temporary zip
                raise type(exc)(str(path), f"MinerU API result zip: {exc.reason.replace(str(archive), 'zip')}") from None
        finally:
            archive.unlink(missing_ok=True)


def _seconds(value: str | None) -> float | None:
    seconds = retry_after_seconds(value)
    return None if seconds is None else min(seconds, 60.0)


def _http_url(client: MineruApiClient, path: Path, value: Any, what: str) -> str:
    if not isinstance(value, str) or urlsplit(value).scheme not in ("http", "https") or not urlsplit(value).hostname:
        raise client._error(path, errors.MineruApiError, f"{what} is not an http(s) URL: {str(value)[:80]!r}")
    return value


def _result_for(results: Any, path: Path) -> dict | None:
    """This file's entry of `extract_result` (a list for batches; a single dict is accepted too)."""
    if isinstance(results, dict):
        return results
    if not isinstance(results, list) or not results:
        return None
    entries = [r for r in results if isinstance(r, dict)]
    for entry in entries:
        if entry.get("file_name") == path.name:
            return entry
    return entries[0] if entries else None


def parse_with_mineru_api(path: Path, out: Path, *, base_url: str, data_id: str = "",
                          poll_interval_s: float | None = None, timeout_s: float | None = None) -> None:
    """Parse `path` through the cloud API into `out` (token from MINERU_API_TOKEN).

    The poll interval and overall timeout default to the module's POLL_INTERVAL_S / TIMEOUT_S
    (read at call time, so a caller or test can change them)."""
    token = api_token()
    if not token:
        raise errors.MineruApiConfigError(str(path), f"{TOKEN_ENV} is not set")
    if urlsplit(base_url).scheme not in ("http", "https"):
        raise errors.MineruApiConfigError(str(path), f"mineru_api_base_url must be an http(s) URL, got {base_url!r}")
    client = MineruApiClient(base_url, token,
                             poll_interval_s=POLL_INTERVAL_S if poll_interval_s is None else poll_interval_s,
                             timeout_s=TIMEOUT_S if timeout_s is None else timeout_s)
    client.parse(path, out, data_id=data_id)
