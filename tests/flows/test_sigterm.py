"""SIGTERM stops a running `kbflow ingest` within seconds at a safe point: its worker processes
are terminated, the batches landed stay, the run is recorded `interrupted`, and the next run
converges (every file landed and indexed, `kbflow check` consistent)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from schemas.settings import load_settings
from tasks.index.sync import check
from tests.conftest import REPO
from warehouse import db

FILES = 16


def _env(**extra: str) -> dict[str, str]:
    from prefect.settings import PREFECT_API_URL

    # PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL: the run's INFO lines on stdout (the test waits on one),
    # whatever an in-process `main()` of an earlier test left in os.environ
    return {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "PYTHONUNBUFFERED": "1",
            "KBFLOW_INGEST_BATCH_FILES": "2", "KBFLOW_INGEST_WORKERS": "2",
            "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "INFO", **extra}


def _group_gone(pgid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_sigterm_stops_an_ingest_within_seconds_and_the_next_run_converges(prefect_harness, tmp_path):
    corpus, home, log = tmp_path / "corpus", tmp_path / "home", tmp_path / "ingest.log"
    corpus.mkdir()
    for i in range(FILES):
        (corpus / f"doc{i:02d}.md").write_text(f"# 第{i}篇\n\n第{i}号闸门的巡查记录。\n", encoding="utf-8")
    args = ["--home", str(home), "ingest", str(corpus), "--kb", "kb"]
    with log.open("wb") as out:  # 16 files × 1 s on two workers: about 8 s of parsing left to stop
        proc = subprocess.Popen([sys.executable, "-m", "tests.flows.ingest_slow_files", *args], cwd=REPO,
                                env=_env(KBFLOW_TEST_PREPARE_DELAY_S="1"), stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    deadline = time.monotonic() + 300
    while "in one batch;" not in log.read_text(errors="replace"):
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    stopped = time.monotonic()
    rc = proc.wait(60)
    assert time.monotonic() - stopped < 15, log.read_text()[-3000:]  # ~4 s; CI machines are loaded
    assert rc == 143, log.read_text()[-3000:]
    assert _group_gone(proc.pid, 10)  # its worker processes too
    settings = load_settings(home)
    landed = db.query(settings.db_path, "SELECT count(*) FROM documents")[1][0][0]
    assert 2 <= landed < FILES
    assert db.query(settings.db_path, "SELECT status FROM ingest_runs")[1] == [("interrupted",)]
    assert db.query(settings.db_path, "SELECT count(*) FROM ingest_failures")[1] == [(0,)]  # a stop is no failure

    again = subprocess.run([sys.executable, "-m", "flows.cli", *args], cwd=REPO, env=_env(), capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert f"{FILES - landed} added, 0 changed, {landed} unchanged (skipped)" in " ".join(again.stdout.split())
    assert check(settings, "kb").ok and check(settings, "kb").duckdb == FILES
    assert db.query(settings.db_path, "SELECT status FROM ingest_runs ORDER BY started_at")[1] == [
        ("interrupted",), ("completed",)]
    assert {s for (s,) in db.query(settings.db_path, "SELECT status FROM manifest")[1]} == {"indexed"}
