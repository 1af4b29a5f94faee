"""Progress of long stages, reported by the code that does the work and shown by whoever listens.

A stage reports counts (`with track("embed", total=n, unit="chunks") as bar: bar.advance(k)`);
listeners receive each update. The CLI subscribes a rich progress display when stdout is a
terminal; with no listener, tracking costs a lock and a loop over an empty list. Updates come from
the flow process only (tasks on Dask workers report nothing here): thread-safe, not cross-process.
"""
from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Update:
    stage: str  # "parse", "land", "embed", "questions", ...
    done: int
    total: int | None  # None when unknown
    unit: str
    elapsed_s: float
    finished: bool = False

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the rate so far; None before the first unit or without a total."""
        if not self.total or not self.done or self.finished:
            return None
        return self.elapsed_s / self.done * max(0, self.total - self.done)


Listener = Callable[[Update], None]
_listeners: list[Listener] = []
_lock = threading.Lock()


@contextlib.contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Send every update to `listener` while the block runs."""
    with _lock:
        _listeners.append(listener)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(listener)


class Tracker:
    """One stage's counter."""

    def __init__(self, stage: str, total: int | None, unit: str):
        self.stage, self.total, self.unit = stage, total, unit
        self.done = 0
        self.started = time.perf_counter()
        self._lock = threading.Lock()

    def _emit(self, finished: bool = False) -> None:
        update = Update(self.stage, self.done, self.total, self.unit, time.perf_counter() - self.started, finished)
        with _lock:
            listeners = list(_listeners)
        for listener in listeners:
            listener(update)

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
        self._emit()

    def set(self, done: int, total: int | None = None) -> None:
        """Absolute position (for callers that count themselves, e.g. `embed_texts`' callback)."""
        with self._lock:
            self.done = done
            if total is not None:
                self.total = total
        self._emit()

    def finish(self) -> None:
        self._emit(finished=True)


@contextlib.contextmanager
def track(stage: str, total: int | None = None, unit: str = "files") -> Iterator[Tracker]:
    """A tracker for one stage; listeners hear `finished` when the block ends (also on error)."""
    tracker = Tracker(stage, total, unit)
    tracker._emit()
    try:
        yield tracker
    finally:
        tracker.finish()
