"""Filters and selection (seed 000 §5.2): status/source/section filters and the chapter a question
names, MMR de-duplication (Jaccard over BM25 terms), and adaptive top-k on the list's own scale. Ours:
the chunks of a document the question names ("Under the PRC Civil Code, …") ahead of the others'."""
from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache

import numpy as np
import scipy.sparse as sp

from schemas.chunk import Chunk
from schemas.qa import RERANK
from schemas.settings import Settings
from tasks.index.views import document_name, file_name
from tasks.qa.extract import DOCUMENT_WORDS, FILE_EXTENSIONS, FILE_PATH, scope_parts, terms
from tasks.qa.types import Candidate

_ENUM_QUERY = re.compile(r"有哪些|有哪几|哪几[个种类项条]|包括哪|包含哪|列举|列出|分别是|分别有|都有什么|有几[个种类项条]|几个方面|"
                         r"哪些方面|主要内容|\blist\b|\bwhat are the\b", re.IGNORECASE)
# "第三章", "第12条", "第二节" in a question: a chapter the answer must come from (seed 000 §5.2 [17])
_CHAPTER = re.compile(r"第[一二三四五六七八九十百千零〇两\d]+[编章节条款篇部]")
_DOCUMENT_PART = "部篇"  # "第1部分", "第二篇": a document of a series, not a chapter within one


def is_enum_query(question: str) -> bool:
    """Enumeration questions ("有哪些…") want several alike chunks: MMR uses the milder lambda."""
    return bool(_ENUM_QUERY.search(question))


def chapter_markers(question: str) -> list[str]:
    return _CHAPTER.findall(question)


def in_section(section_path: str, prefix: str) -> bool:
    """Section prefix match on whole path components: "第一章" holds "第一章 > 1.1" but not "第一章节"."""
    return not prefix or section_path == prefix or section_path.startswith(prefix + " > ")



def filter_candidates(cands: Sequence[Candidate], *, inactive: set[str] | frozenset[str] = frozenset(),
                      sources: Sequence[str] | None = None, section: str | None = None,
                      chapters: Sequence[str] = ()) -> list[Candidate]:
    """Status, source and section filters (seed 000 §5.2 [14], [17], [22]). A candidate DuckDB does
    not know is dropped (DuckDB is the record). `chapters` (markers from the question) narrow the
    list only when some candidate's section carries one."""
    wanted = set(sources or ())
    out = [c for c in cands if c.chunk is not None and c.chunk_id not in inactive
           and (not wanted or c.chunk.source in wanted) and (not section or in_section(c.chunk.section_path, section))]
    within = chapter_scope(out, chapters)
    return [c for c in out if within(c)] if within is not None else out


CATALOGUE_MIN_NAMES = 3  # other documents' file names a chunk must hold to be a catalogue of the corpus
CATALOGUE_WEIGHT = 0.5  # a catalogue's fused score is multiplied by this for a question about content
# the question asks about the corpus's files themselves (their licences, sizes, origins): a catalogue answers
# it ("file" alone does not: "file for divorce"; nor "文件": "这份文件" is the document asked about)
_ASKS_FILES = re.compile(r"文件名|许可|版权|仓库|字节|路径|licen[cs]e|copyright|\brepo(?:sitory)?\b|\bbytes\b|"
                         r"\bcommit\b|\bpath\b|file names?|which file", re.IGNORECASE)


_FILE_NAME = re.compile(rf"\.(?:{FILE_EXTENSIONS})\b", re.IGNORECASE)


@lru_cache(maxsize=65536)  # a batch meets the same chunks again and again
def _file_names(content: str) -> int:
    """How many file names ("….pdf", "….docx") a chunk's text holds: a catalogue holds several."""
    return len(_FILE_NAME.findall(content))


@lru_cache(maxsize=65536)
def _name(source: str) -> str:
    return document_name(source).lower()


# a table's or a chart's number: tables and charts are numbered apart ("图表 1" is no "表格 1")
_TABLE_NUMBER = re.compile(r"(\btable|\bchart|图表|表格?)\s*([A-Z]?(?:\s*\.\s*)?[0-9]+(?:\s*[.\-]\s*[0-9]+)?)",
                           re.IGNORECASE)
