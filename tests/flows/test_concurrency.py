"""Readers and one writer on one home at once (issue 16 item 1): a 500-question `ask` runs while an
ingest adds and replaces documents; `kbflow sql` reads during the ingest; `--wait` covers DuckDB's
file lock held by another process. Readers read a published generation (warehouse.published),
never the live DuckDB file or Chroma."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from flows.batch_qa import batch_qa
from flows.ingest import ingest
from tasks.common.progress import listening
from tests.conftest import REPO
from warehouse import db

KB = "plant"
UNTOUCHED = ["锅炉", "水泵", "风机", "阀门", "电机", "压缩机", "冷却塔", "变压器", "换热器", "储罐"]
REPLACED = ["管道", "泵站"]
ADDED = ["仪表", "电缆"]


def _doc(i: int, name: str, version: str = "一") -> str:
    return (f"# {name}运行规程\n\n{name}的设备编号为 K{i:03d}，额定压力为 {10 + i} 兆帕，巡检周期为 {i + 2} 天。"
            f"本规程为第{version}版。\n\n## {name}维护\n\n{name}每年大修一次，负责部门为{name}车间，"
            f"备件存放于{i + 1}号仓库。\n")


def _questions(path: Path, names: list[str], n: int) -> dict[str, str]:
    """`n` questions cycling over the documents (three per document); qid → the document's name."""
    forms = ["{}的额定压力是多少？", "{}由哪个部门负责维护？", "{}的巡检周期是多长？"]
    rows, about = [], {}
    for k in range(n):
        name = names[k % len(names)]
        qid = f"q{k:04d}"
        rows.append({"id": qid, "question": forms[(k // len(names)) % 3].format(name)})
        about[qid] = name
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return about


def _env() -> dict[str, str]:
    from prefect.settings import PREFECT_API_URL

    return {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "PYTHONUNBUFFERED": "1"}


def _answers(path: Path) -> dict[str, tuple]:
    return {r["qid"]: (r["question"], r["answer"], tuple(r["citations"]))
            for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def test_500_questions_while_an_ingest_adds_and_replaces_documents(prefect_harness, tmp_path, monkeypatch):
    monkeypatch.setenv("KBFLOW_QA_BATCH_SIZE", "50")
    corpus, home = tmp_path / "corpus", tmp_path / "home"
    corpus.mkdir()
    for i, name in enumerate(UNTOUCHED + REPLACED):
        (corpus / f"d{i:02d}.md").write_text(_doc(i, name), encoding="utf-8")
    assert ingest(paths=[str(corpus)], kb=KB, home=str(home)).added == 12

    # the quiet run: each distinct question once
    distinct = tmp_path / "distinct.jsonl"
    _questions(distinct, UNTOUCHED + REPLACED, 3 * 12)
    quiet = batch_qa(questions=str(distinct), kb=KB, home=str(home), out=str(tmp_path / "quiet.jsonl"))
    assert quiet.run.failed == 0
    quiet_by_text = {q: (a, c) for q, a, c in _answers(tmp_path / "quiet.jsonl").values()}

    # the writer: replaces two documents, adds two, and pauses inside its index stage until released
    for i, name in enumerate(REPLACED, start=len(UNTOUCHED)):
        (corpus / f"d{i:02d}.md").write_text(_doc(i, name, "二"), encoding="utf-8")
    for i, name in enumerate(ADDED, start=20):
        (corpus / f"n{i:02d}.md").write_text(_doc(i, name), encoding="utf-8")
    paused, release, log = tmp_path / "paused", tmp_path / "release", tmp_path / "ingest.log"
    with log.open("wb") as out:
        writer = subprocess.Popen(
            [sys.executable, "-m", "tests.flows.ingest_paused_in_index", "--home", str(home), "ingest", str(corpus),
             "--kb", KB], cwd=REPO, env={**_env(), "KBFLOW_TEST_PAUSED": str(paused),
                                         "KBFLOW_TEST_RELEASE": str(release)},
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not paused.exists():
            assert writer.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.05)
        # the writer has landed its new versions in DuckDB and is half-way through Chroma: a reader
        # sees the last published state, and does not disturb it
        assert db.query(home / "kbflow.duckdb", "SELECT count(*) FROM documents WHERE kb = ?", [KB])[1] == [(12,)]

        questions = tmp_path / "questions.jsonl"
        about = _questions(questions, UNTOUCHED + REPLACED + ADDED, 500)
        released = threading.Event()

        def release_midway(update) -> None:  # the writer finishes (and publishes) while the ask runs
            if update.stage == "questions" and update.done >= 100 and not released.is_set():
                released.set()
                release.touch()

        with listening(release_midway):
            run = batch_qa(questions=str(questions), kb=KB, home=str(home), out=str(tmp_path / "busy.jsonl")).run
        release.touch()
        assert writer.wait(300) == 0, log.read_text()[-3000:]
    finally:
        release.touch()
        if writer.poll() is None:
            writer.kill()
    assert released.is_set()
    assert (run.status, run.questions, run.failed) == ("completed", 500, 0)
    busy = _answers(tmp_path / "busy.jsonl")
    assert len(busy) == 500
    untouched = [qid for qid, name in about.items() if name in UNTOUCHED]
    assert len(untouched) > 300
    for qid in untouched:
        question, answer, citations = busy[qid]
        assert (answer, citations) == quiet_by_text[question], qid
    # the run landed beside the writer, and the writer's run is whole
    assert db.query(home / "kbflow.duckdb", "SELECT count(*) FROM qa_results WHERE run_id = ?",
                    [run.run_id])[1] == [(500,)]
    assert db.query(home / "kbflow.duckdb", "SELECT status, files_added, files_changed FROM ingest_runs "
                                            "ORDER BY started_at")[1][-1] == ("completed", 2, 2)
    assert db.query(home / "kbflow.duckdb", "SELECT count(*) FROM documents WHERE kb = ?", [KB])[1] == [(14,)]
    # the next ask sees the new documents
    after = batch_qa(questions=str(distinct), kb=KB, home=str(home), out=str(tmp_path / "after.jsonl"),
                     sources=["n20.md"]).run
    assert after.failed == 0 and after.answered > 0


def test_wait_covers_the_duckdb_file_lock_of_another_process(prefect_harness, tmp_path):
    corpus, home = tmp_path / "corpus", tmp_path / "home"
    corpus.mkdir()
    (corpus / "a.md").write_text(_doc(1, "锅炉"), encoding="utf-8")
    assert ingest(paths=[str(corpus)], kb=KB, home=str(home)).added == 1
    (corpus / "b.md").write_text(_doc(2, "水泵"), encoding="utf-8")
    # another process (an old kbflow, a DuckDB shell) holds the warehouse file for 3 s
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
                               "print('held', flush=True); time.sleep(3)", str(home / "kbflow.duckdb")],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    # readers do not wait for it: they read the published generation while the holder still holds the file
    assert db.query(home / "kbflow.duckdb", "SELECT count(*) FROM documents")[1] == [(1,)]
    assert holder.poll() is None
    started = time.monotonic()
    summary = ingest(paths=[str(corpus)], kb=KB, home=str(home), lock_wait_s=30)
    assert summary.added == 1 and not summary.failed and time.monotonic() - started > 1
    assert holder.wait(10) == 0
    shutil.rmtree(corpus)
