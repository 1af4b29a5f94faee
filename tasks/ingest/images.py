"""Images (seed 000 §2.5) and captions (seed 003 §8): plain functions, no Prefect.

`copy_images` moves every referenced image into one content-addressed folder; `attach_captions`
recovers captions and figure numbers that MinerU left as separate text blocks, and fills the
text context around figures. Both change the given chunks in place and return them.
"""
from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from schemas.chunk import CHART, HEADING, IMAGE, LIST, TABLE, TEXT, Chunk
from tasks.common.files import file_md5

FIGURE_TYPES = frozenset({IMAGE, CHART})
CAPTIONED_TYPES = FIGURE_TYPES | {TABLE}
# Placeholders the old service stored when it found no caption (seed 003 §8.1): never a caption.
PLACEHOLDER_CAPTIONS = frozenset({"图片", "图表", "表格", "image", "figure", "chart", "table"})

# ---------------------------------------------------------------- image copying

_IMG_SRC = re.compile(r"""(<img\b[^>]*?\bsrc\s*=\s*)(["'])(.*?)\2""", re.IGNORECASE | re.DOTALL)


@dataclass
class ImageCopyResult:
    chunks: list[Chunk]
    copied: int = 0  # files newly written to images_dir
    reused: int = 0  # references resolved to a file that was already there (same content)
    missing: list[str] = field(default_factory=list)  # referenced but not in parsed_dir (kept as is)
    rejected: list[str] = field(default_factory=list)  # absolute or escaping paths (dropped)


def table_image_refs(html: str | None) -> list[str]:
    """`<img src>` values inside a table's HTML (seed 000 §2.5 source 3), in order, once each."""
    refs: list[str] = []
    for _, _, src in _IMG_SRC.findall(html or ""):
        src = src.strip()
        # inline data and remote URLs are not files MinerU wrote
        if src and not src.lower().startswith(("data:", "http:", "https:")) and src not in refs:
            refs.append(src)
    return refs


def _safe_relative(ref: str) -> bool:
    """Only plain relative paths may be read: the parse output must not point us at other files."""
    if not ref or "\x00" in ref or "\\" in ref or ref.startswith("/") or re.match(r"^[A-Za-z]:", ref):
        return False
    return ".." not in PurePosixPath(ref).parts


def _copy_one(ref: str, parsed_dir: Path, images_dir: Path, result: ImageCopyResult,
              done: dict[str, str | None]) -> str | None:
    """New file name for `ref`, the original `ref` when the file is missing, None when rejected."""
    if ref in done:
        return done[ref]
    new: str | None = ref
    source = (parsed_dir / ref) if _safe_relative(ref) else None
    if source is None or not source.resolve().is_relative_to(parsed_dir.resolve()):  # symlinks too
        result.rejected.append(ref)
        new = None
    elif not source.is_file():
        result.missing.append(ref)
    else:
        new = file_md5(source) + source.suffix.lower()
        target = images_dir / new
        if target.is_file():
            result.reused += 1
        else:
            tmp = images_dir / f".{new}.{os.getpid()}.tmp"
            try:  # temp file + rename: a crash never leaves a truncated image under its final name
                shutil.copyfile(source, tmp)
                os.replace(tmp, target)
            finally:
                tmp.unlink(missing_ok=True)
            result.copied += 1
    done[ref] = new
    return new


def copy_images(chunks: list[Chunk], parsed_dir: Path, images_dir: Path) -> ImageCopyResult:
    """Copy each referenced image to `images_dir/{md5}{ext}` and point the chunk at that name.

    Sources: `image_path` (images, charts, image-form tables, equations) and `images`, which first
    gains the `<img src>` references of `table_html`; the HTML is rewritten to the new names too.
    Identical images become one file. A missing file keeps its original path and is listed in
    `missing` (MinerU samples often ship without `images/`); an unsafe path is dropped.
    """
    result = ImageCopyResult(chunks)
    images_dir.mkdir(parents=True, exist_ok=True)
    done: dict[str, str | None] = {}
    for chunk in chunks:
        for ref in table_image_refs(chunk.table_html):
            if ref not in chunk.images:
                chunk.images.append(ref)
        if chunk.image_path:
            chunk.image_path = _copy_one(chunk.image_path, parsed_dir, images_dir, result, done)
        renamed = [(ref, _copy_one(ref, parsed_dir, images_dir, result, done)) for ref in chunk.images]
        chunk.images = [new for _, new in renamed if new]
        if chunk.table_html and renamed:
            chunk.table_html = _rewrite_srcs(chunk.table_html, dict(renamed))
    return result


