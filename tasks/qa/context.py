"""Context: expand the ranked chunks by section PREFIX, filter by score, fit a character budget.

- `expand_batch` (seed 000 §5.2 [25], seed defect 000 §13.3 item 2): the neighbours of each seed
  chunk — the same source, chunk_index from 1 before to 8 after, and a section path equal to the
  seed's or *under* it ("三、… > （一）…" is under "三、…"; the seed matched sections exactly, so a
  parent heading never pulled its sub-sections). Read from DuckDB `chunks` (the record), a query
  per batch of questions for each kind of neighbour; at most CONTEXT_EXPANSION_MAX_CHUNKS per
  question. Seeds: chunks with a rerank score ≥ 0.3 (the seed's "expansion 2") or, on the rrf
  scale, the top ranked ones. Ours: a question asking about a cover (or the document's own title,
  which the cover carries), the contents or the foreword reads them in the best hit's document (its
  first COVER_CHUNKS chunks; its index chunks or contents section; its foreword's first chunks), however
  far the hit is from them,
  admitted first as asked chunks are; a
  heading the question quotes is read in the seeds' documents (its first HEADED_CHUNKS chunks,
  asked: admitted before the kept chunks, past the soft limit too, ranked or not), and so is the
  chunk where an article the question names begins ("Article 60", `articles_asked`), the chunk captioning a
  numbered figure whose title it asks ("图4-69的图题") and, for a seed
  inside a Chinese list ("（二十）…"), the chunks back to the line opening it (`continues_list`: who
  the items are said of, "…常务委员会行使下列职权:"); the short line right
  before a table in the context, which may label the table's rows (`row_label`); and the whole of a
  document a seed is from when it is `context_small_document_chars` long at most (a one-page rules
  sheet's table two sections after the article ranked), after the seeds' own sections.
- `order_for_prompt` (seed 001 §7.1): on the rerank scale drop chunks under RERANK_CONTEXT_MIN_SCORE,
  except a table beside a passing chunk of its section (≥ min × 0.3) and figures (≥ min × 0.5).
- `build_context` (seed 001 §7.2): group by (source, section), chunks in document order inside a
  group, groups by their best score; the ranked chunks first, then the expanded neighbours (ours:
  the seed let the first hit's neighbours fill the budget before a later hit got in); add groups
  until CONTEXT_MAX_CHARS (8000), past CONTEXT_SOFT_LIMIT (6000) only groups nearly as strong as
  the best; at most MAX_CONTEXT_CHUNKS text chunks; a table is never cut or dropped from an
  admitted group, nor is its label line. Each chunk is shown with its `[ref:chunk_id]` so the answer
  can cite it. Ours: a list of the corpus's files (`tasks.qa.filters.file_lists`) gets no budget
  unless the question asks about the files.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from schemas.chunk import CHART, IMAGE, TABLE, TEXT
from schemas.qa import RERANK
from schemas.settings import Settings
from tasks.qa.extract import figure_asked, values_only
from tasks.qa.filters import file_lists
from tasks.qa.gloss import chinese_numeral
from tasks.qa.types import Candidate, Retrieval, evidence_text


@dataclass
class Context:
    """The evidence given to the answerer, in prompt order, and its rendered text."""

    chunks: list[Candidate] = field(default_factory=list)
    text: str = ""

    @property
    def chunk_ids(self) -> list[str]:
        return [c.chunk_id for c in self.chunks]

    @property
    def chars(self) -> int:
        return len(self.text)


HEADED_CHUNKS = 2  # a quoted heading's first chunks read
LOW_TABLE_SHARE = 0.5  # of its section's best score: a table ranked below it waits for the other groups' hits
# a quoted name ("标题“2 Section 2”下", "under the heading '2.2 Section 2.1'", 'Let's swim!' with its apostrophe)
_QUOTED = re.compile(r"“([^”]{2,60})”|\"([^\"]{2,60})\"|「([^」]{2,60})」|(?<![\w'’])'(.{2,60}?)'(?!\w)")
ROW_LABEL_MAX_CHARS = 20  # a line this short, alone right before a table, may label its rows ("0°C≤T<5°C")
COVER_CHUNKS = 3  # a document's first chunks with no heading above them are its cover
CONTENTS_CHUNKS = 4  # a document's contents read for a question about them
# a question asking the document's own title ("the overall title of the … Word sample", "文档最上方的标题"): its cover's
ASKS_DOCUMENT_TITLE = re.compile(r"\b(?:overall|top[- ]level|main)\s+title\b|最上方的?(?:总)?标题|总标题", re.IGNORECASE)
_ASKS_COVER = re.compile(rf"\bcover\b|\btitle page\b|封面|扉页|{ASKS_DOCUMENT_TITLE.pattern}", re.IGNORECASE)
ASKS_CONTENTS = re.compile(r"\bcontents\b|\bTOC\b|目录|目次", re.IGNORECASE)
FOREWORD_CHUNKS = 2  # a foreword read for a question about it (a standard's lists its parts and drafters)
_ASKS_FOREWORD = re.compile(r"\bforeword\b|\bpreface\b|前言", re.IGNORECASE)


def expansion_seeds(retrieval: Retrieval, settings: Settings) -> list[Candidate]:
    kept = retrieval.ranked[:retrieval.kept]
    if retrieval.score_scale == RERANK:
        kept = [c for c in kept if c.score >= settings.retrieval.context_expansion_seed_min_rerank]
    return [c for c in kept if c.chunk is not None][:settings.retrieval.context_expansion_max_seeds]


def expand_batch(db_path: Path, kb: str, retrievals: Sequence[Retrieval], settings: Settings) -> list[list[Candidate]]:
    """Per retrieval, its seeds' section-prefix neighbours not already ranked (each once), nearest
    first, capped; a neighbour carries its seed's score and `expanded_from`."""
    from warehouse.chunks import (CONTENTS, COVER, FOREWORD, Neighbour, SectionSeed, front_matter,
                                  section_neighbours, small_documents)

    out: list[list[Candidate]] = [[] for _ in retrievals]
    if not settings.retrieval.context_expansion_enabled or not retrievals:
        return out
    seeds = [(qi, rank, c) for qi, r in enumerate(retrievals) for rank, c in enumerate(expansion_seeds(r, settings))]
    neighbours = section_neighbours(
        db_path, kb, [SectionSeed(qi, rank, c.chunk_id, c.chunk.source, c.chunk.section_path, c.chunk.chunk_index)
                      for qi, rank, c in seeds],
        before=settings.retrieval.context_expansion_before, after=settings.retrieval.context_expansion_after)
    seed_of = {(qi, c.chunk_id): c for qi, _, c in seeds}
    taken = [{c.chunk_id for c in r.ranked} for r in retrievals]
    # a question asking what a cover, the contents or the foreword say ("the ICS number printed on the cover", "目录中
    # 第3.6节的标题", "前言列出的起草单位") reads them in the best hit's document, however far the hit is from them:
    # asked for, as a quoted heading is
    front: list[Neighbour] = []
    for part, asks, n in ((CONTENTS, ASKS_CONTENTS, CONTENTS_CHUNKS), (COVER, _ASKS_COVER, COVER_CHUNKS),
                          (FOREWORD, _ASKS_FOREWORD, FOREWORD_CHUNKS)):
        firsts = {qi: c for qi, rank, c in seeds if rank == 0 and asks.search(retrievals[qi].question)}
        found = front_matter(db_path, kb, [c.chunk.source for c in firsts.values()], part, n)
        front = [Neighbour(qi, seed.chunk_id, chunk) for qi, seed in firsts.items()
                 for chunk in found.get(seed.chunk.source, [])] + front
    # a small document a seed is from is read whole (a one-page rules sheet's table two sections after the
    # article ranked), after the hits' own sections
    whole = small_documents(db_path, kb, [c.chunk.source for _, _, c in seeds],
                            settings.retrieval.context_small_document_chars)
    neighbours += [Neighbour(qi, c.chunk_id, chunk) for qi, _, c in seeds for chunk in whole.get(c.chunk.source, [])]
    headed = _quoted_headings(db_path, kb, retrievals, seeds) + _articles_asked(db_path, kb, retrievals, seeds) \
        + _sections_asked(db_path, kb, retrievals, seeds) \
        + _figures_asked(db_path, kb, retrievals, seeds) + front + _list_openers(db_path, kb, seeds)
    named = {(n.question, n.chunk.chunk_id) for n in headed}
    added: list[set[str]] = [set() for _ in retrievals]
    for n in headed + neighbours:
        qi, seed_id, chunk = n.question, n.seed_id, n.chunk
        asked = (qi, chunk.chunk_id) in named  # (a ranked chunk too: `contexts_for` admits it as asked)
        if chunk.chunk_id in added[qi] or (chunk.chunk_id in taken[qi] and not asked) \
                or len(out[qi]) >= settings.retrieval.context_expansion_max_chunks:
            continue
        added[qi].add(chunk.chunk_id)
        out[qi].append(Candidate(chunk.chunk_id, score=seed_of[(qi, seed_id)].score, expanded_from=seed_id,
                                 chunk=chunk, asked=asked))
    _add_table_labels(db_path, kb, retrievals, out, [t | a for t, a in zip(taken, added)])
    return out


