"""`kbflow report` (warehouse/report.py): one self-contained, escaped HTML file whose figures are the
warehouse's; charts drawn from the SQL histogram; the --run filter; "no data" for empty or older
warehouses; and, when Chromium is installed, a real rendering to PNG."""
from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import duckdb
import pytest

from flows.cli import main
from schemas.chunk import Chunk, assign_ids, chunks_path
from schemas.ingest import Document, IngestFailure, IngestRun
from schemas.arrow import to_table
from schemas.qa import QAMetric, QAResult, QARun, QATrace
from tasks.common.files import write_parquet
from tasks.ingest.land import write_chunks
from warehouse import db, report

T0 = datetime(2025, 3, 1, 8, 0, tzinfo=timezone.utc)
EVIL = '<script>alert("x")</script>.md'


class ParsedReport(HTMLParser):
    """What a test needs from the HTML: tables (column names from the headings' titles, cell
    texts), charts (bar/segment tooltips, document rows) and every URL-bearing attribute."""

    URL_ATTRS = frozenset({"src", "href", "xlink:href", "srcset", "action", "poster", "data", "formaction"})

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tables: list[dict[str, Any]] = []
        self.charts: list[dict[str, Any]] = []
        self.urls: list[tuple[str, str, str]] = []
        self.tags: list[str] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._rect: dict[str, Any] | None = None
        self._title: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append(tag)
        self.urls += [(tag, name, value or "") for name, value in attrs if name in self.URL_ATTRS]
        if tag == "table":
            self.tables.append({"attrs": a, "columns": [], "rows": []})
        elif tag == "tr":
            self._row = []
        elif tag == "th":
            self.tables[-1]["columns"].append(a["title"])
        elif tag == "td":
            self._cell = []
        elif tag == "svg":
            self.charts.append({"attrs": a, "bar": [], "segment": [], "docs": 0})
        elif tag == "rect" and a.get("class") in ("bar", "segment"):
            self._rect = {"class": a["class"], "height": float(a["height"]), "width": float(a["width"]), "title": ""}
            self.charts[-1][a["class"]].append(self._rect)
        elif tag == "g" and a.get("class") == "doc":
            self.charts[-1]["docs"] += 1
        elif tag == "title" and self._rect is not None:
            self._title = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row:
            self.tables[-1]["rows"].append(self._row)
            self._row = None
        elif tag == "title" and self._title is not None and self._rect is not None:
            self._rect["title"] = "".join(self._title)
            self._title = None
        elif tag == "rect":
            self._rect = None

    def handle_data(self, data: str) -> None:
        for buffer in (self._cell, self._title):
            if buffer is not None:
                buffer.append(data)

    def table(self, name: str, kb: str | None = None) -> dict[str, Any]:
        (found,) = [t for t in self.tables if t["attrs"]["data-table"] == name and t["attrs"].get("data-kb") == kb]
        return found

    def records(self, name: str, kb: str | None = None) -> list[dict[str, str]]:
        t = self.table(name, kb)
        return [dict(zip(t["columns"], row)) for row in t["rows"]]

    def chart(self, kind: str, kb: str) -> dict[str, Any]:
        (found,) = [c for c in self.charts
                    if c["attrs"]["data-chart"] == kind and c["attrs"]["aria-label"].endswith(f"kb {kb}")]
        return found


def _land(w: Path, kb: str, source: str, chunks: list[Chunk]) -> None:
    md5 = hashlib.md5(f"{kb}/{source}".encode()).hexdigest()
    assign_ids(chunks, kb=kb, doc_md5=md5, source=source)
    parquet = write_chunks(chunks, chunks_path(w.parent / "chunks", kb, md5))
    db.replace_document(w, Document(kb=kb, doc_md5=md5, source=source, path=f"/in/{source}", doc_type="text",
                                    size_bytes=1, parse_backend="text", parser_version="1", parsed_dir="",
                                    chunks_path=str(parquet), chunk_count=len(chunks), items_total=len(chunks),
                                    dropped_empty=0, dropped_furniture=0, dropped_ghost=0, parse_seconds=0.0,
                                    parse_cached=False, run_id="ing-1", ingested_at=T0), parquet)


