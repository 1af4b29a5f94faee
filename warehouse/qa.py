"""Reads of batch-QA runs (`qa_results`)."""
from __future__ import annotations

from pathlib import Path

from schemas.arrow import from_table
from schemas.qa import QAResult
from warehouse import db


def qa_results(db_path: Path, run_id: str) -> list[QAResult]:
    """The results of one batch-QA run."""
    with db.connect(db_path, read_only=True) as con:
        table = con.sql("SELECT * FROM qa_results WHERE run_id = ?", params=[run_id]).to_arrow_table()
    return from_table(table, QAResult)