def _quoted_headings(db_path: Path, kb: str, retrievals: Sequence[Retrieval],
                     seeds: Sequence[tuple[int, int, Candidate]]) -> list:
    """The first HEADED_CHUNKS chunks under each heading a question quotes ("标题“2 Section 2”下的第一段文字"), in its
    seeds' documents, however far the seeds are from it (`warehouse.chunks.Neighbour`s of the first seed of
    each document)."""
    from warehouse.chunks import HeadingAsk, headed_chunks, heading_key

    asks: dict[tuple[int, str, str], str] = {}
    for qi, _, c in seeds:
        for heading in quoted(retrievals[qi].question):
            asks.setdefault((qi, c.chunk.source, heading_key(heading)), c.chunk_id)
    return headed_chunks(db_path, kb, [HeadingAsk(qi, seed_id, source, heading)
                                       for (qi, source, heading), seed_id in asks.items()], HEADED_CHUNKS)


PART_NUMERAL = r"[0-9]{1,4}|[零一二三四五六七八九十百千]{1,8}"  # the number of a part, chapter or article
ARTICLE_CITED = r"\b(?:article|art\.)"  # how English cites a law's article ("Article 60", "Art. 126")
# an article a question names ("Under Article 60 of the PRC Constitution", "根据第十六条"), written as a law writes it
_ARTICLE_NAMED = re.compile(rf"第\s*({PART_NUMERAL})\s*条|{ARTICLE_CITED}\s*([0-9]{{1,4}})\b", re.IGNORECASE)


