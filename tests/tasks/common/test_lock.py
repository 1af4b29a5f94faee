"""The home's write lock: a second writer is refused with a message naming the first, or waits."""
from __future__ import annotations

import threading
import time

import pytest

from tasks.common.lock import IngestLockedError, read_holder, write_lock


def test_second_writer_is_refused_with_the_holders_name(tmp_path):
    with write_lock(tmp_path, kb="demo", run_id="run-one"):
        assert read_holder(tmp_path)["run_id"] == "run-one"
        with pytest.raises(IngestLockedError) as refused:
            with write_lock(tmp_path, kb="demo", run_id="run-two"):
                pytest.fail("two writers at once")
        message = str(refused.value)
        assert "kb 'demo'" in message and "run run-one" in message and "pid" in message
        assert "--wait SECONDS" in message and "did not start" in message
    assert read_holder(tmp_path) == {}  # released: the holder note is gone
    with write_lock(tmp_path, kb="demo", run_id="run-three"):
        pass


def test_a_waiting_writer_gets_the_lock_when_the_first_lets_go(tmp_path):
    held = threading.Event()

    def first() -> None:
        with write_lock(tmp_path, kb="demo", run_id="first"):
            held.set()
            time.sleep(1.0)

    thread = threading.Thread(target=first)
    thread.start()
    held.wait(10)
    started = time.monotonic()
    with write_lock(tmp_path, kb="demo", run_id="second", wait_s=30):
        assert read_holder(tmp_path)["run_id"] == "second"
    assert 0.3 < time.monotonic() - started < 20
    thread.join()


def test_a_wait_that_runs_out_says_so(tmp_path):
    with write_lock(tmp_path, kb="a", run_id="first", what="rm"):
        with pytest.raises(IngestLockedError, match=r"after waiting 0.5 s: kbflow rm of kb 'a'"):
            with write_lock(tmp_path, kb="b", run_id="second", wait_s=0.5):
                pass
