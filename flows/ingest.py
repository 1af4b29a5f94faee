"""Flow `ingest`: discover → plan against the manifest → parse → chunk (→ embed) → land, per new
or changed file → remove deleted files → index (Chroma, BM25) → finish the run's record.

Re-ingestion (SPEC §2 item 11): the per-KB manifest (DuckDB table `manifest`, keyed by path +
MD5 + pipeline settings) lets an unchanged file skip every stage; a changed file's new chunks are
built first and swapped in one DuckDB transaction (with its manifest row), then Chroma is
upserted before its stale ids are pruned, then BM25 is rebuilt — never delete-before-build; a file
gone from a given folder is deleted from every store. Each file fails on its own: the failure is
recorded in `ingest_failures` and the run goes on. Tasks pass paths and ids, not tables; the run's
bookkeeping is `tasks.ingest.ledger`, the task runners (default, Dask) are `flows.runners`.

One ingest writes to a home at a time (`tasks.common.lock`). A run killed at any point and run again
converges to the state of an uninterrupted run: landing is per document and atomic, the index
stage re-indexes what DuckDB holds and Chroma lacks, and deletes what Chroma holds and DuckDB
does not.
"""
from __future__ import annotations

import uuid
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run

from flows.runners import FileTasks, file_stages, task_runner_for
from schemas.chunk import chunks_path
from schemas.settings import Settings, check_kb_name, load_settings
from tasks.common.lock import write_lock
from tasks.common.progress import track
from tasks.index.sync import IndexSummary, sync_indexes
from tasks.ingest import manifest as mf
from tasks.ingest.chunk import chunk_document
from tasks.ingest.discover import SourceFile, discover
from tasks.ingest.land import LandedChunks, land_document, remove_deleted, remove_sources
from tasks.ingest.ledger import IngestLedger, IngestSummary
from tasks.ingest.parse import ParsedOutput, parse_source
from warehouse import db


# The pure functions of tasks/ as Prefect tasks (no cache: a file's stages are keyed by its MD5).
discover_task = task(discover, name="discover", cache_policy=NO_CACHE)
parse_task = task(parse_source, name="parse", cache_policy=NO_CACHE)
# DuckDB is a single file: a transient lock (a concurrent `kbflow sql`) is worth a retry.
land_task = task(land_document, name="land", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=2)
remove_deleted_task = task(remove_deleted, name="remove-deleted", cache_policy=NO_CACHE)


@task(name="chunk", cache_policy=NO_CACHE)
def chunk_task(src: SourceFile, parsed: ParsedOutput, kb: str, settings: Settings) -> LandedChunks:
    return chunk_document(src, parsed.parsed_dir, kb, settings)


@task(name="embed", cache_policy=NO_CACHE)
def embed_task(chunked: LandedChunks, model: str, settings: Settings) -> int:
    """Put a document's vectors into the shared embedding cache (on a Dask worker); return how many
    texts were encoded. The flow's index stage then finds them there instead of encoding."""
    # imported here, not at module level: a task's function reaches a worker by value (cloudpickle),
    # so only a module's own globals (the worker's one loaded model) outlive a single call
    from tasks.index.sync import warm_embedding_cache

    return warm_embedding_cache(settings, chunked.chunks_path, model)


@task(name="index", cache_policy=NO_CACHE)
def index_task(kb: str, landed: list[tuple[str, Path]], settings: Settings, force_bm25: bool = False,
               run_id: str = "") -> tuple[IndexSummary, dict[str, str]]:
    """`sync_indexes` (Chroma, BM25, repairs); the indexed documents' manifest rows become `indexed`.
    Returns the summary and, per source, the error of a document that failed to index."""
    summary, errors, indexed = sync_indexes(settings, kb, landed, force_bm25=force_bm25)
    db.mark_indexed(settings.db_path, kb, indexed, run_id)
    return summary, errors


FILE_TASKS = FileTasks(parse_task, chunk_task, embed_task)  # a file's stages, inline or on Dask


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
    task_runner = task_runner_for(runner, dask_address or settings.runtime.dask_address, settings.runtime.dask_workers)
    run_id = uuid.uuid4().hex[:12]
    wait = settings.runtime.ingest_lock_wait_s if lock_wait_s is None else lock_wait_s
    with write_lock(settings.home, kb=kb, run_id=run_id, wait_s=wait):
        ledger = IngestLedger(settings, kb, run_id, runner, flow_run.id or "", get_run_logger())
        manifest = ledger.open()
        with track("discover") as discovering:
            found = discover_task(paths, settings, ledger.source_root(paths, manifest))
            discovering.set(len(found.sources) + len(found.rejected), total=len(found.sources) + len(found.rejected))
        ledger.discovered(found)
        plan = mf.plan_reingest(paths, found, manifest, db.landed_documents(settings.db_path, kb),
                                ledger.pipeline_key)
        ledger.planned(plan)

        with (file_stages(task_runner, FILE_TASKS, plan.todo, kb, settings) as stages,
              track("land", total=len(plan.todo), unit="files") as landing):
            for i, todo in enumerate(plan.todo):
                stage = "parse"
                try:
                    parsed = stages.parse(i, todo.src)
                    stage = "chunk"
                    chunked = stages.chunk(i, todo.src, parsed)
                    stage = "land"
                    land_task(todo.src, parsed, chunked, kb, run_id, settings, ledger.pipeline_key)
                except Exception as exc:  # one file's failure (even a bug in a stage) must not lose the others
                    ledger.failed(todo.src, stage, exc)
                else:
                    ledger.landed(todo, parsed, chunked, stages.embedded(i))
                landing.advance()
        ledger.save_notes()
        if plan.removed:
            ledger.removed(plan.removed, remove_deleted_task(settings, kb, plan.removed, plan.held_sources))

        # unchanged files whose landing never reached Chroma (an index failure or a kill) go again
        to_index = ledger.landed_files + [(src.source, chunks_path(settings.chunks_dir, kb, src.md5))
                                          for src, _ in plan.reindex]
        try:
            index, errors = index_task(kb, to_index, settings, force_bm25=bool(ledger.landed_files or plan.removed),
                                       run_id=run_id)
        except Exception as exc:  # e.g. no embedding model: the landed rows stay; the next run indexes them
            index, errors = None, {"*": f"{type(exc).__name__}: {exc}"[:500]}
        ledger.indexed(index, errors)

        ledger.finish()  # and publishes what readers see from now on
        create_table_artifact(key=f"ingest-{kb}".lower().replace("_", "-").replace(".", "-"),
                              table=ledger.summary.outcome_rows(), description=ledger.summary.headline)
        ledger.raise_if_unindexed()  # landed but not indexed: the run is not Completed
    return ledger.summary


@flow(name="remove")
def remove(sources: list[str], kb: str, home: str | None = None, lock_wait_s: float | None = None) -> dict[str, int]:
    """Delete documents (by source name) from a knowledge base: Chroma, DuckDB, Parquet, then BM25."""
    check_kb_name(kb)
    settings = load_settings(home)
    wait = settings.runtime.ingest_lock_wait_s if lock_wait_s is None else lock_wait_s
    with write_lock(settings.home, kb=kb, run_id="", wait_s=wait, what="rm"):
        removed = remove_sources(settings, kb, sources)
    get_run_logger().info("removed %s from kb %r", removed, kb)
    return removed
