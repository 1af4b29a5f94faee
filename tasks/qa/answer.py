"""Answering (seed 001 §7.5, §8.2, §9; seed 002 CRAG-lite): prompt, LLM or extractive answer,
citations checked against the context, confidence, and the evidence grade.

- `build_messages`: the seed's system prompt (citations as `[ref:chunk_id]`), the context with each
  chunk's ref, the confidence instruction for the top-3 mean score (seed 001 §7.5), the question.
- `Answerer`: the LLM through `tasks.common.llm.ChatClient` (timeouts, retries with backoff on 429/5xx)
  when `llm_base_url` and `llm_model` are set; otherwise, or when the call fails for good, an
  extractive answer: the table cell the question names ("row — column: value"; of the document the
  question names, "比亚迪") or the sentence (its shortest clause carrying the answer, optionally)
  holding most of the question's (rarity-weighted) terms, plus the best unit with the number or
  date asked when the first lacks one, each with its ref (`tasks.qa.extract`).
- `validate_citations`: only chunks that were in the context may be cited; anything else is
  removed from the text (and counted), `[1]`-style marks too. An answer left with no citation gets
  the context chunk it overlaps most (seed 000 §10.3 `_attach_citations`).
- `grade_evidence` (seed 002 `grade_evidence`): too few chunks → insufficient; after a rerank the
  top probability must reach 0.60; otherwise the vector channel's best cosine must reach the
  embedding model's own floor (e5 cosines sit near 0.8 even for unrelated text, SPEC §7), 0.04
  lower for an English question (English pairs score lower on e5's scale), and a BM25-only (pure
  RRF) list passes, as RRF scores mean nothing absolute.
"""
from __future__ import annotations

import logging
import math
import re
import unicodedata
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from schemas.chunk import (CHART, CODE, FIGURE_AFTER, FIGURE_BEFORE, FIGURE_DATA, FIGURE_DESCRIPTION, FIGURE_LOCATED,
                           HEADING, IMAGE, INDEX, TABLE, TEXT)
from schemas.errors import LLMError
from schemas.qa import EXTRACTIVE, INSUFFICIENT, LLM, RERANK, QAResult, Question
from schemas.settings import Settings
from tasks.index.views import document_name, file_name
from tasks.qa.context import (ARTICLE_CITED, ASKS_CONTENTS, ASKS_DOCUMENT_TITLE, COVER_CHUNKS, PART_NUMERAL, Context,
                              articles_asked, quoted, row_labels, sections_asked)
from tasks.qa.extract import (COUNT_WORDS, LAST, ORDINAL_WORDS, STANDARD_PREFIXES, answers_what_is_asked, columns,
                              figure_asked, focus, form_lines, labelled_rows, measure_asked, negated_terms, rate_terms,
                              ordinal_number, scope_only_terms, scope_parts, shortest_clause, table_cell, terms,
                              without_answer_form, without_scope)
from tasks.qa.filters import file_lists, table_number, tables_asked
from tasks.common.text import CJK_RANGE, bigram_hit_rate, bigrams, clean_text, tokenize
from tasks.qa.gloss import (chinese_numeral, chinese_text, english_glosses, english_text, gloss_terms, headwords,
                            sense_stems, stem, translatable)
from tasks.qa.types import Retrieval, evidence_text

log = logging.getLogger("kbflow.qa")

# seed 001 §8.2, with the citation form made explicit (our refs are chunk ids, not numbers)
SYSTEM_PROMPT = (
    "你是一个严谨的知识库问答助手。\n"
    "你必须且只能根据用户提供的【参考资料】回答问题。\n"
    "如果参考资料中有答案，必须引用对应内容回答，并在所依据的内容后用 [ref:切片ID] 标注引用"
    "（切片ID 即每条资料开头方括号中的 ref 值），只能引用参考资料中出现过的切片ID。\n"
    "如果参考资料中确实没有相关信息，简短说明即可，不要编造或补充资料外的内容。\n"
    "禁止使用参考资料以外的知识进行补充或推测。\n"
    "【重要-表格处理规则】当用户询问表格时，必须将 Markdown 表格原样输出，不得改动表头和数值。"
)
# seed 001 §7.5
CONFIDENCE_LOW = "参考资料与问题的相关性较低，仅基于明确信息回答，不足则说明"
CONFIDENCE_MID = "参考资料的相关性一般，优先引用资料原文，避免推测"
NOT_FOUND = "知识库中没有找到与该问题相关的信息，无法回答。"

# Calibrated per embedding model (SPEC §7: never one cosine threshold for every model). e5-small
# on cmrc2018 trial (60-passage KB): the best cosine of answerable questions is ≥ 0.855 for 95 %
# of them; of questions about passages not in the KB, 25 % stay under 0.842 and the median is 0.852.
COSINE_FLOORS = {"multilingual-e5-small": 0.84}
# English pairs score lower on e5's scale: xquad en (400 questions, a KB of every other passage) puts
# the best cosine of answerable questions >= 0.810 for 95 % of them, of questions whose passage is not
# in the KB 25 % stay under 0.793 and the median is 0.810; the floor of a mostly English question
# (`translatable`) is this much lower (0.80).
ENGLISH_COSINE_OFFSET = 0.04
# Across languages lower still (bench/cosine_floor.py, xquad's 1,190 questions): the best cosine of answerable
# questions is >= 0.766 for 95 % of Chinese questions over the English paragraphs and >= 0.740 of English ones
# over the Chinese; the lowest quarter of unanswerable ones stays under 0.772 / 0.744. The cosine barely tells
# them apart there, so the floor keeps the answerable ones as the others do (0.74 / 0.72), when the best cosine's
# chunk is written in the other language (`Retrieval.top_cosine_across`); keyed by "the question is English".
ACROSS_COSINE_OFFSETS = {False: 0.10, True: 0.12}
_CJK_CHAR = re.compile(f"[{CJK_RANGE}]")

_REF = re.compile(r"\[\s*ref\s*[:：]\s*([^\[\]]*?)\s*\]", re.IGNORECASE)
_NUMBER_MARKS = re.compile(r"\[\d+(?:\s*[,，、]\s*\d+)*\]")
# (a ";" between letters or digits is no clause's end: "TeX;UTF-8|ACP;HTML", a list of values)
_SENTENCE_END = re.compile(r"(?<=[。！？!?；])|(?<=;)(?<![A-Za-z0-9];)|(?<=[A-Za-z0-9];)(?![A-Za-z0-9])|\n+"
                           r"|(?<=[.!?])\s+(?=[A-Z0-9\"'])")
# a sentence that continues the one before: it opens with a pronoun, or (Chinese) with no subject at all, or (a law)
# with the paragraph before it ("前款规定的孳息应当先充抵收取孳息的费用。" after the pledgee's right to the fruits)
_PRONOUN_START = re.compile(r"^(?:(?:It|Its|This|These|They|Their|He|She|His|Her)\b|[它其他她]|由|并且|并|且|也|还"
                            r"|前[两三]?款)")
# or, after a semicolon, with a short condition ("…行使抵押权；未行使的，人民法院不予保护。"): the subject, and often
# the answer, is in the clause before
_CONDITION_START = re.compile(r"^[^，,。；;:：]{1,10}的[，,]")
MAX_SENTENCE_CHARS = 400
MIN_SENTENCE_CHARS = 6  # shorter "sentences" are headings and labels
# a table of contents' entry ("2 规范性引用文件", "附录A …") names a section: the answer only when the contents are asked
_CONTENTS_ENTRY = re.compile(r"^\s*(?:\d+(?:\.\d+)*|附\s*录\s*[A-Z]|Appendix [A-Z])\s*\S.{0,40}$")
# a table-of-contents entry: a dot leader, solid or spaced ("1.4.4 最大脉冲…..... 10", "2.1.6 Change … . . . . 10",
# LaTeX's "⋅ ⋅ ⋅ ⋅"), or Word's page number after a tab ("2 规范性引用文件\t1")
_TOC_LINE = re.compile(r"[.．·…⋅]{4,}\s*[0-9]*\s*$|(?:[.．·…⋅] ){4,}|\S\t+(?:[0-9]+|[IVXivx]+)\s*$")
GLOSS_WEIGHT = 0.5  # a term an English question holds only in CC-CEDICT's Chinese for its words (tasks.qa.gloss)
FOCUS_WEIGHT = 2.0  # a question term naming what is asked (tasks.qa.extract.focus) weighs this much more
LABEL_BONUS = 0.2  # a sentence giving what is asked about as "label: value"
GLOSSARY_MAX_CHARS = 40  # a glossary line's meaning ("SSCs 构筑物、系统和设备"): a phrase, no sentence
CELL_BONUS = 0.1  # a table cell whose column the question names; as much again when it writes the row out
# the other clause of the best one's sentence (split at "；") scoring this share of the best is quoted with it: docs
# set +6 −0 at 0.8–0.9; any adjacent sentence instead, +11 at 0.9, cost cmrc2018_trial's EM 0.175 → 0.154
ADJACENT_TIE_RATIO = 0.9
PREMISE_NEW_WORDS = 0  # a best sentence saying no more words than these beside the question's is its premise
SECOND_UNIT_RATIO = 0.5  # a unit holding the asked number is added if it scores >= this x the best
FOCUS_TERMS_MORE = 2  # the sentence after the best holding this many more of the focus's terms (and twice) is added
# the sentence after the best holding this many of the question's terms its passage lacks so far is added: docs bench
# +13 -0 of 3,769 (fresh1-94; +0 -0 on fresh95-96, held out), cmrc2018_trial has-ans 0.708 -> 0.717, EM 0.171 as it
# was, F1 0.448 -> 0.451; at 3: +6 -0
COMPLETING_TERMS = 2
GRIDS = (TABLE, CHART)  # chunks whose content is " | " rows: a table, a chart's data
ORDINAL_BONUS = 0.2  # a list item whose number the question asks for ("第三个条件", "the second requirement")
MEASURE_BONUS = 0.1  # a sentence holding a number of the measure asked ("71天" of "增加了多少天")
# a unit writing the Chinese term an English question gives in brackets ("human factors (人因)"): the asker's own
# name for what the question is about, which glosses of its English words only guess at
BRACKETED_TERM_BONUS = 0.05
# a sentence whose condition ("监护人尽到监护职责的，…") is the one the question puts ("如果监护人已经尽到监护职责，…可以
# 怎样处理"): a law answers a case by the clause opening with it
CONDITION_BONUS = 0.2
CONDITION_SHARE = 0.8  # of the condition's words, in one clause of the sentence
_CONDITION_PUT = re.compile(r"(?:如果|假如|倘若|若(?!干))([^，,。？?；;]{4,40})")  # (not "如何", "若干")
_NEGATIONS = "未不非没无"
# a question asking the example a passage gives ("it uses units with what original design life as its example", "举例说")
# is answered by the sentence giving one ("例如，对于原始设计寿命为四十年的核电机组，…")
_ASKS_EXAMPLE = re.compile(r"\bas (?:an|its|the|their) example\b|举例|举了", re.IGNORECASE)
_GIVES_EXAMPLE = re.compile(r"^\W*(?:例如|比如|譬如|举例|以[^，,。]{1,20}为例|for example|for instance|e\.g\.)",
                            re.IGNORECASE)
EXAMPLE_BONUS = 0.1
# a unit's credit for its chunk's score, relative to the best chunk's: 0.05 / 0.2 instead cost +12 -23 / +10 -35 of
# the docs bench's 3,849 questions
CHUNK_CREDIT = 0.1


@dataclass
class Answer:
    text: str
    mode: str  # llm / extractive / insufficient
    citations: list[str]
    error: str = ""  # the LLM failure an extractive answer stands in for
    dropped_citations: int = 0  # refs to chunks outside the context, removed
    ms: float = 0.0


# ---------------------------------------------------------------- scores and grades


def confidence(retrieval: Retrieval) -> float:
    """Mean score of the top 3 kept chunks on the retrieval's scale (seed 001 §7.5)."""
    top = [c.score for c in retrieval.ranked[:min(3, retrieval.kept)]]
    return sum(top) / len(top) if top else 0.0


def confidence_instruction(value: float, scale: str, settings: Settings) -> str:
    a = settings.answer
    warn, caution = ((a.confidence_warn_rerank, a.confidence_caution_rerank) if scale == RERANK
                     else (a.confidence_warn_rrf, a.confidence_caution_rrf))
    if value < warn:
        return CONFIDENCE_LOW
    if value < caution:
        return CONFIDENCE_MID
    return ""


def cosine_floor(settings: Settings, embedding_model_id: str) -> float | None:
    """The cosine an answerable question's best chunk reaches with this embedding model; None = unknown
    (then cosine is not graded). `crag_min_cosine` > 0 overrides, < 0 switches the check off."""
    if settings.answer.crag_min_cosine > 0:
        return settings.answer.crag_min_cosine
    if settings.answer.crag_min_cosine < 0:
        return None
    return COSINE_FLOORS.get(embedding_model_id.split("@", 1)[0])


def grade_evidence(retrieval: Retrieval, context: Context, settings: Settings,
                   floor: float | None) -> tuple[bool, str]:
    """(sufficient, why not) for the evidence that reached the context."""
    if len(context.chunks) < max(1, settings.answer.crag_min_items):
        return False, f"{len(context.chunks)} evidence chunks (< {settings.answer.crag_min_items})"
    if retrieval.score_scale == RERANK:
        top = max((c.rerank for c in context.chunks if c.rerank is not None), default=0.0)
        ok = top >= settings.answer.crag_min_rerank
        return ok, "" if ok else f"best rerank score {top:.3f} < {settings.answer.crag_min_rerank}"
    if floor is not None and retrieval.top_cosine is not None:
        floor = question_floor(retrieval.question, floor, retrieval.top_cosine_across)
        ok = retrieval.top_cosine >= floor
        return ok, "" if ok else f"best cosine {retrieval.top_cosine:.3f} < {floor:g}"
    return True, ""


def question_floor(question: str, floor: float, across: bool = False) -> float:
    """The cosine floor for this question: `floor` for Chinese, lower for English (ENGLISH_COSINE_OFFSET), lower
    still when its best cosine is a passage in the other language (ACROSS_COSINE_OFFSETS)."""
    english = translatable(question or "")
    offset = ACROSS_COSINE_OFFSETS[english] if across else ENGLISH_COSINE_OFFSET if english else 0.0
    return round(floor - offset, 6)


# ---------------------------------------------------------------- prompt and citations


def build_messages(question: str, context: Context, instruction: str = "") -> list[dict[str, str]]:
    rules = [instruction] if instruction else []
    rules.append("在所依据的内容后标注 [ref:切片ID]；参考资料没有答案时直接说明。")
    user = "【参考资料】\n" + context.text + "\n\n【回答要求】\n" + "\n".join(rules) + "\n\n【问题】" + question
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def validate_citations(answer: str, context: Context) -> tuple[str, list[str], int]:
    """(answer with only valid refs, the cited chunk ids in order, refs removed)."""
    allowed = set(context.chunk_ids)
    cited: list[str] = []
    dropped = 0

    def fix(m: re.Match) -> str:
        nonlocal dropped
        ids = [i.strip() for i in re.split(r"[,，;；、\s]+", m.group(1)) if i.strip()]
        good = [i for i in ids if i in allowed]
        dropped += len(ids) - len(good)
        for i in good:
            if i not in cited:
                cited.append(i)
        return "".join(f"[ref:{i}]" for i in good)

    text = _NUMBER_MARKS.sub("", _REF.sub(fix, answer))
    text = re.sub(r"[ \t]{2,}", " ", text).strip()
    if not cited and context.chunks and text:
        # attach the ref of the chunk the answer overlaps most (seed 000 §10.3 `_attach_citations`)
        words = bigrams(text)
        best = max(context.chunks, key=lambda c: bigram_hit_rate(words, evidence_text(c.chunk)))
        if bigram_hit_rate(words, evidence_text(best.chunk)) >= 0.3:
            cited.append(best.chunk_id)
            text = f"{text}[ref:{best.chunk_id}]"
    return text, cited, dropped


