"""Batches of files: planned by count and bytes, prepared in worker processes (the same result as
in-process, a file over its time limit fails alone with its reason), landed in one DuckDB
transaction with a per-document fallback (a bad document fails alone, its old version whole)."""
from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.chunk import chunks_path
from schemas.settings import load_settings
from tasks.common.files import file_md5
from tasks.ingest import workers
from tasks.ingest.discover import SourceFile
from tasks.ingest.land import land_documents
from tasks.ingest.manifest import ADDED, Todo
from warehouse import db


def _todo(path: Path, text: str) -> Todo:
    path.write_text(text, encoding="utf-8")
    return Todo(SourceFile(path, path.name, file_md5(path), path.stat().st_size, "markdown", "markdown"), ADDED)


def _corpus(tmp_path: Path, n: int) -> list[Todo]:
    (tmp_path / "corpus").mkdir(exist_ok=True)
    return [_todo(tmp_path / "corpus" / f"doc{i}.md", f"# 第{i}篇\n\n水库第{i}号闸门的巡查记录，共{i}段。\n")
            for i in range(n)]


def slow_prepare(todo: Todo, kb: str, settings):
    """In a worker process: a file named slow* takes far longer than its time limit."""
    if todo.src.path.name.startswith("slow"):
        time.sleep(60)
    return workers.prepare_file(todo, kb, settings)


def test_plan_batches_by_count_bytes_and_minimum(tmp_path, settings):
    todo = _corpus(tmp_path, 10)
    sizes = [len(b) for b in workers.plan_batches(todo, settings.replace(ingest_batch_files=4))]
    assert sizes == [4, 4, 2]
    assert [len(b) for b in workers.plan_batches(todo, settings, min_batches=4)] == [3, 3, 3, 1]
    one_file = todo[0].src.size_bytes / 1024 / 1024
    assert {len(b) for b in workers.plan_batches(todo, settings.replace(ingest_batch_mb=one_file * 2.5))} == {2}
    assert workers.plan_batches([], settings) == []


def test_worker_processes_prepare_what_the_flow_process_would_and_a_slow_file_fails_alone(tmp_path, monkeypatch):
    todo = _corpus(tmp_path, 2) + [_todo(tmp_path / "corpus" / "blank.md", "  \n\n ")]
    slow = _todo(tmp_path / "slow.md", "# 慢\n\n永远解析不完。\n")
    inline_settings = load_settings(tmp_path / "inline")
    pooled_settings = load_settings(tmp_path / "pooled").replace(file_time_limit_s=3)
    inline = [workers.prepare_file(t, "kb", inline_settings) for t in todo]
    monkeypatch.setattr(workers, "prepare_file", slow_prepare)  # the pool hands this to its workers
    pool = workers.FilePool(1)  # one worker: the others wait for it to be killed and replaced
    started = time.monotonic()
    try:
        timed_out, *pooled = pool.collect([slow, *todo], pool.submit([slow, *todo], "kb", pooled_settings),
                                          pooled_settings)
    finally:
        pool.stop()
    assert time.monotonic() - started < 40
    assert (timed_out.ok, timed_out.stage, timed_out.error_kind) == (False, "parse", "FileTimeLimitError")
    assert "took longer than 3 s (the file_time_limit_s setting)" in timed_out.reason

    assert [p.ok for p in pooled] == [True, True, False]
    assert [(p.stage, p.error_kind, p.reason) for p in pooled] == [(p.stage, p.error_kind, p.reason) for p in inline]
    assert pooled[2].error_kind == "EmptyDocumentError"
    for a, b in zip(inline[:2], pooled[:2]):
        assert (a.chunked.chunk_count, a.parsed.key) == (b.chunked.chunk_count, b.parsed.key)
        assert pq.read_table(a.chunked.chunks_path).equals(pq.read_table(b.chunked.chunks_path))
        with pq.ParquetFile(b.chunked.chunks_path) as written:  # the rows came back as written, for the index stream
            assert b.chunked.rows.equals(written.read())
    batch = workers.batch_rows(pooled)  # the batch's rows as one table, the failed file's absent
    assert batch.column("source").num_chunks == 1  # combined: the files' own small tables can be freed
    assert batch.equals(pa.concat_tables([b.chunked.rows for b in pooled[:2]]))
    assert workers.batch_rows([timed_out]) is None


def _prepared(settings, todo):
    return [workers.prepare_file(t, "kb", settings) for t in todo]


def test_a_batch_lands_in_one_transaction(tmp_path, settings, monkeypatch):
    prepared = _prepared(settings, _corpus(tmp_path, 3))

    def one_by_one(*args, **kwargs):
        raise AssertionError("a good batch lands in one transaction")

    monkeypatch.setattr(db, "replace_document", one_by_one)
    assert workers.land_batch(prepared, "kb", "r1", settings, "key") == {}
    assert db.query(settings.db_path, "SELECT count(*) FROM documents")[1] == [(3,)]
    assert db.query(settings.db_path, "SELECT count(*) FROM chunks")[1] == [(3,)]
    assert {e.status for e in db.load_manifest(settings.db_path, "kb")} == {"landed"}


def test_a_bad_document_in_a_batch_fails_alone_and_keeps_its_old_version(tmp_path, settings):
    todo = _corpus(tmp_path, 3)
    first = _prepared(settings, todo)
    assert land_documents([(p.todo.src, p.parsed, p.chunked) for p in first], "kb", "r1", settings) == {}
    # new versions of all three; the middle one's Parquet is broken after chunking
    changed = [_todo(t.src.path, t.src.path.read_text(encoding="utf-8") + "\n新增一段内容。\n") for t in todo]
    second = _prepared(settings, changed)
    second[1].chunked.chunks_path.write_bytes(b"not parquet")
    errors = workers.land_batch(second, "kb", "r2", settings, "key")
    assert list(errors) == ["doc1.md"]
    docs = dict(db.query(settings.db_path, "SELECT source, doc_md5 FROM documents")[1])
    assert docs == {"doc0.md": changed[0].src.md5, "doc1.md": todo[1].src.md5, "doc2.md": changed[2].src.md5}
    rows = dict(db.query(settings.db_path, "SELECT source, count(*) FROM chunks GROUP BY source")[1])
    assert rows == {"doc0.md": 1, "doc1.md": 1, "doc2.md": 1}  # each all old or all new
    assert not chunks_path(settings.chunks_dir, "kb", todo[0].src.md5).exists()  # replaced: its Parquet went
    assert chunks_path(settings.chunks_dir, "kb", todo[1].src.md5).exists()  # kept: still landed
