"""Warehouse: tables from the pyarrow schemas, atomic per-document replacement, read-only SQL."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pytest

from schemas.chunk import Chunk, assign_ids, chunks_path
from schemas.ingest import Document
from tasks.ingest.land import write_chunks
from warehouse import db


def _doc(kb: str, md5: str, source: str, parquet: Path, n: int) -> Document:
    return Document(kb=kb, doc_md5=md5, source=source, path=f"/x/{source}", doc_type="text", size_bytes=1,
                    parse_backend="text", parser_version="1", parsed_dir="", chunks_path=str(parquet),
                    chunk_count=n, items_total=n, dropped_empty=0, dropped_furniture=0, dropped_ghost=0,
                    parse_seconds=0.0, parse_cached=False, run_id="r1", ingested_at=datetime.now(timezone.utc))


def _land(tmp_path: Path, kb: str, md5: str, source: str, texts: list[str]) -> list[str]:
    chunks = assign_ids([Chunk(content=t, chunk_type="text") for t in texts], kb=kb, doc_md5=md5, source=source)
    parquet = write_chunks(chunks, chunks_path(tmp_path / "chunks", kb, md5))
    return db.replace_document(tmp_path / "w.duckdb", _doc(kb, md5, source, parquet, len(chunks)), parquet)


def _ids(path: Path) -> list[tuple]:
    return db.query(path, "SELECT kb, chunk_id, doc_md5 FROM chunks ORDER BY kb, chunk_id")[1]


def test_replace_document_swaps_one_documents_rows(tmp_path):
    w = tmp_path / "w.duckdb"
    assert _land(tmp_path, "kb1", "a" * 32, "a.md", ["one", "two"]) == []
    _land(tmp_path, "kb1", "b" * 32, "b.md", ["other"])
    _land(tmp_path, "kb2", "a" * 32, "a.md", ["same doc, other kb"])
    # a.md changes: the new version (new md5) replaces the old one in kb1 only
    replaced = _land(tmp_path, "kb1", "c" * 32, "a.md", ["new one"])
    assert replaced == ["a" * 32]
    assert _ids(w) == [("kb1", "a.md_0", "c" * 32), ("kb1", "b.md_0", "b" * 32), ("kb2", "a.md_0", "a" * 32)]
    assert db.query(w, "SELECT count(*) FROM documents WHERE kb = 'kb1'")[1] == [(2,)]


def test_failed_replacement_leaves_previous_rows(tmp_path):
    w = tmp_path / "w.duckdb"
    _land(tmp_path, "kb", "a" * 32, "a.md", ["kept"])
    missing = tmp_path / "chunks" / "missing.parquet"
    with pytest.raises(duckdb.IOException):
        db.replace_document(w, _doc("kb", "d" * 32, "a.md", missing, 1), missing)
    assert _ids(w) == [("kb", "a.md_0", "a" * 32)]  # rolled back: the old version is intact


def test_read_only_query_refuses_writes_and_file_access(tmp_path):
    w = tmp_path / "w.duckdb"
    _land(tmp_path, "kb", "a" * 32, "a.md", ["x"])
    with pytest.raises(duckdb.Error, match="read-only"):
        db.query(w, "DELETE FROM chunks")
    with pytest.raises(duckdb.Error):
        db.query(w, f"COPY chunks TO '{tmp_path / 'leak.csv'}'")
    assert not (tmp_path / "leak.csv").exists()
    with pytest.raises(FileNotFoundError, match="kbflow ingest"):
        db.query(tmp_path / "nope.duckdb", "SELECT 1")


def test_document_stats_view(tmp_path):
    w = tmp_path / "w.duckdb"
    _land(tmp_path, "kb", "a" * 32, "a.md", ["12345", "1", "123"])
    columns, rows = db.query(w, "SELECT source, chunks, text, median_chars, max_chars FROM document_stats")
    assert rows == [("a.md", 3, 3, 3, 5)]


def test_new_schema_columns_are_added_to_existing_tables(tmp_path):
    w = tmp_path / "w.duckdb"
    con = duckdb.connect(str(w))
    con.execute("CREATE TABLE chunks (content VARCHAR, chunk_type VARCHAR)")
    con.execute("INSERT INTO chunks VALUES ('old row', 'text')")
    con.close()
    with db.connect(w) as con:
        columns = [r[0] for r in con.execute("DESCRIBE chunks").fetchall()]
        assert "chunk_id" in columns and "section_path" in columns
        assert con.execute("SELECT content FROM chunks").fetchall() == [("old row",)]
