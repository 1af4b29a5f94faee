"""Flow `ingest`: discover → plan against the manifest → per batch of new or changed files: parse →
chunk (worker processes) → land (one DuckDB transaction) → embed + index while the next batches
parse → remove deleted files → index the rest (Chroma, BM25, query encoder) → finish the run's record.

Re-ingestion (SPEC §2 item 11): the per-KB manifest (DuckDB table `manifest`, keyed by path +
MD5 + pipeline settings) lets an unchanged file skip every stage; a changed file's new chunks are
built first and swapped in (with its manifest row) in one transaction, then Chroma is upserted
before its stale ids are pruned, then BM25 is rebuilt — never delete-before-build; a file gone
from a given folder is deleted from every store. Each file fails on its own (also past its time
limit): recorded in `ingest_failures`, the run goes on. Bookkeeping: `tasks.ingest.ledger`; worker
processes: `tasks.ingest.workers`; task runners (default, Dask) and progress: `flows.runners`.

One ingest writes to a home at a time (`tasks.common.lock`). A run killed at any point and run again
converges to an uninterrupted run's state: landing is atomic per batch (or document), the index
stage re-indexes what DuckDB holds and Chroma lacks, deletes what Chroma holds and DuckDB does not
(an unchanged run whose stores agree skips it). SIGTERM stops a run at its next batch.
"""
from __future__ import annotations

import uuid
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run
from prefect.utilities.annotations import quote

from flows.runners import BatchProgress, BatchTasks, batch_stages, final_state, min_batches, task_runner_for
from schemas.chunk import chunks_path
from schemas.errors import IngestInterruptedError
from schemas.settings import Settings, check_kb_name, load_settings
from tasks.common.display import artifact_key
from tasks.common.lock import write_lock
from tasks.common.progress import track
from tasks.index.sync import IndexSummary, Indexer, sync_indexes
from tasks.ingest import manifest as mf
from tasks.ingest.discover import discover
from tasks.ingest.index_stream import IndexStream
from tasks.ingest.land import remove_deleted, remove_sources
from tasks.ingest.ledger import IngestLedger, IngestSummary
from tasks.ingest.workers import (Interruption, batch_rows, collect_batch, embed_batch, land_batch, plan_batches,
                                  prepare_batch)
from warehouse import db

# The pure functions of tasks/ as Prefect tasks (no cache: a file's stages are keyed by its MD5).
discover_task = task(discover, name="discover", cache_policy=NO_CACHE)
collect_task = task(collect_batch, name="parse-chunk", cache_policy=NO_CACHE)
prepare_task = task(prepare_batch, name="parse-chunk", cache_policy=NO_CACHE)
land_task = task(land_batch, name="land", cache_policy=NO_CACHE)
remove_deleted_task = task(remove_deleted, name="remove-deleted", cache_policy=NO_CACHE)
embed_task = task(embed_batch, name="embed", cache_policy=NO_CACHE)  # on Dask workers


@task(name="index", cache_policy=NO_CACHE)
def index_task(kb: str, landed: list[tuple[str, Path]], settings: Settings, force_bm25: bool = False,
               run_id: str = "", indexer: Indexer | None = None) -> tuple[IndexSummary, dict[str, str], list[str]]:
    """`sync_indexes` (Chroma, BM25, repairs) after what `indexer` did while parsing went on; the
    indexed documents' manifest rows become `indexed`. Returns the summary, errors, sources indexed."""
    summary, errors, indexed = sync_indexes(settings, kb, landed, force_bm25=force_bm25, indexer=indexer)
    db.mark_indexed(settings.db_path, kb, indexed, run_id)
    return summary, errors, indexed


BATCH_TASKS = BatchTasks(collect_task, prepare_task, embed_task)  # a batch's stages, in worker processes or on Dask


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
    with write_lock(settings.home, kb=kb, run_id=run_id, wait_s=wait), Interruption().active() as stop:
        ledger = IngestLedger(settings, kb, run_id, runner, flow_run.id or "", get_run_logger())
        manifest = ledger.open()
        with track("discover") as discovering:
            found = discover_task(paths, settings, ledger.source_root(paths, manifest))
            discovering.set(n := len(found.sources) + len(found.rejected), total=n)
        ledger.discovered(found)
        plan = mf.plan_reingest(paths, found, manifest, db.landed_documents(settings.db_path, kb, settings.chunks_dir),
                                ledger.pipeline_key)
        ledger.planned(plan)

        batches = plan_batches(plan.todo, settings, min_batches(task_runner, settings))
        with (BatchProgress(kb, len(plan.todo)) as progress,
              IndexStream(settings, kb, stop.requested, load_early=bool(batches)) as stream,  # loads while parsing
              stop.deferred(),  # a SIGTERM from here lets the batch being landed finish
              batch_stages(task_runner, BATCH_TASKS, batches, kb, settings, progress.parsed) as stages):
            stop.watch(getattr(stages, "pool", None))
            for i in range(len(batches)):
                prepared = stages.prepare(i)
                errors = land_task(quote(prepared), kb, run_id, settings, ledger.pipeline_key)
                landed = ledger.batch(prepared, errors, stages.embedded(i))
                stream.put(landed, batch_rows(prepared))  # embedded while the workers parse the next batches
                progress.batch(len(prepared), len(landed), stages.parsed_here)
                if stop.requested.is_set():
                    break
        ledger.save_notes()
        if stop.requested.is_set():
            ledger.finish(interrupted=True)
            stop.check()
        if plan.removed:
            ledger.removed(plan.removed, remove_deleted_task(settings, kb, plan.removed, plan.held_sources))

        if not ledger.quiet:  # to index: what the stream failed to, and unchanged files never in Chroma
            to_index = [(source, path) for source, path in ledger.landed_files if source in stream.errors]
            to_index += [(src.source, chunks_path(settings.chunks_dir, kb, src.md5)) for src, _ in plan.reindex]
            try:
                index, errors, indexed = index_task(kb, to_index, settings, run_id=run_id, indexer=stream.indexer,
                                                    force_bm25=bool(ledger.landed_files or plan.removed))
            except IngestInterruptedError:  # a SIGTERM: the next run repairs the indexes
                ledger.finish(interrupted=True)
                raise
            except Exception as exc:  # e.g. no embedding model: the landed rows stay; the next run indexes them
                index, errors, indexed = None, {"*": f"{type(exc).__name__}: {exc}"[:500]}, []
            ledger.indexed(index, {**{s: e for s, e in stream.errors.items() if s not in indexed}, **errors})

        ledger.finish()  # and publishes what readers see from now on
        create_table_artifact(key=artifact_key("ingest", kb), table=ledger.summary.outcome_rows(),
                              description=ledger.summary.headline)
        ledger.raise_if_unindexed()  # landed but not indexed: the run is not Completed
    return final_state(ledger.summary)  # Failed when every file failed


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
