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
from tasks.index.bm25 import BM25Index
from tasks.index.sync import check, prune_parquet, remove_document, sync_indexes
from tasks.index.views import chunk_id_of
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
    # a table longer than the model's 512 tokens: indexed with views of its rows (tasks.index.views)
    "specs.md": "# 规格\n\n| 参数 | 数值 | 条件 |\n|---|---|---|\n" + "".join(
        f"| 参数{i}号电芯循环寿命测试项目 | {i * 37}次 | 25℃，1C充放电，80%SOH截止 |\n" for i in range(60)),
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



def test_an_unchanged_kb_is_compared_to_bm25_without_loading_the_index(home, monkeypatch):
    a, a_file, ids_a = land(home, "pump.md")
    sync_indexes(home, KB, [(a, a_file)])

    def boom(*args, **kwargs):
        raise AssertionError("the whole BM25 index was loaded")

    monkeypatch.setattr(BM25Index, "load", boom)
    summary = sync_indexes(home, KB, [])[0]
    assert (summary.bm25_rebuilt, summary.bm25_chunks) == (False, len(ids_a))
    assert check(home, KB).ok

def test_a_long_tables_views_follow_its_chunk_through_index_repair_and_removal(home):
    (a, a_file, ids_a), (s, s_file, ids_s) = land(home, "pump.md"), land(home, "specs.md")
    summary, errors, _ = sync_indexes(home, KB, [(a, a_file), (s, s_file)])
    views = chroma_ids(home) - ids_a - ids_s
    assert errors == {} and summary.views == len(views) >= 3
    (table,) = {chunk_id_of(v) for v in views}
    assert table in ids_s and all(v.startswith(table + "#") for v in views)
    assert summary.chunks == len(ids_a | ids_s)  # chunks, not vectors
    consistency = check(home, KB)
    assert consistency.ok and consistency.chroma == len(ids_a | ids_s)
    # a lost view is not a lost chunk; a lost chunk vector is repaired with its views
    col = vector_index.collection(home, KB)
    vector_index.delete_ids(col, [table])
    assert check(home, KB).missing == {"chroma": [table]}
    summary, errors, indexed = sync_indexes(home, KB, [])
    assert (errors, indexed, summary.embedded) == ({}, [s], 0) and chroma_ids(home) == ids_a | ids_s | views
    # DuckDB no longer holds the document: its chunks and views go as orphans
    db.delete_document(home.db_path, KB, s)
    summary = sync_indexes(home, KB, [])[0]
    assert summary.orphans == len(ids_s) and chroma_ids(home) == ids_a and check(home, KB).ok


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


# ---------------------------------------------------------------- the batched index stage


def small_docs(settings: Settings, n: int, *, duplicated: str = "") -> list[tuple[str, Path]]:
    """n one-chunk documents written as chunk Parquet (no DuckDB rows: `Indexer` alone reads them);
    `duplicated`: that source's file holds its chunk twice (Chroma refuses a write with a repeated id)."""
    from schemas.chunk import Chunk, assign_ids

    items = []
    for i in range(n):
        source = f"doc{i:02d}.md"
        chunks = [Chunk(f"第{i}号设备的额定功率为{i * 10}千瓦。", "text", semantic_content=f"第{i}号设备的额定功率为{i * 10}千瓦。")]
        if source == duplicated:
            chunks = chunks * 2
        assign_ids(chunks, kb=KB, doc_md5=f"{i:032d}", source=source)
        if source == duplicated:
            chunks[1].chunk_index, chunks[1].chunk_id = 0, chunks[0].chunk_id
        items.append((source, write_chunks(chunks, chunks_path(settings.chunks_dir, KB, f"{i:032d}"))))
    return items


def counting_encodes(monkeypatch, indexer) -> list[int]:
    sizes: list[int] = []
    real = indexer.embedder._forward

    def encode(features, *args, **kwargs):
        sizes.append(len(features["input_ids"]))
        return real(features, *args, **kwargs)

    monkeypatch.setattr(indexer.embedder, "_forward", encode)
    return sizes


