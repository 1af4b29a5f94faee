"""What real operators do to a home (issue 16 items 2-8, the ops part), each a test on small files:
source identity across runs and folder moves (with a home made by main's code), bounded inputs
(zip bombs, non-UTF-8 names, settings out of range), exit codes and states (index failure, a
killed `ask`, no orphaned Prefect server), a read-only home, secrets, settings from the home."""
from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from flows.batch_qa import batch_qa
from flows.cli import main
from flows.ingest import ingest
from schemas.settings import Settings, load_settings
from tasks.index import vector_index
from tasks.index.sync import check
from tests.conftest import REPO
from tests.http_fakes import FakeServer, chat_reply
from warehouse import db

KB = "ops"
MAIN_CHECKOUT = Path(os.environ.get("KBFLOW_MAIN_CHECKOUT", "/work/main"))


def _md(name: str, body: str = "") -> str:
    return f"# {name}说明\n\n{name}的额定功率为 {len(name) * 7} 千瓦，检修周期为三个月。{body}\n"


def _rows(home: Path, sql: str, params=None) -> list[tuple]:
    return db.query(home / "kbflow.duckdb", sql, params)[1]


def _env(**extra: str) -> dict[str, str]:
    from prefect.settings import PREFECT_API_URL

    return {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "PYTHONUNBUFFERED": "1", **extra}


# ------------------------------------------------------------------------------------------------ item 2


def test_same_name_in_two_folders_and_a_moved_folder_in_a_home_made_by_main(prefect_harness, tmp_path):
    corpus, home = tmp_path / "corpus", tmp_path / "home"
    for dept, text in (("dept_a", "甲部门"), ("dept_b", "乙部门")):
        (corpus / dept).mkdir(parents=True)
        (corpus / dept / "说明.md").write_text(_md(text), encoding="utf-8")
    # the home is made by the code before this change (main's checkout), when it is there
    if (MAIN_CHECKOUT / "flows" / "cli.py").is_file():
        made = subprocess.run([sys.executable, "-m", "flows.cli", "--home", str(home), "ingest",
                               str(corpus / "dept_a"), "--kb", KB], cwd=MAIN_CHECKOUT,
                              env=_env(PYTHONPATH=str(MAIN_CHECKOUT)), capture_output=True, text=True, timeout=600)
        assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    else:
        ingest(paths=[str(corpus / "dept_a")], kb=KB, home=str(home))
        with db.transaction(home / "kbflow.duckdb") as con:  # main records no root: forget ours
            con.execute("DELETE FROM kb_roots")
    assert _rows(home, "SELECT source FROM documents") == [("说明.md",)]

    # the other department's file of the same name, in a separate run: both survive, each its own name
    second = ingest(paths=[str(corpus / "dept_b")], kb=KB, home=str(home))
    assert [(o.source, o.status, o.change) for o in second.outcomes] == [("../dept_b/说明.md", "landed", "added")]
    assert _rows(home, "SELECT source FROM documents ORDER BY source") == [("../dept_b/说明.md",), ("说明.md",)]
    assert _rows(home, "SELECT root FROM kb_roots WHERE kb = ?", [KB]) == [(str(corpus / "dept_a"),)]
    third = ingest(paths=[str(corpus / "dept_a")], kb=KB, home=str(home))  # the first again: unchanged
    assert [(o.source, o.status) for o in third.outcomes] == [("说明.md", "skipped")]

    # moving a folder is a rename: same MD5, same chunks, no delete + add
    (md5,) = _rows(home, "SELECT doc_md5 FROM documents WHERE source = '../dept_b/说明.md'")[0]
    shutil.move(corpus / "dept_b", corpus / "dept_c")
    moved = ingest(paths=[str(corpus / "dept_c")], kb=KB, home=str(home))
    assert [(o.source, o.status, o.change) for o in moved.outcomes] == [("../dept_c/说明.md", "landed", "renamed")]
    assert moved.removed == 0 and moved.added == 0
    assert _rows(home, "SELECT source, doc_md5 FROM documents WHERE doc_md5 = ?", [md5]) == [("../dept_c/说明.md", md5)]
    assert _rows(home, "SELECT count(*) FROM manifest WHERE kb = ? AND md5 = ?", [KB, md5]) == [(1,)]
    settings = load_settings(home)
    sources = {m["source"] for m in vector_index.collection(settings, KB).get(include=["metadatas"])["metadatas"]}
    assert sources == {"说明.md", "../dept_c/说明.md"} and check(settings, KB).ok


