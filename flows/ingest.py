"""Flow `ingest`: discover → plan against the manifest → parse → chunk (→ embed) → land, per new
or changed file → remove deleted files → index (Chroma, BM25).

Re-ingestion (SPEC §2 item 11): the per-KB manifest (DuckDB table `manifest`, keyed by path +
MD5 + pipeline settings) lets an unchanged file skip every stage; a changed file's new chunks are
built first and swapped in one DuckDB transaction (with its manifest row), then Chroma is
upserted before its stale ids are pruned, then BM25 is rebuilt — never delete-before-build; a file
gone from a given folder is deleted from every store. Each file fails on its own: the failure is
recorded in `ingest_failures` and the run goes on. Tasks pass paths and ids, not tables.

One ingest writes to a home at a time (`tasks.common.lock`). A run killed at any point and run again
converges to the state of an uninterrupted run: landing is per document and atomic, the index
stage re-indexes what DuckDB holds and Chroma lacks, and deletes what Chroma holds and DuckDB
does not.

Task runners: `default` runs every task in the flow process, one file after the other. `dask`
(the optional `[dask]` extra) submits each file's parse → chunk → embed chain to a Dask cluster —
a LocalCluster of worker processes, or an existing scheduler (`dask_address`) — and lands the
results in the flow process as they arrive: DuckDB has one writer, and Chroma and BM25 are written
only by the flow. Embedding on the workers fills the shared on-disk embedding cache, so the index
stage only reads vectors. Workers must see the home at the same path (one machine, or a shared
filesystem).
"""
from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from prefect import Flow, flow, get_run_logger, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext
from prefect.runtime import flow_run

from schemas.errors import EmptyDocumentError, ExtraNotInstalledError, InvalidValueError, KbflowError
from schemas.ingest import Document, IngestFailure, IngestRun, ManifestEntry
from schemas.settings import Settings, check_kb_name, load_settings
from tasks.ingest import manifest as mf
from tasks.ingest.chunk import build_chunks
from tasks.ingest.discover import Discovery, SourceFile, discover
from tasks.index.sync import IndexSummary, rebuild_bm25, remove_document, sync_indexes
from tasks.ingest.land import chunks_path, write_chunks
from tasks.common.lock import write_lock
from tasks.ingest.parse import ParsedOutput, parse_source
from warehouse import db

RUNNERS = ("default", "dask")
# no square brackets: the CLI prints errors through rich, which would take "[dask]" for markup
DASK_EXTRA_HINT = "install kbflow's optional dask extra, i.e. pip install prefect-dask distributed"


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
    status: str  # landed / skipped (unchanged) / removed / failed / rejected
    chunks: int = 0
    parse_seconds: float = 0.0
    parse_cached: bool = False
    reason: str = ""
    change: str = ""  # added / changed (landed files)


@dataclass
class IngestSummary:
    run_id: str
    kb: str
    home: str
    outcomes: list[FileOutcome] = field(default_factory=list)
    index: IndexSummary = field(default_factory=IndexSummary)
    runner: str = "default"

    def _count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    @property
    def landed(self) -> int:
        return self._count("landed")

    @property
    def added(self) -> int:
        return sum(o.status == "landed" and o.change == mf.ADDED for o in self.outcomes)

    @property
    def changed(self) -> int:
        return sum(o.status == "landed" and o.change == mf.CHANGED for o in self.outcomes)

    @property
    def skipped(self) -> int:
        return self._count("skipped")

    @property
    def removed(self) -> int:
        return self._count("removed")

    @property
    def failed(self) -> int:
        return sum(o.status in ("failed", "rejected") for o in self.outcomes)


@task(name="discover", cache_policy=NO_CACHE)
def discover_task(paths: list[str], settings: Settings) -> Discovery:
    return discover(paths, settings)


@task(name="parse", cache_policy=NO_CACHE)
def parse_task(src: SourceFile, settings: Settings) -> ParsedOutput:
    return parse_source(src, settings)


