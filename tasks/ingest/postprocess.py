"""Post-processing passes over a document's chunks, in order (seed 000 §2.4, §13.2, §13.5):

filter_empty → merge_fragments → split_oversize → merge_heading_chains → prepend_orphan_headings

Each pass is a function `list[Chunk] -> list[Chunk]` with its thresholds in `ChunkingSettings`.
Only text-like chunks (text, heading, list) ever merge: tables, images, charts, equations, code
and tables of contents stay on their own.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from schemas.chunk import HEADING, LIST, TEXT, Chunk

MERGEABLE = frozenset({TEXT, HEADING, LIST})


@dataclass(frozen=True)
class ChunkingSettings:
    min_merge_size: int = 100  # body text shorter than this is merged with its neighbours
    max_merged_size: int = 800  # a merge never grows a chunk beyond this
    max_chunk_size: int = 1000  # longer text is split at sentence boundaries


def _combine(parts: list[Chunk]) -> Chunk:
    """One chunk from consecutive parts: content joined by lines, page span and pages unioned."""
    first = parts[0]
    if len(parts) == 1:
        return first
    heading = next((p for p in parts if p.chunk_type == HEADING), None)
    levels = [p.text_level for p in parts if p.text_level > 0]
    pages = sorted({pg for p in parts for pg in (p.source_pages or [p.page_start])})
    only_headings = all(p.chunk_type == HEADING for p in parts)
    return replace(
        first,
        content="\n".join(p.content for p in parts),
        chunk_type=HEADING if only_headings else (TEXT if heading or first.chunk_type != LIST else LIST),
        text_level=min(levels) if levels else 0,
        title=heading.title if heading else first.title,
        page_start=min(p.page_start for p in parts),
        page_end=max(p.page_end for p in parts),
        source_pages=pages,
        item_type="+".join(dict.fromkeys(p.item_type for p in parts)),
    )


def filter_empty(chunks: list[Chunk]) -> list[Chunk]:
    """Drop chunks with no content, unless they carry an image or a table body."""
    return [c for c in chunks if c.content.strip() or c.image_path or c.table_html]


# an article, item or numbered point starts anew even after a cut line
_NEW_ITEM = re.compile(r"\s*(?:第[一二三四五六七八九十百千零]+[编章节条款]|[（(][一二三四五六七八九十\d]+[)）]|[一二三四五六七八九十]+、|\d)")


def _runs_on(before: Chunk, after: Chunk) -> bool:
    """Does `after` continue the sentence `before` ends in: prose (its last line has a clause mark)
    cut after a Chinese character, and `after` opening with one that starts no article or item?"""
    last = before.content.rstrip().rsplit("\n", 1)[-1]
    first = after.content.lstrip()[:1]
    return (before.chunk_type == after.chunk_type == TEXT and bool(last) and "\u4e00" <= last[-1] <= "\u9fff"
            and any(mark in last for mark in "，。；") and "\u4e00" <= first <= "\u9fff"
            and not _NEW_ITEM.match(after.content))


def merge_fragments(chunks: list[Chunk], settings: ChunkingSettings = ChunkingSettings()) -> list[Chunk]:
    """A heading opens a group and takes the body after it; short body text (< min_merge_size)
    joins its neighbours, as does a paragraph continuing a sentence cut at the group's end; a merge
    never grows a group past max_merged_size."""
    out: list[Chunk] = []
    group: list[Chunk] = []

    def size(parts: list[Chunk]) -> int:
        return sum(len(p.content) + 1 for p in parts)

    def flush() -> None:
        if group:
            out.append(_combine(group))
            group.clear()

    for chunk in chunks:
        if chunk.chunk_type not in MERGEABLE:
            flush()
            out.append(chunk)
        elif chunk.chunk_type == HEADING:
            flush()
            group.append(chunk)
        else:
            only_heading = bool(group) and all(p.chunk_type == HEADING for p in group)
            short = len(chunk.content) < settings.min_merge_size or size(group) < settings.min_merge_size
            fits = size(group) + len(chunk.content) <= settings.max_merged_size
            # a heading always takes its first body (split_oversize cuts the result if needed); a
            # paragraph ends mid-sentence where MinerU cut a PDF's line ("…常务委员会必" / "须完成…")
            if group and fits and _runs_on(group[-1], chunk):  # one sentence: no line break inside it
                group[-1] = replace(_combine([group[-1], chunk]), content=group[-1].content + chunk.content)
            elif group and (only_heading or (fits and short)):
                group.append(chunk)
            else:
                flush()
                group.append(chunk)
    flush()
    return out


_STRONG_END = re.compile(r"(?<=[。！？；!?;])")
# a comma between two digits is a thousands separator ("1,000"), not a boundary
_WEAK_END = re.compile(r"(?<=[，,])(?!(?<=\d,)\d)")


def _pieces(text: str, boundary: re.Pattern, limit: int) -> list[str]:
    parts = [p for p in boundary.split(text) if p]
    out: list[str] = []
    for part in parts:
        if out and len(out[-1]) + len(part) <= limit:
            out[-1] += part
        else:
            out.append(part)
    return out


def _hard_cut(text: str, limit: int) -> list[str]:
    """Last resort for a sentence longer than the limit: cut, but never inside a number or word."""
    out = []
    while len(text) > limit:
        cut = limit
        while cut > limit // 2 and text[cut - 1].isascii() and text[cut - 1].isalnum() and text[cut].isascii() \
                and text[cut].isalnum():
            cut -= 1
        out.append(text[:cut])
        text = text[cut:]
    return out + [text] if text else out


def split_text(text: str, limit: int) -> list[str]:
    """Split at 。！？； first, then at ，, then hard; every piece ≤ limit."""
    result: list[str] = []
    for piece in _pieces(text, _STRONG_END, limit):
        if len(piece) <= limit:
            result.append(piece)
            continue
        for sub in _pieces(piece, _WEAK_END, limit):
            result.extend([sub] if len(sub) <= limit else _hard_cut(sub, limit))
    return result


def split_oversize(chunks: list[Chunk], settings: ChunkingSettings = ChunkingSettings()) -> list[Chunk]:
    """Text longer than max_chunk_size becomes several chunks with the same section and pages."""
    out: list[Chunk] = []
    for chunk in chunks:
        if chunk.chunk_type in (TEXT, LIST) and len(chunk.content) > settings.max_chunk_size:
            out.extend(replace(chunk, content=piece.strip()) for piece in
                       split_text(chunk.content, settings.max_chunk_size) if piece.strip())
        else:
            out.append(chunk)
    return out


def merge_heading_chains(chunks: list[Chunk], settings: ChunkingSettings = ChunkingSettings()) -> list[Chunk]:
    """Consecutive heading-only chunks below H1 become one chunk (highest level, first
    section_path); an H1 is a hard boundary (seed 000 §13.5 item 1)."""
    out: list[Chunk] = []
    chain: list[Chunk] = []

    def flush() -> None:
        if chain:
            out.append(_combine(chain))
            chain.clear()

    for chunk in chunks:
        chainable = chunk.chunk_type == HEADING and chunk.text_level != 1
        if chainable and sum(len(c.content) + 1 for c in chain) + len(chunk.content) <= settings.max_merged_size:
            chain.append(chunk)
            continue
        flush()
        if chainable:
            chain.append(chunk)
        else:
            out.append(chunk)
    flush()
    return out


def _is_within(child: Chunk, parent: Chunk) -> bool:
    return child.section_path == parent.section_path or child.section_path.startswith(parent.section_path + " > ")


def prepend_orphan_headings(chunks: list[Chunk], settings: ChunkingSettings = ChunkingSettings()) -> list[Chunk]:
    """A heading with no body of its own is put in front of its first child chunk (seed 000
    §13.5 item 3), which keeps its own, deeper section_path."""
    out: list[Chunk] = []
    for chunk in chunks:
        orphan = out[-1] if out and out[-1].chunk_type == HEADING else None
        if (orphan is not None and chunk.chunk_type in MERGEABLE and _is_within(chunk, orphan)
                and len(orphan.content) + len(chunk.content) < settings.max_chunk_size):
            merged = _combine([orphan, chunk])
            merged.section_path = chunk.section_path
            out[-1] = merged
        else:
            out.append(chunk)
    return out


def postprocess(chunks: list[Chunk], settings: ChunkingSettings = ChunkingSettings()) -> list[Chunk]:
    chunks = filter_empty(chunks)
    chunks = merge_fragments(chunks, settings)
    chunks = split_oversize(chunks, settings)
    chunks = merge_heading_chains(chunks, settings)
    return prepend_orphan_headings(chunks, settings)