def test_a_root_set_by_the_user_names_sources_by_their_folders(prefect_harness, tmp_path, monkeypatch):
    corpus, home = tmp_path / "corpus", tmp_path / "home"
    for dept in ("dept_a", "dept_b"):
        (corpus / dept).mkdir(parents=True)
        (corpus / dept / "说明.md").write_text(_md(dept), encoding="utf-8")
    monkeypatch.setenv("KBFLOW_SOURCE_ROOT", str(corpus))
    ingest(paths=[str(corpus / "dept_a")], kb=KB, home=str(home))
    ingest(paths=[str(corpus / "dept_b")], kb=KB, home=str(home))
    assert _rows(home, "SELECT source FROM documents ORDER BY 1") == [("dept_a/说明.md",), ("dept_b/说明.md",)]


# ------------------------------------------------------------------------------------------------ item 3


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_zip_bombs_and_non_utf8_names_are_recorded_and_the_run_goes_on(prefect_harness, tmp_path, monkeypatch):
    corpus, home = tmp_path / "corpus", tmp_path / "home"
    corpus.mkdir()
    (corpus / "good.md").write_text(_md("水泵"), encoding="utf-8")
    # a DOCX whose document.xml unpacks to 64 MB (a 64 KB file): over a 16 MB limit
    _zip(corpus / "bomb.docx", {"[Content_Types].xml": b"<Types/>", "word/document.xml": b"\0" * (64 << 20)})
    _zip(corpus / "many.xlsx", {"[Content_Types].xml": b"<Types/>", **{f"xl/m{i}.xml": b"x" for i in range(40)}})
    with open(os.fsencode(corpus) + b"/bad\xff\xfe.md", "wb") as fh:  # not valid UTF-8
        fh.write(_md("风机").encode("utf-8"))
    monkeypatch.setenv("KBFLOW_MAX_UNPACKED_MB", "16")
    monkeypatch.setenv("KBFLOW_MAX_ZIP_MEMBERS", "30")
    started = time.monotonic()
    summary = ingest(paths=[str(corpus)], kb=KB, home=str(home))
    assert time.monotonic() - started < 120
    assert summary.landed == 1 and summary.failed == 3 and summary.index.chunks > 0
    failures = {Path(p).name: (kind, reason) for p, kind, reason in
                _rows(home, "SELECT path, error_kind, reason FROM ingest_failures")}
    assert failures["bomb.docx"][0] == "ArchiveTooLargeError" and "unpacks to 64 MB" in failures["bomb.docx"][1]
    assert failures["many.xlsx"][0] == "ArchiveTooLargeError" and "41 members" in failures["many.xlsx"][1]
    assert failures["bad\\xff\\xfe.md"] == ("UnsupportedFileError", failures["bad\\xff\\xfe.md"][1])
    assert "not valid UTF-8" in failures["bad\\xff\\xfe.md"][1]
    assert _rows(home, "SELECT status FROM ingest_runs") == [("completed_with_failures",)]
    again = ingest(paths=[str(corpus)], kb=KB, home=str(home))  # and every re-run goes on the same way
    assert again.skipped == 1 and again.failed == 3