def articles_asked(question: str) -> list[str]:
    """The articles the question names, as a law's text opens them ("Article 60", "第60条" → "第六十条")."""
    out = []
    for m in _ARTICLE_NAMED.finditer(question):
        number = m.group(1) or m.group(2)
        if number.isdigit():
            number = chinese_numeral(int(number)) if 0 < int(number) < 10000 else ""
        if number:
            out.append(f"第{number}条")
    return list(dict.fromkeys(out))


# a section the question names by its number: three levels to five ("clause 6.3.2.1.7", "5.2.1条"), or two when called
# a clause ("第5.1条", "precaution 5.4"; not a mere "1.5")
_SECTION_WRITTEN = re.compile(r"(?<![0-9.])[0-9]{1,2}(?:\.[0-9]{1,2}){2,4}(?![0-9.])")
_CLAUSE_WRITTEN = re.compile(r"第\s*([0-9]{1,2}\.[0-9]{1,2})\s*[条款项]|\b(?:clause|item|precaution|provision|requirement)"
                             r"\s+([0-9]{1,2}\.[0-9]{1,2})(?![0-9.])", re.IGNORECASE)


def sections_asked(question: str) -> list[str]:
    """The numbers of the sections the question names ("Under clause 6.3.2.1.7 of …" → ["6.3.2.1.7"])."""
    return list(dict.fromkeys([*_SECTION_WRITTEN.findall(question),
                               *(a or b for a, b in _CLAUSE_WRITTEN.findall(question))]))


