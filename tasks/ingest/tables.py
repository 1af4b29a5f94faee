"""Tables: HTML table → rows of cell text, and the cross-page table merge (seed 000 §2.1 step 2)."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from html.parser import HTMLParser

from schemas.chunk import TABLE, TEXT, Chunk
from tasks.common.text import plain_quantities


class _RowCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._depth = 0  # nested tables are flattened into their outer cell
        self.widths: list[int] = []  # per row: cells counted with their colspan
        self.spans: list[list[tuple[int, int]]] = []  # per row: each cell's (colspan, rowspan)
        self._width = 0
        self._span = (1, 1)
        self._row_spans: list[tuple[int, int]] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "table":
            self._depth += 1
        elif self._depth == 1 and tag == "tr":
            self._row = []
            self._row_spans = []
            self._width = 0
        elif self._depth == 1 and tag in ("td", "th"):
            self._cell = []
            self._span = (_span(attrs, "colspan"), _span(attrs, "rowspan"))
            self._width += self._span[0]
        elif tag in ("br", "p", "li") and self._cell is not None and self._cell:
            self._cell.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._depth -= 1
        elif self._depth == 1 and tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._row_spans.append(self._span)
            self._cell = None
        elif self._depth == 1 and tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self.widths.append(self._width)
            self.spans.append(self._row_spans)
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _span(attrs: list, name: str) -> int:
    """A cell's colspan / rowspan, clamped as HTML clamps them (colspan ≤ 1000, rowspan ≤ 65534)."""
    value = (dict(attrs).get(name) or "1").strip()
    return min(max(1, int(value)), 1000 if name == "colspan" else 65534) if value.isdigit() else 1


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


# a spanned cell's text is repeated in the rows it covers (a row group's label, "ImageNet-LT") and over
# the sub-columns it heads ("CIFAR-10-LT" over "200 | 100 | 50") when it is this short; a longer one
# (a note, a cell MinerU stuffed with a whole nested table) is written once
SPAN_REPEAT_MAX_CHARS = 40


@dataclass(frozen=True)
class _Cell:
    text: str
    row: int
    column: int
    columns: int  # colspan


def table_grid(html: str) -> list[list[str]]:
    """The table as a grid with its spans resolved, so that every row reads on its own: a rowspan's
    label stands in each row it covers ("ImageNet-LT | CC-SAM | ResNeXt-50 | 63.1"), a colspan that
    heads sub-columns stands over each ("| CIFAR-10-LT | CIFAR-10-LT | CIFAR-10-LT" over "| 200 | 100 |
    50"). A row that is one cell across the table (a note, a sub-table's title: "前10名无限售条件股东持股
    情况") is that one cell, and it separates parts whose columns are laid out apart: within a part,
    columns that are one cell (or empty) in every row are one column, so a colspan used for layout
    ("0" over two columns in each row) is not repeated."""
    parsed = _collect(html)
    n = len(parsed.rows)
    owner = _place(parsed, set())
    placeholders = _placeholders(parsed, owner)
    if placeholders:
        owner = _place(parsed, placeholders)
    _unstack_labels(owner, n)
    width = 1 + max((c for _, c in owner), default=-1)

    def across(r: int) -> bool:  # one cell over every column of row r
        return len({id(owner.get((r, c))) for c in range(width)}) == 1 and (r, 0) in owner

    grid: list[list[str]] = []
    part: list[int] = []
    for r in range(n + 1):
        if r == n or across(r):
            grid += _part_rows(part, owner, width)
            part = []
            if r < n:
                grid.append([owner[(r, 0)].text])
        else:
            part.append(r)
    return grid


def _place(parsed: _RowCollector, skipped: set[tuple[int, int]]) -> dict[tuple[int, int], _Cell]:
    """Each grid position's cell, spans laid out as HTML lays them out; `skipped` (row, cell number) are left out."""
    n = len(parsed.rows)
    owner: dict[tuple[int, int], _Cell] = {}
    for r, (row, spans) in enumerate(zip(parsed.rows, parsed.spans)):
        c = 0
        for i, (text, (colspan, rowspan)) in enumerate(zip(row, spans)):
            if (r, i) in skipped:
                continue
            while (r, c) in owner:
                c += 1
            cell = _Cell(text, r, c, colspan)
            for dr in range(min(rowspan, n - r)):
                for dc in range(colspan):
                    owner[(r + dr, c + dc)] = cell
            c += colspan
    return owner


