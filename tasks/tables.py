"""Table helpers: HTML table → rows of cell text (for content, summaries and merging)."""
from __future__ import annotations

from html.parser import HTMLParser


class _RowCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._depth = 0  # nested tables are flattened into their outer cell

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "table":
            self._depth += 1
        elif self._depth == 1 and tag == "tr":
            self._row = []
        elif self._depth == 1 and tag in ("td", "th"):
            self._cell = []
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
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def html_table_rows(html: str) -> list[list[str]]:
    parser = _RowCollector()
    parser.feed(html or "")
    parser.close()
    return parser.rows


def table_text(html: str) -> str:
    """Readable text of an HTML table: one line per row, cells joined by ' | '."""
    return "\n".join(" | ".join(row) for row in html_table_rows(html) if any(row))
