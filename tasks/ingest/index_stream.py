"""Index stream: landed batches go into the index stage's `Indexer` on a background thread while
the worker processes parse the next batches, so embedding overlaps parsing instead of following it
(torch releases the GIL while it encodes). DuckDB keeps its one writer, the flow's thread; this
thread writes Chroma and the embedding cache only. The flow's index stage then gets the indexer,
with what it did, and indexes the remainder (`sync_indexes(..., indexer=...)`).

A batch that fails here (no model, Chroma down) is not lost: its documents are in DuckDB and the
index stage's repair step, or the next run, indexes them.

Cores: `start` loads the model on the thread while the first files parse. Until the flow closes the
stream (parsing is over), torch computes on one thread: its OpenMP threads, sharing the cores with
busy worker processes, wait for each other (bench: one thread and two busy processes got ~1.0 of this
2-core machine's work done, two threads 0.86); then on all of them.
"""
from __future__ import annotations

import queue
import threading
from pathlib import Path

import pyarrow as pa

from schemas.settings import Settings
from tasks.index.sync import Indexer


class IndexStream:
    def __init__(self, settings: Settings, kb: str, stop: threading.Event | None = None, load_early: bool = False):
        """`load_early`: start the thread on entering, so the model loads while the first files parse."""
        self.settings, self.kb, self.load_early = settings, kb, load_early
        self.stop = stop or threading.Event()
        self.indexer: Indexer | None = None
        self.errors: dict[str, str] = {}  # source → why it failed to index here
        self._queue: queue.Queue[tuple[list[tuple[str, Path]], list[pa.Table]] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._parsing = True  # until `close`: the embedder computes on one thread
        self._threads_lock = threading.Lock()

    def start(self) -> None:
        """Start the thread now: it loads the embedding model while the first files are parsed."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kbflow-index-stream", daemon=True)
            self._thread.start()

    def put(self, landed: list[tuple[str, Path]], rows: pa.Table | None = None) -> None:
        """Index these landed documents (source, chunks Parquet) as soon as the thread is free; `rows`:
        the chunk rows of some of them, as written (`batch_rows`), which need no reading back."""
        if landed:
            self.start()
            self._queue.put((landed, [] if rows is None else [rows]))

    def _load(self) -> None:
        self.indexer = self.indexer or Indexer(self.settings, self.kb)
        embedder = self.indexer.embedder
        with self._threads_lock:
            embedder.threads = 1 if self._parsing else None

    def _run(self) -> None:
        try:
            self._load()
        except Exception:  # e.g. no embedding model: each batch below fails with the reason
            pass
        closing = False
        while not closing and (queued := self._queue.get()) is not None:
            items, rows = queued
            # the batches that landed while the last call embedded go in together (up to a group's
            # worth of documents): their texts are sorted by length together, so batches pad less
            # (one landed batch of 256 one-chunk files alone computed ~9% more tokens)
            while len(items) < Indexer.GROUP_CHUNKS:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    closing = True
                    break
                items, rows = items + more[0], rows + more[1]
            if self.stop.is_set():
                continue  # stopping: DuckDB holds them, the next run indexes them
            try:
                self._load()
                self.errors.update(self.indexer.index_documents(items, pa.concat_tables(rows) if rows else None))
            except Exception as exc:  # the whole batch (e.g. no embedding model): the index stage retries
                self.errors.update({source: f"{type(exc).__name__}: {exc}"[:500] for source, _ in items})

    def close(self, timeout: float | None = None) -> Indexer | None:
        """Wait until every batch put is indexed (at most `timeout` s); the indexer, if one was made."""
        with self._threads_lock:  # parsing is over: every core embeds
            self._parsing = False
            if self.indexer is not None and self.indexer.loaded_embedder is not None:
                self.indexer.loaded_embedder.threads = None
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout)
        return self.indexer

    def __enter__(self) -> IndexStream:
        if self.load_early:
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        # leaving on an error or a stop: give the batch being indexed a moment, not more (what it
        # does not finish, the next run's repair step does: the documents are in DuckDB)
        self.close(timeout=None if exc[0] is None and not self.stop.is_set() else 1)
