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
from tests.conftest import REPO


@pytest.fixture(scope="session")
def ingested(prefect_harness, tmp_path_factory, shared_e5_model):
    """One home with kb `t` (two documents landed, one rejected) for the CLI tests (test_warm_server.py too)."""
    import contextlib
    import os

    tmp_path = tmp_path_factory.mktemp("cli")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# 总则\n\n第一段正文，足够长的一段话。\n\n| 区 | 指标 |\n|---|---|\n| 东区 | 120 |\n",
                                 encoding="utf-8")
    (corpus / "b.txt").write_text("第一段。\n\n第二段。", encoding="utf-8")
    (corpus / "c.xyz").write_text("?", encoding="utf-8")
    home = str(tmp_path / "home")
    printed = io.StringIO()
    previous = os.environ.get("KBFLOW_EMBEDDING_MODEL")
    os.environ["KBFLOW_EMBEDDING_MODEL"] = str(shared_e5_model)  # the autouse fixture is function-scoped
    try:
        with contextlib.redirect_stdout(printed):
            assert main(["--home", home, "ingest", str(corpus), "--kb", "t"]) == 0
    finally:
        if previous is None:
            os.environ.pop("KBFLOW_EMBEDDING_MODEL", None)
        else:
            os.environ["KBFLOW_EMBEDDING_MODEL"] = previous
    out = printed.getvalue()
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
    assert main(["--home", ingested, "stats", "--kb", "other", "--format", "json"]) == 6  # no such KB
    out = capsys.readouterr()
    assert out.out == "" and "the knowledge bases here are: t" in out.err


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


def test_a_reader_closing_the_pipe_stops_the_command_quietly(tmp_path):
    from warehouse import db

    with db.connect(tmp_path / "kbflow.duckdb"):
        pass
    # far more rows than a pipe holds: the command is still writing when the reader (`| head -1`) goes away
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "--home", str(tmp_path), "sql",
                             "SELECT range AS n FROM range(300000)", "--format", "csv"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    assert proc.stdout.readline() == b"n\n"
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(120) == 141, err
    assert "error" not in err and "Exception ignored" not in err and "Traceback" not in err, err


def test_errors_are_clear(tmp_path, capsys):
    assert main(["--home", str(tmp_path), "stats"]) == 6  # no warehouse: nothing of that name here
    assert "run `kbflow ingest` first" in capsys.readouterr().err
    assert main(["--home", str(tmp_path), "ingest", str(tmp_path), "--kb", "../bad"]) == 2
    assert "invalid knowledge-base name" in capsys.readouterr().err


def test_console_script_is_installed():
    exe = shutil.which("kbflow") or str(__import__("pathlib").Path(sys.executable).with_name("kbflow"))
    result = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "ingest" in result.stdout and "sql" in result.stdout



# ---------------------------------------------------------------- inputs checked before any flow starts


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("error: ")
    return err[0]


