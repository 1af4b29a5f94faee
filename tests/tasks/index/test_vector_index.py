"""Chroma collection per KB: metadata per seed 000 §3.2, upsert-then-prune, deletion by source."""
from __future__ import annotations

import json

import numpy as np
import pytest

from schemas.chunk import Chunk, assign_ids
from tasks.index import vector_index


@pytest.fixture
def col(settings):
    return vector_index.collection(settings, "kb1")


def _chunks(source: str, n: int, md5: str = "m" * 32) -> list[Chunk]:
    chunks = [Chunk(f"内容{i}", "text", page_start=i + 1, page_end=i + 1, section_path="第一章 > 1.1",
                    semantic_content=f"主题：第一章\n内容{i}") for i in range(n)]
    return assign_ids(chunks, kb="kb1", doc_md5=md5, source=source)


def _vectors(n: int, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, 8)).astype("float32")
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_metadata_is_scalar_complete_and_blob_free():
    chunk = Chunk("表", "table", table_html="<table>" + "<tr><td>x</td></tr>" * 500 + "</table>", images=["a.png"],
                  bbox=[1.04, 2, 3, 4], table_type="table", source="r.pdf", chunk_id="r.pdf_3", chunk_index=3)
    meta = vector_index.chunk_metadata(chunk, "kb1")
    seed_fields = {"chunk_id", "chunk_index", "chunk_type", "source", "collection", "doc_type", "page", "page_end",
                   "section", "status", "version", "images_json", "image_path", "text_level", "bbox", "table_type",
                   "table_nest_level", "sub_type"}
    assert seed_fields <= set(meta)
    assert all(v is not None and isinstance(v, (str, int, float, bool)) for v in meta.values())
    assert all(len(str(v)) < 200 for v in meta.values())  # no table_html-sized blobs
    assert json.loads(meta["images_json"]) == [{"id": "a.png", "order": 1}]
    assert (meta["doc_type"], meta["status"], meta["bbox"]) == ("pdf", "active", "[1.0, 2, 3, 4]")
    docx = vector_index.chunk_metadata(Chunk("x", "text", source="a.docx"), "kb1")
    assert "bbox" not in docx and docx["doc_type"] == "word"


def test_upsert_prunes_stale_ids_of_the_same_source_only(col):
    vector_index.upsert_document(col, "kb1", _chunks("a.md", 5), _vectors(5), source="a.md")
    vector_index.upsert_document(col, "kb1", _chunks("b.md", 2), _vectors(2, 1), source="b.md")
    update = vector_index.upsert_document(col, "kb1", _chunks("a.md", 3, "n" * 32), _vectors(3, 2), source="a.md")
    assert (update.added, update.removed) == (3, 2)
    assert vector_index.all_ids(col) == {"a.md_0", "a.md_1", "a.md_2", "b.md_0", "b.md_1"}
    got = col.get(ids=["a.md_0"], include=["metadatas", "documents"])
    assert got["metadatas"][0]["doc_md5"] == "n" * 32 and got["documents"][0].startswith("主题：第一章")


def test_query_finds_the_nearest_and_delete_source(col):
    vectors = _vectors(4)
    vector_index.upsert_document(col, "kb1", _chunks("a.md", 4), vectors, source="a.md")
    hits = col.query(query_embeddings=vectors[2:3], n_results=1)
    assert hits["ids"] == [["a.md_2"]] and hits["distances"][0][0] == pytest.approx(0, abs=1e-4)
    assert vector_index.delete_source(col, "a.md") == 4 and vector_index.all_ids(col) == set()
    assert vector_index.delete_source(col, "a.md") == 0  # idempotent


def test_collection_per_kb_is_isolated(settings):
    a, b = vector_index.collection(settings, "kb1"), vector_index.collection(settings, "kb2")
    vector_index.upsert_document(a, "kb1", _chunks("a.md", 2), _vectors(2), source="a.md")
    assert vector_index.all_ids(b) == set()
    assert vector_index.collection_name("kb2") == "kbflow_kb2"
