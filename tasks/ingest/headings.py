"""Headings: reliable levels whatever MinerU version produced them, then section_path.

MinerU's `text_level` differs by version (v3: Title=1/H1=1/H2=2; v4 flash: Title=1/H1=2/H2=3;
text PDFs: every heading 2; 2.x: every heading 1). So:
- hierarchical levels are compressed to 1..n, and a lone document title does not push the
  chapters down a level;
- when the levels are flat or missing, the Chinese numbering of each heading decides its level
  (第X编 > 第X章 > 第X节 > 第X条 > 一、 > （一） > 1 > 1.1 > 1.1.1 > (1) > 1、 > ①), ranked
  relative to the numberings the document actually uses; body text that carries a strong
  numbering (第X章, 一、, ...) and looks like a heading becomes one;
- a "heading" that is too long for its level (H1 > 40, H2 > 60, H3+ > 50 chars) or ends like a
  sentence is body text (seed 000 §13.3 item 7).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from schemas.chunk import HEADING, TEXT, Chunk
from tasks.ingest.content_list import strip_bold

SEPARATOR = " > "
_CN_NUM = "一二三四五六七八九十百千零〇两"
_SPACE = r"\s\u3000\u2003"
# After the number: a space, the end, or a delimiter. "第二章所述…" and "11.5.14.2的试验…" fail this.
_BOUNDARY = rf"(?=[{_SPACE}]|$|[：:、．.，,）)])"


@dataclass(frozen=True)
class Numbering:
    name: str
    pattern: re.Pattern  # with the boundary after the number
    lenient: re.Pattern  # without it: for text MinerU already marked as a heading ("1.1概述")
    promotable: bool  # strong enough to turn body text into a heading


def _num(name: str, regex: str, promotable: bool = False, boundary: bool = True) -> Numbering:
    return Numbering(name, re.compile("^" + regex + (_BOUNDARY if boundary else "")), re.compile("^" + regex),
                     promotable)


# In rank order, outermost first.
NUMBERINGS: tuple[Numbering, ...] = (
    _num("part", rf"第[{_CN_NUM}\d]+编", promotable=True),
    _num("chapter", rf"第[{_CN_NUM}\d]+章", promotable=True),
    _num("section", rf"第[{_CN_NUM}\d]+节", promotable=True),
    _num("article", rf"第[{_CN_NUM}\d]+条"),
    _num("cn_item", rf"[{_CN_NUM}]+、", promotable=True, boundary=False),
    _num("cn_paren", rf"[（(][{_CN_NUM}]+[）)]", promotable=True, boundary=False),
    # "1 " / "1." / "1．" but not "12 月" (a date) and not "1.1"
    _num("arabic1", r"\d{1,3}(?:[.．](?!\d)|(?=[\s\u3000\u2003]+(?![月日年号时分秒%])))"),
    _num("arabic2", r"\d{1,3}[.．]\d{1,3}[.．]?(?![.．]?\d)"),
    _num("arabic3", r"\d{1,3}[.．]\d{1,3}[.．]\d{1,3}[.．]?(?![.．]?\d)"),
    _num("arabic4", r"\d{1,3}[.．]\d{1,3}[.．]\d{1,3}[.．]\d{1,3}[.．]?(?![.．]?\d)"),
    _num("arabic_paren", r"[（(]\d{1,3}[）)]", boundary=False),
    _num("arabic_dun", r"\d{1,3}、", boundary=False),
    _num("circled", r"[①-⑳]", boundary=False),
)
RANK = {n.name: i for i, n in enumerate(NUMBERINGS)}
# Unnumbered section names that are headings when they stand alone on a line.
SECTION_WORDS = frozenset({"序言", "前言", "引言", "目录", "目次", "附录", "摘要", "参考文献", "致谢", "后记", "附则"})
TOC_WORDS = frozenset({"目录", "目次", "contents", "tableofcontents"})
_REPEATED_NUMBER = re.compile(rf".+第[{_CN_NUM}\d]+[编章节]")


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text).lower()


@dataclass(frozen=True)
class HeadingRules:
    # seed 000 §13.3 item 7: longer "headings" are body text
    max_chars: dict[int, int] = field(default_factory=lambda: {1: 40, 2: 60, 3: 50})
    max_chars_deeper: int = 50
    sentence_endings: str = "；;。，,、：:！!？?"
    sentence_marks: str = "。；;"  # a heading never holds a full stop or a semicolon
    article_max_chars: int = 20  # 第X条 followed by its text is an article, not a heading

    def cap(self, level: int) -> int:
        return self.max_chars.get(level, self.max_chars_deeper)


def numbering_of(text: str, *, lenient: bool = False) -> str | None:
    """The numbering a heading-like text starts with (deepest match wins: "1.1" is not "1")."""
    found = None
    for numbering in NUMBERINGS:
        if (numbering.lenient if lenient else numbering.pattern).match(text):
            found = numbering.name
    return found


def heading_length(text: str) -> int:
    """Length for the caps: a CJK character counts 1, other visible characters 1/2 (English words
    are longer in letters than Chinese headings in characters)."""
    cjk = sum(1 for ch in text if "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff")
    other = sum(1 for ch in text if not ch.isspace()) - cjk
    return cjk + (other + 1) // 2


def _heading_like(text: str, rules: HeadingRules) -> bool:
    """Could this be a heading at some level? One line, not a sentence, not an article's text."""
    if not text or "\n" in text or text[-1] in rules.sentence_endings:
        return False
    if text[0] in "•·▪●○-*–" or text[0].islower():  # a bullet, or a line continuing a sentence
        return False
    if any(mark in text for mark in rules.sentence_marks) or heading_length(text) > max(rules.max_chars.values()):
        return False
    return not (numbering_of(text) == "article" and heading_length(text) > rules.article_max_chars)


