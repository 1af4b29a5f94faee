"""semantic_content (seed 000 §2.6): the text that is embedded and indexed for each chunk.

Rule-based and offline: text chunks get a 主题 line, tables a rule-based summary (the fallback a
later LLM summary replaces), figures the lightweight description of seed 003 §3.5 with the text
around them. Unlike the seed (000 §13.3 失配1), a heading never appears more than once: a title
the content already starts with is not repeated in the 主题 line.
"""
from __future__ import annotations

from schemas.chunk import CHART, TABLE, Chunk
from tasks.headings import SEPARATOR
from tasks.images import FIGURE_TYPES, split_caption
from tasks.tables import html_table_rows, table_text


def _norm(text: str) -> str:
    return " ".join(text.split())


def section_parts(section_path: str) -> list[str]:
    return [p.strip() for p in section_path.split(SEPARATOR) if p.strip()]


def topic(chunk: Chunk, *, max_levels: int = 3) -> str:
    """The section path worth stating for this chunk: its last `max_levels` levels, minus titles
    the content already shows (a heading chunk, or a chunk whose first line is its heading)."""
    parts = section_parts(chunk.section_path)
    content = _norm(chunk.content)
    while parts and content.startswith(_norm(parts[-1])):
        parts.pop()  # the content says it already; the parent path is what adds information
    first_line = _norm(chunk.content.split("\n", 1)[0])
    parts = [p for p in parts if _norm(p) != first_line]  # a parent with the same text as the heading
    return SEPARATOR.join(parts[-max_levels:])


def text_semantic(chunk: Chunk, *, max_levels: int = 3) -> str:
    """Text, heading, list, code, equation: "主题：…" (only when it adds information), then content."""
    lines = []
    section = topic(chunk, max_levels=max_levels)
    if section:
        lines.append(f"主题：{section}")
    if chunk.caption and _norm(chunk.caption) not in _norm(chunk.content):  # e.g. "算法 1 Euclid's algorithm"
        lines.append(chunk.caption.strip())
    lines.append(chunk.content.strip())
    return "\n".join(lines)


def _header_and_rows(rows: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        return [], []
    width = max(len(r) for r in rows)
    # a one-cell first row over a wider table is a title ("主申请人-基本情况"), not the header
    if len(rows) > 1 and width > 1 and sum(1 for c in rows[0] if c.strip()) == 1 and len(rows[0]) < width:
        rows = rows[1:]
    return rows[0], rows[1:]


def table_summary(chunk: Chunk, *, max_fields: int = 20, max_example_fields: int = 8, section_levels: int = 3) -> str:
    """Rule-based table summary (seed 000 §2.6), the offline stand-in for an LLM summary.

    主题 / 表格(caption) / 字段(header cells) / 描述(row and column counts) / 示例(first data row),
    a blank line, then the table one row per line with cells joined by " | ".
    """
    rows = html_table_rows(chunk.table_html or "")
    header, data = _header_and_rows(rows)
    lines = []
    section = SEPARATOR.join(section_parts(chunk.section_path)[-section_levels:])
    if section:
        lines.append(f"主题：{section}")
    if chunk.caption.strip():
        lines.append(f"表格：{chunk.caption.strip()}")
    fields = [c for c in header if c.strip()]
    if fields:
        shown = "、".join(fields[:max_fields]) + ("等" if len(fields) > max_fields else "")
        lines.append(f"字段：{shown}")
        columns = max(len(r) for r in [header, *data])  # a merged header is narrower than the body
        lines.append(f"描述：该表包含{len(data)}行数据，{columns}列")
    if data:
        first = data[0]
        if len(first) == len(header):  # merged header cells would misalign field=value pairs
            pairs = [f"{h}={v}" for h, v in zip(header, first) if h.strip() and v.strip()]
        else:
            pairs = [v for v in first if v.strip()]
        if pairs:
            lines.append("示例：" + ", ".join(pairs[:max_example_fields]))
    body = table_text(chunk.table_html) if chunk.table_html else ""
    body = body or chunk.content.strip()
    if body and _norm(body) != _norm(chunk.caption):
        lines += ["", body]
    return "\n".join(lines).strip("\n")


def _caption_parts(chunk: Chunk) -> list[str]:
    """["图2.1", "系统架构图"] from caption "图2.1 系统架构图": the number stated once."""
    number, rest = split_caption(chunk.caption)
    if number:
        return [number, rest] if rest else [number]
    caption = chunk.caption.strip()
    if chunk.figure_number and chunk.figure_number.replace(" ", "") not in caption.replace(" ", ""):
        return [chunk.figure_number] + ([caption] if caption else [])  # a number found elsewhere
    return [caption] if caption else []


def image_description(chunk: Chunk, *, section_levels: int = 3) -> str:
    """Lightweight figure description (seed 003 §3.5, 000 §2.6), no VLM needed.

    "图片：图2.1，系统架构图，位于「第一章 > 1.2 概述」，第5页", then 前文/后文 from the text around
    the figure, then the VLM description or chart data when the parser or an enrich step gave one.
    """
    label = "图表" if chunk.chunk_type == CHART else "图片"
    parts = _caption_parts(chunk)
    section = SEPARATOR.join(section_parts(chunk.section_path)[-section_levels:])
    if section:
        parts.append(f"位于「{section}」")
    parts.append(f"第{chunk.page_start}页")
    lines = [f"{label}：{'，'.join(parts)}"]
    if chunk.footnote.strip():
        lines.append(f"注：{chunk.footnote.strip()}")
    if chunk.context_before.strip():
        lines.append(f"前文：{chunk.context_before.strip()}")
    if chunk.context_after.strip():
        lines.append(f"后文：{chunk.context_after.strip()}")
    if chunk.vlm_description.strip() and _norm(chunk.vlm_description) != _norm(chunk.caption):
        lines.append(f"内容：{chunk.vlm_description.strip()}")
    data = chunk.chart_markdown.strip("\n")  # not strip(): a leading empty header cell matters
    if data.strip():
        lines.append(f"数据：\n{data}")
    return "\n".join(lines)


def semantic_content(chunk: Chunk, *, section_levels: int = 3) -> str:
    if chunk.chunk_type == TABLE:
        return table_summary(chunk, section_levels=section_levels)
    if chunk.chunk_type in FIGURE_TYPES:
        return image_description(chunk, section_levels=section_levels)
    return text_semantic(chunk, max_levels=section_levels)


def build_semantic_content(chunks: list[Chunk], *, section_levels: int = 3) -> list[Chunk]:
    """Set `semantic_content` on every chunk (in place) and return the chunks."""
    for chunk in chunks:
        chunk.semantic_content = semantic_content(chunk, section_levels=section_levels)
    return chunks
