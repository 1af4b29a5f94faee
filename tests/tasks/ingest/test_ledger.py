"""The ingest ledger: one outcome per file, failures and manifest notes with the right stage, kind
and status, and the run row's totals — without Prefect (a DuckDB file under tmp_path)."""
from __future__ import annotations

import logging
from datetime import datetime, timezone
from pathlib import Path

import pytest

from schemas.errors import EmptyDocumentError, NeedsModelsError, NormalizeError
from schemas.ingest import ManifestEntry
from tasks.index.sync import IndexSummary
from tasks.ingest import manifest as mf
from tasks.ingest.discover import Discovery, Rejection, SourceFile
from tasks.ingest.land import LandedChunks
from tasks.ingest.ledger import FileOutcome, IngestLedger
from tasks.ingest.parse import ParsedOutput, ParseKey
from warehouse import db

LOG = "kbflow.test.ledger"


def _src(path: Path, source: str, md5: str) -> SourceFile:
    return SourceFile(path, source, md5, 10, "markdown", "markdown")


def _entry(path: Path, source: str, md5: str, status: str = mf.INDEXED, chunks: int = 3) -> ManifestEntry:
    return ManifestEntry("kb", str(path), source, md5, status, chunks, "key", "r0", datetime.now(timezone.utc))


def _parsed(md5: str, cached: bool = False, seconds: float = 1.25) -> ParsedOutput:
    return ParsedOutput(Path("/parsed") / md5, ParseKey(md5, "markdown", "1", ""), cached, seconds)


def _chunked(path: Path, chunks: int, calls: int = 0, fallbacks: int = 0) -> LandedChunks:
    return LandedChunks(path, chunks, chunks + 2, 1, 1, 0, calls, fallbacks)


@pytest.fixture
def ledger(settings) -> IngestLedger:
    return IngestLedger(settings, "kb", "run1", runner="default", flow_run_id="fr1", log=logging.getLogger(LOG))


def _messages(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOG]


def test_open_marks_dead_runs_interrupted_and_saves_a_running_row(settings, ledger, caplog):
    dead = IngestLedger(settings, "kb", "run0")
    dead.open()  # a run that never finished
    with caplog.at_level(logging.INFO, logger=LOG):
        assert ledger.open() == []  # an empty KB's manifest
    assert _messages(caplog) == [f"1 earlier ingest run(s) of {settings.home} were interrupted; "
                                 "this run completes their work"]
    runs = dict(db.query(settings.db_path, "SELECT run_id, status FROM ingest_runs")[1])
    assert runs == {"run0": "interrupted", "run1": "running"}


def test_rejections_fail_and_note_only_files_that_are_there(tmp_path, ledger, caplog):
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"x")
    copy = tmp_path / "copy.md"
    copy.write_text("x", encoding="utf-8")
    found = Discovery(sources=[_src(tmp_path / "a.md", "a.md", "A")], rejected=[
        Rejection(str(bad), "", "CorruptFileError", "not a PDF"),
        Rejection(str(copy), "C", "DuplicateFileError", "same content as a.md (skipped)"),
        Rejection(str(tmp_path / "empty"), "", "MissingFileError", "folder holds no files"),
        Rejection(str(tmp_path / "gone.md"), "", "MissingFileError", "no such file")],
        empty_roots=[str(tmp_path / "empty")])
    with caplog.at_level(logging.INFO, logger=LOG):
        ledger.discovered(found)

    assert ledger.run.files_seen == 5
    assert [(o.source, o.status, o.reason) for o in ledger.summary.outcomes] == [
        (str(bad), "rejected", "not a PDF"), (str(copy), "rejected", "same content as a.md (skipped)"),
        (str(tmp_path / "empty"), "rejected", "folder holds no files"),
        (str(tmp_path / "gone.md"), "rejected", "no such file")]
    assert [(f.stage, f.error_kind, f.doc_md5) for f in ledger.failures] == [
        ("discover", "CorruptFileError", ""), ("discover", "DuplicateFileError", "C"),
        ("discover", "MissingFileError", ""), ("discover", "MissingFileError", "")]
    assert [(n.path, n.source, n.status, n.md5, n.reason) for n in ledger.notes] == [
        (str(bad), "", mf.REJECTED, "", "not a PDF"),
        (str(copy), "", mf.DUPLICATE, "C", "same content as a.md (skipped)")]
    assert _messages(caplog)[0] == f"{bad}: not a PDF (CorruptFileError)"
    assert ledger.summary.failed == 4 and ledger.summary.landed == 0


