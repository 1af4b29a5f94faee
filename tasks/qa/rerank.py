"""The rerank stage: one `Reranker` over three backends users actually have; scores are
probabilities on the rerank scale ([0, 1]), so the seeds' rerank-scale thresholds (context min
score, rescue floor, confidence, CRAG cut-off) apply whichever backend produced them.

Backends (`reranker_from_settings`, setting `rerank_backend`; "" = chosen from what is set):
- `HttpRerankBackend` (`rerank_url`, `rerank_model`): the `/rerank` endpoints of inference servers.
  Two request shapes exist in the field and both are spoken (`rerank_api`: tei / cohere / auto):
  Hugging Face TEI `{"query", "texts", "truncate"}` → `[{"index", "score"}]`; the Jina/Cohere shape
  `{"model", "query", "documents", "top_n"}` → `{"results": [{"index", "relevance_score"}]}`, served
  by Infinity, Xinference, vLLM (`/rerank`, `/v1/rerank`, `/v2/rerank`), Jina and Cohere. "auto"
  starts with the Cohere shape when a model is named (TEI ignores the model) and switches once for
  good when the server refuses the body (HTTP 400/404/405/422). Scores outside [0, 1] (a server
  asked for raw logits) go through a sigmoid. Key: `KBFLOW_RERANK_API_KEY` (Bearer), optional.
- `LLMRerankBackend` (`rerank_backend = "llm"`): the OpenAI-compatible chat endpoint `llm_base_url`
  (model `rerank_model`, else `llm_model`), listwise: one prompt per question lists its candidates
  (each cut to `rerank_llm_max_chars`) and asks for a 0-10 score each; `parse_llm_scores` reads JSON
  arrays/objects, "3: 8" / "[3] 8/10" / "文档3：8分" lines, code fences and chatter around them.
- `CrossEncoderBackend` (`rerank_model` = a local sentence-transformers CrossEncoder folder):
  sigmoid probabilities, every question's pairs in one predict call.

`Reranker.score_lists` adds what every backend needs: scores cached by (backend + model, query,
md5 of the chunk text) in memory and under `home/cache/rerank` (an append-only JSONL file per
model), retries (`tasks.common.llm.ChatClient`: 429/5xx/timeouts with backoff), remote calls
`rerank_concurrency` at a time, and failure per question: a question whose scores could not be
had gets None — the retriever keeps its fused order, and the run counts it (`qa_results.
rerank_fallback`, `qa_runs.rerank_failures`).
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

from schemas.errors import LLMError, LLMRequestError, LLMResponseError, RerankModelError, SettingsError
from schemas.settings import Settings
from tasks.common.http import safe_url
from tasks.qa.types import Candidate

log = logging.getLogger("kbflow.qa")

RERANK_API_KEY_ENV = "KBFLOW_RERANK_API_KEY"
BACKENDS = ("", "off", "http", "llm", "crossencoder")
API_SHAPES = ("auto", "tei", "cohere")
LLM_PROMPT_VERSION = "listwise-v1"  # part of the LLM reranker's cache key: a new prompt, new scores


# ------------------------------------------------------------------------------------------------
# backends


class CrossEncoderBackend:
    """A sentence-transformers CrossEncoder from a local folder; scores are probabilities (sigmoid)."""

    kind = "crossencoder"
    remote = False

    def __init__(self, model_path: str | Path, *, batch_size: int = 32, max_length: int = 512):
        from sentence_transformers import CrossEncoder

        path = Path(model_path).expanduser()
        if not path.is_dir():
            raise RerankModelError(f"rerank_model {str(model_path)!r} is not a local model folder")
        self.model_id = path.name
        self.batch_size = batch_size
        self.model = CrossEncoder(str(path), device="cpu", max_length=max_length, local_files_only=True)

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        import torch

        if not pairs:
            return np.zeros(0, dtype=np.float32)
        scores = self.model.predict([list(p) for p in pairs], batch_size=self.batch_size, show_progress_bar=False,
                                    activation_fn=torch.nn.Sigmoid(), convert_to_numpy=True)
        return np.asarray(scores, dtype=np.float32).reshape(len(pairs), -1)[:, -1]


def _as_probabilities(scores: list[float]) -> list[float]:
    """Scores as given when they are probabilities; raw logits (any outside [0, 1]) through a sigmoid."""
    if all(0.0 <= s <= 1.0 for s in scores):
        return scores
    return [1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, s)))) for s in scores]


def parse_rerank_response(data, n: int) -> list[float]:
    """Scores in input order from a TEI (`[{"index", "score"}]`) or Jina/Cohere (`{"results": [{"index",
    "relevance_score"}]}`; `data` instead of `results` too) response to `n` texts. Raises
    LLMResponseError when it is neither or does not score every text."""
    items = data if isinstance(data, list) else (data.get("results", data.get("data")) if isinstance(data, dict)
                                                  else None)
    if not isinstance(items, list):
        raise LLMResponseError(f"not a rerank response: {json.dumps(data, ensure_ascii=False)[:120]}")
    scores: dict[int, float] = {}
    for item in items:
        if not isinstance(item, dict):
            raise LLMResponseError(f"not a rerank result: {str(item)[:80]}")
        index = item.get("index")
        score = item.get("relevance_score", item.get("score"))
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n \
                or isinstance(score, bool) or not isinstance(score, (int, float)):
            raise LLMResponseError(f"not a rerank result: {json.dumps(item, ensure_ascii=False)[:80]}")
        scores[index] = float(score)
    if len(scores) != n:
        raise LLMResponseError(f"the rerank response scores {len(scores)} of {n} texts")
    return _as_probabilities([scores[i] for i in range(n)])


def rerank_endpoint(url: str) -> str:
    """The POST URL of a rerank server given its base ("http://h:8080", "http://h:9997/v1") or the
    endpoint itself (".../rerank")."""
    url = url.strip().rstrip("/")
    return url if urlsplit(url).path.endswith("rerank") else f"{url}/rerank"


class HttpRerankBackend:
    """An HTTP `/rerank` endpoint (TEI shape or Jina/Cohere shape), through the retrying client."""

    kind = "http"
    remote = True

    def __init__(self, url: str, model: str = "", *, api: str = "auto", batch_size: int = 32, client=None,
                 timeout_s: float = 60.0, max_retries: int = 3):
        from tasks.common.llm import ChatClient

        if api not in API_SHAPES:
            raise SettingsError(f"rerank_api must be one of {list(API_SHAPES)}, not {api!r}")
        self.url = rerank_endpoint(url)
        self.model = model
        self.model_id = model or safe_url(self.url)
        self.batch_size = max(1, batch_size)
        self.client = client or ChatClient(self.url, api_key=os.environ.get(RERANK_API_KEY_ENV, "").strip() or None,
                                           key_env=RERANK_API_KEY_ENV, read_timeout_s=timeout_s,
                                           max_retries=max_retries)
        self.shape = api if api != "auto" else ("cohere" if model else "tei")
        self._auto = api == "auto"
        self._lock = threading.Lock()

    def _body(self, shape: str, query: str, texts: Sequence[str]) -> dict:
        if shape == "tei":
            return {"query": query, "texts": list(texts), "truncate": True}
        body = {"query": query, "documents": list(texts), "top_n": len(texts)}
        return {"model": self.model, **body} if self.model else body

    def _post(self, shape: str, query: str, texts: Sequence[str]) -> list[float]:
        resp = self.client.post(self.url, self._body(shape, query, texts), what="rerank", model=self.model)
        try:
            data = resp.json()
        except ValueError:
            raise LLMResponseError(f"{safe_url(self.url)}: HTTP 200 but not JSON") from None
        return parse_rerank_response(data, len(texts))

    def score_one(self, query: str, texts: Sequence[str]) -> list[float]:
        out: list[float] = []
        for start in range(0, len(texts), self.batch_size):
            part = texts[start:start + self.batch_size]
            shape = self.shape
            try:
                out += self._post(shape, query, part)
            except LLMRequestError as exc:  # the body was refused: in auto, the other shape, once for good
                if exc.status not in (400, 404, 405, 422):
                    raise
                with self._lock:
                    if self._auto and self.shape == shape:
                        self._auto = False
                        self.shape = "tei" if shape == "cohere" else "cohere"
                        log.info("rerank endpoint %s refused the request (HTTP %s): speaking the %s shape",
                                 safe_url(self.url), exc.status, self.shape)
                if self.shape == shape:  # not auto, or already switched and refused again
                    raise
                out += self._post(self.shape, query, part)
        return out


# -- the LLM reranker

LLM_SYSTEM = "你是检索结果的相关性评审员，只输出评分，不做解释。"
_SCORE_LINE = re.compile(
    r"(?:^|[\s\[\(（【#,，;；{])(?:(?:passage|document|doc|id|no\.?|资料|文档|段落|候选|第)\s*)?(?P<id>\d{1,3})"
    r"\s*[\]\)）】]?\s*(?:条|号|段|篇)?\s*[\]\)）】]?\s*(?:[:：=]|->|→|-|—|,|，|\.(?!\d)|\s)\s*"
    r"(?:(?:score|分数|得分|评分|相关性|relevance)\s*[:：=]?\s*)?(?P<score>\d+(?:\.\d+)?)[ \t]*(?:/[ \t]*(?P<den>\d+)|分)?",
    re.IGNORECASE)


def llm_rerank_messages(query: str, texts: Sequence[str], max_chars: int) -> list[dict[str, str]]:
    listed = "\n".join(f"[{i}] {' '.join(t.split())[:max_chars]}" for i, t in enumerate(texts, 1))
    user = (f"【问题】{query}\n\n【候选资料】\n{listed}\n\n"
            f"请为每条候选资料对回答该问题的帮助打分：0 分表示无关，10 分表示直接包含答案。"
            f"只输出一个 JSON 数组，覆盖全部 {len(texts)} 条，例如 "
            '[{"id": 1, "score": 7}, {"id": 2, "score": 0}]。')
    return [{"role": "system", "content": LLM_SYSTEM}, {"role": "user", "content": user}]


def _json_scores(text: str, n: int) -> dict[int, float] | None:
    """id → score from the first JSON array/object in `text`: [{"id": 1, "score": 7}, …], [7, 0, …]
    (positional), {"1": 7, …} or {"scores": […]}; None when there is none."""
    for opener, closer in (("[", "]"), ("{", "}")):
        start, end = text.find(opener), text.rfind(closer)
        if start < 0 or end <= start:
            continue
        try:
            data = json.loads(text[start:end + 1])
        except ValueError:
            continue
        if isinstance(data, dict):
            inner = next((data[k] for k in ("scores", "results", "ranking", "data") if isinstance(data.get(k), list)),
                         None)
            data = inner if inner is not None else data
        out: dict[int, float] = {}
        if isinstance(data, dict):
            for k, v in data.items():
                if str(k).strip().lstrip("[#").rstrip("]").isdigit() and isinstance(v, (int, float)):
                    out[int(str(k).strip().lstrip("[#").rstrip("]"))] = float(v)
        elif isinstance(data, list):
            for pos, item in enumerate(data, 1):
                if isinstance(item, (int, float)) and not isinstance(item, bool):
                    out[pos] = float(item)
                elif isinstance(item, dict):
                    ident = next((item[k] for k in ("id", "index", "doc", "passage", "rank_id", "编号")
                                  if k in item), None)
                    score = next((item[k] for k in ("score", "relevance", "relevance_score", "rating", "分数", "得分")
                                  if k in item), None)
                    try:
                        out[int(str(ident).strip("[]# "))] = float(score)
                    except (TypeError, ValueError):
                        continue
        if out:
            return out
    return None


def parse_llm_scores(text: str, n: int) -> list[float]:
    """The LLM's 0-10 scores of candidates 1..n as probabilities in input order. Reads JSON first,
    then "id: score" lines; a score "x/den" is read on its own scale; without one, scores ≤ 1 that
    are not all integers are read as probabilities, others on 0-10 (0-100 when any exceeds 10).
    Candidates it did not score get 0; fewer than half scored → LLMResponseError."""
    cleaned = re.sub(r"```(?:json)?", " ", text or "")
    raw = _json_scores(cleaned, n)
    dens: dict[int, float] = {}
    if raw is None:
        raw = {}
        for m in _SCORE_LINE.finditer(cleaned):
            ident = int(m.group("id"))
            if 1 <= ident <= n and ident not in raw:
                raw[ident] = float(m.group("score"))
                if m.group("den"):
                    dens[ident] = float(m.group("den")) or 10.0
    raw = {i: s for i, s in raw.items() if 1 <= i <= n}
    if len(raw) * 2 < n or not raw:
        raise LLMResponseError(f"the LLM reranker scored {len(raw)} of {n} candidates: {' '.join(text.split())[:120]}")
    undivided = [s for i, s in raw.items() if i not in dens]
    scale = 10.0
    if undivided and max(undivided) <= 1.0 and any(s != int(s) for s in undivided):
        scale = 1.0
    elif undivided and max(undivided) > 10.0:
        scale = 100.0
    return [min(1.0, max(0.0, raw[i] / dens.get(i, scale))) if i in raw else 0.0 for i in range(1, n + 1)]


class LLMRerankBackend:
    """Listwise scoring by a chat model through the OpenAI-compatible client (one call per question)."""

    kind = "llm"
    remote = True

    def __init__(self, client, model: str, *, max_chars: int = 600):
        self.client, self.model, self.max_chars = client, model, max_chars
        self.model_id = f"{model}@{LLM_PROMPT_VERSION}"

    def score_one(self, query: str, texts: Sequence[str]) -> list[float]:
        raw = self.client.chat(llm_rerank_messages(query, texts, self.max_chars), model=self.model,
                               max_tokens=32 + 16 * len(texts))
        return parse_llm_scores(raw, len(texts))


# ------------------------------------------------------------------------------------------------
# the cache


def text_md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


class RerankCache:
    """Scores by (model, query, chunk text md5): a dict, persisted as one append-only JSONL file per
    model under `root` (one short line per score, appended under a lock: concurrent runs only ever
    add lines; an unreadable line is skipped)."""

    def __init__(self, root: Path | None, model_key: str):
        self.path = None if root is None else \
            Path(root) / f"{hashlib.sha256(model_key.encode()).hexdigest()[:24]}.jsonl"
        self._scores: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()
        self.hits = self.misses = 0
        if self.path is not None and self.path.exists():
            for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    q, md5, score = json.loads(line)
                    self._scores[(q, md5)] = float(score)
                except (ValueError, TypeError):
                    continue

    def get(self, query: str, md5: str) -> float | None:
        score = self._scores.get((query, md5))
        with self._lock:
            if score is None:
                self.misses += 1
            else:
                self.hits += 1
        return score

    def put_many(self, query: str, md5s: Sequence[str], scores: Sequence[float]) -> None:
        lines = []
        with self._lock:
            for md5, score in zip(md5s, scores):
                self._scores[(query, md5)] = float(score)
                lines.append(json.dumps([query, md5, round(float(score), 6)], ensure_ascii=False))
            if self.path is not None and lines:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as fh:
                    fh.write("\n".join(lines) + "\n")


# ------------------------------------------------------------------------------------------------
# the stage


class Reranker:
    """Scores (query, candidate texts) lists with a backend, cached, concurrent, failing per question."""

    def __init__(self, backend, *, cache: RerankCache | None = None, concurrency: int = 4):
        self.backend = backend
        self.model_id = backend.model_id
        self.cache = cache if cache is not None else RerankCache(None, "")
        self.concurrency = max(1, concurrency)
        self.failures = 0  # questions whose scores could not be had (they kept their fused order)
        self.last_error = ""

    def _fail(self, query: str, exc: Exception) -> None:
        self.failures += 1
        self.last_error = f"{type(exc).__name__}: {exc}"[:300]
        log.warning("rerank failed for %r (the fused order stands): %s", query[:40], self.last_error)

    def score_lists(self, jobs: Sequence[tuple[str, Sequence[str]]]) -> list[np.ndarray | None]:
        """Per (query, texts) job the texts' probabilities, or None when the backend failed for it."""
        out: list[np.ndarray | None] = [None] * len(jobs)
        known: list[dict[int, float]] = []
        todo: list[tuple[int, list[int], list[str]]] = []  # (job, positions to score, their md5s)
        for j, (query, texts) in enumerate(jobs):
            md5s = [text_md5(t) for t in texts]
            have = {i: s for i, m in enumerate(md5s) if (s := self.cache.get(query, m)) is not None}
            known.append(have)
            missing = [i for i in range(len(texts)) if i not in have]
            if missing:
                todo.append((j, missing, [md5s[i] for i in missing]))

        def finish(j: int, missing: list[int], md5s: list[str], scores) -> None:
            query, texts = jobs[j]
            self.cache.put_many(query, md5s, scores)
            known[j].update(zip(missing, (float(s) for s in scores)))

        if todo and self.backend.remote:
            def one(item):
                j, missing, md5s = item
                query, texts = jobs[j]
                try:
                    finish(j, missing, md5s, self.backend.score_one(query, [texts[i] for i in missing]))
                    return True
                except (LLMError, ValueError) as exc:
                    self._fail(query, exc)
                    return False

            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(todo)),
                                    thread_name_prefix="kbflow-rerank") as pool:
                failed = {item[0] for item, ok in zip(todo, pool.map(one, todo)) if not ok}
        elif todo:  # a local model: every missing pair of every question in one call (CPU-bound)
            pairs = [(jobs[j][0], jobs[j][1][i]) for j, missing, _ in todo for i in missing]
            try:
                scores = self.backend.score(pairs)
            except (RuntimeError, ValueError) as exc:
                for j, _, _ in todo:
                    self._fail(jobs[j][0], exc)
                failed = {j for j, _, _ in todo}
            else:
                failed, pos = set(), 0
                for j, missing, md5s in todo:
                    finish(j, missing, md5s, scores[pos:pos + len(missing)])
                    pos += len(missing)
        else:
            failed = set()
        for j, (_, texts) in enumerate(jobs):
            if j not in failed:
                out[j] = np.asarray([known[j][i] for i in range(len(texts))], dtype=np.float32)
        return out