def _promotable(text: str) -> bool:
    """Body text that is a heading: a strong numbering, no comma, one numbering only (not a
    run-together table-of-contents line such as "第七节 …第四章 …")."""
    name = numbering_of(text)
    return (name is not None and NUMBERINGS[RANK[name]].promotable and "，" not in text
            and not _REPEATED_NUMBER.match(text))


def _document_title(chunks: list[Chunk], headings: list[int], rules: HeadingRules) -> int | None:
    """A lone top-level, unnumbered heading at the start is the document's title."""
    if not headings:
        return None
    first = headings[0]
    top = min(chunks[i].text_level for i in headings)
    same_level = [i for i in headings if chunks[i].text_level == top]
    if (chunks[first].text_level == top and same_level == [first] and chunks[first].page_start == 1
            and numbering_of(chunks[first].content, lenient=True) is None
            and _squeeze(chunks[first].content) not in TOC_WORDS):
        return first
    return None


def _as_body(chunk: Chunk) -> None:
    chunk.chunk_type, chunk.text_level, chunk.title = TEXT, 0, ""


def _as_heading(chunk: Chunk, level: int) -> None:
    chunk.content = strip_bold(chunk.content)
    chunk.chunk_type, chunk.text_level, chunk.title = HEADING, level, chunk.content


def assign_heading_levels(chunks: list[Chunk], rules: HeadingRules = HeadingRules()) -> list[Chunk]:
    """Give every heading a reliable level 1..n (in place); demote headings that are body text."""
    headings = [i for i, c in enumerate(chunks) if c.chunk_type == HEADING]
    title = _document_title(chunks, headings, rules)
    others = [i for i in headings if i != title]
    flat = len({chunks[i].text_level for i in others}) <= 1

    if not flat:
        compressed = {lvl: n + 1 for n, lvl in enumerate(sorted({chunks[i].text_level for i in others}))}
        levels = {i: compressed[chunks[i].text_level] for i in others}
    else:
        ranked: dict[int, str | None] = {}
        toc_page: int | None = None
        # a document without pages (Markdown, HTML, text) is one "page": its contents end at the next heading its
        # markup marks ("## Contents" then "## Highlights"), as a PDF's end with their page
        paged = len({c.page_start for c in chunks}) > 1
        for i, chunk in enumerate(chunks):
            if i == title:
                continue
            text = strip_bold(chunk.content)
            if chunk.chunk_type not in (HEADING, TEXT) or not _heading_like(text, rules):
                continue
            if toc_page is not None and (chunk.page_start != toc_page or (not paged and chunk.chunk_type == HEADING)):
                toc_page = None  # a table of contents ends with its page
            if _squeeze(text) in TOC_WORDS:
                toc_page = chunk.page_start
                ranked[i] = None
            elif toc_page is not None:
                continue  # entries of a table of contents are not headings
            elif chunk.chunk_type == HEADING:
                ranked[i] = numbering_of(text) or numbering_of(text, lenient=True)
            elif _squeeze(text) in SECTION_WORDS:
                ranked[i] = None
            elif _promotable(text):
                ranked[i] = numbering_of(text)
        used = sorted({RANK[n] for n in ranked.values() if n})
        level_of_rank = {rank: n + 1 for n, rank in enumerate(used)}
        levels, previous = {}, 1
        for i in sorted(ranked):
            name = ranked[i]
            # an unnumbered heading is taken as a sibling of the heading before it
            levels[i] = previous = level_of_rank[RANK[name]] if name else previous

    if title is not None:
        levels[title] = 1
    for i, chunk in enumerate(chunks):
        if chunk.chunk_type == HEADING and i not in levels:
            _as_body(chunk)  # flat levels and not heading-like
        elif i in levels:
            text = strip_bold(chunk.content)
            if _heading_like(text, rules) and heading_length(text) <= rules.cap(levels[i]):
                _as_heading(chunk, levels[i])
            else:
                _as_body(chunk)
    return chunks


def assign_section_paths(chunks: list[Chunk]) -> list[Chunk]:
    """Seed 000 §2.3: pop stacked headings at the new heading's level or deeper, push it, join titles."""
    stack: list[tuple[int, str]] = []
    for chunk in chunks:
        if chunk.chunk_type == HEADING and chunk.text_level > 0:
            while stack and stack[-1][0] >= chunk.text_level:
                stack.pop()
            stack.append((chunk.text_level, chunk.title or chunk.content))
        chunk.section_path = SEPARATOR.join(title for _, title in stack)
    return chunks