def without_citations(answer: str) -> str:
    """The answer's words without its `[ref:chunk_id]` marks: what answer metrics compare."""
    return _REF.sub(" ", answer)


# A PDF text layer breaks lines where the page ended them, mid-sentence ("不得超过主合同标的额的\n
# 百分之二十"): a line break is a wrap when the line before is long, does not end a sentence or a
# label, and the next line does not start an item ("第五条", "（一）", "2.", "- ").
WRAP_MIN_LINE_CHARS = 15
# a line ending with a date ends an entry (a report's "related reports": "《…》 ——2024-08-21")
_ENDS_SENTENCE = re.compile(r"(?:[。！？!?；;：:」』”）)]|[0-9]{4}[-/.][0-9]{1,2}[-/.][0-9]{1,2})\s*$")
_STARTS_ITEM = re.compile(r"^\s*(?:第[零一二三四五六七八九十百千0-9]+[编章节条款]|[（(][一二三四五六七八九十0-9]+[)）]"
                          r"|[一二三四五六七八九十]+[、.]|[0-9]+(?:\.[0-9]+)*[.、)）\s]|[-*•·]\s|#"
                          # an author-first reference entry ("[28] Tsung-Yi Lin, …"; a list of standards, "[2]  HAF
                          # 103-2020 …", is read entry by entry its own way)
                          r"|\[[0-9]{1,3}\]\s+[A-Z][a-z])")


# a law's list of conditions: "…下列条件:（一）…；（二）…；（五）年满三十周岁。"
_LIST_ITEM = re.compile(r"^\s*[（(][一二三四五六七八九十0-9]+[)）]")
# a list's opening line quoted with its first item ("…详细分类介绍如下: • Frontinfo.tex:…", "…以下14个安全要素： 1. 核电厂设计");
# a law's items ("（二）…") are each quoted with the line, and are no first item
_OPENS_LIST_ITEM = re.compile(r"[:：]\s*(?:[•●▪]|1[.．、](?![0-9]))")
_ITEM_MARK = r"(?:[（(][一二三四五六七八九十0-9]+[)）]|[0-9]{1,2}[.．、](?![0-9]))"  # "（二）", "2."
_NUMBERED_ITEM = re.compile(rf"^\s*{_ITEM_MARK}")
# "…反馈信息包括（不限于）： 1. …；": the line opening the list (the last one before an item's number)
_LIST_OPENING = re.compile(rf"^(.*[:：])\s*(?:{_ITEM_MARK}|$)")
_OPENS_LIST = re.compile(r"^(.*[:：])\s*[（(][一二三四五六七八九十1]+[)）]")
# the question asks for a list's n-th item ("第三个条件", "the second requirement"; not "第十五条", an article)
_ASKED_ORDINAL = re.compile(r"第[（(]?([一二三四五六七八九十]{1,3}|[0-9]{1,2})[)）]?(?:个|项|点|种|步|段|条件)|(最后)一?(?:个|项|点|种|步|段|条)"
                            # (not "first quarter", nor a compound, "first-quarter", "third-party", "first-order",
                            # unless of a row or an item: "the first-row cell")
                            rf"|\b({ORDINAL_WORDS})\b(?!\s+(?:quarter|half)\b)(?!-(?!(?:row|item|listed)\b))"
                            r"|\b(?:item|point|step)\s+[(（]?([0-9]{1,2})\b", re.IGNORECASE)
_ENGLISH_ORDINAL = re.compile(rf"\b(?:{ORDINAL_WORDS})\b", re.IGNORECASE)
# an item's number: "（二）", or "2." / "2、" opening it or following its list's "…包括：" (not "2.1.6")
_ITEM_NUMBER = re.compile(r"[（(]([一二三四五六七八九十]{1,3}|[0-9]{1,2})[)）]|(?:^|[:：]\s*)([0-9]{1,2})[.．、](?![0-9])")


def asked_ordinal(question: str) -> int | None:
    """The number of the list item a question asks for (LAST for the last one), or None."""
    found = list(_ASKED_ORDINAL.finditer(question))
    # "the first step is defining a policy; what is the second?": the last one named is asked
    return ordinal_number(next(g for g in found[-1].groups() if g)) if found else None


# a sentence counting itself ("The second fundamental in securing data assets is …", "First, and most important,
# is …"), behind the bullet glyph a PDF's text layer may have kept ("SM590000")
_COUNTED = re.compile(rf"^\s*(?:SM[0-9]+\s+|[•·*–-]\s*)?(?:the\s+)?({'|'.join(COUNT_WORDS)})\b", re.IGNORECASE)


def item_number(unit: str) -> int | None:
    """The number of the list item a unit quotes ("…下列条件: (二) 熟悉…" → 2, "3. Network …" → 3, "The second
    fundamental is …" → 2), or None; an item quoted with its list's opening line, itself an item of an outer list,
    is the inner one ("7. 安全要素和评价专项，…应提供以下信息： 2. 现行安全标准和实践清单" → 2)."""
    found = list(_ITEM_NUMBER.finditer(unit))
    m = next((m for m in reversed(found) if m.group()[:1] in ":：" or unit[:m.start()].rstrip().endswith((":", "："))),
             found[0] if found else None)
    if m:
        return ordinal_number(m.group(1) or m.group(2))
    m = _COUNTED.match(unit)
    return ordinal_number(m.group(1)) if m else None


def unwrap_lines(text: str) -> str:
    """`text` with wrapped lines joined (CJK without a space, Latin words with one)."""
    lines = (text or "").split("\n")
    out = [lines[0]]
    for line in lines[1:]:
        prev = out[-1]
        wrapped = (len(prev.strip()) >= WRAP_MIN_LINE_CHARS and line.strip() and not _ENDS_SENTENCE.search(prev)
                   and " | " not in prev and " | " not in line and not _STARTS_ITEM.match(line)
                   and not _next_reference(prev, line))
        if wrapped:
            cjk = _CJK_CHAR.match(line.lstrip()) or _CJK_CHAR.search(prev.rstrip()[-1:])
            out[-1] = prev.rstrip() + ("" if cjk else " ") + line.lstrip()
        else:
            out.append(line)
    return "\n".join(out)


# "1." of "1. Hardware constraints", "2.3.3." of "2.3.3. Network Constraints": split off as a sentence
_BARE_NUMBER = re.compile(r"^[0-9]{1,2}(?:\.[0-9]{1,2})*[.．]$")


# an entry of a reference list, APA ("Chen, X., & Dubois, M. (2023). Mitigating …. Urban Hover-Transit
# Studies, 15(1), 22-38.") or GB/T 7714 ("BRAVO H, OLAVARRIA J. Comparative study …[J]. Anatomy and
# embryology, 1990, 181(1):67-73."): its title, journal and pages are one statement, never split at their periods
_REFERENCE_ENTRY = re.compile(r"^\s*(?:\[?[0-9]{1,3}[.\]]\s*)?(?:[A-Z][^\n]{0,200}?\([0-9]{4}[a-z]?\)\.\s"
                              r"|[^\n]{1,200}?\[(?:[JMCDRSPNGZA]|EB|DB|CP)(?:/OL)?\](?:\.|//))"
                              # or numbered, IEEE's way ("[28] Tsung-Yi Lin, … Focal loss for dense object detection.
                              # In Proceedings of …, pages 2980–2988, 2017. 6, 7"): its year ends it
                              r"|^\s*\[[0-9]{1,3}\]\s+[A-Z][^\n]{10,400}?\b(?:19|20)[0-9]{2}[a-z]?\.")


# a numbered reference list whose line breaks the parser lost ("[22] Jaehyung Kim, … 2020. 1 [23] Pang Wei Koh, …"):
# each entry opens at its number, after the year (and the pages citing it) that end the one before
_GLUED_REFERENCE = re.compile(r"(?<=[.0-9])\s+(?=\[[0-9]{1,3}\]\s+[A-Z])")
_NUMBERED_REFERENCE = re.compile(r"^\s*\[[0-9]{1,3}\]\s+[A-Z]")


def _reference_entries(line: str) -> list[str]:
    """A line of a numbered reference list split into its entries; another line whole."""
    return _GLUED_REFERENCE.split(line) if _NUMBERED_REFERENCE.match(line) else [line]


def _next_reference(prev: str, line: str) -> bool:
    """`line` opens the reference entry after the whole one `prev` holds."""
    return prev.rstrip().endswith(".") and bool(_REFERENCE_ENTRY.match(prev) and _REFERENCE_ENTRY.match(line))


# a list of standards whose line breaks the parser lost ("GB/T 2965—2007 钛及钛合金棒材GB/T 3621—2007 钛及钛合金板材
# …", "GB/T 3620.2 …允许偏差GB/T 4698(所有部分) …"): each entry is a standard's number and title, so the line is split
# before each number glued to the title before it
_STANDARD_NUMBER = re.compile(rf"(?:{STANDARD_PREFIXES})(?:/[TZ])?\s*"
                              r"[0-9]+(?:\.[0-9]+)*[A-Z]?(?:\s*[—–-]\s*(?:19|20)[0-9]{2})?(?![0-9.])")
_GLUED_STANDARD = re.compile(rf"(?<=[^\sA-Za-z0-9/、，,;；:：（(])(?={_STANDARD_NUMBER.pattern})")
MIN_STANDARDS = 3  # entries a line opening with a standard's number holds to be read as such a list


def _standard_entries(line: str) -> list[str]:
    if not _STANDARD_NUMBER.match(line.lstrip()):
        return [line]
    entries = _GLUED_STANDARD.split(line)
    return entries if len(entries) >= MIN_STANDARDS else [line]


# a list whose bullets a PDF's symbol font turned into letters (Wingdings' "r", "q", "n", "l", "§", "Ø", "ü"), its
# line breaks lost ("r Database performance and scalability r Advanced SQL knowledge …"): split before each bullet
_GLYPH = "rqnl§Øü"
_GLYPH_BULLET = re.compile(rf"(?:^|(?<=\s))[{_GLYPH}]\s+(?=[A-Z0-9])")
MIN_GLYPH_ITEMS = 3  # bullets a line opening with one holds to be read as such a list


def _glyph_items(line: str) -> list[str]:
    if not _GLYPH_BULLET.match(line.lstrip()):
        return [line]
    starts = [m.start() for m in _GLYPH_BULLET.finditer(line)]
    if len(starts) < MIN_GLYPH_ITEMS:
        return [line]
    return [line[a:b].strip() for a, b in zip(starts, starts[1:] + [len(line)])]


def sentences(text: str) -> list[str]:
    parts = [s.strip() for joined in unwrap_lines(text).split("\n") for line in _reference_entries(joined)
             for s in ([line] if _REFERENCE_ENTRY.match(line) and len(line) <= MAX_SENTENCE_CHARS
                       else (e for entry in _standard_entries(line) for item in _glyph_items(entry)
                             for e in _SENTENCE_END.split(item)))
             if s and s.strip()]
    out: list[str] = []
    for part in parts:
        out.append(f"{out.pop()} {part}" if out and _BARE_NUMBER.match(out[-1]) else part)
    return out


def evidence_units(chunk, numbered_items: bool = False, opening: str = "") -> list[str]:
    """What an extractive answer may quote from a chunk: its sentences; for a table each data row
    with the header row before it (a row's numbers mean nothing without the column names).
    `numbered_items` (the question asks a list's n-th item): "2." items are quoted with their list's
    opening line as "（二）" items always are; else the opening line's words would weigh less by being
    in every item. `opening`: the line opening a list still open where the chunk starts ("第十七条 …的任务是:")."""
    if chunk.chunk_type in GRIDS and " | " in chunk.content:
        form = form_lines(chunk.content)
        if form is not None:
            return list(form)
        rows = _table_lines(chunk.content)
        if len(rows) > 1:
            return [f"{rows[0]}：{row}" for row in rows[1:]] + table_notes(chunk)
    return _sentence_units(chunk, numbered_items, opening)[0]


def _table_lines(content: str) -> list[str]:
    """A " | " table's rows as lines, the header's first, without Markdown's separator line."""
    return [line.strip() for line in content.splitlines() if " | " in line and not set(line.strip()) <= set("|-: ")]


def _sentence_units(chunk, numbered_items: bool, opening: str, in_item: bool = False) -> tuple[list[str], str, bool]:
    """A chunk's sentences as `evidence_units` quotes them, the line opening a list still open at its end (the
    chunk ends with it, or with an item of its list: "（十九）…" of "…行使下列职权:"; "" when none is), and whether
    it ends with an item. `in_item`: the chunk before ended with an item, which the chunk may go on with."""
    units = sentences(evidence_text(chunk))
    # a sentence opening with a pronoun ("It featured early examples of cut, copy, and paste.") or with
    # no subject ("由 zepinglee 开发") names its subject in the sentence before; one ending with a colon
    # ("The following CL commands can be used …:") is said by the line after it: quoted together
    # the items after it ("（五）年满三十周岁。") are said by it too: each is quoted with it
    joined, intro = [], opening
    for i, u in enumerate(units):
        if i and (_PRONOUN_START.match(u) or units[i - 1].endswith(("；", ";")) and _CONDITION_START.match(u)):
            u = _join(units[i - 1], u)
        item = bool((_NUMBERED_ITEM if numbered_items else _LIST_ITEM).match(u))
        # the chunk opening with the rest of the item the chunk before ended with ("国家预算…调整方案；(六)…")
        item = item or (i == 0 and in_item and bool(opening) and not _ARTICLE.match(u))
        if item and intro and not (i and units[i - 1].endswith((":", "："))):
            u = _join(intro, u)
        if i + 1 < len(units) and u.endswith((":", "：")):
            intro = u
            u = _join(u, units[i + 1])
        elif not item:  # "…下列条件:（一）无子女…；" opens its list itself
            opened = _OPENS_LIST.match(u)
            # an item's second clause ("（五）…的人选；根据国务院总理的提名，…；") leaves its list open
            going_on = bool(intro) and i > 0 and units[i - 1].endswith(("；", ";"))
            intro = opened.group(1) if opened else intro if going_on else ""
        joined.append(u)
    if units and units[-1].endswith((":", "：")):
        return joined, units[-1], False
    return joined, intro, bool(units) and item


_NOTE_LINE = re.compile(r"^\s*注|[。.；;]\s*$")


def table_notes(chunk) -> list[str]:
    """The sentences a table's content holds between its rows: its notes ("注：…", "TA7ELI牌号的杂质
    “Fe+O”的质量分数总和应不大于0.32％。"), not its titles; [] for a chunk that is no " | " table."""
    if chunk.chunk_type not in GRIDS or " | " not in chunk.content:
        return []
    return list(_notes(chunk.content))


@lru_cache(maxsize=4096)  # asked per question of each table in its context, like form_lines
def _notes(content: str) -> tuple[str, ...]:
    notes = (s for line in content.splitlines() if " | " not in line and _NOTE_LINE.search(line)
             for s in sentences(line))
    return tuple(dict.fromkeys(notes))  # a table merged over pages may hold its notes twice


