"""The `kbflow` command: ingest, stats, read-only sql in three formats."""
from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys

import pytest

from flows.cli import main


@pytest.fixture
def ingested(prefect_harness, tmp_path, capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# 总则\n\n第一段正文，足够长的一段话。\n\n| 区 | 指标 |\n|---|---|\n| 东区 | 120 |\n",
                                 encoding="utf-8")
    (corpus / "b.txt").write_text("第一段。\n\n第二段。", encoding="utf-8")
    (corpus / "c.xyz").write_text("?", encoding="utf-8")
    home = str(tmp_path / "home")
    assert main(["--home", home, "ingest", str(corpus), "--kb", "t"]) == 0
    out = capsys.readouterr().out
    assert "2 landed, 1 failed or rejected" in out and "unsupported file type '.xyz'" in out
    return home


def test_stats_prints_the_chunk_quality_table(ingested, capsys):
    from pathlib import Path

    from warehouse import db

    assert main(["--home", ingested, "stats", "--kb", "t", "--format", "json"]) == 0
    rows = {r["source"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == {"a.md", "b.txt"}
    # the figures are the chunk_quality view's (its exact metrics: tests/warehouse/test_quality_views.py);
    # here they are checked against the landed chunks, whatever the chunker made of the two files
    _, chunks = db.query(Path(ingested) / "kbflow.duckdb", "SELECT source, chunk_type, content FROM chunks")
    for source, row in rows.items():
        mine = [(t, c) for s, t, c in chunks if s == source]
        text = [len(c) for t, c in mine if t in ("text", "heading", "list")]
        assert row["total_chunks"] == len(mine)
        assert row["table_chunks"] == sum(t == "table" for t, _ in mine)
        assert row["text_chunks"] == len(mine) - row["table_chunks"] - row["image_chunks"]
        assert row["heading_only_chunks"] == sum(t == "heading" and len(c) < 20 for t, c in mine)
        assert row["fragments"] == sum(t == "text" and len(c) < 100 for t, c in mine)
        assert row["max_text_chars"] == max(text)
    assert rows["a.md"]["table_chunks"] == 1 and rows["b.txt"]["table_chunks"] == 0
    assert main(["--home", ingested, "stats", "--format", "csv"]) == 0
    header = next(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert header[:4] == ["kb", "source", "total_chunks", "text_chunks"] and header[-1] == "longest_heading_chain"
    assert main(["stats", "--kb", "t", "--home", ingested]) == 0  # --home after the sub-command too
    out = capsys.readouterr().out
    assert "a.md" in out and "heading<20" in out and "chains" in out
    assert main(["--home", ingested, "stats", "--kb", "other", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_stats_on_a_warehouse_without_the_view_says_what_to_do(tmp_path, capsys):
    import duckdb

    home = tmp_path / "home"
    home.mkdir()
    duckdb.connect(str(home / "kbflow.duckdb")).close()  # an old warehouse: no chunk_quality view
    # readers read a published copy, made through a writer connection that adds the views (a migration)
    assert main(["--home", str(home), "stats"]) == 0
    assert "chunk quality per document" in capsys.readouterr().out


def test_sql_formats_and_read_only(ingested, capsys):
    query = "SELECT chunk_type, count(*) AS n FROM chunks GROUP BY 1 ORDER BY 1"
    assert main(["--home", ingested, "sql", query, "--format", "csv"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows == [["chunk_type", "n"], ["table", "1"], ["text", "2"]]  # headings merged with their body
    assert main(["--home", ingested, "sql", query]) == 0
    assert "table" in capsys.readouterr().out
    assert main(["--home", ingested, "sql", "DROP TABLE chunks"]) == 2
    assert "read-only" in capsys.readouterr().err
    assert main(["--home", ingested, "sql", "SELECT count(*) AS n FROM chunks", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"n": 3}]


def test_sql_csv_has_unix_line_ends(tmp_path, capsys):
    from warehouse import db

    with db.connect(tmp_path / "kbflow.duckdb"):  # an empty warehouse: tables and views, no rows
        pass
    assert main(["--home", str(tmp_path), "sql", "SELECT 1 AS a, 2 AS b", "--format", "csv"]) == 0
    assert capsys.readouterr().out == "a,b\n1,2\n"


def test_errors_are_clear(tmp_path, capsys):
    assert main(["--home", str(tmp_path), "stats"]) == 2
    assert "run `kbflow ingest` first" in capsys.readouterr().err
    assert main(["--home", str(tmp_path), "ingest", str(tmp_path), "--kb", "../bad"]) == 2
    assert "invalid knowledge-base name" in capsys.readouterr().err


def test_console_script_is_installed():
    exe = shutil.which("kbflow") or str(__import__("pathlib").Path(sys.executable).with_name("kbflow"))
    result = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "ingest" in result.stdout and "sql" in result.stdout
