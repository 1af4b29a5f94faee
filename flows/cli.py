"""The `kbflow` command: parse arguments, call a flow or a warehouse query, print the result."""
from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import sys
from collections.abc import Iterator
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Sequence

from rich.console import Console
from rich.table import Table

from schemas.errors import IndexIncompleteError, QueryError, UserError, WarehouseError
from schemas.settings import load_settings

console = Console(width=None if sys.stdout.isatty() else 160)


@contextlib.contextmanager
def progress_display() -> Iterator[None]:
    """Show the progress of long stages (files, chunks, questions: count, rate, time left) while the
    block runs; nothing when stdout is not a terminal (scripts, CI, pipes)."""
    if not sys.stdout.isatty():
        yield
        return
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    from tasks.common.progress import Update, listening

    columns = (TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[unit]}"),
               TaskProgressColumn(), TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=False) as bars:
        ids: dict[str, int] = {}

        def show(update: Update) -> None:
            if update.stage not in ids:
                ids[update.stage] = bars.add_task(update.stage, total=update.total, unit=update.unit)
            bars.update(ids[update.stage], completed=update.done, total=update.total)

        with listening(show):
            yield


def print_rows(columns: list[str], rows: Sequence[Sequence[Any]], fmt: str = "table", title: str | None = None) -> None:
    if fmt == "json":
        def plain(v: Any) -> Any:
            if isinstance(v, (datetime, date)):
                return v.isoformat()
            if isinstance(v, Decimal):
                return float(v)
            return v
        json.dump([{c: plain(v) for c, v in zip(columns, row)} for row in rows], sys.stdout, ensure_ascii=False,
                  indent=1, default=str)
        sys.stdout.write("\n")
    elif fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")  # like every other line printed (csv's default is "\r\n")
        writer.writerow(columns)
        writer.writerows(rows)
    else:
        table = Table(title=title, show_lines=False)
        for c in columns:
            table.add_column(c, overflow="fold")
        for row in rows:
            table.add_row(*("" if v is None else str(v) for v in row))
        console.print(table)


def cmd_ingest(args: argparse.Namespace) -> int:
    from flows.ingest import ingest

    from tasks.common.lock import check_free

    settings = load_settings(args.home)
    if not (args.wait if args.wait is not None else settings.runtime.ingest_lock_wait_s):
        check_free(settings.home, kb=args.kb)  # refuse before a flow run (and a server) is started
    incomplete = None
    with progress_display():
        try:
            summary = ingest(paths=[str(p) for p in args.paths], kb=args.kb, home=args.home,
                             runner=args.runner or settings.runtime.task_runner, dask_address=args.dask_address,
                             lock_wait_s=args.wait)
        except IndexIncompleteError as exc:  # landed, not all indexed: print the outcomes, then fail
            summary, incomplete = exc.summary, exc
    rows = [(o.source, o.status if o.status != "landed" else f"landed ({o.change})", o.chunks,
             f"{o.parse_seconds:.2f}" if o.status == "landed" else "", "yes" if o.parse_cached else "", o.reason)
            for o in summary.outcomes]
    print_rows(["source", "status", "chunks", "parse_s", "cached", "reason"], rows,
               title=f"ingest run {summary.run_id} → kb {summary.kb!r}")
    console.print(f"{summary.landed} landed, {summary.failed} failed or rejected; warehouse: "
                  f"{Path(summary.home) / 'kbflow.duckdb'}")
    console.print(f"{summary.added} added, {summary.changed} changed, {summary.skipped} unchanged (skipped), "
                  f"{summary.removed} removed (task runner: {summary.runner})")
    idx = summary.index
    console.print(f"indexed {idx.chunks} chunks of {idx.documents} documents into Chroma ({idx.embedded} newly "
                  f"embedded, {idx.removed} stale removed); BM25 holds {idx.bm25_chunks} chunks")
    if incomplete is not None:
        print(f"error: {incomplete}", file=sys.stderr)
        return incomplete.exit_code
    done = summary.landed + summary.skipped + summary.removed
    return 0 if done or not summary.outcomes else 1


# `kbflow stats` table headings (csv/json keep the view's column names); the legend says what they mean.
STATS_LABELS = {
    "total_chunks": "total", "text_chunks": "text", "table_chunks": "table", "image_chunks": "image",
    "heading_only_chunks": "heading<20", "heading_only_share": "share", "fragments": "frag<100",
    "median_text_chars": "median", "max_text_chars": "max", "heading_chains": "chains",
    "longest_heading_chain": "longest",
}
STATS_LEGEND = ("text = all but table/image/chart; heading<20 = heading-only chunks under 20 chars, share = of text; "
                "frag<100 = body text under 100 chars; median/max = chars of text, heading and list chunks; "
                "chains = runs of ≥2 consecutive headings, longest = the longest run. "
                "Also: views chunk_length_hist, section_stats, heading_runs (kbflow sql).")


