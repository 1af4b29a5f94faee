"""The write lock of a kbflow home: one ingest (or `kbflow rm`) writes at a time (SPEC §6).

Per home, not per KB: every KB of a home shares one DuckDB file (single writer) and one Chroma
directory, so two writers on different KBs of the same home would collide as well.

The lock is an OS-level `flock` (the `filelock` package) on `home/locks/write.lock`: the kernel
drops it when its holder dies, so a run killed with `kill -9` never leaves a stale lock behind (a
PID file would). Who holds it is written beside it (`write.holder.json`) so that a refused run can
name the other one; that file is only read while the lock is held by someone.

Policy: refuse at once by default (`ingest_lock_wait_s = 0`) with a message naming the other run;
with a wait (`--wait SECONDS`, or the setting — the scheduled deployment waits), queue behind the
other run and refuse only when the wait runs out.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from filelock import FileLock, Timeout

from schemas.errors import IngestLockedError

LOCK_FILE = "write.lock"
HOLDER_FILE = "write.holder.json"
# A refusal "at once" still waits this long: a reader that checks whether the home is being written
# (it takes and drops the lock in microseconds) must never make a starting writer refuse.
GRACE_S = 1.0

# homes whose write lock this process holds (its reads go to the live warehouse) → the run's --wait
_held: dict[str, float] = {}


def holds_write_lock(home: Path) -> bool:
    return str(Path(home).resolve()) in _held


def held_wait(home: Path) -> float:
    """The wait (--wait) of this process's write lock on `home`: its DuckDB connections wait as long."""
    return _held.get(str(Path(home).resolve()), 0.0)


def is_free(home: Path) -> bool:
    """True when no process holds the home's write lock (this one included) at this instant."""
    if holds_write_lock(home):
        return False
    lock_file = lock_paths(home)[0]
    if not lock_file.exists():
        return True
    try:
        lock = FileLock(str(lock_file), thread_local=False)
        lock.acquire(timeout=0)
    except (Timeout, OSError):  # held, or a read-only home (no writer can hold it there)
        return not os.access(lock_file.parent, os.W_OK)
    lock.release()
    return True


def lock_paths(home: Path) -> tuple[Path, Path]:
    folder = home / "locks"
    return folder / LOCK_FILE, folder / HOLDER_FILE


def read_holder(home: Path) -> dict:
    try:
        return json.loads(lock_paths(home)[1].read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def describe(holder: dict) -> str:
    if not holder:
        return "another kbflow process (it has not said which yet)"
    return (f"kbflow {holder.get('what', 'ingest')} of kb {holder.get('kb')!r} (run {holder.get('run_id') or '?'}, "
            f"pid {holder.get('pid')} on {holder.get('host')}, started {holder.get('started_at')})")


def _refusal(home: Path, kb: str, wait_s: float, what: str) -> IngestLockedError:
    waited = f" after waiting {wait_s:g} s" if wait_s > 0 else ""
    return IngestLockedError(
        f"{home} is busy{waited}: {describe(read_holder(home))} is writing to it. kbflow lets one ingest "
        f"(or rm) write to a home at a time; this {what} of kb {kb!r} did not start. Run it when the other "
        f"finishes, or pass --wait SECONDS (setting ingest_lock_wait_s) to queue behind it.")


def check_free(home: Path, *, kb: str, what: str = "ingest") -> None:
    """Raise the refusal at once if another process holds the lock (the CLI asks before it starts
    a flow run; the flow's own `write_lock` is what actually guards the writes)."""
    lock_file = lock_paths(home)[0]
    if not lock_file.exists():
        return
    lock = FileLock(str(lock_file), thread_local=False)
    try:
        lock.acquire(timeout=GRACE_S)
    except Timeout:
        raise _refusal(home, kb, 0, what) from None
    lock.release()


@contextlib.contextmanager
def write_lock(home: Path, *, kb: str, run_id: str, wait_s: float = 0.0, what: str = "ingest") -> Iterator[None]:
    """Hold the home's write lock for the body; raise `IngestLockedError` if another process has it
    and does not let go within `wait_s` seconds (0 = refuse at once)."""
    lock_file, holder_file = lock_paths(home)
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(lock_file), thread_local=False)
    try:
        lock.acquire(timeout=max(GRACE_S, wait_s), poll_interval=0.1)
    except Timeout:
        raise _refusal(home, kb, wait_s, what) from None
    key = str(Path(home).resolve())
    _held[key] = max(0.0, wait_s)
    try:
        holder = {"what": what, "kb": kb, "run_id": run_id, "pid": os.getpid(), "host": socket.gethostname(),
                  "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        tmp = holder_file.with_name(f".{holder_file.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(holder), encoding="utf-8")
        os.replace(tmp, holder_file)
        yield
    finally:
        holder_file.unlink(missing_ok=True)
        _held.pop(key, None)
        lock.release()


@contextlib.contextmanager
def run_alive(home: Path, run_id: str) -> Iterator[bool]:
    """Hold `home/locks/run-RUN_ID.lock` while a batch-QA run works: the next command that finds the
    run still `running` and can take this lock knows the run's process died (`is_dead`). Yields
    False (and holds nothing) on a read-only home."""
    folder = home / "locks"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(folder / f"run-{run_id}.lock"), thread_local=False)
        lock.acquire(timeout=0)
    except (OSError, Timeout):
        yield False
        return
    try:
        yield True
    finally:
        lock.release()
        (folder / f"run-{run_id}.lock").unlink(missing_ok=True)


def is_dead(home: Path, run_id: str) -> bool:
    """A `running` run whose process no longer holds its `run_alive` lock (killed, crashed)."""
    path = home / "locks" / f"run-{run_id}.lock"
    try:
        lock = FileLock(str(path), thread_local=False)
        lock.acquire(timeout=0)
    except Timeout:
        return False
    except OSError:
        return False
    lock.release()
    path.unlink(missing_ok=True)
    return True


# ---------------------------------------------------------------- the stores in step
# A writer marks a KB before it changes any of its stores and clears the mark once DuckDB, Chroma
# and BM25 agree again and are published; `kbflow check` marks a KB it finds inconsistent. A mark
# left behind (a kill -9, an index stage that failed) tells the next ingest to run its full repair
# even when no file changed; without one, an unchanged re-ingest need not open Chroma at all.


def _sync_marker(home: Path, kb: str) -> Path:
    return Path(home) / "locks" / f"sync-pending-{kb}"


def mark_sync_pending(home: Path, kb: str) -> None:
    marker = _sync_marker(home, kb)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()


def sync_pending(home: Path, kb: str) -> bool:
    return _sync_marker(home, kb).exists()


def clear_sync_pending(home: Path, kb: str) -> None:
    _sync_marker(home, kb).unlink(missing_ok=True)
