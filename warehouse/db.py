"""The DuckDB warehouse: tables created from the pyarrow schemas in `schemas/`, views from `*.sql`.

A document's rows are replaced as a unit in one transaction. Connections are short-lived so
the single-writer file lock is held only while writing, and a writer waits (`BUSY_WAIT_S`) while
another process writes. Readers open a published generation instead (`warehouse.published`).
"""
from __future__ import annotations

import contextlib
import shutil
import time
from dataclasses import asdict
from importlib import resources
from pathlib import Path
from typing import Any, Iterator

import duckdb
import pyarrow as pa

from schemas.chunk import CHUNK_SCHEMA, chunks_path
from schemas.errors import WarehouseBusyError, WarehouseMissingError
from schemas.ingest import (DOCUMENT_SCHEMA, INGEST_FAILURE_SCHEMA, INGEST_RUN_SCHEMA, KB_ROOT_SCHEMA, MANIFEST_SCHEMA,
                            Document, IngestFailure, IngestRun, KBRoot, ManifestEntry)
from schemas.qa import QA_METRIC_SCHEMA, QA_RESULT_SCHEMA, QA_RUN_SCHEMA, QA_TRACE_SCHEMA, QAMetric, QARun
from tasks.common.lock import held_wait
from warehouse import published

TABLES: dict[str, pa.Schema] = {
    "documents": DOCUMENT_SCHEMA,
    "chunks": CHUNK_SCHEMA,
    "ingest_runs": INGEST_RUN_SCHEMA,
    "ingest_failures": INGEST_FAILURE_SCHEMA,
    "manifest": MANIFEST_SCHEMA,
    "qa_runs": QA_RUN_SCHEMA,
    "qa_results": QA_RESULT_SCHEMA,
    "qa_traces": QA_TRACE_SCHEMA,
    "qa_metrics": QA_METRIC_SCHEMA,
    "kb_roots": KB_ROOT_SCHEMA,
}
VIEW_FILES = ("views.sql", "quality.sql", "qa.sql")  # executed in this order


# Warehouse files whose tables and views this process has already ensured: a writer pays for the
# CREATE/DESCRIBE/view statements once per process, not on every connection (~40 ms each).
_ENSURED: set[str] = set()


def _ensure_tables(con: duckdb.DuckDBPyConnection) -> None:
    for name, schema in TABLES.items():
        empty = schema.empty_table()
        con.register("_empty", empty)
        con.execute(f'CREATE TABLE IF NOT EXISTS "{name}" AS SELECT * FROM _empty')
        # Columns added to a schema after the table was created: add them, never drop data.
        have = {row[0] for row in con.execute(f'DESCRIBE "{name}"').fetchall()}
        for col, col_type, *_ in con.execute("DESCRIBE SELECT * FROM _empty").fetchall():
            if col not in have:
                con.execute(f'ALTER TABLE "{name}" ADD COLUMN "{col}" {col_type}')
        con.unregister("_empty")
    for view_file in VIEW_FILES:
        con.execute(resources.files("warehouse").joinpath(view_file).read_text(encoding="utf-8"))


# How long a connection waits for another process to let go of the warehouse file (DuckDB: one
# writing process, or several reading ones). Writers hold it for one short transaction at a time;
# readers never hold it (they read a published generation), so waiting is always short.
BUSY_WAIT_S = 60.0


def set_busy_wait(seconds: float) -> None:
    """This process waits up to `seconds` for the warehouse file (`--wait` covers it too)."""
    global BUSY_WAIT_S
    BUSY_WAIT_S = max(0.0, float(seconds))


def _open(path: Path, read_only: bool, config: dict[str, Any], wait_s: float) -> duckdb.DuckDBPyConnection:
    deadline = time.monotonic() + wait_s
    pause = 0.02
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only, config=config)
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower():
                raise
            if time.monotonic() >= deadline:
                raise WarehouseBusyError(f"{path} stayed in use by another process for {wait_s:g} s "
                                         "(setting warehouse_wait_s, or --wait); retry when it finishes") from None
        time.sleep(pause)
        pause = min(0.5, pause * 2)