_CHARTS = ("chart", "图表")


def _numbered(m: re.Match[str]) -> tuple[bool, str]:
    return m.group(1).lower() in _CHARTS, m.group(2).replace(" ", "")


def table_number(caption: str | None) -> tuple[bool, str] | None:
    """(a chart?, the number) a table's or chart's caption opens with ("Table 4. Open long-tail …" → "4", "表 B.1 …"
    → "B.1", "图表 2" → a chart's "2"), or None."""
    m = _TABLE_NUMBER.match((caption or "").strip())
    return _numbered(m) if m else None


def tables_asked(question: str) -> frozenset[tuple[bool, str]]:
    """The tables and charts the question names by number, as `table_number` reads a caption."""
    return frozenset(_numbered(m) for m in _TABLE_NUMBER.finditer(question))


def catalogues_last(question: str, cands: Sequence[Candidate]) -> list[Candidate]:
    """The candidates with a catalogue of the corpus (a chunk holding the file names of
    CATALOGUE_MIN_NAMES or more other candidates' documents: a SOURCES.md, a manifest, an index
    page) scored CATALOGUE_WEIGHT as much, best first again, unless the question asks about the
    files themselves or names the catalogue ("According to the docs SOURCES.md table, …"). A
    catalogue names every document, so it matches every question naming one ("In the
    numbered-headers unit test document, …") and tells nothing of their content."""
    catalogues = catalogue_ids(question, cands)
    if not catalogues:
        return list(cands)
    out = [replace(c, score=c.score * CATALOGUE_WEIGHT) if c.chunk_id in catalogues else c for c in cands]
    return sorted(out, key=lambda c: -c.score)


def file_lists(question: str, cands: Sequence[Candidate]) -> list[Candidate]:
    """The candidates listing CATALOGUE_MIN_NAMES file names or more, unless the question asks about the
    files or names the list's own document: what may be a catalogue of the corpus."""
    if _ASKS_FILES.search(question):
        return []
    asked = question.lower()
    return [c for c in cands if c.chunk is not None and _file_names(c.chunk.content) >= CATALOGUE_MIN_NAMES
            and _name(c.source) not in asked]


def catalogue_ids(question: str, cands: Sequence[Candidate]) -> set[str]:
    """The chunk ids of the file lists among the candidates that name CATALOGUE_MIN_NAMES other
    candidates' documents (`catalogues_last`)."""
    listing = file_lists(question, cands)
    names = {c.source: _name(c.source) for c in cands if c.chunk is not None} if listing else {}
    return {c.chunk_id for c in listing
            if sum(1 for source, name in names.items()
                   if source != c.source and len(name) >= 4 and name in c.chunk.content.lower()) >= CATALOGUE_MIN_NAMES}


COVER_CHARS = 120  # how much of a document's first chunk is its cover's title


def _parts_named(chunk: Chunk) -> set[str]:
    """The document parts ("第1部") a chunk's section path names, or its cover when it is the first chunk."""
    text = chunk.section_path + (" " + chunk.content[:COVER_CHARS] if chunk.chunk_index == 0 else "")
    return {m for m in _CHAPTER.findall(text) if m[-1] in _DOCUMENT_PART}


def chapter_scope(cands: Sequence[Candidate], chapters: Sequence[str]):
    """What the chapters a question names keep, as a test of a candidate, or None when no candidate
    holds one (no narrowing): a chunk whose section holds a marker ("第三条"); for a document part
    ("第12部分", a multi-part standard's title, a heading the part's own chapters "1 范围" are siblings
    of) every chunk of a document naming it, and of one naming no part (`_parts_named`). The parts and the
    chapters narrow apart: "第1部分的编制说明…第6条" keeps the drafting notes of part 1 though no section of
    theirs is a "第6条" (their sixth revision point is "6. …")."""
    parts = [m for m in chapters if m[-1] in _DOCUMENT_PART]
    tests = [t for t in (_part_scope(cands, parts), _section_scope(cands, [m for m in chapters if m not in parts]))
             if t is not None]
    return (lambda c: all(t(c) for t in tests)) if tests else None


