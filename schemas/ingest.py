"""Records of the ingest warehouse tables besides `chunks`."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from schemas.arrow import arrow_schema, columns_of


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
    status: str  # running / completed / completed_with_failures / failed / interrupted (killed mid-run)
    files_seen: int
    files_landed: int
    files_failed: int
    chunks_landed: int
    parse_backend: str
    chunks_indexed: int = 0  # upserted into Chroma this run
    chunks_embedded: int = 0  # actually encoded (the rest came from the embedding cache)
    enrich_calls: int = 0  # VLM/LLM requests (0 on a re-run: answers are cached on disk)
    enrich_fallbacks: int = 0  # requests that failed; their chunks kept the offline text
    # re-ingestion against the manifest (SPEC §2 item 11): what this run did per file
    files_added: int = 0  # new paths landed
    files_changed: int = 0  # known paths whose content (or pipeline settings) changed, re-landed
    files_removed: int = 0  # manifest paths no longer found under a given folder, deleted everywhere
    files_skipped: int = 0  # unchanged (same path, MD5 and settings, still landed): not parsed again
    files_reindexed: int = 0  # unchanged in DuckDB but missing from (or stale in) Chroma: indexed again
    task_runner: str = "default"  # default (in the flow process) / dask


@dataclass
class IngestFailure:
    run_id: str
    kb: str
    path: str
    doc_md5: str
    stage: str  # discover / parse / chunk / land / index / remove
    error_kind: str  # the exception class name, e.g. NeedsModelsError
    reason: str
    failed_at: datetime


@dataclass
class ManifestEntry:
    """One row of the re-ingestion manifest: the last thing kbflow knows about a path in a KB.

    Keyed by (kb, path). A landed row is written in the same DuckDB transaction as the document's
    rows, so the manifest never claims a version the warehouse does not hold.
    """

    kb: str
    path: str  # absolute path as discovered (a MinerU output folder for the import backend)
    source: str  # the document's name in the KB (chunk ids are "{source}_{index}")
    md5: str  # content MD5 of the version this row describes ("" when discovery could not read it)
    status: str  # landed (DuckDB only, index pending) / indexed / failed / rejected / duplicate
    chunk_count: int
    pipeline_key: str  # hash of the settings that shape chunks and vectors; a change re-processes
    last_run_id: str
    updated_at: datetime
    reason: str = ""  # why the last attempt failed or was rejected


@dataclass
class KBRoot:
    """The folder a KB's source names are relative to (`dept_a/说明.md`), recorded by its first ingest
    (or set with the `source_root` setting): two files can never share a name, and a moved folder
    keeps its documents (a rename, same MD5)."""

    kb: str
    root: str  # absolute
    recorded_at: datetime


DOCUMENT_SCHEMA = arrow_schema(Document)
KB_ROOT_SCHEMA = arrow_schema(KBRoot)
INGEST_RUN_SCHEMA = arrow_schema(IngestRun)
INGEST_FAILURE_SCHEMA = arrow_schema(IngestFailure)
MANIFEST_SCHEMA = arrow_schema(ManifestEntry)

# Columns `kbflow report` shows, in this order; `seconds` (finished_at - started_at) is computed by its query.
INGEST_RUN_COLUMNS = columns_of(IngestRun, ("run_id", "kb", "status", "started_at", "seconds", "files_seen",
                                            "files_landed", "files_failed", "files_added", "files_changed",
                                            "files_removed", "files_skipped", "chunks_landed", "chunks_indexed",
                                            "chunks_embedded", "parse_backend", "task_runner"), computed=("seconds",))
INGEST_FAILURE_COLUMNS = columns_of(IngestFailure, ("failed_at", "run_id", "kb", "path", "stage", "error_kind",
                                                    "reason"))