@contextlib.contextmanager
def connect(db_path: Path, *, read_only: bool = False, mark: bool = True,
            wait_s: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection. Readers get the published generation (`warehouse.published`); writers get the
    live file, waiting while another process writes, with the tables and views ensured first.
    `mark`: a writer's close makes the published generations stale (the snapshot copy's does not)."""
    if wait_s is None:  # `--wait` means waiting for everything: the write lock and DuckDB's file lock
        wait_s = max(BUSY_WAIT_S, held_wait(db_path.parent))
    if read_only and not db_path.exists():
        raise WarehouseMissingError(f"no warehouse at {db_path}: run `kbflow ingest` first")
    if read_only:
        # No file access beyond the database itself: `kbflow sql` cannot COPY TO or read files.
        config: dict[str, Any] = {"enable_external_access": False, "lock_configuration": True}
        for attempt in range(3):  # a generation deleted between naming and opening it: take the next
            path = published.reader_path(db_path)
            try:
                con = _open(path, True, config, wait_s)
                break
            except duckdb.IOException:
                if attempt == 2 or path == db_path:
                    raise
        try:
            yield con
        finally:
            con.close()
        return
    db_path.parent.mkdir(parents=True, exist_ok=True)
    key = str(db_path.resolve())
    if not db_path.exists():
        _ENSURED.discard(key)  # deleted (or never created) since: ensure again
    con = _open(db_path, False, {}, wait_s)
    try:
        if key not in _ENSURED:
            _ensure_tables(con)
            _ENSURED.add(key)
        yield con
    finally:
        con.close()
        if mark:
            published.mark_written(db_path)


def snapshot_to(db_path: Path, target: Path, *, wait_s: float, read_token) -> str | None:
    """Copy the checkpointed warehouse to `target` while holding it (no writer can commit during the
    copy); return the written-token read under that hold, None when it stayed busy."""
    try:
        with connect(db_path, mark=False, wait_s=wait_s) as con:
            token = read_token()
            con.execute("CHECKPOINT")
            shutil.copyfile(db_path, target)
            return token
    except WarehouseBusyError:
        return None


@contextlib.contextmanager
def transaction(db_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A writer connection inside one transaction: committed when the block ends, rolled back when
    it raises (a kill -9 leaves DuckDB's WAL to roll back: all of it, or none)."""
    with connect(db_path) as con:
        con.execute("BEGIN TRANSACTION")
        try:
            yield con
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: pa.Table) -> None:
    con.register("_rows", rows)
    try:
        con.execute(f'INSERT INTO "{table}" BY NAME SELECT * FROM _rows')
    finally:
        con.unregister("_rows")


def _insert_chunk_files(con: duckdb.DuckDBPyConnection, parquet_files: list[Path]) -> None:
    con.execute("INSERT INTO chunks BY NAME SELECT * FROM read_parquet(?)", [[str(p) for p in parquet_files]])


def _replace_run_row(con: duckdb.DuckDBPyConnection, table: str, run: Any, schema: pa.Schema) -> None:
    """Insert a run's row (a dataclass with `run_id`), replacing the row of the same run_id."""
    con.execute(f'DELETE FROM "{table}" WHERE run_id = ?', [run.run_id])
    _insert(con, table, pa.Table.from_pylist([asdict(run)], schema=schema))


def _upsert_manifest(con: duckdb.DuckDBPyConnection, entries: list[ManifestEntry]) -> None:
    rows = pa.Table.from_pylist([asdict(e) for e in entries], schema=MANIFEST_SCHEMA)
    con.register("_keys", rows.select(["kb", "path"]))
    try:  # one statement for the whole list, not one DELETE per row
        con.execute("DELETE FROM manifest m USING _keys k WHERE m.kb = k.kb AND m.path = k.path")
    finally:
        con.unregister("_keys")
    _insert(con, "manifest", rows)


def replace_document(db_path: Path, document: Document, chunks_parquet: Path,
                     manifest: ManifestEntry | None = None) -> list[str]:
    """Swap in one document's rows atomically; return the MD5s of the versions it replaced.

    A document is identified by its content (kb, doc_md5) and by its name (kb, source): a changed
    file replaces its old version, a renamed file its old name. The manifest row, when given, is
    written in the same transaction: either the new version and its manifest row, or neither.
    """
    with transaction(db_path) as con:
        old = [r[0] for r in con.execute(
            "SELECT doc_md5 FROM documents WHERE kb = ? AND (doc_md5 = ? OR source = ?)",
            [document.kb, document.doc_md5, document.source]).fetchall()]
        for table in ("chunks", "documents"):
            con.execute(f"DELETE FROM {table} WHERE kb = ? AND (doc_md5 = ? OR source = ?)",
                        [document.kb, document.doc_md5, document.source])
        _insert_chunk_files(con, [chunks_parquet])
        _insert(con, "documents", pa.Table.from_pylist([asdict(document)], schema=DOCUMENT_SCHEMA))
        if manifest is not None:
            # a renamed (moved) file: the landed row of its old path describes the version just replaced
            con.execute("DELETE FROM manifest WHERE kb = ? AND md5 = ? AND path <> ? AND status IN ('landed', 'indexed')",
                        [manifest.kb, manifest.md5, manifest.path])
            _upsert_manifest(con, [manifest])
    return [md5 for md5 in old if md5 != document.doc_md5]