def _named_or_seeds(retrievals: Sequence[Retrieval], seeds: Sequence[tuple[int, int, Candidate]],
                    asked: Callable[[str], list[str]]) -> list:
    """Per question, what `asked` finds in it (an article's, a section's number), to be looked for in the documents
    the question names ("根据宪法第十条": the constitution's, though every seed is the civil code's), else in its seeds'
    documents, however far the seeds are from it (`warehouse.chunks.HeadingAsk`s)."""
    from warehouse.chunks import HeadingAsk

    asks: dict[tuple[int, str, str], str] = {}
    for qi, _, c in seeds:
        for number in asked(retrievals[qi].question):
            for source in sorted(retrievals[qi].named_documents) or [c.chunk.source]:
                asks.setdefault((qi, source, number), c.chunk_id)
    return [HeadingAsk(qi, seed_id, source, number) for (qi, source, number), seed_id in asks.items()]


def _sections_asked(db_path: Path, kb: str, retrievals: Sequence[Retrieval],
                    seeds: Sequence[tuple[int, int, Candidate]]) -> list:
    """The first chunk of each section a question names by its number: the section ranked next to it ("6.3.2.1.6")
    does not say what "clause 6.3.2.1.7" does."""
    from warehouse.chunks import numbered_chunks

    return numbered_chunks(db_path, kb, _named_or_seeds(retrievals, seeds, sections_asked))


def _articles_asked(db_path: Path, kb: str, retrievals: Sequence[Retrieval],
                    seeds: Sequence[tuple[int, int, Candidate]]) -> list:
    """The chunk where each article a question names begins: the article ranked next to it ("第六十一条") does not
    answer what "Article 60" says."""
    from warehouse.chunks import article_chunks

    return article_chunks(db_path, kb, _named_or_seeds(retrievals, seeds, articles_asked))


def _figures_asked(db_path: Path, kb: str, retrievals: Sequence[Retrieval],
                   seeds: Sequence[tuple[int, int, Candidate]]) -> list:
    """The chunk captioning the numbered figure (or example) whose title a question asks ("图4-69的图题", "the caption
    of Example 3-10"), in its seeds' documents, however far the seeds are from it: a passage citing the figure ranks
    above its caption."""
    from warehouse.chunks import HeadingAsk, captioned_chunks

    # RE2 has no lookahead: the number ends where no digit goes on
    captions = {qi: rf"{asked[0]}\s*{asked[1]}(?:[^0-9.\-]|[.\-](?:[^0-9]|$)|$)" for qi, r in enumerate(retrievals)
                if (asked := figure_asked(r.question)) is not None}
    asks: dict[tuple[int, str, str], str] = {}
    for qi, _, c in seeds:
        if qi in captions:
            asks.setdefault((qi, c.chunk.source, captions[qi]), c.chunk_id)
    return captioned_chunks(db_path, kb, [HeadingAsk(qi, seed_id, source, caption)
                                          for (qi, source, caption), seed_id in asks.items()])


LIST_OPENER_CHUNKS = 3  # how far back the line opening a list a seed continues is looked for
_ITEM_MARK = re.compile(r"[（(]([一二三四五六七八九十]{1,3})[)）]")  # a Chinese list's item ("（二十）"), not "(2)"
_OPENER = re.compile(r"[:：]\s*$|[:：]\s*[（(]一[)）]", re.MULTILINE)


def continues_list(text: str) -> bool:
    """Whether the text starts inside a list opened before it: an item ("（十九）…") comes before any line
    opening a list ("…行使下列职权:"), and it is not the first."""
    item, opener = _ITEM_MARK.search(text), _OPENER.search(text)
    return item is not None and item.group(1) != "一" and (opener is None or item.start() < opener.start())


def _list_openers(db_path: Path, kb: str, seeds: Sequence[tuple[int, int, Candidate]]) -> list:
    """For each text seed inside a list opened chunks before it ("（二十）决定…进入紧急状态" of "第六十七条 全国人民代表大会
    常务委员会行使下列职权:" three chunks back), the chunks back to the one opening the list, nearest first, at most
    LIST_OPENER_CHUNKS, admitted as asked chunks are: who the items are said of is in its opening line."""
    from warehouse.chunks import SectionSeed, section_neighbours

    inside = [(qi, rank, c) for qi, rank, c in seeds
              if c.chunk.chunk_type == TEXT and continues_list(evidence_text(c.chunk))]
    found = section_neighbours(db_path, kb, [
        SectionSeed(qi, rank, c.chunk_id, c.chunk.source, c.chunk.section_path, c.chunk.chunk_index)
        for qi, rank, c in inside], before=LIST_OPENER_CHUNKS, after=0)
    out, done = [], set()
    for n in found:  # per seed, nearest first
        if (n.question, n.seed_id) in done or n.chunk.chunk_type != TEXT:
            continue
        out.append(n)
        if not continues_list(evidence_text(n.chunk)):
            done.add((n.question, n.seed_id))
    return out


