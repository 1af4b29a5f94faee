"""Records of the ingest warehouse tables besides `chunks`."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from schemas.arrow import arrow_schema


@dataclass
class Document:
    kb: str
    doc_md5: str
    source: str  # name shown to users and used in chunk ids
    path: str  # absolute path at ingest time
    doc_type: str  # pdf / word / powerpoint / excel / html / markdown / text / mineru
    size_bytes: int
    parse_backend: str
    parser_version: str
    parsed_dir: str
    chunks_path: str
    chunk_count: int
    items_total: int  # items in the content list before normalization
    dropped_empty: int
    dropped_furniture: int
    dropped_ghost: int  # MinerU's empty cross-page continuation tables
    parse_seconds: float
    parse_cached: bool
    run_id: str
    ingested_at: datetime


@dataclass
class IngestRun:
    run_id: str
    kb: str
    flow_run_id: str
    started_at: datetime
    finished_at: datetime | None
    status: str  # running / completed / completed_with_failures / failed
    files_seen: int
    files_landed: int
    files_failed: int
    chunks_landed: int
    parse_backend: str
    chunks_indexed: int = 0  # upserted into Chroma this run
    chunks_embedded: int = 0  # actually encoded (the rest came from the embedding cache)
    enrich_calls: int = 0  # VLM/LLM requests (0 on a re-run: answers are cached on disk)
    enrich_fallbacks: int = 0  # requests that failed; their chunks kept the offline text


@dataclass
class IngestFailure:
    run_id: str
    kb: str
    path: str
    doc_md5: str
    stage: str  # discover / parse / normalize / land
    error_kind: str  # the exception class name, e.g. NeedsModelsError
    reason: str
    failed_at: datetime


DOCUMENT_SCHEMA = arrow_schema(Document)
INGEST_RUN_SCHEMA = arrow_schema(IngestRun)
INGEST_FAILURE_SCHEMA = arrow_schema(IngestFailure)