def _qa_run(run_id: str, kb: str, started: datetime) -> QARun:
    return QARun(run_id=run_id, kb=kb, flow_run_id="f", questions_path="q.jsonl", out_path="o.jsonl", mode="hybrid",
                 started_at=started, finished_at=started + timedelta(seconds=4), status="completed", questions=10,
                 invalid_rows=0, invalid_reasons=[], failed=0, answered=10, insufficient=0, llm_answers=0,
                 extractive_answers=10, llm_failures=0, widened=0, labelled=10, hit_at_1=0.7, hit_at_5=0.9,
                 mrr_at_10=0.8, retrieval_qps=5.0, embedding_model="e5", rerank_model="", llm_model="",
                 settings_json="{}")


def _metric(eval_id: str, config: str, run_id: str, hit_at_1: float | None, note: str = "") -> QAMetric:
    return QAMetric(eval_id=eval_id, config=config, run_id=run_id, kb="demo", questions_path="q.jsonl",
                    created_at=T0, status="completed" if run_id else "skipped", note=note, questions=10, labelled=10,
                    with_answers=10, hit_at_1=hit_at_1, hit_at_3=None, hit_at_5=None, hit_at_10=None,
                    mrr_at_10=None, recall_at_5=None, recall_at_10=None, ndcg_at_10=None, exact_match=None,
                    answer_f1=None, contains_answer=None, answers_all_of=None, retrieval_qps=5.0)


@pytest.fixture
def warehouse(tmp_path) -> Path:
    """Two kbs with real chunks (one document named like an XSS), an ingest run and failure, two
    batch-QA runs and two evaluations."""
    w = tmp_path / "home" / "kbflow.duckdb"
    _land(w, "demo", "清川市水务政策.docx", [
        Chunk(content="第一章 总则", chunk_type="heading", text_level=1),
        Chunk(content="第一节 用水", chunk_type="heading", text_level=2),
        Chunk(content="短句。", chunk_type="text"),
        Chunk(content="正" * 150, chunk_type="text"),
        Chunk(content="文" * 450, chunk_type="text"),
        Chunk(content="长" * 1200, chunk_type="text"),
        Chunk(content="| 区 | 指标 |", chunk_type="table"),
        Chunk(content="图1 水库", chunk_type="image"),
    ])
    _land(w, "demo", EVIL, [Chunk(content="x" * 60, chunk_type="text"), Chunk(content="y" * 30, chunk_type="list")])
    _land(w, "other", "b.txt", [Chunk(content="z" * 250, chunk_type="text")])
    db.save_run(w, IngestRun(run_id="ing-1", kb="demo", flow_run_id="f", started_at=T0,
                             finished_at=T0 + timedelta(seconds=42), status="completed_with_failures", files_seen=3,
                             files_landed=2, files_failed=1, chunks_landed=10, parse_backend="text"))
    db.record_failures(w, [IngestFailure(run_id="ing-1", kb="demo", path="/in/坏文件.pdf", doc_md5="", stage="discover",
                                         error_kind="CorruptFileError", reason="not a PDF <missing %PDF- header>",
                                         failed_at=T0)])
    db.save_qa_run(w, _qa_run("qa-r1", "demo", T0))
    db.save_qa_run(w, _qa_run("qa-r2", "demo", T0 + timedelta(hours=1)))
    db.save_metrics(w, [_metric("ev-1", "hybrid", "qa-r1", 0.7)])
    db.save_metrics(w, [_metric("ev-2", "vector-only", "qa-r2", 0.5),
                        _metric("ev-2", "hybrid+rerank", "", None, note="no reranker model configured")])
    return w


def test_report_is_self_contained(warehouse):
    text = report.render_html(report.load_report(warehouse))
    parsed = ParsedReport(text)
    assert parsed.urls and all(value.startswith("#") for _, _, value in parsed.urls)  # in-page anchors only
    assert "script" not in parsed.tags and "link" not in parsed.tags and "img" not in parsed.tags
    assert not re.search(r"url\s*\(|@import|https?:|//[\w.-]+\.\w", text)
    assert '<meta charset="utf-8">' in text and '"Noto Sans CJK SC"' in text and "sans-serif" in text
    assert "清川市水务政策.docx" in text  # CJK written as UTF-8, not lost


