"""Index: keep a knowledge base's Chroma collection and BM25 index in line with its landed chunks.

DuckDB (`documents`/`chunks`) is the record of what a knowledge base holds; the indexes follow it:
- `Indexer.index_documents` embeds many documents' chunks together in full batches (cached by
  text, so unchanged chunks are never re-embedded), with the views of tables longer than the model
  reads (`tasks.index.views`), upserts them into Chroma in large slices, then drops each document's
  stale ids; a failing group is retried document by document;
- `rebuild_bm25` rebuilds the BM25 index from the landed chunks' stored tokens (nothing is
  re-tokenized), streamed from DuckDB in Arrow batches, and swaps it in atomically;
- `sync_indexes` does both for a run and repairs what an interrupted run left behind;
- `check` compares the chunk_id sets of the three stores.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.arrow import from_table
from schemas.chunk import Chunk, chunks_path
from schemas.errors import EmbeddingModelError
from schemas.settings import Settings
from tasks.common.progress import Tracker
from tasks.index import vector_index
from tasks.index.query_encoder import ensure_exported
from tasks.index.views import View, chunk_id_of, embedding_text, views_of
from warehouse import db
from warehouse.chunks import chunk_files, chunk_ids_by_source, chunk_term_batches, kb_chunk_ids


def read_chunks(path: Path) -> list[Chunk]:
    """A document's chunks from its Parquet file (`ParquetFile`, not `read_table`: one file needs no
    dataset discovery, which doubled the read, ~2.1 → 1.0 ms a one-chunk file)."""
    with pq.ParquetFile(path) as f:
        return from_table(f.read(), Chunk)


@dataclass
class IndexSummary:
    documents: int = 0
    chunks: int = 0
    embedded: int = 0  # texts actually encoded (the rest came from the embedding cache)
    views: int = 0  # extra vectors of tables longer than the model reads
    removed: int = 0
    bm25_chunks: int = 0
    orphans: int = 0  # ids in Chroma that DuckDB no longer holds (a killed run, a rename), deleted
    repaired: int = 0  # documents indexed again because Chroma lacked some of their chunk ids
    bm25_rebuilt: bool = False


def index_texts(chunks: list[Chunk], embedder, settings: Settings) -> tuple[list[View], list[str]]:
    """The views of `chunks` for `embedder`'s window (`settings.index.view_tokens` tokens each), and what
    is embedded: the chunks' texts, then the views'."""
    views = views_of(chunks, embedder.token_counts, window=embedder.window, view_tokens=settings.index.view_tokens)
    return views, [embedding_text(c) for c in chunks] + [v.text for v in views]


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


class Indexer:
    """Holds the embedding model and the collection for one knowledge base during a run, and the run's
    totals (`summary`, `indexed`) over every `index_documents` call."""

    GROUP_CHUNKS = 2048  # chunks read, embedded and upserted together (bounds memory; batches stay full)

    def __init__(self, settings: Settings, kb: str):
        self.settings, self.kb = settings, kb
        self.summary, self.indexed = IndexSummary(), []
        self.embedding = Tracker("embed", None, "chunks")  # the run's chunks through the embedder, per batch
        self._embedder = self._cache = self._collection = None

    @property
    def embedder(self):
        if self._embedder is None:  # loaded on first use, once per run
            from tasks.index.embed import Embedder

            self._embedder = Embedder.from_settings(self.settings)
        return self._embedder

    @property
    def loaded_embedder(self):
        """The embedder if it was loaded (without loading it)."""
        return self._embedder

    @property
    def cache(self):
        if self._cache is None:
            from warehouse.embedding_cache import EmbeddingCache

            self._cache = EmbeddingCache(self.settings.cache_dir / "embeddings", self.embedder.model_id)
        return self._cache

    @property
    def collection(self):
        if self._collection is None:
            self._collection = vector_index.collection(self.settings, self.kb)
        return self._collection

    def index_documents(self, items: list[tuple[str, Path]], rows: pa.Table | None = None) -> dict[str, str]:
        """Index many documents: their chunks are embedded together in full batches (cache-aware) and
        upserted in large slices; each document's stale ids go after its new ids are in. A group that
        fails is retried document by document, so one bad document fails alone. `rows`: chunk rows
        of some of the sources as written to their Parquet files (not read back). Returns {source:
        error} of the documents that failed; the others are appended to `self.indexed`."""
        errors: dict[str, str] = {}
        group: dict[str, list[Chunk]] = {}
        handed: dict[str, list[Chunk]] = {}
        for chunk in from_table(rows, Chunk) if rows is not None else []:
            handed.setdefault(chunk.source, []).append(chunk)
        size, n = 0, 0
        try:
            for n, (source, path) in enumerate(items):
                try:
                    chunks = handed[source] if source in handed else read_chunks(path)
                except Exception as exc:  # an unreadable or missing Parquet: this document only
                    errors[source] = _error(exc)
                    continue
                group.pop(source, None)  # the same source twice: its last version counts
                group[source] = chunks
                size += len(chunks)
                if size >= self.GROUP_CHUNKS:
                    errors.update(self._index_group(group))
                    group, size = {}, 0
            if group:
                errors.update(self._index_group(group))
        except EmbeddingModelError as exc:  # no model: this group and the rest fail alike, the rest unread
            reason = _error(exc)  # (a 50,000-file run without its model read every file only to fail it)
            errors.update({source: reason for source in [*group, *(s for s, _ in items[n + 1:])]})
        return errors

    def _index_group(self, group: dict[str, list[Chunk]]) -> dict[str, str]:
        try:
            self._index(group)
            return {}
        except EmbeddingModelError:
            raise  # every document alike: `index_documents` fails them all
        except Exception as exc:
            if len(group) == 1:
                return {source: _error(exc) for source in group}
        errors: dict[str, str] = {}
        for source, chunks in group.items():  # per document: vectors already encoded come from the cache
            try:
                self._index({source: chunks})
            except Exception as exc:  # one document's index failure must not stop the others
                errors[source] = _error(exc)
        return errors

    def _index(self, group: dict[str, list[Chunk]]) -> None:
        from tasks.index.embed import embed_texts

        chunks = [c for chunks in group.values() for c in chunks]
        views, texts = index_texts(chunks, self.embedder, self.settings)
        before, done_before = self.embedder.encoded, self.embedding.done
        vectors = embed_texts(texts, self.embedder, self.cache, batch_size=self.settings.runtime.embedding_batch_size,
                              progress=lambda done, _total: self.embedding.set(done_before + done))
        self.summary.embedded += self.embedder.encoded - before  # encoded (and cached) even if the upsert fails
        self.summary.views += len(views)
        updates = vector_index.upsert_documents(self.collection, self.kb, group, vectors, views)
        self.summary.documents += len(updates)
        self.summary.chunks += sum(u.added for u in updates.values())
        self.summary.removed += sum(u.removed for u in updates.values())
        self.indexed.extend(updates)

    def finish(self) -> None:
        """The stage's total is known only now."""
        self.embedding.set(self.embedding.done, total=self.embedding.done)
        self.embedding.finish()


