"""What task modules log through `logging.getLogger("kbflow.…")` is stored with the Prefect flow
run (flows/__init__ attaches those loggers to Prefect's API handler), whichever of prefect and
flows a process imports first."""
from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
from prefect.logging.handlers import APILogHandler

from flows.ingest import ingest
from tests.conftest import REPO


def _flow_run_logs(flow_run_id) -> list:
    APILogHandler().flush()  # the handler sends logs in batches: send what is queued before reading
    with get_client(sync_client=True) as client:
        return client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))


def test_a_task_modules_warning_is_in_the_ingest_flow_runs_log(prefect_harness, tmp_path, monkeypatch):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "levels.md").write_text("# 水位\n\n| 站点 | 水位 |\n|---|---|\n| 甲 | 12.3 |\n", encoding="utf-8")
    # a malformed endpoint: tasks/ingest/enrich.py disables enrichment and says so on "kbflow.enrich"
    monkeypatch.setenv("KBFLOW_LLM_BASE_URL", "ftp://offline.invalid")
    monkeypatch.setenv("KBFLOW_LLM_MODEL", "table-summarizer")

    state = ingest(paths=[str(corpus)], kb="kb", home=str(tmp_path / "home"), return_state=True)

    assert state.result().landed == 1
    logs = [log for log in _flow_run_logs(state.state_details.flow_run_id) if log.name == "kbflow.enrich"]
    assert [(log.level, log.message) for log in logs] == [
        (logging.WARNING, "enrichment disabled for this document: llm_base_url must be an http(s) URL, "
                          "got 'ftp://offline.invalid'")]
    assert logs[0].task_run_id is not None  # logged inside the chunk task's run


@pytest.mark.parametrize("first", ["prefect", "flows"])
def test_kbflow_loggers_get_prefects_api_handler_whichever_is_imported_first(first):
    code = (f"import {first}, flows, logging, prefect.main\n"
            "from prefect.logging.handlers import APILogHandler\n"
            "print(sum(isinstance(h, APILogHandler) for h in logging.getLogger('kbflow').handlers))")
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_LOGGING_EXTRA_LOGGERS"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**env, "PYTHONPATH": str(REPO)},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"