def test_chunk_quality_figures_are_the_views(warehouse):
    parsed = ParsedReport(report.render_html(report.load_report(warehouse)))
    for kb in ("demo", "other"):
        columns, rows = db.query(warehouse, "SELECT * FROM chunk_quality WHERE kb = ? ORDER BY source", [kb])
        shown = parsed.records("chunk_quality", kb)
        assert len(shown) == len(rows)
        for record, row in zip(shown, rows):
            for column, value in zip(columns, row):
                if column == "kb":
                    continue
                cell = record[column]
                if value is None:
                    assert cell == "—"
                elif isinstance(value, str):
                    assert cell == value
                else:
                    assert float(cell) == value, (kb, column)
    policy = parsed.records("chunk_quality", "demo")[1]
    assert policy["source"] == "清川市水务政策.docx"
    assert (policy["total_chunks"], policy["table_chunks"], policy["image_chunks"], policy["heading_chains"]) == (
        "8", "1", "1", "1")


def test_user_text_is_escaped(warehouse):
    text = report.render_html(report.load_report(warehouse))
    assert "<script" not in text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;.md" in text
    assert "&lt;missing %PDF- header&gt;" in text
    parsed = ParsedReport(text)  # and the names read back exactly
    assert parsed.records("chunk_quality", "demo")[0]["source"] == EVIL
    (failure,) = parsed.records("ingest_failures")
    assert (failure["path"], failure["stage"], failure["reason"]) == (
        "/in/坏文件.pdf", "discover", "not a PDF <missing %PDF- header>")


def test_length_chart_has_one_bar_per_bucket(warehouse):
    parsed = ParsedReport(report.render_html(report.load_report(warehouse)))
    for kb in ("demo", "other"):
        _, buckets = db.query(warehouse, "SELECT bucket, sum(chunks) FROM chunk_length_hist WHERE kb = ? "
                                         "GROUP BY bucket, bucket_order ORDER BY bucket_order", [kb])
        bars = parsed.chart("length-hist", kb)["bar"]
        assert len(bars) == len(buckets) == 8
        assert [bar["title"] for bar in bars] == [f"{b} chars: {n} chunks" for b, n in buckets]
        tallest, full_height = max(n for _, n in buckets), max(bar["height"] for bar in bars)
        for bar, (_, n) in zip(bars, buckets):  # heights are proportional to the counts
            assert bar["height"] == pytest.approx(full_height * n / tallest, abs=0.1)
    demo = [bar["title"] for bar in parsed.chart("length-hist", "demo")["bar"]]
    assert demo[0] == "0-19 chars: 5 chunks" and demo[-1] == "1000+ chars: 1 chunks"


def test_chunk_type_chart_shows_the_top_documents_and_counts_the_rest(warehouse, monkeypatch):
    parsed = ParsedReport(report.render_html(report.load_report(warehouse)))
    chart = parsed.chart("chunk-types", "demo")
    assert chart["docs"] == 2
    assert sorted(s["title"] for s in chart["segment"]) == sorted([
        "清川市水务政策.docx — text: 4", "清川市水务政策.docx — heading: 2", "清川市水务政策.docx — table: 1",
        "清川市水务政策.docx — image: 1", f"{EVIL} — text: 1", f"{EVIL} — list: 1"])
    monkeypatch.setattr(report, "TOP_DOCUMENTS", 1)
    text = report.render_html(report.load_report(warehouse))
    assert ParsedReport(text).chart("chunk-types", "demo")["docs"] == 1
    assert "The 1 documents with the most chunks; 1 more not shown." in text