def _join(first: str, second: str) -> str:
    return f"{first}{'' if _CJK_CHAR.match(second) or second.startswith('（') else ' '}{second}"


def _document_title(context: Context) -> tuple[str, str] | None:
    """(the title, its chunk id) of the best hit's document, from its cover in the context: a first chunk that is one
    short line under no heading ("Summer activities"), else the heading its first chunks are under ("Test
    Document"); None when the context holds none of its first chunks."""
    if not context.chunks:
        return None
    source = context.chunks[0].source
    firsts = sorted((c for c in context.chunks if c.source == source and c.chunk.chunk_index < COVER_CHUNKS),
                    key=lambda c: c.chunk.chunk_index)
    for c in firsts:
        line = c.chunk.content.strip()
        if not c.chunk.section_path and line and "\n" not in line and len(line) <= TITLE_MAX_CHARS:
            return line, c.chunk_id
    return next(((c.chunk.section_path.split(" > ", 1)[0], c.chunk_id) for c in firsts if c.chunk.section_path), None)


class _TableUnit(NamedTuple):
    """A table chunk's answer to a question (`_table_unit`)."""

    where: str  # what names the cell: label, header, caption, section
    text: str  # "row — column: value"
    bonus: float  # CELL_BONUS when the question named the column too, as much again when it wrote the row's label out
    label: str  # that label, or ""
    header: str  # the column's header, "" for every value of the row


def _table_unit(question: str, chunk, subject: frozenset[str] = frozenset(), glosses: str = "", label: str = "",
                ) -> _TableUnit | None:
    """A table chunk's answer to the question, or None when the question names none of its row labels.
    `subject`: the question's terms that name the document; `glosses`: the Chinese its words translate to;
    `label`: the short line right before the table (`labelled_rows`)."""
    content = labelled_rows(chunk.content, label)
    cell = table_cell(question, content, subject, glosses) if form_lines(content) is None else None
    if cell is None:
        return None
    # a table's caption names it; the section is where the float landed (CC-SAM's Table 3 under "4.3 Open
    # Long-Tailed Recognition", whose results are Table 4's): it names a table with no caption only
    where = " ".join((cell.label, cell.header, chunk.caption or chunk.section_path.rsplit(" > ", 1)[-1]))
    # a level asked for its change names the column of no change asked
    named_column = cell.column_score > 0 and cell.answers_change(question)
    return _TableUnit(where, cell.text, CELL_BONUS * (named_column + cell.written), cell.label if cell.written else "",
                      cell.header)


# the words by which a question names its document ("《…》由哪个单位归口", "In the CC-SAM paper, …") name
# the document when a heading of it is that name or NAMING_SHARE of its prose in the context holds them: every
# unit of it holds them then, so they pick no sentence (the one restating the title) and no row
# ("CC-SAM") within it. A fifth of its prose is enough: "DB2", "RCAC", "Redpaper" are the Redpaper's whichever
# passage says them (swept on the 1,609 docs questions: 0.1–0.25 ties at +8–10 over the 0.6 of
# `SUBJECT_SHARE`, 0.3 +7, 0.45 +2)
NAMING_SHARE = 0.2
SUBJECT_SHARE = 0.6  # of a document's prose: what a question's words are about (`_document_terms`)
_ASKS_ANY_TITLE = re.compile(r"\btitle\b|标题|题目|书名|名称", re.IGNORECASE)  # a cover then answers, names nothing
TITLE_SHARE = 0.8  # a heading or first line holding this share of the words is the document's own title
TITLE_MAX_CHARS = 40  # a first line this short is a heading; a longer one is a sentence (that may cite a title)


# an article the naming words point to ("根据宪法第四十九条") is where the answer is, not the document's name
_ARTICLE_NAMED = re.compile(rf"第\s*(?:{PART_NUMERAL})\s*[条款项]|(?:{ARTICLE_CITED}|\bclause)\s*[0-9]+\b", re.IGNORECASE)


def _subject_terms(question: str, context: Context, translated: frozenset[str] | None = None,
                   ) -> dict[str, frozenset[str]]:
    """Per source of the context, the terms of the words naming the document the question asks about
    (`tasks.qa.extract.scope_parts`) that name it, with the Chinese only they translate to: all of a
    way of naming it when a heading of it (or a short first line, or its cover: one of its first
    chunks, before any heading) holds TITLE_SHARE of its terms — it is the document named — else,
    with ≥ 2 prose chunks in the context, those ≥ NAMING_SHARE of them hold and no other source's prose holds
    more often. `translated`: the naming words' translation (`_scope_glosses`), when the caller has it."""
    found = [_ARTICLE_NAMED.sub(" ", part) for part in scope_parts(question)]
    parts = [terms(part) for part in found]
    scope = frozenset().union(*parts)
    if not scope:
        return {}
    # the Chinese the naming words translate to names a Chinese document ("Part 1" → 第1部分)
    translated = _scope_glosses(question, found, context) if translated is None else translated
    held: dict[str, list[frozenset[str]]] = {}
    titles: dict[str, frozenset[str]] = {}
    asks_title = bool(_ASKS_ANY_TITLE.search(question))
    for c in context.chunks:
        # one of the first chunks, before the first heading, is the cover: it is where the document
        # names itself (and what a question asking the title printed on it asks for)
        is_cover = c.chunk.chunk_type == TEXT and not c.chunk.section_path and c.chunk.chunk_index < COVER_CHUNKS
        if c.chunk.chunk_type == TEXT and not (is_cover and asks_title):  # prose: a table names other things
            held.setdefault(c.source, []).append(terms(evidence_text(c.chunk)) & (scope | translated))
        if c.chunk.chunk_type in (TEXT, HEADING):
            first = c.chunk.content.split("\n", 1)[0]
            short_first = first if len(first) <= TITLE_MAX_CHARS else ""
            cover = c.chunk.content if is_cover and not asks_title else ""
            head = terms(" ".join((c.chunk.title, c.chunk.section_path, short_first, cover)))
            # each way the question names it may be its title ("《…第12部分：设计》" of "《…》征求意见稿前言中")
            for named in (scope, *parts):
                if named and len(head & named) >= TITLE_SHARE * len(named):
                    titles[c.source] = titles.get(c.source, frozenset()) | named | translated
    out = dict(titles)
    # a word naming the document is its prose's, not a word another document cites it by ("根据宪法，制定本法"
    # in the Civil Code): the share of the source holding it most
    share = {source: {t: sum(t in f for f in held_terms) / len(held_terms) for t in scope | translated}
             for source, held_terms in held.items() if len(held_terms) >= 2}
    most = {t: max((s[t] for s in share.values()), default=0.0) for t in scope | translated}
    for source, shares in share.items():
        if source not in titles:
            out[source] = frozenset(t for t, v in shares.items() if v >= NAMING_SHARE and v >= most[t])
    return out


def _scope_glosses(question: str, parts: list[str], context: Context) -> frozenset[str]:
    """The terms of the Chinese (of a Chinese question: the English) only the words naming the document
    translate to (not the rest of the question's)."""
    if not parts:
        return frozenset()
    gloss = gloss_terms if translatable(question) else english_glosses
    used = _vocabulary(context)
    rest = without_scope(question, parts)
    return terms(" ".join(gloss(" ".join(parts), used))) - terms(" ".join(gloss(rest, used)))


@lru_cache(maxsize=4096)
def _named_terms(source: str, question_terms: frozenset[str], question: str = "") -> frozenset[str]:
    """The question's terms that the document's file name holds ("svolt", "blade", "cell" of
    "SVOLT-196Ah-…-Blade-Battery-Cell-…"; its suffix too where the question writes the name whole, the "md" of
    "SOURCES.md"): they name the document, so each of its units holds them, as each unit of a titled document
    holds its title's (`_subject_terms`)."""
    name = file_name(source)
    whole = name.lower() in question.lower() and "." in name
    return terms(name if whole else document_name(source)) & question_terms