def test_plan_outcomes_skipped_duplicates_and_kept_folders(tmp_path, ledger, caplog):
    a, b = _src(tmp_path / "a.md", "a.md", "A"), _src(tmp_path / "b.md", "b.md", "B")
    plan = mf.Plan(skipped=[(a, _entry(a.path, "a.md", "A", chunks=4)),
                            (b, _entry(b.path, "b.md", "B", status=mf.LANDED, chunks=2))],
                   duplicates=[(_src(tmp_path / "a2.md", "a2.md", "A"), "a.md")], kept_roots=[str(tmp_path / "nas")])
    with caplog.at_level(logging.INFO, logger=LOG):
        ledger.planned(plan)

    assert ledger.summary.outcomes == [
        FileOutcome("a.md", "skipped", 4, reason="unchanged"), FileOutcome("b.md", "skipped", 2, reason="unchanged"),
        FileOutcome("a2.md", "rejected", reason="same content as a.md, already in kb 'kb' (skipped)")]
    assert [(f.path, f.stage, f.error_kind) for f in ledger.failures] == [
        (str(tmp_path / "a2.md"), "discover", "DuplicateFileError")]
    assert [(n.status, n.md5) for n in ledger.notes] == [(mf.DUPLICATE, "A")]
    assert _messages(caplog)[0].startswith(f"{tmp_path / 'nas'} found no files: nothing under it is removed "
                                           "from kb 'kb'")
    assert ledger.summary.skipped == 2 and ledger.summary.failed == 1


def test_a_failed_stage_is_named_by_the_error_or_by_the_flow(settings, tmp_path, ledger):
    entry = _entry(tmp_path / "c.md", "old name.md", "C0")
    db.upsert_manifest(settings.db_path, [entry])
    ledger.open()
    src = _src(tmp_path / "c.md", "c.md", "C1")
    ledger.failed(src, "parse", NeedsModelsError(str(src.path), "needs OCR models"))
    ledger.failed(src, "parse", NormalizeError(str(src.path), "unreadable content list"))
    ledger.failed(src, "chunk", EmptyDocumentError(str(src.path), "no content"))
    ledger.failed(src, "land", RuntimeError("x" * 600))
    ledger.failed(src, "chunk", RuntimeError())

    assert [(f.stage, f.error_kind, f.reason[:20]) for f in ledger.failures] == [
        ("parse", "NeedsModelsError", "needs OCR models"), ("normalize", "NormalizeError", "unreadable content l"),
        ("chunk", "EmptyDocumentError", "no content"), ("land", "RuntimeError", "x" * 20),
        ("chunk", "RuntimeError", "RuntimeError")]
    assert len(ledger.failures[3].reason) == 500
    assert {o.status for o in ledger.summary.outcomes} == {"failed"}
    assert {(n.source, n.status, n.md5) for n in ledger.notes} == {("c.md", mf.FAILED, "C1")}


def test_a_note_keeps_the_name_of_the_version_still_landed(settings, tmp_path, ledger):
    path = tmp_path / "bad.pdf"
    path.write_bytes(b"x")
    db.upsert_manifest(settings.db_path, [_entry(path, "bad.pdf", "OLD")])
    ledger.open()
    ledger.reject(Rejection(str(path), "", "CorruptFileError", "truncated PDF"))
    ledger.save_notes()
    (row,) = db.load_manifest(settings.db_path, "kb")
    assert (row.source, row.status, row.md5, row.reason, row.last_run_id) == (
        "bad.pdf", mf.REJECTED, "", "truncated PDF", "run1")