@task(name="chunk", cache_policy=NO_CACHE)
def chunk_task(src: SourceFile, parsed: ParsedOutput, kb: str, settings: Settings) -> LandedChunks:
    built = build_chunks(parsed.parsed_dir, settings, kb=kb, doc_md5=src.md5, source=src.source)
    n = built.normalized
    if not built.chunks:  # landing it would hide the problem: a document nobody can find
        raise EmptyDocumentError(str(src.path), f"no content to index: the parser found {n.items_total} items "
                                                f"({n.dropped_empty} empty, {n.dropped_furniture} page furniture "
                                                "dropped) and no text, table or image")
    path = write_chunks(built.chunks, chunks_path(settings.chunks_dir, kb, src.md5))
    return LandedChunks(path, len(built.chunks), n.items_total, n.dropped_empty, n.dropped_furniture, n.dropped_ghost,
                        built.enrichment.calls, built.enrichment.fallbacks)


@task(name="embed", cache_policy=NO_CACHE)
def embed_task(chunked: LandedChunks, model: str, settings: Settings) -> int:
    """Put a document's vectors into the shared embedding cache (on a Dask worker); return how many
    texts were encoded. The flow's index stage then finds them there instead of encoding."""
    # imported here, not at module level: a task's function reaches a worker by value (cloudpickle),
    # so only a module's own globals (the worker's one loaded model) outlive a single call
    from tasks.index.sync import warm_embedding_cache

    return warm_embedding_cache(settings, chunked.chunks_path, model)


# DuckDB is a single file: a transient lock (a concurrent `kbflow sql`) is worth a retry.
@task(name="land", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=2)
def land_task(src: SourceFile, parsed: ParsedOutput, chunked: LandedChunks, kb: str, run_id: str,
              settings: Settings, pipeline_key: str = "") -> None:
    """Swap the document's new rows and its manifest row (status `landed`) in, in one transaction."""
    now = datetime.now(timezone.utc)
    document = Document(
        kb=kb, doc_md5=src.md5, source=src.source, path=str(src.path), doc_type=src.doc_type,
        size_bytes=src.size_bytes, parse_backend=parsed.key.backend, parser_version=parsed.key.parser_version,
        parsed_dir=str(parsed.parsed_dir), chunks_path=str(chunked.chunks_path), chunk_count=chunked.chunk_count,
        items_total=chunked.items_total, dropped_empty=chunked.dropped_empty,
        dropped_furniture=chunked.dropped_furniture, dropped_ghost=chunked.dropped_ghost,
        parse_seconds=round(parsed.seconds, 3), parse_cached=parsed.cached, run_id=run_id, ingested_at=now,
    )
    entry = ManifestEntry(kb, str(src.path), src.source, src.md5, mf.LANDED, chunked.chunk_count, pipeline_key,
                          run_id, now)
    replaced = db.replace_document(settings.db_path, document, chunked.chunks_path, entry)
    for old_md5 in replaced:  # the old version's Parquet goes only after the new rows committed
        chunks_path(settings.chunks_dir, kb, old_md5).unlink(missing_ok=True)


@task(name="remove-deleted", cache_policy=NO_CACHE)
def remove_deleted_task(kb: str, entries: list[ManifestEntry], held: set[str],
                        settings: Settings) -> dict[str, str]:
    """Delete files gone from their folder from Chroma, DuckDB (rows, manifest) and Parquet; BM25
    follows in the index stage. A source name now held by another file found this run was already
    replaced by it: only the stale manifest row goes. Returns the error of each removal that failed."""
    errors: dict[str, str] = {}
    stale_rows = []  # manifest rows only: their source has no document of its own to remove
    for entry in entries:
        if not entry.source or entry.source in held:
            stale_rows.append(entry.path)
            continue
        try:
            remove_document(settings, kb, entry.source)  # its manifest rows go in the same transaction
        except Exception as exc:  # retried by the next run: the manifest row is still there
            errors[entry.path] = f"{type(exc).__name__}: {exc}"[:500]
    try:
        db.delete_manifest(settings.db_path, kb, stale_rows)
    except Exception as exc:
        errors.update({path: f"{type(exc).__name__}: {exc}"[:500] for path in stale_rows})
    return errors