def _naming_terms(question: str, question_terms: frozenset[str], context: Context,
                  translated: frozenset[str] | None = None) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Per source of the context, (the question's terms naming it: `_subject_terms`, `_named_terms`;
    those naming another source of the context, not it, and written in one source's text at most).
    A unit is not evidence by the words naming another document: the corpus's file list
    ("zh_pdf/prc_civil_code.pdf — …") does not answer a question about the PRC Civil Code. A word
    two documents' text holds ("PSR" of "nbt_npp_psr_part1_drafting_notes") is what they are about,
    not a name."""
    subjects = _subject_terms(question, context, translated)
    own = {c.source: subjects.get(c.source, frozenset()) | _named_terms(c.source, question_terms, question)
           for c in context.chunks}
    written: dict[str, set[str]] = {}
    for c in context.chunks:
        written.setdefault(c.source, set()).update(terms(c.chunk.content) & question_terms)
    common = {t for t, n in Counter(t for found in written.values() for t in found).items() if n > 1}
    return {source: (mine, frozenset().union(*(v for k, v in own.items() if k != source)) - mine - common)
            for source, mine in own.items()}


def _document_terms(question_terms: set[str], context: Context) -> dict[str, set[str]]:
    """Per source of the context, the question's terms that name what the document is about (the company
    of "比亚迪货币资金的期初余额"), which a table's cells never say: terms its title holds (the first heading or
    short first line of one of its first chunks) or SUBJECT_SHARE of its prose in the context does, that some
    other source's text lacks and no table of the context holds. A word one passage holds ("added" of "the
    function was added in IBM i 7.2") is that passage's, not its cells'; terms some table holds are the cells'
    own words ("client port"), never credited to another table. Empty with one source."""
    written: dict[str, set[str]] = {c.source: set() for c in context.chunks}
    prose: dict[str, list[set[str]]] = {c.source: [] for c in context.chunks}
    cover: dict[str, set[str]] = {c.source: set() for c in context.chunks}
    in_tables: set[str] = set()
    for c in context.chunks:
        found = terms(" ".join((c.chunk.title, c.chunk.section_path, evidence_text(c.chunk)))) & question_terms
        if c.chunk.chunk_type in GRIDS:
            in_tables.update(found)
            continue
        written[c.source].update(found)
        if c.chunk.chunk_type == TEXT:
            prose[c.source].append(found)
        if c.chunk.chunk_index < COVER_CHUNKS:  # its title: the first heading, a short first line
            first = c.chunk.content.split("\n", 1)[0]
            title = c.chunk.section_path.split(" > ", 1)[0], first if len(first) <= TITLE_MAX_CHARS else ""
            cover[c.source].update(terms(" ".join(title)) & question_terms)
    if len(written) < 2:
        return {}
    common = set.intersection(*written.values())
    return {source: {t for t in found if sum(t in f for f in prose[source]) >= SUBJECT_SHARE * len(prose[source])
                     or t in cover[source]} - common - in_tables
            for source, found in written.items()}


def _glossed(question: str, context: Context) -> str:
    """An English question with the Chinese its words translate to that the context's text uses
    (`tasks.qa.gloss`) written after it, a Chinese one with the English: what a unit or table row in
    the other language is matched by."""
    english = translatable(question)
    if not any(chinese_text(c.chunk.content) if english else english_text(c.chunk.content) for c in context.chunks):
        return question  # nothing to read in the other language
    vocabulary = _vocabulary(context)
    glossed = gloss_terms(question, vocabulary) if english else english_glosses(question, vocabulary)
    return f"{question} {' '.join(dict.fromkeys(glossed))}" if glossed else question


# what the question sets aside: "besides declaring all citizens equal before the law, what does the state …",
# "除甲方、乙方和省政府采购中心各执一份外，还有一份给谁"
_BESIDES = re.compile(r"\b(?:besides|apart from|other than|in addition to)\s+([^,，?？]{3,120})"
                      r"|除了?([^，,。？?]{2,60}?)(?:之外|以外|外)", re.IGNORECASE)


def _set_aside(question: str, context: Context) -> frozenset[str]:
    """The terms a question uses only for what it sets aside ("besides X, what …"), translated as the question
    is: a unit holding no other term of the question states X, not what is asked."""
    m = _BESIDES.search(question)
    if m is None:
        return frozenset()
    aside = m.group(1) or m.group(2)
    rest = question[:m.start()] + " " + question[m.end():]
    return frozenset(terms(_glossed(aside, context)) - terms(_glossed(rest, context)))


# a question asking a name in one language ("表2.1的英文标题", "What English title is printed on the cover"): a
# unit not written in it restates what the question names; it is a weaker answer
_ASKS_ENGLISH = re.compile(r"英文(?:标题|题目|名称|全称|名|缩写)|\bEnglish\s+(?:title|name|term|abbreviation)s?\b"
                           r"|\bin English\b", re.IGNORECASE)
_ASKS_CHINESE = re.compile(r"中文(?:标题|题目|名称|全称|名)|\bChinese\s+(?:title|name|term)s?\b|\bin Chinese\b",
                           re.IGNORECASE)
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")
_HAN = re.compile(r"[\u3400-\u9fff]")
# (in brackets or quotes: a Chinese question about an English title is no English question writing Chinese out)
_HAN_BRACKETED = re.compile(r"(?<=[（(“\"「])\s*([\u3400-\u9fff]{2,}[^()（）“”\"「」]{0,20}?)\s*(?=[)）”\"」])"
                            # or unbracketed in English words: "… revision based on feedback, starting with 审查目的."
                            r"|(?<=[A-Za-z,;:]\s)([\u3400-\u9fff]{2,})(?=\s*[\s,.;:?!]|$)")
_NAMED_TABLE = re.compile(r"[\u3400-\u9fff]+(?=\s+(?:\w+\s+)?(?:table|statement|sheet)\b)", re.IGNORECASE)
OTHER_SCRIPT_SHARE = 0.5  # of its score, for a unit not written in the language a name is asked in


def _script_asked(question: str) -> Callable[[str], bool] | None:
    """Whether a unit is written in the language the question asks a name in, or None when it asks none."""
    if _ASKS_ENGLISH.search(question):
        return lambda unit: bool(_LATIN_WORD.search(unit))
    if _ASKS_CHINESE.search(question):
        return lambda unit: bool(_HAN.search(unit))
    return None


# of its score, for a sentence not naming the table row the question writes out ("How many of Li Ke's (李柯) shares
# …": a line of the table's header); it speaks of another row or of none (0.3–0.7 measured alike, +4 −0 of 4,289)
UNNAMED_ROW_SHARE = 0.5
ROW_NAME_MIN_CHARS = 2
TOPIC_CHUNKS = 2  # a row label the prose of this many chunks says is what the passage is about ("CC-SAM")
OTHER_ARTICLE_SHARE = 0.5  # of its score, for a unit of an article (a table) other than the one the question names
# a code the question writes ("SF4", "TA33"): a short line writing it out whole (not "SF14") labels what is asked
_WRITTEN_CODE = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2,5}[0-9]{1,3}(?![A-Za-z0-9])")
CODE_BONUS = 0.2
CODE_LINE_CHARS = 40  # a line this short writing a code out labels it ("4. 老化（SF4）"); a sentence may cite it


# a listing's line asked ("while 𝑟 ≠ 0 do 这一行的注释", "the comment on the line return b"), holding a run of code the
# question writes out: the line asked (a statement's clause not asked by its line is quoted with its statement)
_ASKS_LINE = re.compile(r"[这那该此]一?行|\b(?:that|this|the) line\b|\bline\s+[0-9]", re.IGNORECASE)
WRITTEN_LINE_BONUS = 0.1
_CODE_RUN = re.compile(r"[^\u3000-\u303f\u3400-\u9fff\uff00-\uffef]{8,}")  # no CJK nor full-width punctuation


# a pseudocode listing flattened into one line ("…do Compute empirical loss $L _ { S }$with $B _ { i }$Estimate the
# class-specific gradient set …"): its steps open with a label ("Stage 2:"), after a "do", or with a capitalized verb
# after a word in lower case or a formula ("$Obtain the adversarial feature via Eqn 12"), each quoted on its own
_STEP_LABEL = re.compile(r"(?:Input|Output|Require|Ensure|Stage|Step|Phase)\s*[0-9]*\s*:")
_STEP_START = re.compile(rf"{_STEP_LABEL.pattern}|(?<=\bdo)\s"
                         r"|(?<![A-Za-z-])[A-Z][a-z]{2,}(?=\s+(?:[a-z$\u0370-\u03ff]))")
_CAPITALIZED_LAST = re.compile(r"(?:^|\s)[A-Z][\w-]*\s*$")


def _listing_steps(listing: str) -> list[str]:
    """A code chunk's lines, or a flattened pseudocode's steps."""
    lines = [" ".join(line.split()) for line in listing.splitlines() if line.strip()]
    if len(lines) > 1:
        return lines
    cuts = [m.start() for m in _STEP_START.finditer(listing)
            if not listing[:m.start()].rstrip().endswith(":")
            and (_STEP_LABEL.match(m.group()) or not _CAPITALIZED_LAST.search(listing[:m.start()]))]
    steps = (listing[a:b].strip() for a, b in zip([0, *cuts], [*cuts, len(listing)]))
    return [" ".join(step.split()) for step in steps if step]


def _code_written(line: str, question: str) -> bool:
    runs = (" ".join(run.split()) for run in _CODE_RUN.findall(question))
    return any(len(run) >= 8 and run in line for run in runs)


# a section's number the question writes ("section 2.1.4", "5.3.1条", `context.sections_asked`): a unit opening with it
# is that section's heading or its contents entry ("2.1.4 Database Information function: QIBM_DB_SYSMON 9")
CLAUSE_SENTENCES = 3  # the sentences of a clause the question names by its number quoted after its first
CLAUSE_MAX_CHARS = 300  # and their characters at most: a paper's numbered section is a page, no clause


def _sections_written(question: str) -> re.Pattern | None:
    numbers = sections_asked(question)
    return re.compile(rf"^\s*(?:{'|'.join(re.escape(n) for n in numbers)})(?![0-9.])") if numbers else None


_ASKS_PLACE = re.compile(r"\bpages?\b|第几页|哪一?页|页码|第几节|哪一?节|\bwhich section\b|\bsection number\b",
                         re.IGNORECASE)
_NUMBERED_ENTRY = re.compile(r"^\s*\[[0-9]{1,3}\]\s")
# a reference the question cites by its number ("参考文献[28]", "reference [64]", "[12]中"): its entry answers
_CITES_REFERENCE = re.compile(r"(?:参考文献|\breferences?)\s*\[([0-9]{1,3})\]", re.IGNORECASE)


def _cited_entry(question: str) -> re.Pattern | None:
    """What opens the entry of the reference the question cites by its number ("[28] "), None for none."""
    m = _CITES_REFERENCE.search(question)
    return re.compile(rf"^\s*\[{m.group(1)}\]\s") if m else None  # (`_NUMBERED_ENTRY` of that number)


def _topics(units: Sequence[_Unit], names_in: Callable[[str], Iterable[str]]) -> set[str]:
    """The names (`names_in` finds them in a text) that the sentences of TOPIC_CHUNKS chunks or more say: what the
    passage is about, no row or line of it."""
    said_in: dict[str, set[str]] = {}
    for u in units:
        for name in names_in(u.text) if u.sentence else ():
            said_in.setdefault(name, set()).add(u.chunk_id)
    return {name for name, chunk_ids in said_in.items() if len(chunk_ids) >= TOPIC_CHUNKS}


def _says_name(text: str, name: str) -> bool:
    """Does `text` say `name` as a word of its own ("USAGE" of "the USAGE column", not of "FUNCTION_USAGE")?"""
    return name in text and re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text) is not None


_DECIMAL_HEADER = re.compile(r"^\s*-?[0-9]+\.[0-9]+\s*$")


def _names_no_column(header: str) -> bool:
    """No header, or a decimal: a data row read as the header ("CE |  | 10.4 | … | 0.366", CC-SAM's Table 4 as the PDF's
    own parse landed it) names no column; a year ("2023") does."""
    return not header or bool(_DECIMAL_HEADER.match(header))


def _codes_written(question: str) -> re.Pattern | None:
    """What finds in a unit the codes the question writes, whole; None when it writes none."""
    codes = list(dict.fromkeys(_WRITTEN_CODE.findall(question)))
    return re.compile(rf"(?<![A-Za-z0-9])(?:{'|'.join(codes)})(?![A-Za-z0-9])") if codes else None


# an item's label before its value: "（二）第二顺序:兄弟姐妹、祖父母、外祖父母。"
_ITEM_LABEL = re.compile(r"(?:^|[（(][一二三四五六七八九十0-9]{1,3}[)）])\s*([^:：，。；;、\s（()）]{3,20})\s*[:：]\s*\S")


# a numbered item's label: "3、销售费用率: 预计 2024-2026 年…", "（二）第二顺序:…"
_LIST_LABEL = re.compile(r"^\s*(?:[0-9]{1,2}[、.．]|[（(][一二三四五六七八九十0-9]{1,3}[)）])\s*([^:：，。；;、\s]{2,12})\s*[:：]\s*\S")
_YEAR_WRITTEN = re.compile(r"(?<![0-9])(?:19|20)[0-9]{2}(?![0-9])")
_YEAR_RANGE = re.compile(r"(?<![0-9])((?:19|20)[0-9]{2})\s*[-–—~至到]\s*((?:19|20)[0-9]{2})(?![0-9])")
# of a label's terms the question (its glosses too) holds: it names the label (0.4 and 0.5 alike, 0.6 one answer less)
LABEL_NAMED_SHARE = 0.5


def _states_condition(unit: str, condition: str) -> bool:
    """Whether a clause of the unit ending in "的" (a law's condition: "监护人尽到监护职责的") holds CONDITION_SHARE of the
    condition's words, and no negation it lacks ("监护人未尽到监护职责的" is the other case)."""
    put = words(condition)
    return bool(put) and any(len(put & words(clause)) >= CONDITION_SHARE * len(put)
                             and not any(n in clause and n not in condition for n in _NEGATIONS)
                             for clause in re.split(r"[，,；;。]", unit) if clause.rstrip().endswith("的"))


def _label_named(unit: str, q: frozenset[str], naming: frozenset[str], years: Sequence[str]) -> bool:
    """Whether the unit is a numbered item whose label the question names ("selling expense ratios" of
    "3、销售费用率: …"): the item says what is asked, not one of the items beside it that mention it. Not by the
    words naming the document ("1. ucasthesis: …"), not a file's name ("3. artratex.sty: …"), nor an item lacking
    a year the question asks (the 2024–2026 forecast of "毛利率" asked for 2022)."""
    m = _LIST_LABEL.match(unit)
    own = terms(m.group(1)) - naming if m and "." not in m.group(1) else frozenset()
    if not own or len(own & q) < LABEL_NAMED_SHARE * len(own):
        return False
    held = {int(y) for y in _YEAR_WRITTEN.findall(unit)}
    for first, last in _YEAR_RANGE.findall(unit):  # "2024-2026" holds 2025
        held.update(range(int(first), int(last) + 1))
    return all(int(y) in held for y in years)


def _labels_part_of(unit: str, about: str) -> bool:
    """Whether the unit states, as "label: value", a part of what the question asks about (the "第二顺序" of
    "第二顺序继承人包括哪些人")."""
    return any(m.group(1) in about for m in _ITEM_LABEL.finditer(unit))


# a question asking the caption of a chart or a table (a figure's is in its image description)
_ASKS_CAPTION = re.compile(r"\bcaption\b|题注|图注|表注|标题说明", re.IGNORECASE)
_NAMES_GRID = re.compile(r"\b(?:chart|table|graph)\b|图表|表格|(?<![图代])表\s*[0-9]", re.IGNORECASE)
# a question asking a column's header ("the header of the column that lists 'Ash, Elm, Maple'", "放电功率一栏是在什么
# 荷电状态下给出的": "功率（20%SOC），W"): each column of the context's tables answers by its header, told apart by its
# header's words and by the cells the question quotes or writes in brackets ("(50, 150, 200)"), not by all its cells
# (a glossary's definitions hold any word)
_ASKS_HEADER = re.compile(r"\b(?:header|heading|title) of the (?:[\w'-]+ ){0,3}column\b"
                          r"|\bcolumn(?:'s)? (?:header|heading)\b"
                          r"|(?:一栏|一列|这列|该列|这栏|该栏)(?:是|的数值|的数据)?在什么.{0,12}?下", re.IGNORECASE)
_BRACKETED = re.compile(r"[（(][^（）()]{1,80}[)）]")
# the column a question names ("允许的充电电流一栏", "the discharge power column"): its last word is what the column
# holds (电流, not the 充电 of the 充电时间 beside it), and a header holding it gains CELL_BONUS
_COLUMN_NAMED = re.compile(r"([\u4e00-\u9fff]{2,}?)(?:这|那)?(?:一栏|一列|栏|列)|\b([A-Za-z][\w-]{2,}) column\b")
# a name the question quotes ("section 2.2.2 'Table with caption'") asks nothing of its words
_QUOTED_NAME = re.compile(r"“[^”]{1,80}”|‘[^’]{1,80}’|「[^」]{1,80}」|\"[^\"]{1,80}\""
                          r"|(?<![A-Za-z])'[^']{1,80}'(?![A-Za-z])")


def _in_list_of(unit: _Unit, opener: _Unit, context: Context) -> bool:
    """Does `unit` stand after the line `opener`, in its chunk or in the chunk right after it?"""
    if unit.order == opener.order:
        return unit.pos > opener.pos
    a, b = context.chunks[opener.order].chunk, context.chunks[unit.order].chunk
    return a.source == b.source and b.chunk_index == a.chunk_index + 1


def _vocabulary(context: Context) -> frozenset[str]:
    """The words the context's text uses: the glosses worth writing."""
    return frozenset().union(*(words(evidence_text(c.chunk)) for c in context.chunks))


class _Unit(NamedTuple):
    """An evidence unit an extractive answer may quote: a sentence, a table row, or a table cell."""

    terms: frozenset[str]  # what matches the question: its terms (a cell: its label, header, document)
    words: frozenset[str]  # the same as jieba words
    bonus: float  # a cell: CELL_BONUS per column named / row written out; a restated question: -1 (scored a quarter)
    credit: float  # a little of the chunk's own score
    order: int  # the chunk's place in the context
    pos: int  # the unit's place in its chunk
    text: str  # what is quoted
    chunk_id: str
    sentence: bool  # a sentence (may be cut to its clause), not a table unit
    translated: bool = False  # matched by what the question's words translate to too (the other language's)
    cell: bool = False  # a table's cell, matched by its row and column (`table_cell`), not by its own words
    said: frozenset[str] = frozenset()  # the question's terms its words mean (`sense_stems`, `headwords`)
    said_words: frozenset[str] = frozenset()  # the same, as jieba words


@lru_cache(maxsize=65536)  # a batch reads the same chunks' sentences for many questions
def _meanings(text: str, english_question: bool) -> frozenset[str]:
    """What the words of a unit mean in the question's language: the English stems of a Chinese unit's words
    (`sense_stems`), the Chinese headwords of an English unit's (`headwords`)."""
    meaning = sense_stems if english_question else headwords
    return frozenset().union(*(meaning(w) for w in words(text)))


@lru_cache(maxsize=65536)  # a batch reads the same chunks' sentences for many questions
def words(text: str) -> frozenset[str]:
    """The jieba words of `text` (BM25's tokenizer: no stop words, numbers kept)."""
    return frozenset(tokenize(text))


def _shares(query: set[str] | frozenset[str], found: Sequence[frozenset[str]], focused: frozenset[str],
            translated: frozenset[str] = frozenset()):
    """A function giving the share of `query`'s terms a unit holds, each term weighted by how rare
    it is among the units (a term every unit shares, the product name, decides nothing), doubled
    when it names what is asked (`focused`), and GLOSS_WEIGHT of that when it is only a dictionary's
    translation of the question's words (`translated`): a guess, weaker than the words themselves."""
    df = Counter(t for f in found for t in f & query)
    weight = {t: math.log(1.0 + (len(found) + 1) / (1 + df[t])) * (FOCUS_WEIGHT if t in focused else 1.0)
              * (GLOSS_WEIGHT if t in translated else 1.0) for t in query}
    total = math.fsum(weight.values()) or 1.0
    # fsum: the same share whatever order a set yields its terms in (a float sum's last bit decided ties)
    return lambda shared: math.fsum(weight[t] for t in shared) / total


RELATED_SPAN = 0.1  # a sentence's cosine this far below the closest one's costs it the most (e5 crowds into tenths)


def _with_relatedness(question: str, english: bool, units: Sequence[_Unit], scored: list[tuple],
                      similarity: Similarity | None, weight: float) -> list[tuple]:
    """`scored` with the sentences in the other language than the question's (an English line of a Chinese
    chunk is not) scoring `weight` x (their embedding's cosine to the question's - the closest one's), at most
    `weight` x RELATED_SPAN less. Only there: within one language the words themselves match, and the cosine
    measured no gain (+14 -14 of 2,089 over every sentence). A sentence that far behind the best unit cannot
    become the answer whatever its cosine, so it is not encoded: bench/retrieval.py's answers, 38 questions/s
    instead of 25."""
    if similarity is None or weight <= 0 or not scored:
        return scored
    best = max(entry[0] for entry in scored)
    in_other_language = chinese_text if english else english_text
    across = [k for k, entry in enumerate(scored)
              if (u := units[entry[-1]]).translated and u.sentence and in_other_language(u.text)]
    near = [k for k in across if scored[k][0] >= best - weight * RELATED_SPAN]
    cosines = similarity(question, [units[scored[k][-1]].text for k in near]) if near else np.zeros(0)
    closest = float(cosines.max()) if near else 0.0
    cost = dict.fromkeys(across, -weight * RELATED_SPAN) | {
        k: weight * max(float(c) - closest, -RELATED_SPAN) for k, c in zip(near, cosines)}
    return [(entry[0] + cost[k], *entry[1:]) if k in cost else entry for k, entry in enumerate(scored)]


# the question asks what follows a named item ("which constraint comes right after Regulatory
# Constraints", "紧接在…之后的是哪一项")
_ASKED_AFTER = re.compile(r"\b(?:right|immediately|directly)\s+(?:after|below)\s+(.+?)(?:[?？,，]|$)"
                          r"|紧(?:接|跟|挨)(?:在)?(.+?)(?:之后|后面|的?下一?行|下面)|(?:排|列)在[“\"「]?([^”\"」]+?)[”\"」]?(?:之后|后面)"
                          r"|(?<=[，,中])([^，,。？?中紧]{2,20}?)的?下一行"  # "（表1）中，女工委员下一行列出的是哪个职位"
                          # a quoted item: "在“A cartoon duck holding a paper”之后还写了一句什么", "what follows 'X'"
                          r"|[“「]([^”」]{5,80})[”」](?:这一?[行句项条])?(?:之后|后面)"
                          r"|\b(?:after|follows|following)\s+[“‘'\"]([^”’'\"]{5,80})[”’'\"]"
                          # the one between two items follows the first ("sits between 'A' and 'B'"; not a range,
                          # "between -10℃ and -5℃")
                          r"|\bbetween\s+[“‘'\"]([^”’'\"]{3,80})[”’'\"]\s+and\b"
                          r"|\bbetween\s+(?:the\s+)?([A-Za-z][^,，?？'\"0-9]{2,80}?)\s+and\b",
                          re.IGNORECASE)
# or what precedes it ("which constraint is listed immediately before Budget Constraints", "紧接在…之前"; not "X前面的编号",
# the number written before X)
_ASKED_BEFORE = re.compile(r"\b(?:right|immediately|directly|just)\s+(?:before|above|preceding)\s+(.+?)(?:[?？,，]|$)"
                           r"|紧(?:接|挨)(?:在)?(.+?)(?:之前|的?上一?行|上面)|(?:排|列)在[“\"「]?([^”\"」]+?)[”\"」]?之前", re.IGNORECASE)


def _after_anchor(question: str, units: Sequence[_Unit]) -> dict[int, float]:
    """Bonuses by unit index when the question asks what follows (or precedes) a named item: ORDINAL_BONUS for the
    sentence after (before) the one holding most of the item's terms (in its chunk), as much off that one."""
    m = _ASKED_AFTER.search(question)
    before = _ASKED_BEFORE.search(question) if m is None else None
    m = m or before
    anchor = terms(next((g for g in m.groups() if g), "")) if m else frozenset()
    if not anchor:
        return {}
    share = [len(u.terms & anchor) / len(anchor) if u.sentence else 0.0 for u in units]
    best = max(range(len(units)), key=lambda i: (share[i], -i), default=None)
    if best is None or share[best] < 0.5:
        return {}
    out = {best: -ORDINAL_BONUS}
    # (a list's first item is a unit with its opening line and alone: the one after it is the next item)
    steps = range(best - 1, -1, -1) if before else range(best + 1, len(units))
    # (and the unit before an item is no unit holding it: its list's opening line quoted with it)
    near = next((i for i in steps if units[i].text not in units[best].text
                 and not (before and units[best].text in units[i].text)), None)
    if near is not None and units[near].chunk_id == units[best].chunk_id \
            and abs(units[near].pos - units[best].pos) <= 2:
        out[near] = ORDINAL_BONUS
    return out


def _row_after(question: str, context: Context) -> Answer | None:
    """The row right after the one the question names as what the asked row follows ("紧接在工会副主席之后列出的是哪个
    职位"), in the best ranked table holding a row of that label, with its table's header row; None when no table
    of the context holds one."""
    m = _ASKED_AFTER.search(question)
    anchor = terms(next((g for g in m.groups() if g), "")) if m else frozenset()
    if not anchor:
        return None
    for c in context.chunks:
        if c.chunk.chunk_type not in GRIDS or " | " not in c.chunk.content or form_lines(c.chunk.content) is not None:
            continue
        rows = _table_lines(c.chunk.content)
        at = next((k for k, row in enumerate(rows[1:-1], 1) if terms(row.split(" | ", 1)[0]) == anchor), None)
        if at is not None:
            return Answer(f"{rows[0]}：{rows[at + 1]}[ref:{c.chunk_id}]", EXTRACTIVE, [c.chunk_id])
    return None


# a figure's caption line answers ("Figure 4-68 Visual Explain with RCAC enabled"), a sentence citing it does not
_CITES_FIGURE = re.compile(r"(?:shows?|is|are|illustrates|presents|depicts|gives|lists|展示|显示|所示)\b", re.IGNORECASE)


def _figure_caption(question: str, context: Context) -> Answer | None:
    """The caption of the numbered figure (or example) the question asks the title of, from the best ranked chunk
    holding it: a figure's caption, or a line of text opening with its name and number; None when none does."""
    asked = figure_asked(question)
    if asked is None:
        return None
    kind, number = asked
    line = re.compile(rf"^\s*{kind}\s*{number}(?![0-9]|[.\-][0-9])\s*[:：.]?\s*(?=\S)", re.IGNORECASE)
    for c in context.chunks:
        for text in ((c.chunk.caption or "").strip(), *c.chunk.content.splitlines()):
            found = line.match(text)
            if found and not _CITES_FIGURE.match(text[found.end():]):
                return Answer(f"{text.strip()}[ref:{c.chunk_id}]", EXTRACTIVE, [c.chunk_id])
    return None


# a question asking the title of a numbered heading ("what title does the heading numbered 2.2 carry",
# "the title of Appendix A", "1.2.1节的标题"): the heading's line answers, though headings are no units
_ASKS_TITLE = re.compile(r"\btitle|\bheading|\bcalled\b|\bnamed\b|标题|题目", re.IGNORECASE)
_HEADING_NUMBER = re.compile(r"(?<![0-9.])([0-9]+(?:\.[0-9]+)+)(?![0-9.])|\b(?:appendix|附录)\s*([A-Z])\b",
                             re.IGNORECASE)
HEADING_BONUS = 0.5
# a question asking the heading of the section that covers what it describes ("under which section heading are …
# discussed", "介绍…的那一节，标题是什么"): the heading of the best unit's chunk answers, quoted before the unit
_ASKS_COVERING_SECTION = re.compile(
    r"\b(?:heading|title|name) of the (?:sub)?(?:section|chapter|part)\b(?! number)"
    r"(?=.*\b(?:that|which|where|covering|about|on|discussing|describing)\b)"
    r"|\bunder (?:which|what) (?:(?:sub)?section )?(?:heading|title|section)\b"
    r"|\bwhich (?:sub)?section (?:heading |title )?(?:covers|discusses|describes|introduces|deals|explains)"
    r"|(?:介绍|讲|论述|讨论|涉及|描述|说明)[^？?]{2,80}的(?:那|哪|这)?一?个?(?:小?节|章|部分)[^？?]{0,8}(?:标题|题目|名称)"
    r"|(?:哪|那)一?个?(?:小?节|章|部分)[^？?]{0,4}(?:介绍|讲|论述|讨论|涉及)", re.IGNORECASE)


# a numbered part of a series, a chapter, an article ("第14部分", "Part 14", "第三章", "Chapter 4"), asked by
# its title or as what it is ("what is Part 11 of the series?")
_NUMBERED_PART = re.compile(rf"第\s*({PART_NUMERAL})\s*(部分|章|节|条)"
                            r"|\b(part|chapter|section|article)\s+([0-9]{1,4})\b", re.IGNORECASE)
_PART_KINDS = {"part": "部分", "chapter": "章", "section": "节", "article": "条"}
_PART_NAMES = {kind: name for name, kind in _PART_KINDS.items()}
_ASKS_PART = re.compile(r"\b(?:what|which)\b[^,，?？]*\b(?:part|chapter|section|article) [0-9]+\b|名称", re.IGNORECASE)


def _part_asked(question: str) -> re.Pattern | None:
    """A pattern finding the line of the numbered part whose title the question asks, written the Chinese
    way ("——第14部分：灾害分析；", "第四章 工作职责"), or None; a part naming the document ("Part 12: Design"
    of its quoted title, "Part 1 (General Requirements)") is not asked."""
    rest = without_scope(question, scope_parts(question))
    if not (_ASKS_TITLE.search(rest) or _ASKS_PART.search(rest)):
        return None
    # "Part 1 (General Requirements)", "第1部分：通用要求": the question gives its title, so it names the document
    m = next((m for m in _NUMBERED_PART.finditer(rest) if not re.match(r"\s*[:：(（]", rest[m.end():])), None)
    if m is None:
        return None
    number, kind = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), _PART_KINDS[m.group(3).lower()])
    written = {number, chinese_numeral(int(number))} if number.isdigit() and 0 < int(number) < 10000 else {number}
    names = "|".join(re.escape(w) for w in sorted(written, key=len, reverse=True))
    chinese_way = rf"(?:^|(?<=[\s—\-–]))第\s*(?:{names})\s*{kind}\s*[:：]?\s*[^\s0-9]"
    # and the English way, opening the line ("Chapter 2. Roles and separation of duties 7"), not a mention in a
    # sentence ("… as described in Chapter 2")
    value = ordinal_number(number)  # ("二十三" → 23)
    if value is None or value == LAST or kind not in _PART_NAMES:
        return re.compile(chinese_way)
    return re.compile(rf"{chinese_way}|^{_PART_NAMES[kind]}\s+{value}\b\s*[.:：]?\s*[^\s0-9.]", re.IGNORECASE)


