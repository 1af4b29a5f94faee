"""Index stream: landed batches go into the index stage's `Indexer` on a background thread while
the worker processes parse the next batches, so embedding overlaps parsing instead of following it
(torch releases the GIL while it encodes). DuckDB keeps its one writer, the flow's thread; this
thread writes Chroma and the embedding cache only. The flow's index stage then gets the indexer,
with what it did, and indexes the remainder (`sync_indexes(..., indexer=...)`).

A batch that fails here (no model, Chroma down) is not lost: its documents are in DuckDB and the
index stage's repair step, or the next run, indexes them.
"""
from __future__ import annotations

import queue
import threading
from pathlib import Path

from schemas.settings import Settings
from tasks.index.sync import Indexer


class IndexStream:
    def __init__(self, settings: Settings, kb: str, stop: threading.Event | None = None):
        self.settings, self.kb = settings, kb
        self.stop = stop or threading.Event()
        self.indexer: Indexer | None = None
        self.errors: dict[str, str] = {}  # source → why it failed to index here
        self._queue: queue.Queue[list[tuple[str, Path]] | None] = queue.Queue()
        self._thread: threading.Thread | None = None

    def put(self, landed: list[tuple[str, Path]]) -> None:
        """Index these landed documents (source, chunks Parquet) as soon as the thread is free."""
        if not landed:
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kbflow-index-stream", daemon=True)
            self._thread.start()
        self._queue.put(landed)

    def _run(self) -> None:
        while (items := self._queue.get()) is not None:
            if self.stop.is_set():
                continue  # stopping: DuckDB holds them, the next run indexes them
            try:
                self.indexer = self.indexer or Indexer(self.settings, self.kb)
                self.errors.update(self.indexer.index_documents(items))
            except Exception as exc:  # the whole batch (e.g. no embedding model): the index stage retries
                self.errors.update({source: f"{type(exc).__name__}: {exc}"[:500] for source, _ in items})

    def close(self, timeout: float | None = None) -> Indexer | None:
        """Wait until every batch put is indexed (at most `timeout` s); the indexer, if one was made."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout)
        return self.indexer

    def __enter__(self) -> IndexStream:
        return self

    def __exit__(self, *exc) -> None:
        # leaving on an error or a stop: give the batch being indexed a moment, not more (what it
        # does not finish, the next run's repair step does: the documents are in DuckDB)
        self.close(timeout=None if exc[0] is None and not self.stop.is_set() else 1)