def _add_table_labels(db_path: Path, kb: str, retrievals: Sequence[Retrieval], out: list[list[Candidate]],
                      taken: list[set[str]]) -> None:
    """Add to `out` the short line right before each table of values only in a question's context, which may
    label the table's rows (`row_label`), with the table's score: it joins the table, ranked or expanded."""
    from warehouse.chunks import SectionSeed, section_neighbours

    tables = {(qi, c.chunk_id): c for qi, r in enumerate(retrievals) for c in [*r.ranked[:r.kept], *out[qi]]
              if c.chunk is not None and c.chunk.chunk_type == TABLE and values_only(c.chunk.content)}
    labels = section_neighbours(db_path, kb, [
        SectionSeed(qi, 0, c.chunk_id, c.chunk.source, c.chunk.section_path, c.chunk.chunk_index)
        for (qi, _), c in tables.items()], before=1, after=0)
    for n in labels:
        if n.chunk.chunk_id not in taken[n.question] and n.chunk.chunk_type == TEXT and row_label(n.chunk.content):
            taken[n.question].add(n.chunk.chunk_id)
            out[n.question].append(Candidate(n.chunk.chunk_id, score=tables[(n.question, n.seed_id)].score,
                                             expanded_from=n.seed_id, chunk=n.chunk))


def quoted(question: str) -> list[str]:
    """The names a question quotes."""
    return [next(g for g in m.groups() if g) for m in _QUOTED.finditer(question)]


def row_label(text: str) -> str:
    """The text as the label of the rows of a table right after it: one short line, else ""."""
    line = text.strip()
    return line if len(line) <= ROW_LABEL_MAX_CHARS and "\n" not in line else ""


def row_labels(chunks: Sequence[Candidate]) -> dict[tuple[str, int], str]:
    """By (source, chunk_index), the text chunks of a context that may label the rows of the table after them."""
    return {(c.source, c.chunk.chunk_index): row_label(c.chunk.content) for c in chunks
            if c.chunk is not None and c.chunk.chunk_type == TEXT and row_label(c.chunk.content)}


def order_for_prompt(cands: Sequence[Candidate], scale: str, settings: Settings) -> list[Candidate]:
    """Drop what scores under the context minimum (rerank scale only; RRF carries no absolute
    meaning, seed 002), with the seed's table and figure protections. Order is kept."""
    if scale != RERANK:
        return list(cands)
    low = settings.retrieval.context_min_score
    passing_sections = {(c.source, c.section) for c in cands if c.score >= low and c.chunk
                        and c.chunk.chunk_type not in (TABLE, IMAGE, CHART)}
    out = []
    for c in cands:
        kind = c.chunk.chunk_type if c.chunk else ""
        if c.score >= low:
            out.append(c)
        elif (kind == TABLE and (c.source, c.section) in passing_sections
              and c.score >= low * settings.retrieval.table_min_score_factor):
            out.append(c)
        elif kind in (IMAGE, CHART) and c.score >= low * settings.retrieval.chart_min_score_factor:
            out.append(c)
    return out


def _header(source: str, section: str) -> str:
    return f"━ {source} · {section} ━" if section else f"━ {source} ━"


def _header_cost(key: tuple[str, str], picked: Mapping) -> int:
    """The characters a group's header adds to the context: none once the group has a chunk in it."""
    return 0 if key in picked else len(_header(*key)) + 2


def _line(c: Candidate) -> str:
    return f"[ref:{c.chunk_id}] {evidence_text(c.chunk).strip()}"


ASKED, KEPT, RESCUED, EXPANDED = range(4)


def _tier(c: Candidate) -> int:
    return ASKED if c.asked else EXPANDED if c.expanded_from else RESCUED if c.rescued else KEPT


