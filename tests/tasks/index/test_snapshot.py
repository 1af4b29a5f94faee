"""The readers' vector snapshot answers like the Chroma collection it was exported from."""
from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from schemas.settings import load_settings
from tasks.index import snapshot, vector_index


def test_snapshot_collection_answers_like_chroma(tmp_path):
    settings = load_settings(tmp_path / "home")
    col = vector_index.collection(settings, "kb")
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(60, 16)).astype(np.float32)
    ids = [f"doc{i % 3}.md_{i}" for i in range(60)]
    metas = [{"source": f"doc{i % 3}.md", "chunk_type": "table" if i % 5 == 0 else "text",
              "status": "inactive" if i == 7 else "active"} for i in range(60)]
    col.add(ids=ids, embeddings=vectors, metadatas=metas, documents=[""] * 60)
    path = tmp_path / "kb.parquet"
    snapshot.export_vectors(col, path)
    snap = snapshot.SnapshotCollection.load(path)

    assert snap.count() == col.count() == 60
    queries = rng.normal(size=(4, 16)).astype(np.float32)
    for where in (None, {"source": {"$in": ["doc1.md"]}},
                  {"$and": [{"source": {"$in": ["doc0.md", "doc2.md"]}}, {"chunk_type": {"$in": ["table"]}}]}):
        want = col.query(query_embeddings=queries, n_results=8, where=where, include=["distances"])
        got = snap.query(query_embeddings=queries, n_results=8, where=where, include=["distances"])
        assert got["ids"] == want["ids"]
        assert np.allclose(got["distances"], want["distances"], atol=1e-4)
    assert snap.get(where={"status": {"$ne": "active"}}, include=[])["ids"] == ["doc1.md_7"]
    assert len(snap.get(where={"chunk_type": {"$in": ["table"]}}, limit=1, include=[])["ids"]) == 1
    assert set(snap.get(include=[])["ids"]) == vector_index.all_ids(col)
    assert snapshot.SnapshotCollection.empty().query(query_embeddings=queries, n_results=3)["ids"] == [[]] * 4


def test_snapshot_ties_at_the_kth_cosine_rank_by_id():
    # duplicate chunks (repeated table rows) have equal vectors: which of them make the top k, and
    # in which order, must not depend on the batch or the partition
    base = np.eye(4, dtype=np.float32)
    vectors = np.vstack([base[0], base[1], base[1], base[1], base[2], base[1]])
    ids = ["z", "d", "b", "c", "a", "e"]
    meta = {f: np.asarray(["x"] * 6, dtype=object) for f in snapshot.META_FIELDS}
    snap = snapshot.SnapshotCollection(ids, meta, vectors)
    q = np.vstack([base[1] + 0.01 * base[0], base[1] + 0.01 * base[0], base[3] + base[2]])
    got = snap.query(query_embeddings=q, n_results=3)
    assert got["ids"][0] == got["ids"][1] == ["b", "c", "d"]  # four rows tie at the top: the three first ids
    assert got["ids"][2][0] == "a"
    assert snap.query(query_embeddings=q[:1], n_results=3, where={"source": "x"})["ids"] == [["b", "c", "d"]]


def test_a_collection_beyond_sqlites_variable_limit_is_exported_whole(tmp_path):
    """A single `get` of every record with metadata fails past 32,766 records ("too many SQL
    variables", seen publishing a 50,000-file ingest); the export reads pages and loses nothing."""
    settings = load_settings(tmp_path / "home")
    col = vector_index.collection(settings, "big")
    n = 33_000
    vectors = np.random.default_rng(3).normal(size=(n, 4)).astype(np.float32)
    for start in range(0, n, 5000):
        part = range(start, min(n, start + 5000))
        col.add(ids=[f"d{i % 7}.md_{i}" for i in part], embeddings=vectors[start:start + 5000],
                metadatas=[{"source": f"d{i % 7}.md", "chunk_type": "text", "status": "active"} for i in part])
    with pytest.raises(Exception, match="too many SQL variables"):  # what the export did before
        col.get(include=["embeddings", "metadatas"])

    path = tmp_path / "big.parquet"
    snapshot.export_vectors(col, path)
    table = pq.read_table(path)
    assert table.num_rows == n and len(set(table.column("chunk_id").to_pylist())) == n
    assert set(table.column("chunk_id").to_pylist()) == vector_index.all_ids(col)
    got = dict(zip(table.column("chunk_id").to_pylist(), table.column("embedding").to_pylist()))
    assert np.allclose(got[f"d{12345 % 7}.md_12345"], vectors[12345], atol=1e-6)
    assert table.column("source").to_pylist()[:3] == [f"d{i % 7}.md" for i in range(3)]
