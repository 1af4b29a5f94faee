"""Published generations of a home: what readers read while one writer works.

DuckDB lets one process write a file or several read it, never both, so readers never open the
live `kbflow.duckdb`. Instead they open a *generation*: `home/published/g-…/` holds a checkpointed
copy of the warehouse (`kbflow.duckdb`) and, when an ingest or rm published it, the vector and
BM25 indexes of every KB as they were at that moment (`tasks.index.snapshot`). A generation is
written in full, then named in `published/CURRENT` (os.replace); nobody ever changes it afterwards.

- Writers (ingest, rm) publish a full generation as their last step, still holding the write lock.
- Every writing connection leaves a new token in `published/WRITTEN`; a reader that finds the
  current generation older than the token, while no ingest/rm holds the write lock, publishes a
  warehouse-only generation (the indexes are linked from the previous one): so `kbflow sql` sees
  the results of an `ask` that just landed. While a writer works, readers keep the last generation.
- A run pins its generation (`pin`: a shared flock on its `in-use.lock`) so every batch reads the
  same one; old generations are deleted only when no reader pins them.
- The process holding the write lock reads the live warehouse (its own writes).
- A home the reader cannot write to (read-only media) is read in place: no writer can work there.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Callable, Iterator

from filelock import FileLock, Timeout

from tasks.common.lock import holds_write_lock, is_free

FOLDER = "published"
CURRENT = "CURRENT"
WRITTEN = "WRITTEN"
WAREHOUSE = "kbflow.duckdb"
IN_USE = "in-use.lock"
TOKEN = "token"
KEEP = 2  # newest generations kept even when nobody pins them

_pinned: dict[str, Path] = {}  # warehouse file → the generation this process's run reads


def folder(db_path: Path) -> Path:
    """`home/published` for the home's warehouse; another DuckDB file gets a folder of its own."""
    return db_path.parent / (FOLDER if db_path.name == WAREHOUSE else f"{FOLDER}-{db_path.stem}")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except (FileNotFoundError, NotADirectoryError):
        return ""


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:6]}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def current(db_path: Path) -> Path | None:
    name = _read(folder(db_path) / CURRENT)
    gen = folder(db_path) / name if name else None
    return gen if gen is not None and (gen / WAREHOUSE).is_file() else None


def mark_written(db_path: Path) -> None:
    """A writing connection closed: generations published before now are stale."""
    try:
        folder(db_path).mkdir(exist_ok=True)
        _write_atomic(folder(db_path) / WRITTEN, f"{time.time_ns()}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    except OSError:
        pass  # a read-only home takes no writes


def _stale(db_path: Path, gen: Path) -> bool:
    written = _read(folder(db_path) / WRITTEN)
    return bool(written) and written != _read(gen / TOKEN)


def _writable(db_path: Path) -> bool:
    top = folder(db_path)
    return os.access(db_path.parent, os.W_OK) and (not top.exists() or os.access(top, os.W_OK))


def reader_generation(db_path: Path) -> Path | None:
    """The generation a read should use; None = read the live warehouse (this process writes it, the
    home is read-only, or no generation can be made yet)."""
    home = db_path.parent
    if holds_write_lock(home):
        return None
    pinned = _pinned.get(str(db_path.resolve()))
    if pinned is not None:
        return pinned
    gen = current(db_path)
    if (gen is None or _stale(db_path, gen)) and _writable(db_path) and db_path.exists() and is_free(home):
        gen = publish(db_path, wait_s=0.0) or gen
    return gen


def reader_path(db_path: Path) -> Path:
    gen = reader_generation(db_path)
    return gen / WAREHOUSE if gen is not None else db_path


@contextlib.contextmanager
def pin(db_path: Path) -> Iterator[Path | None]:
    """Read one generation for the whole block (a batch-QA run): it is not deleted meanwhile."""
    home = db_path.parent
    key = str(db_path.resolve())
    if key in _pinned or holds_write_lock(home):
        yield _pinned.get(key)
        return
    gen = reader_generation(db_path)
    if gen is None:
        yield None
        return
    with open(gen / IN_USE, "rb") as fh:
        fcntl.flock(fh, fcntl.LOCK_SH)
        _pinned[key] = gen
        try:
            yield gen
        finally:
            _pinned.pop(key, None)
            fcntl.flock(fh, fcntl.LOCK_UN)


def publish(db_path: Path, *, indexes: Callable[[Path], None] | None = None, wait_s: float = 60.0) -> Path | None:
    """Write a new generation and make it current; None when another process keeps the warehouse
    busy for longer than `wait_s` (the caller goes on with the generation it had).

    `indexes(folder)` writes the vector and BM25 snapshots (a writer holding the write lock); without
    it the previous generation's are linked (they describe the indexes, which only writers change)."""
    from warehouse import db  # db imports this module

    top = folder(db_path)
    top.mkdir(exist_ok=True)
    try:
        serial = FileLock(str(top / ".publish.lock"), thread_local=False)
        serial.acquire(timeout=max(wait_s, 5.0))
    except Timeout:
        return None
    try:
        previous = current(db_path)
        if indexes is None and previous is not None and not _stale(db_path, previous):
            return previous  # another reader refreshed it while this one waited
        name = f"g-{time.time_ns():020d}-{uuid.uuid4().hex[:6]}"
        tmp = top / f".{name}.tmp"
        tmp.mkdir()
        try:
            token = db.snapshot_to(db_path, tmp / WAREHOUSE, wait_s=wait_s, read_token=lambda: _read(top / WRITTEN))
            if token is None:
                shutil.rmtree(tmp, ignore_errors=True)
                return None
            if indexes is not None:
                indexes(tmp)
            elif previous is not None:
                _link_indexes(previous, tmp)
            (tmp / IN_USE).touch()
            (tmp / TOKEN).write_text(token, encoding="utf-8")
            os.rename(tmp, top / name)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        _write_atomic(top / CURRENT, name)
        _collect_garbage(top, keep=name)
        return top / name
    finally:
        serial.release()


INDEX_FOLDERS = ("vectors", "bm25")


def _link_indexes(source: Path, target: Path) -> None:
    for name in INDEX_FOLDERS:
        if (source / name).is_dir():
            shutil.copytree(source / name, target / name, copy_function=link_or_copy)


def link_or_copy(src: str, dst: str) -> None:
    """Hard-link a file of a generation (they are never changed in place), copying across devices."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _collect_garbage(top: Path, keep: str) -> None:
    """Delete generations beyond the newest KEEP that no reader pins (an open DuckDB file stays
    readable by its reader after the unlink), and temp folders of crashed publishes."""
    gens = sorted((p for p in top.glob("g-*") if p.is_dir()), reverse=True)
    for gen in gens[KEEP:]:
        if gen.name == keep:
            continue
        try:
            with open(gen / IN_USE, "rb") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                shutil.rmtree(gen, ignore_errors=True)
        except (BlockingIOError, FileNotFoundError):
            continue
    now = time.time()
    for tmp in top.glob(".g-*.tmp"):
        with contextlib.suppress(FileNotFoundError):
            if now - tmp.stat().st_mtime > 3600:
                shutil.rmtree(tmp, ignore_errors=True)