def test_many_small_documents_are_embedded_in_full_batches(home, monkeypatch):
    from tasks.common.progress import listening
    from tasks.index.sync import Indexer

    indexer = Indexer(home.replace(embedding_batch_size=8), KB)
    sizes = counting_encodes(monkeypatch, indexer)
    items = small_docs(home, 20)
    updates = []
    with listening(lambda u: updates.append(u) if u.stage == "embed" else None):
        errors = indexer.index_documents(items[:13])
        errors |= indexer.index_documents(items[13:])
    assert errors == {} and indexer.indexed == [s for s, _ in items]
    assert sizes == [8, 5, 7]  # 20 one-chunk documents: 3 encode calls, not 20
    assert [u.done for u in updates] == [0, 8, 13, 13, 20]  # progress per embedding batch
    assert (indexer.summary.documents, indexer.summary.chunks, indexer.summary.embedded) == (20, 20, 20)
    assert chroma_ids(home) == {f"doc{i:02d}.md_0" for i in range(20)}


def test_a_failing_document_in_a_batch_fails_alone(home, monkeypatch):
    from tasks.index.sync import Indexer

    indexer = Indexer(home.replace(embedding_batch_size=8), KB)
    sizes = counting_encodes(monkeypatch, indexer)
    items = small_docs(home, 6, duplicated="doc03.md") + [("gone.md", home.chunks_dir / "gone.parquet")]
    errors = indexer.index_documents(items)
    assert sorted(errors) == ["doc03.md", "gone.md"] and "DuplicateID" in errors["doc03.md"]
    assert indexer.indexed == ["doc00.md", "doc01.md", "doc02.md", "doc04.md", "doc05.md"]
    assert chroma_ids(home) == {f"doc{i:02d}.md_0" for i in (0, 1, 2, 4, 5)}
    assert sizes == [6]  # the per-document retries took their vectors from the cache
    assert (indexer.summary.documents, indexer.summary.embedded) == (5, 6)


def test_rows_handed_over_are_indexed_without_reading_their_file(home, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tasks.index import sync
    from tasks.index.sync import Indexer

    items = small_docs(home, 3)
    rows = pa.concat_tables([pq.read_table(path) for _, path in items[:2]])
    read = []
    real_read = sync.read_chunks
    monkeypatch.setattr(sync, "read_chunks", lambda path: read.append(path) or real_read(path))
    indexer = Indexer(home, KB)
    assert indexer.index_documents(items, rows) == {}
    assert read == [items[2][1]]  # only the document whose rows did not come with it
    assert chroma_ids(home) == {f"doc{i:02d}.md_0" for i in range(3)}


def test_without_a_model_every_document_fails_alike_and_the_rest_are_not_read(home, monkeypatch):
    from tasks.index import sync
    from tasks.index.sync import Indexer

    items = small_docs(home, 5)
    read = []
    real_read = sync.read_chunks
    monkeypatch.setattr(sync, "read_chunks", lambda path: read.append(path) or real_read(path))
    monkeypatch.setattr(Indexer, "GROUP_CHUNKS", 2)
    indexer = Indexer(home.replace(embedding_model=str(home.home / "no-such-model")), KB)
    errors = indexer.index_documents(items)
    assert sorted(errors) == [s for s, _ in items] and indexer.indexed == []
    assert all(e.startswith("EmbeddingModelError") and "no-such-model" in e for e in errors.values())
    assert read == [items[0][1], items[1][1]]  # the first group's: the model failed it, the others stayed unread


def test_sync_indexes_reuses_an_indexer_and_reports_its_earlier_work(home):
    from tasks.index.sync import Indexer

    (a, a_file, ids_a), (b, b_file, ids_b) = land(home, "pump.md"), land(home, "cell.md")
    indexer = Indexer(home, KB)
    assert indexer.index_documents([(a, a_file)]) == {}  # streamed while "parsing" went on
    summary, errors, indexed = sync_indexes(home, KB, [(b, b_file)], indexer=indexer)
    assert (errors, indexed, summary.repaired) == ({}, [a, b], 0)
    assert (summary.documents, summary.chunks, summary.bm25_chunks) == (2, len(ids_a | ids_b), len(ids_a | ids_b))
    assert check(home, KB).ok
