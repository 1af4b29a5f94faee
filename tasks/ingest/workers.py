"""Workers: each new or changed file's parse → chunk, in batches, on every core.

A file is *prepared* (parsed, its chunks built and written to its Parquet file, not yet in DuckDB)
by `prepare_file`, which never raises: a failure comes back as its stage, kind and reason, so a
result crosses a process boundary whatever went wrong. `plan_batches` groups the files (by count
and bytes) into the units the flow tracks, lands and indexes.

`FilePool` prepares files in worker processes (MinerU's PDFium is not thread-safe, and torch in
the flow process must not be forked: workers are spawned). Each file has a time
limit (`file_time_limit_s`): a file that exceeds it has its worker killed (with the helpers MinerU
started) and replaced, and fails with that reason while the others go on. What workers log on
`kbflow.*` is handed back with the result and logged again in the flow process, inside the
collecting task's run. The pool lives for the process (a second ingest reuses its workers).

`Interruption` turns SIGTERM into a stop at a safe point: workers are terminated at once, files
already prepared still land, the flow then ends with `IngestInterruptedError`.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import math
import multiprocessing
import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa

from schemas.errors import FileTimeLimitError, IngestInterruptedError, KbflowError
from schemas.settings import Settings
from tasks.ingest.chunk import chunk_document
from tasks.ingest.land import LandedChunks, land_documents
from tasks.ingest.manifest import Todo
from tasks.ingest.parse import ParsedOutput, parse_source

log = logging.getLogger("kbflow.ingest")


@dataclass
class Prepared:
    """A file parsed and chunked (its Parquet written), or the stage, kind and reason it failed."""

    todo: Todo
    parsed: ParsedOutput | None = None
    chunked: LandedChunks | None = None
    stage: str = ""  # of the failure ("" = prepared)
    error_kind: str = ""
    reason: str = ""
    logs: list[logging.LogRecord] = field(default_factory=list)  # from a worker process, to log again

    @property
    def ok(self) -> bool:
        return self.chunked is not None


def batch_rows(prepared: list[Prepared]) -> pa.Table | None:
    """The chunk rows the workers wrote for a batch's files, as one table: a file's own table held
    ~45 KB for its ~2.5 KB of rows, and 40,000 documents waiting to be embedded took 1.8 GB."""
    tables = [p.chunked.rows for p in prepared if p.ok and p.chunked.rows is not None]
    return pa.concat_tables(tables).combine_chunks() if tables else None


def embed_batch(prepared: list[Prepared], model: str, settings: Settings) -> int:
    """Put a batch's vectors into the shared embedding cache (on a Dask worker); how many texts were
    encoded. The flow's index stage then finds them there instead of encoding."""
    from tasks.index.sync import warm_embedding_cache  # torch and Chroma: not in the parsing processes

    return sum(warm_embedding_cache(settings, p.chunked.chunks_path, model) for p in prepared if p.ok)


def describe_failure(stage: str, exc: BaseException) -> tuple[str, str, str]:
    """(stage, kind, reason) of a file's failure: a kbflow error names its own stage (e.g. normalize)."""
    if isinstance(exc, KbflowError):
        return (exc.stage if stage == "parse" else stage), type(exc).__name__, exc.reason
    return stage, type(exc).__name__, str(exc)[:500] or type(exc).__name__  # an unexpected bug in one stage


def prepare_file(todo: Todo, kb: str, settings: Settings) -> Prepared:
    """Parse and chunk one file; never raises (a bug in one file's stage must not lose the others)."""
    stage = "parse"
    try:
        parsed = parse_source(todo.src, settings)
        stage = "chunk"
        prepared = Prepared(todo, parsed, chunk_document(todo.src, parsed.parsed_dir, kb, settings))
    except Exception as exc:
        prepared = Prepared(todo, None, None, *describe_failure(stage, exc))
    prepared.logs = _collected.drain()
    return prepared


