"""What `kbflow` prints: tables that fit the terminal, answers, progress bars. stdout carries the
results (tables, answers, JSON/CSV for scripts); errors and notes go to stderr."""
from __future__ import annotations

import contextlib
import csv
import json
import sys
from collections.abc import Iterator
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from tasks.common.display import format_cell, text_width, truncate_middle

console = Console(highlight=False)
notes = Console(stderr=True, highlight=False)


def bind_consoles() -> None:
    """(Re)initialize the two consoles for the current stdout/stderr: the terminal's width, or 160
    columns when not a terminal. In place, so every module's reference stays valid (the warm
    server's child calls it after taking over its client's streams)."""
    console.__init__(width=None if sys.stdout.isatty() else 160, highlight=False)
    notes.__init__(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 160)


bind_consoles()

MIN_COLUMN = 8  # a text column is never shortened below this many cells (or its heading)


def note(message: str) -> None:
    """A line on stderr for a human (a one-time cost, a hint), never mixed into the results."""
    notes.print(message, style="dim")


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


def _plain(v: Any) -> Any:
    if isinstance(v, (datetime, date)):
        return v.isoformat()
    if isinstance(v, Decimal):
        return float(v)
    return v


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, ensure_ascii=False, indent=1, default=str)
    sys.stdout.write("\n")


def fit_widths(natural: list[int], numeric: list[bool], values: list[int], width: int) -> list[int] | None:
    """Column widths (cells) that fit `width` with rich's borders, giving way in stages — number
    columns' headings wrap (down to 5 cells), long texts are shortened in the middle (down to 24),
    number columns shrink to their values, then texts to MIN_COLUMN — the widest column first
    within a stage; None when even that cannot fit (the caller prints one block per row)."""
    overhead = 3 * len(natural) + 1
    widths = list(natural)
    stages = ([max(v, 5) if num else n for n, num, v in zip(natural, numeric, values)],
              [max(v, 5) if num else min(n, max(MIN_COLUMN, 24)) for n, num, v in zip(natural, numeric, values)],
              [max(v, 1) if num else min(n, max(MIN_COLUMN, 24)) for n, num, v in zip(natural, numeric, values)],
              [max(v, 1) if num else min(n, MIN_COLUMN) for n, num, v in zip(natural, numeric, values)])
    for floors in stages:
        while sum(widths) + overhead > width:
            shrinkable = [i for i, w in enumerate(widths) if w > floors[i]]
            if not shrinkable:
                break
            widest = max(shrinkable, key=lambda i: widths[i])
            widths[widest] -= 1
    return widths if sum(widths) + overhead <= width else None


def print_rows(columns: list[str], rows: Sequence[Sequence[Any]], fmt: str = "table", title: str | None = None) -> None:
    """`rows` as a table that fits the terminal (floats rounded, timestamps to the second, long
    texts shortened in the middle; one block per row when the columns cannot fit), or as JSON/CSV."""
    if fmt == "json":
        print_json([{c: _plain(v) for c, v in zip(columns, row)} for row in rows])
        return
    if fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")  # like every other line printed (csv's default is "\r\n")
        writer.writerow(columns)
        writer.writerows(rows)
        return
    cells = [[format_cell(v, null="") for v in row] for row in rows]
    numeric = [bool(rows) and all(isinstance(r[i], (int, float, Decimal)) and not isinstance(r[i], bool)
                                  for r in rows if r[i] is not None) for i in range(len(columns))]
    values = [max([0] + [text_width(r[i]) for r in cells]) for i in range(len(columns))]
    natural = [max(text_width(c), v) for c, v in zip(columns, values)]
    widths = fit_widths(natural, numeric, values, console.width)
    if widths is None:
        print_vertical(columns, cells, title)
        return
    table = Table(title=Text(title) if title else None, show_lines=False)
    for i, c in enumerate(columns):
        # values are cut to the width already (they never wrap); a heading wider than its column wraps
        table.add_column(Text(c), overflow="fold", justify="right" if numeric[i] else "left",
                         min_width=widths[i], max_width=widths[i])
    for row in cells:  # Text: a "[draft]" in a name or an answer's "[ref:…]" is not rich markup
        table.add_row(*(Text(truncate_middle(v, widths[i])) for i, v in enumerate(row)))
    console.print(table)


