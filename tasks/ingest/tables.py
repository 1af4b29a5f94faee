"""Tables: HTML table → rows of cell text, and the cross-page table merge (seed 000 §2.1 step 2)."""
from __future__ import annotations

import re
from dataclasses import replace
from html.parser import HTMLParser

from schemas.chunk import TABLE, Chunk


class _RowCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._depth = 0  # nested tables are flattened into their outer cell
        self.widths: list[int] = []  # per row: cells counted with their colspan
        self._width = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "table":
            self._depth += 1
        elif self._depth == 1 and tag == "tr":
            self._row = []
            self._width = 0
        elif self._depth == 1 and tag in ("td", "th"):
            self._cell = []
            span = dict(attrs).get("colspan") or "1"
            self._width += int(span) if span.isdigit() else 1
        elif tag in ("br", "p", "li") and self._cell is not None and self._cell:
            self._cell.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._depth -= 1
        elif self._depth == 1 and tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif self._depth == 1 and tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self.widths.append(self._width)
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _collect(html: str) -> _RowCollector:
    parser = _RowCollector()
    parser.feed(html or "")
    parser.close()
    return parser


def html_table_rows(html: str) -> list[list[str]]:
    return _collect(html).rows


def column_count(html: str) -> int:
    """Columns of a table: the widest row, colspans counted."""
    return max(_collect(html).widths, default=0)


def table_text(html: str) -> str:
    """Readable text of an HTML table: one line per row, cells joined by ' | '."""
    return "\n".join(" | ".join(row) for row in html_table_rows(html) if any(row))


CONTINUATION = re.compile(r"续表|[（(]\s*续\s*[）)]|continued", re.IGNORECASE)
_ROW = re.compile(r"<tr\b.*?</tr>", re.IGNORECASE | re.DOTALL)
_TABLE_INNER = re.compile(r"^\s*<table[^>]*>(.*)</table>\s*$", re.IGNORECASE | re.DOTALL)
_SECTION_TAGS = re.compile(r"</?(thead|tbody|tfoot)[^>]*>", re.IGNORECASE)


def _norm(row: list[str]) -> list[str]:
    return ["".join(cell.split()) for cell in row]


def continues(first: Chunk, second: Chunk) -> bool:
    """Does `second` continue `first` onto the next page? Same column count, a continuation
    marker (续表, (续), continued), or a repeat of the first table's header row."""
    if first.chunk_type != TABLE or second.chunk_type != TABLE or not first.table_html or not second.table_html:
        return False
    if second.page_start != first.page_end + 1:
        return False
    second_rows = html_table_rows(second.table_html)
    first_row = " ".join(second_rows[0]) if second_rows else ""
    if CONTINUATION.search(second.caption) or CONTINUATION.search(first_row):
        return True
    if repeats_header(first, second):
        return True
    return column_count(first.table_html) == column_count(second.table_html) > 0


def repeats_header(first: Chunk, second: Chunk) -> bool:
    a, b = html_table_rows(first.table_html or ""), html_table_rows(second.table_html or "")
    return bool(a and b) and _norm(a[0]) == _norm(b[0]) and any(a[0])


def _rows_html(html: str) -> str:
    match = _TABLE_INNER.match(html)
    return _SECTION_TAGS.sub("", match.group(1) if match else html)


def merge_two(first: Chunk, second: Chunk) -> Chunk:
    """Append `second`'s rows to `first`; a repeated header row is dropped."""
    rows = _rows_html(second.table_html or "")
    if repeats_header(first, second):
        rows = _ROW.sub("", rows, count=1)
    head, _, tail = (first.table_html or "").rpartition("</table>")
    html = f"{head}{rows}</table>{tail}" if _ else (first.table_html or "") + rows
    return replace(
        first,
        table_html=html,
        content=table_text(html),
        page_end=max(first.page_end, second.page_end),
        source_pages=sorted(set(first.source_pages) | set(second.source_pages)),
        caption=first.caption or second.caption,
        footnote=" ".join(f for f in (first.footnote, second.footnote) if f),
    )


def merge_cross_page_tables(chunks: list[Chunk]) -> list[Chunk]:
    """Merge tables continued across a page break. Page furniture between them was dropped at
    normalization; MinerU's own merges already carry their full page span, so a table is only
    merged with a real next-page table, never with one MinerU already absorbed."""
    out: list[Chunk] = []
    for chunk in chunks:
        if out and continues(out[-1], chunk):
            out[-1] = merge_two(out[-1], chunk)
        else:
            out.append(chunk)
    return out
