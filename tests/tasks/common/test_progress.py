"""Progress: a stage's counts reach every listener in order, with an ETA, and `finished` always."""
from __future__ import annotations

import threading

import pytest

from tasks.common.progress import Update, listening, track


def test_listeners_receive_every_update_in_order():
    heard: list[Update] = []
    with listening(heard.append):
        with track("embed", total=10, unit="chunks") as bar:
            bar.advance(3)
            bar.set(7)
            bar.set(8, total=12)
            bar.advance()
    assert [(u.stage, u.done, u.total, u.unit, u.finished) for u in heard] == [
        ("embed", 0, 10, "chunks", False), ("embed", 3, 10, "chunks", False), ("embed", 7, 10, "chunks", False),
        ("embed", 8, 12, "chunks", False), ("embed", 9, 12, "chunks", False), ("embed", 9, 12, "chunks", True)]
    assert all(a.elapsed_s <= b.elapsed_s for a, b in zip(heard, heard[1:]))


def test_several_listeners_and_none_after_the_block():
    first, second = [], []
    with listening(first.append), listening(second.append):
        with track("parse") as bar:
            bar.advance()
    assert first == second and [u.done for u in first] == [0, 1, 1] and first[0].unit == "files"
    with track("parse") as bar:
        bar.advance()  # nobody listens: nothing is recorded, nothing fails
    assert len(first) == 3


def test_eta_at_the_rate_so_far():
    assert Update("land", 5, 20, "files", elapsed_s=10.0).eta_s == pytest.approx(30.0)
    assert Update("land", 25, 20, "files", elapsed_s=10.0).eta_s == 0.0  # past the total: nothing left
    assert Update("land", 0, 20, "files", elapsed_s=1.0).eta_s is None  # no rate yet
    assert Update("land", 5, None, "files", elapsed_s=1.0).eta_s is None  # no total
    assert Update("land", 5, 20, "files", elapsed_s=1.0, finished=True).eta_s is None


def test_finished_is_sent_when_the_stage_raises():
    heard: list[Update] = []
    with listening(heard.append), pytest.raises(ValueError, match="bad file"):
        with track("land", total=3) as bar:
            bar.advance()
            raise ValueError("bad file")
    assert [(u.done, u.finished) for u in heard] == [(0, False), (1, False), (1, True)]


def test_advance_from_many_threads_loses_no_count():
    heard: list[Update] = []
    threads, per_thread = 8, 500
    with listening(heard.append), track("questions", total=threads * per_thread, unit="questions") as bar:
        def work():
            for _ in range(per_thread):
                bar.advance()

        pool = [threading.Thread(target=work) for _ in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
    assert bar.done == threads * per_thread and heard[-1].done == threads * per_thread and heard[-1].finished
    assert len(heard) == threads * per_thread + 2  # the start, one per advance, the finish