@pytest.mark.parametrize("var, value, message", [
    ("KBFLOW_MAX_CHUNK_SIZE", "0", "setting max_chunk_size = 0 (from KBFLOW_MAX_CHUNK_SIZE): must be at least 1"),
    ("KBFLOW_MMR_LAMBDA", "1.5", "setting mmr_lambda = 1.5 (from KBFLOW_MMR_LAMBDA): must be between 0 and 1"),
    ("KBFLOW_LLM_TIMEOUT_S", "-3", "setting llm_timeout_s = -3.0 (from KBFLOW_LLM_TIMEOUT_S): must be above 0"),
    ("KBFLOW_TASK_RUNNER", "threads", "setting task_runner = 'threads' (from KBFLOW_TASK_RUNNER): must be one of"),
])
def test_settings_out_of_range_are_refused_at_start_in_one_line(tmp_path, monkeypatch, capsys, var, value, message):
    monkeypatch.setenv(var, value)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text(_md("阀门"), encoding="utf-8")
    assert main(["--home", str(tmp_path / "home"), "ingest", str(corpus), "--kb", KB]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {message}")
    assert not (tmp_path / "home").exists()  # refused before anything was created


@pytest.mark.parametrize("command", [["ask", "阀门的压力是多少？"], ["eval", "questions.jsonl"]])
def test_learned_fusion_coefficients_it_cannot_use_are_refused_at_start(tmp_path, monkeypatch, capsys, command):
    # scoring "first in one channel" above "first in both" would put every score off the rrf scale
    coef = Settings().retrieval.fusion_learned_coef
    monkeypatch.setenv("KBFLOW_FUSION_LEARNED_COEF", ",".join(str(-c) for c in coef))
    assert main(["--home", str(tmp_path / "home"), *command, "--kb", KB]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "fusion_learned_coef" in err[0] and "first in both channels" in err[0]


def test_a_toml_value_of_the_wrong_type_names_its_file(tmp_path):
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "kbflow.toml").write_text('[ingest]\nmax_chunk_size = "big"\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"max_chunk_size = 'big' \(from .*kbflow.toml\): must be an integer"):
        load_settings(tmp_path / "home")


# ------------------------------------------------------------------------------------------------ item 4


def test_an_ingest_whose_indexing_fails_exits_non_zero_and_its_flow_run_fails(prefect_harness, tmp_path,
                                                                              monkeypatch, capsys):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.sorting import FlowRunSort

    corpus, home = tmp_path / "corpus", tmp_path / "home"
    corpus.mkdir()
    (corpus / "a.md").write_text(_md("电机"), encoding="utf-8")

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(vector_index, "upsert_documents", disk_full)
    assert main(["--home", str(home), "ingest", str(corpus), "--kb", KB]) == 1
    captured = capsys.readouterr()
    assert "landed but not indexed" in captured.err and "No space left on device" in captured.err
    assert "a.md" in captured.out  # the outcome table is printed all the same
    with get_client(sync_client=True) as client:
        (latest,) = client.read_flow_runs(sort=FlowRunSort.START_TIME_DESC, limit=1)
    assert latest.state is not None and latest.state.is_failed()
    assert _rows(home, "SELECT status FROM manifest") == [("landed",)]  # the next run indexes it
    monkeypatch.undo()


def _children(pid: int) -> list[int]:
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                kids.append(int(stat.parent.name))
    return kids


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def test_a_killed_ask_is_marked_interrupted_and_its_temporary_server_dies_with_it(prefect_harness, tmp_path,
                                                                                   monkeypatch):
    corpus, home = tmp_path / "corpus", tmp_path / "home"
    corpus.mkdir()
    for name in ("锅炉", "水泵", "风机"):
        (corpus / f"{name}.md").write_text(_md(name), encoding="utf-8")
    ingest(paths=[str(corpus)], kb=KB, home=str(home))
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({"id": f"q{i}", "question": f"{'锅炉水泵风机'[i % 6]}的额定功率？"},
                                            ensure_ascii=False) + "\n" for i in range(400)), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}  # Prefect starts a temporary server
    env.update(PREFECT_HOME=str(tmp_path / "prefect"), KBFLOW_QA_BATCH_SIZE="5", PYTHONUNBUFFERED="1",
               PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="600")
    with (tmp_path / "ask.log").open("wb") as log:
        ask = subprocess.Popen([sys.executable, "-m", "flows.cli", "--home", str(home), "ask", str(questions),
                                "--kb", KB, "--out", str(tmp_path / "out.jsonl")], cwd=REPO, env=env,
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 400
        parts = home / "qa" / "runs"
        while not list(parts.glob("*/results-*.parquet")):
            assert ask.poll() is None and time.monotonic() < deadline, (tmp_path / "ask.log").read_text()[-3000:]
            time.sleep(0.05)
        servers = [p for p in _children(ask.pid) if b"uvicorn" in Path(f"/proc/{p}/cmdline").read_bytes()]
        assert servers, "no temporary Prefect server was started"
        os.kill(ask.pid, signal.SIGKILL)  # the CLI alone: its server is left to the watchdog
        ask.wait(30)
        deadline = time.monotonic() + 30
        while any(_alive(p) for p in servers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(p) for p in servers), "the temporary Prefect server outlived its CLI"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(ask.pid, signal.SIGKILL)
    (dead_run,) = [r for (r,) in _rows(home, "SELECT run_id FROM qa_runs WHERE status = 'running'")]
    assert (parts / dead_run).is_dir()

    questions.write_text(json.dumps({"id": "x", "question": "锅炉的额定功率？"}, ensure_ascii=False) + "\n",
                         encoding="utf-8")
    monkeypatch.setenv("KBFLOW_QA_BATCH_SIZE", "5")
    next_run = batch_qa(questions=str(questions), kb=KB, home=str(home), out=str(tmp_path / "next.jsonl")).run
    assert _rows(home, "SELECT status FROM qa_runs WHERE run_id = ?", [dead_run]) == [("interrupted",)]
    assert not (parts / dead_run).exists() and next_run.status == "completed"


# ------------------------------------------------------------------------------------------------ item 5


@contextlib.contextmanager
def read_only(home: Path):
    """`home` as a read-only folder: a read-only bind mount for root (who ignores modes), else chmod."""
    if os.geteuid() == 0:
        view = home.with_name(home.name + "-ro")
        view.mkdir()
        if subprocess.run(["mount", "--bind", str(home), str(view)], capture_output=True).returncode != 0:
            pytest.skip("root without mount rights: cannot make a read-only home")
        try:
            subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], check=True, capture_output=True)
            yield view
        finally:
            subprocess.run(["umount", str(view)], capture_output=True)
    else:
        modes = {p: p.stat().st_mode for p in [home, *home.rglob("*")]}
        for p in modes:
            p.chmod(modes[p] & ~0o222)
        try:
            yield home
        finally:
            for p, mode in modes.items():
                p.chmod(mode)