@task(name="index", cache_policy=NO_CACHE)
def index_task(kb: str, landed: list[tuple[str, Path]], settings: Settings, force_bm25: bool = False,
               run_id: str = "") -> tuple[IndexSummary, dict[str, str]]:
    """Embed and upsert each landed document into Chroma, repair what an interrupted run left, and
    rebuild BM25 when needed. Returns the summary and, per source, the error of a document that
    failed to index. Indexed documents' manifest rows become `indexed`."""
    summary, errors, indexed = sync_indexes(settings, kb, landed, force_bm25=force_bm25)
    db.mark_indexed(settings.db_path, kb, indexed, run_id)
    return summary, errors


# ------------------------------------------------------------------------------------------------
# task runners


def _local_cluster(**kwargs: Any):
    """A LocalCluster whose workers may start processes (MinerU renders PDF pages in child
    processes, which a daemonic worker process, Dask's default, is not allowed to have) and report
    their task runs to the flow's Prefect API — also when that is the temporary server this
    process started, which worker processes would not find on their own."""
    import dask
    from distributed import LocalCluster

    ctx = FlowRunContext.get()
    api_url = str(ctx.client.api_url) if ctx and getattr(ctx, "client", None) else ""
    if api_url and kwargs.get("processes", True):
        kwargs["env"] = {"PREFECT_API_URL": api_url, **kwargs.get("env", {})}
    with dask.config.set({"distributed.worker.daemon": False}):
        return LocalCluster(**kwargs)


def dask_task_runner(address: str = "", workers: int = 2, processes: bool = True):
    """A DaskTaskRunner on an existing scheduler (`address`) or on a new LocalCluster of `workers`
    single-threaded worker processes (PDFium, under MinerU, is not thread-safe)."""
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        raise ExtraNotInstalledError(f"the dask task runner needs the optional extra: {DASK_EXTRA_HINT}") from None
    if address:
        return DaskTaskRunner(address=address)
    return DaskTaskRunner(cluster_class=_local_cluster,
                          cluster_kwargs={"n_workers": workers, "threads_per_worker": 1, "processes": processes,
                                          "dashboard_address": None})


def ingest_flow(runner: str = "default", dask_address: str = "", workers: int = 2) -> Flow:
    """The `ingest` flow with the task runner for `runner` (Prefect 3 sets runners on the flow)."""
    if runner not in RUNNERS:
        raise InvalidValueError(f"unknown task runner {runner!r} (choose one of {', '.join(RUNNERS)})")
    if runner == "default":
        return ingest
    return ingest.with_options(task_runner=dask_task_runner(dask_address, workers))


class _Inline:
    """Each file's stages called in the flow process, one file after the other."""

    def __init__(self, kb: str, settings: Settings):
        self.kb, self.settings = kb, settings

    def parse(self, i: int, src: SourceFile) -> ParsedOutput:
        return parse_task(src, self.settings)

    def chunk(self, i: int, src: SourceFile, parsed: ParsedOutput) -> LandedChunks:
        return chunk_task(src, parsed, self.kb, self.settings)

    def embedded(self, i: int) -> int:
        return 0


