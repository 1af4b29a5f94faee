"""Reads of batch-QA runs (`qa_results`)."""
from __future__ import annotations

from pathlib import Path

from schemas.arrow import from_table
from schemas.qa import QAResult
from warehouse import db


def qa_results(db_path: Path, run_id: str) -> list[QAResult]:
    """The results of one batch-QA run, from the live warehouse (a run reads what it just landed,
    which no published generation may hold yet): one short query."""
    with db.connect(db_path, mark=False) as con:
        table = con.sql("SELECT * FROM qa_results WHERE run_id = ?", params=[run_id]).to_arrow_table()
    return from_table(table, QAResult)


def running_qa_runs(db_path: Path) -> list[str]:
    """run_id of every batch-QA run recorded as `running` (alive, or dead without a word)."""
    return [r for (r,) in db.query(db_path, "SELECT run_id FROM qa_runs WHERE status = 'running'")[1]]