def _rewrite_srcs(html: str, mapping: dict[str, str | None]) -> str:
    """Point `<img src>` at the copied files so the HTML renders from images_dir."""
    def swap(m: re.Match) -> str:
        ref = m.group(3).strip()
        if ref not in mapping:
            return m.group(0)
        return f"{m.group(1)}{m.group(2)}{mapping[ref] or ''}{m.group(2)}"
    return _IMG_SRC.sub(swap, html)


# ---------------------------------------------------------------- captions

_NUM = r"(?:\d+(?:[.\-－–]\d+)*[a-z]?|[一二三四五六七八九十]+(?=[\s:：、.．]|$))"
_FIGURE_LABELS = r"图表|图|Figure|Fig\.?|Chart"
_TABLE_LABELS = r"续表|表格|表|Table"
# A reference sentence ("图1所示…", "Table 2 shows…") starts like a caption but is body text.
_CN_VERBS = r"所示|显示|可见|表明|列出|给出|展示|说明|中|是|为|的"
_EN_VERBS = r"shows?|illustrates?|presents?|depicts?|lists?|summari[sz]es?|compares?|gives?|reports?|is|are|was|were|and|in|of"
_LABEL_NUM = re.compile(rf"(?P<label>{_FIGURE_LABELS}|{_TABLE_LABELS})\s*(?P<num>{_NUM})?", re.IGNORECASE)
_STARTS_FIGURE = re.compile(rf"\s*(?:{_FIGURE_LABELS})\s*{_NUM}", re.IGNORECASE)
_STARTS_TABLE = re.compile(rf"\s*(?:(?:{_TABLE_LABELS})\s*{_NUM}|续表)", re.IGNORECASE)
_REFERENCE_TAIL = re.compile(rf"(?:{_CN_VERBS})|\s*(?:{_EN_VERBS})\b", re.IGNORECASE)
# "(a)", "b)", "(iii)": a sub-figure label, alone as a text block or leading a sub-figure caption.
_SUBLABEL = re.compile(r"^\s*\(?(?:[a-z]|[ivx]{1,4})\)")
_SUBLABEL_ONLY = re.compile(r"^\s*\(?(?:[a-z]|[ivx]{1,4})\)\s*$")
_BOUNDARY = re.compile(r"(?:^|(?<=[.。;；!?！？]))\s*")


def _format_number(label: str, num: str) -> str:
    if label == "续表":
        label = "表"  # a continuation carries the number of the table it continues
    return f"{label} {num}" if re.match(r"[A-Za-z]", label) else f"{label}{num}"


def figure_number(caption: str) -> str:
    """The figure/table number a caption starts with, or names after a sentence break.

    "图 2.1 Q 判据…" → "图2.1"; "Table 1. Top-1…" → "Table 1"; "(b) … landscape. Figure 1. Loss…" →
    "Figure 1"; "续表 3" → "表3" (it continues table 3). "发票 1" or "(a) 1D global…" → "".
    A number mentioned mid-sentence ("as in Table 2") is a reference, not this item's number.
    """
    for start in _BOUNDARY.finditer(caption or ""):
        m = _LABEL_NUM.match(caption, start.end())
        if m and m.group("num"):
            return _format_number(m.group("label"), m.group("num"))
    return ""


def split_caption(caption: str) -> tuple[str, str]:
    """("图2.1", "系统架构图") from "图 2.1：系统架构图"; ("", caption) when it starts with no number."""
    caption = caption.strip()
    m = _LABEL_NUM.match(caption)
    if not m or not m.group("num"):
        return "", caption
    return _format_number(m.group("label"), m.group("num")), caption[m.end():].lstrip(" \t:：.．、,，")


def is_caption_text(text: str, kind: str, *, max_len: int = 80) -> bool:
    """True when a text block reads as the caption of a figure (`kind` image/chart) or table.

    Short, starting with a label of the right kind and a number, and not a sentence that merely
    refers to a figure ("图1所示…"): a table never takes "图3 …", a figure never takes "表1 …".
    """
    text = text.strip()
    if not text or len(text) > max_len or "\n" in text:
        return False
    m = (_STARTS_TABLE if kind == TABLE else _STARTS_FIGURE).match(text)
    if not m:
        return False
    return not _REFERENCE_TAIL.match(text, m.end())


def _is_sublabel_text(chunk: Chunk) -> bool:
    return chunk.chunk_type == TEXT and bool(_SUBLABEL_ONLY.match(chunk.content))


def _usable_caption(caption: str) -> str:
    caption = caption.strip()
    return "" if caption.lower() in PLACEHOLDER_CAPTIONS else caption


