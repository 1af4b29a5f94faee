"""Files: atomic writes (temp sibling + rename, so readers see the old file or the whole new one)
and streamed hashing (a large file never sits in memory)."""
from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

BLOCK = 1 << 20  # bytes read at a time when hashing


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A hidden temporary sibling of `path` to write: renamed onto `path` when the block ends, removed
    when it raises, so readers see the old file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_parquet(table: pa.Table, path: Path, **options) -> Path:
    """`table` as Parquet at `path`, atomically; zstd unless `options` say otherwise."""
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, **{"compression": "zstd", **options})
    return path


def update_digest(digest: "hashlib._Hash", path: Path, chunk_size: int = BLOCK) -> "hashlib._Hash":
    """Feed a file's bytes into `digest`, streamed in blocks."""
    with path.open("rb") as fh:
        while block := fh.read(chunk_size):
            digest.update(block)
    return digest


def file_digest(path: Path, algorithm: str = "md5", chunk_size: int = BLOCK) -> str:
    """Hex digest of a file's bytes (MD5 identifies documents; SHA-256 checksums model files)."""
    return update_digest(hashlib.new(algorithm), path, chunk_size).hexdigest()


def file_md5(path: Path, chunk_size: int = BLOCK) -> str:
    return file_digest(path, "md5", chunk_size)


def files_md5(files: Iterable[Path]) -> str:
    """One MD5 over several files: each file's name, then its bytes, in the order given."""
    digest = hashlib.md5()
    for p in files:
        digest.update(p.name.encode())
        update_digest(digest, p)
    return digest.hexdigest()
