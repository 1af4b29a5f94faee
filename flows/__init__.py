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
