"""What a home holds, for checking names given on the command line before any work starts:
the knowledge bases with documents, and whether a batch-QA run_id or an eval_id exists."""
from __future__ import annotations

from pathlib import Path

import duckdb

from warehouse import db


def _relations(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}


def known_kbs(db_path: Path) -> list[str]:
    """Knowledge bases with at least one landed document, by name (read-only; [] for an empty warehouse)."""
    with db.connect(db_path, read_only=True) as con:
        if "documents" not in _relations(con):
            return []
        return [r[0] for r in con.execute("SELECT DISTINCT kb FROM documents ORDER BY kb").fetchall()]


def run_exists(db_path: Path, run: str) -> bool:
    """Whether `run` is a batch-QA run_id (qa_runs) or an evaluation's eval_id (qa_metrics)."""
    with db.connect(db_path, read_only=True) as con:
        relations = _relations(con)
        for table, column in (("qa_runs", "run_id"), ("qa_metrics", "eval_id")):
            if table in relations and con.execute(f"SELECT 1 FROM {table} WHERE {column} = ? LIMIT 1",
                                                  [run]).fetchone():
                return True
    return False


def recent_runs(db_path: Path, limit: int = 5) -> list[str]:
    """The newest batch-QA run ids (to suggest when a --run is unknown)."""
    with db.connect(db_path, read_only=True) as con:
        if "qa_runs" not in _relations(con):
            return []
        return [r[0] for r in con.execute("SELECT run_id FROM qa_runs ORDER BY started_at DESC LIMIT ?",
                                          [limit]).fetchall()]
