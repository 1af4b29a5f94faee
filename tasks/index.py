"""Index: keep a knowledge base's Chroma collection and BM25 index in line with its landed chunks.

DuckDB (`documents`/`chunks`) is the record of what a knowledge base holds; the indexes follow it:
- `index_documents` embeds a document's chunks (cached by text, so unchanged chunks are never
  re-embedded), upserts them into Chroma, then drops that document's stale ids;
- `rebuild_bm25` rebuilds the BM25 index from the landed Parquet files' stored tokens (nothing is
  re-tokenized) and swaps it in atomically;
- `check` compares the chunk_id sets of the three stores.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

from schemas.arrow import from_table
from schemas.chunk import Chunk
from schemas.settings import Settings
from tasks import vector_index
from warehouse import db


def read_chunks(path: Path) -> list[Chunk]:
    return from_table(pq.read_table(path), Chunk)


@dataclass
class IndexSummary:
    documents: int = 0
    chunks: int = 0
    embedded: int = 0  # texts actually encoded (the rest came from the embedding cache)
    removed: int = 0
    bm25_chunks: int = 0


class Indexer:
    """Holds the embedding model and the collection for one knowledge base during a run."""

    def __init__(self, settings: Settings, kb: str):
        from tasks.embed import EmbeddingCache, Embedder, resolve_model

        self.settings, self.kb = settings, kb
        self.embedder = Embedder(resolve_model(settings), batch_size=settings.embedding_batch_size)
        self.cache = EmbeddingCache(settings.cache_dir / "embeddings", self.embedder.model_id)
        self.collection = vector_index.collection(settings, kb)

    def index_document(self, chunks_file: Path, source: str, summary: IndexSummary) -> None:
        from tasks.embed import embed_texts, embedding_text

        chunks = read_chunks(chunks_file)
        before = self.embedder.encoded
        vectors = embed_texts([embedding_text(c) for c in chunks], self.embedder, self.cache,
                              batch_size=self.settings.embedding_batch_size)
        update = vector_index.upsert_document(self.collection, self.kb, chunks, vectors, source=source)
        summary.documents += 1
        summary.chunks += update.added
        summary.removed += update.removed
        summary.embedded += self.embedder.encoded - before


def kb_chunk_files(settings: Settings, kb: str) -> list[Path]:
    _, rows = db.query(settings.db_path, "SELECT chunks_path FROM documents WHERE kb = ? ORDER BY source", [kb])
    return [Path(p) for (p,) in rows]


def rebuild_bm25(settings: Settings, kb: str) -> int:
    from tasks.bm25_index import index_for_kb

    index = index_for_kb(kb_chunk_files(settings, kb))
    index.save(settings.bm25_dir / kb)
    return len(index.chunk_ids)


def remove_document(settings: Settings, kb: str, source: str) -> int:
    """Remove a document from Chroma, then DuckDB (then its Parquet); BM25 is rebuilt by the caller.
    Re-running after a crash converges: each step skips what is already gone."""
    removed = vector_index.delete_source(vector_index.collection(settings, kb), source)
    from tasks.land import chunks_path

    for md5 in db.delete_document(settings.db_path, kb, source):
        chunks_path(settings.chunks_dir, kb, md5).unlink(missing_ok=True)
    return removed


@dataclass
class Consistency:
    kb: str
    duckdb: int
    chroma: int
    bm25: int
    missing: dict[str, list[str]] = field(default_factory=dict)  # store -> ids the other stores have

    @property
    def ok(self) -> bool:
        return not any(self.missing.values())


def check(settings: Settings, kb: str) -> Consistency:
    """Compare the chunk_id sets of DuckDB, Chroma and BM25 for one knowledge base."""
    from tasks.bm25_index import BM25Index

    _, rows = db.query(settings.db_path, "SELECT chunk_id FROM chunks WHERE kb = ?", [kb])
    stores = {"duckdb": {r[0] for r in rows},
              "chroma": vector_index.all_ids(vector_index.collection(settings, kb))}
    bm25_dir = settings.bm25_dir / kb
    stores["bm25"] = set(BM25Index.load(bm25_dir).chunk_ids) if bm25_dir.exists() else set()
    union = set().union(*stores.values())
    missing = {name: sorted(union - ids) for name, ids in stores.items() if union - ids}
    return Consistency(kb, len(stores["duckdb"]), len(stores["chroma"]), len(stores["bm25"]), missing)