def _placeholders(parsed: _RowCollector, owner: dict[tuple[int, int], _Cell]) -> set[tuple[int, int]]:
    """Empty cells MinerU's table model put into a row by mistake, pushing its values past the table's last
    column (`table_grid`): in a row reaching further than most rows do, the empty cells (not in the first
    column) whose columns add up to exactly how far it overflows ("Places-LT | Balanced Softmax [40] | <empty> |
    ResNet-152 | 42.0 …" under "Dataset | Method | Backbone | Many …"). A row that needs its empty cells
    to reach that far keeps them."""
    extents = [0] * len(parsed.rows)
    owned: dict[int, dict[int, _Cell]] = {}  # per row, the cells it writes itself (not a rowspan from above)
    for (row, c), cell in owner.items():
        extents[row] = max(extents[row], c + 1)
        if cell.row == row:
            owned.setdefault(row, {})[id(cell)] = cell
    usual = Counter(extents).most_common(1)[0][0] if extents else 0
    out: set[tuple[int, int]] = set()
    for r, spans in enumerate(parsed.spans):
        own = sorted(owned.get(r, {}).values(), key=lambda x: x.column)
        over, found = extents[r] - usual, []
        for i, cell in enumerate(own):
            if over <= 0:
                break
            if cell.column and not cell.text and spans[i][1] == 1 and cell.columns <= over:
                found.append((r, i))
                over -= cell.columns
        if found and over == 0 and extents[r] > usual:
            out.update(found)
    return out


# where MinerU's table model writes the labels of rows stacked in one column into one cell ("OpenMax
# [3]OLTR [32]" over two rows): a label ends at its citation, or an acronym glued to the next ("CEDecouple")
_AFTER_CITATION = re.compile(r"(?<=\])\s*(?=[^\W\d_])")
_GLUED_ACRONYM = re.compile(r"(?<=[A-Z]{2})(?=[A-Z][a-z])")


def _stacked(text: str, rows: int) -> list[str] | None:
    """The labels of `rows` rows written as one cell, one per row: parts ending at a citation, and when
    there are too few, acronyms glued to the next label split off; None unless the parts are as many
    as the rows, which says the cell stacks labels ("Balanced Softmax [40]" alone is one label)."""
    parts = [p.strip() for p in _AFTER_CITATION.split(text) if p.strip()]
    if 1 < len(parts) < rows:
        parts = [q for p in parts for q in _GLUED_ACRONYM.split(p)]
    return parts if len(parts) == rows > 1 else None


def _unstack_labels(owner: dict[tuple[int, int], _Cell], n: int) -> None:
    """Give each row its own label where one cell stacks the labels of the rows it spans (`_stacked`):
    "ResLT [9]MiSLAS [62]GCL [26]" over three rows is ResLT's, MiSLAS's and GCL's row, not each row's
    label. A row whose label stacks its own and the next rows' without a span is left as it is: which
    of its values are whose, MinerU did not say."""
    for (r, c), cell in list(owner.items()):
        if cell.row != r or cell.column != c or "]" not in cell.text:
            continue
        rows = [r]
        while rows[-1] + 1 < n and owner.get((rows[-1] + 1, c)) is cell:
            rows.append(rows[-1] + 1)
        labels = _stacked(cell.text, len(rows))
        if labels is None:
            continue
        for row, label in zip(rows, labels):
            part = _Cell(label, row, c, cell.columns)
            for dc in range(cell.columns):
                owner[(row, c + dc)] = part