class _Submitted:
    """Every file's parse → chunk (→ embed) chain submitted to a task runner at once; results are
    taken in file order, so landing order (and the outcome table) is the default runner's."""

    def __init__(self, runner, todo: list[mf.Todo], kb: str, settings: Settings, model: str | None):
        self.parsed, self.chunked, self.embeds = [], [], []
        for t in todo:
            p = runner.submit(parse_task, {"src": t.src, "settings": settings})
            c = runner.submit(chunk_task, {"src": t.src, "parsed": p, "kb": kb, "settings": settings})
            self.parsed.append(p)
            self.chunked.append(c)
            self.embeds.append(runner.submit(embed_task, {"chunked": c, "model": model, "settings": settings})
                               if model else None)

    def parse(self, i: int, src: SourceFile) -> ParsedOutput:
        return self.parsed[i].result()

    def chunk(self, i: int, src: SourceFile, parsed: ParsedOutput) -> LandedChunks:
        return self.chunked[i].result()

    def embedded(self, i: int) -> int:
        if self.embeds[i] is None:
            return 0
        try:
            return int(self.embeds[i].result())
        except Exception as exc:  # the index stage encodes what the worker could not
            get_run_logger().warning("embedding on the worker failed (%s); the index stage encodes it", exc)
            return 0


def _dask_runner_in(stack: contextlib.ExitStack, settings: Settings, dask_address: str):
    """The flow's own Dask runner (set by `ingest_flow`), else one started here (a deployment run
    whose parameters say `runner: dask`)."""
    ctx = FlowRunContext.get()
    current = ctx.task_runner if ctx else None
    if type(current).__name__ == "DaskTaskRunner":
        return current
    return stack.enter_context(dask_task_runner(dask_address, settings.runtime.dask_workers))


def _worker_model(settings: Settings) -> str | None:
    """The embedding model the workers load (resolved, and converted if needed, once, here)."""
    from tasks.index.embed import resolve_model

    try:
        return str(resolve_model(settings))
    except Exception as exc:  # the index stage reports it per document
        get_run_logger().warning("no embedding on the workers: %s", exc)
        return None


# ------------------------------------------------------------------------------------------------
# the flow


@flow(name="ingest", log_prints=False)
def ingest(paths: list[str], kb: str, home: str | None = None, runner: str | None = None,
           dask_address: str | None = None, lock_wait_s: float | None = None) -> IngestSummary:
    """Ingest files/folders into knowledge base `kb` under `home` (default: $KBFLOW_HOME or ./.kbflow).

    `runner`: "default" or "dask" (default: the `task_runner` setting); `dask_address`: an existing
    Dask scheduler (default: a LocalCluster); `lock_wait_s`: how long to wait for another ingest of
    the same home (default: the `ingest_lock_wait_s` setting; 0 = refuse at once).
    """
    check_kb_name(kb)
    settings = load_settings(home)
    runner = runner or settings.runtime.task_runner
    if runner not in RUNNERS:
        raise InvalidValueError(f"unknown task runner {runner!r} (choose one of {', '.join(RUNNERS)})")
    run_id = uuid.uuid4().hex[:12]
    wait = settings.runtime.ingest_lock_wait_s if lock_wait_s is None else lock_wait_s
    with write_lock(settings.home, kb=kb, run_id=run_id, wait_s=wait):
        return _ingest_locked(paths, kb, settings, run_id, runner, dask_address or settings.runtime.dask_address)