def _caption_candidate(chunks: list[Chunk], i: int, step: int, taken: set[int], max_len: int) -> int | None:
    """Index of the text block that captions chunks[i], looking in one direction.

    Forward, the walk passes over the rest of a figure group — further uncaptioned figures of
    the same page and their "(a)"/"(b)" labels — because a group's caption follows its last
    member. Backward only the immediate neighbour counts.
    """
    me = chunks[i]
    j = i + step
    while 0 <= j < len(chunks):
        other = chunks[j]
        if j in taken:
            j += step
            continue
        if other.chunk_type == TEXT:
            if step > 0 and _is_sublabel_text(other) and other.page_start == me.page_end:
                j += step
                continue
            same_page = other.page_start == me.page_end if step > 0 else other.page_end == me.page_start
            if not (same_page and is_caption_text(other.content, me.chunk_type, max_len=max_len)):
                return None
            after = chunks[j + 1] if j + 1 < len(chunks) else None
            if (step > 0 and me.chunk_type == TABLE and after is not None and after.chunk_type == TABLE
                    and not _usable_caption(after.caption)):
                return None  # "table, 表2 …, table": the block heads the second table
            return j
        if (step > 0 and me.chunk_type in FIGURE_TYPES and other.chunk_type in FIGURE_TYPES
                and not _usable_caption(other.caption) and other.page_start == me.page_end):
            j += step
            continue
        return None
    return None


def _set_caption(chunk: Chunk, caption: str) -> None:
    chunk.caption = caption
    # figures carry their caption in `content` (as normalize does); a table's content is its rows
    if chunk.chunk_type in FIGURE_TYPES and caption not in chunk.content:
        chunk.content = "\n".join(p for p in (caption, chunk.content) if p)
    elif chunk.chunk_type == TABLE and not chunk.content.strip():
        chunk.content = caption


def _group_number(chunks: list[Chunk], i: int) -> str:
    """Number of the figure group chunks[i] belongs to: consecutive figures of one page."""
    me = chunks[i]
    for step in (1, -1):
        j = i + step
        while 0 <= j < len(chunks) and chunks[j].chunk_type in FIGURE_TYPES and chunks[j].page_start == me.page_start:
            number = figure_number(chunks[j].caption)
            if number:
                return number
            j += step
    return ""


def _clip(text: str, limit: int, *, keep_end: bool) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return "…" + text[-limit:] if keep_end else text[:limit] + "…"


def _context(chunks: list[Chunk], i: int, step: int, limit: int) -> str:
    """Nearest body text in one direction, within the section: a heading ends the search."""
    j = i + step
    while 0 <= j < len(chunks):
        other = chunks[j]
        if other.chunk_type == HEADING:
            return ""
        if other.chunk_type in (TEXT, LIST) and other.content.strip() and not _is_sublabel_text(other):
            return _clip(other.content, limit, keep_end=step < 0)  # keep the part nearest the figure
        j += step
    return ""


def attach_captions(chunks: list[Chunk], *, max_caption_len: int = 80, context_chars: int = 150) -> list[Chunk]:
    """Recover captions and figure numbers; return the chunks without the absorbed caption texts.

    A figure or table without a caption takes an adjacent caption-like text block (figures look
    after first — MinerU leaves a figure's caption as the next block; tables look before first —
    table captions sit above the table) and that block is removed so it is not indexed twice. A
    figure without any caption keeps caption "" (never a "图片"/"图表" placeholder). Figures get
    `context_before`/`context_after` from the nearest body text of their section. Run it after
    section paths are set and before short texts are merged.
    """
    taken: set[int] = set()
    for i, chunk in enumerate(chunks):
        if chunk.chunk_type not in CAPTIONED_TYPES:
            continue
        chunk.caption = _usable_caption(chunk.caption)
        if not chunk.caption:
            order = (-1, 1) if chunk.chunk_type == TABLE else (1, -1)
            for step in order:
                j = _caption_candidate(chunks, i, step, taken, max_caption_len)
                if j is not None:
                    break
            if j is not None:
                caption = chunks[j].content.strip()
                taken.add(j)
                _set_caption(chunk, caption)
                # the rest of the figure group before the caption shares it
                for k in range(i + 1, j):
                    if chunks[k].chunk_type in FIGURE_TYPES and not _usable_caption(chunks[k].caption):
                        _set_caption(chunks[k], caption)
        chunk.figure_number = chunk.figure_number or figure_number(chunk.caption)
    for i, chunk in enumerate(chunks):
        if chunk.chunk_type in FIGURE_TYPES and not chunk.figure_number and _SUBLABEL.match(chunk.caption):
            chunk.figure_number = _group_number(chunks, i)  # "(a) …" sub-figure of "Figure 1"
    kept = [c for i, c in enumerate(chunks) if i not in taken]
    for i, chunk in enumerate(kept):
        if chunk.chunk_type in FIGURE_TYPES:
            chunk.context_before = chunk.context_before or _context(kept, i, -1, context_chars)
            chunk.context_after = chunk.context_after or _context(kept, i, 1, context_chars)
    return kept
