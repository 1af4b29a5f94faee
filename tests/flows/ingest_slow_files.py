"""`kbflow ingest` whose files each take `$KBFLOW_TEST_PREPARE_DELAY_S` seconds longer to prepare
in the worker processes, so that a test can stop it surely mid-run (test_sigterm.py).

    python -m tests.flows.ingest_slow_files --home DIR ingest PATH --kb NAME
"""
from __future__ import annotations

import os
import sys
import time

from tasks.ingest import workers

_prepare_file = workers.prepare_file


def slow_prepare(todo, kb, settings):
    """In a worker process (which imports this module by name, without running the CLI below)."""
    time.sleep(float(os.environ.get("KBFLOW_TEST_PREPARE_DELAY_S", "0.5")))
    return _prepare_file(todo, kb, settings)


if __name__ == "__main__":
    from flows import cli

    workers.prepare_file = slow_prepare  # what the flow process hands to its workers
    sys.exit(cli.main())  # no argv: a command line's exit, as `kbflow ingest` takes
