"""`kbflow report`: one self-contained HTML file over the warehouse (SPEC §3, §5).

`load_report` reads the DuckDB file read-only into plain rows; `render_html` turns them into an
HTML string with inline CSS and inline SVG charts, nothing fetched from the network. Every text
that comes from the warehouse (document names, reasons, run ids) is escaped.
"""
from __future__ import annotations

import html
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import duckdb

from schemas.chunk import CHUNK_TYPES
from schemas.ingest import INGEST_FAILURE_COLUMNS, INGEST_RUN_COLUMNS
from schemas.qa import QA_METRIC_COLUMNS, QA_RUN_COLUMNS
from tasks.common.display import format_cell  # noqa: F401 - also this module's cell format (tests use it)
from tasks.common.files import atomic_path
from warehouse import db

TOP_DOCUMENTS = 25  # documents in the chunk-type chart; the rest are counted, not drawn
MAX_TABLE_ROWS = 200  # rows shown per table; `kbflow sql` shows the rest

# Short table headings; the full column name is the heading's tooltip.
HEADINGS = {
    "total_chunks": "total", "text_chunks": "text", "table_chunks": "table", "image_chunks": "image",
    "heading_only_chunks": "heading<20", "heading_only_share": "share", "fragments": "frag<100",
    "median_text_chars": "median", "max_text_chars": "max", "heading_chains": "chains",
    "longest_heading_chain": "longest", "started_at": "started", "failed_at": "failed at",
    "files_seen": "seen", "files_landed": "landed", "files_failed": "failed", "files_added": "added",
    "files_changed": "changed", "files_removed": "removed", "files_skipped": "skipped",
    "chunks_landed": "chunks", "chunks_indexed": "indexed", "chunks_embedded": "embedded",
    "parse_backend": "backend", "task_runner": "runner", "error_kind": "error", "invalid_rows": "invalid",
    "hit_at_1": "hit@1", "hit_at_3": "hit@3", "hit_at_5": "hit@5", "hit_at_10": "hit@10",
    "mrr_at_10": "MRR@10", "recall_at_5": "R@5", "recall_at_10": "R@10", "ndcg_at_10": "nDCG@10",
    "exact_match": "EM", "answer_f1": "F1", "contains_answer": "contains", "answers_all_of": "all-of",
    "retrieval_qps": "q/s", "with_answers": "answers", "llm_model": "LLM", "rerank_model": "reranker",
}
QUALITY_LEGEND = ("总切片数 total · 文本切片 text = all but table/image/chart · 纯标题切片 heading<20 = heading-only "
                  "chunks under 20 chars, share = of text · 正文碎片 frag<100 = body text under 100 chars · "
                  "median/max = chars of text, heading and list chunks · 连续标题链 chains = runs of ≥2 "
                  "consecutive headings, longest = the longest run")

# Okabe–Ito colours (readable with colour-blindness), one per chunk type; unknown types are grey.
TYPE_COLOURS = dict(zip(CHUNK_TYPES, ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#F0E442",
                                      "#56B4E9", "#7F7F7F", "#332288")))
OTHER_COLOUR = "#BBBBBB"
BAR_COLOUR = "#0072B2"


@dataclass(frozen=True)
class Rows:
    """One section's data; `missing` says why a table could not be read (an older warehouse)."""

    columns: list[str]
    rows: list[tuple]
    missing: str = ""


@dataclass(frozen=True)
class Report:
    db_path: str
    generated_at: datetime
    kb: str | None
    run: str | None  # a qa run_id or an eval_id
    chunk_quality: Rows
    length_hist: Rows  # kb, bucket_order, bucket, chunks (all chunk types)
    chunk_types: Rows  # kb, source, chunk_type, chunks
    ingest_runs: Rows
    ingest_failures: Rows
    qa_runs: Rows
    qa_metrics: Rows
    qa_questions: Rows = Rows([], [])  # per question of the focus runs: answer, citations, gold rank, where lost
    stage_hits: Rows = Rows([], [])  # qa_stage_hits of the focus runs

    def row_counts(self) -> dict[str, int]:
        return {"chunk quality": len(self.chunk_quality.rows), "length histogram buckets": len(self.length_hist.rows),
                "documents × chunk types": len(self.chunk_types.rows), "ingest runs": len(self.ingest_runs.rows),
                "ingest failures": len(self.ingest_failures.rows), "QA runs": len(self.qa_runs.rows),
                "QA questions": len(self.qa_questions.rows), "QA metrics": len(self.qa_metrics.rows)}