def _part_rows(rows: list[int], owner: dict[tuple[int, int], _Cell], width: int) -> list[list[str]]:
    """The rows of one part of a table (`table_grid`), its columns merged where no row tells them apart."""
    def same(r: int, c: int) -> bool:  # row r has one cell over columns c - 1 and c (or none at c)
        cell = owner.get((r, c))
        return cell is None or cell is owner.get((r, c - 1))

    def spanned(r: int, c: int) -> bool:  # row r writes one text over columns c - 1 and c
        cell = owner.get((r, c))
        return cell is not None and cell is owner.get((r, c - 1)) and bool(cell.text)

    def joins(c: int) -> bool:  # column c is column c - 1's: no row tells them apart
        if all(same(r, c) for r in rows):
            return True
        # beside an empty cell too when some row writes one text over both (MinerU's "MiSLAS" beside an
        # empty colspan under the "Method" colspan); a form's blank field is a column of its own
        return (all(same(r, c) or not owner[(r, c)].text for r in rows)
                and any(spanned(r, c) for r in rows))

    starts = [c for c in range(width) if c == 0 or not joins(c)]
    bounds = list(zip(starts, starts[1:] + [width]))

    def heads_columns(cell: _Cell, r: int) -> bool:  # the row below splits the cell's columns
        below = {id(owner.get((r + 1, c))) for c in range(cell.column, cell.column + cell.columns)
                 if (r + 1, c) in owner}
        return r + 1 in rows and len(below) > 1

    out = []
    for r in rows:
        row: list[str] = []
        for lo, hi in bounds:
            cells = [owner[(r, c)] for c in range(lo, hi) if (r, c) in owner]
            cell = next((x for x in cells if x.text), cells[0] if cells else None)
            if cell is None:
                row.append("")
            elif cell.row == r and lo <= cell.column < hi:
                row.append(cell.text)
            elif len(cell.text) > SPAN_REPEAT_MAX_CHARS:
                row.append("")
            elif lo <= cell.column < hi:  # a rowspan: its label in every row it covers
                row.append(cell.text)
            else:  # a colspan: over each sub-column it heads, else once
                row.append(cell.text if heads_columns(cell, cell.row) else "")
        while row and not row[-1] and not any((r, c) in owner for c in range(bounds[len(row) - 1][0], width)):
            row.pop()
        out.append(row)
    return out


def table_text(html: str) -> str:
    """Readable text of an HTML table: one line per row, cells joined by ' | ', spans resolved
    (`table_grid`)."""
    return plain_quantities("\n".join(" | ".join(row) for row in table_grid(html) if any(row)))


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


# A financial statement's title is often a line of text right above it ("2、合并利润表", "现金流量表",
# "1、合并资产负债表编制单位:…"), with a unit or date line between, which the PDF does not mark as a
# caption: it becomes the table's caption, so a question naming the statement finds its table.
_UNIT_OR_DATE = re.compile(r"^\s*(?:单位|币种|货币单位|unit)\s*[:：]|^\s*[0-9]{4}\s*年(?:\s*[0-9]{1,2}\s*月)?"
                           r"(?:\s*[0-9]{1,2}\s*日)?\s*$", re.IGNORECASE)
# a report's "适用 □不适用" boxes (the box glyph may be a private-use character)
_CHECKBOX = re.compile(r"[□■\ue000-\uf8ff]?\s*适用\s*[□■\ue000-\uf8ff]?\s*不适用\s*|[□■\ue000-\uf8ff]")
_STATEMENT_TITLE = re.compile(r"(?:^|[0-9]+[、.．]\s*)[^\s，。,:：;；、|]{0,24}表(?=\s*编制单位|\s*$)")
_NOT_A_TITLE = ("下表", "上表", "此表", "该表", "本表", "附表", "列表")


def statement_title(text: str) -> str:
    """The statement title ending `text` ("…会计机构负责人:刘惠3、合并现金流量表" → "3、合并现金流量表"), or ""."""
    line = _CHECKBOX.sub("", (text or "").strip().splitlines()[-1] if (text or "").strip() else "")
    m = _STATEMENT_TITLE.search(line)
    title = m.group().strip() if m else ""
    return "" if len(title) < 3 or title.endswith(_NOT_A_TITLE) else title


def title_tables(chunks: list[Chunk]) -> list[Chunk]:
    """Give a table without a caption the statement title of the text just before it (over a unit
    or date line), on the same or the previous page."""
    for i, chunk in enumerate(chunks):
        if chunk.chunk_type != TABLE or chunk.caption.strip():
            continue
        j = i - 1
        while j >= 0 and chunks[j].chunk_type == TEXT and _UNIT_OR_DATE.search(chunks[j].content):
            j -= 1
        if j >= 0 and chunks[j].chunk_type == TEXT and chunks[j].page_end >= chunk.page_start - 1:
            chunk.caption = statement_title(chunks[j].content)
    return chunks
