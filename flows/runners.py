"""Task runners of the ingest flow: how each file's parse → chunk (→ embed) chain is executed.

`default` runs every task in the flow process, one file after the other. `dask` (the optional
`[dask]` extra) submits each file's parse → chunk → embed chain to a Dask cluster — a LocalCluster
of worker processes, or an existing scheduler (`dask_address`) — and the flow lands the results in
its own process as they arrive: DuckDB has one writer, and Chroma and BM25 are written only by the
flow. Embedding on the workers fills the shared on-disk embedding cache, so the index stage only
reads vectors. Workers must see the home at the same path (one machine, or a shared filesystem).

The flow starts the Dask runner itself (for the CLI and deployments alike), and only when there is
something to parse.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from prefect import Task, get_run_logger
from prefect.context import FlowRunContext

from schemas.errors import ExtraNotInstalledError, InvalidValueError
from schemas.settings import Settings
from tasks.ingest.discover import SourceFile
from tasks.ingest.land import LandedChunks
from tasks.ingest.manifest import Todo
from tasks.ingest.parse import ParsedOutput

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
class FileTasks:
    """The flow's tasks for one file's stages (passed in: this module does not import the flow)."""

    parse: Task  # (src, settings) -> ParsedOutput
    chunk: Task  # (src, parsed, kb, settings) -> LandedChunks
    embed: Task  # (chunked, model, settings) -> texts encoded


class Inline:
    """Each file's stages called in the flow process, one file after the other."""

    def __init__(self, tasks: FileTasks, kb: str, settings: Settings):
        self.tasks, self.kb, self.settings = tasks, kb, settings

    def parse(self, i: int, src: SourceFile) -> ParsedOutput:
        return self.tasks.parse(src, self.settings)

    def chunk(self, i: int, src: SourceFile, parsed: ParsedOutput) -> LandedChunks:
        return self.tasks.chunk(src, parsed, self.kb, self.settings)

    def embedded(self, i: int) -> int:
        return 0


class Submitted:
    """Every file's parse → chunk (→ embed) chain submitted to a task runner at once; results are
    taken in file order, so landing order (and the outcome table) is the default runner's."""

    def __init__(self, runner, tasks: FileTasks, todo: list[Todo], kb: str, settings: Settings, model: str | None):
        self.parsed, self.chunked, self.embeds = [], [], []
        for t in todo:
            p = runner.submit(tasks.parse, {"src": t.src, "settings": settings})
            c = runner.submit(tasks.chunk, {"src": t.src, "parsed": p, "kb": kb, "settings": settings})
            self.parsed.append(p)
            self.chunked.append(c)
            self.embeds.append(runner.submit(tasks.embed, {"chunked": c, "model": model, "settings": settings})
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


def _worker_model(settings: Settings) -> str | None:
    """The embedding model the workers load (resolved, and converted if needed, once, here)."""
    from tasks.index.embed import resolve_model

    try:
        return str(resolve_model(settings))
    except Exception as exc:  # the index stage reports it per document
        get_run_logger().warning("no embedding on the workers: %s", exc)
        return None


@contextlib.contextmanager
def file_stages(task_runner, tasks: FileTasks, todo: list[Todo], kb: str,
                settings: Settings) -> Iterator[Inline | Submitted]:
    """The executor of the files' stages: on `task_runner` (started here, stopped when the block
    ends) when it is given and there is work, else inline."""
    if task_runner is None or not todo:
        yield Inline(tasks, kb, settings)
        return
    with task_runner:
        yield Submitted(task_runner, tasks, todo, kb, settings, _worker_model(settings))


def final_state(summary: Any) -> Any:
    """The ingest flow's return: its summary, or — when files were given and not one landed, was
    unchanged or removed — a Failed state carrying the summary, so Prefect's state tells the truth
    (`ingest(..., return_state=True).result(raise_on_failure=False)` is the summary either way)."""
    from prefect.states import Failed

    if summary.outcomes and not (summary.landed + summary.skipped + summary.removed):
        return Failed(message=f"nothing landed: {summary.headline}", data=summary)
    return summary