# a question asking the number of a heading it quotes ("what section number does the 'Chart with caption' subsection
# carry", "小节“公式示例”的编号是什么")
_ASKS_HEADING_NUMBER = re.compile(r"\b(?:section|heading|subsection|chapter) number|章节号|节号|第几[章节]"
                                  r"|(?:章节|小?节|标题)(?:[“\"'‘「][^”\"'’」]{1,40}[”\"'’」])?的?编号", re.IGNORECASE)


def heading_asked(question: str) -> re.Pattern | None:
    """A pattern finding the heading whose title the question asks (in a line, or where PDF lines were
    joined), or a numbered part's line (`_part_asked`), or the numbered heading whose number it asks ("2.3.1 Chart
    with caption" for 'Chart with caption'), or None."""
    names = quoted(question) if _ASKS_HEADING_NUMBER.search(question) else []
    if names:
        titles = "|".join(r"\s+".join(map(re.escape, name.split())) for name in names)
        return re.compile(rf"(?:^|(?<=\s))[0-9]+(?:\.[0-9]+)*\.?\s+(?:{titles})\s*$", re.IGNORECASE)
    m = _HEADING_NUMBER.search(question) if _ASKS_TITLE.search(question) else None
    if m is None:
        return _part_asked(question)
    if m.group(1):
        return re.compile(rf"(?:^|(?<=\s)){re.escape(m.group(1))}\.?\s+[^\s0-9]")
    # (a standard sets it letter-spaced: "附\u3000录\u3000A （资料性附录） 安全要素关联矩阵")
    return re.compile(rf"(?:^|(?<=\s))(?:appendix|附\s*录)\s*{m.group(2)}\b\s*[:：.]?\s*\S", re.IGNORECASE)


# a question asking what a symbol of a symbol list stands for ("the symbol h_T", "符号Cp对应的描述")
_SYMBOL_ASKED = re.compile(r"(?:符号|\bsymbol)\s*[“\"'‘]?([A-Za-z\u0391-\u03c9][A-Za-z0-9_{}\u0391-\u03c9]{0,7})",
                           re.IGNORECASE)


def symbols_asked(question: str) -> frozenset[str]:
    """The symbols the question asks about as written in a list of symbols ("h_T" → "hT", "δij")."""
    return frozenset(re.sub(r"[_{}]", "", m.group(1)) for m in _SYMBOL_ASKED.finditer(question))


def defines_symbol(line: str, symbols: frozenset[str]) -> bool:
    """Is `line` a symbol list's entry for one of `symbols`: the symbol (math italics read as letters:
    "𝐶𝑣" is Cv) and its description ("𝐶𝑣 specific heat capacity at constant volume m2 ⋅ s−2 ⋅ K−1")?"""
    plain = unicodedata.normalize("NFKC", line).strip()
    return any(plain.startswith(f"{s} ") and plain[len(s) + 1:len(s) + 2].isalpha() for s in symbols)


_LEADER = re.compile(r"(?:\s*[.．·…⋅]){4,}\s*|\s*\t+\s*")  # a contents entry's dots or tabs to its page number


def _contents_entries(chunk) -> list[str] | None:
    """A contents chunk's entries, one per line, leaders cut ("3.5 SELECT, INSERT, and UPDATE behavior with RCAC . . .
    | 22" → "3.5 SELECT, INSERT, and UPDATE behavior with RCAC 22"); None unless half its lines are entries."""
    lines = [line.strip() for line in evidence_text(chunk).splitlines() if line.strip()]
    if not lines or 2 * sum(bool(_TOC_LINE.search(line)) for line in lines) < len(lines):
        return None
    entries = [_LEADER.sub(" ", line.replace(" | ", " ")).strip() for line in lines]
    return [part for entry in entries for part in _glued_entries(entry)]


_ENTRY_NUMBER = re.compile(r"^([0-9]{1,2})(?:\.[0-9]{1,2}){0,3}\s")


# a contents entry's number and page ("2.3.6 参考文献引用 7", "第 2 章 LATEX 使用说明 3", "Appendix A Glossary 41")
_ENTRY_EDGES = re.compile(r"^\s*(?:第\s*[0-9一二三四五六七八九十]+\s*章|附\s*录\s*[A-Z]|appendix\s+[A-Z]|[0-9A-Z](?:\.[0-9]+)*\.?)\s+"
                          r"|\s+(?:[0-9]+|[ivxlc]+)\s*$", re.IGNORECASE)
ENTRY_TITLE_BONUS = 0.1  # an entry whose whole title the question writes ("参考文献"), over one holding it ("参考文献引用")


def _entry_title_written(entry: str, question: str) -> bool:
    title = re.sub(r"\s+", "", _ENTRY_EDGES.sub("", entry)).lower()
    return len(title) >= 2 and title in re.sub(r"\s+", "", question).lower()


def _glued_entries(entry: str) -> list[str]:
    """A contents line holding the next entries too, their leaders and pages lost ("3.6.6 Activating RCAC 3.6.7
    Demonstrating data access with RCAC 29"), cut before each entry numbered in the same chapter: the page closing
    the line is the last one's."""
    m = _ENTRY_NUMBER.match(entry)
    if m is None:
        return [entry]
    parts = re.split(rf"\s+(?={m.group(1)}(?:\.[0-9]{{1,2}}){{1,3}}\s)", entry)
    return [part for part in parts if len(part) > len(part.split(None, 1)[0])] or [entry]


# an item of a list numbering none ("- Strikethrough bullet 4"; "r DB2 Web Query": a symbol font's bullet)
_BULLET = re.compile(rf"^\s*(?:[-•●▪*]|[{_GLYPH}](?=\s+[A-Z0-9]))\s")


def _bullet_place(units: Sequence[_Unit], i: int) -> int | None:
    """The place of units[i] among the bullets right before it in its chunk, 1 for the first; None for no bullet."""
    if not _BULLET.match(units[i].text):
        return None
    first = i
    while first > 0 and _BULLET.match(units[first - 1].text) and units[first - 1].chunk_id == units[i].chunk_id \
            and units[first - 1].pos == units[first].pos - 1:
        first -= 1
    return i - first + 1


FIGURES = (IMAGE, CHART)
# the field labels of a figure's description (schemas.chunk's FIGURE_*; its "图片" says what it is)
_DESCRIPTION_LABEL = re.compile(f"(?:{FIGURE_BEFORE}|{FIGURE_AFTER}|{FIGURE_DESCRIPTION}|{FIGURE_DATA})："
                                f"|{FIGURE_LOCATED}(?=「)")


def _stated(unit: str, chunk_type: str) -> str:
    """What a unit states: a figure's description without its field labels ("内容：卡通人物" states no "内容")."""
    return _DESCRIPTION_LABEL.sub(" ", unit) if chunk_type in FIGURES else unit
_ASKS_PICTURE = re.compile(r"\b(?:picture|image|photo|icon)s?\b|图片|图像|照片|插图", re.IGNORECASE)


