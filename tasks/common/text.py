"""Text helpers shared by ingest and QA: the jieba tokenizer that makes BM25 terms (chunks at
ingest and questions at query time go through the same function, so both sides match) and the
character bigrams the rescues and the extractive answerer compare text by."""
from __future__ import annotations

import functools
import logging
import os
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import jieba

from schemas.errors import SettingsFileMissingError

# Part of the term definition: chunk Parquet tokenized under another version must be re-tokenized
# (include this in the chunk stage's cache key). Bump it when the stop words or the mode change.
TOKENIZER_VERSION = "jieba-0.42/search-nohmm/dotted-numbers/nfkc-lower/stop-1/spaced-words"

# jieba's search mode without HMM: the precise dictionary cut plus the 2-/3-char dictionary words
# inside long words ("中华人民共和国宪法" also yields "宪法", "共和国"), and no HMM new-word guesses,
# which cut the same unknown name differently in a short question and in a long passage. Measured
# on the bench's 20k chunks / 6,987 questions (bench/bm25_vs_rank_bm25.py --modes), hit@10 / MRR@10:
# search no-HMM .981/.928, precise no-HMM .981/.929, full .982/.929 (a tie: ±3 questions), while
# HMM costs .5 point of hit@10 (search .977, precise .976). Search mode is best on the hard rgb set
# (hit@10 .975 vs .951 precise, .963 full) and, unlike full mode, keeps the whole word as a term.

# Function words and question words: frequent, carry no topic, and question words appear in the
# queries but almost never in the passages. Kept small on purpose: BM25's idf handles the rest.
# (On the bench: MRR@10 .929 with this list, .928 without the question words, .923 with no list.)
STOP_WORDS: frozenset[str] = frozenset("""
的 地 得 了 着 过 是 在 和 与 及 或 而 且 并 也 都 就 又 还 被 把 将 对 于 从 向 以 之 其 此 该 所 为 因
这 那 这个 那个 这些 那些 这样 那样 这里 那里 它 它们 他们 她们 我们 你们 我 你 他 她 们 个 一个 一种
吗 呢 吧 啊 呀 哦 嘛 么 啦 哪 哪些 哪个 哪里 哪儿 什么 怎么 怎样 怎么样 如何 为什么 为何 谁 多少 几
以及 或者 而且 但是 但 因为 所以 如果 虽然 由于 因此 并且 然后 其中 之一 等 等等 即 既 则 若 已 已经
a an the of to in on at for by with from into about as and or but nor not no so than then too very
is are was were be been being am do does did done has have had having it its this that these those
there here which what who whom whose how when where why will would shall should can could may might
must i you he she we they me him her us them my your his our their
""".split())

# jieba prints its start-up lines through its own stderr handler and again through the root logger:
# once, at debug level, is enough (`kbflow --debug` shows them).
jieba.default_logger.removeHandler(jieba.log_console)
jieba.default_logger.setLevel(logging.NOTSET)

_tokenizers: dict[str, jieba.Tokenizer] = {}
_tokenizers_lock = threading.Lock()


def _jieba(user_dict: str | os.PathLike | None) -> jieba.Tokenizer:
    """One jieba tokenizer per user-dictionary path, loaded once per process.

    A private `jieba.Tokenizer` rather than the global `jieba.load_userdict`: a user dictionary
    loaded for one knowledge base must not change how anything else in the process is cut."""
    key = str(Path(user_dict).expanduser().resolve()) if user_dict else ""
    with _tokenizers_lock:
        tok = _tokenizers.get(key)
        if tok is None:
            if key and not Path(key).is_file():
                raise SettingsFileMissingError(f"jieba user dictionary not found: {key}")
            tok = jieba.Tokenizer()
            tok.initialize()  # build the prefix dict now, not on the first cut of a worker thread
            if key:
                tok.load_userdict(key)
            _tokenizers[key] = tok
    return tok


def _is_noise(term: str) -> bool:
    """True for whitespace/punctuation/symbol-only terms (numbers and letters are kept)."""
    return all(unicodedata.category(ch)[0] in "PSZC" for ch in term)


CJK_RANGE = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # the CJK ideographs, for a character class
# a word letter-spaced as a standard's headings are ("前  言", "目  次", "附　录"), or a PDF's spaced title: single
# Chinese characters with only spaces between them
_SPACED_WORD = re.compile(rf"(?<![{CJK_RANGE}])[{CJK_RANGE}](?:[ \t]+[{CJK_RANGE}](?![{CJK_RANGE}]))+")


def _normalize(text: str) -> str:
    # NFKC: full-width letters/digits/punctuation (ＡＢＣ２０２３，) become half-width, so jieba
    # groups them as it does ASCII and "ＧＰＴ" and "GPT" are the same term; its ideographic and em
    # spaces become spaces, which a letter-spaced word loses, so "前  言" is the term 前言 a question asks by.
    normal = unicodedata.normalize("NFKC", text)
    return _SPACED_WORD.sub(lambda m: re.sub(r"[ \t]+", "", m.group()), normal)


# jieba without HMM cuts "3.2V" into "3", "2v": decimals, versions, dotted dates stay one term
_DOTTED_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)+")


def _pieces(text: str, cut: Callable[[str], Iterable[str]]) -> Iterator[str]:
    """`cut` (a jieba mode) over the text between dotted numbers, which are kept whole."""
    pos = 0
    for m in _DOTTED_NUMBER.finditer(text):
        if m.start() > pos:
            yield from cut(text[pos:m.start()])
        yield m.group()
        pos = m.end()
    if pos < len(text):
        yield from cut(text[pos:])