# ---------------------------------------------------------------- queries


def _plain(value: Any) -> Any:
    return float(value) if isinstance(value, Decimal) else value


def _fetch(con: duckdb.DuckDBPyConnection, relations: set[str], relation: str, sql: str, params: Sequence[Any],
           keep: Sequence[str] | None = None) -> Rows:
    """Rows of `sql` over `relation`, or a `missing` note when the warehouse lacks it; `keep` picks
    and orders the columns (those the table does not have are skipped)."""
    if relation not in relations:
        return Rows([], [], missing=f"this warehouse has no {relation} table yet")
    cur = con.execute(sql, list(params))
    columns = [d[0] for d in cur.description]
    rows = [tuple(_plain(v) for v in row) for row in cur.fetchall()]
    if keep is None:
        return Rows(columns, rows)
    picked = [columns.index(c) for c in keep if c in columns]
    return Rows([columns[i] for i in picked], [tuple(row[i] for i in picked) for row in rows])


def _where(conditions: list[tuple[str, list[Any]]]) -> tuple[str, list[Any]]:
    """A WHERE clause AND-ing (sql, params) conditions; empty when there are none."""
    if not conditions:
        return "", []
    params = [p for _, values in conditions for p in values]
    return "WHERE " + " AND ".join(f"({sql})" for sql, _ in conditions), params


RUN_COLUMNS = (*QA_RUN_COLUMNS[:3], "config", *QA_RUN_COLUMNS[3:])
MAX_FOCUS_RUNS = 6  # runs given a funnel and a per-question section (an --ablate eval has 4-5)


def _focus_runs(con: duckdb.DuckDBPyConnection, relations: set[str], kb: str | None, run: str | None) -> list[str]:
    """The batch-QA runs the report explains question by question: `run` (or the runs of the eval
    `run`), else each knowledge base's newest run of the user's own (not an evaluation's) and its
    newest labelled one."""
    if "qa_runs" not in relations:
        return []
    has_metrics = "qa_metrics" in relations
    if run:
        sql = ("SELECT run_id FROM qa_runs WHERE run_id = ?"
               + (" OR run_id IN (SELECT run_id FROM qa_metrics WHERE eval_id = ?)" if has_metrics else "")
               + " ORDER BY started_at")
        rows = con.execute(sql, [run, run] if has_metrics else [run]).fetchall()
    else:
        own = " AND run_id NOT IN (SELECT run_id FROM qa_metrics)" if has_metrics else ""
        newest = con.execute("SELECT arg_max(run_id, started_at), "
                             "arg_max(run_id, started_at) FILTER (WHERE labelled > 0) "
                             f"FROM qa_runs WHERE (kb = ? OR ?::VARCHAR IS NULL){own} GROUP BY kb ORDER BY kb",
                             [kb, kb]).fetchall()
        # the newest run, and the newest labelled one when that is another (a quick question asked since)
        rows = [(run_id,) for pair in newest for run_id in dict.fromkeys(pair) if run_id]
        if not rows and has_metrics:  # only evaluations so far: the newest one's runs
            rows = con.execute("SELECT run_id FROM qa_metrics WHERE run_id <> '' AND eval_id = (SELECT arg_max("
                               "eval_id, created_at) FROM qa_metrics WHERE kb = ? OR ?::VARCHAR IS NULL)",
                               [kb, kb]).fetchall()
    return [r[0] for r in rows][:MAX_FOCUS_RUNS]


def _questions(con: duckdb.DuckDBPyConnection, relations: set[str], runs: list[str]) -> Rows:
    """Per question of `runs`: the answer and what it cites, the gold rank and, for a miss (gold never
    reached the context), the last stage that still held gold evidence (qa_misses)."""
    if not runs or not {"qa_results", "qa_misses"} <= relations:
        return Rows([], [])
    cur = con.execute(
        "SELECT r.run_id, r.qid, r.question, r.answer, r.citations, r.confidence, r.answer_mode, r.gold_rank, "
        "r.gold_in_context, m.last_stage_with_gold, m.best_gold_rank_there, m.best_recall_rank "
        "FROM qa_results r LEFT JOIN qa_misses m USING (run_id, qid) WHERE list_contains(?, r.run_id) "
        "ORDER BY list_position(?, r.run_id), (r.gold_in_context = FALSE) DESC, r.qid", [runs, runs])
    return Rows([d[0] for d in cur.description], [tuple(_plain(v) for v in row) for row in cur.fetchall()])