def build_context(cands: Sequence[Candidate], settings: Settings) -> Context:
    """Fit the candidates into the character budget, grouped by (source, section) in chunk order.
    The chunks the question asks for (a heading it quotes, the contents or cover it asks about) are admitted
    first, then those adaptive top-k kept (groups by their best score), then the rescued ones, then the
    expanded neighbours: neither a neighbour nor a rescued chunk of the first hit's
    section crowds out a later hit (a table ranked 3rd in another section). A table is never cut nor dropped; one
    past the budget comes in after the tier's other groups."""
    groups: dict[tuple[str, str], list[tuple[int, Candidate]]] = {}
    for rank, c in enumerate(cands):
        if c.chunk is not None:
            groups.setdefault((c.source, c.section), []).append((rank, c))
    # groups by their best score, then by their best rank (stable for equal scores)
    order = sorted(groups.items(), key=lambda kv: (-max(c.score for _, c in kv[1]), min(r for r, _ in kv[1])))
    best = max((c.score for c in cands if c.chunk is not None), default=0.0)
    r = settings.retrieval
    # a table's label line (`row_label`) is part of the table: never cut or dropped from an admitted group either
    tables = {(c.source, c.chunk.chunk_index) for c in cands if c.chunk is not None and c.chunk.chunk_type == TABLE}
    used, text_chunks = 0, 0
    picked: dict[tuple[str, str], list[Candidate]] = {}
    for tier in (ASKED, KEPT, RESCUED, EXPANDED):
        past_budget: list[tuple[tuple[str, str], Candidate, int]] = []
        for key, members in order:
            group_score = max(c.score for _, c in members)
            if used >= r.context_soft_limit and group_score < r.context_soft_admit_ratio * best \
                    and not any(c.asked for _, c in members):
                continue
            budget = r.context_max_chars - used - _header_cost(key, picked)
            # tables first (never cut or dropped from an admitted group), then by rank
            phase = sorted((rc for rc in members if _tier(rc[1]) == tier),
                           key=lambda rc: (rc[1].chunk.chunk_type != TABLE, rc[0]))
            took = []
            for _, c in phase:
                is_table = c.chunk.chunk_type == TABLE or \
                    ((c.source, c.chunk.chunk_index + 1) in tables and bool(row_label(c.chunk.content)))
                cost = len(_line(c)) + 1
                if is_table and (cost > budget or c.score < LOW_TABLE_SHARE * group_score):
                    past_budget.append((key, c, cost))
                elif is_table or (cost <= budget and text_chunks < r.max_context_chunks):
                    took.append(c)
                    budget -= cost
                    text_chunks += 0 if is_table else 1
            if took:
                used = r.context_max_chars - budget
                picked.setdefault(key, []).extend(took)
        # a table past the budget, or ranked far below its section's best hit, is admitted whole after the tier's other
        # groups, not before them (GB/T 3620.1's 8,839-character composition table, ranked 12th in the top hit's
        # section, left no room for the hit; REDP-5110's 4,605-character contents table none for the second hit)
        for key, c, cost in past_budget:
            used += cost + _header_cost(key, picked)
            picked.setdefault(key, []).append(c)
    blocks: list[str] = []
    chosen: list[Candidate] = []
    for key, _ in order:
        if key in picked:
            members = sorted(picked[key], key=lambda c: c.chunk.chunk_index)
            blocks.append("\n".join([_header(*key)] + [_line(c) for c in members]))
            chosen.extend(members)
    return Context(chosen, "\n\n".join(blocks))


def contexts_for(retrievals: Sequence[Retrieval], expansions: Sequence[Sequence[Candidate]],
                 settings: Settings) -> list[Context]:
    """Ranked chunks (+ their expansions) → min-score order → budget, per question."""
    out = []
    for r, extra in zip(retrievals, expansions):
        # a ranked chunk the question asks for by a heading it quotes is admitted as asked, with its own score
        asked = {c.chunk_id for c in extra if c.asked}
        ranked = [replace(c, asked=True) if c.chunk_id in asked else c for c in r.ranked]
        held = {c.chunk_id for c in ranked}
        cands = order_for_prompt(ranked + [replace(c) for c in extra if c.chunk_id not in held], r.score_scale,
                                 settings)
        # a list of the corpus's files (a SOURCES.md) tells nothing of what they say: a question not about
        # the files gives it none of the budget, which a passage ranked below it needs
        listed = {c.chunk_id for c in file_lists(r.question, cands)}
        out.append(build_context([c for c in cands if c.chunk_id not in listed], settings))
    return out
