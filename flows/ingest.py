"""Flow `ingest`: discover → parse (MinerU, MD5-isolated, cached) → chunk → land (Parquet + DuckDB).

Each file goes through the stages on its own; a file's failure is recorded in `ingest_failures`
and the run goes on. Tasks pass paths and ids, not tables.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.context import get_run_context

from schemas.errors import KbflowError
from schemas.ingest import Document, IngestFailure, IngestRun
from schemas.settings import Settings, check_kb_name, load_settings
from tasks.chunk import build_chunks
from tasks.discover import Discovery, SourceFile, discover
from tasks.index import Indexer, IndexSummary, rebuild_bm25, remove_document
from tasks.land import chunks_path, write_chunks
from tasks.parse import ParsedOutput, parse_source
from warehouse import db


@dataclass
class LandedChunks:
    chunks_path: Path
    chunk_count: int
    items_total: int
    dropped_empty: int
    dropped_furniture: int
    dropped_ghost: int
    enrich_calls: int = 0  # VLM/LLM requests made (0 when everything came from the cache)
    enrich_fallbacks: int = 0


@dataclass
class FileOutcome:
    source: str
    status: str  # landed / failed / rejected
    chunks: int = 0
    parse_seconds: float = 0.0
    parse_cached: bool = False
    reason: str = ""


@dataclass
class IngestSummary:
    run_id: str
    kb: str
    home: str
    outcomes: list[FileOutcome] = field(default_factory=list)
    index: IndexSummary = field(default_factory=IndexSummary)

    @property
    def landed(self) -> int:
        return sum(o.status == "landed" for o in self.outcomes)

    @property
    def failed(self) -> int:
        return sum(o.status != "landed" for o in self.outcomes)


@task(name="discover", cache_policy=NO_CACHE)
def discover_task(paths: list[str], settings: Settings) -> Discovery:
    return discover(paths, settings)


@task(name="parse", cache_policy=NO_CACHE)
def parse_task(src: SourceFile, settings: Settings) -> ParsedOutput:
    return parse_source(src, settings)


@task(name="chunk", cache_policy=NO_CACHE)
def chunk_task(src: SourceFile, parsed: ParsedOutput, kb: str, settings: Settings) -> LandedChunks:
    built = build_chunks(parsed.parsed_dir, settings, kb=kb, doc_md5=src.md5, source=src.source)
    path = write_chunks(built.chunks, chunks_path(settings.chunks_dir, kb, src.md5))
    n = built.normalized
    return LandedChunks(path, len(built.chunks), n.items_total, n.dropped_empty, n.dropped_furniture, n.dropped_ghost,
                        built.enrichment.calls, built.enrichment.fallbacks)


# DuckDB is a single file: a transient lock (a concurrent `kbflow sql`) is worth a retry.
@task(name="land", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=2)
def land_task(src: SourceFile, parsed: ParsedOutput, chunked: LandedChunks, kb: str, run_id: str,
              settings: Settings) -> None:
    document = Document(
        kb=kb, doc_md5=src.md5, source=src.source, path=str(src.path), doc_type=src.doc_type,
        size_bytes=src.size_bytes, parse_backend=parsed.key.backend, parser_version=parsed.key.parser_version,
        parsed_dir=str(parsed.parsed_dir), chunks_path=str(chunked.chunks_path), chunk_count=chunked.chunk_count,
        items_total=chunked.items_total, dropped_empty=chunked.dropped_empty,
        dropped_furniture=chunked.dropped_furniture, dropped_ghost=chunked.dropped_ghost,
        parse_seconds=round(parsed.seconds, 3), parse_cached=parsed.cached, run_id=run_id,
        ingested_at=datetime.now(timezone.utc),
    )
    replaced = db.replace_document(settings.db_path, document, chunked.chunks_path)
    for old_md5 in replaced:  # the old version's Parquet goes only after the new rows committed
        chunks_path(settings.chunks_dir, kb, old_md5).unlink(missing_ok=True)


@task(name="index", cache_policy=NO_CACHE)
def index_task(kb: str, landed: list[tuple[str, Path]], settings: Settings) -> tuple[IndexSummary, dict[str, str]]:
    """Embed and upsert each landed document into Chroma, then rebuild BM25 from the landed
    Parquet. Returns the summary and, per source, the error of a document that failed to index."""
    summary, errors = IndexSummary(), {}
    if landed:
        indexer = Indexer(settings, kb)
        for source, path in landed:
            try:
                indexer.index_document(path, source, summary)
            except Exception as exc:  # one document's index failure must not stop the others
                errors[source] = f"{type(exc).__name__}: {exc}"[:500]
    summary.bm25_chunks = rebuild_bm25(settings, kb)
    return summary, errors


def _flow_run_id() -> str:
    try:
        return str(get_run_context().flow_run.id)
    except Exception:  # called outside a flow run (unit tests of helpers)
        return ""


@flow(name="ingest", log_prints=False)
def ingest(paths: list[str], kb: str, home: str | None = None) -> IngestSummary:
    """Ingest files/folders into knowledge base `kb` under `home` (default: $KBFLOW_HOME or ./.kbflow)."""
    logger = get_run_logger()
    check_kb_name(kb)
    settings = load_settings(home)
    run = IngestRun(run_id=uuid.uuid4().hex[:12], kb=kb, flow_run_id=_flow_run_id(),
                    started_at=datetime.now(timezone.utc), finished_at=None, status="running", files_seen=0,
                    files_landed=0, files_failed=0, chunks_landed=0, parse_backend=settings.parse_backend)
    db.save_run(settings.db_path, run)
    summary = IngestSummary(run.run_id, kb, str(settings.home))
    failures: list[IngestFailure] = []

    def fail(path: str, md5: str, stage: str, kind: str, reason: str, source: str) -> None:
        logger.warning("%s: %s (%s)", path, reason, kind)
        failures.append(IngestFailure(run.run_id, kb, path, md5, stage, kind, reason, datetime.now(timezone.utc)))
        summary.outcomes.append(FileOutcome(source, "rejected" if stage == "discover" else "failed", reason=reason))

    landed: list[tuple[str, Path]] = []
    found = discover_task(paths, settings)
    for rejection in found.rejected:
        fail(rejection.path, rejection.md5, "discover", rejection.error_kind, rejection.reason, rejection.path)

    for src in found.sources:
        stage = "parse"
        try:
            parsed = parse_task(src, settings)
            stage = "chunk"
            chunked = chunk_task(src, parsed, kb, settings)
            stage = "land"
            land_task(src, parsed, chunked, kb, run.run_id, settings)
        except KbflowError as exc:
            fail(str(src.path), src.md5, exc.stage if stage == "parse" else stage, type(exc).__name__, exc.reason,
                 src.source)
            continue
        except Exception as exc:  # an unexpected bug in one file's stage must not lose the others
            fail(str(src.path), src.md5, stage, type(exc).__name__, str(exc)[:500] or type(exc).__name__, src.source)
            continue
        logger.info("%s: %d chunks (%s, %s)", src.source, chunked.chunk_count, parsed.key.backend,
                    "cached parse" if parsed.cached else f"parsed in {parsed.seconds:.1f}s")
        summary.outcomes.append(FileOutcome(src.source, "landed", chunked.chunk_count, parsed.seconds, parsed.cached))
        run.enrich_calls += chunked.enrich_calls
        run.enrich_fallbacks += chunked.enrich_fallbacks
        landed.append((src.source, chunked.chunks_path))

    try:
        summary.index, index_errors = index_task(kb, landed, settings)
    except Exception as exc:  # e.g. no embedding model: the landed rows stay; `kbflow check` shows the gap
        index_errors = {"*": f"{type(exc).__name__}: {exc}"[:500]}
    for source, reason in index_errors.items():  # landed in DuckDB, missing from the indexes
        logger.warning("%s: not indexed: %s", source, reason)
        failures.append(IngestFailure(run.run_id, kb, source, "", "index", reason.split(":", 1)[0], reason,
                                      datetime.now(timezone.utc)))
        for outcome in summary.outcomes:
            if outcome.status == "landed" and source in (outcome.source, "*"):
                outcome.reason = f"not indexed: {reason}"

    db.record_failures(settings.db_path, failures)
    run.files_seen = len(found.sources) + len(found.rejected)
    run.files_landed = summary.landed
    run.files_failed = summary.failed
    run.chunks_landed = sum(o.chunks for o in summary.outcomes)
    run.chunks_indexed = summary.index.chunks
    run.chunks_embedded = summary.index.embedded
    run.finished_at = datetime.now(timezone.utc)
    run.status = "completed" if not failures else "completed_with_failures"
    db.save_run(settings.db_path, run)
    create_table_artifact(
        key=f"ingest-{kb}".lower().replace("_", "-").replace(".", "-"),
        table=[{"source": o.source, "status": o.status, "chunks": o.chunks,
                "parse_s": round(o.parse_seconds, 2), "cached": o.parse_cached, "reason": o.reason}
               for o in summary.outcomes],
        description=f"kbflow ingest run {run.run_id} into kb {kb!r}: {summary.landed} landed, {summary.failed} failed",
    )
    return summary


@flow(name="remove")
def remove(sources: list[str], kb: str, home: str | None = None) -> dict[str, int]:
    """Delete documents (by source name) from a knowledge base: Chroma, DuckDB, Parquet, then BM25."""
    check_kb_name(kb)
    settings = load_settings(home)
    removed = {source: remove_document(settings, kb, source) for source in sources}
    rebuild_bm25(settings, kb)
    get_run_logger().info("removed %s from kb %r", removed, kb)
    return removed