def _stage_hits(con: duckdb.DuckDBPyConnection, relations: set[str], runs: list[str]) -> Rows:
    if not runs or "qa_stage_hits" not in relations:
        return Rows([], [])
    cur = con.execute("SELECT * FROM qa_stage_hits WHERE list_contains(?, run_id) "
                      "ORDER BY list_position(?, run_id), stage_order", [runs, runs])
    return Rows([d[0] for d in cur.description], [tuple(_plain(v) for v in row) for row in cur.fetchall()])


def load_report(db_path: Path, kb: str | None = None, run: str | None = None) -> Report:
    """Read every section from the warehouse (read-only). `run` keeps the QA runs and metrics of
    one batch-QA run_id or one eval_id; `kb` keeps one knowledge base everywhere."""
    with db.connect(db_path, read_only=True) as con:
        relations = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        kb_only = [("kb = ?", [kb])] if kb else []
        kb_where, kb_params = _where(kb_only)

        def fetch(relation: str, sql: str, params: Sequence[Any] = (), keep: Sequence[str] | None = None) -> Rows:
            return _fetch(con, relations, relation, sql, params, keep)

        # A --run matches a batch-QA run itself or the runs an evaluation produced.
        run_of_qa = (("run_id = ? OR run_id IN (SELECT run_id FROM qa_metrics WHERE eval_id = ?)", [run, run])
                     if "qa_metrics" in relations else ("run_id = ?", [run]))
        qa_where, qa_params = _where(kb_only + ([run_of_qa] if run else []))
        # an evaluation's runs carry its configuration's name (two eval runs no longer both read "hybrid")
        config_of_run = (", (SELECT any_value(m.config || ' · eval ' || m.eval_id) FROM qa_metrics m "
                         "WHERE m.run_id = qa_runs.run_id) AS config" if "qa_metrics" in relations else "")
        metric_where, metric_params = _where(kb_only + ([("eval_id = ? OR run_id = ?", [run, run])] if run else []))
        focus = _focus_runs(con, relations, kb, run)
        return Report(
            db_path=str(db_path), generated_at=datetime.now(timezone.utc), kb=kb, run=run,
            qa_questions=_questions(con, relations, focus), stage_hits=_stage_hits(con, relations, focus),
            chunk_quality=fetch("chunk_quality", f"SELECT * FROM chunk_quality {kb_where} ORDER BY kb, source",
                                kb_params),
            length_hist=fetch("chunk_length_hist",
                              f"SELECT kb, bucket_order, bucket, sum(chunks)::BIGINT AS chunks FROM chunk_length_hist "
                              f"{kb_where} GROUP BY ALL ORDER BY kb, bucket_order", kb_params),
            chunk_types=fetch("chunks", f"SELECT kb, source, chunk_type, count(*) AS chunks FROM chunks {kb_where} "
                                        "GROUP BY ALL ORDER BY kb, source, chunk_type", kb_params),
            ingest_runs=fetch("ingest_runs", f"SELECT *, epoch(finished_at - started_at) AS seconds FROM ingest_runs "
                                             f"{kb_where} ORDER BY started_at DESC", kb_params, INGEST_RUN_COLUMNS),
            ingest_failures=fetch("ingest_failures", f"SELECT * FROM ingest_failures {kb_where} "
                                                     "ORDER BY failed_at DESC", kb_params, INGEST_FAILURE_COLUMNS),
            qa_runs=fetch("qa_runs", f"SELECT *, epoch(finished_at - started_at) AS seconds{config_of_run} "
                                     f"FROM qa_runs {qa_where} ORDER BY started_at DESC", qa_params, RUN_COLUMNS),
            qa_metrics=fetch("qa_metrics", f"SELECT * FROM qa_metrics {metric_where} ORDER BY created_at DESC, config",
                             metric_params, QA_METRIC_COLUMNS),
        )


# ---------------------------------------------------------------- shaping