_process_embedders: dict[tuple[str, int, str], object] = {}  # (model, batch size, precision) → Embedder, one per process


def warm_embedding_cache(settings: Settings, chunks_file: Path, model: str) -> int:
    """Encode a document's chunks that the on-disk embedding cache lacks and store them there (the
    scale-out path: a Dask worker does this, the flow's index stage then only reads vectors).
    The model is loaded once per process. Returns how many texts were encoded."""
    from tasks.index.embed import Embedder, embed_texts
    from warehouse.embedding_cache import EmbeddingCache

    key = (model, settings.runtime.embedding_batch_size, settings.runtime.embedding_precision)
    embedder = _process_embedders.get(key)
    if embedder is None:
        embedder = _process_embedders[key] = Embedder(Path(model) if Path(model).is_dir() else model,
                                                      batch_size=settings.runtime.embedding_batch_size,
                                                      precision=settings.runtime.embedding_precision)
    before = embedder.encoded
    with EmbeddingCache(settings.cache_dir / "embeddings", embedder.model_id) as cache:
        _, texts = index_texts(read_chunks(chunks_file), embedder, settings)
        embed_texts(texts, embedder, cache,
                    batch_size=settings.runtime.embedding_batch_size)
    return embedder.encoded - before


def rebuild_bm25(settings: Settings, kb: str) -> int:
    """BM25 from the terms stored with each landed chunk: one DuckDB query (the warehouse holds the
    Parquet files' rows), not one Parquet read per document (5.9 s of 6.7 s at 9,000 documents),
    streamed as Arrow batches whose terms become int ids batch by batch (`BM25Index.build_streamed`)."""
    from tasks.index.bm25 import BM25Index

    index = BM25Index.build_streamed(chunk_term_batches(settings.db_path, kb))
    index.save(settings.bm25_dir / kb)
    return len(index.chunk_ids)


def prune_parquet(settings: Settings, kb: str) -> int:
    """Delete chunk Parquet files of `kb` that no document row points at (left by a killed run or a
    file whose new version failed to land); return how many."""
    folder = settings.chunks_dir / f"kb={kb}"
    if not folder.is_dir():
        return 0
    keep = {Path(p).name for p in chunk_files(settings.db_path, kb)}
    stale = [p for p in folder.glob("*.parquet") if p.name not in keep]
    stale += list(folder.glob(".*.tmp"))  # a write killed before its rename
    for p in stale:
        p.unlink(missing_ok=True)
    return len(stale)