def cmd_rm(args: argparse.Namespace) -> int:
    from flows.ingest import remove

    removed = remove(sources=args.sources, kb=args.kb, home=args.home, lock_wait_s=args.wait)
    print_rows(["source", "chunks removed from Chroma"], sorted(removed.items()), title=f"removed from kb {args.kb!r}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from tasks.index.sync import check

    result = check(load_settings(args.home), args.kb)
    print_rows(["store", "chunks", "missing ids (present in another store)"],
               [(name, count, ", ".join(result.missing.get(name, [])[:10]) +
                 (f" … (+{len(result.missing[name]) - 10})" if len(result.missing.get(name, [])) > 10 else ""))
                for name, count in (("duckdb", result.duckdb), ("chroma", result.chroma), ("bm25", result.bm25))],
               title=f"consistency of kb {args.kb!r}")
    console.print("consistent" if result.ok else "[red]INCONSISTENT[/red]: re-run `kbflow ingest` to repair")
    return 0 if result.ok else 1


def cmd_stats(args: argparse.Namespace) -> int:
    """The chunk-quality table of seed 000 §13.1, one row per document (view `chunk_quality`)."""
    import duckdb

    from warehouse.chunks import chunk_quality

    settings = load_settings(args.home)
    try:
        columns, rows = chunk_quality(settings.db_path, args.kb)
    except duckdb.CatalogException:  # a warehouse written before the view existed
        raise WarehouseError("the warehouse has no chunk_quality view yet; "
                             "run `kbflow ingest` once to update it") from None
    if args.format != "table":
        print_rows(columns, rows, args.format)
        return 0
    print_rows([STATS_LABELS.get(c, c) for c in columns], rows, title="chunk quality per document (seed 000 §13.1)")
    console.print(STATS_LEGEND, style="dim")
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    import duckdb

    from warehouse import db

    settings = load_settings(args.home)
    try:
        columns, rows = db.query(settings.db_path, args.query)
    except duckdb.Error as exc:
        raise QueryError(f"the query failed: {exc}") from None
    print_rows(columns, rows, args.format)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """One self-contained HTML file: chunk quality, chunk length/type charts, ingest and QA runs, QA metrics."""
    import duckdb

    from warehouse.report import load_report, write_report

    settings = load_settings(args.home)
    try:
        report = load_report(settings.db_path, kb=args.kb, run=args.run)
    except duckdb.Error as exc:  # e.g. not a DuckDB file
        raise WarehouseError(f"cannot read the warehouse {settings.db_path}: {exc}") from None
    out = write_report(report, args.out)
    print_rows(["section", "rows"], list(report.row_counts().items()), title="kbflow report")
    console.print(f"report: {out.resolve()}")
    return 0


def cmd_ask(args: argparse.Namespace) -> int:
    """Answer a question set (flow `batch_qa`) and print the run's summary."""
    from flows.batch_qa import batch_qa

    with progress_display():
        summary = batch_qa(questions=str(args.questions), kb=args.kb, home=args.home, out=args.out, mode=args.mode,
                           sources=args.source or None, section=args.section)
    run = summary.run
    rows = [("questions", run.questions), ("invalid rows (skipped)", run.invalid_rows),
            ("answered (llm / extractive)", f"{run.answered} ({run.llm_answers} / {run.extractive_answers})"),
            ("insufficient evidence", run.insufficient), ("widened once (CRAG-lite)", run.widened),
            ("LLM failures (fell back)", run.llm_failures), ("failed (batch errors)", run.failed),
            ("retrieval questions/s", f"{run.retrieval_qps:.1f}")]
    if run.labelled:
        rows += [("labelled", run.labelled), ("hit@1", f"{run.hit_at_1:.3f}"), ("hit@5", f"{run.hit_at_5:.3f}"),
                 ("MRR@10", f"{run.mrr_at_10:.3f}")]
    print_rows(["", "value"], rows, title=f"batch QA run {run.run_id} on kb {run.kb!r} ({run.mode})")
    for bad in summary.invalid[:20]:
        console.print(f"[yellow]skipped[/yellow] line {bad.line}: {bad.reason}")
    if len(summary.invalid) > 20:
        console.print(f"… and {len(summary.invalid) - 20} more invalid rows (qa_runs.invalid_reasons)")
    if summary.note:
        console.print(f"note: {summary.note}")
    console.print(f"results: {summary.out_path}; traces: kbflow sql \"SELECT * FROM qa_traces WHERE run_id = "
                  f"'{run.run_id}'\"")
    return 0 if run.status == "completed" and run.questions else 1


def cmd_eval(args: argparse.Namespace) -> int:
    """Evaluate a labelled question set (flow `evaluate`) and print one row per configuration."""
    from flows.evaluate import evaluate
    from tasks.qa.evaluate import SKIPPED, metric_table

    with progress_display():
        result = evaluate(questions=str(args.questions), kb=args.kb, home=args.home, ablate=args.ablate,
                          out=args.out)
    columns, rows = metric_table(result.metrics)
    print_rows(columns, rows, title=f"eval {result.eval_id} on kb {result.kb!r}")
    ran = [m for m in result.metrics if m.status != SKIPPED]
    if ran:
        m = ran[0]
        console.print(f"{m.questions} questions, {m.labelled} with gold evidence, {m.with_answers} with expected "
                      "answers; R@10 = share of gold chunks in the top 10; has-ans = the answer contains an "
                      "expected answer; all-of = every answers_all_of group matched", style="dim")
    for m in result.metrics:
        if m.note:
            console.print(f"[yellow]{m.config}[/yellow] {m.status}: {m.note}")
    if result.out_path:
        console.print(f"metrics: {result.out_path}")
    console.print(f"kbflow sql \"SELECT * FROM qa_metrics WHERE eval_id = '{result.eval_id}'\"")
    return 0 if ran and all(m.questions for m in ran) else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kbflow", description="Batch, offline RAG data pipeline on Prefect 3.")
    parser.add_argument("--home", help="state directory (default: $KBFLOW_HOME or ./.kbflow)")
    parser.add_argument("--config", help="a settings file applied over HOME/kbflow.toml (default: $KBFLOW_CONFIG)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ingest", help="parse, chunk and land documents into a knowledge base")
    p.add_argument("paths", nargs="+", type=Path, help="files or folders (MinerU output folders/zips too)")
    p.add_argument("--kb", required=True, help="knowledge-base name")
    p.add_argument("--runner", choices=("default", "dask"),
                   help="task runner: default (in this process) or dask (parse/chunk/embed on a Dask cluster; "
                        "needs the [dask] extra); default: the task_runner setting")
    p.add_argument("--dask-address", default="",
                   help="an existing Dask scheduler, e.g. tcp://host:8786 (default: a LocalCluster)")
    p.add_argument("--wait", type=float, metavar="SECONDS",
                   help="if another ingest is writing to this home, wait up to SECONDS for it "
                        "(default: the ingest_lock_wait_s setting, 0 = refuse at once)")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("stats", help="per-document chunk-quality report")
    p.add_argument("--kb", help="only this knowledge base")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("rm", help="delete documents (by source name) from a knowledge base and its indexes")
    p.add_argument("sources", nargs="+", help="source names as shown by `kbflow stats`")
    p.add_argument("--kb", required=True)
    p.add_argument("--wait", type=float, metavar="SECONDS", help="wait up to SECONDS for a running ingest")
    p.set_defaults(func=cmd_rm)

    p = sub.add_parser("check", help="compare the chunk ids of DuckDB, Chroma and BM25")
    p.add_argument("--kb", required=True)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("ask", help="answer a question set (JSONL/CSV/Parquet) with cited answers")
    p.add_argument("questions", type=Path, help="question file: id/qid, question, optional answers and gold evidence")
    p.add_argument("--kb", required=True, help="knowledge-base name")
    p.add_argument("--out", help="results file, .jsonl or .parquet (default: HOME/qa/RUN_ID.jsonl)")
    p.add_argument("--mode", choices=("hybrid", "vector", "bm25"), default="hybrid", help="recall channels")
    p.add_argument("--source", action="append", help="only these documents (repeatable)")
    p.add_argument("--section", help="only this section and the sections under it (a section_path prefix)")
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("eval", help="retrieval and answer metrics of a labelled question set (qa_metrics)")
    p.add_argument("questions", type=Path, help="question file with gold evidence and/or expected answers")
    p.add_argument("--kb", required=True, help="knowledge-base name")
    p.add_argument("--ablate", action="store_true",
                   help="also vector-only, BM25-only, hybrid and hybrid+rerank (rescues off), one run each")
    p.add_argument("--out", help="also write the metrics to this .json or .csv file")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("sql", help="read-only SQL over the warehouse")
    p.add_argument("query", help='e.g. "SELECT chunk_type, count(*) FROM chunks GROUP BY 1"')
    p.add_argument("--format", choices=("table", "csv", "json"), default="table")
    p.set_defaults(func=cmd_sql)

    p = sub.add_parser("report", help="write a self-contained HTML report (chunk quality, charts, ingest and QA runs)")
    p.add_argument("--kb", help="only this knowledge base")
    p.add_argument("--run", help="only this batch-QA run_id or eval_id in the QA sections")
    p.add_argument("--out", required=True, type=Path, help="the HTML file to write, e.g. report.html")
    p.set_defaults(func=cmd_report)

    # --home is accepted after the sub-command too
    for name in ("ingest", "rm", "check", "stats", "sql", "ask", "eval", "report"):
        sub.choices[name].add_argument("--home", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.config:  # flows load their settings themselves: the file reaches them through the environment
        os.environ["KBFLOW_CONFIG"] = str(Path(args.config).expanduser().resolve())
    try:
        return args.func(args)
    except UserError as exc:  # anything else is a bug: its traceback is what a report needs
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