def replace_documents(db_path: Path, documents: list[Document], chunks_parquet: list[Path],
                      manifest: list[ManifestEntry]) -> dict[str, list[str]]:
    """`replace_document` for many documents in ONE transaction (Arrow tables for the keys, the
    documents and the manifest rows; one read of all their Parquet files): all of them, or none.
    Returns source → the MD5s of the versions each replaced. Sources and MD5s must be distinct."""
    docs = pa.Table.from_pylist([asdict(d) for d in documents], schema=DOCUMENT_SCHEMA)
    with transaction(db_path) as con:
        con.register("_new", docs.select(["kb", "doc_md5", "source"]))
        try:
            old = con.execute("SELECT n.source, d.doc_md5 FROM documents d JOIN _new n ON d.kb = n.kb "
                              "AND (d.doc_md5 = n.doc_md5 OR d.source = n.source)").fetchall()
            for table in ("chunks", "documents"):
                con.execute(f"DELETE FROM {table} t USING _new n WHERE t.kb = n.kb "
                            "AND (t.doc_md5 = n.doc_md5 OR t.source = n.source)")
        finally:
            con.unregister("_new")
        _insert_chunk_files(con, chunks_parquet)
        _insert(con, "documents", docs)
        _upsert_manifest(con, manifest)
    new_md5 = {d.source: d.doc_md5 for d in documents}
    replaced: dict[str, list[str]] = {d.source: [] for d in documents}
    for source, md5 in old:
        if md5 != new_md5[source] and md5 not in replaced[source]:
            replaced[source].append(md5)
    return replaced


def insert_chunk_files(db_path: Path, parquet_files: list[Path]) -> None:
    """Append the chunk rows of many Parquet files in one statement, without their documents' rows:
    the bulk baseline `bench/ingest_stages.py` measures landing against."""
    with transaction(db_path) as con:
        _insert_chunk_files(con, parquet_files)


def delete_document(db_path: Path, kb: str, source: str) -> list[str]:
    """Remove a document's rows (and its manifest rows) in one transaction; return the MD5s removed."""
    with transaction(db_path) as con:
        md5s = [r[0] for r in con.execute("SELECT doc_md5 FROM documents WHERE kb = ? AND source = ?",
                                          [kb, source]).fetchall()]
        for table in ("chunks", "documents", "manifest"):
            con.execute(f"DELETE FROM {table} WHERE kb = ? AND source = ?", [kb, source])
    return md5s


def save_run(db_path: Path, run: IngestRun) -> None:
    with transaction(db_path) as con:
        _replace_run_row(con, "ingest_runs", run, INGEST_RUN_SCHEMA)


def mark_interrupted(db_path: Path) -> int:
    """Runs still `running` when a new one holds the home's write lock died (killed, crashed): say so."""
    if not db_path.exists():
        return 0
    with connect(db_path) as con:
        (n,) = con.execute("SELECT count(*) FROM ingest_runs WHERE status = 'running'").fetchone()
        con.execute("UPDATE ingest_runs SET status = 'interrupted' WHERE status = 'running'")
    return n


def record_failures(db_path: Path, failures: list[IngestFailure]) -> None:
    if not failures:
        return
    with connect(db_path) as con:
        _insert(con, "ingest_failures",
                pa.Table.from_pylist([asdict(f) for f in failures], schema=INGEST_FAILURE_SCHEMA))


def upsert_manifest(db_path: Path, entries: list[ManifestEntry]) -> None:
    """Write manifest rows (replacing each (kb, path)'s row) in one transaction."""
    if not entries:
        return
    with transaction(db_path) as con:
        _upsert_manifest(con, entries)


def delete_manifest(db_path: Path, kb: str, paths: list[str]) -> None:
    if not paths:
        return
    with transaction(db_path) as con:
        con.executemany("DELETE FROM manifest WHERE kb = ? AND path = ?", [[kb, p] for p in paths])


def mark_indexed(db_path: Path, kb: str, sources: list[str], run_id: str) -> None:
    """Landed manifest rows of these sources are now in Chroma too."""
    if not sources:
        return
    with transaction(db_path) as con:
        con.executemany("UPDATE manifest SET status = 'indexed', last_run_id = ?, updated_at = now() "
                        "WHERE kb = ? AND source = ? AND status = 'landed'", [[run_id, kb, s] for s in sources])


