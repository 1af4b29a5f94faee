"""The index stream: landed batches are indexed on a thread, those that queued up while it was busy together."""
from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa

from schemas.settings import load_settings
from tasks.index.sync import Indexer
from tasks.ingest.index_stream import IndexStream


class HeldIndexer:
    """Records each `index_documents` call; the first one waits until `release` is set."""

    def __init__(self) -> None:
        self.embedder = self.loaded_embedder = SimpleNamespace(threads=None)
        self.threads_seen: list[int | None] = []
        self.calls: list[list[str]] = []
        self.rows: list[list[str]] = []  # the sources whose rows came with them
        self.started, self.release = threading.Event(), threading.Event()

    def index_documents(self, items, rows):
        self.calls.append([source for source, _ in items])
        self.rows.append([] if rows is None else sorted(rows.column("source").to_pylist()))
        self.threads_seen.append(self.embedder.threads)
        self.started.set()
        self.release.wait(10)
        return {f"{source}": "bad" for source, _ in items if source.startswith("bad")}


def rows(*sources: str) -> pa.Table:
    return pa.table({"source": list(sources), "content": ["x"] * len(sources)})


def landed(*names: str) -> list[tuple[str, Path]]:
    return [(name, Path(f"/nowhere/{name}.parquet")) for name in names]


def test_batches_queued_while_one_is_indexed_are_indexed_together(tmp_path):
    stream = IndexStream(load_settings(tmp_path), "kb")
    stream.indexer = indexer = HeldIndexer()
    stream.put(landed("a1", "a2"))
    assert indexer.started.wait(10)
    stream.put(landed("b1"), rows("b1"))  # these land while "a" is embedded
    stream.put(landed("c1", "bad-c2"))
    stream.put(landed("d1"), rows("d1"))
    indexer.release.set()
    stream.close(timeout=10)
    assert indexer.calls == [["a1", "a2"], ["b1", "c1", "bad-c2", "d1"]]
    assert indexer.rows == [[], ["b1", "d1"]]  # each batch's rows go with its documents
    assert stream.errors == {"bad-c2": "bad"}  # one document's failure stays its own


def test_a_merged_call_stops_at_a_group_of_documents(tmp_path, monkeypatch):
    monkeypatch.setattr(Indexer, "GROUP_CHUNKS", 3)
    stream = IndexStream(load_settings(tmp_path), "kb")
    stream.indexer = indexer = HeldIndexer()
    stream.put(landed("a"))
    assert indexer.started.wait(10)
    for name in ("b", "c", "d", "e", "f"):
        stream.put(landed(name))
    indexer.release.set()
    stream.close(timeout=10)
    assert indexer.calls == [["a"], ["b", "c", "d"], ["e", "f"]]


def test_the_embedder_keeps_to_one_thread_until_parsing_is_over(tmp_path):
    stream = IndexStream(load_settings(tmp_path), "kb")
    stream.indexer = indexer = HeldIndexer()
    stream.start()
    stream.put(landed("a"))
    assert indexer.started.wait(10)
    assert indexer.threads_seen == [1]  # worker processes parse beside it
    stream.put(landed("b"))
    indexer.release.set()
    stream.close(timeout=10)  # the flow closes the stream when the last batch has landed
    assert indexer.embedder.threads is None  # every core again, for what is left
    assert indexer.calls == [["a"], ["b"]]
