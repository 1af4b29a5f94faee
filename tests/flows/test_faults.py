"""Reliability under faults (SPEC §6), each a test:

- `kill -9` of a running `kbflow ingest` (twice: while landing, then while indexing), re-run →
  the same chunk ids, contents and counts in DuckDB, Chroma and BM25 as an uninterrupted run;
- an exception in the index stage (or inside the DuckDB swap) → that document's rows are all new
  or all old, never half; the next run repairs the indexes;
- two `kbflow ingest` of the same KB at once → the second refuses with a message naming the
  first (or, with --wait, queues behind it); no corruption.

The bad-input table is in test_bad_inputs.py. Subprocess runs report to the session's Prefect
test server (PREFECT_API_URL), so no process starts a server of its own that a kill would orphan.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flows.ingest import ingest
from schemas.errors import IndexIncompleteError
from schemas.settings import load_settings
from tasks.index import vector_index
from tasks.index.bm25 import BM25Index
from tasks.index.sync import check
from tests.conftest import DOCS, REPO, need
from warehouse import db

KB = "kb"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """Eight real documents in three batches (DOCX and PDFs parsed by MinerU, Markdown, TXT; ~120 chunks)."""
    root = tmp_path_factory.mktemp("faults") / "corpus"
    root.mkdir()
    for name in ("zh_docx/nbt_npp_psr_part1_drafting_notes.docx", "zh_docx/procurement_contract_headings_table_images.docx",
                 "en/word_sample.docx", "en/multi_page.pdf"):
        shutil.copy(need(DOCS / name), root / Path(name).name)
    for path in sorted((REPO / "examples" / "corpus").iterdir()):
        shutil.copy(path, root / path.name)
    return root


def state(home: Path) -> dict:
    """Everything that must match between two homes: ids with content hashes in each store, the
    documents, the manifest."""
    settings = load_settings(home)
    duck = dict(db.query(settings.db_path, "SELECT chunk_id, md5(semantic_content) FROM chunks WHERE kb = ?",
                         [KB])[1])
    got = vector_index.collection(settings, KB).get(include=["documents"])
    chroma = {i: hashlib.md5(d.encode("utf-8")).hexdigest() for i, d in zip(got["ids"], got["documents"])}
    return {
        "duckdb": duck,
        "chroma": chroma,
        "bm25": sorted(BM25Index.load(settings.bm25_dir / KB).chunk_ids),
        "documents": sorted(db.query(settings.db_path, "SELECT source, doc_md5, chunk_count FROM documents "
                                                       "WHERE kb = ?", [KB])[1]),
        "manifest": sorted(db.query(settings.db_path, "SELECT source, md5, status, chunk_count FROM manifest "
                                                      "WHERE kb = ?", [KB])[1]),
        "check": check(settings, KB).ok,
    }


@pytest.fixture(scope="module")
def reference(prefect_harness, corpus, tmp_path_factory) -> dict:
    """The uninterrupted run (its state, and its home)."""
    home = tmp_path_factory.mktemp("reference") / "home"
    summary = ingest(paths=[str(corpus)], kb=KB, home=str(home))
    assert summary.failed == 0 and summary.landed == len(list(corpus.iterdir()))
    ref = state(home)
    assert ref["check"] and ref["duckdb"] and ref["duckdb"] == ref["chroma"]
    assert {status for _, _, status, _ in ref["manifest"]} == {"indexed"}
    ref["home"] = home
    return ref


def _seed(home: Path, reference: dict) -> None:
    """Give a fresh home the reference's embedding cache: vectors are the same either way; this
    spares each subprocess minutes of CPU-bound encoding on a 2-core machine. (The converted model
    is shared already: KBFLOW_EMBEDDING_MODEL, tests/flows/conftest.py.)"""
    shutil.copytree(reference["home"] / "cache", home / "cache")


def _env() -> dict[str, str]:
    from prefect.settings import PREFECT_API_URL

    # the run's INFO lines on its console (the log file the tests wait on), whatever an in-process
    # `main()` of an earlier test left in os.environ (the CLI quiets Prefect's console by default)
    return {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "PYTHONUNBUFFERED": "1",
            "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "INFO"}


def _spawn(home: Path, corpus: Path, log: Path, *extra: str, module: str = "flows.cli",
           env: dict[str, str] | None = None) -> subprocess.Popen:
    """`kbflow ingest` in its own process group (MinerU starts helper processes: kill them all)."""
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", module, "--home", str(home), "ingest", str(corpus),
                                 "--kb", KB, *extra], cwd=REPO, env={**_env(), **(env or {})}, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def _kill_when(proc: subprocess.Popen, ready, log: Path, what: str, timeout: float = 400) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the ingest ended (rc {proc.returncode}) before {what}:\n{log.read_text()[-3000:]}")
        if ready():
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
            return
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    pytest.fail(f"timed out waiting for {what}")


def test_kill_9_mid_run_then_rerun_converges(reference, corpus, tmp_path):
    home, log = tmp_path / "home", tmp_path / "ingest.log"
    _seed(home, reference)
    parquet_dir = home / "chunks" / f"kb={KB}"

    # 1. killed while landing: a batch or two of documents are in DuckDB (and maybe some in Chroma)
    proc = _spawn(home, corpus, log)
    _kill_when(proc, lambda: "in one batch;" in log.read_text(errors="replace"), log, "the first batch landed")
    landed = db.query(home / "kbflow.duckdb", "SELECT count(*) FROM documents")[1][0][0]
    assert 1 <= landed < len(reference["documents"])
    assert db.query(home / "kbflow.duckdb", "SELECT status FROM ingest_runs")[1] == [("running",)]
    assert (home / "locks" / "write.holder.json").exists()  # the dead run's note stays; its lock does not

    # 2. killed again while indexing, after its first Chroma upsert (the killed run's lock does not block it)
    paused = tmp_path / "paused"
    proc = _spawn(home, corpus, log, module="tests.flows.ingest_paused_in_index",
                  env={"KBFLOW_TEST_PAUSED": str(paused)})
    _kill_when(proc, paused.exists, log, "the index stage wrote to Chroma")
    assert len(vector_index.all_ids(vector_index.collection(load_settings(home), KB))) < len(reference["chroma"])

    # 3. run to completion: the same state as the uninterrupted run
    proc = _spawn(home, corpus, log)
    assert proc.wait(600) == 0, log.read_text()[-3000:]
    after = state(home)
    assert after["duckdb"] == reference["duckdb"]
    assert after["chroma"] == reference["chroma"]
    assert after["bm25"] == reference["bm25"]
    assert after["documents"] == reference["documents"]
    assert after["manifest"] == reference["manifest"]
    assert after["check"]
    statuses = [r[0] for r in db.query(home / "kbflow.duckdb", "SELECT status FROM ingest_runs ORDER BY started_at")[1]]
    assert statuses == ["interrupted", "interrupted", "completed"]
    assert not list(parquet_dir.glob(".*.tmp")) and len(list(parquet_dir.glob("*.parquet"))) == len(after["documents"])


def test_two_ingests_at_once_second_refuses_or_waits(reference, corpus, tmp_path):
    home = tmp_path / "home"
    _seed(home, reference)
    # the first ingest holds the lock, paused after its first Chroma upsert until released
    paused, release = tmp_path / "paused", tmp_path / "release"
    first = _spawn(home, corpus, tmp_path / "first.log", module="tests.flows.ingest_paused_in_index",
                   env={"KBFLOW_TEST_PAUSED": str(paused), "KBFLOW_TEST_RELEASE": str(release)})
    deadline = time.monotonic() + 400
    while not paused.exists():
        assert first.poll() is None and time.monotonic() < deadline, (tmp_path / "first.log").read_text()[-3000:]
        time.sleep(0.05)

    waiting = _spawn(home, corpus, tmp_path / "waiting.log", "--wait", "600")
    refused = subprocess.run([sys.executable, "-m", "flows.cli", "--home", str(home), "ingest", str(corpus),
                              "--kb", KB], cwd=REPO, env=_env(), capture_output=True, text=True, timeout=300)
    out = " ".join((refused.stdout + refused.stderr).split())
    assert refused.returncode == 3, out[-3000:]
    assert "is busy: kbflow ingest of kb 'kb' (run " in out and "did not start" in out and "--wait SECONDS" in out
    assert waiting.poll() is None, (tmp_path / "waiting.log").read_text()[-3000:]  # queued behind the first
    release.touch()

    assert first.wait(600) == 0, (tmp_path / "first.log").read_text()[-3000:]
    assert waiting.wait(600) == 0, (tmp_path / "waiting.log").read_text()[-3000:]
    waited = (tmp_path / "waiting.log").read_text()
    assert f"0 added, 0 changed, {len(reference['documents'])} unchanged (skipped)" in " ".join(waited.split())
    after = state(home)
    assert {k: after[k] for k in ("duckdb", "chroma", "bm25", "documents", "manifest")} == {
        k: reference[k] for k in ("duckdb", "chroma", "bm25", "documents", "manifest")}
    runs = db.query(home / "kbflow.duckdb", "SELECT status, files_added, files_skipped FROM ingest_runs "
                                            "ORDER BY started_at")[1]
    assert runs == [("completed", len(reference["documents"]), 0), ("completed", 0, len(reference["documents"]))]


# ------------------------------------------------------------------------------------------------
# exceptions injected in-process


def _two_docs(tmp_path: Path) -> tuple[Path, Path, Path]:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# 甲\n\n第一版，只有一段。\n", encoding="utf-8")
    (corpus / "b.md").write_text("# 乙\n\n另一份文档。\n", encoding="utf-8")
    return corpus, corpus / "a.md", tmp_path / "home"


def _grow(path: Path) -> None:
    body = "\n\n".join(f"## 第{i}节\n\n" + f"第二版第{i}节的正文，" * 30 for i in range(1, 5))
    path.write_text("# 甲\n\n" + body + "\n", encoding="utf-8")


def _document_rows(settings, source: str) -> tuple[str, int, set[str], int]:
    (md5, count), = db.query(settings.db_path, "SELECT doc_md5, chunk_count FROM documents WHERE source = ?",
                             [source])[1]
    rows = db.query(settings.db_path, "SELECT doc_md5 FROM chunks WHERE source = ?", [source])[1]
    return md5, count, {r[0] for r in rows}, len(rows)


def test_exception_in_the_index_stage_leaves_duckdb_whole_and_the_next_run_repairs(
        prefect_harness, tmp_path, monkeypatch):
    corpus, a, home = _two_docs(tmp_path)
    settings = load_settings(home)
    ingest(paths=[str(corpus)], kb=KB, home=str(home))
    old_md5 = _document_rows(settings, "a.md")[0]
    _grow(a)

    real = vector_index.upsert_documents

    def failing(col, kb, documents, *vectors):
        if "a.md" in documents:
            raise RuntimeError("injected: Chroma went away")
        return real(col, kb, documents, *vectors)

    monkeypatch.setattr(vector_index, "upsert_documents", failing)
    with pytest.raises(IndexIncompleteError, match="1 document\\(s\\) landed but not indexed") as raised:
        ingest(paths=[str(corpus)], kb=KB, home=str(home))  # the flow run fails: not everything is searchable
    broken = raised.value.summary
    (outcome,) = [o for o in broken.outcomes if o.source == "a.md"]
    assert outcome.status == "landed" and "not indexed: RuntimeError: injected" in outcome.reason
    md5, count, md5s, rows = _document_rows(settings, "a.md")
    assert md5 != old_md5 and md5s == {md5} and rows == count > 1  # all of the new version, none of the old
    assert db.query(settings.db_path, "SELECT stage, error_kind FROM ingest_failures WHERE run_id = ?",
                    [broken.run_id])[1] == [("index", "RuntimeError")]
    assert db.query(settings.db_path, "SELECT status FROM manifest WHERE source = 'a.md'")[1] == [("landed",)]
    gap = check(settings, KB)
    assert not gap.ok and gap.missing["chroma"]  # visible to `kbflow check`

    monkeypatch.setattr(vector_index, "upsert_documents", real)
    repaired = ingest(paths=[str(corpus)], kb=KB, home=str(home))
    assert {o.source: o.status for o in repaired.outcomes} == {"a.md": "skipped", "b.md": "skipped"}
    assert repaired.index.documents == 1  # a.md indexed again, not parsed again
    assert check(settings, KB).ok
    semantic = {r[0] for r in db.query(settings.db_path, "SELECT semantic_content FROM chunks WHERE source = 'a.md'")[1]}
    assert set(vector_index.collection(settings, KB).get(where={"source": "a.md"})["documents"]) == semantic
    assert db.query(settings.db_path, "SELECT status FROM manifest WHERE source = 'a.md'")[1] == [("indexed",)]


def test_exception_inside_the_duckdb_swap_keeps_the_old_version_whole(prefect_harness, tmp_path, monkeypatch):
    corpus, a, home = _two_docs(tmp_path)
    settings = load_settings(home)
    ingest(paths=[str(corpus)], kb=KB, home=str(home))
    before = _document_rows(settings, "a.md")
    _grow(a)

    real_insert = db._insert

    def failing_insert(con, table, rows):
        if table == "documents":  # after the old rows were deleted and the new chunks inserted
            raise RuntimeError("injected: disk full")
        return real_insert(con, table, rows)

    monkeypatch.setattr(db, "_insert", failing_insert)
    broken = ingest(paths=[str(corpus)], kb=KB, home=str(home))
    (outcome,) = [o for o in broken.outcomes if o.source == "a.md"]
    assert outcome.status == "failed" and "injected: disk full" in outcome.reason
    assert _document_rows(settings, "a.md") == before  # rolled back: the old version, whole
    assert check(settings, KB).ok  # and still searchable everywhere

    monkeypatch.setattr(db, "_insert", real_insert)
    fixed = ingest(paths=[str(corpus)], kb=KB, home=str(home))
    assert {o.source: (o.status, o.change) for o in fixed.outcomes} == {
        "a.md": ("landed", "changed"), "b.md": ("skipped", "")}
    md5, count, md5s, rows = _document_rows(settings, "a.md")
    assert md5 != before[0] and md5s == {md5} and rows == count
    assert check(settings, KB).ok


def test_the_flow_itself_refuses_while_another_writer_holds_the_home(prefect_harness, tmp_path):
    """A deployment run goes through the flow, not the CLI: the flow takes the lock itself."""
    from tasks.common.lock import IngestLockedError, write_lock

    corpus, _, home = _two_docs(tmp_path)
    with write_lock(home, kb=KB, run_id="other-run", what="rm"):
        with pytest.raises(IngestLockedError, match="kbflow rm of kb 'kb' \\(run other-run"):
            ingest(paths=[str(corpus)], kb=KB, home=str(home))
    assert not (home / "kbflow.duckdb").exists()  # refused before writing anything
    assert ingest(paths=[str(corpus)], kb=KB, home=str(home), lock_wait_s=5).added == 2
