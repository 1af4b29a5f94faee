"""`kbflow ingest` that stops mid-index: after its first Chroma upsert it touches `$KBFLOW_TEST_PAUSED`
and sleeps until killed. test_faults.py kills it there, so "killed while indexing" does not depend
on how fast the machine is.

    python -m tests.flows.ingest_paused_in_index --home DIR ingest PATH --kb NAME
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from flows import cli
from tasks import vector_index


def _pause_after_first_upsert(upsert):
    def paused(*args, **kwargs):
        update = upsert(*args, **kwargs)
        Path(os.environ["KBFLOW_TEST_PAUSED"]).touch()
        while True:
            time.sleep(60)
        return update  # never reached: the test kills the process

    return paused


if __name__ == "__main__":  # MinerU's worker processes re-import this module: patch in the parent only
    vector_index.upsert_document = _pause_after_first_upsert(vector_index.upsert_document)
    sys.exit(cli.main(sys.argv[1:]))