def test_input_errors_are_one_line_with_a_distinct_exit_code(ingested, tmp_path, capsys):
    from pathlib import Path

    from warehouse import db

    home = Path(ingested)
    runs = db.query(home / "kbflow.duckdb", "SELECT count(*) FROM qa_runs")[1]
    collections = sorted(p.name for p in (home / "chroma").iterdir())
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "1", "question": "第一段是什么？"}\n', encoding="utf-8")
    (tmp_path / "q.xyz").write_text("?", encoding="utf-8")
    cases = [
        (["ask", "nosuch.jsonl", "--kb", "t"], 2, "nosuch.jsonl: no such question file"),
        (["ask", str(tmp_path / "q.xyz"), "--kb", "t"], 2, "unknown question-set format '.xyz'"),
        (["ask", str(questions), "--kb", "nosuch"], 6, "no knowledge base 'nosuch'"),
        (["ask", str(questions), "--kb", "../bad"], 2, "invalid knowledge-base name"),
        (["ask", str(questions), "--kb", "t", "--out", str(home / "x.jsonl")], 7, "inside the kbflow home"),
        (["ask", str(questions), "--kb", "t", "--out", str(questions)], 7, "not a file kbflow wrote"),
        (["eval", "nosuch.jsonl", "--kb", "t"], 2, "no such question file"),
        (["check", "--kb", "nosuch"], 6, "the knowledge bases here are: t"),
        (["rm", "a.md", "--kb", "nosuch"], 6, "no knowledge base 'nosuch'"),
        (["stats", "--kb", "nosuch"], 6, "no knowledge base 'nosuch'"),
        (["report", "--run", "nosuch", "--out", str(tmp_path / "r.html")], 6, "no batch-QA run or eval named"),
        (["ingest", str(tmp_path / "missing"), "--kb", "t"], 2, "no such file or folder"),
    ]
    for argv, code, words in cases:
        assert main(["--home", ingested, *argv]) == code, argv
        line = _one_line(capsys)
        assert words in line, (argv, line)
    # nothing was started or made for any of them
    assert db.query(home / "kbflow.duckdb", "SELECT count(*) FROM qa_runs")[1] == runs
    assert sorted(p.name for p in (home / "chroma").iterdir()) == collections  # check/rm: no empty collection
    assert questions.read_text(encoding="utf-8").startswith('{"id": "1"')
    assert not (tmp_path / "r.html").exists()
    # --debug adds the traceback
    assert main(["--home", ingested, "--debug", "check", "--kb", "nosuch"]) == 6
    assert "Traceback" in capsys.readouterr().err


def test_check_of_an_unknown_kb_in_a_fresh_home_creates_nothing(tmp_path, capsys):
    home = tmp_path / "home"
    assert main(["--home", str(home), "check", "--kb", "nosuch"]) == 6
    assert "no warehouse" in _one_line(capsys)
    assert not home.exists()


