"""The warm `kbflow server` (flows/warm_server.py): a real server process for a home runs a client's
`ask` in its warm runner, with the same results as a local ask; a client it cannot serve exactly
(stale socket, other start-up settings) runs the command itself."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flows import warm_server
from flows.cli import main
from tests.flows.test_cli import ingested  # noqa: F401 - the module's own home with kb `t`

REPO = Path(__file__).resolve().parents[2]
QUESTIONS = '{"id": "a", "question": "东区的指标是多少？"}\n{"id": "b", "question": "第二段讲了什么？"}\n'


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}  # the server's own, not the harness's
    env["PYTHONPATH"] = str(REPO)
    return env


def _answers(path: Path) -> list[tuple]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [(r["qid"], r["answer"], r["citations"], r["confidence"]) for r in rows]


@pytest.fixture(scope="module")
def warm_home(ingested):  # noqa: F811
    """`kbflow server` running for the home until the module's tests are done: (home, server process)."""
    home = Path(ingested)
    server = subprocess.Popen([sys.executable, "-m", "flows.cli", "--home", str(home), "server"], env=_env(),
                              cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not warm_server.socket_path(home).exists():
        assert server.poll() is None, server.communicate()
        assert time.monotonic() < deadline, "the warm runner did not start"
        time.sleep(0.2)
    yield home, server
    server.terminate()
    server.wait(30)
    assert not warm_server.socket_path(home).exists() and not (home / "prefect-server.json").exists()


def test_a_forwarded_ask_gives_the_results_of_a_local_ask(warm_home, tmp_path, capsys, monkeypatch):
    home, server = warm_home
    monkeypatch.setenv("PREFECT_API_URL", "")  # the in-process ask below points it at the server: undone after
    questions = tmp_path / "q.jsonl"
    questions.write_text(QUESTIONS, encoding="utf-8")
    served, local = tmp_path / "served.jsonl", tmp_path / "local.jsonl"
    client = subprocess.run([sys.executable, "-m", "flows.cli", "--home", str(home), "ask", questions.name, "--kb", "t",
                             "--out", str(served)], env=_env(), cwd=tmp_path, capture_output=True, text=True,
                            timeout=300)
    assert client.returncode == 0, client.stderr
    assert "a  东区的指标是多少？" in client.stdout and "batch QA run" in client.stdout  # the child printed to our stdout
    assert main(["--home", str(home), "ask", str(questions), "--kb", "t", "--out", str(local), "--no-server"]) == 0
    capsys.readouterr()
    assert _answers(served) == _answers(local) and len(_answers(local)) == 2
    # the runner ran it (relative question path: the client's cwd was honoured), and it is still there
    os.set_blocking(server.stderr.fileno(), False)
    log = server.stderr.read() or ""
    assert f"ran `--home {home} ask q.jsonl --kb t --out {served}` (exit 0" in log
    assert server.poll() is None and warm_server.socket_path(home).exists()


def test_input_errors_come_back_with_their_exit_code(warm_home, tmp_path):
    home, _ = warm_home
    client = subprocess.run([sys.executable, "-m", "flows.cli", "--home", str(home), "ask", "nosuch.jsonl", "--kb", "t"],
                            env=_env(), cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert client.returncode == 2 and client.stderr.startswith("error: ") and "nosuch.jsonl" in client.stderr


def test_other_start_up_settings_run_locally(warm_home, monkeypatch):
    home, _ = warm_home
    argv = ["--home", str(home), "ask", "nosuch.jsonl", "--kb", "t"]
    monkeypatch.delenv("PREFECT_API_URL", raising=False)  # an earlier in-process command may have set it
    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "123")  # read by the model libraries once, at import
    code, why = warm_server.forward(home, argv)
    assert code is None and why == "other start-up settings than the kbflow server's (HF_HUB_ETAG_TIMEOUT)"
    monkeypatch.delenv("HF_HUB_ETAG_TIMEOUT")
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    assert warm_server.forward(home, argv) == (None, "PREFECT_API_URL names another Prefect server")


def test_a_stale_socket_falls_back_to_the_local_path(tmp_path, capsys):
    home = tmp_path / "home"
    home.mkdir()
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(warm_server.socket_path(home)))  # a runner that died without removing its socket
    stale.close()
    code, why = warm_server.forward(home, ["ask", "x.jsonl", "--kb", "t"])
    assert code is None and "stale" in why
    assert main(["--home", str(home), "--debug", "ask", str(tmp_path / "nosuch.jsonl"), "--kb", "t"]) == 2
    err = capsys.readouterr().err
    assert "debug: running here, not in the kbflow server: the kbflow server's socket does not answer" in err
    assert err.strip().endswith("no such question file") or "nosuch.jsonl" in err.splitlines()[-1]


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's new parent may never reap it)."""
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's prctl")
def test_a_request_child_ends_when_its_runner_dies():
    """A runner stopped mid-request must not leave its child running on (holding its run's lock)."""
    read_end, write_end = os.pipe()
    runner = os.fork()
    if runner == 0:  # plays the runner: forks a request child, then dies at once
        os.close(read_end)
        runner_pid = os.getpid()
        child = os.fork()
        if child == 0:
            warm_server._die_with_parent(runner_pid)
            time.sleep(120)
            os._exit(0)
        os.write(write_end, str(child).encode())
        os._exit(0)
    os.close(write_end)
    child = int(os.read(read_end, 32))
    os.close(read_end)
    os.waitpid(runner, 0)
    deadline = time.monotonic() + 20
    while _running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(child)