def by_kb(rows: Rows) -> dict[str, list[dict[str, Any]]]:
    """Rows as dicts grouped by their `kb` column, in first-seen order."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows.rows:
        record = dict(zip(rows.columns, row))
        groups[record["kb"]].append(record)
    return dict(groups)


def top_documents(type_counts: list[dict[str, Any]], n: int) -> tuple[list[tuple[str, dict[str, int]]], int]:
    """(source, {chunk_type: chunks}) of the `n` documents with most chunks, most first (ties by
    name), and how many documents were left out."""
    per_doc: dict[str, dict[str, int]] = defaultdict(dict)
    for r in type_counts:
        per_doc[r["source"]][r["chunk_type"]] = r["chunks"]
    ranked = sorted(per_doc.items(), key=lambda item: (-sum(item[1].values()), item[0]))
    return ranked[:n], max(0, len(ranked) - n)


# ---------------------------------------------------------------- SVG charts

esc = html.escape


def _text_width(text: str, font_px: float) -> float:
    """Rough rendered width: CJK and other wide characters take a full em, others ~0.6 em."""
    return sum(font_px if ord(ch) > 0x2E7F else font_px * 0.6 for ch in text)


def _clip(text: str, max_px: float, font_px: float) -> str:
    if _text_width(text, font_px) <= max_px:
        return text
    while text and _text_width(text + "…", font_px) > max_px:
        text = text[:-1]
    return text + "…"


def histogram_svg(buckets: list[tuple[str, int]], *, title: str) -> str:
    """Vertical bars, one per (label, count), the count above each bar."""
    width, height, left, right, top, bottom = 720, 280, 56, 16, 28, 52
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max((count for _, count in buckets), default=0) or 1
    slot = plot_w / max(len(buckets), 1)
    parts = [(f'<svg class="chart" data-chart="length-hist" role="img" aria-label="{esc(title)}" '
              f'viewBox="0 0 {width} {height}" width="{width}" height="{height}">'),
             f'<text x="{left}" y="16" class="axis-title">chunks</text>']
    for i, (label, count) in enumerate(buckets):
        bar_h = plot_h * count / peak
        x, y = left + i * slot + slot * 0.12, top + plot_h - bar_h
        parts.append(f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{slot * 0.76:.1f}" height="{bar_h:.1f}" '
                     f'fill="{BAR_COLOUR}"><title>{esc(label)} chars: {count} chunks</title></rect>')
        centre = x + slot * 0.38
        parts.append(f'<text x="{centre:.1f}" y="{y - 5:.1f}" text-anchor="middle" class="value">{count}</text>')
        parts.append(f'<text x="{centre:.1f}" y="{top + plot_h + 18}" text-anchor="middle">{esc(label)}</text>')
    parts.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{width - right}" y2="{top + plot_h}" class="axis"/>')
    parts.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 8}" text-anchor="middle" class="axis-title">'
                 'characters per chunk</text></svg>')
    return "".join(parts)


def stacked_bars_svg(documents: list[tuple[str, dict[str, int]]], *, title: str) -> str:
    """One horizontal bar per document, split by chunk type, with a legend of the types shown."""
    types = [t for t in CHUNK_TYPES if any(t in counts for _, counts in documents)]
    types += sorted({t for _, counts in documents for t in counts} - set(types))
    width, label_w, row_h, legend_h, font_px = 1000, 300, 24, 34, 13
    bar_x, bar_w = label_w + 10, width - label_w - 70
    height = legend_h + row_h * len(documents) + 8
    peak = max((sum(counts.values()) for _, counts in documents), default=0) or 1
    parts = [(f'<svg class="chart" data-chart="chunk-types" role="img" aria-label="{esc(title)}" '
              f'viewBox="0 0 {width} {height}" width="{width}" height="{height}">')]
    x = bar_x
    for t in types:  # legend
        parts.append(f'<rect x="{x}" y="8" width="14" height="14" fill="{TYPE_COLOURS.get(t, OTHER_COLOUR)}"/>'
                     f'<text x="{x + 19}" y="20">{esc(t)}</text>')
        x += 19 + _text_width(t, font_px) + 18
    for row, (source, counts) in enumerate(documents):
        y = legend_h + row * row_h
        parts.append(f'<g class="doc"><text x="{label_w}" y="{y + 16}" text-anchor="end">'
                     f'<title>{esc(source)}</title>{esc(_clip(source, label_w - 8, font_px))}</text>')
        x = bar_x
        for t in types:
            if counts.get(t):
                w = bar_w * counts[t] / peak
                parts.append(f'<rect class="segment" x="{x:.1f}" y="{y + 4}" width="{w:.1f}" height="{row_h - 8}" '
                             f'fill="{TYPE_COLOURS.get(t, OTHER_COLOUR)}"><title>{esc(source)} — {esc(t)}: '
                             f'{counts[t]}</title></rect>')
                x += w
        parts.append(f'<text x="{x + 6:.1f}" y="{y + 16}" class="value">{sum(counts.values())}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


METRIC_BARS = (("hit_at_1", "hit@1"), ("hit_at_5", "hit@5"), ("mrr_at_10", "MRR@10"), ("recall_at_10", "R@10"),
               ("ndcg_at_10", "nDCG@10"), ("contains_answer", "has answer"))
METRIC_COLOURS = ("#0072B2", "#56B4E9", "#009E73", "#E69F00", "#CC79A7", "#D55E00")


def metrics_svg(configs: list[tuple[str, dict[str, float | None]]], *, title: str) -> str:
    """Grouped vertical bars on a 0–1 scale: one group per configuration, one bar per metric."""
    shown = [(key, label) for key, label in METRIC_BARS if any(m.get(key) is not None for _, m in configs)]
    width, height, left, top, bottom = 900, 300, 44, 40, 44
    plot_w, plot_h = width - left - 16, height - top - bottom
    slot = plot_w / max(len(configs), 1)
    bar_w = slot * 0.8 / max(len(shown), 1)
    parts = [(f'<svg class="chart" data-chart="metrics" role="img" aria-label="{esc(title)}" '
              f'viewBox="0 0 {width} {height}" width="{width}" height="{height}">')]
    x = left
    for (key, label), colour in zip(shown, METRIC_COLOURS):  # legend
        parts.append(f'<rect x="{x}" y="6" width="12" height="12" fill="{colour}"/><text x="{x + 16}" y="17">'
                     f'{esc(label)}</text>')
        x += 16 + _text_width(label, 13) + 16
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        y = top + plot_h * (1 - tick)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - 16}" y2="{y:.1f}" class="grid"/>'
                     f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" class="axis-title">{tick:g}</text>')
    for i, (config, values) in enumerate(configs):
        x0 = left + i * slot + slot * 0.1
        for j, ((key, label), colour) in enumerate(zip(shown, METRIC_COLOURS)):
            value = values.get(key)
            if value is None:
                continue
            bar_h = plot_h * max(0.0, min(1.0, value))
            x = x0 + j * bar_w
            parts.append(f'<rect class="metric" x="{x:.1f}" y="{top + plot_h - bar_h:.1f}" width="{bar_w * 0.9:.1f}" '
                         f'height="{bar_h:.1f}" fill="{colour}"><title>{esc(config)} — {esc(label)}: '
                         f'{format_cell(value)}</title></rect>')
        parts.append(f'<text x="{x0 + slot * 0.4:.1f}" y="{top + plot_h + 18}" text-anchor="middle">'
                     f'{esc(_clip(config, slot - 4, 13))}</text>')
    parts.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{width - 16}" y2="{top + plot_h}" class="axis"/></svg>')
    return "".join(parts)


def funnel_svg(stages: list[dict[str, Any]], *, title: str) -> str:
    """One row per pipeline stage: the share of labelled questions with gold evidence among the
    stage's candidates (light) and within its top 5 (dark); where the bars shrink, evidence is lost."""
    width, label_w, row_h, top = 900, 110, 26, 8
    bar_w = width - label_w - 230
    height = top + row_h * len(stages) + 8
    parts = [(f'<svg class="chart" data-chart="funnel" role="img" aria-label="{esc(title)}" '
              f'viewBox="0 0 {width} {height}" width="{width}" height="{height}">')]
    for i, st in enumerate(stages):
        y = top + i * row_h
        labelled = st["labelled_questions"] or 1
        with_gold, top5 = st["with_gold"] / labelled, st["gold_in_top5"] / labelled
        parts.append(f'<g class="stage"><text x="{label_w - 8}" y="{y + 17}" text-anchor="end">{esc(st["stage"])}</text>'
                     f'<rect class="with-gold" x="{label_w}" y="{y + 4}" width="{bar_w * with_gold:.1f}" '
                     f'height="{row_h - 8}" fill="#A6CEE3"><title>{esc(st["stage"])}: gold among the candidates of '
                     f'{st["with_gold"]} of {st["labelled_questions"]} labelled questions</title></rect>'
                     f'<rect class="top5" x="{label_w}" y="{y + 8}" width="{bar_w * top5:.1f}" height="{row_h - 16}" '
                     f'fill="#0072B2"><title>{esc(st["stage"])}: gold in the top 5 for {st["gold_in_top5"]}</title>'
                     f'</rect><text x="{label_w + bar_w + 8}" y="{y + 17}" class="value">{st["with_gold"]}/'
                     f'{st["labelled_questions"]} with gold · {st["gold_in_top5"]} in top 5</text></g>')
    parts.append("</svg>")
    return "".join(parts)