def test_readers_work_on_a_read_only_home(prefect_harness, tmp_path, capsys):
    corpus, home = tmp_path / "corpus", tmp_path / "home"
    corpus.mkdir()
    for name in ("锅炉", "水泵"):
        (corpus / f"{name}.md").write_text(_md(name), encoding="utf-8")
    ingest(paths=[str(corpus)], kb=KB, home=str(home))
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "a", "question": "锅炉的额定功率？"}, ensure_ascii=False) + "\n",
                         encoding="utf-8")
    def listing() -> list[str]:  # (SQLite's -wal/-shm files come and go with its connections)
        return sorted(str(p.relative_to(home)) for p in home.rglob("*") if not p.name.endswith(("-wal", "-shm")))

    before = listing()
    with read_only(home) as ro:
        assert not os.access(ro, os.W_OK)
        assert main(["--home", str(ro), "sql", "SELECT count(*) AS n FROM documents", "--format", "csv"]) == 0
        assert capsys.readouterr().out.split() == ["n", "2"]
        assert main(["--home", str(ro), "stats"]) == 0
        assert main(["--home", str(ro), "report", "--out", str(tmp_path / "report.html")]) == 0
        assert main(["--home", str(ro), "check", "--kb", KB]) == 0
        capsys.readouterr()
        assert main(["--home", str(ro), "ask", str(questions), "--kb", KB, "--out", str(tmp_path / "a.jsonl")]) == 0
        out = capsys.readouterr()
        assert "read-only" in out.out and "not landed" in out.out
    (row,) = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text(encoding="utf-8").splitlines()]
    assert row["citations"] and row["citations"][0].startswith("锅炉.md_")
    assert listing() == before  # nothing written
    assert (tmp_path / "report.html").stat().st_size > 1000


# ------------------------------------------------------------------------------------------------ item 6