def _in_sections(c: Candidate, markers: Sequence[str]) -> bool:
    return c.chunk is not None and any(m in c.chunk.section_path for m in markers)


def _section_scope(cands: Sequence[Candidate], markers: Sequence[str]):
    """A chunk whose section holds one of the markers, or None when no candidate's does."""
    return (lambda c: _in_sections(c, markers)) if any(_in_sections(c, markers) for c in cands) else None


def _part_scope(cands: Sequence[Candidate], parts: Sequence[str]):
    """Every chunk of a document naming one of the parts, or naming none; None when no candidate's section
    holds one. A document names its part in a section or on its cover (its first chunk: "…第1部分：通用要求 编制
    说明"); one naming another part is another part, one naming none may be about this one: it stays."""
    if not any(_in_sections(c, parts) for c in cands):
        return None
    named: dict[str, set[str]] = {}
    for c in cands:
        if c.chunk is not None:
            named.setdefault(c.chunk.source, set()).update(_parts_named(c.chunk))
    return lambda c: c.chunk is not None and (not named.get(c.chunk.source)
                                              or not named[c.chunk.source].isdisjoint(parts))


def term_id_sets(token_lists: Sequence[Sequence[str]], vocab: dict[str, int] | None = None) -> list[np.ndarray]:
    """Each token list as the sorted ids of its distinct terms (`vocab` grows with new terms)."""
    vocab = {} if vocab is None else vocab
    out = []
    for tokens in token_lists:
        distinct = set(tokens)
        new = distinct.difference(vocab)
        vocab.update(zip(new, range(len(vocab), len(vocab) + len(new))))
        out.append(np.sort(np.fromiter(map(vocab.__getitem__, distinct), dtype=np.int64, count=len(distinct))))
    return out


def jaccard_rows(token_lists: Sequence[Sequence[str]] | None = None, *,
                 term_ids: Sequence[np.ndarray] | None = None) -> Callable[[int], np.ndarray]:
    """Row i of the candidates' pairwise Jaccard similarity (their term sets), computed when asked:
    MMR reads the rows of the k it keeps, not the n × n matrix (2.2 instead of 3.3 ms a question on
    the bench KB's batch questions: 177 candidates, k = 30). From token lists or from `term_id_sets` (which a
    caller may keep between questions)."""
    sets = term_ids if term_ids is not None else term_id_sets(token_lists or [])
    n = len(sets)
    sizes = np.fromiter((len(t) for t in sets), dtype=np.int64, count=n)
    cols = np.concatenate(sets) if n else np.zeros(0, dtype=np.int64)
    width = int(cols.max()) + 1 if len(cols) else 0
    incidence = sp.csr_matrix((np.ones(len(cols), dtype=np.float32), cols, np.concatenate(([0], np.cumsum(sizes)))),
                              shape=(n, width))
    member = np.zeros(width, dtype=np.float32)

    def row(i: int) -> np.ndarray:
        member[sets[i]] = 1.0
        inter = incidence @ member  # terms each candidate shares with candidate i
        member[sets[i]] = 0.0
        return inter / np.maximum(sizes[i] + sizes - inter, 1)  # an empty union has no shared term: 0

    return row


def mmr_order(relevance: Sequence[float], similarity: Callable[[int], np.ndarray], k: int, lam: float,
              first: Sequence[int] = ()) -> list[int]:
    """Maximal marginal relevance: indices of up to k items, each maximizing
    lam · relevance − (1 − lam) · (max similarity to those already chosen); `similarity(i)` is item
    i's similarity to every item. Relevance is scaled by its maximum so lam means the same on every scale.
    The items `first` are chosen before any (at most k of them)."""
    rel = np.asarray(relevance, dtype=np.float64)
    n = len(rel)
    if n == 0 or k <= 0:
        return []
    top = rel.max()
    rel = rel / top if top > 0 else rel
    chosen: list[int] = []
    max_sim = np.zeros(n)
    free = np.ones(n, dtype=bool)
    for best in list(dict.fromkeys(first))[:k]:
        chosen.append(best)
        free[best] = False
        max_sim = np.maximum(max_sim, similarity(best))
    for _ in range(min(k, n) - len(chosen)):
        gain = np.where(free, lam * rel - (1 - lam) * max_sim, -np.inf)
        best = int(np.argmax(gain))  # ties → the earlier (better fused) candidate
        chosen.append(best)
        free[best] = False
        max_sim = np.maximum(max_sim, similarity(best))
    return chosen


