"""Prefect flows: orchestration only (ingest, batch_qa, evaluate), their task runners, and the CLI."""
import logging
import os
import sys

# Messages that task modules log through `logging.getLogger("kbflow.…")` reach the Prefect
# flow-run log too (Prefect attaches its API handler to these loggers when it configures logging,
# which happens on its first import: so before any flow module imports prefect).
os.environ.setdefault("PREFECT_LOGGING_EXTRA_LOGGERS", "kbflow")
# ... and outside a flow run (`kbflow check`, a direct call) they only go to the console.
os.environ.setdefault("PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW", "ignore")
# The temporary server's telemetry heartbeat only logs SQLite lock errors here (offline machines).
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# The temporary server gets 20 s to start by default: a loaded machine misses it and the command dies.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")


def _attach_kbflow_loggers() -> None:
    """What Prefect does for an extra logger, done here when prefect was imported before this
    package (a script, a test module): it read its settings without the variable above."""
    from prefect.logging.configuration import ensure_logging_setup

    ensure_logging_setup()
    kbflow = logging.getLogger("kbflow")
    for handler in logging.getLogger("prefect.extra").handlers:
        if handler not in kbflow.handlers:
            kbflow.addHandler(handler)


if "prefect" in sys.modules:
    _attach_kbflow_loggers()


# ------------------------------------------------------------------------------------------------
# No temporary Prefect server outlives its kbflow process. Without PREFECT_API_URL, Prefect starts
# one as a child process and stops it at exit (atexit), which a `kill -9` skips: the orphan would
# keep its port and database. A watchdog process started beside the server stops it once kbflow is
# gone. Installed when Prefect imports its server module (importing it here would cost seconds).

_WATCHDOG = """
import os, signal, sys, time
parent, server = int(sys.argv[1]), int(sys.argv[2])
def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False
while alive(server):
    if not alive(parent):
        os.kill(server, signal.SIGTERM)
        for _ in range(50):
            if not alive(server):
                break
            time.sleep(0.1)
        else:
            os.kill(server, signal.SIGKILL)
        break
    time.sleep(0.5)
"""


def start_watchdog(server_pid: int) -> None:
    """A process that stops the server `server_pid` once this process is gone."""
    import subprocess

    subprocess.Popen([sys.executable, "-c", _WATCHDOG, str(os.getpid()), str(server_pid)],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True, close_fds=True)


def _watch_temporary_server(module) -> None:
    server_cls = module.SubprocessASGIServer
    start_server = server_cls._run_uvicorn_command

    def run_uvicorn_command(self):
        process = start_server(self)
        start_watchdog(process.pid)
        return process

    server_cls._run_uvicorn_command = run_uvicorn_command


class _OnServerImport:
    """A one-shot import hook: lets `prefect.server.api.server` load, then installs the watchdog."""

    NAME = "prefect.server.api.server"

    def find_spec(self, name, path=None, target=None):
        if name != self.NAME:
            return None
        import importlib.util

        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_watch(module):
            exec_module(module)
            _watch_temporary_server(module)

        spec.loader.exec_module = exec_and_watch
        return spec


if sys.platform.startswith("linux"):
    if "prefect.server.api.server" in sys.modules:
        _watch_temporary_server(sys.modules["prefect.server.api.server"])
    else:
        sys.meta_path.insert(0, _OnServerImport())