def reranker_backend(settings: Settings) -> str:
    """Which backend the settings ask for: "" when none ("off", or nothing configured)."""
    r = settings.retrieval
    backend = r.rerank_backend.strip().lower()
    if backend not in BACKENDS:
        raise SettingsError(f"rerank_backend must be one of {[b for b in BACKENDS if b]} or empty, not {backend!r}")
    if backend == "off":
        return ""
    if backend:
        return backend
    return "http" if r.rerank_url.strip() else "crossencoder" if r.rerank_model.strip() else ""


def reranker_from_settings(settings: Settings) -> Reranker | None:
    """The configured reranker (loaded now), or None when no rerank stage is configured."""
    from tasks.common.llm import ChatClient

    r, rt = settings.retrieval, settings.runtime
    kind = reranker_backend(settings)
    if not kind:
        return None
    if kind == "http":
        if not r.rerank_url.strip():
            raise SettingsError("rerank_backend = 'http' needs rerank_url (the server's /rerank endpoint)")
        backend = HttpRerankBackend(r.rerank_url, r.rerank_model.strip(), api=r.rerank_api.strip().lower(),
                                    batch_size=rt.rerank_batch_size, timeout_s=rt.rerank_timeout_s,
                                    max_retries=rt.rerank_max_retries)
    elif kind == "llm":
        model = r.rerank_model.strip() or settings.llm.llm_model.strip()
        if not settings.llm.llm_base_url.strip() or not model:
            raise SettingsError("rerank_backend = 'llm' needs llm_base_url and rerank_model (or llm_model)")
        client = ChatClient.from_env(settings.llm.llm_base_url, read_timeout_s=rt.rerank_timeout_s,
                                     max_retries=rt.rerank_max_retries)
        backend = LLMRerankBackend(client, model, max_chars=r.rerank_llm_max_chars)
    else:
        if not r.rerank_model.strip():
            raise SettingsError("rerank_backend = 'crossencoder' needs rerank_model (a local CrossEncoder folder)")
        backend = CrossEncoderBackend(r.rerank_model, batch_size=rt.rerank_batch_size,
                                      max_length=r.rerank_max_length)
    root = settings.cache_dir / "rerank" if rt.rerank_cache_enabled else None
    # what else changes a score: the CrossEncoder's truncation, the LLM's view of each candidate
    extra = {"crossencoder": r.rerank_max_length, "llm": r.rerank_llm_max_chars}.get(backend.kind, "")
    key = f"{backend.kind}:{backend.model_id}:{extra}"
    return Reranker(backend, cache=RerankCache(root, key), concurrency=rt.rerank_concurrency)


def rerank(cands: Sequence[Candidate], scores: Sequence[float]) -> list[Candidate]:
    """The candidates with their rerank probabilities as scores, best first."""
    out = [replace(c, rerank=float(s), score=float(s)) for c, s in zip(cands, scores)]
    out.sort(key=lambda c: -c.score)
    return out
