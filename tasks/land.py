"""Land: a document's chunks as one Parquet file, written atomically (temp file + rename)."""
from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq

from schemas.arrow import to_table
from schemas.chunk import Chunk


def chunks_path(chunks_dir: Path, kb: str, doc_md5: str) -> Path:
    return chunks_dir / f"kb={kb}" / f"{doc_md5}.parquet"


def write_chunks(chunks: list[Chunk], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        pq.write_table(to_table(chunks, Chunk), tmp, compression="zstd")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
