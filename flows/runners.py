"""Task runners of the ingest flow: how each batch of files' parse → chunk (→ embed) is executed.

`default` gives the files to the process's worker processes (`tasks.ingest.workers.FilePool`,
one per core, a time limit per file) and collects each batch in one task run. `dask` (the optional
`[dask]` extra) submits each batch's prepare → embed tasks to a Dask cluster — a LocalCluster
of worker processes, or an existing scheduler (`dask_address`). Either way the flow lands the
batches in its own process as they arrive: DuckDB has one writer, and Chroma and BM25 are written
only by the flow. Embedding on the Dask workers fills the shared on-disk embedding cache, so the
index stage only reads vectors. Workers must see the home at the same path (one machine, or a
shared filesystem).

The flow starts the Dask runner itself (for the CLI and deployments alike), and only when there is
something to parse.
"""
from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from prefect import Task, get_run_logger
from prefect.context import FlowRunContext
from prefect.utilities.annotations import quote

from schemas.errors import ExtraNotInstalledError, InvalidValueError, NothingLandedError
from schemas.settings import Settings
from tasks.common.display import artifact_key
from tasks.common.progress import Tracker
from tasks.ingest.manifest import Todo
from tasks.ingest.workers import Prepared, file_pool, worker_count

RUNNERS = ("default", "dask")
# no square brackets: the CLI prints errors through rich, which would take "[dask]" for markup
DASK_EXTRA_HINT = "install kbflow's optional dask extra, i.e. pip install prefect-dask distributed"


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


def task_runner_for(runner: str, dask_address: str, workers: int):
    """The (not yet started) task runner for `runner`: None for the default one, else a Dask runner
    (so a missing extra is reported before any work)."""
    if runner not in RUNNERS:
        raise InvalidValueError(f"unknown task runner {runner!r} (choose one of {', '.join(RUNNERS)})")
    return dask_task_runner(dask_address, workers) if runner == "dask" else None


@dataclass(frozen=True)
class BatchTasks:
    """The flow's tasks for a batch of files (passed in: this module does not import the flow)."""

    collect: Task  # (pool, batch, futures, settings) -> list[Prepared]: from the worker processes
    prepare: Task  # (batch, kb, settings) -> list[Prepared]: in the task's own process (a Dask worker)
    embed: Task  # (prepared, model, settings) -> texts encoded


class Pooled:
    """The batches' files given to the worker processes a few batches ahead of the one being landed
    (they parse ahead while the flow lands and embeds, and a 50,000-file run does not hold 50,000
    scheduled tasks); batch i's results are collected, in file order, by one task run, and dropped."""

    parsed_here = False  # the workers report each file as it finishes (`on_parsed`)

    def __init__(self, tasks: BatchTasks, batches: list[list[Todo]], kb: str, settings: Settings, on_parsed=None):
        self.tasks, self.batches, self.kb, self.settings, self.on_parsed = tasks, batches, kb, settings, on_parsed
        self.pool = file_pool(settings)
        self.ahead = 2 * self.pool.workers + 1  # batches submitted beyond the one being collected
        self.futures: dict[int, list] = {}
        self._submit_up_to(self.ahead)

    def _submit_up_to(self, last: int) -> None:
        for i in range(len(self.futures), min(last + 1, len(self.batches))):
            self.futures[i] = self.pool.submit(self.batches[i], self.kb, self.settings)
            for future in self.futures[i] if self.on_parsed else ():
                future.add_done_callback(self.on_parsed)

    def prepare(self, i: int) -> list[Prepared]:
        self._submit_up_to(i + self.ahead)
        # (quoted: Prefect would walk every file's record in search of futures of its own)
        prepared = self.tasks.collect(self.pool, quote(self.batches[i]), quote(self.futures[i]), self.settings)
        self.futures[i] = []  # collected: the futures (and their results) go
        return prepared

    def embedded(self, i: int) -> int:
        return 0


class Inline:
    """A handful of text files parsed in the flow's process, one task run per batch: spawning the
    worker processes (seconds) would cost more than the parsing."""

    parsed_here, pool = True, None

    def __init__(self, tasks: BatchTasks, batches: list[list[Todo]], kb: str, settings: Settings):
        self.tasks, self.batches, self.kb, self.settings = tasks, batches, kb, settings

    def prepare(self, i: int) -> list[Prepared]:
        return self.tasks.prepare(quote(self.batches[i]), self.kb, self.settings)

    def embedded(self, i: int) -> int:
        return 0


INLINE_FILES = 8  # at most this many Markdown/text files (no PDFium, no hang to time out) are parsed inline
INLINE_KINDS = ("markdown", "text")


def parse_inline(batches: list[list[Todo]]) -> bool:
    todo = [t for batch in batches for t in batch]
    return len(todo) <= INLINE_FILES and all(t.src.kind in INLINE_KINDS for t in todo)


