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


def test_stats_prints_per_document_counts(ingested, capsys):
    assert main(["--home", ingested, "stats", "--kb", "t", "--format", "json"]) == 0
    rows = {r["source"]: r for r in json.loads(capsys.readouterr().out)}
    assert (rows["a.md"]["chunks"], rows["a.md"]["heading"], rows["a.md"]["table"]) == (3, 1, 1)
    assert (rows["b.txt"]["chunks"], rows["b.txt"]["text"], rows["b.txt"]["max_chars"]) == (2, 2, 4)
    assert main(["stats", "--kb", "t", "--home", ingested]) == 0  # --home after the sub-command too
    assert "a.md" in capsys.readouterr().out


def test_sql_formats_and_read_only(ingested, capsys):
    query = "SELECT chunk_type, count(*) AS n FROM chunks GROUP BY 1 ORDER BY 1"
    assert main(["--home", ingested, "sql", query, "--format", "csv"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows == [["chunk_type", "n"], ["heading", "1"], ["table", "1"], ["text", "3"]]
    assert main(["--home", ingested, "sql", query]) == 0
    assert "heading" in capsys.readouterr().out
    assert main(["--home", ingested, "sql", "DROP TABLE chunks"]) == 2
    assert "read-only" in capsys.readouterr().out
    assert main(["--home", ingested, "sql", "SELECT count(*) AS n FROM chunks", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"n": 5}]


def test_errors_are_clear(tmp_path, capsys):
    assert main(["--home", str(tmp_path), "stats"]) == 2
    assert "run `kbflow ingest` first" in capsys.readouterr().out
    assert main(["--home", str(tmp_path), "ingest", str(tmp_path), "--kb", "../bad"]) == 2
    assert "invalid knowledge-base name" in capsys.readouterr().out


def test_console_script_is_installed():
    exe = shutil.which("kbflow") or str(__import__("pathlib").Path(sys.executable).with_name("kbflow"))
    result = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "ingest" in result.stdout and "sql" in result.stdout
