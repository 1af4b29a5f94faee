"""Index sync on a temporary home: Chroma and BM25 follow the documents landed in DuckDB, repair
what an interrupted run left, and say where the three stores disagree."""
from __future__ import annotations

import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from schemas.chunk import chunks_path
from schemas.ingest import Document
from schemas.settings import Settings, load_settings
from tasks.index import e5_convert, vector_index
from tasks.index.sync import check, prune_parquet, remove_document, sync_indexes
from tasks.ingest.chunk import build_chunks
from tasks.ingest.discover import discover
from tasks.ingest.land import write_chunks
from tasks.ingest.parse import parse_source
from tests.tasks.index.test_e5_convert import converted_home
from warehouse import db

KB = "kb1"
DOCS = {
    "pump.md": "# 水泵\n\n水泵的额定流量为每小时五十立方米。\n\n## 维护\n\n每季度检查一次水泵的密封件。\n",
    "cell.md": "# 电池\n\n电芯的额定电压为3.2V，容量为196Ah。\n\n## 安全\n\n电池不得短路或挤压。\n",
}


@pytest.fixture(scope="module")
def e5_model(tmp_path_factory) -> Path:
    return converted_home(tmp_path_factory) / "models" / e5_convert.MODEL_DIRNAME


@pytest.fixture
def home(tmp_path, e5_model) -> Settings:
    return load_settings(tmp_path / "home", embedding_model=str(e5_model))


def land(settings: Settings, name: str) -> tuple[str, Path, set[str]]:
    """Parse, chunk and land one document of DOCS into DuckDB, as ingest does before indexing:
    (source, chunks file, chunk ids)."""
    path = settings.home.parent / "corpus" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(DOCS[name], encoding="utf-8")
    (src,) = discover([path], settings).sources
    parsed = parse_source(src, settings)
    chunks = build_chunks(parsed.parsed_dir, settings, kb=KB, doc_md5=src.md5, source=src.source).chunks
    parquet = write_chunks(chunks, chunks_path(settings.chunks_dir, KB, src.md5))
    document = Document(kb=KB, doc_md5=src.md5, source=src.source, path=str(path), doc_type="markdown",
                        size_bytes=path.stat().st_size, parse_backend=parsed.key.backend,
                        parser_version=parsed.key.parser_version, parsed_dir=str(parsed.parsed_dir),
                        chunks_path=str(parquet), chunk_count=len(chunks), items_total=len(chunks), dropped_empty=0,
                        dropped_furniture=0, dropped_ghost=0, parse_seconds=parsed.seconds,
                        parse_cached=parsed.cached, run_id="r1", ingested_at=datetime.now(timezone.utc))
    db.replace_document(settings.db_path, document, parquet)
    return src.source, parquet, {c.chunk_id for c in chunks}


def chroma_ids(settings: Settings) -> set[str]:
    return vector_index.all_ids(vector_index.collection(settings, KB))


def test_given_documents_are_indexed_and_an_unchanged_kb_is_left_alone(home):
    (a, a_file, ids_a), (b, b_file, ids_b) = land(home, "pump.md"), land(home, "cell.md")
    summary, errors, indexed = sync_indexes(home, KB, [(a, a_file), (b, b_file)])
    assert (errors, indexed) == ({}, [a, b])
    n = len(ids_a | ids_b)
    assert (summary.documents, summary.chunks, summary.embedded, summary.removed) == (2, n, n, 0)
    assert (summary.orphans, summary.repaired, summary.bm25_rebuilt, summary.bm25_chunks) == (0, 0, True, n)
    assert chroma_ids(home) == ids_a | ids_b
    consistency = check(home, KB)
    assert consistency.ok and (consistency.duckdb, consistency.chroma, consistency.bm25) == (n, n, n)

    # nothing changed: nothing indexed, BM25 kept
    summary, errors, indexed = sync_indexes(home, KB, [])
    assert (errors, indexed, summary.documents, summary.bm25_rebuilt, summary.bm25_chunks) == ({}, [], 0, False, n)
    # indexing a document again takes its vectors from the embedding cache; BM25 is rebuilt
    summary, _, indexed = sync_indexes(home, KB, [(a, a_file)])
    assert (indexed, summary.chunks, summary.embedded, summary.bm25_rebuilt) == ([a], len(ids_a), 0, True)
    assert sync_indexes(home, KB, [], force_bm25=True)[0].bm25_rebuilt