def _picture_places(context: Context) -> dict[str, tuple[int, int]]:
    """Per picture of the context, (its place, how many there are) among the context's pictures of its section, in
    the document's order."""
    by_section: dict[tuple[str, str], list] = {}
    for c in context.chunks:
        if c.chunk.chunk_type == IMAGE:
            by_section.setdefault((c.source, c.chunk.section_path), []).append(c)
    return {c.chunk_id: (place, len(pictures)) for pictures in by_section.values()
            for place, c in enumerate(sorted(pictures, key=lambda c: c.chunk.chunk_index), 1)}


def _at_picture_place(place: tuple[int, int] | None, ordinal: int) -> bool:
    return place is not None and (place[0] == ordinal or (ordinal == LAST and place[0] == place[1]))


def _is_item(units: Sequence[_Unit], i: int, ordinal: int) -> bool:
    """Whether units[i] is its list's item numbered `ordinal` (a bullet: at that place), or its last item (LAST: the
    next item of its chunk is not numbered next)."""
    number = item_number(units[i].text)
    if number is None:
        place = _bullet_place(units, i)
        if place is None:
            return False
        if ordinal != LAST:
            return place == ordinal
        after = i + 1 < len(units) and units[i + 1].chunk_id == units[i].chunk_id and _BULLET.match(units[i + 1].text)
        return not after
    if ordinal != LAST:
        return number == ordinal
    # the next item of its chunk; the first item is a unit twice, with its list's opening line and alone
    after = next((item_number(u.text) for u in units[i + 1:] if u.chunk_id == units[i].chunk_id
                  and item_number(u.text) != number), None)
    return after != number + 1


MIN_HEADING_CHARS = 4  # a heading written out in a question shorter than this ("1.1") says too little
_ASKS_PARAGRAPH = re.compile(r"\b(?:paragraph|entry|line)\b|段", re.IGNORECASE)


def _heading_written(question: str, context: Context) -> str:
    """The id of the prose chunk opening with its own heading, lines under it, whose heading the question writes
    out: the longest such heading ("2.2 Section 2.1", not the "2 Section 2" inside it); "" for none."""
    asked = clean_text(question)
    best, longest = "", 0
    for c in context.chunks:
        heading = clean_text(c.chunk.section_path.rsplit(" > ", 1)[-1])
        first, _, rest = c.chunk.content.partition("\n")
        if c.chunk.chunk_type not in GRIDS and longest < len(heading) and len(heading) >= MIN_HEADING_CHARS \
                and heading in asked and clean_text(first) == heading and rest.strip():
            best, longest = c.chunk_id, len(heading)
    return best


def _line_at(chunk, ordinal: int) -> str:
    """The `ordinal`-th line (LAST: the last) after the heading opening the chunk, or ""."""
    lines = [line.strip() for line in chunk.content.split("\n")[1:] if line.strip()]
    if ordinal == LAST:
        return lines[-1] if lines else ""
    return lines[ordinal - 1] if 0 < ordinal <= len(lines) else ""


MIN_ENUMERATION = 3  # items a clause lists ("调研了大亚湾核电厂、阳江核电厂、红沿河核电厂…") to hold a "last" one


def _enumerates(text: str, ordinal: int) -> bool:
    """Whether a clause of `text` lists, by "、", as many items as the ordinal asked ("listed seventh among the
    plants surveyed": the sentence naming eight plants holds the seventh). Not for "first": it is as often
    the first of a kind ("the first periodic safety review") as a list's first item."""
    if ordinal == 1:
        return False
    wanted = MIN_ENUMERATION if ordinal == LAST else max(ordinal, MIN_ENUMERATION)
    return any(part.count("、") + 1 >= wanted for part in re.split(r"[，,；;。:：]", text))


_ARTICLE_NUMBER = r"第[零一二三四五六七八九十百千0-9]+条"
_ARTICLE = re.compile(rf"^\s*{_ARTICLE_NUMBER}")
# a sentence opening another article or a numbered section ("第二百零三条 …", "1.2.1 Table with rich cells")
_ANOTHER_PART = re.compile(rf"^\s*(?:{_ARTICLE_NUMBER}|[0-9]+(?:\.[0-9]+)+\.?\s|第[一二三四五六七八九十百]+[章节编])")
_ARTICLE_OPENED = re.compile(rf"(?:^|(?<=[。\n]))\s*({_ARTICLE_NUMBER})(?=\s)")


def _articles_open(context: Context) -> dict[tuple[str, int], str]:
    """By (source, chunk index), the law's article the context's chunk ends in ("第四十五条"), which its next chunk,
    split from it mid-article, goes on with ("国家和社会保障残废军人的生活，…")."""
    out = {}
    for c in context.chunks:
        opened = _ARTICLE_OPENED.findall(c.chunk.content)
        if opened:
            out[(c.source, c.chunk.chunk_index)] = opened[-1]
    return out


# cosines of a question's embedding to those of texts (`SentenceSimilarity`)
Similarity = Callable[[str, Sequence[str]], np.ndarray]


def _rest_of_clause(units: Sequence[_Unit], first: int) -> list[_Unit]:
    """The sentences after `first` in its chunk up to the next numbered part, CLAUSE_SENTENCES and CLAUSE_MAX_CHARS
    at most."""
    rest, chars = [], 0
    for u in units[first + 1:first + 1 + CLAUSE_SENTENCES]:
        if not u.sentence or u.order != units[first].order or _ANOTHER_PART.match(u.text) \
                or chars + len(u.text) > CLAUSE_MAX_CHARS:
            break
        rest.append(u)
        chars += len(u.text)
    return rest