def test_run_filter_keeps_only_that_run(warehouse):
    by_run = report.load_report(warehouse, run="qa-r1")
    assert [r[0] for r in by_run.qa_runs.rows] == ["qa-r1"]
    assert {(r[0], r[1]) for r in by_run.qa_metrics.rows} == {("ev-1", "hybrid")}
    parsed = ParsedReport(report.render_html(by_run))
    assert [r["run_id"] for r in parsed.records("qa_runs")] == ["qa-r1"]
    assert [r["run_id"] for r in parsed.records("qa_metrics")] == ["qa-r1"]

    by_eval = report.load_report(warehouse, run="ev-2")  # an eval_id: its configurations and their runs
    assert [r[0] for r in by_eval.qa_runs.rows] == ["qa-r2"]
    assert sorted(r[1] for r in by_eval.qa_metrics.rows) == ["hybrid+rerank", "vector-only"]
    text = report.render_html(by_eval)
    assert "ev-2 · hybrid+rerank: no reranker model configured" in text

    unfiltered = report.load_report(warehouse)
    assert [r[0] for r in unfiltered.qa_runs.rows] == ["qa-r2", "qa-r1"]  # newest first
    assert len(unfiltered.qa_metrics.rows) == 3

    nothing = report.render_html(report.load_report(warehouse, run="nope"))
    assert "No data: no batch-QA runs for run &#x27;nope&#x27;" in nothing
    assert "No data: no QA metrics for run &#x27;nope&#x27;" in nothing


def test_kb_filter_applies_to_every_section(warehouse):
    only = report.load_report(warehouse, kb="other")
    assert {r[0] for r in only.chunk_quality.rows} == {"other"}
    assert {r[0] for r in only.length_hist.rows} == {"other"}
    assert not only.ingest_runs.rows and not only.ingest_failures.rows
    assert not only.qa_runs.rows and not only.qa_metrics.rows


def test_empty_warehouse_says_no_data(tmp_path):
    w = tmp_path / "kbflow.duckdb"
    with db.connect(w):  # tables and views, no rows
        pass
    loaded = report.load_report(w)
    assert set(loaded.row_counts().values()) == {0}
    text = report.render_html(loaded)
    assert text.count('class="nodata"') == len(report.SECTIONS)
    assert ParsedReport(text).tables == [] and ParsedReport(text).charts == []


def test_older_warehouse_without_qa_metrics(warehouse):
    with duckdb.connect(str(warehouse)) as con:
        con.execute("DROP TABLE qa_metrics")
    loaded = report.load_report(warehouse, run="qa-r2")
    assert loaded.qa_metrics.missing == "this warehouse has no qa_metrics table yet"
    assert [r[0] for r in loaded.qa_runs.rows] == ["qa-r2"]
    assert "No data: this warehouse has no qa_metrics table yet." in report.render_html(loaded)


def test_cli_writes_the_report_and_prints_the_counts(warehouse, tmp_path, capsys):
    out = tmp_path / "out" / "report.html"
    assert main(["report", "--home", str(warehouse.parent), "--out", str(out), "--run", "ev-2"]) == 0
    printed = capsys.readouterr().out
    assert str(out) in printed
    assert re.search(r"chunk quality\s*│\s*3\b", printed) and re.search(r"QA metrics\s*│\s*2\b", printed)
    assert ParsedReport(out.read_text(encoding="utf-8")).records("qa_runs")[0]["run_id"] == "qa-r2"
    assert not list(out.parent.glob("*.tmp"))


def test_cli_without_a_warehouse_is_a_clear_error(tmp_path, capsys):
    out = tmp_path / "report.html"
    assert main(["report", "--home", str(tmp_path / "nowhere"), "--out", str(out)]) == 6  # NotFoundError
    assert "no warehouse at" in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "nowhere").exists()

    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "kbflow.duckdb").write_bytes(b"not a database" * 100)
    assert main(["report", "--home", str(tmp_path / "junk"), "--out", str(out)]) == 2
    assert "cannot read the warehouse" in capsys.readouterr().err
    assert not out.exists()


# ---------------------------------------------------------------- QA: per question, funnel, metrics chart