def load_manifest(db_path: Path, kb: str) -> list[ManifestEntry]:
    """The manifest of `kb`, plus an entry (status `landed`, pipeline key unknown) for each landed
    document that has none: a warehouse from before the manifest existed is re-chunked once, and
    its removed files are found."""
    if not db_path.exists():
        return []
    with connect(db_path) as con:  # a writer: creates the manifest table in an older warehouse
        cur = con.execute("SELECT * FROM manifest WHERE kb = ? ORDER BY path", [kb])
        names = [d[0] for d in cur.description]
        entries = [ManifestEntry(**dict(zip(names, row))) for row in cur.fetchall()]
        known = {e.path for e in entries}
        rows = con.execute("SELECT path, source, doc_md5, chunk_count, run_id, ingested_at FROM documents "
                           "WHERE kb = ? ORDER BY path", [kb]).fetchall()
    entries += [ManifestEntry(kb, path, source, md5, "landed", count, "", run_id, at)
                for path, source, md5, count, run_id, at in rows if path not in known]
    return entries


def kb_root(db_path: Path, kb: str) -> str | None:
    """The recorded root of `kb`'s source names, None before its first ingest (or in an older home)."""
    if not db_path.exists():
        return None
    with connect(db_path) as con:  # a writer's read (creates the table in an older warehouse)
        row = con.execute("SELECT root FROM kb_roots WHERE kb = ? ORDER BY recorded_at DESC LIMIT 1", [kb]).fetchone()
    return row[0] if row else None


def record_kb_root(db_path: Path, root: KBRoot) -> None:
    with transaction(db_path) as con:
        con.execute("DELETE FROM kb_roots WHERE kb = ?", [root.kb])
        _insert(con, "kb_roots", pa.Table.from_pylist([asdict(root)], schema=KB_ROOT_SCHEMA))


def landed_documents(db_path: Path, kb: str, chunks_dir: Path) -> dict[str, tuple[str, str, str]]:
    """source → (doc_md5, chunks_path, parser_version) of the documents `kb` holds, each chunks file where
    this home keeps it (`chunks_dir`): a home moved or restored elsewhere still has its documents landed,
    though the `documents` rows name the folder they were written in."""
    if not db_path.exists():
        return {}
    _, rows = query(db_path, "SELECT source, doc_md5, parser_version FROM documents WHERE kb = ?", [kb])
    return {source: (md5, str(chunks_path(chunks_dir, kb, md5)), version or "") for source, md5, version in rows}


def query(db_path: Path, sql: str, params: list[Any] | None = None) -> tuple[list[str], list[tuple]]:
    """Run read-only SQL; return (column names, rows)."""
    with connect(db_path, read_only=True) as con:
        cur = con.execute(sql, params or [])
        columns = [d[0] for d in cur.description or []]
        return columns, cur.fetchall()


# ---------------------------------------------------------------- batch QA


def save_qa_run(db_path: Path, run: QARun) -> None:
    """Insert or replace a batch-QA run's row."""
    with transaction(db_path) as con:
        _replace_run_row(con, "qa_runs", run, QA_RUN_SCHEMA)


def mark_qa_interrupted(db_path: Path, run_ids: list[str]) -> None:
    """Batch-QA runs whose process died: `interrupted`, with the time it was found out."""
    with transaction(db_path) as con:
        con.executemany("UPDATE qa_runs SET status = 'interrupted', finished_at = now() "
                        "WHERE run_id = ? AND status = 'running'", [[r] for r in run_ids])


def land_qa(db_path: Path, run: QARun, results: list[Path], traces: list[Path]) -> None:
    """Land a batch-QA run in one transaction: its results and traces (Parquet parts written per
    batch) replace any rows of the same run_id, and the run row is replaced. Re-landing converges."""
    with transaction(db_path) as con:
        for table, parts in (("qa_results", results), ("qa_traces", traces)):
            con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run.run_id])
            if parts:
                con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM read_parquet(?)", [[str(p) for p in parts]])
        _replace_run_row(con, "qa_runs", run, QA_RUN_SCHEMA)


def save_metrics(db_path: Path, metrics: list[QAMetric]) -> None:
    """Land an evaluation's rows, replacing rows of the same (eval_id, config): re-landing converges."""
    if not metrics:
        return
    with transaction(db_path) as con:
        con.executemany("DELETE FROM qa_metrics WHERE eval_id = ? AND config = ?",
                        [[m.eval_id, m.config] for m in metrics])
        _insert(con, "qa_metrics", pa.Table.from_pylist([asdict(m) for m in metrics], schema=QA_METRIC_SCHEMA))