def extractive_answer(question: str, context: Context, settings: Settings,
                      similarity: Similarity | None = None) -> Answer | None:
    """The evidence units that hold most of the question's terms (`tasks.qa.extract.terms`: CJK
    bigrams, English words, numbers) and of its jieba words (the mean of both shares), each term
    weighted by how rare it is among the context's units (a term every unit shares, the product
    name, decides nothing) and each word naming what is asked (`tasks.qa.extract.focus`) doubled,
    +LABEL_BONUS for a sentence stating it (or a part of it, `_labels_part_of`) as "label: value",
    with a little credit for the chunk's own score, best first, each followed by its chunk's ref;
    sentences are read with PDF line wraps
    joined, and one opening with a pronoun or no subject is quoted with the one before; a unit must hold
    `extractive_min_overlap` of the question's terms, else None. A table answers with the cell the
    question names (`tasks.qa.extract.table_cell`: "row — column: value"; +CELL_BONUS when it names
    the column too, row and column named being the strongest evidence there is, and as much again
    when it writes the row's label out; a cell also holds the
    terms its document's text names and no table does, `_document_terms`: the company whose
    balance sheet it is), a sentence with its shortest clause that carries the answer
    (`extractive_clauses`; else the whole sentence). A restated question ("问：…？"), a bare
    heading and a table-of-contents line (or entry, unless the contents are asked) are not answers:
    they are discounted / skipped. The words naming the document the question asks about
    (`_subject_terms`) are held by each of its units. When the question asks a number, a date or a code the
    quoted units lack, the sentence right after the best one holding one is added, else the best unit holding one
    (if it scores ≥ SECOND_UNIT_RATIO of the best); a best line opening a list (ending ":") is quoted with the best
    item of its list, a best sentence the question restates (no word beside the question's) with the sentence after
    it, a best sentence with the one after it when that holds far more of the focus's terms (FOCUS_TERMS_MORE) or
    COMPLETING_TERMS of the question's terms its passage has not stated up to the best (unless it opens another
    article or section), and a
    best clause with the other clause of its sentence (split at "；") when that scores ADJACENT_TIE_RATIO of it; a
    unit another quoted unit holds is quoted once. A list of standards glued into one line is read entry by entry
    (`sentences`), as is a list whose bullets a symbol font wrote as letters item by item; an author-first reference
    entry ("[28] Tsung-Yi Lin, …") is one unit, said under its list's heading, and the one a question cites by its
    number ("参考文献[28]") gains HEADING_BONUS. An English question
    reads a Chinese chunk by the Chinese its words translate to, a Chinese question an English chunk by the
    English (`_glossed`, at GLOSS_WEIGHT), and by what its own words mean in the question's language too (CC-CEDICT
    both ways, at GLOSS_WEIGHT); a question asking a list's
    n-th item ("the seventh", "the last", numbered "(二)" or "2.", its list's opening line read with
    it, even from the chunk before) gives that item ORDINAL_BONUS, and one asking what comes right
    after a named item the unit after it; words naming another source of
    the context are no evidence (`_naming_terms`), and a unit holding only the words that name the
    document (a cover restating its title) is none. A blank form is quoted row by row under its
    sections' titles (`tasks.qa.extract.form_lines`), a table's notes beside its cell, a reference
    entry whole; a list of the corpus's files (`tasks.qa.filters.file_lists`) answers only questions
    about the files; a question asking a numbered heading's title takes its line (`heading_asked`), one
    asking what a symbol stands for its symbol list's line (`defines_symbol`), one asking the n-th paragraph
    under a heading it writes out that heading's n-th line (`_heading_written`), one asking the contents a
    contents entry (`_contents_entries`; +HEADING_BONUS when a page or section number is asked of them), one asking
    the document's own title the title its cover carries (`_document_title`),
    one asking a chart's or table's caption the caption of the grid its cells name, one asking
    a column's header the header its words name (`_ASKS_HEADER`), one asking the row right after a table's row it
    names that row (`_row_after`), one asking a numbered figure's title its caption (`_figure_caption`), one asking
    the heading of the section covering something the best unit's heading.
    The words naming the document are no evidence in a passage that writes them out, unless they are its
    document's subject; a unit holding only what the question sets aside ("besides X,
    what …", `_set_aside`) scores half, as does one of another article or numbered table than the one the
    question names ("Article 230", "Table 4") and one not written in the language a name is asked in ("英文标题");
    a short line writing out a code the question writes ("SF4") gains CODE_BONUS; a bullet asked by its place
    is counted among the bullets before it, a picture among the context's pictures of its section.
    A sentence in the other language than the question's also scores by
    its embedding's cosine to the question's (`similarity`), less the best such sentence's (at most
    RELATED_SPAN less), times `extractive_similarity_weight`: a dictionary reads a translation word by word,
    the model reads it whole
    (the Civil Code's "无子女的收养人可以收养两名子女" of "how many children may an adopter who has no children adopt").
    A closing sentence saying in what language to answer ("Give the Chinese wording.") says what is asked and in
    which script, but its words are no evidence (`without_answer_form`)."""
    if ASKS_DOCUMENT_TITLE.search(question):
        title = _document_title(context)
        if title is not None:
            return Answer(f"{title[0]}[ref:{title[1]}]", EXTRACTIVE, [title[1]])
    answered = _row_after(question, context) or _figure_caption(question, context)
    if answered is not None:
        return answered
    # its terms leave out a closing "Give the Chinese wording.": "Chinese" matches covers, not answers
    asked = without_answer_form(question)
    glossed = _glossed(asked, context) if settings.retrieval.gloss_enabled and context.chunks else asked
    english = translatable(question)
    # the ordinal asked ("listed second") says which item, not what it says ("Second sub-item at this level")
    ordinal = asked_ordinal(question)
    said_ordinal = terms(" ".join(_ENGLISH_ORDINAL.findall(question))) if ordinal else frozenset()
    q_plain = terms(asked) - said_ordinal
    q = terms(glossed) - said_ordinal  # a Chinese chunk's units are matched by its words' Chinese too
    if not q_plain or not context.chunks:
        return None
    a = settings.answer
    best_score = max((c.score for c in context.chunks), default=0.0) or 1.0
    entity = _document_terms(q, context)
    # the words naming the document, translated (read by the subject of each source and by the cover rule)
    scope_glosses = _scope_glosses(question, scope_parts(question), context)
    naming = _naming_terms(question, q_plain, context, scope_glosses)
    qw = words(glossed) - said_ordinal
    gloss_only, gloss_words = q - q_plain, qw - words(asked)
    # the question's own words, which a unit in the other language says by what its words mean (负责: "responsible;
    # responsibility"; "average": 平均), beside the question's glosses, which miss many: a translation both ways
    english_terms = {t: stem(t) for t in q_plain if t.isascii() and t.isalpha()} if english else {}
    english_words = {w: stem(w) for w in words(asked)
                     if w.isascii() and terms(w) and terms(w) <= english_terms.keys()}
    chinese_words = frozenset(w for w in words(asked) if len(w) >= 2 and "\u3400" <= w[0]) if not english \
        else frozenset()
    asked_heading, headings_asked = heading_asked(question), set()  # (and symbol list entries asked)
    under_named_section: set[int] = set()  # list items under a section heading the question names
    # a picture asked by its place ("the second of the two ungrouped pictures"): its place among the context's
    # pictures of its section
    pictures = _picture_places(context) if ordinal is not None and _ASKS_PICTURE.search(question) else {}
    # the article a question names ("Article 230") is where its answer is: a unit of another one scores
    # OTHER_ARTICLE_SHARE (第二百三十四条 holds the terms of 二百三十 too)
    asked_articles, other_articles = frozenset(articles_asked(question)), set()
    # so does a table of another number than the one named ("Table 4", not the Table 3 ranked first)
    asked_tables = tables_asked(question)
    other_tables = {order for order, c in enumerate(context.chunks) if asked_tables and c.chunk.chunk_type in GRIDS
                    and table_number(c.chunk.caption) not in asked_tables | {None}}
    symbols = symbols_asked(question)
    # (the chunk whose heading the question writes out, when it asks the n-th paragraph under it)
    under_heading = _heading_written(question, context) \
        if ordinal is not None and _ASKS_PARAGRAPH.search(question) else ""
    # a cover is no answer by the words naming the document, nor by their translation ("核电厂定期安全评价第12部分：
    # 设计" of a Chinese question in a bilingual cover's "Periodic safety review for nuclear power plants")
    naming_only = scope_only_terms(question) | (scope_glosses if glossed is not asked else frozenset())
    # a list of the corpus's files (a SOURCES.md) says nothing of what they say
    catalogues = {c.chunk_id for c in file_lists(question, context.chunks)}
    # a list the chunks before open ("第十七条 职工代表大会工作机构的任务是:" ending the one before, "（一）…" after;
    # "第六十七条 全国人民代表大会常务委员会行使下列职权:" three chunks before "（二十）…", each in the context)
    prose: dict[str, list[str]] = {}
    still_open: dict[tuple[str, int], tuple[str, bool]] = {}
    line_asked = bool(_ASKS_LINE.search(question))
    for c in sorted(context.chunks, key=lambda c: (c.source, c.chunk.chunk_index)):
        # a listing's lines when one is asked ("3: while r ≠ 0 do ▷ We have …"), a flattened pseudocode's steps always
        if c.chunk.chunk_type == CODE and (line_asked or "\n" not in c.chunk.content.strip()):
            prose[c.chunk_id] = _listing_steps(c.chunk.content)
        elif c.chunk.chunk_type not in GRIDS:
            opening, in_item = still_open.get((c.source, c.chunk.chunk_index - 1), ("", False))
            prose[c.chunk_id], *ends = _sentence_units(c.chunk, ordinal is not None, opening, in_item)
            still_open[(c.source, c.chunk.chunk_index)] = tuple(ends)
    labels = row_labels(context.chunks)  # a line of its own right before a table of values ("0°C≤T<5°C")
    articles_open = _articles_open(context) if asked_articles else {}
    contents_asked = bool(ASKS_CONTENTS.search(question))
    # a page or a section number asked of the contents ("on which page does 3.2.2 begin", "是第几节"): an entry answers
    place_in_contents, entries_asked = contents_asked and bool(_ASKS_PLACE.search(question)), set()
    titles_written: set[int] = set()  # of the entries asked, those whose title the question writes whole
    lines_written: set[int] = set()  # a listing's lines holding code the question writes out
    unquoted = _QUOTED_NAME.sub(" ", question)
    caption_asked = bool(_ASKS_CAPTION.search(unquoted) and _NAMES_GRID.search(question))
    header_asked = bool(_ASKS_HEADER.search(unquoted))
    quoted_terms = terms(" ".join(_QUOTED_NAME.findall(question) + _BRACKETED.findall(question)))
    column = _COLUMN_NAMED.search(unquoted) if header_asked else None
    column_head = terms(column.group(1)[-2:] if column.group(1) else column.group(2)) if column else frozenset()
    units: list[_Unit] = []
    rows_written: set[str] = set()  # the row labels of the context's tables the question writes out ("李柯")
    headless: dict[int, str] = {}  # the cell units of those rows naming no column ("CC-SAM — 61.4；49.5；…"), to labels
    for order, c in enumerate(context.chunks):
        if c.chunk_id in catalogues:
            continue
        # the Chinese an English question translates to matches a Chinese chunk only, the English a Chinese
        # one translates to an English or bilingual chunk only: others are matched by the question's own words
        translated = glossed is not asked \
            and (chinese_text(c.chunk.content) if english else english_text(c.chunk.content))
        contents_line = c.chunk.chunk_type == INDEX
        headings = {clean_text(h) for h in c.chunk.section_path.split(" > ") + [c.chunk.title] if h}
        credit = CHUNK_CREDIT * c.score / best_score
        # what names the document is held by each of its units: within it, the sentence restating
        # its title ("《…第12部分：设计》为上述15项标准之一") gains nothing from the question naming it
        subject, foreign = naming[c.source]
        subject_words = {w for w in qw if terms(w) and terms(w) <= subject}
        foreign_words = {w for w in qw if terms(w) and terms(w) <= foreign} \
            | (set() if translated else gloss_words - subject_words)
        foreign = foreign if translated else foreign | (gloss_only - subject)  # its name is held in any language
        # the contents, when asked about, answer by their entries ("3.5 SELECT, INSERT, and UPDATE behavior with RCAC
        # 22"), else by nothing: a cell or a sentence of dotted leaders says nothing of the document
        entries = _contents_entries(c.chunk) if contents_asked else None
        cell = _table_unit(question, c.chunk, subject | foreign, glossed[len(asked):] if translated else "",
                           labels.get((c.source, c.chunk.chunk_index - 1), "")) \
            if a.extractive_table_cells and c.chunk.chunk_type in GRIDS and entries is None else None
        if cell is not None and _TOC_LINE.search(cell.text):  # a contents table ("2.1.6 Change … . . . . | 10")
            continue
        if cell is not None:  # a cell never names whose table it is: its document does ("比亚迪")
            held = entity.get(c.source, set()) | subject
            named_words = words(cell.where) | {w for w in qw if terms(w) and terms(w) <= held}
            units.append(_Unit((terms(cell.where) - foreign) | held, named_words - foreign_words, cell.bonus, credit,
                               order, 0, cell.text, c.chunk_id, False, translated, True))
            if len(cell.label) >= ROW_NAME_MIN_CHARS and cell.label in question and not terms(cell.label) <= held:
                rows_written.add(cell.label)
                if _names_no_column(cell.header):
                    headless[len(units) - 1] = cell.label
        # beside its cell, a table answers with its notes ("注：…", a limit stated under it)
        quoted, lead = entries if entries is not None else table_notes(c.chunk) if cell is not None else \
            prose.get(c.chunk_id) or evidence_units(c.chunk, ordinal is not None), ""
        # (a chunk going on with the article its previous chunk ends in says it in that article)
        article = articles_open.get((c.source, c.chunk.chunk_index - 1), "")
        in_other_article = bool(article) and not asked_articles.intersection(articles_asked(article))
        section = c.chunk.section_path.rsplit(" > ", 1)[-1] if ordinal is not None else ""
        section_named = bool(terms(section)) and terms(section) <= q  # (only a place asked reads it)
        for pos, unit in enumerate(quoted):
            # a part after "；" is said in the setting its sentence's first part gives ("第三季度收入…至38.9
            # 亿元；毛利率同比-1.1 百分点至42.8%；"): it holds those words too
            setting = lead if pos and quoted[pos - 1].endswith(("；", ";")) else ""
            if setting and ordinal is None and _NUMBERED_ITEM.match(unit):
                # a list's numbered item is said under its list's opening line, not in the item before it ("1.
                # 人员管理程序对…作出规定；" then "2. 文件和记录控制程序对…": each names its own procedure); unless
                # an item is asked by its place, which the question may give by the item before it
                opening = _LIST_OPENING.match(setting)
                setting = opening.group(1) if opening else ""
            lead = setting or unit
            # a law's sentence is said in its article ("第十九条 国家发展…。国家举办各种学校，普及初等义务教育…"):
            # it holds the article's number, which a question names it by ("Article 19")
            opened = _ARTICLE.match(unit)
            if opened:
                article = opened.group(0)
                in_other_article = bool(asked_articles) and not asked_articles.intersection(articles_asked(article))
            elif article:
                setting = f"{setting} {article}".strip()
            if _NUMBERED_ENTRY.match(unit):
                # an entry of a numbered reference list is said under its heading ("七、参考资料" / "[2]  HAF 103-2020 …":
                # "which edition of HAF 103 is listed among the reference materials")
                setting = f"{setting} {c.chunk.section_path.rsplit(' > ', 1)[-1]}".strip()
            if ordinal is not None and (item_number(unit) is not None or _BULLET.match(unit) or c.chunk_id in pictures):
                # a list's item (or a picture) asked by its place is said under its section's heading ("the fourth
                # item in section 1.1 (explicit whitespace characters)" of "1.1 显式空白字符表示 / 1. … 4. 带删除线和下划线的空格")
                setting = f"{setting} {section}".strip()
                if section_named:
                    under_named_section.add(len(units))
            cleaned = clean_text(unit)
            is_heading = asked_heading is not None and bool(asked_heading.search(unit))
            # (a list's short item is one: "2. 专题设置")
            # (a contents entry asked for its page may be short: "致谢 19")
            asked_entry = entries is not None and place_in_contents
            no_unit = (len(cleaned) < MIN_SENTENCE_CHARS and not _NUMBERED_ITEM.match(unit) and not asked_entry) \
                or cleaned in headings \
                or _TOC_LINE.search(unit) \
                or (contents_line and not contents_asked and _CONTENTS_ENTRY.match(unit))
            if no_unit and not is_heading:
                continue
            if is_heading:
                headings_asked.add(len(units))
            if line_asked and c.chunk.chunk_type == CODE and _code_written(unit, question):
                lines_written.add(len(units))
            if asked_entry:
                entries_asked.add(len(units))
                if _entry_title_written(unit, question):
                    titles_written.add(len(units))
            restated = unit.endswith(("？", "?")) or unit.startswith(("问：", "问:", "Q:"))
            said_text = _stated(unit, c.chunk.chunk_type)  # a figure's field labels say nothing ("的内容是什么")
            # "非住宅…" holds no "住宅" the question asks about, "销售费用率…" no "销售费用" (unless a rate is asked)
            negated = negated_terms(said_text, q) | (rate_terms(said_text, qw, question) & q)
            unit_words = words(said_text) - {w for w in qw if terms(w) & negated} if negated else words(said_text)
            if setting:
                unit_words |= words(setting)
            if in_other_article:
                other_articles.add(len(units))
            said, said_words = frozenset(), frozenset()
            said_in = f"{setting} {unit}" if setting else unit  # what it says in its setting too
            if translated and english_terms:
                stems = _meanings(said_in, True)
                said = frozenset(t for t, st in english_terms.items() if st in stems) - foreign
                said_words = frozenset(w for w, st in english_words.items() if st in stems) - foreign_words
            elif translated and chinese_words:
                said_words = (chinese_words & _meanings(said_in, False)) - foreign_words
                said = terms(" ".join(said_words)) - foreign
            units.append(_Unit(((terms(said_text) - negated) | terms(setting) | subject) - foreign,
                               (unit_words | subject_words) - foreign_words,
                               -1.0 if restated else 0.0, credit, order, pos, unit, c.chunk_id,
                               c.chunk.chunk_type not in GRIDS or " | " not in unit, translated, said=said,
                               said_words=said_words))
        # a symbol list's entry for the symbol asked is its line, whatever PDF line joining made of the list;
        # the n-th line under the heading the question writes out is the n-th paragraph asked ("标题“1 Section 1”下的
        # 第二段文字")
        if symbols:
            lines = [line for line in evidence_text(c.chunk).split("\n") if defines_symbol(line, symbols)]
        else:
            lines = [line for line in [_line_at(c.chunk, ordinal)] if line] if c.chunk_id == under_heading else []
        for line in lines:
            headings_asked.add(len(units))
            units.append(_Unit(terms(line) | subject, words(line) | subject_words, 0.0, credit, order,
                               len(quoted), line.strip(), c.chunk_id, False, translated))
        # a chart's or table's caption, asked for ("the caption of the chart that plots Series 7, Series 5 and
        # Series 6"), told from the other grids' by their cells (not by the caption's own words: "chart")
        caption = (c.chunk.caption or "").strip() if caption_asked and c.chunk.chunk_type in GRIDS else ""
        if caption:
            headings_asked.add(len(units))
            cells, cell_words = terms(c.chunk.content) - terms(caption), words(c.chunk.content) - words(caption)
            units.append(_Unit((cells - foreign) | subject, (cell_words | subject_words) - foreign_words, 0.0,
                               credit, order, 0, caption, c.chunk_id, False, translated))
        for k, (head, cells) in enumerate(columns(c.chunk.content) if header_asked and c.chunk.chunk_type in GRIDS
                                          else []):
            headings_asked.add(len(units))
            named_cells = terms(cells) & quoted_terms
            units.append(_Unit(((terms(head) | named_cells) - foreign) | subject,
                               (words(head) | {w for w in words(cells) if terms(w) & named_cells} | subject_words)
                               - foreign_words, CELL_BONUS if column_head and column_head <= terms(head) else 0.0,
                               credit, order, k, head, c.chunk_id, False, translated))
    # bigrams match across word boundaries ("自然人下落" → "人下"), so a unit is also scored on the
    # question's words ("死亡" decides between the articles on 失踪 and on 死亡, where bigrams tie), those
    # naming what is asked counting double ("存货周转天数" of "…的存货周转天数是多少天")
    # the Chinese an English question writes out in brackets ("compensation (抚恤)", "a set-off (抵销)") quotes its
    # document: those words name what is asked as surely as its focus does
    # (not those naming the document, "the drafting notes (编制说明)", nor a table, "the 利润表 projection table")
    written = " ".join(w for m in _HAN_BRACKETED.finditer(_NAMED_TABLE.sub(" ", question)) for w in m.groups() if w) \
        if english else ""
    written_terms = terms(written) - naming_only
    bigram_share = _shares(q, [u.terms for u in units], written_terms, gloss_only)
    about = focus(question)
    word_share = _shares(qw, [u.words for u in units],
                         words(about) | {w for w in words(written) if terms(w) & written_terms}, gloss_words)
    # "主管会计工作负责人:周亚琳": a unit stating the asked-about thing as a label with its value, or defining it
    # ("最新安全实践指反映…的实践或方法" of "“最新安全实践”指的是什么"); a glossary line, it and a short phrase ("NNSA
    # 国家核安全局", not the sentence "JAXR API是在JCP下开发的，…")
    named = re.escape(about.strip("“”\"'‘’「」《》"))
    labelled = re.compile(rf"{named}\s*(?:[:：]|(?:是|系)?指(?!出))\s*\S"
                          rf"|^\s*{named}\s+[^，。,;；:：]{{1,{GLOSSARY_MAX_CHARS}}}$") if len(named) >= 2 else None
    after_anchor = _after_anchor(question, units)
    # (a label the prose of several chunks says is the passage's topic, not a row: it picks no sentence; a row's
    # note under its table says it in that one chunk, "注3:此数不包括夏佐全先生…")
    # nor, naming no column, is its row a cell asked ("CC-SAM — 61.4；49.5；…" of "CC-SAM论文的实验用的什么GPU")
    topic_rows: set[int] = set()
    if rows_written:
        topics = _topics(units, lambda text: [label for label in rows_written if _says_name(text, label)])
        rows_written -= topics
        topic_rows = {i for i, label in headless.items() if label in topics}
    aside, set_aside = _set_aside(question, context), set()  # (and the units stating it)
    bracketed = written.split()
    in_script = _script_asked(question)
    codes, sections = _codes_written(question), _sections_written(question)
    # a code the prose of several chunks says is what the passage is about, as a row label is ("DB2" of "IBM关于DB2
    # for i行列访问控制的红皮书"), not the line asked
    topic_codes = _topics(units, codes.findall) if codes is not None else set()
    cited = _cited_entry(question)
    asked_years = _YEAR_WRITTEN.findall(question)
    measured = measure_asked(question)
    put = _CONDITION_PUT.search(question)
    condition = put.group(1) if put and not english else ""
    example_asked = bool(_ASKS_EXAMPLE.search(question))
    scored = []
    for i, (found, found_words, bonus, credit, order, pos, unit, chunk_id, sentence, translated, cell, said,
            said_words) in enumerate(units):
        shared = found & q
        # the list's item after the one named needs none of the question's words
        placed_after = after_anchor.get(i, 0.0) > 0 and bool(_NUMBERED_ITEM.match(unit))
        # a list's item asked by its place needs few of them: its list's opening line says what it is
        at_place = ordinal is not None and sentence and (_is_item(units, i, ordinal) or _enumerates(unit, ordinal)
                                                         or (pos == 0 and _at_picture_place(pictures.get(chunk_id),
                                                                                            ordinal)))
        if i in topic_rows:
            continue
        # (the item under the section the question names by its heading: "1.3节“多级列表”中，第一个项目符号")
        if shared <= naming_only and not cell and i not in headings_asked and not placed_after \
                and not (at_place and i in under_named_section):
            continue  # it holds only the words naming the document: a cover, a title restated
        # the share of the question's own terms: a Chinese unit holds translations in their stead (how many
        # of a word's glosses the context uses, and so how large q is, says nothing of the unit)
        # a cell whose row the question writes out and whose column it names needs no more of its terms (a
        # question quoting an alloy's nominal composition "Ti-5.8Al-4Sn-3.5Zr-…" asks TA33's Ta cell)
        # (a unit in the other language holds the question's terms it says in its own: "Treat all of these as …"
        # says the 一律 and 对待 of "要求把这些文档一律当作什么来对待")
        # (a contents entry asked for its page holds little beyond the entry's title: "Preface xi"; a listing's line
        # the question writes out, its comment: "while 𝑟 ≠ 0 do ▷ We have the answer if r is 0")
        if len(shared | (said & q_plain)) / len(q_plain) < a.extractive_min_overlap and i not in headings_asked \
                and i not in entries_asked and i not in lines_written and not (at_place or placed_after) \
                and not (cell and bonus >= 2 * CELL_BONUS):
            continue
        subject = naming[context.chunks[order].source][0]
        if not cell:
            # the words naming the document are no evidence in a passage writing them out (a cover, the number it
            # goes by restated) unless they are its document's subject, which each of its units holds alike
            shared -= naming_only - subject
        hit = (bigram_share(shared) + word_share(found_words & qw)) / 2 if qw else bigram_share(shared)
        said = (said & q) - shared - naming_only
        if said:  # what its words mean in the question's language, a guess as a gloss is
            hit += GLOSS_WEIGHT * (bigram_share(said) + word_share((said_words & qw) - found_words)) / 2
        if aside and shared - naming_only - subject <= aside:
            hit *= 0.5  # it states what the question sets aside ("公民在法律面前一律平等" of "besides … equal before the law")
            set_aside.add(i)
        if in_script is not None and not in_script(unit):
            hit *= OTHER_SCRIPT_SHARE
        if i in other_articles or order in other_tables:
            hit *= OTHER_ARTICLE_SHARE
        if sentence and rows_written and not any(label in unit for label in rows_written):
            hit *= UNNAMED_ROW_SHARE
        code = codes.search(unit) if codes is not None and len(unit) <= CODE_LINE_CHARS else None
        if code is not None and code.group() not in topic_codes or sections is not None and sections.match(unit):
            hit += CODE_BONUS
        if i in headings_asked or i in entries_asked or (cited is not None and cited.match(unit)):
            hit += HEADING_BONUS + ENTRY_TITLE_BONUS * (i in titles_written)
        stated = _stated(unit, context.chunks[order].chunk.chunk_type)  # ("内容：卡通人物" labels no "内容" asked)
        if sentence and (labelled is not None and (labelled.search(stated) or _labels_part_of(stated, about))
                         or _label_named(stated, q - rate_terms(stated, qw, question), naming_only, asked_years)):
            hit += LABEL_BONUS
        if at_place:
            hit += ORDINAL_BONUS
        if i in lines_written:
            hit += WRITTEN_LINE_BONUS
        if measured is not None and sentence and measured.search(unit):
            hit += MEASURE_BONUS
        if condition and sentence and _states_condition(unit, condition):
            hit += CONDITION_BONUS
        if example_asked and sentence and _GIVES_EXAMPLE.search(unit):
            hit += EXAMPLE_BONUS
        if bracketed and any(term in unit for term in bracketed):
            hit += BRACKETED_TERM_BONUS
        if i in after_anchor:
            hit += after_anchor[i]
        hit = hit * 0.25 if bonus < 0 else hit + bonus  # a restated question holds every term: a quarter
        if a.extractive_clauses and sentence:
            unit = shortest_clause(glossed if translated else question, unit)
        scored.append((hit + credit, -order, -pos, unit[:MAX_SENTENCE_CHARS], chunk_id, i))
    if not scored:
        return None
    scored = _with_relatedness(asked, english, units, scored, similarity, a.extractive_similarity_weight)
    scored.sort(reverse=True)
    picked, seen = [], set()
    for score, _, _, unit, chunk_id, _ in scored:
        if picked and score < a.extractive_tie_ratio * scored[0][0]:
            break  # a further unit only when it nearly ties with the best: the reader gets both
        if unit not in seen:
            seen.add(unit)
            picked.append((unit, chunk_id))
        if len(picked) == a.extractive_max_sentences:
            break
    if len(scored) > 1 and scored[1][0] >= ADJACENT_TIE_RATIO * scored[0][0]:
        # the runner-up is the other clause of the best one's sentence ("合伙合同没有约定…的，由合伙人协商决定；" then
        # "协商不成的，由合伙人按照实缴出资比例分配、分担；"): the sentence is quoted whole, in its order
        first, second = units[scored[0][-1]], units[scored[1][-1]]
        step = scored[1][-1] - scored[0][-1]
        earlier = first if step > 0 else second
        if abs(step) == 1 and first.sentence and second.sentence and first.order == second.order \
                and earlier.text.rstrip().endswith(("；", ";")) and scored[1][3] not in seen:
            picked.insert(len(picked) if step > 0 else 0, (scored[1][3], scored[1][4]))
    opener = units[scored[0][-1]]
    if opener.sentence and (opener.text.rstrip().endswith((":", "："))
                            or (ordinal is None and _OPENS_LIST_ITEM.search(opener.text))):
        # a line opening a list ("The following CL commands can be used to …:", or quoted with its first item
        # when no item is asked by its place) answers with the item of its list the question asks for, in its chunk
        # or the next one
        item = next(((unit, cid) for _, _, _, unit, cid, i in scored[1:]
                     if _in_list_of(units[i], opener, context)), None)
        if item is not None and item not in picked:
            picked.append(item)
    asked = answers_what_is_asked(question)
    if asked is not None and not any(asked(unit) for unit, _ in picked):
        # the question asks a number, a date, a code or an address the quoted units lack: add the sentence right
        # after the best one when it holds it (a datasheet states the setting, "stored at full charge for 30 days",
        # then the value; a standard the rule, then "按 GB/T 8170 … 修约"), else the best unit holding one when it
        # scores at least half the best ("货币资金 — 期初余额: …" after a value-less line)
        holding = None
        best = scored[0][-1]
        if best + 1 < len(units):
            first, after = units[best], units[best + 1]
            if first.sentence and after.sentence and after.order == first.order and asked(after.text):
                holding = (after.text[:MAX_SENTENCE_CHARS], after.chunk_id)
        if holding is None:
            holding = next(((unit, cid) for score, _, _, unit, cid, _ in scored
                            if score >= SECOND_UNIT_RATIO * scored[0][0] and asked(unit)), None)
        if holding is not None:
            picked.append(holding)
    best = scored[0][-1]
    after = units[best + 1] if best + 1 < len(units) and units[best].sentence and units[best + 1].sentence \
        and units[best + 1].order == units[best].order else None
    # the clause the question names by its number ("safety precaution 5.4") is quoted whole when its first sentence is
    # the best: that may only set the scene ("5.4 Connect … the label." then "Reverse charging is prohibited."), unless
    # it holds the number or code asked
    rest = _rest_of_clause(units, best) if len(picked) == 1 and sections is not None \
        and sections.match(units[best].text) and (asked is None or not asked(units[best].text)) else []
    if rest:
        picked += [(u.text[:MAX_SENTENCE_CHARS], u.chunk_id) for u in rest]
    elif len(picked) == 1 and after is not None \
            and (len(words(_ARTICLE.sub("", units[best].text)) - words(glossed)) <= PREMISE_NEW_WORDS
                 or best in set_aside):
        # the best sentence is the question's own premise ("设立居住权的，应当向登记机构申请居住权登记。" of "设立居住权应当
        # 向登记机构申请居住权登记，居住权自什么时候设立？"), or what it sets aside ("besides the rule that trials are held in
        # public": "人民法院审理案件，…一律公开进行。"): what it asks follows it
        picked.append((after.text[:MAX_SENTENCE_CHARS], after.chunk_id))
    elif len(picked) == 1 and after is not None:
        # the sentence after the best holds what the question names as asked far more than the best does ("标准放电是在
        # 什么环境条件下" of "放电容量 ≥137.2Ah 。" then "…-20°C 标准放电(无风环境)。"): it says the rest
        asked_terms = (terms(about) & q) - naming_only
        held, held_after = len(units[best].terms & asked_terms), len(after.terms & asked_terms)
        # or it holds question terms the best lacks ("…可以征用组织、个人的不动产或者动产。" then "被征用的不动产或者动产
        # 使用后，应当返还被征用人。" of "…征用的不动产或者动产，使用后应当怎么处理？"): the best states the premise, it
        # the rest; not when it opens another article or numbered section, which says something else. Terms the
        # passage states before the best (in its chunk or the one before it) are the premise too ("besides declaring
        # all citizens equal before the law": "公民在法律面前一律平等。" two sentences before the best)
        def completes() -> bool:
            if _ANOTHER_PART.match(after.text):
                return False
            chunk = context.chunks[units[best].order]
            before = {order for order, c in enumerate(context.chunks)
                      if c.source == chunk.source and c.chunk.chunk_index == chunk.chunk.chunk_index - 1}
            stated = set().union(*(u.terms | u.said for j, u in enumerate(units) if u.sentence
                                   and (u.order == units[best].order and j <= best or u.order in before)))
            return len(((after.terms | after.said) & q) - stated - naming_only) >= COMPLETING_TERMS

        if held_after >= max(2 * held, held + FOCUS_TERMS_MORE) or completes():
            picked.append((after.text[:MAX_SENTENCE_CHARS], after.chunk_id))
    # a unit another quoted one holds is said once ("…如下： 1. …；" quotes its list's first item)
    quoted = [unit for unit, _ in picked]
    picked = [(unit, cid) for k, (unit, cid) in enumerate(picked)
              if not any(j != k and unit in other and (len(other) > len(unit) or j < k)
                         for j, other in enumerate(quoted))]
    if _ASKS_COVERING_SECTION.search(question):
        covering = context.chunks[units[best].order]
        heading = covering.chunk.section_path.rsplit(" > ", 1)[-1].strip()
        if heading and clean_text(heading) not in clean_text(picked[0][0]):
            picked.insert(0, (heading, covering.chunk_id))
    text = "".join(f"{s}[ref:{cid}]" for s, cid in picked)
    return Answer(text, EXTRACTIVE, list(dict.fromkeys(cid for _, cid in picked)))


