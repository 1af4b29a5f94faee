"""The indexes as readers see them: snapshots a writer publishes and never changes.

Chroma's embedded client is not built for several processes, so readers (`ask`, `eval`, `check`
of a busy or read-only home) never open it. An ingest or rm, as its last step and still holding
the write lock, publishes a generation (`warehouse.published`): the warehouse copy plus, per KB,
`vectors/KB.parquet` (chunk id, source, chunk type, status, embedding, exported from Chroma) and
`bm25/KB/` (the current BM25 version, hard-linked). `SnapshotCollection` answers the part of
Chroma's collection API the retriever uses (count, get, query with `$in`/`$ne`/`$and` filters) by
exact cosine search over those vectors: one matrix product per batch of queries.

A home published before generations existed (or whose Chroma is a server that readers should use
directly) falls back to the live collection, opened without creating anything.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from schemas.settings import Settings
from tasks.index import vector_index
from warehouse import published

VECTORS, BM25 = "vectors", "bm25"
META_FIELDS = ("source", "chunk_type", "status")


def publish(settings: Settings, kb: str | None = None) -> Path | None:
    """Publish a full generation (warehouse, vectors, BM25) of the home; the caller holds the write
    lock. `kb`: only its vectors changed (the others are linked from the previous generation).
    None when the warehouse stayed busy (the readers keep the previous generation)."""
    if not settings.db_path.exists():
        return None
    previous = published.current(settings.db_path)
    return published.publish(settings.db_path, indexes=lambda folder: write_indexes(settings, folder, kb, previous))


def write_indexes(settings: Settings, folder: Path, kb: str | None = None, previous: Path | None = None) -> None:
    (folder / VECTORS).mkdir()
    client = vector_index.client(settings)
    prefix = vector_index.collection_name("")
    for col in client.list_collections():
        name = str(getattr(col, "name", col))
        if not name.startswith(prefix):
            continue
        target = folder / VECTORS / f"{name[len(prefix):]}.parquet"
        unchanged = previous / VECTORS / target.name if previous is not None else None
        if kb is not None and name != vector_index.collection_name(kb) and unchanged and unchanged.is_file():
            published.link_or_copy(str(unchanged), str(target))
        else:
            export_vectors(client.get_collection(name), target)
    (folder / BM25).mkdir()
    if settings.bm25_dir.is_dir():
        for kb_dir in settings.bm25_dir.iterdir():
            current = kb_dir / "CURRENT"
            if current.is_file():
                version = current.read_text(encoding="utf-8").strip()
                target = folder / BM25 / kb_dir.name
                shutil.copytree(kb_dir / version, target / version, copy_function=published.link_or_copy)
                shutil.copy2(current, target / "CURRENT")


def export_vectors(col, path: Path) -> None:
    """The collection's ids, metadata fields and vectors as one Parquet file, read a page at a time."""
    writer = None
    try:
        for got in vector_index.get_pages(col, include=["embeddings", "metadatas"]):
            table = _vectors_table(got)
            if writer is None:
                if not table.num_rows:  # an empty collection: an empty file of the list type
                    pq.write_table(table, path)
                    return
                writer = pq.ParquetWriter(path, table.schema)
            if table.num_rows:
                writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()


def _vectors_table(got: dict) -> pa.Table:
    ids = list(got["ids"])
    embeddings = np.asarray(got["embeddings"], dtype=np.float32) if ids else np.zeros((0, 0), np.float32)
    metas = got["metadatas"] or [{} for _ in ids]
    dim = embeddings.shape[1] if embeddings.ndim == 2 else 0
    columns: dict[str, Any] = {"chunk_id": pa.array(ids, pa.string())}
    for field in META_FIELDS:
        columns[field] = pa.array([str((m or {}).get(field, "")) for m in metas], pa.string())
    columns["embedding"] = pa.FixedSizeListArray.from_arrays(pa.array(embeddings.reshape(-1), pa.float32()), dim) \
        if dim else pa.array([[] for _ in ids], pa.list_(pa.float32()))
    return pa.table(columns)


