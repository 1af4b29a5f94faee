"""`kbflow server`: one Prefect server for a home that later commands find and reuse.

Without it every `kbflow` command that runs a flow starts Prefect's temporary server (a uvicorn
subprocess, database migrations) and stops it at exit: ~10 s of a short `kbflow ask`. The server
runs in the `kbflow server` process itself (no child to outlive it) and records its URL in
HOME/prefect-server.json while it answers; a command finds the record, checks that the process is
alive and answers /health, and sets PREFECT_API_URL before Prefect is imported. An explicit
PREFECT_API_URL (a server of your own, Prefect Cloud) always wins.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.request
from pathlib import Path

RECORD = "prefect-server.json"
HEALTH_TIMEOUT_S = 1.0


def record_path(home: Path) -> Path:
    return home / RECORD


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def healthy(api_url: str, timeout: float = HEALTH_TIMEOUT_S) -> bool:
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=timeout) as response:  # noqa: S310 - 127.0.0.1
            return response.status == 200
    except (OSError, ValueError):
        return False


def running_server(home: Path) -> str | None:
    """The API URL of this home's `kbflow server`, when one is running and answers."""
    try:
        record = json.loads(record_path(home).read_text(encoding="utf-8"))
        url, pid = str(record["api_url"]), int(record["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return url if _alive(pid) and healthy(url) else None


def use_running_server(home: Path) -> str | None:
    """Point Prefect at this home's running server (unless PREFECT_API_URL is set already); the URL used."""
    if os.environ.get("PREFECT_API_URL"):
        return os.environ["PREFECT_API_URL"]
    url = running_server(home)
    if url:
        os.environ["PREFECT_API_URL"] = url
    return url


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def api_url_for(host: str, port: int) -> str:
    return f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}/api"


def serve(home: Path, *, host: str = "127.0.0.1", port: int = 0, ui: bool = False,
          on_ready=None) -> None:
    """Run the Prefect server in this process until SIGINT/SIGTERM; the record exists while it answers."""
    if running_server(home):
        from schemas.errors import BusyError

        raise BusyError(f"a kbflow server for {home} is already running at {running_server(home)}")
    os.environ.setdefault("PREFECT_UI_ENABLED", "1" if ui else "0")
    os.environ.pop("PREFECT_API_URL", None)  # the server must not try to reach itself elsewhere
    import uvicorn

    from prefect.server.api.server import create_app

    port = port or free_port()
    api_url = api_url_for(host, port)
    record = record_path(home)
    home.mkdir(parents=True, exist_ok=True)

    def publish() -> None:
        for _ in range(600):
            if healthy(api_url, timeout=0.5):
                tmp = record.with_suffix(".tmp")
                tmp.write_text(json.dumps({"api_url": api_url, "pid": os.getpid(), "started": time.time()}),
                               encoding="utf-8")
                os.replace(tmp, record)
                if on_ready:
                    on_ready(api_url)
                return
            time.sleep(0.2)

    threading.Thread(target=publish, daemon=True, name="kbflow-server-publish").start()
    # uvicorn re-raises a SIGTERM it handled once it has shut down: as SystemExit, so the record goes
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        uvicorn.run(create_app(final=True), host=host, port=port, log_level="error", lifespan="on")
    finally:
        try:
            if json.loads(record.read_text(encoding="utf-8")).get("pid") == os.getpid():
                record.unlink()
        except (OSError, ValueError):
            pass


# ------------------------------------------------------------------------------------------------
# the temporary server of a command run without `kbflow server`

STARTUP_TIMEOUT_ENV = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"


class TemporaryServer:
    """What Prefect starts when there is no API URL (uvicorn serving its API on the default database,
    UI off, ephemeral services only), but started by the command itself before it imports Prefect,
    so the ~5 s of the server's start overlap the command's own imports and model load; stopped at
    exit without waiting for it (the watchdog of flows/__init__.py ends it if kbflow dies first)."""

    def __init__(self, *, quiet: bool = True):
        import atexit
        import subprocess

        self.port = free_port()
        self.api_url = api_url_for("127.0.0.1", self.port)
        env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
        env.update(PREFECT_UI_ENABLED="0", PREFECT__SERVER_EPHEMERAL="1", PREFECT__SERVER_FINAL="1")
        output = subprocess.DEVNULL if quiet else None
        self.process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--factory", "prefect.server.api.server:create_app", "--host",
             "127.0.0.1", "--port", str(self.port), "--log-level", "error", "--lifespan", "on"],
            env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=output)
        from flows import start_watchdog

        start_watchdog(self.process.pid)
        atexit.register(self.stop)

    def wait(self) -> str:
        """The API URL once the server answers; an error if it exits or does not answer in time."""
        timeout = float(os.environ.get(STARTUP_TIMEOUT_ENV) or 120)
        deadline = time.monotonic() + timeout
        while not healthy(self.api_url, timeout=0.5):
            if self.process.poll() is not None:
                raise RuntimeError(f"Prefect's temporary server exited with code {self.process.returncode} "
                                   "(run again with --verbose to see its output)")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Prefect's temporary server did not answer within {timeout:.0f} s "
                                   f"({STARTUP_TIMEOUT_ENV})")
            time.sleep(0.05)
        return self.api_url

    def stop(self) -> None:
        if self.process.poll() is None:
            drain_prefect_workers()  # what is queued for this server goes before it does
            self.process.terminate()  # no wait: it stops on its own, like a Ctrl-C'd server


DRAIN_TIMEOUT_S = 5.0


def drain_prefect_workers(timeout: float = DRAIN_TIMEOUT_S) -> None:
    """Send the logs and events Prefect's workers still hold. They drain in Prefect's own exit
    handler, which may run after the server's stop (exit handlers run last registered first, and
    Prefect's loop may register before the server starts): the last logs then failed, printing
    "--- Error logging to API ---" after a command's results (seen in 1 of 4 `kbflow ask` runs)."""
    for module, name in (("prefect.logging.handlers", "APILogWorker"), ("prefect.events.worker", "EventsWorker")):
        if module in sys.modules:  # a command that never used Prefect has nothing queued
            getattr(sys.modules[module], name).drain_all(timeout=timeout)
