"""Is a PDF page's text layer text? The page-level decision between MinerU flash and OCR.

A page is OCR'd when it has no text layer (a scan: little or no extractable text, yet something is
drawn) or when its layer is not text. "Not text" is measured on the layer's characters, whitespace
aside:
- broken characters: U+FFFD, private-use code points, control characters and the characters
  PDFium flags as having no Unicode mapping; in real text they are a few per page (TeX formula
  bracket pieces), in a broken font map they are most of it;
- symbols: ASCII symbols that prose rarely uses (`!"#$%&'*+/<=>?@[\\]^`{|}~`); a font whose glyph
  codes are read as ASCII (the GB/T 3620.1 tables: `"# $% &# ' () *+`) is mostly these;
- words: the share of the letters that form words. Chinese: characters inside multi-character
  words of jieba's dictionary (prose: ≥ 0.5; characters drawn at random from a broken map: low).
  Latin: letters in tokens cased like words and holding a vowel (`WUDWqPnQyQnPp…` is not).
A page is "not text" when symbols exceed 0.2, or broken characters exceed 0.6, or few letters
form words (< 0.4) while some other signal is up (broken > 0.05 or symbols > 0.1). The word share
never decides alone: the ucasthesis guide has a page of rare characters on purpose (words 0.05) and
OCR would read it no better. Set between the pages of the real PDFs in ../shared/data/docs
(tests/tasks/ingest/test_ocr.py checks both sides): every page of the clean ones scores symbols
≤ 0.11, broken ≤ 0.15 (formula pieces in the pumpkin book; 0.38 on one redp5110 page whose words
are fine, 0.99); the GB/T 3620.1 table pages score symbols 0.47–0.72 and broken ≥ 0.97.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

RULE_VERSION = "1"
MIN_TEXT_CHARS = 20  # fewer characters than this: the page has no text layer to speak of
MAX_SYMBOL_SHARE = 0.20
MAX_BROKEN_SHARE = 0.60
MIN_WORD_SHARE = 0.40
WEAK_BROKEN_SHARE = 0.05  # with few words: a second signal that the layer is not text
WEAK_SYMBOL_SHARE = 0.10
MIN_LETTERS_FOR_WORDS = 40  # the word share is judged only on pages with this many letters
BLANK_PIXEL_SPREAD = 8  # a thumbnail whose darkest pixel is within this of white is a blank page

_SYMBOLS = frozenset("!\"#$%&'*+/<=>?@[\\]^`{|}~")
_LATIN_TOKEN = re.compile(r"[A-Za-z]{3,}")
_WORD_SHAPE = re.compile(r"^(?:[A-Z]?[a-z]+|[A-Z]+s?)$")
_VOWEL = re.compile(r"[aeiouyAEIOUY]")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


@dataclass(frozen=True)
class PageText:
    page_idx: int
    chars: int  # non-whitespace characters in the layer
    broken: float  # share of broken characters
    symbols: float  # share of rare ASCII symbols
    words: float  # share of letters that form words (1.0 when there are too few letters to judge)
    verdict: str  # "text", "blank", "no_text", "not_text"

    @property
    def needs_ocr(self) -> bool:
        return self.verdict in ("no_text", "not_text")

    def as_dict(self) -> dict:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in asdict(self).items()}


@lru_cache(maxsize=1)
def _dictionary() -> dict[str, int]:
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba.dt.FREQ


def _is_broken(ch: str) -> bool:
    code = ord(ch)
    return (ch == "\ufffd" or 0xE000 <= code <= 0xF8FF or code >= 0xF0000
            or unicodedata.category(ch) == "Cc")


def word_share(text: str) -> tuple[float, int]:
    """(share of letters that form words, letters counted) over CJK characters and Latin letters."""
    import jieba

    freq = _dictionary()
    in_words = letters = 0
    for run in _CJK.findall(text):
        letters += len(run)
        in_words += sum(len(w) for w in jieba.lcut(run, HMM=False) if len(w) > 1 and freq.get(w))
    for token in _LATIN_TOKEN.findall(text):
        letters += len(token)
        if _WORD_SHAPE.match(token) and _VOWEL.search(token):
            in_words += len(token)
    return (in_words / letters if letters else 1.0), letters


def judge_text(page_idx: int, text: str, unmapped: int = 0, *, drawn: bool = True) -> PageText:
    """The verdict on one page's extracted text (`unmapped`: PDFium's count of characters without a
    Unicode mapping; `drawn`: whether anything at all is visible on the page)."""
    chars = [c for c in text if not c.isspace()]
    n = len(chars)
    if n < MIN_TEXT_CHARS:
        return PageText(page_idx, n, 0.0, 0.0, 1.0, "no_text" if drawn else "blank")
    broken = (sum(map(_is_broken, chars)) + unmapped) / n
    symbols = sum(c in _SYMBOLS for c in chars) / n
    words, letters = word_share(text)
    if letters < MIN_LETTERS_FOR_WORDS:
        words = 1.0
    bad = (symbols > MAX_SYMBOL_SHARE or broken > MAX_BROKEN_SHARE
           or (words < MIN_WORD_SHARE and (broken > WEAK_BROKEN_SHARE or symbols > WEAK_SYMBOL_SHARE)))
    return PageText(page_idx, n, min(broken, 1.0), symbols, words, "not_text" if bad else "text")


def _drawn(page) -> bool:
    """Whether anything visible is on a page without text: a tiny grey thumbnail is not all white."""
    import numpy as np

    bitmap = page.render(scale=0.1, grayscale=True)
    return int(np.asarray(bitmap.to_numpy()).min()) < 255 - BLANK_PIXEL_SPREAD


def judge_pdf(path: Path) -> list[PageText]:
    """Every page's verdict, in page order."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    pdf = pdfium.PdfDocument(str(path))
    try:
        verdicts = []
        for i in range(len(pdf)):
            page = pdf[i]
            textpage = page.get_textpage()
            try:
                text = textpage.get_text_range()
                count = textpage.count_chars()
                unmapped = sum(1 for k in range(count) if pdfium_c.FPDFText_HasUnicodeMapError(textpage, k) == 1)
                drawn = len(text.strip()) >= MIN_TEXT_CHARS or _drawn(page)
                verdicts.append(judge_text(i, text, unmapped, drawn=drawn))
            finally:
                textpage.close()
                page.close()
        return verdicts
    finally:
        pdf.close()


def page_count(path: Path) -> int:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        return len(pdf)
    finally:
        pdf.close()
