"""Warehouse reads of landed documents and chunks (warehouse/chunks.py), on a real DuckDB file."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from schemas.chunk import CANDIDATE_COLUMNS, Chunk, assign_ids, chunks_path
from schemas.ingest import Document
from tasks.ingest.land import write_chunks
from warehouse import chunks, db
from warehouse.chunks import Neighbour, SectionSeed

A, B, C = "a" * 32, "b" * 32, "c" * 32


def _land(tmp_path: Path, kb: str, md5: str, source: str, records: list[Chunk]) -> Path:
    assign_ids(records, kb=kb, doc_md5=md5, source=source)
    parquet = write_chunks(records, chunks_path(tmp_path / "chunks", kb, md5))
    document = Document(kb=kb, doc_md5=md5, source=source, path=f"/x/{source}", doc_type="text", size_bytes=1,
                        parse_backend="text", parser_version="1", parsed_dir="", chunks_path=str(parquet),
                        chunk_count=len(records), items_total=len(records), dropped_empty=0, dropped_furniture=0,
                        dropped_ghost=0, parse_seconds=0.0, parse_cached=False, run_id="r1",
                        ingested_at=datetime.now(timezone.utc))
    db.replace_document(tmp_path / "w.duckdb", document, parquet)
    return parquet


def T(text: str, section: str = "", page: int = 1, tokens: list[str] | None = None) -> Chunk:
    return Chunk(content=text, chunk_type="text", section_path=section, page_start=page, page_end=page + 1,
                 tokens=tokens or [], table_html="<table/>", bbox=[0.0, 0.0, 1.0, 1.0])


@pytest.fixture
def warehouse(tmp_path) -> Path:
    """kb `k`: b.md (3 chunks, sections) and a.md (2 chunks); kb `other`: a.md (1 chunk)."""
    _land(tmp_path, "k", B, "b.md", [T("一", "第一章", 1, ["一"]), T("二", "第一章 > 1.1", 2, ["二", "节"]),
                                     T("三", "第二章", 3)])
    _land(tmp_path, "k", A, "a.md", [T("甲", tokens=["甲"]), T("乙")])
    _land(tmp_path, "other", C, "a.md", [T("别处")])
    return tmp_path / "w.duckdb"


def test_document_and_id_reads(warehouse, tmp_path):
    assert chunks.chunk_files(warehouse, "k") == [chunks_path(tmp_path / "chunks", "k", A),
                                                  chunks_path(tmp_path / "chunks", "k", B)]  # by source
    assert chunks.kb_chunk_ids(warehouse, "k") == {"a.md_0", "a.md_1", "b.md_0", "b.md_1", "b.md_2"}
    assert chunks.chunk_ids_by_source(warehouse, "other") == {"a.md": {"a.md_0"}}
    assert chunks.chunk_ids_by_source(warehouse, "k") == {"a.md": {"a.md_0", "a.md_1"},
                                                          "b.md": {"b.md_0", "b.md_1", "b.md_2"}}
    assert chunks.kb_chunk_ids(warehouse, "none") == set() and chunks.chunk_files(warehouse, "none") == []
    with pytest.raises(FileNotFoundError):
        chunks.kb_chunk_ids(warehouse.parent / "missing.duckdb", "k")


def test_terms_in_document_order_and_pages(warehouse):
    batches = list(chunks.chunk_term_batches(warehouse, "k", rows=2))
    assert len(batches) >= 1 and sum(b.num_rows for b in batches) == 5
    terms = pa.Table.from_batches(batches)
    assert terms.column("chunk_id").to_pylist() == ["a.md_0", "a.md_1", "b.md_0", "b.md_1", "b.md_2"]
    assert [t or [] for t in terms.column("tokens").to_pylist()] == [["甲"], [], ["一"], ["二", "节"], []]
    assert sorted(chunks.chunk_pages(warehouse, "k"))[2:4] == [("b.md_0", "b.md", 1, 2), ("b.md_1", "b.md", 2, 3)]
    assert chunks.count_chunks(warehouse, "k") == 5 and chunks.count_chunks(warehouse) == 6


def test_candidates_carry_only_the_candidate_columns(warehouse):
    found = chunks.fetch_chunks(warehouse, "k", ["b.md_1", "a.md_0", "b.md_1", "missing"])
    assert sorted(found) == ["a.md_0", "b.md_1"]
    b1 = found["b.md_1"]
    assert (b1.content, b1.section_path, b1.page_end, b1.tokens, b1.doc_md5) == ("二", "第一章 > 1.1", 3, ["二", "节"], B)
    assert b1.table_html is None and b1.bbox is None  # not a candidate column: left at the default
    assert "table_html" not in CANDIDATE_COLUMNS
    assert chunks.fetch_chunks(warehouse.parent / "missing.duckdb", "k", []) == {}  # no ids: no query
    assert [c.chunk_id for c in chunks.kb_chunks(warehouse, "k")] == ["a.md_0", "a.md_1", "b.md_0", "b.md_1", "b.md_2"]


def test_section_neighbours_by_question_seed_and_distance(tmp_path):
    sections = ["前言", "三", "三 > （一）", "三 > （一）", "三附表", "三 > （二）", "四"]
    _land(tmp_path, "k", A, "g.md", [T(str(i), s) for i, s in enumerate(sections)])
    w = tmp_path / "w.duckdb"
    seeds = [SectionSeed(0, 0, "g.md_1", "g.md", "三", 1), SectionSeed(1, 0, "g.md_3", "g.md", "", 3)]
    found = chunks.section_neighbours(w, "k", seeds, before=1, after=8)
    assert [(n.question, n.seed_id, n.chunk.chunk_id) for n in found] == [
        (0, "g.md_1", "g.md_2"), (0, "g.md_1", "g.md_3"), (0, "g.md_1", "g.md_5"),  # under 三, after it, nearest first
        (1, "g.md_3", "g.md_4"), (1, "g.md_3", "g.md_5"), (1, "g.md_3", "g.md_6"),  # no section: any neighbour,
        (1, "g.md_3", "g.md_2"),                                                   # those before it last
    ]
    assert isinstance(found[0], Neighbour) and found[0].chunk.section_path == "三 > （一）"
    assert chunks.section_neighbours(w, "k", [], before=1, after=8) == []


def test_chunk_quality_per_kb_and_totals(warehouse):
    columns, rows = chunks.chunk_quality(warehouse)
    assert columns[:3] == ["kb", "source", "total_chunks"]
    assert [(r[0], r[1], r[2]) for r in rows] == [("k", "a.md", 2), ("k", "b.md", 3), ("other", "a.md", 1)]
    assert [r[:3] for r in chunks.chunk_quality(warehouse, "other")[1]] == [("other", "a.md", 1)]
    totals = chunks.chunk_quality_totals(warehouse)
    assert [(kb, total) for kb, total, *_ in totals] == [("other", 1), ("k", 5)]  # kb descending
    assert len(totals[0]) == 7


def test_chunk_quality_on_a_warehouse_without_the_view(tmp_path):
    old = tmp_path / "old.duckdb"
    duckdb.connect(str(old)).close()  # a DuckDB file kbflow never wrote to
    # readers read a published copy, made through a writer connection: the views are created (migrated)
    columns, rows = chunks.chunk_quality(old)
    assert "total_chunks" in columns and rows == []


def test_insert_chunk_files_appends_every_file_in_one_statement(warehouse, tmp_path):
    bulk = tmp_path / "bulk.duckdb"
    db.insert_chunk_files(bulk, chunks.chunk_files(warehouse, "k"))
    assert chunks.kb_chunk_ids(bulk, "k") == chunks.kb_chunk_ids(warehouse, "k")
    assert db.landed_documents(bulk, "k", tmp_path / "chunks") == {}  # chunk rows only