def test_landed_files_removals_and_index_errors(tmp_path, ledger, caplog):
    a, b = _src(tmp_path / "a.md", "a.md", "A"), _src(tmp_path / "b.md", "b.md", "B")
    ledger.skipped(b, _entry(b.path, "b.md", "B"))
    with caplog.at_level(logging.DEBUG, logger=LOG):  # a landed file's line is at debug level (50,000 files)
        ledger.landed(mf.Todo(a, mf.ADDED), _parsed("A"), _chunked(tmp_path / "A.parquet", 5, calls=3, fallbacks=1),
                      embedded=5)
        ledger.landed(mf.Todo(_src(tmp_path / "c.md", "c.md", "C"), mf.CHANGED), _parsed("C", cached=True),
                      _chunked(tmp_path / "C.parquet", 2))
        ledger.removed([_entry(tmp_path / "gone.md", "gone.md", "G", chunks=7),
                        _entry(tmp_path / "locked.md", "locked.md", "L"),
                        _entry(tmp_path / "rejected-only.md", "", "")],
                       {str(tmp_path / "locked.md"): "IOException: database is locked"})
    assert _messages(caplog) == [
        "a.md: added, 5 chunks (markdown, parsed in 1.2s)", "c.md: changed, 2 chunks (markdown, cached parse)",
        "gone.md: removed (no longer under the given folder)",
        f"{tmp_path / 'locked.md'}: IOException: database is locked (IOException)"]
    assert ledger.landed_files == [("a.md", tmp_path / "A.parquet"), ("c.md", tmp_path / "C.parquet")]
    assert (ledger.run.enrich_calls, ledger.run.enrich_fallbacks) == (3, 1)
    assert [(o.source, o.status, o.chunks, o.change) for o in ledger.summary.outcomes] == [
        ("b.md", "skipped", 3, ""), ("a.md", "landed", 5, mf.ADDED), ("c.md", "landed", 2, mf.CHANGED),
        ("gone.md", "removed", 7, ""), ("locked.md", "failed", 0, "")]
    assert [(f.stage, f.error_kind) for f in ledger.failures] == [("remove", "IOException")]

    ledger.indexed(IndexSummary(documents=2, chunks=7, embedded=1), {"c.md": "ValueError: bad vector"})
    assert ledger.summary.index.embedded == 6  # 5 on a worker + 1 in the index stage
    reasons = {o.source: o.reason for o in ledger.summary.outcomes}
    assert reasons["c.md"] == "not indexed: ValueError: bad vector" and reasons["a.md"] == ""
    ledger.indexed(None, {"*": "RuntimeError: no model"})  # the whole stage failed
    reasons = {o.source: o.reason for o in ledger.summary.outcomes}
    assert reasons["a.md"] == reasons["b.md"] == "not indexed: RuntimeError: no model"
    assert reasons["gone.md"] == "file no longer found"
    assert [(f.path, f.stage, f.error_kind) for f in ledger.failures[1:]] == [
        ("c.md", "index", "ValueError"), ("*", "index", "RuntimeError")]


def test_documents_not_indexed_for_one_reason_log_one_line(settings, tmp_path, ledger, caplog):
    ledger.open()
    sources = [_src(tmp_path / f"{i}.md", f"{i}.md", str(i)) for i in range(3)]
    ledger.discovered(Discovery(sources=sources, rejected=[]))
    ledger.planned(mf.Plan(todo=[mf.Todo(s, mf.ADDED) for s in sources]))
    for s in sources:
        ledger.landed(mf.Todo(s, mf.ADDED), _parsed(s.md5), _chunked(tmp_path / f"{s.md5}.parquet", 1, calls=0))
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=LOG):
        ledger.indexed(IndexSummary(), {"0.md": "OSError: disk full", "1.md": "OSError: disk full",
                                        "2.md": "ValueError: bad vector"})
    assert _messages(caplog) == ["0.md and 1 more document(s): not indexed: OSError: disk full",
                                 "2.md: not indexed: ValueError: bad vector"]
    assert [o.reason for o in ledger.summary.outcomes] == [
        "not indexed: OSError: disk full", "not indexed: OSError: disk full", "not indexed: ValueError: bad vector"]
    assert [f.path for f in ledger.failures] == ["0.md", "1.md", "2.md"]