class Submitted:
    """Every batch's prepare (→ embed) task submitted to a task runner at once; results are taken
    in batch order, so landing order (and the outcome table) is the default runner's. (The per-file
    time limit needs a process per file: on Dask, a worker's own limits apply.)"""

    parsed_here = True

    def __init__(self, runner, tasks: BatchTasks, batches: list[list[Todo]], kb: str, settings: Settings,
                 model: str | None):
        self.prepared, self.embeds, self.pool = [], [], None
        for batch in batches:
            p = runner.submit(tasks.prepare, {"batch": batch, "kb": kb, "settings": settings})
            self.prepared.append(p)
            self.embeds.append(runner.submit(tasks.embed, {"prepared": p, "model": model, "settings": settings})
                               if model else None)

    def prepare(self, i: int) -> list[Prepared]:
        return self.prepared[i].result()

    def embedded(self, i: int) -> int:
        if self.embeds[i] is None:
            return 0
        try:
            return int(self.embeds[i].result())
        except Exception as exc:  # the index stage encodes what the worker could not
            get_run_logger().warning("embedding on the worker failed (%s); the index stage encodes it", exc)
            return 0


def _worker_model(settings: Settings) -> str | None:
    """The embedding model the workers load (resolved, and converted if needed, once, here)."""
    from tasks.index.embed import resolve_model

    try:
        return str(resolve_model(settings))
    except Exception as exc:  # the index stage reports it per document
        get_run_logger().warning("no embedding on the workers: %s", exc)
        return None


def min_batches(task_runner, settings: Settings) -> int:
    """Batches enough for each worker to have two (so a small run lands and embeds its first batches
    while the workers parse the others)."""
    return 2 * (settings.runtime.dask_workers if task_runner is not None else worker_count(settings))


BATCH_TASK_NAMES = frozenset({"parse-chunk", "land", "embed"})


class QuietBatchRuns(logging.Filter):
    """Drops Prefect's "Finished in state Completed()" line of each batch's task runs (a 50,000-file
    run would print hundreds); a failed run's line (ERROR) and the flow's own per-batch line stay."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno <= logging.INFO and getattr(record, "task_name", "") in BATCH_TASK_NAMES
                    and str(record.msg).startswith("Finished in state"))


@contextlib.contextmanager
def batch_stages(task_runner, tasks: BatchTasks, batches: list[list[Todo]], kb: str, settings: Settings,
                 on_parsed=None) -> Iterator[Pooled | Inline | Submitted | None]:
    """The executor of the batches' parse → chunk: on `task_runner` (started here, stopped when the
    block ends) when it is given, else in the worker processes (`on_parsed` called as each file
    finishes) or, for a handful of text files, inline; None when there is no work."""
    quiet, task_runs = QuietBatchRuns(), logging.getLogger("prefect.task_runs")
    task_runs.addFilter(quiet)
    try:
        with _batch_stages(task_runner, tasks, batches, kb, settings, on_parsed) as stages:
            yield stages
    finally:
        task_runs.removeFilter(quiet)


@contextlib.contextmanager
def _batch_stages(task_runner, tasks: BatchTasks, batches: list[list[Todo]], kb: str, settings: Settings,
                  on_parsed=None) -> Iterator[Pooled | Inline | Submitted | None]:
    if not batches:
        yield None
    elif task_runner is None and parse_inline(batches):
        yield Inline(tasks, batches, kb, settings)
    elif task_runner is None:
        yield Pooled(tasks, batches, kb, settings, on_parsed)
    else:
        with task_runner:
            yield Submitted(task_runner, tasks, batches, kb, settings, _worker_model(settings))


class BatchProgress:
    """The ingest's progress per stage — files parsed (as each finishes), files landed (per batch) —
    for the CLI's bars (`tasks.common.progress`), and the flow run's progress artifact, updated
    once per batch (not per file: a 50,000-file run makes a few hundred updates)."""

    def __init__(self, kb: str, files: int):
        from prefect.artifacts import create_progress_artifact

        self.files, self.landed, self.failed = files, 0, 0
        self.parsing, self.landing = Tracker("parse", files, "files"), Tracker("land", files, "files")
        self.artifact = create_progress_artifact(0.0, key=artifact_key("ingest-progress", kb),
                                                 description=f"0 of {files} files landed") if files else None

    def parsed(self, _future=None) -> None:
        self.parsing.advance()

    def batch(self, files: int, landed: int, parsed_here: bool) -> None:
        from prefect.artifacts import update_progress_artifact

        if parsed_here:  # (the worker processes report each file as it finishes)
            self.parsing.advance(files)
        self.landing.advance(files)
        self.landed, self.failed = self.landed + landed, self.failed + files - landed
        if self.artifact is not None:
            done = self.landing.done
            rate = done / max(1e-9, time.perf_counter() - self.landing.started)
            update_progress_artifact(self.artifact, 100.0 * done / self.files, description=(
                f"{self.landed} landed, {self.failed} failed of {self.files} files ({rate:.1f} files/s)"))

    def __enter__(self) -> BatchProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.parsing.finish()
        self.landing.finish()


def final_state(summary: Any) -> Any:
    """The ingest flow's return: its summary — or, when files were given and not one landed, was
    unchanged or removed, NothingLandedError carrying the summary, so Prefect's state tells the truth
    and a Python caller gets an exception it can act on (`exc.summary`)."""
    if summary.outcomes and not (summary.landed + summary.skipped + summary.removed):
        exc = NothingLandedError(summary.kb, f"nothing landed: {summary.headline}")
        exc.summary = summary
        raise exc
    return summary