def _ingest_locked(paths: list[str], kb: str, settings: Settings, run_id: str, runner: str,
                   dask_address: str) -> IngestSummary:
    logger = get_run_logger()
    if interrupted := db.mark_interrupted(settings.db_path):  # we hold the lock: those runs are dead
        logger.warning("%d earlier ingest run(s) of %s were interrupted; this run completes their work",
                       interrupted, settings.home)
    started = datetime.now(timezone.utc)
    run = IngestRun(run_id=run_id, kb=kb, flow_run_id=flow_run.id or "", started_at=started, finished_at=None,
                    status="running", files_seen=0, files_landed=0, files_failed=0, chunks_landed=0,
                    parse_backend=settings.ingest.parse_backend, task_runner=runner)
    db.save_run(settings.db_path, run)
    summary = IngestSummary(run.run_id, kb, str(settings.home), runner=runner)
    failures: list[IngestFailure] = []
    key = mf.pipeline_key(settings)
    manifest = db.load_manifest(settings.db_path, kb)
    by_path = {e.path: e for e in manifest}
    notes: list[ManifestEntry] = []  # manifest rows of files that did not land this run

    def note(path: str, source: str, md5: str, status: str, reason: str) -> None:
        old = by_path.get(path)
        # keep the name of a version still landed under it, so a later removal finds it
        notes.append(ManifestEntry(kb, path, source or (old.source if old else ""), md5, status, 0, key, run_id,
                                   datetime.now(timezone.utc), reason[:500]))

    def fail(path: str, md5: str, stage: str, kind: str, reason: str, source: str) -> None:
        logger.warning("%s: %s (%s)", path, reason, kind)
        failures.append(IngestFailure(run.run_id, kb, path, md5, stage, kind, reason, datetime.now(timezone.utc)))
        summary.outcomes.append(FileOutcome(source, "rejected" if stage == "discover" else "failed", reason=reason))

    found = discover_task(paths, settings)
    for rejection in found.rejected:
        fail(rejection.path, rejection.md5, "discover", rejection.error_kind, rejection.reason, rejection.path)
        if Path(rejection.path).is_file() or Path(rejection.path).is_symlink():
            status = mf.DUPLICATE if rejection.error_kind == "DuplicateFileError" else mf.REJECTED
            note(rejection.path, "", rejection.md5, status, rejection.reason)

    plan = mf.plan_reingest(paths, found, manifest, db.landed_documents(settings.db_path, kb), key)
    for root in plan.kept_roots:
        logger.warning("%s found no files: nothing under it is removed from kb %r (an unmounted share must "
                       "not empty the KB; use `kbflow rm` to delete documents)", root, kb)
    for src, entry in plan.skipped:
        summary.outcomes.append(FileOutcome(src.source, "skipped", entry.chunk_count, reason="unchanged"))
    for src, holder in plan.duplicates:
        reason = f"same content as {holder}, already in kb {kb!r} (skipped)"
        fail(str(src.path), src.md5, "discover", "DuplicateFileError", reason, src.source)
        note(str(src.path), "", src.md5, mf.DUPLICATE, reason)

    landed: list[tuple[str, Path]] = []
    with contextlib.ExitStack() as stack:
        if runner == "dask" and plan.todo:
            stages: _Inline | _Submitted = _Submitted(_dask_runner_in(stack, settings, dask_address), plan.todo, kb,
                                                      settings, _worker_model(settings))
        else:
            stages = _Inline(kb, settings)
        for i, todo in enumerate(plan.todo):
            src, stage = todo.src, "parse"
            try:
                parsed = stages.parse(i, src)
                stage = "chunk"
                chunked = stages.chunk(i, src, parsed)
                stage = "land"
                land_task(src, parsed, chunked, kb, run.run_id, settings, key)
            except KbflowError as exc:
                fail(str(src.path), src.md5, exc.stage if stage == "parse" else stage, type(exc).__name__,
                     exc.reason, src.source)
                note(str(src.path), src.source, src.md5, mf.FAILED, exc.reason)
                continue
            except Exception as exc:  # an unexpected bug in one file's stage must not lose the others
                reason = str(exc)[:500] or type(exc).__name__
                fail(str(src.path), src.md5, stage, type(exc).__name__, reason, src.source)
                note(str(src.path), src.source, src.md5, mf.FAILED, reason)
                continue
            summary.index.embedded += stages.embedded(i)
            logger.info("%s: %s, %d chunks (%s, %s)", src.source, todo.change, chunked.chunk_count, parsed.key.backend,
                        "cached parse" if parsed.cached else f"parsed in {parsed.seconds:.1f}s")
            summary.outcomes.append(FileOutcome(src.source, "landed", chunked.chunk_count, parsed.seconds,
                                                parsed.cached, change=todo.change))
            run.enrich_calls += chunked.enrich_calls
            run.enrich_fallbacks += chunked.enrich_fallbacks
            landed.append((src.source, chunked.chunks_path))

    db.upsert_manifest(settings.db_path, notes)
    if plan.removed:
        held = {t.src.source for t in plan.todo} | {src.source for src, _ in plan.skipped}
        remove_errors = remove_deleted_task(kb, plan.removed, held, settings)
        for entry in plan.removed:
            if entry.path in remove_errors:
                fail(entry.path, entry.md5, "remove", remove_errors[entry.path].split(":", 1)[0],
                     remove_errors[entry.path], entry.source or entry.path)
            elif entry.source:  # (a file that was only ever rejected leaves just its manifest row)
                logger.info("%s: removed (no longer under the given folder)", entry.source or entry.path)
                summary.outcomes.append(FileOutcome(entry.source or entry.path, "removed", entry.chunk_count,
                                                    reason="file no longer found"))

    # unchanged files whose landing never reached Chroma (an index failure or a kill) go again
    to_index = landed + [(src.source, chunks_path(settings.chunks_dir, kb, src.md5)) for src, _ in plan.reindex]
    embedded_on_workers = summary.index.embedded
    try:
        summary.index, index_errors = index_task(kb, to_index, settings, force_bm25=bool(landed or plan.removed),
                                                 run_id=run.run_id)
        summary.index.embedded += embedded_on_workers
    except Exception as exc:  # e.g. no embedding model: the landed rows stay; the next run indexes them
        index_errors = {"*": f"{type(exc).__name__}: {exc}"[:500]}
    for source, reason in index_errors.items():  # landed in DuckDB, missing from the indexes
        logger.warning("%s: not indexed: %s", source, reason)
        failures.append(IngestFailure(run.run_id, kb, source, "", "index", reason.split(":", 1)[0], reason,
                                      datetime.now(timezone.utc)))
        for outcome in summary.outcomes:
            if outcome.status in ("landed", "skipped") and source in (outcome.source, "*"):
                outcome.reason = f"not indexed: {reason}"

    db.record_failures(settings.db_path, failures)
    run.files_seen = len(found.sources) + len(found.rejected)
    run.files_landed = summary.landed
    run.files_failed = summary.failed
    run.files_added, run.files_changed = summary.added, summary.changed
    run.files_skipped, run.files_removed = summary.skipped, summary.removed
    run.files_reindexed = len(plan.reindex) + summary.index.repaired
    run.chunks_landed = sum(o.chunks for o in summary.outcomes if o.status == "landed")
    run.chunks_indexed = summary.index.chunks
    run.chunks_embedded = summary.index.embedded
    run.finished_at = datetime.now(timezone.utc)
    run.status = "completed" if not failures else "completed_with_failures"
    db.save_run(settings.db_path, run)
    logger.info("kb %r: %d added, %d changed, %d unchanged (skipped), %d removed, %d failed or rejected",
                kb, summary.added, summary.changed, summary.skipped, summary.removed, summary.failed)
    create_table_artifact(
        key=f"ingest-{kb}".lower().replace("_", "-").replace(".", "-"),
        table=[{"source": o.source, "status": o.status, "change": o.change, "chunks": o.chunks,
                "parse_s": round(o.parse_seconds, 2), "cached": o.parse_cached, "reason": o.reason}
               for o in summary.outcomes],
        description=(f"kbflow ingest run {run.run_id} into kb {kb!r}: {summary.added} added, {summary.changed} "
                     f"changed, {summary.skipped} unchanged, {summary.removed} removed, {summary.failed} failed"),
    )
    return summary


@flow(name="remove")
def remove(sources: list[str], kb: str, home: str | None = None, lock_wait_s: float | None = None) -> dict[str, int]:
    """Delete documents (by source name) from a knowledge base: Chroma, DuckDB, Parquet, then BM25."""
    check_kb_name(kb)
    settings = load_settings(home)
    wait = settings.runtime.ingest_lock_wait_s if lock_wait_s is None else lock_wait_s
    with write_lock(settings.home, kb=kb, run_id="", wait_s=wait, what="rm"):
        removed = {source: remove_document(settings, kb, source) for source in sources}
        rebuild_bm25(settings, kb)
    get_run_logger().info("removed %s from kb %r", removed, kb)
    return removed