def test_a_command_line_error_prints_one_line_and_no_prefect_output(ingested):
    env = {**__import__("os").environ, "PYTHONPATH": str(__import__("pathlib").Path(__file__).parents[2])}
    done = subprocess.run([sys.executable, "-m", "flows.cli", "--home", ingested, "ask", "nosuch.jsonl", "--kb", "t"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == ["error: nosuch.jsonl: no such question file"]


def test_every_command_documents_its_exit_codes(capsys):
    from flows.cli import build_parser

    for name in build_parser()._subparsers._group_actions[0].choices:
        with pytest.raises(SystemExit):
            main([name, "--help"])
        text = capsys.readouterr().out
        assert "exit codes:" in text and "  0    done" in text, name
    with pytest.raises(SystemExit):
        main(["--help"])
    top = capsys.readouterr().out
    for code in ("2", "3", "4", "5", "6", "7", "130"):
        assert f"  {code} " in top


# ---------------------------------------------------------------- ask: a quoted question, answers shown


def test_ask_a_quoted_question_prints_its_answer(ingested, tmp_path, capsys):
    from pathlib import Path

    assert main(["--home", ingested, "ask", "东区的指标是多少？", "--kb", "t"]) == 0
    out = capsys.readouterr().out
    assert "q1  东区的指标是多少？" in out
    assert "cites a.md_" in out and "confidence " in out and "extractive" in out
    asked = list((Path(ingested) / "qa" / "asked").glob("*.jsonl"))
    assert len(asked) == 1 and "东区的指标是多少？" in asked[0].read_text(encoding="utf-8")

    assert main(["--home", ingested, "ask", "东区的指标是多少？", "--kb", "t", "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    (answer,) = printed["answers"]
    assert answer["question"] == "东区的指标是多少？" and answer["citations"] and "120" in answer["answer"]
    assert printed["run"]["questions"] == 1 and Path(printed["results"]).is_file()

    two = tmp_path / "two.jsonl"
    two.write_text('{"id": "a", "question": "东区的指标？"}\n{"id": "b", "question": "第二段？"}\n', encoding="utf-8")
    out_file = tmp_path / "results.jsonl"
    assert main(["--home", ingested, "ask", str(two), "--kb", "t", "--show", "1", "--out", str(out_file)]) == 0
    out = capsys.readouterr().out
    assert "a  东区的指标？" in out and "b  第二段？" not in out
    assert f"showing 1 of 2 answers; all of them: {out_file}" in " ".join(out.split())
    # a results file of ours may be rewritten; --quiet prints only its path
    assert main(["--home", ingested, "ask", str(two), "--kb", "t", "--quiet", "--out", str(out_file)]) == 0
    assert capsys.readouterr().out == f"{out_file}\n"


def test_an_ingest_where_every_file_failed_ends_failed_in_prefect(prefect_harness, tmp_path, capsys):
    from flows.ingest import ingest

    corpus = tmp_path / "bad"
    corpus.mkdir()
    (corpus / "a.xyz").write_text("?", encoding="utf-8")
    state = ingest(paths=[str(corpus)], kb="t", home=str(tmp_path / "home"), return_state=True)
    assert state.is_failed() and "nothing landed" in state.message
    assert state.result(raise_on_failure=False).summary.failed == 1  # NothingLandedError carries it
    assert main(["--home", str(tmp_path / "home"), "ingest", str(corpus), "--kb", "t"]) == 1
    assert "unsupported file type '.xyz'" in capsys.readouterr().out


# ---------------------------------------------------------------- terminal tables


def test_tables_fit_the_terminal(monkeypatch):
    from datetime import datetime

    from rich.console import Console

    from flows import terminal
    from tasks.common.display import text_width

    buf = io.StringIO()
    monkeypatch.setattr(terminal, "console", Console(file=buf, width=70, color_system=None))
    name = "清川市水务政策说明文件第二版（修订稿）_final_version_2025.docx"
    terminal.print_rows(["source", "score", "when"], [(name, 93.83999999999999, datetime(2025, 3, 1, 8, 0, 5, 123456)),
                                                      ("b.txt", 0.5, None)])
    text = buf.getvalue()
    lines = text.splitlines()
    assert all(text_width(line) <= 70 for line in lines)
    assert "93.84" in text and "93.8399" not in text and "2025-03-01 08:00:05" in text and ".123456" not in text
    assert "清川市" in text and "2025.docx" in text and "…" in text  # shortened in the middle: both ends kept
    assert sum("docx" in line for line in lines) == 1  # one line per row, not folded

    buf.seek(0)
    buf.truncate()
    numbers = [f"column_{i}" for i in range(10)]  # number columns keep their values; headings wrap
    terminal.print_rows(numbers, [tuple(range(100, 110))])
    text = buf.getvalue()
    assert "109" in text and "row 1" not in text and all(text_width(line) <= 70 for line in text.splitlines())

    buf.seek(0)
    buf.truncate()
    wide = [f"column_{i}" for i in range(12)]  # twelve text columns cannot fit 70 cells: one block per row
    terminal.print_rows(wide, [tuple(f"value_{i}" for i in range(12))], title="wide")
    text = buf.getvalue()
    assert "row 1" in text and "column_11" in text and all(text_width(line) <= 70 for line in text.splitlines())
    assert [line.split() for line in text.splitlines() if line.startswith("column_3")] == [["column_3", "value_3"]]


def test_truncate_middle_and_artifact_keys():
    from tasks.common.display import artifact_key, text_width, truncate_middle

    assert truncate_middle("abcdefghij", 7) == "abc…hij" and truncate_middle("short", 7) == "short"
    cut = truncate_middle("清川市水务政策说明文件第二版.docx", 12)
    assert text_width(cut) <= 12 and cut.startswith("清川") and cut.endswith(".docx")
    assert artifact_key("eval", "Demo_KB.v2", "hybrid+rerank") == "eval-demo-kb-v2-hybrid-rerank"
    assert artifact_key("batch-qa", "demo") == "batch-qa-demo"