# ---------------------------------------------------------------- the answerer


class SentenceSimilarity:
    """Cosines of a question to evidence units by the embedding model (its `embed_queries`, e5's "query: "
    on both sides: a unit is matched as a statement of the question's meaning), each text encoded once
    per run: a batch reads the same chunks' sentences for many questions. The model is loaded at the
    first call (`encoder`: what gives it, the retriever's own in a run); when it cannot be, the answer is
    scored without it (logged once)."""

    MAX_CACHED = 20_000  # texts (x 384 float32: 30 MB for e5-small)

    def __init__(self, encoder: Callable[[], object]):
        self._encoder_of = encoder
        self._encoder = None
        self._failed = False
        self._vectors: dict[str, np.ndarray] = {}

    def __call__(self, question: str, texts: Sequence[str]) -> np.ndarray:
        if self._encoder is None and not self._failed:
            try:
                self._encoder = self._encoder_of()
            except Exception as exc:  # noqa: BLE001 - the answer is still scored by its words
                self._failed = True
                log.warning("offline answers scored without sentence embeddings: %s: %s", type(exc).__name__, exc)
        if self._encoder is None:
            return np.zeros(len(texts), dtype=np.float32)
        # read into a dict of its own: a batch answering on another thread may clear the cache meanwhile
        vectors = {t: v for t in (question, *texts) if (v := self._vectors.get(t)) is not None}
        missing = [t for t in dict.fromkeys((question, *texts)) if t not in vectors]
        if missing:
            vectors.update(zip(missing, self._encoder.embed_queries(missing)))
            if len(self._vectors) + len(missing) > self.MAX_CACHED:
                self._vectors.clear()
            self._vectors.update((t, vectors[t]) for t in missing)
        return np.stack([vectors[t] for t in texts]) @ vectors[question]


class Answerer:
    """Answers questions from their context: the LLM when one is configured, else extractively
    (`encoder`: gives the embedding model the extractive answer reads other-language sentences with,
    default the configured one's query encoder)."""

    def __init__(self, settings: Settings, client=None, encoder: Callable[[], object] | None = None):
        from tasks.common.llm import ChatClient
        from tasks.index.query_encoder import load_query_encoder

        self.settings = settings
        self.similarity = SentenceSimilarity(encoder or (lambda: load_query_encoder(settings)))
        self.model = settings.llm.llm_model
        if client is None and settings.llm.llm_base_url.strip() and settings.llm.llm_model:
            client = ChatClient.from_env(settings.llm.llm_base_url, read_timeout_s=settings.runtime.llm_timeout_s,
                                         max_retries=settings.runtime.llm_max_retries)
        self.client = client if self.model else None

    @property
    def uses_llm(self) -> bool:
        return self.client is not None

    def answer(self, question: str, context: Context, instruction: str = "", *, insufficient: bool = False) -> Answer:
        started = time.perf_counter()
        out = self._answer(question, context, instruction, insufficient)
        out.ms = (time.perf_counter() - started) * 1000
        return out

    def _answer(self, question: str, context: Context, instruction: str, insufficient: bool) -> Answer:
        if insufficient or not context.chunks:
            return Answer(NOT_FOUND, INSUFFICIENT, [])
        error = ""
        if self.client is not None:
            try:
                raw = self.client.chat(build_messages(question, context, instruction), model=self.model,
                                       max_tokens=self.settings.answer.answer_max_tokens)
            except LLMError as exc:  # recorded per question; the answer falls back to extraction
                error = f"{type(exc).__name__}: {exc}"[:500]
            else:
                text, cited, dropped = validate_citations(raw, context)
                return Answer(text, LLM, cited, dropped_citations=dropped)
        extracted = extractive_answer(question, context, self.settings, self.similarity)
        if extracted is None:
            return Answer(NOT_FOUND, INSUFFICIENT, [], error=error)
        extracted.error = error
        return extracted

    def answer_many(self, jobs: Sequence[tuple[str, Context, str, bool]]) -> list[Answer]:
        """Answer (question, context, instruction, insufficient) jobs; LLM calls run
        `llm_concurrency` at a time (they wait on the network, not the CPU)."""
        if self.client is None or len(jobs) < 2:
            return [self.answer(q, c, i, insufficient=ins) for q, c, i, ins in jobs]
        with ThreadPoolExecutor(max_workers=max(1, self.settings.runtime.llm_concurrency),
                                thread_name_prefix="kbflow-answer") as pool:
            return list(pool.map(lambda job: self.answer(job[0], job[1], job[2], insufficient=job[3]), jobs))


# ---------------------------------------------------------------- the record


def gold_rank(question: Question, retrieval: Retrieval) -> int | None:
    for rank, c in enumerate(retrieval.ranked, 1):
        if c.chunk and question.is_gold(c.chunk_id, c.chunk.source, c.chunk.page_start, c.chunk.page_end):
            return rank
    return None


def result_record(run_id: str, question: Question, retrieval: Retrieval, context: Context, answer: Answer,
                  *, context_ms: float, total_ms: float) -> QAResult:
    labelled = question.labelled
    in_context = any(c.chunk and question.is_gold(c.chunk_id, c.chunk.source, c.chunk.page_start, c.chunk.page_end)
                     for c in context.chunks) if labelled else None
    sources = list(dict.fromkeys(c.source for c in context.chunks))
    t = retrieval.timings
    return QAResult(
        run_id=run_id, qid=question.qid, question=question.question, answer=answer.text, answer_mode=answer.mode,
        citations=answer.citations, context_chunk_ids=context.chunk_ids,
        retrieved_chunk_ids=[c.chunk_id for c in retrieval.ranked], top_sources=sources,
        confidence=round(confidence(retrieval), 6), score_scale=retrieval.score_scale,
        insufficient=answer.mode == INSUFFICIENT, widened=retrieval.widened, context_chars=context.chars,
        expected_answers=question.answers, gold_rank=gold_rank(question, retrieval) if labelled else None,
        gold_in_context=in_context, error=answer.error,
        recall_ms=round(t.get("recall", 0.0) * 1000, 3), fusion_ms=round(t.get("fusion", 0.0) * 1000, 3),
        rerank_ms=round(t.get("rerank", 0.0) * 1000, 3), rescue_ms=round(t.get("rescue", 0.0) * 1000, 3),
        context_ms=round(context_ms, 3), answer_ms=round(answer.ms, 3), total_ms=round(total_ms, 3),
        rerank_fallback=retrieval.rerank_fallback)
