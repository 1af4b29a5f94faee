"""How a value reads in a table (the terminal's and the HTML report's): floats rounded, timestamps
to the second, long names shortened in the middle, where the distinguishing end of a file name is."""
from __future__ import annotations

import unicodedata
from datetime import date, datetime
from decimal import Decimal
from typing import Any

ELLIPSIS = "…"


def format_cell(value: Any, *, null: str = "—") -> str:
    """A cell's text: floats to at most 3 decimals, timestamps to the second, NULL as `null`."""
    if value is None:
        return null
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return str(value)
        return f"{value:.3f}".rstrip("0").rstrip(".") if abs(value) < 1e12 else f"{value:.3g}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return ", ".join(format_cell(v, null=null) for v in value)
    return str(value)


def char_width(ch: str) -> int:
    """Terminal cells of one character: 2 for CJK and other wide characters, 0 for combining marks."""
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def text_width(text: str) -> int:
    return sum(char_width(ch) for ch in text)


def truncate_middle(text: str, width: int) -> str:
    """`text` in at most `width` terminal cells: its start and its end kept, an ellipsis between
    (`清川市水务政策说明文件第二版.docx` → `清川市水…二版.docx`)."""
    text = " ".join(text.split()) if "\n" in text or "\t" in text else text
    if text_width(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    budget = width - 1
    head_budget, tail_budget = (budget + 1) // 2, budget // 2
    head, used = [], 0
    for ch in text:
        if used + char_width(ch) > head_budget:
            break
        head.append(ch)
        used += char_width(ch)
    tail, used_tail = [], 0
    for ch in reversed(text[len(head):]):
        if used_tail + char_width(ch) > budget - used:
            break
        tail.append(ch)
        used_tail += char_width(ch)
        if used_tail >= tail_budget and used + used_tail >= budget:
            break
    return "".join(head) + ELLIPSIS + "".join(reversed(tail))


def announce(message: str) -> None:
    """Say that a one-time cost is starting ("converting the embedding model once (~1 min)…"):
    the `kbflow` command prints these on stderr even when it hides other log lines."""
    import logging

    logging.getLogger("kbflow.notice").info(message)


def artifact_key(*parts: str) -> str:
    """A Prefect artifact key (lowercase letters, digits, dashes) from names: `batch-qa`, a kb, a config."""
    import re

    return re.sub(r"[^a-z0-9-]+", "-", "-".join(parts).lower()).strip("-")