def _result(run_id: str, qid: str, gold_rank: int | None, in_context: bool | None, answer: str = "答案") -> QAResult:
    return QAResult(run_id=run_id, qid=qid, question=f"问题 {qid}？", answer=answer, answer_mode="extractive",
                    citations=[f"c{qid}"] if in_context else [], context_chunk_ids=[f"c{qid}"],
                    retrieved_chunk_ids=[f"c{qid}"], top_sources=["a.md"], confidence=0.5, score_scale="rrf",
                    insufficient=False, widened=False, context_chars=10, expected_answers=[], gold_rank=gold_rank,
                    gold_in_context=in_context, error="", recall_ms=1, fusion_ms=1, rerank_ms=0, rescue_ms=0,
                    context_ms=1, answer_ms=1, total_ms=5)


def _traces(run_id: str, qid: str, gold_stages: dict[str, int]) -> list[QATrace]:
    """One gold candidate per stage named (at that rank) and one non-gold candidate in every stage."""
    order = {"vector": 1, "bm25": 2, "rrf": 3, "mmr": 4, "context": 9}
    out = [QATrace(run_id, qid, stage, n, f"x{qid}", 1, 0.1, False) for stage, n in order.items()]
    out += [QATrace(run_id, qid, stage, order[stage], f"g{qid}", rank, 0.9, True) for stage, rank in gold_stages.items()]
    return out


def _land_run(w: Path, tmp: Path, run: QARun, results: list[QAResult], traces: list[QATrace]) -> None:
    parts = tmp / f"parts-{run.run_id}"
    res = write_parquet(to_table(results, QAResult), parts / "results.parquet")
    tra = write_parquet(to_table(traces, QATrace), parts / "traces.parquet")
    db.land_qa(w, run, [res], [tra])


@pytest.fixture
def qa_warehouse(warehouse, tmp_path) -> Path:
    """The warehouse plus a user's run `qa-r3` (3 labelled questions: a hit, a miss lost after rrf, a
    miss no channel recalled) and an ablation eval `ev-3` of two configurations over their own runs."""
    w = warehouse
    _land_run(w, tmp_path, _qa_run("qa-r3", "demo", T0 + timedelta(hours=3)), [
        _result("qa-r3", "q1", 1, True), _result("qa-r3", "q2", None, False), _result("qa-r3", "q3", None, False)],
        _traces("qa-r3", "q1", {"vector": 1, "rrf": 1, "mmr": 1, "context": 1})
        + _traces("qa-r3", "q2", {"bm25": 4, "rrf": 12}) + _traces("qa-r3", "q3", {}))
    for run_id, config, hit in (("qa-e1", "vector-only", 0.5), ("qa-e2", "hybrid", 0.9)):
        _land_run(w, tmp_path, _qa_run(run_id, "demo", T0 + timedelta(hours=4)), [_result(run_id, "q1", 1, True)],
                  _traces(run_id, "q1", {"vector": 1, "context": 1}))
        m = _metric("ev-3", config, run_id, hit)
        db.save_metrics(w, [QAMetric(**{**m.__dict__, "hit_at_5": hit + 0.05, "mrr_at_10": hit - 0.1})])
    return w


def test_questions_section_lists_misses_first_with_the_stage_where_gold_was_lost(qa_warehouse):
    loaded = report.load_report(qa_warehouse)
    assert {r[0] for r in loaded.qa_questions.rows} == {"qa-r3"}  # the user's newest run, not the eval's
    text = report.render_html(loaded)
    parsed = ParsedReport(text)
    rows = parsed.records("qa_questions", "qa-r3")  # data-kb carries the run id here
    assert [r["qid"] for r in rows] == ["q2", "q3", "q1"]  # misses first
    assert rows[0]["lost"] == "last held by rrf (rank 12)"
    assert rows[1]["lost"] == "no recall channel found it"
    assert rows[2]["lost"] == "" and rows[2]["gold_rank"] == "1" and rows[2]["citations"] == "cq1"
    misses = text[text.index('<ol class="misses"'):text.index("</ol>")]
    assert misses.index("q2") < misses.index("q3") and "q1" not in misses
    assert "3 questions, 3 labelled, 2 misses" in text


