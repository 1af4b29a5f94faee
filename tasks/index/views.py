"""What is embedded for a chunk: its text, and for a table longer than the model reads, its views.

The embedding model reads at most a window of tokens (512 for multilingual-e5-small) and drops the
rest. 20 of the 68 tables of ../shared/data/docs are longer: the SVOLT datasheet's main
specification table is cut after 4 of its 15 rows, so a question about its cycle life (row 10) could
not reach it through the vector channel, however well the row matched. A table is kept whole (the
answer reads its cells by row and column), so such a table keeps its own vector (id = chunk_id) and
gets one more per *view*: a window of its rows of at most `view_tokens` tokens, led by what says where
it comes from — the document's name, its 主题/表格 lines and its header row (the contextual header of
LlamaIndex's metadata-in-embedding). A view's id is "{chunk_id}#{n}"; retrieval maps a view's hit back
to its table (`chunk_id_of`) and answers from the whole table. Text is cut to size by the chunker
(`max_chunk_size`) and gets no views.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from schemas.chunk import TABLE, Chunk

VIEW_MARK = "#"
_VIEW_SUFFIX = re.compile(r"#\d+$")  # chunk ids end in "_{index}", so a view's suffix is unambiguous
_HEAD_LABELS = ("主题：", "表格：")  # the lines of semantic_content that say where a chunk sits
# suffixes of the files a source names (the rest of a name is kept: "SVOLT-196Ah-3.2V-…" has dots)
DOCUMENT_SUFFIXES = {"pdf", "docx", "doc", "pptx", "ppt", "xlsx", "xls", "md", "markdown", "txt", "html", "htm",
                     "png", "jpg", "jpeg"}


def embedding_text(chunk: Chunk) -> str:
    """What is embedded for a chunk: its semantic_content, or its content when that is empty."""
    return chunk.semantic_content or chunk.content


@dataclass(frozen=True)
class View:
    """One window of a long chunk, embedded under its own id."""

    chunk: Chunk
    number: int  # 1, 2, ... in the chunk's order
    text: str

    @property
    def id(self) -> str:
        return f"{self.chunk.chunk_id}{VIEW_MARK}{self.number}"


def chunk_id_of(vector_id: str) -> str:
    """The chunk a vector id belongs to: the id itself, or a view's chunk."""
    return _VIEW_SUFFIX.sub("", vector_id) if VIEW_MARK in vector_id else vector_id


def file_name(source: str) -> str:
    """The file name a source ends in ("byd_2025q1_quarterly_report.pdf", "SOURCES.md")."""
    return PurePosixPath(source.replace("\\", "/")).name or source


def document_name(source: str) -> str:
    """The file name a source ends in, without a document suffix ("byd_2025q1_quarterly_report")."""
    name = file_name(source)
    stem, dot, suffix = name.rpartition(".")
    return stem if dot and stem and suffix.lower() in DOCUMENT_SUFFIXES else name


def _lead_and_rows(chunk: Chunk, text: str) -> tuple[list[str], list[str]]:
    """The lines every view of a table starts with (document, 主题/表格, header row), and its rows."""
    head, _, body = text.partition("\n\n")
    if not body:  # no head block: the whole text is the table
        head, body = "", text
    rows = [line for line in body.split("\n") if line.strip()]
    lead = [f"文档：{document_name(chunk.source)}"] + [line for line in head.split("\n") if line.startswith(_HEAD_LABELS)]
    return lead + rows[:1], rows[1:]


def chunk_views(chunk: Chunk, text: str, count_tokens: Callable[[Sequence[str]], list[int]], *,
                window: int, view_tokens: int) -> list[View]:
    """The views of one chunk whose embedding text is `text`: none for a chunk other than a table or one
    that fits the model's `window` (tokens), else windows of rows of at most `view_tokens` tokens (a row
    longer than that stands alone and is cut by the model), every row in one window."""
    if chunk.chunk_type != TABLE or view_tokens <= 0 or len(text) <= window or count_tokens([text])[0] <= window:
        return []  # (a token spans at least one character: a text no longer than the window fits)
    lead, rows = _lead_and_rows(chunk, text)
    lead_text = "\n".join(lead)
    lead_tokens, *row_tokens = count_tokens([lead_text, *rows])
    budget = max(view_tokens - lead_tokens, view_tokens // 2)  # a long lead must leave room for the rows
    groups: list[list[str]] = []
    size = budget
    for row, tokens in zip(rows, row_tokens):
        if size + tokens > budget:
            groups.append([])
            size = 0
        groups[-1].append(row)
        size += tokens + 1  # the line break between rows
    return [View(chunk, n, "\n".join([lead_text, *group])) for n, group in enumerate(groups, 1)]


def views_of(chunks: Sequence[Chunk], count_tokens: Callable[[Sequence[str]], list[int]], *, window: int,
             view_tokens: int) -> list[View]:
    """The views of every table of `chunks` that is longer than the model's window, in chunk order."""
    return [view for chunk in chunks
            for view in chunk_views(chunk, embedding_text(chunk), count_tokens, window=window,
                                    view_tokens=view_tokens)]