def test_finish_counts_the_outcomes_into_the_run_row(settings, tmp_path, ledger, caplog):
    ledger.open()
    a, b = _src(tmp_path / "a.md", "a.md", "A"), _src(tmp_path / "b.md", "b.md", "B")
    ledger.discovered(Discovery(sources=[a, b], rejected=[Rejection(str(tmp_path / "x.dwg"), "", "UnsupportedFileError",
                                                                    "unsupported file type '.dwg'")]))
    ledger.planned(mf.Plan(todo=[mf.Todo(a, mf.ADDED)], skipped=[(b, _entry(b.path, "b.md", "B", mf.LANDED))]))
    ledger.landed(mf.Todo(a, mf.ADDED), _parsed("A"), _chunked(tmp_path / "A.parquet", 5, calls=2), embedded=4)
    ledger.removed([_entry(tmp_path / "gone.md", "gone.md", "G")], {})
    ledger.indexed(IndexSummary(documents=2, chunks=9, embedded=3, repaired=1), {})
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=LOG):
        run = ledger.finish()

    assert _messages(caplog) == ["kb 'kb': 1 added, 0 changed, 1 unchanged (skipped), 1 removed, 1 failed or rejected"]
    assert (run.status, run.files_seen, run.files_landed, run.files_failed, run.files_added, run.files_changed,
            run.files_skipped, run.files_removed, run.files_reindexed) == (
        "completed_with_failures", 3, 1, 1, 1, 0, 1, 1, 2)  # reindexed: b (landed only) + 1 repaired
    assert (run.chunks_landed, run.chunks_indexed, run.chunks_embedded, run.enrich_calls) == (5, 9, 7, 2)
    assert run.finished_at is not None and run.flow_run_id == "fr1"
    saved = db.query(settings.db_path, "SELECT status, files_seen, files_failed, chunks_embedded FROM ingest_runs")[1]
    assert saved == [("completed_with_failures", 3, 1, 7)]
    assert db.query(settings.db_path, "SELECT path, stage FROM ingest_failures")[1] == [
        (str(tmp_path / "x.dwg"), "discover")]
    assert ledger.summary.headline == ("kbflow ingest run run1 into kb 'kb': 1 added, 0 changed, 1 unchanged, "
                                       "1 removed, 1 failed")
    assert [r["status"] for r in ledger.summary.outcome_rows()] == ["rejected", "skipped", "landed", "removed"]


def test_a_run_without_failures_completes(settings, tmp_path, ledger):
    ledger.open()
    a = _src(tmp_path / "a.md", "a.md", "A")
    ledger.landed(mf.Todo(a, mf.ADDED), _parsed("A"), _chunked(tmp_path / "A.parquet", 1))
    assert ledger.finish().status == "completed"
    assert db.query(settings.db_path, "SELECT count(*) FROM ingest_failures")[1] == [(0,)]


def test_a_big_run_s_outcome_table_lists_failures_and_sums_up_the_rest(ledger):
    summary = ledger.summary
    summary.outcomes = [FileOutcome(f"d{i}.md", "skipped", 2, reason="unchanged") for i in range(100)]
    summary.outcomes += [FileOutcome(f"n{i}.md", "landed", 1, 0.5, change=mf.ADDED) for i in range(30)]
    summary.outcomes += [FileOutcome("bad.pdf", "failed", reason="damaged PDF"),
                         FileOutcome("x.md", "landed", 1, change=mf.CHANGED, reason="not indexed: no model")]
    rows = {(o.source, o.status, o.change): (o.chunks, o.parse_seconds, o.reason) for o in summary.shown_outcomes()}
    assert rows == {("bad.pdf", "failed", ""): (0, 0.0, "damaged PDF"),
                    ("x.md", "landed", "changed"): (1, 0.0, "not indexed: no model"),
                    ("(100 files)", "skipped", ""): (200, 0.0, "unchanged"),
                    ("(30 files)", "landed", "added"): (30, 15.0, "")}
    assert len(summary.outcome_rows()) == 4
    assert summary.shown_outcomes(limit=200) == summary.outcomes  # a small run: one row per file
    assert [o.source for o in summary.shown_outcomes(limit=1)][:2] == ["bad.pdf", "… 1 more failures"]