def _terms(pieces: Iterable[str]) -> list[str]:
    # lower-case after cutting: jieba (and a user dictionary) may list mixed-case words like "GPT4o"
    terms = (p.strip().lower() for p in pieces)
    return [t for t in terms if t and t not in STOP_WORDS and not _is_noise(t)]


def tokenize(text: str, user_dict: str | os.PathLike | None = None) -> list[str]:
    """BM25 terms of `text`: jieba search-mode cut (no HMM) of the NFKC-normalized text, lower-cased,
    without stop words, punctuation or whitespace; numbers kept ("2023", "3.2").
    `user_dict`: a jieba user dictionary file (one "word [freq] [tag]" a line)."""
    if not text:
        return []
    tok = _jieba(user_dict or None)
    return _terms(_pieces(_normalize(text), lambda part: tok.cut_for_search(part, HMM=False)))


# a symbol written with its subscript, TeX's way ("h_T", "I_{ij}"), which a PDF's text layer runs together ("ℎ𝑇": hT)
_SUBSCRIPTED = re.compile(r"(?<![A-Za-z0-9])([A-Za-z])_\{?([A-Za-z0-9]{1,3})\}?(?![A-Za-z0-9])")


def subscripted_symbols(text: str) -> list[str]:
    """The BM25 terms of the subscripted symbols `text` writes TeX's way, as a symbol list's line sets them
    ("h_T" → "ht", "I_{ij}" → "iij"); `tokenize` reads "h_T" as "h" and "t"."""
    return [(base + sub).lower() for base, sub in _SUBSCRIPTED.findall(text)]


def tokenize_many(texts: Iterable[str], user_dict: str | os.PathLike | None = None) -> list[list[str]]:
    return [tokenize(t, user_dict) for t in texts]



_MARKDOWN = re.compile(r"[#*`>_~|\[\]()!]+")


class _Dropped(dict):
    """A `str.translate` table deleting punctuation, separators, symbols and control characters (Unicode
    categories P, Z, S, C), each character's category looked up once (0.23 s instead of 0.33 s for 2,000
    chunks of the bench KB; the rescues clean every new candidate of a batch question)."""

    def __missing__(self, code: int) -> int | None:
        self[code] = None if unicodedata.category(chr(code))[0] in "PZSC" else code
        return self[code]


_DROPPED = _Dropped()


@functools.lru_cache(maxsize=8192)  # batch QA cleans the same candidate chunks for question after question
def clean_text(text: str) -> str:
    """Text without markdown marks, punctuation and spaces, lower-cased (NFKC): what bigrams are cut from."""
    return _MARKDOWN.sub("", unicodedata.normalize("NFKC", text or "")).lower().translate(_DROPPED)


def bigrams(text: str) -> set[str]:
    """The set of consecutive character pairs of the cleaned text (Chinese needs no word cut here)."""
    t = clean_text(text)
    return {t[i:i + 2] for i in range(len(t) - 1)}


def bigram_hit_rate(query_bigrams: set[str], text: str) -> float:
    """Share of the question's bigrams that occur in `text`."""
    if not query_bigrams:
        return 0.0
    t = clean_text(text)
    return sum(1 for b in query_bigrams if b in t) / len(query_bigrams)


# MinerU's pipeline writes a quantity in running text as inline LaTeX, a space between every character
# ("$2 5 { \pm } 3 ~ ^ { \circ } \mathrm { C }$", "$3 0 \mathrm { s }$"): neither BM25, nor a reader, nor
# an answer matching "30s" sees the number in it
_INLINE_MATH = re.compile(r"\$([^$\n]{1,120})\$")
_MATH_SYMBOLS = {"pm": "±", "circ": "°", "leq": "≤", "le": "≤", "geq": "≥", "ge": "≥", "sim": "~", "%": "%",
                 "times": "×", "cdot": "·", "approx": "≈"}
_MATH_SYMBOL = re.compile(r"\\(pm|circ|leq|le|geq|ge|sim|%|times|cdot|approx)(?![a-zA-Z])")
_MATH_STYLE = re.compile(r"\\(?:mathrm|textrm|mathbf|boldsymbol|bf|rm|small|text)(?![a-zA-Z])")
_QUANTITY = re.compile(r"[0-9.,A-Za-z±°≤≥<>~%×·≈+\-/‰]*[0-9][0-9.,A-Za-z±°≤≥<>~%×·≈+\-/‰]*")
_LONG_WORD = re.compile(r"[A-Za-z]{5,}")
_LATEX_MARK = re.compile(r"[\\{}^_]")
_EMPTY_BASE = re.compile(r"\{\s*\}\s*_")
_SCRIPT = re.compile(r"\^\s*\{?\s*[^\s{°]|_")  # a power or an index, not a degree sign


def plain_quantities(text: str) -> str:
    """`text` with each inline-math quantity written plainly ("25±3°C", "30s", "≥196Ah"); a formula
    (anything but digits, unit letters and the symbols of a quantity) stays as it is."""
    def plain(m: re.Match) -> str:
        if not _LATEX_MARK.search(m.group(1)):  # "costs $5 and $10": dollars, not math
            return m.group(0)
        body = _MATH_STYLE.sub("", m.group(1).replace("~", " ").replace("\\ ", " "))
        body = _MATH_SYMBOL.sub(lambda k: _MATH_SYMBOLS[k.group(1)], body)
        body = _EMPTY_BASE.sub("", body)  # "{ } _ { - 2 0 }": MinerU's subscript of nothing
        if _SCRIPT.search(body):  # "mc^2", "a_{n}": a formula
            return m.group(0)
        body = re.sub(r"[\s{}^]", "", body)
        return body if _QUANTITY.fullmatch(body) and not _LONG_WORD.search(body) else m.group(0)
    return _INLINE_MATH.sub(plain, text) if "$" in (text or "") else text
