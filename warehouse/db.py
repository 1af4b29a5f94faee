"""The DuckDB warehouse: tables created from the pyarrow schemas in `schemas/`, views from `*.sql`.

A document's rows are replaced as a unit in one transaction. Connections are short-lived so
the single-writer file lock is held only while writing.
"""
from __future__ import annotations

import contextlib
from dataclasses import asdict
from importlib import resources
from pathlib import Path
from typing import Any, Iterator

import duckdb
import pyarrow as pa

from schemas.chunk import CHUNK_SCHEMA
from schemas.ingest import (DOCUMENT_SCHEMA, INGEST_FAILURE_SCHEMA, INGEST_RUN_SCHEMA, Document,
                            IngestFailure, IngestRun)

TABLES: dict[str, pa.Schema] = {
    "documents": DOCUMENT_SCHEMA,
    "chunks": CHUNK_SCHEMA,
    "ingest_runs": INGEST_RUN_SCHEMA,
    "ingest_failures": INGEST_FAILURE_SCHEMA,
}
VIEW_FILES = ("views.sql", "quality.sql")  # executed in this order


class WarehouseBusyError(RuntimeError):
    """Another process holds the DuckDB write lock."""


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


@contextlib.contextmanager
def connect(db_path: Path, *, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection; writers get the tables and views ensured first."""
    if read_only and not db_path.exists():
        raise FileNotFoundError(f"no warehouse at {db_path}: run `kbflow ingest` first")
    db_path.parent.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {}
    if read_only:
        # No file access beyond the database itself: `kbflow sql` cannot COPY TO or read files.
        config = {"enable_external_access": False, "lock_configuration": True}
    try:
        con = duckdb.connect(str(db_path), read_only=read_only, config=config)
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():
            raise WarehouseBusyError(f"{db_path} is in use by another kbflow process; retry when it finishes") from None
        raise
    try:
        if not read_only:
            _ensure_tables(con)
        yield con
    finally:
        con.close()


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: pa.Table) -> None:
    con.register("_rows", rows)
    try:
        con.execute(f'INSERT INTO "{table}" BY NAME SELECT * FROM _rows')
    finally:
        con.unregister("_rows")


def replace_document(db_path: Path, document: Document, chunks_parquet: Path) -> list[str]:
    """Swap in one document's rows atomically; return the MD5s of the versions it replaced.

    A document is identified by its content (kb, doc_md5) and by its name (kb, source): a changed
    file replaces its old version, a renamed file its old name.
    """
    with connect(db_path) as con:
        con.execute("BEGIN TRANSACTION")
        try:
            old = [r[0] for r in con.execute(
                "SELECT doc_md5 FROM documents WHERE kb = ? AND (doc_md5 = ? OR source = ?)",
                [document.kb, document.doc_md5, document.source]).fetchall()]
            for table in ("chunks", "documents"):
                con.execute(f"DELETE FROM {table} WHERE kb = ? AND (doc_md5 = ? OR source = ?)",
                            [document.kb, document.doc_md5, document.source])
            con.execute("INSERT INTO chunks BY NAME SELECT * FROM read_parquet(?)", [str(chunks_parquet)])
            _insert(con, "documents", pa.Table.from_pylist([asdict(document)], schema=DOCUMENT_SCHEMA))
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return [md5 for md5 in old if md5 != document.doc_md5]


def delete_document(db_path: Path, kb: str, source: str) -> list[str]:
    """Remove a document's rows in one transaction; return the MD5s removed."""
    with connect(db_path) as con:
        con.execute("BEGIN TRANSACTION")
        try:
            md5s = [r[0] for r in con.execute("SELECT doc_md5 FROM documents WHERE kb = ? AND source = ?",
                                              [kb, source]).fetchall()]
            for table in ("chunks", "documents"):
                con.execute(f"DELETE FROM {table} WHERE kb = ? AND source = ?", [kb, source])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return md5s


def save_run(db_path: Path, run: IngestRun) -> None:
    with connect(db_path) as con:
        con.execute("BEGIN TRANSACTION")
        con.execute("DELETE FROM ingest_runs WHERE run_id = ?", [run.run_id])
        _insert(con, "ingest_runs", pa.Table.from_pylist([asdict(run)], schema=INGEST_RUN_SCHEMA))
        con.execute("COMMIT")


def record_failures(db_path: Path, failures: list[IngestFailure]) -> None:
    if not failures:
        return
    with connect(db_path) as con:
        _insert(con, "ingest_failures",
                pa.Table.from_pylist([asdict(f) for f in failures], schema=INGEST_FAILURE_SCHEMA))


def query(db_path: Path, sql: str, params: list[Any] | None = None) -> tuple[list[str], list[tuple]]:
    """Run read-only SQL; return (column names, rows)."""
    with connect(db_path, read_only=True) as con:
        cur = con.execute(sql, params or [])
        columns = [d[0] for d in cur.description or []]
        return columns, cur.fetchall()
