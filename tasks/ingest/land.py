"""Land: a document's chunks as one Parquet file, written atomically (temp file + rename)."""
from __future__ import annotations

from pathlib import Path

from schemas.arrow import to_table
from schemas.chunk import Chunk
from tasks.common.files import write_parquet


def chunks_path(chunks_dir: Path, kb: str, doc_md5: str) -> Path:
    return chunks_dir / f"kb={kb}" / f"{doc_md5}.parquet"


def write_chunks(chunks: list[Chunk], path: Path) -> Path:
    return write_parquet(to_table(chunks, Chunk), path)