def sync_indexes(settings: Settings, kb: str, to_index: list[tuple[str, Path]], *, force_bm25: bool = False,
                 indexer: Indexer | None = None) -> tuple[IndexSummary, dict[str, str], list[str]]:
    """Bring Chroma and BM25 in line with DuckDB for `kb`.

    1. index the given documents (`Indexer.index_documents`: embeddings from the cache where present,
       batched upserts, then each document's stale ids dropped);
    2. repair: delete Chroma ids DuckDB does not hold, index every document whose chunk ids Chroma
       lacks (a run killed between landing and indexing);
    3. rebuild BM25 from the landed chunks when anything changed or its ids differ from DuckDB's
       (compared by `ChunkCount`: the index itself is not loaded);
    4. the embedding model's ONNX export for question answering, when missing (`tasks.index.query_encoder`).

    `indexer`: one that already indexed part of this run (streamed while parsing went on); it is
    reused, and the returned summary and sources include what it did before. Returns the summary, the
    error of each document that failed to index (the others go on), and the sources indexed. The
    embedding model is loaded only when a document is embedded.
    """
    from tasks.index.bm25 import BM25Index, ChunkCount

    indexer = indexer or Indexer(settings, kb)
    summary = indexer.summary
    errors = indexer.index_documents(to_index) if to_index else {}

    duck = chunk_ids_by_source(settings.db_path, kb) if settings.db_path.exists() else {}
    col = indexer.collection
    in_chroma = vector_index.all_ids(col)
    all_duck = set().union(*duck.values()) if duck else set()
    orphans = sorted(i for i in in_chroma if chunk_id_of(i) not in all_duck)  # a view goes with its chunk
    vector_index.delete_ids(col, orphans)
    summary.orphans = len({chunk_id_of(i) for i in orphans})
    held = vector_index.own_ids(in_chroma)
    lacking = sorted(s for s, ids in duck.items() if not ids <= held and s not in errors)
    if lacking:
        landed = db.landed_documents(settings.db_path, kb, settings.chunks_dir)
        errors.update(indexer.index_documents([(source, Path(landed[source][1])) for source in lacking]))
        summary.repaired = len(lacking)

    current: ChunkCount | None = None
    if (settings.bm25_dir / kb).exists() and not force_bm25:
        try:  # its count file, not the index: the same id set has the same fingerprint
            current = BM25Index.read_count(settings.bm25_dir / kb)
        except Exception:  # unreadable: rebuilt below
            current = None
    if force_bm25 or indexer.indexed or summary.orphans or current != ChunkCount.of(all_duck):
        summary.bm25_chunks = rebuild_bm25(settings, kb)
        summary.bm25_rebuilt = True
    else:
        summary.bm25_chunks = current.chunks
    prune_parquet(settings, kb)
    if indexer.embedding.done:
        indexer.finish()
    if summary.bm25_chunks:  # once per embedding model: what question answering loads instead of torch
        ensure_exported(settings)
    return summary, errors, list(indexer.indexed)


def remove_document(settings: Settings, kb: str, source: str) -> int:
    """Remove a document from Chroma, then DuckDB (then its Parquet); BM25 is rebuilt by the caller.
    Re-running after a crash converges: each step skips what is already gone."""
    removed = vector_index.delete_source(vector_index.collection(settings, kb), source)
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
    from tasks.common.lock import is_free
    from tasks.index import snapshot
    from tasks.index.bm25 import BM25Index

    # the live stores when nobody writes them; the published snapshots while an ingest works or on a
    # read-only home (Chroma is never opened for writing by a reader, nor a collection created)
    live = is_free(settings.home) and os.access(settings.home, os.W_OK)
    if live:
        try:
            col = vector_index.client(settings, create=False).get_collection(vector_index.collection_name(kb))
        except Exception:  # no Chroma store or no such collection
            col = snapshot.SnapshotCollection.empty()
    else:
        col = snapshot.read_collection(settings, kb)
    stores = {"duckdb": kb_chunk_ids(settings.db_path, kb), "chroma": vector_index.own_ids(vector_index.all_ids(col))}
    bm25_dir = settings.bm25_dir / kb if live else snapshot.bm25_dir(settings, kb)
    stores["bm25"] = set(BM25Index.read_chunk_ids(bm25_dir)) if bm25_dir.exists() else set()
    union = set().union(*stores.values())
    missing = {name: sorted(union - ids) for name, ids in stores.items() if union - ids}
    if missing and live:  # so the next ingest repairs it even when no file changed
        from tasks.common.lock import mark_sync_pending

        mark_sync_pending(settings.home, kb)
    return Consistency(kb, len(stores["duckdb"]), len(stores["chroma"]), len(stores["bm25"]), missing)
