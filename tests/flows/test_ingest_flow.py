"""The `ingest` flow under a Prefect test server: real files land; bad ones are recorded, not fatal."""
from __future__ import annotations

import shutil

from flows.ingest import ingest
from tasks.common.progress import listening
from tests.conftest import DOCS, make_scanned_pdf, need
from warehouse import db


def test_ingest_lands_good_files_and_records_bad_ones(prefect_harness, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(need(DOCS / "zh_docx" / "procurement_contract_headings_table_images.docx"), corpus)
    shutil.copy(need(DOCS / "zh_pdf" / "party_union_rules_1page_table.pdf"), corpus)
    (corpus / "notes.md").write_text("# 说明\n\n这是一份说明文档。\n", encoding="utf-8")
    make_scanned_pdf(corpus / "scanned.pdf")
    (corpus / "empty.docx").write_bytes(b"")
    (corpus / "drawing.dwg").write_bytes(b"AC1032")
    (corpus / "broken.pdf").write_bytes(b"%PDF-1.4 then nothing")
    home = tmp_path / "home"

    updates = []
    with listening(updates.append):
        summary = ingest(paths=[str(corpus)], kb="demo", home=str(home))

    status = {o.source: o.status for o in summary.outcomes}
    assert status == {
        "procurement_contract_headings_table_images.docx": "landed", "party_union_rules_1page_table.pdf": "landed",
        "notes.md": "landed", "scanned.pdf": "landed",  # read by OCR (no text layer)
        str(corpus / "empty.docx"): "rejected",
        str(corpus / "drawing.dwg"): "rejected", str(corpus / "broken.pdf"): "rejected"}
    w = home / "kbflow.duckdb"
    docs = dict(db.query(w, "SELECT source, chunk_count FROM documents WHERE kb = 'demo'")[1])
    assert set(docs) == {"procurement_contract_headings_table_images.docx", "party_union_rules_1page_table.pdf",
                         "notes.md", "scanned.pdf"}
    counted = dict(db.query(w, "SELECT source, count(*) FROM chunks GROUP BY source")[1])
    assert counted == docs
    failures = dict(db.query(w, "SELECT error_kind, stage FROM ingest_failures WHERE run_id = ?", [summary.run_id])[1])
    assert failures == {"EmptyFileError": "discover", "UnsupportedFileError": "discover", "CorruptFileError": "discover"}
    run = db.query(w, "SELECT status, files_seen, files_landed, files_failed, chunks_landed FROM ingest_runs")[1]
    assert run == [("completed_with_failures", 7, 4, 3, sum(docs.values()))]
    # chunk ids are {source}_{index}, pages 1-based, the table kept as HTML
    rows = db.query(w, "SELECT chunk_id, chunk_index, page_start, chunk_type, table_html FROM chunks "
                       "WHERE source = 'party_union_rules_1page_table.pdf' ORDER BY chunk_index")[1]
    assert [r[0] for r in rows] == [f"party_union_rules_1page_table.pdf_{i}" for i in range(len(rows))]
    assert all(r[2] == 1 for r in rows)
    assert sum(r[3] == "table" and r[4].startswith("<table") for r in rows) == 1
    assert sorted(p.name for p in (home / "chunks" / "kb=demo").iterdir()) == sorted(
        f"{md5}.parquet" for (md5,) in db.query(w, "SELECT doc_md5 FROM documents")[1])
    # progress of the long stages: paths found, files through parse → chunk → land, chunks embedded
    done = {u.stage: (u.done, u.total, u.unit) for u in updates if u.finished}
    assert done == {"discover": (7, 7, "files"), "parse": (4, 4, "files"), "land": (4, 4, "files"),
                    "embed": (sum(docs.values()), sum(docs.values()), "chunks")}


def test_reingest_uses_parse_cache_and_replaces_changed_files(prefect_harness, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(need(DOCS / "en" / "word_sample.docx"), corpus)
    note = corpus / "note.md"
    note.write_text("# 第一版\n\n旧内容。\n", encoding="utf-8")
    home = str(tmp_path / "home")

    first = ingest(paths=[str(corpus)], kb="kb", home=home)
    note.write_text("# 第二版\n\n新内容。\n\n更多内容。\n", encoding="utf-8")
    second = ingest(paths=[str(corpus)], kb="kb", home=home)

    # the unchanged file is skipped without parsing; the changed one is parsed again and replaced
    assert {o.source: (o.status, o.change) for o in second.outcomes} == {
        "word_sample.docx": ("skipped", ""), "note.md": ("landed", "changed")}
    assert not any(o.parse_cached for o in first.outcomes + second.outcomes)
    assert (second.added, second.changed, second.skipped, second.removed) == (0, 1, 1, 0)
    w = tmp_path / "home" / "kbflow.duckdb"
    contents = [r[0] for r in db.query(w, "SELECT content FROM chunks WHERE source = 'note.md' ORDER BY chunk_index")[1]]
    assert contents == ["第二版\n新内容。\n更多内容。"]  # heading and short paragraphs merged
    assert db.query(w, "SELECT count(*) FROM documents")[1] == [(2,)]
    assert len(list((tmp_path / "home" / "chunks" / "kb=kb").glob("*.parquet"))) == 2  # old version's file gone
