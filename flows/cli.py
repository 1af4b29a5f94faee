"""The `kbflow` command: parse arguments, call a flow or a warehouse query, print the result."""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Sequence

from rich.console import Console
from rich.table import Table

from schemas.settings import load_settings

# The temporary server's telemetry heartbeat only logs SQLite lock errors here (offline machines).
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
console = Console(width=None if sys.stdout.isatty() else 160)


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
        writer = csv.writer(sys.stdout)
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

    summary = ingest(paths=[str(p) for p in args.paths], kb=args.kb, home=args.home)
    rows = [(o.source, o.status, o.chunks, f"{o.parse_seconds:.2f}" if o.status == "landed" else "",
             "yes" if o.parse_cached else "", o.reason) for o in summary.outcomes]
    print_rows(["source", "status", "chunks", "parse_s", "cached", "reason"], rows,
               title=f"ingest run {summary.run_id} → kb {summary.kb!r}")
    console.print(f"{summary.landed} landed, {summary.failed} failed or rejected; warehouse: "
                  f"{Path(summary.home) / 'kbflow.duckdb'}")
    idx = summary.index
    console.print(f"indexed {idx.chunks} chunks of {idx.documents} documents into Chroma ({idx.embedded} newly "
                  f"embedded, {idx.removed} stale removed); BM25 holds {idx.bm25_chunks} chunks")
    return 0 if summary.landed or not summary.outcomes else 1


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

    removed = remove(sources=args.sources, kb=args.kb, home=args.home)
    print_rows(["source", "chunks removed from Chroma"], sorted(removed.items()), title=f"removed from kb {args.kb!r}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from tasks.index import check

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

    from warehouse import db

    settings = load_settings(args.home)
    where, params = ("WHERE kb = ?", [args.kb]) if args.kb else ("", [])
    try:
        columns, rows = db.query(settings.db_path, f"SELECT * FROM chunk_quality {where} ORDER BY kb, source",
                                 params)
    except duckdb.CatalogException:  # a warehouse written before the view existed
        console.print("[red]error:[/red] the warehouse has no chunk_quality view yet; "
                      "run `kbflow ingest` once to update it")
        return 2
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
        console.print(f"[red]SQL error:[/red] {exc}")
        return 2
    print_rows(columns, rows, args.format)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kbflow", description="Batch, offline RAG data pipeline on Prefect 3.")
    parser.add_argument("--home", help="state directory (default: $KBFLOW_HOME or ./.kbflow)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ingest", help="parse, chunk and land documents into a knowledge base")
    p.add_argument("paths", nargs="+", type=Path, help="files or folders (MinerU output folders/zips too)")
    p.add_argument("--kb", required=True, help="knowledge-base name")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("stats", help="per-document chunk-quality report")
    p.add_argument("--kb", help="only this knowledge base")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("rm", help="delete documents (by source name) from a knowledge base and its indexes")
    p.add_argument("sources", nargs="+", help="source names as shown by `kbflow stats`")
    p.add_argument("--kb", required=True)
    p.set_defaults(func=cmd_rm)

    p = sub.add_parser("check", help="compare the chunk ids of DuckDB, Chroma and BM25")
    p.add_argument("--kb", required=True)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("sql", help="read-only SQL over the warehouse")
    p.add_argument("query", help='e.g. "SELECT chunk_type, count(*) FROM chunks GROUP BY 1"')
    p.add_argument("--format", choices=("table", "csv", "json"), default="table")
    p.set_defaults(func=cmd_sql)

    for name in ("ingest", "rm", "check", "stats", "sql"):  # --home is accepted after the sub-command too
        sub.choices[name].add_argument("--home", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (FileNotFoundError, ValueError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 2
    except RuntimeError as exc:  # e.g. WarehouseBusyError
        console.print(f"[red]error:[/red] {exc}")
        return 3


if __name__ == "__main__":
    sys.exit(main())
