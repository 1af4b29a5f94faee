"""Normalize MinerU content lists (v1 flat list, v2 list of pages) into `Chunk` rows.

Guarantees: one chunk per kept item, in document order; page furniture (header, footer,
page_number, aside, footnote, discarded) dropped unless `keep_furniture`; empty items and
MinerU's "ghost" cross-page continuation tables (no body, no image) dropped; every drop counted.
Heading text loses its markdown bold; section paths come later (`tasks.ingest.headings`).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemas import chunk as C
from schemas.chunk import Chunk
from tasks.common.text import plain_quantities
from tasks.ingest.tables import table_text

FURNITURE = frozenset({
    "header", "footer", "page_number", "aside_text", "page_footnote", "discarded",
    "page_header", "page_footer", "page_aside_text",
})
_BOLD = re.compile(r"\*\*(.+?)\*\*|__(.+?)__")


@dataclass
class Normalized:
    chunks: list[Chunk] = field(default_factory=list)
    format: str = "v1"
    items_total: int = 0
    dropped_empty: int = 0
    dropped_furniture: int = 0
    dropped_ghost: int = 0


def strip_bold(text: str) -> str:
    return _BOLD.sub(lambda m: m.group(1) or m.group(2), text).strip()


def _texts(value: Any) -> list[str]:
    """Captions/footnotes: v1 gives a string or a list of strings, v2 a list of spans."""
    if not value:
        return []
    if isinstance(value, str):
        value = [value]
    out = []
    for v in value:
        s = strip_bold(_spans(v) if isinstance(v, (dict, list)) else str(v))
        if s:
            out.append(s)
    return out


def _spans(spans: Any) -> str:
    """Flatten v2 inline spans (text, equation_inline, hyperlink, ...) into text."""
    if isinstance(spans, dict):
        spans = [spans]
    parts = []
    for s in spans or []:
        if isinstance(s, str):
            parts.append(s)
            continue
        content = s.get("content", "")
        if isinstance(content, list):
            content = _spans(content)
        if s.get("type") == "equation_inline" and content:
            content = f"${content}$"
        parts.append(str(content))
    return "".join(parts).strip()


def _bbox(item: dict) -> list[float] | None:
    box = item.get("bbox")
    if isinstance(box, list) and len(box) == 4:
        return [float(v) for v in box]
    return None


def _chunk(kind: str, content: str, page: int, item: dict, item_type: str, **extra: Any) -> Chunk:
    if kind not in (C.EQUATION, C.CODE):
        content = plain_quantities(content)
    return Chunk(content=content, chunk_type=kind, page_start=page, page_end=page, bbox=_bbox(item),
                 item_type=item_type, source_pages=[page], **extra)



def _text_chunk(text: str, level: int, page: int, item: dict, item_type: str) -> Chunk | None:
    if level > 0:
        text = strip_bold(text)
    if not text.strip():
        return None
    if level > 0:
        return _chunk(C.HEADING, text, page, item, item_type, text_level=level, title=text)
    return _chunk(C.TEXT, text, page, item, item_type)


def _table_chunk(html: str, img: str, caption: list[str], footnote: list[str], page: int, item: dict,
                 item_type: str, **extra: Any) -> Chunk | None:
    body = table_text(html) if html else ""
    if not body and not img:
        return None  # a ghost: MinerU moved its rows into the previous page's table
    content = body or " ".join(caption)
    return _chunk(C.TABLE, content, page, item, item_type, table_html=html or None, image_path=img or None,
                  caption=" ".join(caption), footnote=" ".join(footnote), **extra)


def _figure_chunk(kind: str, img: str, caption: list[str], footnote: list[str], data_html: str, page: int,
                  item: dict, item_type: str, **extra: Any) -> Chunk | None:
    data = table_text(data_html) if data_html.lstrip().startswith("<") else data_html.strip()
    content = "\n".join(p for p in (" ".join(caption), data) if p)
    if not img and not content:
        return None
    return _chunk(kind, content, page, item, item_type, image_path=img or None, caption=" ".join(caption),
                  footnote=" ".join(footnote), chart_markdown=data if kind == C.CHART else "",
                  vlm_description=data if kind == C.IMAGE else "", **extra)


def _tally(result: Normalized, item_type: str, chunk: Chunk | None, page: int) -> None:
    if chunk is not None:
        result.chunks.append(chunk)
    elif item_type == "table":
        result.dropped_ghost += 1
        # MinerU moved this page's rows into the table before it: record the page in its span
        previous = next((c for c in reversed(result.chunks) if c.chunk_type == C.TABLE), None)
        if previous is not None and previous.page_end < page:
            previous.page_end = page
            previous.source_pages.append(page)
    else:
        result.dropped_empty += 1


def normalize_v1(items: list[dict], *, keep_furniture: bool = False) -> Normalized:
    result = Normalized(format="v1", items_total=len(items))
    for item in items:
        t = item.get("type", "text")
        page = int(item.get("page_idx", 0)) + 1
        if t in FURNITURE and not keep_furniture:
            result.dropped_furniture += 1
            continue
        if t == "table":
            chunk = _table_chunk(item.get("table_body") or "", item.get("img_path") or "",
                                 _texts(item.get("table_caption")), _texts(item.get("table_footnote")), page, item, t)
        elif t in ("image", "chart"):
            chunk = _figure_chunk(
                C.IMAGE if t == "image" else C.CHART, item.get("img_path") or "",
                _texts(item.get(f"{t}_caption") or item.get("caption")), _texts(item.get(f"{t}_footnote")),
                str(item.get("content") or ""), page, item, t, sub_type=item.get("sub_type", ""))
        elif t == "equation":
            text = (item.get("text") or "").strip()
            chunk = _chunk(C.EQUATION, text, page, item, t, image_path=item.get("img_path") or None) if text else None
        elif t in ("list", "index"):
            entries = [e.strip() for e in item.get("list_items") or [] if str(e).strip()]
            chunk = _chunk(C.LIST if t == "list" else C.INDEX, "\n".join(entries), page, item, t,
                           sub_type=item.get("sub_type", "")) if entries else None
        elif t == "code":
            body = (item.get("code_body") or "").strip()
            chunk = _chunk(C.CODE, body, page, item, t, caption=" ".join(_texts(item.get("code_caption"))),
                           sub_type=item.get("sub_type", "")) if body else None
        else:  # text, and any furniture that was asked to be kept
            chunk = _text_chunk(str(item.get("text") or ""), int(item.get("text_level") or 0), page, item, t)
        _tally(result, t, chunk, page)
    return result


def normalize_v2(pages: list[list[dict]], *, keep_furniture: bool = False) -> Normalized:
    result = Normalized(format="v2", items_total=sum(len(p) for p in pages))
    for page_idx, items in enumerate(pages):
        page = page_idx + 1
        for item in items:
            t = item.get("type", "paragraph")
            c = item.get("content") or {}
            if t in FURNITURE and not keep_furniture:
                result.dropped_furniture += 1
                continue
            if t == "title":
                chunk = _text_chunk(_spans(c.get("title_content") or c.get("paragraph_content")),
                                    int(c.get("level") or 1), page, item, t)
            elif t == "table":
                chunk = _table_chunk(c.get("html") or "", (c.get("image_source") or {}).get("path") or "",
                                     _texts(c.get("table_caption")), _texts(c.get("table_footnote")), page, item, t,
                                     table_type=str(c.get("table_type") or ""),
                                     table_nest_level=str(c.get("table_nest_level") or ""))
            elif t in ("image", "chart"):
                chunk = _figure_chunk(
                    C.IMAGE if t == "image" else C.CHART, (c.get("image_source") or {}).get("path") or "",
                    _texts(c.get(f"{t}_caption")), _texts(c.get(f"{t}_footnote")), str(c.get("content") or ""),
                    page, item, t, sub_type=str(c.get("sub_type") or ""))
            elif t in ("equation_interline", "equation"):
                text = (c.get("math_content") or "").strip()
                chunk = _chunk(C.EQUATION, text, page, item, t,
                               image_path=(c.get("image_source") or {}).get("path") or None) if text else None
            elif t in ("list", "index"):
                entries = [_spans(e.get("item_content")) for e in c.get("list_items") or []]
                entries = [e for e in entries if e]
                chunk = _chunk(C.LIST if t == "list" else C.INDEX, "\n".join(entries), page, item, t,
                               sub_type=str(c.get("list_type") or "")) if entries else None
            elif t in ("code", "algorithm"):
                body = _spans(c.get(f"{t}_content"))
                chunk = _chunk(C.CODE, body, page, item, t, caption=" ".join(_texts(c.get(f"{t}_caption"))),
                               sub_type=t if t == "algorithm" else str(c.get("code_language") or "")) if body else None
            else:  # paragraph, kept furniture, unknown text-bearing types
                spans = c.get("paragraph_content") or next((v for k, v in c.items() if k.endswith("_content")), [])
                chunk = _text_chunk(_spans(spans), 0, page, item, t)
            _tally(result, t, chunk, page)
    return result


def normalize_parsed(parsed_dir: Path, *, keep_furniture: bool = False) -> Normalized:
    """Normalize a parsed folder, preferring content_list v2 (richer) and falling back to v1."""
    from tasks.ingest.parse import CONTENT_LIST, CONTENT_LIST_V2

    v2 = parsed_dir / CONTENT_LIST_V2
    if v2.is_file():
        pages = json.loads(v2.read_text(encoding="utf-8"))
        if pages and all(isinstance(p, list) for p in pages):
            return normalize_v2(pages, keep_furniture=keep_furniture)
    items = json.loads((parsed_dir / CONTENT_LIST).read_text(encoding="utf-8"))
    return normalize_v1(items, keep_furniture=keep_furniture)