def test_funnel_shows_qa_stage_hits_per_stage_in_order(qa_warehouse):
    loaded = report.load_report(qa_warehouse)
    _, expected = db.query(qa_warehouse, "SELECT stage, with_gold, gold_in_top5, labelled_questions FROM "
                                         "qa_stage_hits WHERE run_id = 'qa-r3' ORDER BY stage_order")
    text = report.render_html(loaded)
    funnel = text[text.index('data-chart="funnel"'):]
    funnel = funnel[:funnel.index("</svg>")]
    shown = re.findall(r'<g class="stage"><text[^>]*>([^<]+)</text>.*?(\d+)/(\d+) with gold · (\d+) in top 5', funnel)
    assert [(st, int(a), int(c), int(b)) for st, a, b, c in shown] == [tuple(r) for r in expected]
    assert [r[0] for r in expected] == ["vector", "bm25", "rrf", "mmr", "context"]
    assert expected[2][1:3] == (2, 1)  # rrf: gold for q1 and q2, in the top 5 only for q1


def test_metrics_chart_per_configuration_and_config_names_on_runs(qa_warehouse):
    text = report.render_html(report.load_report(qa_warehouse, run="ev-3"))
    chart = [c for c in ParsedReport(text).charts if c["attrs"]["data-chart"] == "metrics"]
    assert len(chart) == 1
    titles = re.findall(r'<rect class="metric"[^>]*height="([\d.]+)" fill="#\w+"><title>([^<]+)</title>', text)
    assert {t for _, t in titles} >= {"vector-only — hit@1: 0.5", "hybrid — hit@1: 0.9", "hybrid — MRR@10: 0.8"}
    heights = {t: float(h) for h, t in titles}
    assert heights["hybrid — hit@1: 0.9"] == pytest.approx(heights["vector-only — hit@1: 0.5"] * 0.9 / 0.5, rel=1e-3)
    runs = ParsedReport(text).records("qa_runs")
    assert {r["run_id"]: r["config"] for r in runs} == {"qa-e1": "vector-only · eval ev-3", "qa-e2": "hybrid · eval ev-3"}
    assert {r[0] for r in report.load_report(qa_warehouse, run="ev-3").qa_questions.rows} == {"qa-e1", "qa-e2"}


def test_cli_report_refuses_to_clobber(qa_warehouse, tmp_path, capsys):
    home = qa_warehouse.parent
    before = qa_warehouse.read_bytes()
    assert main(["report", "--home", str(home), "--out", str(qa_warehouse)]) == 2  # not an .html file
    assert main(["report", "--home", str(home), "--out", str(home / "r.html")]) == 7  # inside the home
    assert "inside the kbflow home" in capsys.readouterr().err
    mine = tmp_path / "notes.html"
    mine.write_text("<html>my own notes</html>", encoding="utf-8")
    assert main(["report", "--home", str(home), "--out", str(mine)]) == 7
    assert "not a file kbflow wrote" in capsys.readouterr().err
    assert mine.read_text(encoding="utf-8") == "<html>my own notes</html>" and qa_warehouse.read_bytes() == before
    assert not (home / "r.html").exists()
    assert main(["report", "--home", str(home), "--out", str(mine), "--force"]) == 0
    assert main(["report", "--home", str(home), "--out", str(mine)]) == 0  # a report of ours: rewritten freely
    for argv, code, words in ((["--run", "nope"], 6, "no batch-QA run or eval named 'nope'"),
                              (["--kb", "nope"], 6, "the knowledge bases here are: demo, other")):
        capsys.readouterr()
        assert main(["report", "--home", str(home), "--out", str(tmp_path / "x.html"), *argv]) == code
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0]
    assert not (tmp_path / "x.html").exists()


@pytest.mark.skipif(shutil.which("chromium") is None,
                    reason="chromium not installed (apt-get install -y chromium fonts-noto-cjk)")
def test_chromium_renders_the_report(qa_warehouse, tmp_path):
    from PIL import Image

    html_path = report.write_report(report.load_report(qa_warehouse), tmp_path / "report.html")
    png = tmp_path / "report.png"
    subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={png}", "--window-size=1280,1600",
                    html_path.as_uri()], check=True, capture_output=True, timeout=180)
    with Image.open(png) as image:
        assert image.size == (1280, 1600)
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    assert len(colours) > 50  # text, tables and bars, not a blank page
    assert (0, 114, 178) in {c for _, c in colours}  # the histogram's bar colour