class SnapshotCollection:
    """Read-only, in-memory stand-in for a Chroma collection (cosine space) over a vectors snapshot.

    A batch of queries is one matrix product and one `argpartition` over the whole batch; the
    filters' row masks are computed once per distinct filter (a run asks the same few)."""

    def __init__(self, ids: list[str], meta: dict[str, np.ndarray], vectors: np.ndarray):
        self.ids = np.asarray(ids, dtype=object)
        self.meta = meta
        norms = np.linalg.norm(vectors, axis=1, keepdims=True) if len(vectors) else np.ones((0, 1))
        self.vectors = (vectors / np.where(norms == 0, 1, norms)).astype(np.float32)
        # each id's place in id order: equal cosines rank by id without comparing strings per query
        self._id_rank = np.empty(len(self.ids), dtype=np.int64)
        self._id_rank[np.argsort(self.ids.astype(str), kind="stable")] = np.arange(len(self.ids))
        self._rows: dict[str, np.ndarray] = {}

    @classmethod
    def load(cls, path: Path) -> SnapshotCollection:
        table = pq.read_table(path)
        ids = table.column("chunk_id").to_pylist()
        meta = {f: np.asarray(table.column(f).to_pylist(), dtype=object) for f in META_FIELDS}
        emb = table.column("embedding").combine_chunks()
        vectors = emb.flatten().to_numpy(zero_copy_only=False).reshape(len(ids), -1) if ids else np.zeros((0, 1))
        return cls(ids, meta, np.asarray(vectors, dtype=np.float32))

    @classmethod
    def empty(cls) -> SnapshotCollection:
        return cls([], {f: np.asarray([], dtype=object) for f in META_FIELDS}, np.zeros((0, 1), np.float32))

    def count(self) -> int:
        return len(self.ids)

    def _mask(self, where: dict | None) -> np.ndarray:
        if not where:
            return np.ones(len(self.ids), dtype=bool)
        if "$and" in where:
            mask = np.ones(len(self.ids), dtype=bool)
            for clause in where["$and"]:
                mask &= self._mask(clause)
            return mask
        ((field, cond),) = where.items()
        values = self.meta[field]
        if not isinstance(cond, dict):
            cond = {"$eq": cond}
        ((op, arg),) = cond.items()
        if op == "$in":
            return np.isin(values, list(arg))
        if op == "$nin":
            return ~np.isin(values, list(arg))
        if op == "$eq":
            return values == arg
        if op == "$ne":
            return values != arg
        raise ValueError(f"unsupported filter {where!r}")

    def _rows_of(self, where: dict | None) -> np.ndarray:
        """The rows a filter keeps (cached by the filter's JSON; the snapshot never changes)."""
        key = json.dumps(where, sort_keys=True, default=str)
        rows = self._rows.get(key)
        if rows is None:
            if len(self._rows) > 256:  # source filters vary per call in some runs: stay bounded
                self._rows.clear()
            rows = self._rows[key] = np.flatnonzero(self._mask(where))
        return rows

    def get(self, where: dict | None = None, limit: int | None = None, include: list | None = None, **_: Any) -> dict:
        ids = self.ids[self._rows_of(where)].tolist()
        return {"ids": ids[:limit] if limit else ids}

    def query(self, query_embeddings, n_results: int = 10, where: dict | None = None, include: list | None = None,
              **_: Any) -> dict:
        """Per query the `n_results` nearest rows by cosine, best first, equal cosines by id."""
        q = np.asarray(query_embeddings, dtype=np.float32)
        q = q / np.where((n := np.linalg.norm(q, axis=1, keepdims=True)) == 0, 1, n)
        rows = self._rows_of(where)
        if not len(rows):
            return {"ids": [[] for _ in q], "distances": [[] for _ in q]}
        sims = q @ (self.vectors if len(rows) == len(self.ids) else self.vectors[rows]).T
        k = min(n_results, len(rows))
        if k < len(rows):
            top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        else:
            top = np.broadcast_to(np.arange(len(rows)), (len(q), len(rows)))
        out_ids, out_d = [], []
        for s, cand in zip(sims, top):
            if k < len(rows) and np.count_nonzero(tied := s >= s[cand].min()) > k:
                cand = np.flatnonzero(tied)  # every row tied with the k-th cosine: ids decide which stay
            order = cand[np.lexsort((self._id_rank[rows[cand]], -s[cand]))][:k]
            out_ids.append(self.ids[rows[order]].tolist())
            out_d.append((1.0 - s[order]).astype(float).tolist())
        return {"ids": out_ids, "distances": out_d}


def _generation(settings: Settings) -> Path | None:
    gen = published.reader_generation(settings.db_path)
    return gen if gen is not None and (gen / VECTORS).is_dir() else None


def read_collection(settings: Settings, kb: str):
    """The collection a reader queries: the published snapshot, else the live one (never created)."""
    gen = _generation(settings)
    if gen is not None:
        path = gen / VECTORS / f"{kb}.parquet"
        return SnapshotCollection.load(path) if path.is_file() else SnapshotCollection.empty()
    try:
        return vector_index.client(settings, create=False).get_collection(vector_index.collection_name(kb))
    except Exception:  # no such collection (or no Chroma at all): an empty knowledge base
        return SnapshotCollection.empty()


def bm25_dir(settings: Settings, kb: str) -> Path:
    """The BM25 index folder a reader loads: the published one, else the live one."""
    gen = _generation(settings)
    return gen / BM25 / kb if gen is not None else settings.bm25_dir / kb