def mmr(cands: Sequence[Candidate], k: int, lam: float, term_ids=None, question: str = "") -> list[Candidate]:
    """MMR de-duplication with Jaccard over BM25 terms (seed 000 §11 MMR_USE_EMBEDDING=false).
    MMR decides which k candidates survive; they keep their fused order (the reranker, or the
    answerer, sees the most relevant first). `term_ids(candidates)`: their `term_id_sets`, when
    the caller keeps them (the retriever does, per chunk, for a run). A table or chart the question
    names by its number ("图表 1") survives whatever it shares with another ("图表 2" of its document, a copy
    of it elsewhere): its numbers and headers are alike, what it says is not."""
    if len(cands) <= k:
        return list(cands)
    sim = jaccard_rows([c.chunk.tokens if c.chunk else [] for c in cands]) if term_ids is None \
        else jaccard_rows(term_ids=term_ids(cands))
    asked = tables_asked(question) if question else frozenset()
    named = [i for i, c in enumerate(cands) if c.chunk and table_number(c.chunk.caption) in asked] if asked else []
    # selection only: on rgb_zh_refine_dev (bench/retrieval.py) MMR's own order cost 2.4 points of hit@5
    keep = sorted(mmr_order([c.score for c in cands], sim, k, lam, first=named))
    return [cands[i] for i in keep]


def adaptive_top_k(scores: Sequence[float], scale: str, settings: Settings) -> int:
    """How many ranked chunks to keep: few when the top one is strong, more when it is weak
    (seed 000 §5.2 [26]), on the list's own scale; on the rerank scale chunks under
    `context_min_score` are never kept (they are the rescues' to bring back)."""
    if not scores:
        return 0
    if scale == RERANK:
        passing = sum(1 for s in scores if s >= settings.retrieval.context_min_score)
        high, low = settings.retrieval.adaptive_high_rerank, settings.retrieval.adaptive_low_rerank
    else:
        passing = len(scores)
        high, low = settings.retrieval.adaptive_high_rrf, settings.retrieval.adaptive_low_rrf
    k = settings.retrieval.top_k
    if settings.retrieval.adaptive_topk_enabled:
        if scores[0] >= high:
            k = settings.retrieval.adaptive_topk_min
        elif scores[0] < low:
            k = settings.retrieval.adaptive_topk_max
    return max(0, min(k, passing))


# a document a question names ("Under the PRC Civil Code, …", "核电厂定期安全评价第1部分的编制说明列出的…中，"): the
# chunks of the others rank below its own (their fused score times NAMED_DOCUMENT_OTHERS), whatever words they share
NAMED_DOCUMENT_OTHERS = 0.8
NAMED_DOCUMENT_COVERAGE = 0.5  # the share of the words naming its document a document's name must hold
NAMED_DOCUMENT_MAX = 5  # more documents named alike than this: the words name a subject, not a document
NAMED_DOCUMENT_NEAR = 0.75  # documents named nearly as well as the best are named too (a PDF and its Markdown copy)
COVER_NAME_CHUNKS, COVER_CHARS_READ = 5, 320  # the chunks of a document whose headings and cover lines name it
NAME_LINE_CHARS = 40  # a cover's line this short is a title's ("核电厂定期安全评价", "第1部分：通用要求"), not a sentence
# the words for a document or its parts name none ("In the report, …"; "这是标题" is a contract's placeholder title)
_DOCUMENT_KIND = frozenset(terms(DOCUMENT_WORDS.replace("|", " ") + " table file title heading 文档 文件 指南 表格 标题"))

_FIELD_LABEL = re.compile(r"^\s*[^:：\s]{1,8}\s*[:：]")  # a short label: "证券代码:", "备案号："
# a part of the document named with it names no document ("宪法第十条": 宪法; "Article 86 of the PRC Constitution");
# not "第12部分", which names a document of a series
_PART_OF_DOCUMENT = re.compile(r"第[一二三四五六七八九十百千零〇两\d]+[编章节条款]"
                               r"|\b(?:article|art\.|chapter|section|clause)\s*[0-9]+\b", re.IGNORECASE)


