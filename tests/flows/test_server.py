"""`kbflow server` (flows/server.py): a command finds the home's running server by its record and
points Prefect at it; a stale record (dead process, no answer) is ignored; PREFECT_API_URL wins."""
from __future__ import annotations

import json
import os

from flows import server
from tests.http_fakes import FakeServer, Reply


def _record(home, url: str, pid: int) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / server.RECORD).write_text(json.dumps({"api_url": url, "pid": pid}), encoding="utf-8")


def test_a_running_server_is_found_and_used(tmp_path, monkeypatch):
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    with FakeServer(lambda req: Reply.json(True) if req.path == "/api/health" else Reply(404)) as fake:
        _record(tmp_path, f"{fake.url}/api", os.getpid())
        assert server.running_server(tmp_path) == f"{fake.url}/api"
        assert server.use_running_server(tmp_path) == f"{fake.url}/api"
        assert os.environ["PREFECT_API_URL"] == f"{fake.url}/api"
        assert fake.requests[-1].path == "/api/health"


def test_stale_records_are_ignored(tmp_path, monkeypatch):
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    assert server.use_running_server(tmp_path) is None  # no record
    with FakeServer(lambda req: Reply.json(True)) as fake:
        _record(tmp_path, f"{fake.url}/api", 2 ** 22 + 12345)  # no such process
        assert server.use_running_server(tmp_path) is None
    _record(tmp_path, f"http://127.0.0.1:{server.free_port()}/api", os.getpid())  # alive, but nothing answers
    assert server.use_running_server(tmp_path) is None and "PREFECT_API_URL" not in os.environ
    (tmp_path / server.RECORD).write_text("not json", encoding="utf-8")
    assert server.running_server(tmp_path) is None


def test_an_explicit_api_url_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("PREFECT_API_URL", "http://prefect.example:4200/api")
    _record(tmp_path, "http://127.0.0.1:1/api", os.getpid())
    assert server.use_running_server(tmp_path) == "http://prefect.example:4200/api"


def test_the_temporary_server_stops_after_prefects_queued_logs_and_events_are_sent(monkeypatch):
    """Prefect's workers drain in its own exit handler, which may run after the server's stop: the
    last logs then failed ("--- Error logging to API ---" after `kbflow ask`'s results)."""
    import sys
    import types

    calls = []

    def worker(name):
        return type(name, (), {"drain_all": classmethod(lambda cls, timeout=None: calls.append(cls.__name__))})

    for module, name in (("prefect.logging.handlers", "APILogWorker"), ("prefect.events.worker", "EventsWorker")):
        monkeypatch.setitem(sys.modules, module, types.SimpleNamespace(**{name: worker(name)}))
    process = types.SimpleNamespace(poll=lambda: None, terminate=lambda: calls.append("terminate"))
    server.TemporaryServer.stop(types.SimpleNamespace(process=process))
    assert calls == ["APILogWorker", "EventsWorker", "terminate"]
    # a server already gone is not waited on
    calls.clear()
    server.TemporaryServer.stop(types.SimpleNamespace(process=types.SimpleNamespace(poll=lambda: 0)))
    assert calls == []
