"""The one chunk record: seed `MinerUChunk` fields plus ids (kb, doc_md5, chunk_id, chunk_index)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from schemas.arrow import arrow_schema, columns_of

# chunk_type values. Headings are text items with text_level > 0.
TEXT, HEADING, TABLE, IMAGE, CHART, EQUATION, LIST, CODE, INDEX = (
    "text", "heading", "table", "image", "chart", "equation", "list", "code", "index",
)
CHUNK_TYPES = (TEXT, HEADING, TABLE, IMAGE, CHART, EQUATION, LIST, CODE, INDEX)
# the labels of a figure's semantic_content (tasks.ingest.enrich.image_description: "图片：…，位于「…」，第3页",
# "前文：…", "内容：卡通人物"): its section, the text around it, its description and its data
FIGURE_LOCATED, FIGURE_BEFORE, FIGURE_AFTER, FIGURE_DESCRIPTION, FIGURE_DATA = "位于", "前文", "后文", "内容", "数据"
# a table's caption line ("表3 …", "Table 2-2    Comparison of …"): read off OCR lines and Markdown paragraphs
TABLE_CAPTION = re.compile(r"^\s*(?:表|Table)\s*[A-Z]?[.．]?\d", re.IGNORECASE)


@dataclass
class Chunk:
    content: str
    chunk_type: str
    page_start: int = 1  # 1-based
    page_end: int = 1
    text_level: int = 0  # 0 = body, 1 = H1, 2 = H2, ...
    title: str = ""  # heading text of a heading chunk
    section_path: str = ""  # "第一章 > 1.1 概述"
    bbox: list[float] | None = None  # [x0, y0, x1, y1]; PDFs only
    source: str = ""  # file name (relative to the ingested root)
    table_html: str | None = None
    image_path: str | None = None
    images: list[str] = field(default_factory=list)  # images embedded in a table's HTML
    caption: str = ""
    figure_number: str = ""
    footnote: str = ""
    context_before: str = ""
    context_after: str = ""
    vlm_description: str = ""
    chart_markdown: str = ""
    table_type: str = ""
    table_nest_level: str = ""
    sub_type: str = ""
    item_type: str = ""  # the MinerU item type this chunk came from (text/title/paragraph/...)
    source_pages: list[int] = field(default_factory=list)  # every page the chunk covers
    table_summary: str = ""  # an LLM's summary of a table (enrichment); empty offline
    semantic_content: str = ""  # filled by the enrichment stage; embedded and indexed
    tokens: list[str] = field(default_factory=list)  # BM25 terms of semantic_content, computed once
    # ids, assigned when a document's chunks are final
    kb: str = ""
    doc_md5: str = ""
    chunk_index: int = 0
    chunk_id: str = ""  # "{source}_{chunk_index}"


CHUNK_SCHEMA = arrow_schema(Chunk)
# columns read from DuckDB for every retrieval candidate (not table_html, bbox, ...: the answerer needs none)
CANDIDATE_COLUMNS = columns_of(Chunk, ("chunk_id", "source", "doc_md5", "chunk_index", "chunk_type", "section_path",
                                       "text_level", "title", "content", "semantic_content", "caption",
                                       "table_summary", "tokens", "page_start", "page_end"))


def assign_ids(chunks: list[Chunk], *, kb: str, doc_md5: str, source: str) -> list[Chunk]:
    """Number chunks in document order; chunk_id = f"{source}_{index}" as in the seed."""
    for index, chunk in enumerate(chunks):
        chunk.kb = kb
        chunk.doc_md5 = doc_md5
        chunk.source = source
        chunk.chunk_index = index
        chunk.chunk_id = f"{source}_{index}"
    return chunks


def chunks_path(chunks_dir: Path, kb: str, doc_md5: str) -> Path:
    """Where a landed document's chunks live: one Parquet file per document, by KB and content MD5."""
    return chunks_dir / f"kb={kb}" / f"{doc_md5}.parquet"
