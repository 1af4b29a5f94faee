"""Markdown and plain text, which MinerU does not take, read into the content_list v1 structure.

Markdown headings keep their `#` level as text_level; tables become HTML, fenced code `code`
items, lists `list` items, and a paragraph that is only an image an `image` item (the image is
copied into `images/` when it lies beside the document).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from markdown_it import MarkdownIt

from schemas import errors
from schemas.chunk import TABLE_CAPTION

READER_VERSION = "2"  # part of the parse cache key: bump when the items read change
_md = MarkdownIt("commonmark").enable("table")


def decode_text(path: Path) -> str:
    raw = path.read_bytes()
    for encoding in ("utf-8-sig", "gb18030"):
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise errors.ParseError(str(path), "text is neither UTF-8 nor GB18030")


def _closing(tokens: list, start: int) -> int:
    """Index of the token closing the block opened at `start`."""
    depth = 0
    for j in range(start, len(tokens)):
        depth += tokens[j].nesting
        if depth == 0:
            return j
    return len(tokens) - 1


def _image(src: str, alt: str, doc: Path, out: Path) -> dict:
    item = {"type": "image", "img_path": "", "image_caption": [alt] if alt else [], "page_idx": 0}
    if "://" in src or src.startswith("data:"):
        return item
    candidate = (doc.parent / src).resolve()
    if candidate.is_file() and candidate.is_relative_to(doc.parent.resolve()):
        (out / "images").mkdir(exist_ok=True)
        shutil.copyfile(candidate, out / "images" / candidate.name)
        item["img_path"] = f"images/{candidate.name}"
    return item


CAPTION_MAX_CHARS = 200  # a longer paragraph opening with "Table 3" is a sentence about it


def _captions(item: dict) -> bool:
    text = item.get("text", "")
    return item["type"] == "text" and "text_level" not in item and "\n" not in text \
        and len(text) <= CAPTION_MAX_CHARS and TABLE_CAPTION.match(text) is not None


def markdown_items(text: str, doc: Path, out: Path) -> list[dict]:
    tokens = _md.parse(text)
    items: list[dict] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        end = _closing(tokens, i) if tok.nesting == 1 else i
        if tok.type == "heading_open":
            items.append({"type": "text", "text": tokens[i + 1].content.strip(),
                          "text_level": int(tok.tag[1:]), "page_idx": 0})
        elif tok.type == "paragraph_open":
            inline = tokens[i + 1]
            kids = [c for c in inline.children or [] if not (c.type == "text" and not c.content.strip())]
            if kids and all(c.type in ("image", "softbreak") for c in kids):
                for c in kids:
                    if c.type == "image":
                        items.append(_image(c.attrGet("src") or "", c.content, doc, out))
            else:
                items.append({"type": "text", "text": inline.content.strip(), "page_idx": 0})
        elif tok.type in ("bullet_list_open", "ordered_list_open"):
            entries = [t.content.strip() for t in tokens[i:end] if t.type == "inline"]
            items.append({"type": "list", "sub_type": "text", "list_items": entries, "page_idx": 0})
        elif tok.type == "table_open":
            html = _md.renderer.render(tokens[i:end + 1], _md.options, {}).strip()
            # the paragraph right before the table captioning it ("Table 2-2    Comparison of …") is its caption,
            # as MinerU gives a PDF's or a DOCX's: what names the table is then held by it
            caption = [items.pop()["text"]] if items and _captions(items[-1]) else []
            items.append({"type": "table", "table_body": html, "table_caption": caption, "img_path": "", "page_idx": 0})
        elif tok.type in ("fence", "code_block"):
            items.append({"type": "code", "sub_type": "code", "code_body": tok.content.rstrip("\n"),
                          "code_caption": [], "page_idx": 0})
        elif tok.type == "blockquote_open":
            quoted = "\n".join(t.content.strip() for t in tokens[i:end] if t.type == "inline")
            items.append({"type": "text", "text": quoted, "page_idx": 0})
        elif tok.type == "html_block":
            items.append({"type": "text", "text": tok.content.strip(), "page_idx": 0})
        i = end + 1
    return items


def text_items(text: str) -> list[dict]:
    paragraphs = [p.strip() for p in text.replace("\r\n", "\n").split("\n\n")]
    return [{"type": "text", "text": p, "page_idx": 0} for p in paragraphs if p]


def read_text_document(path: Path, out: Path, *, markdown: bool) -> None:
    from tasks.ingest.parse import CONTENT_LIST, MARKDOWN

    text = decode_text(path)
    items = markdown_items(text, path, out) if markdown else text_items(text)
    (out / CONTENT_LIST).write_text(json.dumps(items, ensure_ascii=False, indent=1), encoding="utf-8")
    (out / MARKDOWN).write_text(text, encoding="utf-8")