def prepare_batch(batch: list[Todo], kb: str, settings: Settings) -> list[Prepared]:
    """A batch's files one after the other in this process (a Dask worker)."""
    return [prepare_file(todo, kb, settings) for todo in batch]


def land_batch(prepared: list[Prepared], kb: str, run_id: str, settings: Settings,
               pipeline_key: str) -> dict[str, Exception]:
    """Land a batch's prepared files (`land_documents`): source → the error of each that did not
    land; an error of the batch as a whole (the warehouse stayed busy, a bug) fails each of its files."""
    items = [(p.todo.src, p.parsed, p.chunked) for p in prepared if p.ok]
    try:
        return land_documents(items, kb, run_id, settings, pipeline_key)
    except Exception as exc:
        return {src.source: exc for src, _, _ in items}


def worker_count(settings: Settings) -> int:
    return settings.runtime.ingest_workers or os.cpu_count() or 1


def plan_batches(todo: list[Todo], settings: Settings, min_batches: int = 1) -> list[list[Todo]]:
    """Consecutive files in batches of at most `ingest_batch_files` files and `ingest_batch_mb` bytes
    (one file at least), and smaller when needed to make `min_batches` (so that landing and
    embedding start while the other batches are parsed)."""
    most = max(1, min(settings.runtime.ingest_batch_files, math.ceil(len(todo) / max(1, min_batches))))
    most_bytes = settings.runtime.ingest_batch_mb * 1024 * 1024
    batches: list[list[Todo]] = []
    size = 0
    for t in todo:
        if not batches or len(batches[-1]) >= most or (size + t.src.size_bytes > most_bytes and batches[-1]):
            batches.append([])
            size = 0
        batches[-1].append(t)
        size += t.src.size_bytes
    return batches


# ---------------------------------------------------------------- worker processes


class _Collected(logging.Handler):
    """In a worker process: the `kbflow.*` records of the file being prepared."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []
        self.active = False

    def emit(self, record: logging.LogRecord) -> None:
        record.msg, record.args = record.getMessage(), None  # picklable whatever the arguments were
        record.exc_info, record.exc_text = None, None
        self.records.append(record)

    def drain(self) -> list[logging.LogRecord]:
        records, self.records = self.records, []
        return records if self.active else []


_collected = _Collected()


def _exit_with_children(signum, frame) -> None:
    """SIGTERM in a worker (a time limit, a stop): MinerU's helper processes go with it."""
    try:
        import psutil

        for child in psutil.Process().children(recursive=True):
            child.kill()
    finally:
        os._exit(143)


def _init_worker() -> None:
    from tasks.common.text import tokenize_many

    signal.signal(signal.SIGTERM, _exit_with_children)
    kbflow = logging.getLogger("kbflow")
    kbflow.handlers, kbflow.propagate = [_collected], False
    kbflow.setLevel(logging.INFO)
    _collected.active = True
    tokenize_many(["预热"], None)  # jieba's dictionary loads now, not on a file's time limit


