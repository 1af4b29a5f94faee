"""Indexes follow the warehouse: ingest two documents, replace one, delete the other; after each
step DuckDB, Chroma and BM25 hold the same chunk ids, and unchanged chunks are never re-embedded."""
from __future__ import annotations

import shutil

from flows.ingest import ingest, remove
from schemas.settings import load_settings
from tasks.index import vector_index
from tasks.common.text import tokenize
from tasks.index.bm25 import BM25Index
from tasks.index.embed import Embedder, resolve_model
from tasks.index.sync import check, read_chunks
from tests.conftest import DOCS, REPO, need
from warehouse import db


def _semantic(settings, kb, source):
    _, rows = db.query(settings.db_path, "SELECT semantic_content FROM chunks WHERE kb = ? AND source = ?",
                       [kb, source])
    return {r[0] for r in rows}


def test_replace_and_delete_keep_the_three_stores_equal(prefect_harness, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    guide = corpus / "guide.md"
    shutil.copy(REPO / "examples" / "corpus" / "reservoir_maintenance_guide.md", guide)
    shutil.copy(need(DOCS / "zh_pdf" / "party_union_rules_1page_table.pdf"), corpus / "rules.pdf")
    home = tmp_path / "home"
    settings = load_settings(home)

    first = ingest(paths=[str(corpus)], kb="kb", home=str(home))
    state = check(settings, "kb")
    assert state.ok and state.duckdb == state.chroma == state.bm25 == sum(o.chunks for o in first.outcomes)
    assert first.index.embedded == state.duckdb  # a fresh cache encodes everything once

    old_guide = _semantic(settings, "kb", "guide.md")
    guide.write_text(guide.read_text(encoding="utf-8") + "\n## 五、附则\n\n本指南自2026年1月1日起施行，由市水务局负责解释。\n",
                     encoding="utf-8")
    second = ingest(paths=[str(corpus)], kb="kb", home=str(home))
    new_guide = _semantic(settings, "kb", "guide.md")
    changed = new_guide - old_guide
    assert changed and second.index.embedded == len(changed)  # only the new text was encoded
    state = check(settings, "kb")
    assert state.ok and state.duckdb == state.chroma == state.bm25

    removed = remove(sources=["rules.pdf"], kb="kb", home=str(home))
    assert removed["rules.pdf"] > 0
    state = check(settings, "kb")
    assert state.ok and state.duckdb == state.chroma == state.bm25 == len(new_guide)
    assert not list((home / "chunks" / "kb=kb").glob("*.parquet"))[1:]  # one document left, one file


def test_bm25_phrase_and_vector_paraphrase_find_their_chunks(prefect_harness, tmp_path):
    home = tmp_path / "home"
    ingest(paths=[str(REPO / "examples" / "corpus")], kb="demo", home=str(home))
    settings = load_settings(home)
    (path,) = db.query(settings.db_path, "SELECT chunks_path FROM documents WHERE source = "
                                         "'reservoir_maintenance_guide.md'")[1][0:1]
    chunks = read_chunks(path[0])
    target = next(c for c in chunks if "人工水尺对传感器读数进行一次比测" in c.content)

    index = BM25Index.load(settings.bm25_dir / "demo")
    (hits,) = index.search([tokenize("管理单位每月应当用人工水尺对传感器读数进行一次比测")], k=5)
    assert target.chunk_id in [chunk_id for chunk_id, _ in hits]

    embedder = Embedder(resolve_model(settings))
    query = embedder.embed_queries(["水位传感器的读数多久要用人工水尺核对一次？"])
    result = vector_index.collection(settings, "demo").query(query_embeddings=query, n_results=3)
    assert target.chunk_id in result["ids"][0]