def test_one_documents_failure_does_not_stop_the_others(home):
    a, a_file, ids_a = land(home, "pump.md")
    summary, errors, indexed = sync_indexes(home, KB, [("gone.md", home.chunks_dir / "gone.parquet"), (a, a_file)])
    assert indexed == [a] and list(errors) == ["gone.md"] and errors["gone.md"]
    assert chroma_ids(home) == ids_a and check(home, KB).ok


def test_documents_missing_from_chroma_are_repaired(home):
    (a, a_file, ids_a), (b, _, ids_b) = land(home, "pump.md"), land(home, "cell.md")
    # a run killed between landing and indexing: b is in DuckDB only
    summary, errors, indexed = sync_indexes(home, KB, [(a, a_file)])
    assert (errors, indexed, summary.repaired) == ({}, [a, b], 1)
    assert chroma_ids(home) == ids_a | ids_b and check(home, KB).ok
    # one chunk id lost from Chroma: its document is indexed again, from the embedding cache
    lost = sorted(ids_b)[0]
    vector_index.delete_ids(vector_index.collection(home, KB), [lost])
    assert check(home, KB).missing == {"chroma": [lost]}
    summary, errors, indexed = sync_indexes(home, KB, [])
    assert (errors, indexed, summary.repaired, summary.embedded, summary.bm25_rebuilt) == ({}, [b], 1, 0, True)
    assert check(home, KB).ok


def test_orphan_ids_are_deleted_from_chroma_and_bm25(home):
    (a, a_file, ids_a), (b, b_file, ids_b) = land(home, "pump.md"), land(home, "cell.md")
    sync_indexes(home, KB, [(a, a_file), (b, b_file)])
    db.delete_document(home.db_path, KB, b)  # DuckDB no longer holds b (a removal killed midway)
    summary, errors, indexed = sync_indexes(home, KB, [])
    assert (errors, indexed, summary.orphans, summary.repaired) == ({}, [], len(ids_b), 0)
    assert (summary.bm25_rebuilt, summary.bm25_chunks) == (True, len(ids_a))
    assert chroma_ids(home) == ids_a and check(home, KB).ok
    assert not b_file.exists() and a_file.exists()  # b's Parquet, referenced by no document, is pruned too


def test_a_missing_or_unreadable_bm25_index_is_rebuilt(home):
    a, a_file, ids_a = land(home, "pump.md")
    sync_indexes(home, KB, [(a, a_file)])
    shutil.rmtree(home.bm25_dir / KB)
    assert check(home, KB).missing == {"bm25": sorted(ids_a)}
    summary, _, indexed = sync_indexes(home, KB, [])
    assert (indexed, summary.embedded, summary.bm25_rebuilt, summary.bm25_chunks) == ([], 0, True, len(ids_a))
    assert check(home, KB).ok
    for meta in (home.bm25_dir / KB).rglob("meta.json"):
        meta.write_text("{truncated", encoding="utf-8")
    assert sync_indexes(home, KB, [])[0].bm25_rebuilt and check(home, KB).ok


def test_remove_document_from_chroma_duckdb_and_parquet(home):
    (a, a_file, ids_a), (b, b_file, ids_b) = land(home, "pump.md"), land(home, "cell.md")
    sync_indexes(home, KB, [(a, a_file), (b, b_file)])
    assert remove_document(home, KB, a) == len(ids_a)
    assert chroma_ids(home) == ids_b and not a_file.exists() and b_file.exists()
    # BM25 is the caller's to rebuild: until then it alone still holds a's ids
    consistency = check(home, KB)
    assert not consistency.ok and consistency.missing == {"duckdb": sorted(ids_a), "chroma": sorted(ids_a)}
    assert (consistency.duckdb, consistency.chroma, consistency.bm25) == (len(ids_b), len(ids_b), len(ids_a | ids_b))
    assert remove_document(home, KB, a) == 0  # a second run after a crash converges
    assert sync_indexes(home, KB, [])[0].bm25_rebuilt and check(home, KB).ok


def test_prune_parquet_removes_files_no_document_points_at(home):
    assert prune_parquet(home, KB) == 0  # no folder yet
    a, a_file, _ = land(home, "pump.md")
    folder = a_file.parent
    shutil.copy(a_file, folder / f"{'f' * 32}.parquet")  # an old version whose replacement landed
    (folder / f".{a_file.name}.123.tmp").write_bytes(b"half")  # a write killed before its rename
    assert prune_parquet(home, KB) == 2
    assert sorted(p.name for p in folder.iterdir()) == [a_file.name]
    assert prune_parquet(home, KB) == 0