def test_no_planted_key_reaches_the_home_the_results_or_the_prefect_database(prefect_harness, tmp_path,
                                                                              monkeypatch):
    from prefect.settings import PREFECT_API_DATABASE_CONNECTION_URL

    key = "sk-PLANTED-0123456789abcdef"
    corpus, home = tmp_path / "corpus", tmp_path / "home"
    corpus.mkdir()
    (corpus / "a.md").write_text(_md("储罐"), encoding="utf-8")
    ingest(paths=[str(corpus)], kb=KB, home=str(home))
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "a", "question": "储罐的额定功率？"}, ensure_ascii=False) + "\n",
                         encoding="utf-8")
    with FakeServer(lambda req: chat_reply("储罐的额定功率为 14 千瓦。")) as server:
        url = server.url.replace("http://", f"http://kbflow:{key}@") + "/v1"
        monkeypatch.setenv("KBFLOW_LLM_BASE_URL", url)
        monkeypatch.setenv("KBFLOW_LLM_MODEL", "fake")
        monkeypatch.setenv("KBFLOW_LLM_API_KEY", key)
        monkeypatch.setenv("KBFLOW_CRAG_MIN_ITEMS", "1")  # a one-chunk KB: its evidence goes to the LLM
        monkeypatch.setenv("KBFLOW_CRAG_MIN_COSINE", "-1")
        run = batch_qa(questions=str(questions), kb=KB, home=str(home), out=str(tmp_path / "out.jsonl")).run
    assert server.requests  # the key and the URL were used
    (stored,) = _rows(home, "SELECT settings_json FROM qa_runs WHERE run_id = ?", [run.run_id])[0]
    assert json.loads(stored)["llm_base_url"] == server.url + "/v1"
    prefect_db = Path(PREFECT_API_DATABASE_CONNECTION_URL.value().split("///", 1)[1])
    files = [p for p in home.rglob("*") if p.is_file()] + [tmp_path / "out.jsonl"]
    files += [p for p in prefect_db.parent.glob(prefect_db.name + "*") if p.is_file()]
    assert len(files) > 10 and prefect_db.is_file()
    leaks = [str(p) for p in files if key.encode() in p.read_bytes()]
    assert leaks == []


# ------------------------------------------------------------------------------------------------ item 7


def test_settings_come_from_the_home_from_any_folder_and_a_rechunk_is_announced(prefect_harness, tmp_path,
                                                                              monkeypatch):
    corpus, home, elsewhere = tmp_path / "corpus", tmp_path / "home", tmp_path / "elsewhere"
    corpus.mkdir()
    elsewhere.mkdir()
    home.mkdir()
    for name in ("锅炉", "水泵"):
        (corpus / f"{name}.md").write_text(_md(name, "正文" * 200), encoding="utf-8")
    (home / "kbflow.toml").write_text("[ingest]\nmax_chunk_size = 400\n", encoding="utf-8")
    (elsewhere / "kbflow.toml").write_text("[ingest]\nmax_chunk_size = 150\n", encoding="utf-8")
    monkeypatch.chdir(elsewhere)  # a stray ./kbflow.toml is ignored (with a warning)
    assert load_settings(home).ingest.max_chunk_size == 400
    assert load_settings(home, config_file=elsewhere / "kbflow.toml").ingest.max_chunk_size == 150
    ingest(paths=[str(corpus)], kb=KB, home=str(home))
    monkeypatch.chdir(tmp_path)
    assert ingest(paths=[str(corpus)], kb=KB, home=str(home)).skipped == 2  # same from another folder

    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())
    logging.getLogger("prefect.flow_runs").addHandler(handler)
    try:
        (home / "kbflow.toml").write_text("[ingest]\nmax_chunk_size = 300\n", encoding="utf-8")
        redone = ingest(paths=[str(corpus)], kb=KB, home=str(home))
    finally:
        logging.getLogger("prefect.flow_runs").removeHandler(handler)
    assert redone.changed == 2
    (note,) = [m for m in records if "re-chunked" in m]
    assert "2 document(s) will be re-chunked and re-embedded" in note
    assert records.index(note) < min(i for i, m in enumerate(records) if m.startswith("landed "))  # before the work