def document_name_text(source: str, opening: Sequence[tuple[str, str]]) -> str:
    """The words naming a document: its file name's, the top heading of its first chunks, and the short lines
    of its first chunk and of those before its first heading (a standard's cover: "核电厂定期安全评价", "第1部分：
    通用要求"), from `opening`'s (section path, text) of its first chunks."""
    words = [re.sub(r"[_\-.]+", " ", document_name(source))]
    for i, (section, text) in enumerate(opening):
        words.append(section.split(" > ", 1)[0])
        if i == 0 or not section:
            # a field's label is no name: "证券简称:比亚迪" names 比亚迪, "公告编号:2025-035" and "备案号：" name nothing
            words += [_FIELD_LABEL.sub("", line) for line in text.splitlines() if len(line.strip()) <= NAME_LINE_CHARS]
    return " ".join(words)


class DocumentNames:
    """Which documents of a knowledge base a question names, by the words it names its document with
    (`tasks.qa.extract.scope_parts`) found in a document's name (`document_name_text`: "中华人民共和国民法典",
    "…第1部分：通用要求 编制说明"), each word weighed by how few documents' names hold it (the "PRC" of "PRC
    Civil Code" names two laws, "Civil" one)."""

    def __init__(self, covers: Mapping[str, Sequence[tuple[str, str]]]):
        self._named_by: dict[str, list[str]] = {}
        self._files: dict[str, list[str]] = {}  # a source's file name, lower case → the sources so named
        for source in covers:
            self._files.setdefault(file_name(source).lower(), []).append(source)
        for source, opening in covers.items():
            for term in terms(document_name_text(source, opening)) - _DOCUMENT_KIND:
                self._named_by.setdefault(term, []).append(source)
        n = len(covers)
        self._weight = {term: math.log(n / len(sources)) for term, sources in self._named_by.items()}

    def named(self, question: str) -> frozenset[str]:
        """The documents the question names, or none: those whose names hold at least NAMED_DOCUMENT_COVERAGE of the
        words naming its document and weigh nearly as much as the best, when they are NAMED_DOCUMENT_MAX at most
        ("在历史中，" names no document of a corpus of articles with 历史 in their titles); a number alone names none
        (the 1972 of "rgbzh-1972.txt"); and those whose file names it writes whole."""
        parts = scope_parts(question)
        asked = terms(_PART_OF_DOCUMENT.sub(" ", " ".join(parts))) - _DOCUMENT_KIND if parts else set()
        score: Counter[str] = Counter()
        held: dict[str, set[str]] = {}
        for term in asked:
            for source in self._named_by.get(term, ()):
                score[source] += self._weight[term]
                held.setdefault(source, set()).add(term)
        best = max(score.values(), default=0.0)
        named = [s for s, v in score.items() if best > 0 and v >= NAMED_DOCUMENT_NEAR * best
                 and len(held[s]) >= NAMED_DOCUMENT_COVERAGE * len(asked) and not all(t.isdigit() for t in held[s])]
        # a file name the question writes whole ("单元测试文档 unit_test_headers_numbered.docx") names its document,
        # whatever words describe it beside ("docling的编号标题单元测试Word文档")
        written = {source for path in FILE_PATH.findall(question)
                   for source in self._files.get(file_name(path).lower(), ())}
        named = [*written, *(s for s in named if s not in written)]
        return frozenset(named) if len(named) <= NAMED_DOCUMENT_MAX else frozenset()


def named_documents_first(named: frozenset[str], cands: Sequence[Candidate]) -> list[Candidate]:
    """The candidates of documents other than those named scored NAMED_DOCUMENT_OTHERS as much, best first
    again; as they were when the question names none, or none of the candidates is from one it names."""
    if not named or not any(c.chunk is not None and c.chunk.source in named for c in cands):
        return list(cands)
    out = [c if c.chunk is not None and c.chunk.source in named else replace(c, score=c.score * NAMED_DOCUMENT_OTHERS)
           for c in cands]
    return sorted(out, key=lambda c: -c.score)
