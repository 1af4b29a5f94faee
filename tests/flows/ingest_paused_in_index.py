"""`kbflow ingest` that stops mid-index: after its first Chroma upsert it touches `$KBFLOW_TEST_PAUSED`
and waits until `$KBFLOW_TEST_RELEASE` exists (unset: until killed). test_faults.py kills it there,
or starts a second ingest while it surely holds the lock, so neither test depends on how fast the
machine is.

    python -m tests.flows.ingest_paused_in_index --home DIR ingest PATH --kb NAME
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from flows import cli
from tasks.index import vector_index


def _pause_after_first_upsert(upsert):
    paused = [False]

    def pausing(*args, **kwargs):
        update = upsert(*args, **kwargs)
        if not paused[0]:
            paused[0] = True
            Path(os.environ["KBFLOW_TEST_PAUSED"]).touch()
            release = os.environ.get("KBFLOW_TEST_RELEASE")
            while not (release and Path(release).exists()):
                time.sleep(0.05)
        return update

    return pausing


if __name__ == "__main__":  # MinerU's worker processes re-import this module: patch in the parent only
    vector_index.upsert_documents = _pause_after_first_upsert(vector_index.upsert_documents)
    sys.exit(cli.main(sys.argv[1:]))