def print_vertical(columns: list[str], cells: list[list[str]], title: str | None) -> None:
    """One block per row, `column  value` per line: for tables too wide for the terminal."""
    if title:
        console.print(Text(title, style="italic"))
    label = min(max(text_width(c) for c in columns), max(12, console.width // 3))
    room = max(console.width - label - 2, MIN_COLUMN)
    for n, row in enumerate(cells, 1):
        console.print(f"─── row {n} " + "─" * max(0, min(console.width, 60) - 10 - len(str(n))), style="dim")
        for c, v in zip(columns, row):
            name = truncate_middle(c, label)
            console.print(name + " " * (label - text_width(name)) + "  " + truncate_middle(v, room), markup=False)


# ---------------------------------------------------------------- answers

ANSWER_FIELDS = ("qid", "question", "answer", "citations", "confidence", "answer_mode", "insufficient", "gold_rank",
                 "top_sources", "error")
MAX_ANSWER_CHARS = 400


def read_results(path: str, limit: int | None = None) -> list[dict[str, Any]]:
    """The first `limit` (all when None) answers of a results file (JSONL or Parquet), the fields a reader needs."""
    rows: list[dict[str, Any]] = []
    if path.lower().endswith(".parquet"):
        import pyarrow.parquet as pq

        table = pq.read_table(path, columns=list(ANSWER_FIELDS))
        rows = table.slice(0, limit).to_pylist() if limit is not None else table.to_pylist()
    else:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if limit is not None and len(rows) >= limit:
                    break
                if line.strip():
                    row = json.loads(line)
                    rows.append({k: row.get(k) for k in ANSWER_FIELDS})
    return rows


def print_answers(answers: list[dict[str, Any]], *, total: int, out_path: str) -> None:
    """Each answer: the question, the answer (citation markers shown as a list below it), what it
    cites, its confidence and how it was made. A sample when the set is larger than what is shown."""
    from rich.markup import escape

    from tasks.qa.answer import without_citations

    for row in answers:
        console.print(f"[bold]{escape(str(row['qid']))}[/bold]  {escape(row['question'])}")
        text = " ".join(without_citations(row["answer"] or "").split()) or "—"
        if len(text) > MAX_ANSWER_CHARS:
            text = text[:MAX_ANSWER_CHARS] + "…"
        style = "yellow" if row.get("insufficient") else ""
        console.print("    " + escape(text), style=style)
        cited = ", ".join(row.get("citations") or []) or "none"
        extra = f" · gold rank {row['gold_rank']}" if row.get("gold_rank") else ""
        console.print(f"    cites {escape(cited)} · confidence {format_cell(row.get('confidence'))} · "
                      f"{row.get('answer_mode')}{extra}", style="dim")
    if total > len(answers):
        console.print(f"[dim]showing {len(answers)} of {total} answers; all of them: {out_path} "
                      "(--show N for more)[/dim]")


# ---------------------------------------------------------------- noise

_DEBUG = False


def quiet_libraries(*, verbose: bool, debug: bool) -> None:
    """Before anything noisy is imported: progress bars and chatty loggers of the libraries off
    (jieba, transformers' "Loading weights", MinerU's loguru line, Prefect's INFO lines and its
    temporary-server banner), unless `verbose`; one-time costs (`announce`) still print."""
    import logging
    import os

    global _DEBUG
    _DEBUG = debug
    if not verbose:
        for name, value in (("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING"),
                            ("HF_HUB_DISABLE_PROGRESS_BARS", "1"), ("TQDM_DISABLE", "1"),
                            ("TRANSFORMERS_VERBOSITY", "error"), ("LOGURU_LEVEL", "WARNING"),
                            ("MINERU_LOG_LEVEL", "warning"),  # MinerU sets loguru's level from its config
                            ("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")):
            os.environ.setdefault(name, value)
    if debug:
        os.environ.setdefault("PREFECT_LOGGING_ROOT_LEVEL", "DEBUG")
    notice = logging.getLogger("kbflow.notice")
    if not notice.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        notice.addHandler(handler)
        notice.setLevel(logging.INFO)
        notice.propagate = False


class _WithoutTraceback:
    """A formatter wrapper: the record's message without its traceback (shown with --debug)."""

    def __init__(self, inner: Any):
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def format(self, record: Any) -> str:
        saved = record.exc_info, record.exc_text, record.stack_info
        record.exc_info = record.exc_text = record.stack_info = None
        try:
            return self.inner.format(record)
        finally:
            record.exc_info, record.exc_text, record.stack_info = saved


def tame_prefect_console() -> None:
    """Prefect's console lines without tracebacks (a failed flow logs its exception; the CLI says it in one line)."""
    import logging

    from prefect.logging.configuration import ensure_logging_setup

    ensure_logging_setup()
    if _DEBUG:
        return
    from prefect.logging.handlers import PrefectConsoleHandler

    for handler in logging.getLogger().handlers:
        if isinstance(handler, PrefectConsoleHandler) and not isinstance(handler.formatter, _WithoutTraceback):
            handler.setFormatter(_WithoutTraceback(handler.formatter))