# ---------------------------------------------------------------- HTML

CSS = """
body { font-family: "Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "PingFang SC", "Microsoft YaHei",
       "WenQuanYi Micro Hei", sans-serif; margin: 24px 32px; color: #222; background: #fff; font-size: 14px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 32px 0 8px; padding-bottom: 4px; border-bottom: 2px solid #0072B2; }
h3 { font-size: 15px; margin: 18px 0 6px; }
.meta, .note, .legend { color: #555; font-size: 12px; }
.nodata { color: #8a6d00; background: #fff8e1; padding: 6px 10px; border-left: 3px solid #e0b000; }
nav a { margin-right: 14px; color: #0072B2; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 12px; margin: 4px 0; }
th, td { border: 1px solid #ddd; padding: 2px 5px; text-align: left; vertical-align: top; white-space: nowrap; }
th { background: #f0f4f8; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.reason { white-space: normal; min-width: 160px; max-width: 520px; word-break: break-word; }
tr:nth-child(even) td { background: #fafafa; }
svg.chart { max-width: 100%; height: auto; display: block; margin: 6px 0; }
svg text { font-size: 13px; fill: #333; }
svg text.value { font-size: 12px; fill: #111; }
svg text.axis-title { font-size: 12px; fill: #666; }
svg line.axis { stroke: #999; }
svg line.grid { stroke: #eee; }
ol.misses li { margin: 2px 0; }
.lost { color: #B00020; }
td.answer { white-space: normal; min-width: 240px; max-width: 560px; }
td.question { white-space: normal; min-width: 160px; max-width: 320px; }
"""