class FilePool:
    """Worker processes that prepare files with a per-file time limit."""

    def __init__(self, workers: int):
        import pebble

        self.workers = workers
        self.pool = pebble.ProcessPool(max_workers=workers, initializer=_init_worker,
                                       context=multiprocessing.get_context("spawn"))
        self.stopping = threading.Event()

    def submit(self, batch: list[Todo], kb: str, settings: Settings) -> list[concurrent.futures.Future]:
        if self.stopping.is_set():  # stopped: nothing more starts (the flow lands what is done)
            return [concurrent.futures.Future() for _ in batch]
        limit = settings.runtime.file_time_limit_s or None
        return [self.pool.schedule(prepare_file, (todo, kb, settings), timeout=limit) for todo in batch]

    def collect(self, batch: list[Todo], futures: list[concurrent.futures.Future],
                settings: Settings) -> list[Prepared]:
        """The batch's results in file order, its workers' log records logged here; a file left
        unfinished by a stop comes back failed at stage `interrupted` (the flow lands the rest)."""
        pending = set(futures)
        while pending and not self.stopping.is_set():
            _, pending = concurrent.futures.wait(pending, timeout=0.2)
        results = []
        for todo, future in zip(batch, futures):
            if not future.done():
                results.append(Prepared(todo, None, None, "interrupted", "IngestInterruptedError", "ingest stopped"))
                continue
            try:
                prepared = future.result()
            except concurrent.futures.TimeoutError:
                limit = settings.runtime.file_time_limit_s
                prepared = Prepared(todo, None, None, *describe_failure("parse", FileTimeLimitError(
                    str(todo.src.path), f"parse and chunk took longer than {limit:g} s (the file_time_limit_s "
                                        "setting); its worker process was stopped")))
            except Exception as exc:  # the worker died (killed, out of memory, a crash in native code)
                if self.stopping.is_set():
                    prepared = Prepared(todo, None, None, "interrupted", "IngestInterruptedError", "ingest stopped")
                else:
                    prepared = Prepared(todo, None, None, *describe_failure("parse", exc))
            for record in prepared.logs:
                logging.getLogger(record.name).handle(record)
            results.append(prepared)
        return results

    def stop(self) -> None:
        """Terminate the workers now (from a signal handler too: the joining is done on a thread)."""
        self.stopping.set()
        self.pool.stop()
        threading.Thread(target=self.pool.join, kwargs={"timeout": 10}, daemon=True).start()


def collect_batch(pool: FilePool, batch: list[Todo], futures: list[concurrent.futures.Future],
                  settings: Settings) -> list[Prepared]:
    """A batch's results from the worker processes (the flow's per-batch task)."""
    return pool.collect(batch, futures, settings)


_pool: FilePool | None = None


def file_pool(settings: Settings) -> FilePool:
    """The process's pool (started on first use, restarted after a stop or with another size)."""
    global _pool
    workers = worker_count(settings)
    if _pool is None or _pool.stopping.is_set() or not _pool.pool.active or _pool.workers != workers:
        if _pool is not None and not _pool.stopping.is_set():
            _pool.stop()
        _pool = FilePool(workers)
    return _pool


# ---------------------------------------------------------------- SIGTERM


class Interruption:
    """While active (in the main thread), SIGTERM stops the run: it raises at once — everything
    before and after landing is safe to stop anywhere (each write is one transaction) — except in a
    `deferred` block (the landing loop), where it sets `requested` and stops the worker pool, and
    the flow stops at its next safe point (`check`, after the batch being landed)."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.raise_now = True
        self.pool: FilePool | None = None

    def _handle(self, signum, frame) -> None:
        self.requested.set()
        if self.pool is not None:
            self.pool.stop()
        if self.raise_now:
            raise IngestInterruptedError("ingest stopped by SIGTERM; what was landed stays, the next run goes on")

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """A SIGTERM while the block runs only asks the flow to stop at its next safe point."""
        self.raise_now = False
        try:
            yield
        finally:
            self.raise_now = True

    def watch(self, pool: FilePool | None) -> None:
        """Stop `pool` on SIGTERM (at once if one came already)."""
        self.pool = pool
        if pool is not None and self.requested.is_set():
            pool.stop()

    def check(self) -> None:
        if self.requested.is_set():
            raise IngestInterruptedError("ingest stopped by SIGTERM; what was landed stays, the next run goes on")

    @contextlib.contextmanager
    def active(self) -> Iterator[Interruption]:
        if threading.current_thread() is not threading.main_thread():
            yield self  # signals reach the main thread only: a flow run on a thread is stopped by its runner
            return
        previous = signal.signal(signal.SIGTERM, self._handle)
        try:
            yield self
        finally:
            signal.signal(signal.SIGTERM, previous)
