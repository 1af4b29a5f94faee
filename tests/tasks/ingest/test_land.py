"""Land: chunk Parquet files (layout, atomic write, lossless round trip) and the swap of a
document's new version into DuckDB, with its manifest row, deleting only the replaced version."""
from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from schemas.arrow import from_table
from schemas.chunk import CHUNK_SCHEMA, Chunk, assign_ids, chunks_path
from tasks.ingest import manifest as mf
from tasks.ingest.discover import SourceFile
from tasks.ingest.land import LandedChunks, land_document, remove_deleted, write_chunks
from tasks.ingest.parse import ParsedOutput, ParseKey
from warehouse import db


def _chunks(source: str, md5: str, *texts: str) -> list[Chunk]:
    chunks = [Chunk(content=t, chunk_type="text", section_path="第一章 > 1.1", semantic_content=t, tokens=list(t),
                    source_pages=[1, 2], bbox=[0.0, 1.0, 2.0, 3.0]) for t in texts]
    return assign_ids(chunks, kb="kb", doc_md5=md5, source=source)


def test_chunks_path_layout(tmp_path):
    assert chunks_path(tmp_path, "manuals", "abc123") == tmp_path / "kb=manuals" / "abc123.parquet"


def test_write_chunks_round_trips_through_pyarrow(tmp_path):
    chunks = _chunks("a.md", "A", "甲", "乙乙", "丙丙丙")
    chunks[1].images = ["images/x.jpg"]
    path = write_chunks(chunks, chunks_path(tmp_path, "kb", "A"))
    table = pq.read_table(path)
    assert table.schema.equals(CHUNK_SCHEMA, check_metadata=False)
    assert from_table(table, Chunk) == chunks
    assert [p.name for p in path.parent.iterdir()] == ["A.parquet"]  # no temporary file left beside it


def _land(settings, source: str, md5: str, *texts: str, run_id: str = "r1") -> list[str]:
    src = SourceFile(Path("/corpus") / source, source, md5, 100, "markdown", "markdown")
    parsed = ParsedOutput(Path("/parsed") / md5, ParseKey(md5, "markdown", "1", ""), cached=False, seconds=0.12345)
    path = write_chunks(_chunks(source, md5, *texts), chunks_path(settings.chunks_dir, "kb", md5))
    return land_document(src, parsed, LandedChunks(path, len(texts), len(texts) + 1, 1, 0, 0), "kb", run_id,
                         settings, pipeline_key="key1")


def test_land_document_replaces_the_old_version(settings):
    assert _land(settings, "a.md", "A1", "旧的", "内容") == []
    assert _land(settings, "b.md", "B1", "别的文件") == []
    assert _land(settings, "a.md", "A2", "新的内容", run_id="r2") == ["A1"]

    assert not chunks_path(settings.chunks_dir, "kb", "A1").exists()  # the replaced version's Parquet went
    assert all(chunks_path(settings.chunks_dir, "kb", md5).is_file() for md5 in ("A2", "B1"))
    docs = db.query(settings.db_path, "SELECT source, doc_md5, chunk_count, items_total, parse_seconds, parse_cached, "
                                      "run_id FROM documents ORDER BY source")[1]
    assert docs == [("a.md", "A2", 1, 2, 0.123, False, "r2"), ("b.md", "B1", 1, 2, 0.123, False, "r1")]
    assert db.query(settings.db_path, "SELECT chunk_id, content FROM chunks WHERE source = 'a.md'")[1] == [
        ("a.md_0", "新的内容")]
    manifest = {e.source: e for e in db.load_manifest(settings.db_path, "kb")}
    assert (manifest["a.md"].md5, manifest["a.md"].status, manifest["a.md"].chunk_count,
            manifest["a.md"].pipeline_key, manifest["a.md"].last_run_id) == ("A2", mf.LANDED, 1, "key1", "r2")


def test_remove_deleted_removes_documents_and_only_stale_rows_of_held_names(settings):
    _land(settings, "gone.md", "G", "要删除的")
    _land(settings, "renamed.md", "R", "改了名字")
    entries = {e.source: e for e in db.load_manifest(settings.db_path, "kb")}
    stale = entries["renamed.md"]  # the name is held by a file found this run: its row only goes
    errors = remove_deleted(settings, "kb", [entries["gone.md"], stale], held={"renamed.md"})
    assert errors == {}
    assert db.query(settings.db_path, "SELECT source FROM documents")[1] == [("renamed.md",)]
    assert not chunks_path(settings.chunks_dir, "kb", "G").exists()
    # gone.md's row went with its document; renamed.md's stale row alone (its new file lands its own)
    assert db.query(settings.db_path, "SELECT count(*) FROM manifest")[1] == [(0,)]