SECTIONS = (("chunk-quality", "Chunk quality"), ("chunk-lengths", "Chunk lengths"), ("chunk-types", "Chunk types"),
            ("ingest-runs", "Ingest runs"), ("ingest-failures", "Ingest failures"), ("qa-runs", "QA runs"),
            ("qa-questions", "QA questions"), ("qa-funnel", "Where gold evidence is lost"),
            ("qa-metrics", "QA metrics"))
MAX_ANSWER_CHARS = 300


def _no_data(rows: Rows, what: str) -> str:
    return f'<p class="nodata">No data: {esc(rows.missing or what)}.</p>'


def _cell_class(column: str, value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return ' class="num"'
    if column in ("answer", "question"):
        return f' class="{column}"'
    return ' class="reason"' if column in ("reason", "note", "path", "citations", "lost") else ""


def table_html(rows: Rows, name: str, *, kb: str | None = None, drop: Iterable[str] = ()) -> str:
    """An HTML table (`data-table` = name, `data-kb` = kb) of at most MAX_TABLE_ROWS rows."""
    keep = [i for i, c in enumerate(rows.columns) if c not in set(drop)]
    head = "".join(f'<th title="{esc(rows.columns[i])}">{esc(HEADINGS.get(rows.columns[i], rows.columns[i]))}</th>'
                   for i in keep)
    body = []
    for row in rows.rows[:MAX_TABLE_ROWS]:
        cells = [f"<td{_cell_class(rows.columns[i], row[i])}>{esc(format_cell(row[i]))}</td>" for i in keep]
        body.append("<tr>" + "".join(cells) + "</tr>")
    kb_attr = f' data-kb="{esc(kb)}"' if kb is not None else ""
    more = len(rows.rows) - MAX_TABLE_ROWS
    note = f'<p class="note">… {more} more rows (see them with <code>kbflow sql</code>).</p>' if more > 0 else ""
    return (f'<div class="scroll"><table data-table="{esc(name)}"{kb_attr}><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>{note}')


def _per_kb(rows: Rows, render: Callable[[str, list[dict[str, Any]]], str], what: str) -> str:
    """`render(kb, records)` for each kb of `rows`, under a kb heading; or a no-data note."""
    groups = by_kb(rows)
    if not groups:
        return _no_data(rows, what)
    return "".join(f"<h3>kb {esc(kb)}</h3>{render(kb, records)}" for kb, records in groups.items())


def _quality_section(report: Report) -> str:
    def render(kb: str, records: list[dict[str, Any]]) -> str:
        return table_html(Rows(report.chunk_quality.columns, [tuple(r.values()) for r in records]),
                          "chunk_quality", kb=kb, drop=("kb",))
    body = _per_kb(report.chunk_quality, render, "no documents landed")
    return body + (f'<p class="legend">{esc(QUALITY_LEGEND)}</p>' if report.chunk_quality.rows else "")


def _lengths_section(report: Report) -> str:
    def render(kb: str, records: list[dict[str, Any]]) -> str:
        total = sum(r["chunks"] for r in records)
        return (f'<p class="note">{total} chunks of every type, by length of their content in characters.</p>'
                + histogram_svg([(r["bucket"], r["chunks"]) for r in records], title=f"chunk lengths of kb {kb}"))
    return _per_kb(report.length_hist, render, "no chunks")


def _types_section(report: Report) -> str:
    def render(kb: str, records: list[dict[str, Any]]) -> str:
        shown, omitted = top_documents(records, TOP_DOCUMENTS)
        note = (f"The {len(shown)} documents with the most chunks; {omitted} more not shown."
                if omitted else f"All {len(shown)} documents.")
        return f'<p class="note">{note}</p>' + stacked_bars_svg(shown, title=f"chunk types per document of kb {kb}")
    return _per_kb(report.chunk_types, render, "no chunks")


def _plain_section(rows: Rows, name: str, what: str) -> str:
    return table_html(rows, name) if rows.rows else _no_data(rows, what)


def _metrics_section(rows: Rows, what: str) -> str:
    """The metrics table, with each configuration's note (why it was skipped) below it: a note
    column would be mostly empty and push the table wider than the page."""
    if not rows.rows:
        return _no_data(rows, what)
    records = [dict(zip(rows.columns, row)) for row in rows.rows]
    notes = "".join(f"<li>{esc(r['eval_id'])} · {esc(r['config'])}: {esc(r['note'])}</li>"
                    for r in records[:MAX_TABLE_ROWS] if r.get("note"))
    return table_html(rows, "qa_metrics", drop=("note",)) + (f'<ul class="note">{notes}</ul>' if notes else "")


def _lost_at(record: dict[str, Any]) -> str:
    """Where a miss lost its gold evidence, in words."""
    if record["gold_in_context"] is not False:
        return ""
    if record["last_stage_with_gold"] is None:
        return "no recall channel found it"
    return f"last held by {record['last_stage_with_gold']} (rank {record['best_gold_rank_there']})"


def _records_by_run(rows: Rows) -> dict[str, list[dict[str, Any]]]:
    runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows.rows:
        record = dict(zip(rows.columns, row))
        runs[record["run_id"]].append(record)
    return runs


def _questions_section(report: Report, run_labels: dict[str, str], what: str) -> str:
    """Per focus run: its misses (gold never reached the context) first, then every question."""
    rows = report.qa_questions
    if not rows.rows:
        return _no_data(rows, what)
    runs = _records_by_run(rows)
    parts = []
    for run_id, records in runs.items():
        misses = [r for r in records if r["gold_in_context"] is False]
        labelled = sum(r["gold_in_context"] is not None for r in records)
        parts.append(f'<h3 data-run="{esc(run_id)}">run {esc(run_label(run_id, run_labels))}: {len(records)} questions, '
                     f'{labelled} labelled, {len(misses)} misses</h3>')
        if misses:
            items = "".join(f'<li><b>{esc(r["qid"])}</b> {esc(r["question"])} — <span class="lost">'
                            f'{esc(_lost_at(r))}</span></li>' for r in misses[:MAX_TABLE_ROWS])
            parts.append(f'<p class="note">Misses: the gold evidence never reached the answer\'s context.</p>'
                         f'<ol class="misses" data-run="{esc(run_id)}">{items}</ol>')
        elif labelled:
            parts.append('<p class="note">No misses: every labelled question had gold evidence in its context.</p>')
        table = Rows(["qid", "question", "answer", "citations", "confidence", "answer_mode", "gold_rank", "lost"],
                     [(r["qid"], r["question"], _shorten(r["answer"]), r["citations"], r["confidence"],
                       r["answer_mode"], r["gold_rank"], _lost_at(r)) for r in records])
        parts.append(table_html(table, "qa_questions", kb=run_id))
    return "".join(parts)


def _shorten(text: str | None) -> str:
    text = text or ""
    return text if len(text) <= MAX_ANSWER_CHARS else text[:MAX_ANSWER_CHARS] + "…"


def run_label(run_id: str, labels: dict[str, str]) -> str:
    return f"{run_id} ({labels[run_id]})" if labels.get(run_id) else run_id


def _funnel_section(report: Report, run_labels: dict[str, str], what: str) -> str:
    rows = report.stage_hits
    if not rows.rows:
        return _no_data(rows, what)
    runs = _records_by_run(rows)
    note = ('<p class="note">Per stage, in pipeline order: of the labelled questions, how many had gold evidence '
            'among the stage\'s candidates (light bar) and within its top 5 (dark bar).</p>')
    return note + "".join(f"<h3>run {esc(run_label(run_id, run_labels))}</h3>"
                          + funnel_svg(stages, title=f"stage funnel of run {run_id}")
                          for run_id, stages in runs.items())


def _metrics_chart(rows: Rows) -> str:
    """A chart per evaluation with more than one configuration that ran (the newest three)."""
    evals: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows.rows:
        record = dict(zip(rows.columns, row))
        if record["status"] != "skipped":
            evals[record["eval_id"]].append(record)
    charts = [f"<h3>eval {esc(eval_id)}</h3>" + metrics_svg([(r["config"], r) for r in records],
                                                           title=f"metrics per configuration of eval {eval_id}")
              for eval_id, records in list(evals.items())[:3] if len(records) > 1]
    return "".join(charts)


def render_html(report: Report) -> str:
    """The whole report as one HTML document (inline CSS and SVG; no external resources)."""
    run_note = f" for run {report.run!r}" if report.run else ""
    filters = ", ".join(f"{k} {v!r}" for k, v in (("kb", report.kb), ("QA run/eval", report.run)) if v) or "none"
    labels = {r[0]: r[report.qa_runs.columns.index("config")] or r[report.qa_runs.columns.index("mode")]
              for r in report.qa_runs.rows} if "config" in report.qa_runs.columns else {}
    bodies = {
        "chunk-quality": _quality_section(report),
        "chunk-lengths": _lengths_section(report),
        "chunk-types": _types_section(report),
        "ingest-runs": _plain_section(report.ingest_runs, "ingest_runs", "no ingest runs"),
        "ingest-failures": _plain_section(report.ingest_failures, "ingest_failures", "no ingest failures"),
        "qa-runs": _plain_section(report.qa_runs, "qa_runs", f"no batch-QA runs{run_note} (kbflow ask)"),
        "qa-questions": _questions_section(report, labels, f"no batch-QA run{run_note} to show (kbflow ask)"),
        "qa-funnel": _funnel_section(report, labels, f"no labelled questions{run_note} (gold evidence in the set)"),
        "qa-metrics": _metrics_chart(report.qa_metrics)
                      + _metrics_section(report.qa_metrics, f"no QA metrics{run_note} (kbflow eval)"),
    }
    nav = "".join(f'<a href="#{anchor}">{title}</a>' for anchor, title in SECTIONS)
    sections = "".join(f'<section id="{anchor}"><h2>{title}</h2>{bodies[anchor]}</section>'
                       for anchor, title in SECTIONS)
    return ('<!DOCTYPE html>\n<html lang="zh-CN"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<meta name="generator" content="kbflow report">'
            f"<title>kbflow report</title><style>{CSS}</style></head><body>"
            f'<h1>kbflow report</h1><p class="meta">warehouse {esc(report.db_path)} · generated '
            f'{report.generated_at:%Y-%m-%d %H:%M:%S} UTC · filters: {esc(filters)}</p>'
            f"<nav>{nav}</nav>{sections}</body></html>\n")


def write_report(report: Report, out: Path) -> Path:
    """Write the HTML atomically (temp file + rename)."""
    with atomic_path(out) as tmp:
        tmp.write_text(render_html(report), encoding="utf-8")
    return out
