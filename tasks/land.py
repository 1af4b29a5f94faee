"""Land: a document's chunks as one Parquet file, written atomically (temp file + rename)."""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.arrow import to_table
from schemas.chunk import Chunk


def chunks_path(chunks_dir: Path, kb: str, doc_md5: str) -> Path:
    return chunks_dir / f"kb={kb}" / f"{doc_md5}.parquet"


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


def write_parquet(table: pa.Table, path: Path) -> Path:
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")
    return path


def write_chunks(chunks: list[Chunk], path: Path) -> Path:
    return write_parquet(to_table(chunks, Chunk), path)
