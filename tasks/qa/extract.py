"""What an offline (extractive) answer quotes: the table cell a question asks for, or the shortest
clause of a sentence that carries the answer.

- `table_cell`: a table chunk's content is one row a line, cells joined by " | " (tasks.ingest
  renders MinerU's HTML so); the first rows without values are the header (stacked header rows
  are joined per column), a later row with an empty first cell and no values starts a new header
  block (a balance sheet's "本报告期末 | 上年度末" half). The row whose label the question names
  best (the share of the label's terms found in the question, times how many: "营业收入" beats
  "营业总收入" for "营业收入是多少") and the column whose header it names (terms, and numbers: a
  year "2024", "2025/3/31" vs "2025年3月31日"; "期末余额" vs "期初余额") give
  "row — column: value". When the question names no column, every value of the row is given
  with its header ("row — h1: v1；h2: v2"). Tables land with their spans resolved
  (`tasks.ingest.tables.table_grid`): a header cell repeated over sub-columns is joined with the row that
  tells them apart, even of numbers ("CIFAR-10-LT 200"); a row group's label and the word cells after
  the first name the row ("ImageNet-LT CC-SAM ResNeXt-50"); a label the question writes out ("≥-10",
  "支付的各项税费") counts more; a period goes by any of its names ("上年同期" = "上期发生额",
  `PERIOD_NAMES`), and the row of what is asked more still ("财务费用项下的利息费用" → "其中:利息费用");
  a sub-item marker ("其中:") or a citation ("LADE [17]") names nothing; the words naming the document
  ("CC-SAM" of "in the CC-SAM paper") only break ties between rows; a ratio ("持股比例") takes the cell
  in %. Word rows over a wider word row are all header rows (the titanium standard's "合金" / "牌号" /
  element rows), a header repeated after a page break is skipped, and so is one repeated in the other
  language (a bilingual datasheet's "Cell Temperature, ℃ | Power(20%SOC), W" under its Chinese row); a
  first row of values is data (its header stayed on the page before). A row group that opens with a
  header row of its own ("45℃≤T≤50℃ | | 电流，A Current, A | SOC") takes its columns' names from it;
  a number the question states ("充到90% SOC那一段") is the condition of the row holding it: that row
  is the one asked, its other cell the answer (numbers naming the document, "196Ah", state none; a
  decimal, "2.8", states no "2" or "8"); a label cell the question writes out ("with a ResNeXt-50
  backbone") is said, not asked, and the label's shared terms break ties among a row group's rows. A
  header row of colspans landed before spans were resolved (" | ImageNet-LT | Places-LT") is spread
  over the columns under it. A blank form ("姓名 | MinerU | 曾用名 |  | …": a third of its cells
  empty, few digits) has no cells to answer with: `form_lines` gives its rows, each after its
  section's title, for the answer to quote ("主申请人-获奖情况：奖项名称 | 荣誉等级 | 获得日期").
- `focus`: the words a Chinese question asks about (before "是多少", "是谁", …); `cjk_numbers`:
  numbers in Chinese numerals, which answer "几年" / "多少周岁" as digits do.
- `shortest_clause`: the sentence's clauses (split at ，；: and the like); the one holding most of the
  question's terms, widened by its neighbour when it says nothing the question did not.

Terms (`terms`): CJK character bigrams (a lone CJK character as itself), ASCII words of two or more
letters without English stop words (plurals as singulars: "blueberries" names "Blueberry"; a capital
run glued to a capitalized word is two words, "ACurrent" → "current"), and numbers — so a bilingual
table's "电芯容量Nominal Capacity" matches "nominal capacity" and "电芯容量" alike.
"""
from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from tasks.common.text import CJK_RANGE, STOP_WORDS
from tasks.qa.gloss import chinese_numeral

_CJK = CJK_RANGE
_TERM = re.compile(rf"[{_CJK}]+|[a-z]+|[0-9]+(?:\.[0-9]+)?")
_HAS_DIGIT = re.compile(r"[0-9]")
_LEADING_ZEROS = re.compile(r"^0+(?=[0-9])")  # "05" is "5", "0.5" stays
# a capital run glued to a capitalized word, as MinerU joins a bilingual cell's lines ("电流，ACurrent, A",
# "SOCCurrent"): two words ("ResNeXt", "CIFAR" stay one)
_GLUED = re.compile(r"(?<=[A-Z])(?=[A-Z][a-z])")
# clause ends: full-width ，；： anywhere, ASCII ; : unless between digits ("10:30"); not the ASCII comma,
# which lists words in English ("cut, copy, and paste") and groups digits ("129,800,000")
_CLAUSE_END = re.compile(r"(?<=[，；：])|(?<=[;:])(?![0-9])|(?<=[^0-9][;:])")
# the question asks for a number, a date or a time: the clause that answers it holds a digit
_ASKS_NUMBER = re.compile(r"多少|几[个年月天日次岁人项条种周倍时]|多大|多长|多久|how many|how much|how long|how often"
                           r"|within what|what period|what percentage|by what (?:percent|factor|margin)"
                          # "the maximum oxygen content", "what Zr content range, in mass %", "what hydrogen limit"
                          r"|\bmaximum\b|\bminimum\b|\bcontent range\b|\bmass\s*%|\blimit\b|\bceiling\b", re.IGNORECASE)
# "when" asks only opening the question ("When was …"), not as a conjunction ("… lose when stored for 30 days")
_ASKS_DATE = re.compile(r"哪一?年|哪一?天|哪个月|何时|什么时候|日期|which year|what year|what date|which month|what month"
                        r"|^\s*when\b",
                        re.IGNORECASE)
_DATE = re.compile(r"[0-9]+\s*[年月日]|[0-9]{4}\s*[-/.]\s*[0-9]{1,2}|\b(?:1[5-9]|20)[0-9]{2}\b")
# the question asks a web address: the clause that answers it holds one
_ASKS_URL = re.compile(r"网址|链接|网站|主页|(?:代码|项目|仓库|源码|下载|开源)地址|github|\burl\b|website|\blink\b|homepage",
                       re.IGNORECASE)
_URL = re.compile(r"https?://|www\.|\b[\w-]+\.(?:com|org|net|io|cn|edu)\b", re.IGNORECASE)
# or an e-mail address
_ASKS_EMAIL = re.compile(r"e-?mail|邮箱|电子邮件|邮件地址", re.IGNORECASE)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_NUMBER = re.compile(r"[0-9]+")
_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]+)?")  # "2.8" is one number: it states neither a "2" nor an "8"
_CJK_DIGITS = "零〇一二两三四五六七八九十百千万亿"
_CJK_NUMBER = re.compile(rf"(?<![第{_CJK_DIGITS}])((?:百分之)?[{_CJK_DIGITS}]{{2,}}|[{_CJK_DIGITS}](?=[年月日天周岁个次倍人名项条元]))")
# a cell that is a number (a value, not a word naming the row: "ResNeXt-50" and "CIFAR-10-LT" are words)
_NUMBER_CELL = re.compile(r"^[\s(（]*[-+−~≈<>≤≥±]?\s*[0-9][0-9,.\s]*(?:%|‰|[a-zA-Z]{0,3})?[)）]?\s*(?:[（(].*)?$")
MAX_KEY_CELLS = 3  # word cells read as the row's label: a dataset, a method, a backbone
SUBJECT_ROW_WEIGHT = 0.01  # a row named by the document's own name ("CC-SAM") only breaks ties (0.1 outweighed "CE")
WRITTEN_COLUMN_BONUS = 0.01  # a header the question writes out, over one sharing as many terms: a tie-break only
GROUP_TIE_WEIGHT = 0.01  # per term a row's label shares with the question: a tie-break only
FOCUS_ROW_BONUS = 0.5  # a row whose label the question writes out as what it asks about
CONDITION_BONUS = 1.0  # a row holding a number the question states as its condition ("充到90% SOC")
LABEL_CONDITION_SHARE = 0.5  # of it, when the number is its label's too ("20%" in the row of "15℃≤T<20℃")
# a column the question names by implication: the one value of a row beside the value it states, or every value of
# a row it writes out in a table whose header is on the page before
IMPLIED_COLUMN_SCORE = 0.5
TARGET_BONUS = 0.25  # a condition the question goes to ("充到55%", "up to 55%") over one it starts from
_TARGET = re.compile(r"(?:到|至|\bup to|\bto|\buntil|\bending at)\s*([0-9]+(?:\.[0-9]+)?)", re.IGNORECASE)
PERCENT_BONUS = 0.5  # a cell in % when the question asks a ratio, as a column named by a term or two
_ASKS_RATIO = re.compile(r"(?<![功频速])率|比例|占比|百分比|percent|\bratio\b|\brate\b", re.IGNORECASE)
_CITATION = re.compile(r"\s*\[[0-9]+(?:\s*[,，–-]\s*[0-9]+)*\]")
# a question asking how much something changed against a base ("by what percentage did … change compared with the
# same period last year", "比上年同期增长了多少"): the column comparing with the base answers, not the base's
_CHANGE_WORDS = (r"\bchange|\bincreas|\bdecreas|\bgr[eo]w|\bdrop|\brise\b|\brose\b|\bfell\b|\bfall\b|\bdeclin"
                 r"|\bjump|\bclimb|增减|增长|下降|减少|增加|变动|变化|涨|跌|上升|增幅|降幅")
_BASE_WORDS = r"\bcompared (?:with|to)\b|\bthan\b|\bversus\b|\bvs\b|\bfrom\b|比(?!亚迪|例|率|重)|较"  # (比亚迪 is a name)
_ASKS_CHANGE = re.compile(rf"(?:\bby (?:what|how much)\b|{_CHANGE_WORDS}).*?(?:{_BASE_WORDS}|\bover\b|\bbetween\b)"
                          rf"|(?:{_BASE_WORDS}|\bbetween\b).*?(?:{_CHANGE_WORDS})", re.IGNORECASE)
_CHANGE_HEADER = re.compile(r"增减|变动|变化|增长|同比|环比|%|\bchange\b|\bgrowth\b|\byoy\b", re.IGNORECASE)
# a column of changes against a base ("本报告期末比上年度末增减（%）"), and a question asking any change, with or without a
# base ("同比变动（+/-%）", "year on year"): one asking neither a change nor a rate asks no such column
_CHANGE_COLUMN = re.compile(r"增减|变动率|变化率|增长率|同比|环比|\bchange\b|\bgrowth\b|\byoy\b", re.IGNORECASE)
_ASKS_ANY_CHANGE = re.compile(rf"{_CHANGE_WORDS}|同比|\byoy\b|year[ -]on[ -]year|\+\s*/\s*-", re.IGNORECASE)
_YEARISH = re.compile(r"(?:19|20)[0-9]{2}|本期|上期|同期|年初|期初|期末")  # a change column naming its base
_SUB_ITEM = re.compile(r"^\s*(?:其中|加|减)\s*[:：]\s*")  # a financial statement's sub-item marker
# a statement's item numbers: a group's ("（一）不能重分类…", "六、其他综合收益…"), whose items follow it, and an item's
# ("5.所得税影响"); none is part of the label a question writes
_GROUP_NUMBER = r"[（(][一二三四五六七八九十]{1,3}[)）]|[一二三四五六七八九十]{1,3}、"
_SUB_NUMBER = r"[0-9]{1,2}[.．、](?![0-9])"
_GROUP_ITEM = re.compile(rf"^\s*(?:{_GROUP_NUMBER})")
_NUMBERED_SUB_ITEM = re.compile(rf"^\s*{_SUB_NUMBER}")
_ITEM_PREFIX = re.compile(rf"^\s*(?:{_GROUP_NUMBER}|[（(][0-9]{{1,3}}[)）]|{_SUB_NUMBER})\s*")
# a row's own number asked ("这一行的编号（No.）", "which item number"): its numbering cell answers, as a column named
# by a term or two would (a header the question names more fully wins)
_ASKS_NUMBERING = re.compile(r"编号|序号|条目号|项号|\bitem number\b|\bNo\.|\brow number\b", re.IGNORECASE)
NUMBERING_SCORE = 1.0
FILE_EXTENSIONS = r"pdf|docx?|md|html?|txt|xlsx?|pptx?|csv|json"  # what a file a corpus lists is named with
FILE_PATH = re.compile(rf"[\w./-]*\w\.(?:{FILE_EXTENSIONS})", re.IGNORECASE)
PATH_LABEL_TERMS = 4  # a label of this many terms written out names its row, even of the document's own words
PLACED_COLUMN_SCORE = 2.0  # a column asked by its place ("the second column") over any its words name
_NUMBERING = re.compile(r"^(?:no\.?|序号|[0-9]+(?:\.[0-9]+)*\.?)$", re.IGNORECASE)
# words that ask rather than name: never evidence that a row or column was meant
_ASKING = {"什么", "多少", "哪些", "哪个", "是多", "少元", "为多", "是什", "有哪", "how", "much", "many", "what",
           "which", "value"}


@lru_cache(maxsize=65536)  # a batch scores the same chunks' sentences and cells for many questions
def terms(text: str) -> frozenset[str]:
    """The matching terms of `text` (see the module docstring)."""
    out: set[str] = set()
    text = _GLUED.sub(" ", unicodedata.normalize("NFKC", text or ""))
    for m in _TERM.finditer(text.lower()):
        tok = m.group()
        if "\u3400" <= tok[0]:
            out.update(tok[i:i + 2] for i in range(len(tok) - 1)) if len(tok) > 1 else out.add(tok)
        elif tok[0].isdigit():
            out.add(tok)
        elif len(tok) > 1 and tok not in STOP_WORDS:
            out.add(singular(tok))
    return frozenset(out - _ASKING)


def negated_terms(text: str, question_terms: frozenset[str]) -> frozenset[str]:
    """The question's CJK bigrams that `text` holds only behind 非 ("住宅" of "非住宅建设用地…"),
    when the question does not say 非 itself: a unit about 非住宅 does not answer about 住宅."""
    if "非" not in text:
        return frozenset()
    return frozenset(t for t in question_terms
                     if len(t) == 2 and "\u3400" <= t[0] and "非" + t[0] not in question_terms
                     and ("非" + t) in text and t not in text.replace("非" + t, ""))


# a question asking a rate in the widest sense: a ratio (`_ASKS_RATIO`), any "率" (功率 too), a share, a margin, "%"
_ASKS_RATE = re.compile(rf"{_ASKS_RATIO.pattern}|率|%|\b(?:margin|share|proportion)s?\b|\b(?:ratio|rate)s\b",
                        re.IGNORECASE)


def rate_terms(text: str, asked_words: frozenset[str], question: str) -> frozenset[str]:
    """The CJK bigrams of the question's words (`asked_words`, its glosses too) that `text` holds only in a rate
    ("销售" and "费用" of "销售费用率分别为22.6%/21.5%"), when the question asks no rate: a rate does not state the amount."""
    if "率" not in text or _ASKS_RATE.search(question):
        return frozenset()
    return frozenset(t for w in asked_words if len(w) >= 2 and "\u3400" <= w[-1] and w in text
                     and w not in re.sub(f"{re.escape(w)}[{CJK_RANGE}]{{0,4}}?率", "", text) for t in terms(w))


def singular(word: str) -> str:
    """An English plural's singular, roughly ("blueberries" → "blueberry", "foods" → "food", "boxes" →
    "box"); other words as they are ("class", "status", "analysis")."""
    if len(word) <= 3 or not word.endswith("s") or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "zes", "sses")):
        return word[:-2]
    return word[:-1]


def named(text: str, question_terms: set[str], neutral: frozenset[str] = frozenset()) -> float:
    """How well the question names `text`: matched terms x the share of text's terms matched (terms
    in `neutral` count neither way)."""
    own = terms(text) - neutral
    if not own:
        return 0.0
    hit = len(own & question_terms)
    return hit * hit / len(own)


# ------------------------------------------------------------------------------------------------
# tables


@dataclass
class Cell:
    """A table answer: the row label, the column header ("" = every column), the value, and how
    strongly the question named the row and the column."""

    label: str
    header: str
    value: str
    row_score: float
    column_score: float
    written: bool = False  # the question writes the row's label out ("支付的各项税费")

    @property
    def text(self) -> str:
        return f"{self.label} — {self.header}: {self.value}" if self.header else f"{self.label} — {self.value}"

    def answers_change(self, question: str) -> bool:
        """Does the cell state a change when the question asks one ("how much did net profit change year on year
        (+/-%)"): a change's row, column or value ("净利润 (+/-%)", "增减", "-13.5%"), not a level ("净利润 — 2022:
        2155")? True when no change is asked."""
        return not _ASKS_ANY_CHANGE.search(question) or any(
            _CHANGE_HEADER.search(part) for part in (self.label, self.header, self.value))


def _rows(content: str) -> list[tuple[list[str], bool]]:
    """The table's rows, each with whether a line across the table (a sub-table's title, a note) came
    right before it; MinerU's shifted and stacked rows mended (`_unshifted`, `_unstack`)."""
    return [(list(cells), titled) for cells, titled in _read_rows(content)]


@lru_cache(maxsize=4096)  # a batch asks the same tables many questions: read and mended once
def _read_rows(content: str) -> tuple[tuple[tuple[str, ...], bool], ...]:
    out, titled = [], False
    for line in (content or "").splitlines():
        if " | " in line:
            out.append((_unshifted([c.strip() for c in line.split(" | ")]), titled))
            titled = False
        elif line.strip():
            titled = True
    for i in range(len(out) - 1):
        _unstack(out[i][0], out[i + 1][0])
    _unglued(out)
    _changes_labelled(out)
    return tuple((tuple(cells), titled) for cells, titled in out)


# a row labelled only as the change of the row above ("净利润(百万元) | 2155 | …" then "(+/-%) | -13.5% | …", a broker's
# forecast table): it is that row's change
_CHANGE_LABEL = re.compile(r"^[(（]?\s*(?:\+\s*/\s*-|±|yoy|同比|增长率|增速|增减)\s*(?:[(（]?%[)）]?)?\s*[)）]?$",
                           re.IGNORECASE)


def _changes_row(label: str) -> bool:
    """Whether a row's label says it holds the change of the row above (`_changes_labelled`)."""
    last = label.rsplit(None, 1)[-1] if label.strip() else ""
    return bool(_CHANGE_LABEL.match(last)) and last != label.strip()


def _changes_labelled(rows: list[tuple[list[str], bool]]) -> None:
    """A row labelled only as a change ("(+/-%)") takes the label of the row above it before its own, in place."""
    for (above, _), (cells, _) in zip(rows, rows[1:]):
        if cells and above and above[0] and _CHANGE_LABEL.match(cells[0].strip()) \
                and not _CHANGE_LABEL.match(above[0].strip()):
            cells[0] = f"{above[0]} {cells[0].strip()}"


def _unglued(rows: list[tuple[list[str], bool]]) -> None:
    """Rows under a row MinerU glued into one cell, a range among its values ("电流，A SOC…0.1C 70%-5°℃≤T<0°℃0.06C
    80%…"), left with no label (" |  |  | 0.30C | 10%"), take that range as their label (the SVOLT step-charge
    table), in place."""
    label = ""
    for cells, _ in rows:
        if cells and cells[0]:
            glued = _RANGE_WRITTEN.search(cells[0])
            label = glued.group().strip() if glued and glued.group().strip() != cells[0].strip() else ""
        elif label and any(cells[1:]):
            cells[0] = label


# "CC-SAM 61.4", "Lifted Loss [36] 34.8": a measurement, not a label's own number ("Category 5", "Grade 2")
_TRAILING_NUMBER = re.compile(r"^(.*[^\W\d_].*?)\s+(-?[0-9]+\.[0-9]+%?)$")
_TWO_NUMBERS = re.compile(r"^(-?[0-9]+(?:\.[0-9]+)?%?)\s+(-?[0-9]+(?:\.[0-9]+)?%?)$")  # "36.4 0.510"


def _unshifted(row: list[str]) -> list[str]:
    """A row whose cells MinerU shifted mended: a number it read into the cell before an empty one goes into
    the empty one ("CC-SAM 61.4 |  | 49.5" → "CC-SAM | 61.4 | 49.5", "36.4 0.510 | " → "36.4 | 0.510")."""
    out = list(row)
    for j in range(len(out) - 1):
        if out[j + 1]:
            continue
        split = (_TRAILING_NUMBER if j == 0 else _TWO_NUMBERS).match(out[j])
        if split:
            out[j], out[j + 1] = split.group(1).strip(), split.group(2)
    return out


_CITED = re.compile(r"\[[0-9]+\]")
_OPERATOR = frozenset("+-/&×")


def _unstack(upper: list[str], lower: list[str]) -> None:
    """Two rows MinerU stacked into one label ("CE CE + Mixup [57] | 65.68 | …" over " | 65.84 | …", "VS + SAM [38]
    GCL [26]"), in a table citing its methods, mended in place: the lower row, which has no label, takes the
    label's second name when there is one way only to cut the label in two names (neither opening nor ending
    with an operator, the second not a citation alone), and a cell of two numbers over an empty one is cut
    in two ("82.40 82.68")."""
    if not upper or not lower or lower[0] or not upper[0] or not _CITED.search(upper[0]) \
            or not any(lower[1:]) or len(upper) != len(lower):
        return
    words = upper[0].split()
    cuts = [k for k in range(1, len(words))
            if words[k - 1] not in _OPERATOR and words[k] not in _OPERATOR and not _CITED.fullmatch(words[k])]
    if len(cuts) != 1:
        return
    upper[0], lower[0] = " ".join(words[:cuts[0]]), " ".join(words[cuts[0]:])
    for j in range(1, len(upper)):
        two = _TWO_NUMBERS.match(upper[j])
        if two and not lower[j]:
            upper[j], lower[j] = two.group(1), two.group(2)


# a blank form ("姓名 |  | 性别 |  | …", "工作单位 （严格按照社保记录上的公司名称填写）"): labels and their
# instructions beside empty cells, not values; a third of its cells or more are empty, few hold a
# digit, and its labels are mostly distinct (an authority matrix's "X" cells repeat)
FORM_EMPTY_SHARE = 0.3
FORM_DIGIT_SHARE = 0.15
FORM_DISTINCT_SHARE = 0.7


@lru_cache(maxsize=4096)  # asked per question of each table in its context
def form_lines(content: str) -> tuple[str, ...] | None:
    """A blank form's rows, each as its filled cells ("a | b") after the title of its section
    ("主申请人-获奖情况：奖项名称 | 荣誉等级 | 获得日期"), or None when the table is no form: a form
    answers by its labels and their instructions, which no cell does."""
    rows = [cells for cells, _ in _rows(content)]
    cells = [c for row in rows for c in row]
    filled = [c for c in cells if c]
    if len(rows) < 3 or not filled:
        return None
    # (its blanks beside its labels, in more than one column: a table whose last column only is empty, "Only text | "
    # under "Column A | Column B", is a table)
    blank_columns = {j for row in rows for j, c in enumerate(row) if not c}
    form = (len(cells) - len(filled) >= FORM_EMPTY_SHARE * len(cells) and len(blank_columns) > 1
            and sum(bool(_HAS_DIGIT.search(c)) for c in filled) <= FORM_DIGIT_SHARE * len(filled)
            and len(set(filled)) >= FORM_DISTINCT_SHARE * len(filled))
    if not form:
        return None
    out: list[str] = []
    section, quoted = "", True
    for line in content.splitlines():
        if " | " not in line:
            if not quoted:  # a section no row follows ("…科研成果（500字内概括）") is a line of its own
                out.append(section)
            section, quoted = line.strip(), not line.strip()
            continue
        row = " | ".join(c.strip() for c in line.split(" | ") if c.strip())
        if row:
            out.append(f"{section}：{row}" if section else row)
            quoted = True
    if not quoted:
        out.append(section)
    return tuple(out)


def values_only(content: str) -> bool:
    """Whether a table's rows under its header hold values only, no label ("0.40C | 10%" under "电流，A | SOC")."""
    rows = [cells for cells, _ in _rows(content)]
    return len(rows) >= 2 and all(_NUMBER_CELL.match(r[0]) for r in rows[1:])


def labelled_rows(content: str, label: str) -> str:
    """A table whose rows hold values only (`values_only`), with the line the document writes right before it
    as each row's label ("0°C≤T<5°C": one step-charge table per temperature, MinerU reading the temperature
    as a line of its own); any other table unchanged."""
    if not label or " | " in label or not values_only(content):
        return content
    return "\n".join(f"{label} | {line}" if " | " in line else line for line in content.splitlines())


def _is_value(cell: str) -> bool:
    return bool(_HAS_DIGIT.search(cell)) or cell in ("-", "--", "—", "×", "√", "X")


def _value_row(row: list[str]) -> bool:
    return any(_is_value(c) for c in row[1:])


def _word_row(row: list[str]) -> bool:
    """Words but for a stray value ("Ti | Al | Si | … | H | 0": an OCR'd "O")."""
    return sum(_is_value(c) for c in row[1:]) * 4 <= len(row) - 1


def _blocks(rows: list[tuple[list[str], bool]]) -> list[tuple[list[str], list[list[str]]]]:
    """(headers per column, data rows) blocks: the first row and the value-less rows with an empty
    first cell right after it are the header, joined per column (a row with a label is data even
    when its values are words: "<-30 | 不允许 | 不允许"); a later value-less row with an empty first
    cell and ≥ 2 named columns starts a new block ("| 本报告期末 | 上年度末"), as does a value-less row
    right after a line across the table (a sub-table's title: "前10名无限售条件股东持股情况"). A header
    row repeated after a page break is skipped."""
    blocks: list[tuple[list[str], list[list[str]]]] = []
    header_rows: list[list[str]] = []
    data: list[list[str]] = []
    for i, (row, titled) in enumerate(rows):
        if data and _repeats_header(row, header_rows):
            continue  # the header again after a page break, maybe with the page's running head
        named_cells = sum(bool(c) for c in row[1:])
        after = rows[i + 1][0] if i + 1 < len(rows) else None
        starts_block = not _value_row(row) and (not row[0] or titled) and named_cells >= 2
        # under a header row of colspans (" | ImageNet-LT | Places-LT"), a wider value-less row is its
        # sub-header even with a first cell ("Method | Many | … | F-measure"); under a header cell
        # repeated over its sub-columns ("| CIFAR-10-LT | CIFAR-10-LT"), the row that tells them apart
        # is, even of numbers ("Imbalance Ratio | 200 | 100")
        sub_header = bool(header_rows) and not data and (
            (len(row) > len(header_rows[-1]) and _word_row(row)) or _splits_groups(header_rows[-1], row)
            or _heads_sub_header(row, after)
            or _translates(header_rows[-1], row) or _sparse_header(row))
        if not header_rows and not data and (_data_row(row) or _numbered_like(row, after)):
            header_rows.append([""] * len(row))  # the header was left on the page before
        if not header_rows or (not data and (sub_header or (not row[0] and _word_row(row)))) \
                or (data and starts_block):
            if data:
                blocks.append((_grouped_years(_join_headers(header_rows, _width(data))), data))
                header_rows, data = [], []
            header_rows.append(row)
        else:
            data.append(row)
    if data:
        blocks.append((_grouped_years(_join_headers(header_rows, _width(data))), data))
    return blocks


def columns(content: str) -> list[tuple[str, str]]:
    """A table's columns, each as its header (its header rows joined) and its cells (joined by spaces), block by
    block (`_blocks`); none for a table whose header was left on the page before."""
    return [(head, " ".join(row[k] for row in data if k < len(row)))
            for headers, data in _blocks(_rows(content)) for k, head in enumerate(headers) if head]


_GROUP_YEAR = re.compile(r"^\s*(\D*[^\d\s])\s*((?:19|20)[0-9]{2}\s*[AEFH]?)\s*$")  # "EPS2023A": a group, its first year


def _grouped_years(headers: list[str]) -> list[str]:
    """A group header MinerU wrote into its first year's cell ("EPS2023A | 2024E | 2025E | PE2023A | 2024E |
    2025E", colspans flattened): the bare years after it are the group's ("PE 2024E", not a second "2024E")."""
    out, group = list(headers), ""
    for i, header in enumerate(headers):
        opened = _GROUP_YEAR.match(header)
        if opened and i + 1 < len(headers) and _YEAR.match(headers[i + 1]):
            group = opened.group(1).strip()
            out[i] = f"{group} {opened.group(2)}"
        elif group and _YEAR.match(header):
            out[i] = f"{group} {header.strip()}"
        else:
            group = ""
    return out


_YEAR = re.compile(r"^\s*(?:19|20)[0-9]{2}\s*[AEFH]?\s*$")
_FORECAST_YEAR = re.compile(r"(?:19|20)[0-9]{2}\s*[EF](?![A-Za-z])")  # a broker's "2025E": estimated, not reported
_ASKS_FORECAST = re.compile(r"forecast|expect|estimat|project|predict|outlook|预测|预计|预期|估计|展望"
                            r"|(?:19|20)[0-9]{2}\s*[EF](?![A-Za-z])", re.IGNORECASE)


def _data_row(row: list[str]) -> bool:
    """A row of values no header has: two numbers or more that are no years ("5.11% | 155,149,602")."""
    return sum(bool(_NUMBER_CELL.match(c)) and not _YEAR.match(c) for c in row[1:]) >= 2


_SECTION_NUMBER = re.compile(r"^[0-9]+(?:\.[0-9]+)+$")  # "1.1.13", "4.1.5.10": an item's number, never a header


def _item_number_written(cell: str, question: str) -> bool:
    """Whether `cell` is an item's number of two levels or more that the question writes out ("item 1.1.11")."""
    number = cell.strip()
    return _SECTION_NUMBER.match(number) is not None \
        and re.search(rf"(?<![0-9.]){re.escape(number)}(?![0-9]|\.[0-9])", question) is not None


def _numbered_like(row: list[str], after: list[str] | None) -> bool:
    """Is this row numbered as the row after it is ("1.1.13 | 建议 SOC使用范围 | 3% - 100%" over "1.1.14 | 电池重量 |
    …", a table continued from the page before; "1 | a | b" over "2 | u | ", a grid with no header): a data row,
    not a header."""
    if not after:
        return False
    if row[0].isdigit() and after[0].isdigit():
        return int(after[0]) == int(row[0]) + 1
    return _SECTION_NUMBER.match(row[0]) is not None and _SECTION_NUMBER.match(after[0]) is not None


def _group_headers(data: list[list[str]]) -> list[list[str] | None]:
    """Per data row, the header of its row group when the group opens with one: a row of words (no
    value) whose label the value rows after it repeat (the SVOLT step-charge table, MinerU's rowspans
    resolved: "45℃≤T≤50℃ | | 电流，ACurrent, A | SOC" over "45℃≤T≤50℃ | | 1.35C | 20%"); that row
    itself gets itself."""
    out: list[list[str] | None] = [None] * len(data)
    group: list[str] | None = None
    for i, row in enumerate(data):
        after = data[i + 1] if i + 1 < len(data) else None
        if row[0] and any(row[1:]) and not _value_row(row) and after is not None and after[0] == row[0] \
                and _value_row(after):
            group = out[i] = row
        elif group is not None and row[0] == group[0]:
            out[i] = group
        else:
            group = None
    return out


def _states(cell: str, question_numbers: set[str]) -> bool:
    """Is `cell` a number the question states ("20%" of "充至20% SOC"), years aside?"""
    own = _decimals(cell)
    return bool(_NUMBER_CELL.match(cell)) and bool(own) and own <= question_numbers and not _years(own)


def _condition_written(cell: str, question_numbers: set[str]) -> bool:
    """Is `cell` a condition of words the question writes out, every number it states ("25℃,65.3A(1/3C)电流放电到
    2.0V" of "按25℃、65.3A（1/3C）放电到2.0V的条件"), two or more, years aside, being the cell's: the value beside it
    is asked? (A file list's cell naming "GB/T 3620.1-2016" or "2025 Q1" is no condition.)"""
    return len(question_numbers - _years(question_numbers)) >= 2 and not _NUMBER_CELL.match(cell) \
        and question_numbers <= _decimals(cell)


_GLUED_VALUE = re.compile(r"[≥≤<>]?\s*[0-9]+(?:\.[0-9]+)?\s*[A-Za-z%][A-Za-z/%]*")  # "≥592.1 Wh" of "≥592.1 Wh≥625 Wh"
_BRACKETED = re.compile(r"[(（]([^()（）]{1,8})[)）]")  # "(1C)", "(1/3C)": what tells one condition from another


def _paired(value: str, conditions: list[str], question: str) -> str:
    """The one of a cell's glued values ("≥592.1 Wh≥625 Wh") at the place of the condition the question writes
    among its condition cell's ("(1C)", "(1/3C)"), `value` whole when that cannot be told."""
    values = _GLUED_VALUE.findall(value)
    if len(values) < 2 or "".join(values).replace(" ", "") != value.replace(" ", ""):
        return value
    question = unicodedata.normalize("NFKC", question)
    for condition in conditions:
        marks = list(dict.fromkeys(m.strip() for m in _BRACKETED.findall(unicodedata.normalize("NFKC", condition))))
        written = [i for i, mark in enumerate(marks) if re.search(rf"(?<![\w/.]){re.escape(mark)}(?!\w)", question)]
        if len(marks) == len(values) and len(written) == 1:
            return values[written[0]].strip()
    return value


_ITEMS = re.compile(r"\s*[,，、;；]\s*")
LIST_ITEM_MAX_CHARS = 24  # a list of names ("Ash, Elm, Maple"), not clauses


def _lists_written(cell: str, asked: str) -> bool:
    """Is `cell` a list of words one item of which the question (`_plain`) writes out ("Blueberry, Strawberry,
    Cranberry" of "the food group that includes Strawberry"): a condition the row is picked by, no answer?"""
    items = [_plain(item) for item in _ITEMS.split(cell)]
    if len(items) < 2 or max(map(len, items)) > LIST_ITEM_MAX_CHARS or _HAS_DIGIT.search(cell):
        return False
    return any(len(item) >= (2 if _HAS_CJK.search(item) else 4) and item in asked for item in items)


def _repeats_header(row: list[str], header_rows: list[list[str]]) -> bool:
    """Is `row` a header row again ("合金 | 主要成分 | 杂质，不大于 | GB/T3620.1—2016" after a page break),
    by its first two cells, its first cell and words only, or all cells but an OCR-garbled first? A row
    group's rows share their first cell and an empty second ("15℃≤T<20℃ |  | 1.20C | 20%"): no repeat."""
    return len(row) > 1 and any((h[0] and row[0] == h[0] and ((row[1] and row[1] == h[1]) or _word_row(row)))
                                or (len(h) > 2 and row[1:] == h[1:]) for h in header_rows if len(h) > 1)


def _sparse_header(row: list[str]) -> bool:
    """A header row over groups of columns, each name over the first column of its group and the
    rest empty (an OCR'd table's "合金 |  | … | 主要成分 |  | … | 杂质，不大于 |  |")."""
    named = sum(bool(c) for c in row[1:])
    return named >= 2 and len(row) - 1 - named >= 2 * named and _word_row(row)


def _heads_sub_header(row: list[str], after: list[str] | None) -> bool:
    """A word row with a wider word row under it is a header row too: the titanium standard's
    "合金 | 主要成分 | 杂质" / "牌号 | 名义化学成分 | 其他元素" / "Ti | Al | Si | V | …" (a word row
    followed by rows of its own width is data: "姓名 | 职务" / "张三 | 董事长")."""
    return (after is not None and len(after) > len(row) and _word_row(after) and not _value_row(row)
            and not _is_value(row[0]))


_HAS_CJK = re.compile(f"[{_CJK}]")


def _translates(header: list[str], row: list[str]) -> bool:
    """Is `row` the header again in the other language, as a bilingual datasheet heads its tables
    ("电芯温度，℃ | 功率（20%SOC），W" over "Cell Temperature, ℃ | Power(20%SOC), W")? Every cell
    named, none a number, and where the header writes Chinese the row writes none."""
    return (len(row) == len(header) and all(row) and all(header) and not any(_NUMBER_CELL.match(c) for c in row)
            and all(bool(_HAS_CJK.search(h)) and not _HAS_CJK.search(c) for h, c in zip(header, row)))


def _splits_groups(header: list[str], row: list[str]) -> bool:
    """Does `row` tell apart the columns a header cell is repeated over ("CIFAR-10-LT" thrice over
    "200 | 100 | 50")?"""
    return any(header[j] and header[j] == header[j + 1] and j + 1 < len(row) and row[j] != row[j + 1]
               for j in range(len(header) - 1))


def _width(rows: list[list[str]]) -> int:
    """The width most rows have (a row MinerU broke into more cells does not widen the table)."""
    counts = Counter(len(r) for r in rows)
    return max(counts, key=lambda w: (counts[w], w), default=0)


# two sub-headers a composition table's parse glued into one cell, the column right of it left unheaded ("其他元素"
# over "单一总和 | ", a GB standard's "other elements: each, total")
_GLUED_SUB_HEADERS = re.compile(r"^(单个|单一|单项)\s*(总和|总计|合计)$")


def _sub_headers_apart(rows: list[list[str]]) -> list[list[str]]:
    """The header rows with a glued pair of sub-headers spread over its own column and the unheaded one after it,
    under the header above both."""
    for i in range(len(rows[-1]) - 1 if rows else 0):
        glued = _GLUED_SUB_HEADERS.match(rows[-1][i])
        if glued is None or any(i + 1 < len(r) and r[i + 1] for r in rows):
            continue
        rows = [list(r) for r in rows]  # (the caller's rows stay as they are)
        for r in rows[:-1]:
            if i + 1 < len(r):
                r[i + 1] = r[i]  # the header above both
        rows[-1][i:i + 2] = glued.groups()
    return rows


def _join_headers(header_rows: list[list[str]], width: int = 0) -> list[str]:
    width = max([width, *(len(r) for r in header_rows)])
    rows = _sub_headers_apart([_spread(r, width) for r in header_rows])
    # a rowspan stands in each header row it covers ("股份种类" over "股份种类 | 数量"): named once
    return [" ".join(dict.fromkeys(r[i] for r in rows if i < len(r) and r[i])) for i in range(width)]


def _spread(row: list[str], width: int) -> list[str]:
    """A header row rendered from colspans has fewer cells than the table (" | ImageNet-LT | Places-LT"
    over 1 + 4 + 4 columns): its leading empty cells keep one column each and its named cells share
    the rest evenly when they can ("ImageNet-LT" over the first four value columns)."""
    lead = next((i for i, c in enumerate(row) if c), len(row))
    named, rest = row[lead:], width - lead
    # with no leading blank the first cell heads the label column ("合金 | 主要成分 | 杂质"): not spread
    if len(row) >= width or not lead or not named or rest % len(named):
        return row
    return row[:lead] + [c for c in named for _ in range(rest // len(named))]


def _numbers(text: str) -> set[str]:
    return {n.lstrip("0") or "0" for n in _NUMBER.findall(unicodedata.normalize("NFKC", text or ""))}


def _decimals(text: str) -> set[str]:
    """The numbers of `text`, a decimal one whole ("2.8"), without leading zeros ("05" → "5")."""
    return {_LEADING_ZEROS.sub("", n) for n in _DECIMAL.findall(unicodedata.normalize("NFKC", text or ""))}


_RANGE_SIGN = re.compile(r"[≤≥<>~～]")  # a range's label ("-15℃≤T<-10℃"), not a grade's ("TA12-1")
# a bound written in words ("at -10℃ or warmer", "10℃及以上", "不低于25℃") writes out a one-sided label ("≥-10"); a
# number alone does not ("for 30 s" is no "≥ -30", nor "at 25℃" a "≥25")
_BOUND_WRITTEN = re.compile(r"(?:at least|no (?:less|lower|more|higher) than|不低于|不高于|不小于|不大于)\s*-?[0-9.]+"
                            r"|-?[0-9.]+\s*(?:°\s*C|℃|度|%)?\s*"
                            r"(?:or (?:warmer|colder|above|below|higher|lower|more|less)|(?:及|或)?以[上下])", re.IGNORECASE)
_HAS_LETTERS = re.compile(r"[A-BD-SU-Za-z]{2,}|[\u4e00-\u9fff]")  # words, not a range's "T" or "℃C"
# (and what explains it: "which explanation does the variance table offer" asks its 变动原因 column)
_ASKS_MEANING = re.compile(r"\bmean(?:s|ing)?\b|stand for|\bindicates?\b|含义|意思|是指|指什么|代表什么"
                           r"|\bexplanation\b|\breasons?\b|\bwhy\b|原因|为什么|为何", re.IGNORECASE)
_DESCRIPTION_HEADER = re.compile(r"description|meaning|definition|说明|含义|定义|描述|reason|explanation|原因", re.IGNORECASE)
_SIGNED_DECIMAL = re.compile(r"(?<![0-9.])-?[0-9]+(?:\.[0-9]+)?")


def _signed_decimals(text: str) -> set[str]:
    """`_decimals` with their minus signs: "-10℃≤T<-5℃" holds -10 and -5, no 10."""
    found = _SIGNED_DECIMAL.findall(unicodedata.normalize("NFKC", text or ""))
    return {re.sub(r"^(-?)0+(?=[0-9])", r"\1", n) for n in found}


def _years(numbers: set[str]) -> set[str]:
    return {n for n in numbers if len(n) == 4 and n[:2] in ("19", "20")}


# the periods of Chinese financial statements go by several names: a question's "上年同期" is a cash flow
# statement's "上期发生额", its "期初" a balance sheet's "上年度末"; an English question's "at the end of the previous
# year" is 上年度末 (a dictionary reads its words one by one: "previous year" 上年, not the end of it)
PERIOD_NAMES = (("本期", "本报告期", "本期发生额", "本期金额", "current period"),
                ("上年同期", "上期", "上期发生额", "上期金额", "same period last year", "same period of last year",
                 "same period of the previous year", "comparative period", "previous period", "prior period"),
                ("期末", "期末余额", "本报告期末", "end of the reporting period", "end of the period", "closing balance"),
                ("期初", "期初余额", "上年度末", "上年末", "年初余额", "年初", "end of the previous year",
                 "end of last year", "beginning of the year", "start of the year", "opening balance"))


# a question naming one year, the one its document is named by ("比亚迪2025年第一季度报告"), asks the statement's
# current period: "本期发生额", "期末余额" are that year's, named as by a term or two (0.5, 1 and 2 tied on the docs
# set: the cash flow statement's rows over the summary's "2025年1-3月" column)
CURRENT_PERIOD_SCORE = 1.0
_CURRENT_PERIOD = re.compile(r"\s*(?:本期|本报告期|期末)")


def _period_terms(question: str) -> set[str]:
    """The terms of every name of the periods the question names (`PERIOD_NAMES`)."""
    out: set[str] = set()
    question = question.lower()
    for names in PERIOD_NAMES:
        if any(name in question for name in names):
            out.update(*(terms(name) for name in names if not name.isascii()))
    return out


def _opposite(header: str, question: str) -> bool:
    """Does the header say 无X where the question says 有X, or the other way ("持有无限售条件股份数量"
    for "有限售条件股份数量")? It shares every word but one, and names the other column."""
    return any(header.count(("无" if a == "有" else "有") + b) > header.count(a + b)
               for a, b in zip(question, question[1:]) if a in "有无" and "\u3400" <= b)


# a composition table heads its columns by the elements' symbols; a question names them in words
ELEMENTS = {"Al": ("aluminium", "aluminum", "铝"), "B": ("boron", "硼"), "C": ("carbon", "碳"),
            "Cr": ("chromium", "铬"), "Cu": ("copper", "铜"), "Fe": ("iron", "铁"), "H": ("hydrogen", "氢"),
            "Mn": ("manganese", "锰"), "Mo": ("molybdenum", "钼"), "N": ("nitrogen", "氮"), "Nb": ("niobium", "铌"),
            "Nd": ("neodymium", "钕"), "Ni": ("nickel", "镍"), "O": ("oxygen", "氧"), "Pd": ("palladium", "钯"),
            "Ru": ("ruthenium", "钌"), "Si": ("silicon", "硅"), "Sn": ("tin", "锡"), "Ta": ("tantalum", "钽"),
            "V": ("vanadium", "钒"), "W": ("tungsten", "钨"), "Zr": ("zirconium", "锆")}  # not titanium: the alloy
_ELEMENT_NAME = re.compile("|".join(rf"\b{n}\b" if n.isascii() else n for names in ELEMENTS.values() for n in names),
                           re.IGNORECASE)
_SYMBOL_OF = {n: symbol for symbol, names in ELEMENTS.items() for n in names}
_ELEMENT_DESCRIBES = re.compile(rf"含({_ELEMENT_NAME.pattern})(?:[、和及与](?:{_ELEMENT_NAME.pattern}))*的"
                                rf"|({_ELEMENT_NAME.pattern})钛合金"
                                rf"|\b(?:containing|with)\s+({_ELEMENT_NAME.pattern})\b"
                                rf"|\b({_ELEMENT_NAME.pattern})-(?:bearing|containing|rich|based)\b"
                                # "the lower-silicon sibling of TA23": what tells the grade apart, not what is asked
                                rf"|\b(?:lower|higher|low|high|reduced)-({_ELEMENT_NAME.pattern})\b", re.IGNORECASE)
_ELEMENT_SYMBOL = re.compile(rf"(?<![A-Za-z0-9.\-])(?:{'|'.join(s for s in ELEMENTS if len(s) > 1)})(?![A-Za-z0-9])")
# a one-letter symbol only where the question asks its content ("中V的含量范围", "the N content", "O杂质"), not volts'
# "3.2 V"
_LETTER_SYMBOL = re.compile(rf"(?<=[\u4e00-\u9fff\s])([{''.join(s for s in ELEMENTS if len(s) == 1)}])"
                            r"(?=\s*(?:的?含量|的?(?:范围|上限|下限|杂质)|元素|\s+(?:content|limit|range|impurity)\b))")


@lru_cache(maxsize=4096)
def _symbols_asked(question: str) -> frozenset[str]:
    """What a question writes in brackets, short ("（V）", "(Cr)"), and the symbols of the elements
    it names ("vanadium", "钒"): the headers of a composition table's columns."""
    named = [_SYMBOL_OF[m.group().lower()] for m in _ELEMENT_NAME.finditer(question)]
    # an element naming the alloy ("含钽的TA32 … 锆含量", "the tantalum-bearing grade's zirconium") is not asked
    # when another one is
    describing = {_SYMBOL_OF[n.group().lower()] for m in _ELEMENT_DESCRIBES.finditer(question)
                  for n in _ELEMENT_NAME.finditer(m.group())}  # ("含铁、钼的α-β型钛合金": both)
    if set(named) - describing:
        named = [n for n in named if n not in describing]
    written = _ELEMENT_SYMBOL.findall(question) + _LETTER_SYMBOL.findall(question)  # "中Mo的含量", not "Ti-32Mo"'s
    return frozenset(_symbol(m) for m in [*re.findall(r"\(([^()]{1,12})\)", _plain(question)), *named, *written])


_OCR_LOOKALIKES = str.maketrans("10i", "lol")
_PERIODIC_TABLE = frozenset(
    "h he li be b c n o f ne na mg al si p s cl ar k ca sc ti v cr mn fe co ni cu zn ga ge as se br kr rb sr y zr "
    "nb mo tc ru rh pd ag cd in sn sb te i xe cs ba la ce pr nd pm sm eu gd tb dy ho er tm yb lu hf ta w re os ir "
    "pt au hg tl pb bi po at rn fr ra ac th pa u np pu am cm bk cf es fm md no lr".split())


_ELEMENT_SYMBOLS = frozenset(symbol.lower() for symbol in ELEMENTS)


def _misread_symbol(header: str, symbols: frozenset[str]) -> bool:
    """A header OCR read as no element at all, one letter off a symbol the question asks ("Zx" for Zr)."""
    return len(header) == 2 and header not in _PERIODIC_TABLE and any(
        len(s) == 2 and s[0] == header[0] for s in symbols)


def _symbol(text: str) -> str:
    """A short symbol as OCR may have read it: "A1" is "Al", "0" is "O", "Ni" and "N1" alike."""
    plain = _plain(text)
    return plain.translate(_OCR_LOOKALIKES) if len(plain) <= 3 else plain


_SYMBOL_DIGIT = re.compile(r"(?<=[A-Za-z])\d(?![\d.])")  # part of a symbol, no number: OCR's "A1" for "Al", "H2"


# what a question says a table shows beside naming it ("Table 1 (top-1 accuracy on CIFAR-10-LT and CIFAR-100-LT)",
# "表2（Places-LT）", "Table 4 of the CC-SAM paper (… on ImageNet-LT and Places-LT)") says which table, not which
# row or column of it
_TABLE_DESCRIPTION = re.compile(r"((?:table|表)\s*[0-9]+(?:\s+(?:of|in)\s+the\s+[^()（）,，?？]{1,60}?)?)\s*[(（][^()（）]{3,}[)）]",
                                re.IGNORECASE)
QUOTED_VALUE_MIN_CHARS = 6  # a value cell this long written out in the question names its row


@lru_cache(maxsize=4096)  # a batch asks the same tables many questions
def _unique_values(content: str, numbers: bool = False) -> frozenset[str]:
    """The value cells (`_plain`) of a table that one row alone holds: of words, QUOTED_VALUE_MIN_CHARS or longer;
    with `numbers`, numbers instead."""
    held_by = Counter(_plain(cell) for row, _ in _rows(content)[1:] for cell in set(row[1:]))
    if numbers:
        return frozenset(cell for cell, n in held_by.items() if n == 1 and _NUMBER_CELL.match(cell))
    return frozenset(cell for cell, n in held_by.items()
                     if n == 1 and len(cell) >= QUOTED_VALUE_MIN_CHARS and not _NUMBER_CELL.match(cell))


COUNT_WORDS = ("first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
               "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth").split()
ORDINAL_WORDS = "|".join([*COUNT_WORDS, "last"])
LAST = -1  # the ordinal of "the last item", "最后一项"
_ORDINALS = {chinese_numeral(i): i for i in range(1, 100)} | \
    {w: i for i, w in enumerate(COUNT_WORDS, 1)} | \
    {"last": LAST, "最后": LAST}
# the question asks a table's n-th row ("the third data row", "第二行数据", "最后一行"), not the row labelled n
_ASKED_ROW = re.compile(rf"第([一二三四五六七八九十]|[0-9]{{1,2}})行(?![为是])|(最后)一行|\b({ORDINAL_WORDS})[\s-]+(?:data\s+)?row\b",
                        re.IGNORECASE)


def ordinal_number(text: str) -> int | None:
    """"三", "third", "3" → 3; "last", "最后" → LAST."""
    return _ORDINALS.get(text.lower()) or (int(text) if text.isdigit() else None)


def asked_row(question: str) -> int | None:
    """The number of the table row a question asks by its place (LAST for the last one), or None."""
    found = _ASKED_ROW.search(question)
    return ordinal_number(next(g for g in found.groups() if g)) if found else None


_ASKED_COLUMN = re.compile(rf"第([一二三四五六七八九十]|[0-9]{{1,2}})列(?![为是])|(最后)一列|\b({ORDINAL_WORDS})\s+column\b",
                           re.IGNORECASE)
_QUOTE_OPEN, _QUOTE_CLOSE = "[\"'“‘「]", "[\"'”’」]"
_ROW_OR_COLUMN_THAT = r"(?:的)?(?:那一?|这一?)?"
# a row asked by its first cell ("the row that starts with 3", "以4开头的那一行", "第一列为“3”的那一行"), a column by
# its first row's ("the column headed 'a'", "首行为“a”的那一列"): a grid's cells, which no header names
_ASKED_ROW_START = re.compile(
    rf"\brow\s+(?:that|which)\s+(?:starts|begins)\s+with\s+{_QUOTE_OPEN}?([^\s\"'”’,?]+?){_QUOTE_CLOSE}?(?=[\s,?]|$)"
    rf"|\brow\s+numbered\s+{_QUOTE_OPEN}?([^\s\"'”’,?]+?){_QUOTE_CLOSE}?(?=[\s,?]|$)"
    rf"|以\s*{_QUOTE_OPEN}?([^\s“”\"'’]{{1,12}}?){_QUOTE_CLOSE}?\s*开头{_ROW_OR_COLUMN_THAT}行"
    rf"|(?:第一列|首列)(?:为|是){_QUOTE_OPEN}?([^\s“”\"'’]{{1,12}}?){_QUOTE_CLOSE}?{_ROW_OR_COLUMN_THAT}行", re.IGNORECASE)
# (or "在“er”这一列", "a列下面": a grid's first-row cell, quoted or a short token, naming its column)
_ASKED_COLUMN_HEAD = re.compile(
    rf"\bcolumn\s+headed\s+{_QUOTE_OPEN}([^\"'”’]{{1,20}}){_QUOTE_CLOSE}"
    rf"|(?:第一行|首行)(?:为|是)\s*{_QUOTE_OPEN}?([^\s“”\"'’]{{1,20}}?){_QUOTE_CLOSE}?\s*{_ROW_OR_COLUMN_THAT}列"
    rf"|{_QUOTE_OPEN}([^“”\"'’]{{1,12}}){_QUOTE_CLOSE}\s*(?:这|那)一?列"
    rf"|(?<![A-Za-z0-9_])([A-Za-z]{{1,3}})列", re.IGNORECASE)


def asked_column(question: str) -> int | None:
    """The number of the table column a question asks by its place ("the sixth column", "第二列"; LAST), or None."""
    found = _ASKED_COLUMN.search(question)
    return ordinal_number(next(g for g in found.groups() if g)) if found else None


def _asked_first_cell(pattern: re.Pattern[str], question: str) -> str | None:
    found = pattern.search(question)
    return _plain(next(g for g in found.groups() if g)) if found else None


_CAPITALIZED = re.compile(r"(?<![A-Za-z])[A-Z][a-z]+(?![A-Za-z])")  # "Many" of "在Places-LT上Many（头部类别）"


def _column_score(header: str, question_terms: set[str], question_numbers: set[str], asked: str = "",
                  meaning: bool = False, symbols: frozenset[str] = frozenset(),
                  missing: frozenset[str] = frozenset(), capitalized: frozenset[str] = frozenset(),
                  forecast: bool = True) -> float:
    """How well the question names a column: its terms, +2 when every number of the header is in
    the question (a year, "2025/3/31" for "2025年3月31日"), -1 when both name years and they differ
    (a header's other numbers, "20%SOC", are conditions, not a miss), +WRITTEN_COLUMN_BONUS when the
    question (`asked`, `_plain`) names it and writes it out ("Series 5" of "Category 7 对应的 Series 5",
    not "Series 7"); +1 for a description column when the question asks what something means
    (`meaning`: "what does the value GROUP mean" is answered by "Description", not "Data type"); +2
    for a header that is a symbol the question asks (`symbols`, `_symbols_asked`: "V" of "钒（V）"), or
    OCR's misreading of one no header of the table is (`missing`: "Zx" for Zr), 0 for another element's when it asks
    one; 0 for a forecast year ("2025E") unless the question asks a forecast (`forecast`). A header of stop words only
    ("Many", "Few" of a long-tail paper's tables) is named when the question capitalizes it (`capitalized`)."""
    if not forecast and _FORECAST_YEAR.search(header):
        return 0.0  # a forecast ("2025E") is no answer to a question asking what was ("at 31 March 2025")
    score = named(header, question_terms) + (1.0 if meaning and _DESCRIPTION_HEADER.search(header) else 0.0)
    if not score and header.strip() in capitalized and not terms(header):
        score = 1.0
    if score > 0 and len(_plain(header)) >= 2 and _plain(header) in asked:
        score += WRITTEN_COLUMN_BONUS
    leaf = header.split()[-1] if header.strip() else ""  # under its group headers ("主要成分 Fe": Fe)
    if leaf and (_symbol(leaf) in symbols or _misread_symbol(_symbol(leaf), missing)):
        score += 2.0  # "钒（V）", "vanadium": the symbol the question writes in brackets or names, which terms miss
    elif symbols & _ELEMENT_SYMBOLS and _symbol(leaf) in _PERIODIC_TABLE:
        return 0.0  # another element's column, whatever its group header says ("杂质，不大于 H" of "杂质碳含量")
    own = set() if len(leaf) == 1 and leaf.isdigit() else _numbers(_SYMBOL_DIGIT.sub("", header))  # OCR's "0": O
    if own and question_numbers:
        if own <= question_numbers:
            score += 2.0
        elif _years(own) and _years(question_numbers) and _years(own).isdisjoint(question_numbers):
            score -= 1.0
    return score


def _compared(headers: list[str], scores: list[float]) -> list[float]:
    """The column scores of a question asking a change against a base (`_ASKS_CHANGE`): a base column
    ("上年同期") hands its score to the change column that holds its words ("本报告期比上年同期增减（%）")."""
    out = list(scores)
    for i, base in enumerate(headers):
        base_terms = terms(base)
        changes = [j for j, h in enumerate(headers) if j != i and base_terms and base_terms < terms(h)
                   and _CHANGE_HEADER.search(h)]
        if changes and scores[i] > 0:
            for j in changes:
                out[j] = max(out[j], scores[i] + scores[j])
            out[i] = 0.0
    # both columns compared named ("between 2024/12/31 and 2025/3/31"): the change column of no base of its own
    # ("变动率") answers
    named = [i for i, h in enumerate(headers) if out[i] > 0 and not _CHANGE_HEADER.search(h)]
    baseless = [j for j, h in enumerate(headers) if _CHANGE_HEADER.search(h) and not _YEARISH.search(h)]
    if len(named) >= 2 and baseless:
        for j in baseless:
            out[j] = max(out[i] for i in named) + scores[j]
        for i in named:
            out[i] = 0.0
    return out


# a cell found by its value in a row or a column the question names: what is asked is its column, or its row
# (a whole number it reaches, "系列 3 reach 5", is given too; a decimal reached is written out, `_WRITTEN_DECIMAL`)
_VALUE_GIVEN = re.compile(r"(?:数值|取值|值)\s*(?:为|是|等于)\s*(-?[0-9]+(?:\.[0-9]+)?)(?![0-9.])"
                          r"|\bvalue\s+(?:of\s+)?(-?[0-9]+(?:\.[0-9]+)?)(?![0-9.])"
                          r"|(?:达到|等于|\b(?:reach|equal|hit)(?:es|s|ed)?)\s*(-?[0-9]+)(?![0-9.%])", re.IGNORECASE)
_ASKS_WHICH_HEADER = re.compile(r"\bwhich\b|\bwhat\b|\bwho\b|哪|谁", re.IGNORECASE)
# or a measured value it writes out, alone, asking which row ("which baseline scores 81.18 on CIFAR-10-LT",
# "F-measure为0.486的是哪种方法"): a decimal, not the 10 of "CIFAR-10-LT" nor a count
_WRITTEN_DECIMAL = re.compile(r"(?<![A-Za-z0-9_.,\-])-?[0-9]+\.[0-9]+(?![A-Za-z0-9_.])")
# or a whole number it writes with its unit apart ("272 A", "721 W", "10秒", "835百万元"), not a name's glued one
# ("SVOLT 196Ah")
_WRITTEN_MEASURE = re.compile(r"(?<![A-Za-z0-9_.\-])([0-9]+)(?:\s+(?:A|W|V|Wh|Ah|s)(?![A-Za-z0-9])"
                              r"|\s*(?:[秒℃股元]|百万元|千元|万元|亿元))")
# or one grouped by thousands ("a size of 24,338 bytes"): a measured amount, not a count of things
_WRITTEN_GROUPED = re.compile(r"(?<![A-Za-z0-9_.,\-])[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?(?![A-Za-z0-9_]|[.,][0-9])")
_THOUSANDS = re.compile(r"(?<=[0-9]),(?=[0-9]{3}(?![0-9]))")


def _unwritten_label(row: list[str], asked: str) -> str:
    """The word cells opening a row (before its first number) that the plain question does not write out."""
    end = next((j for j, cell in enumerate(row) if j and _NUMBER_CELL.match(cell)), len(row))
    return " ".join(cell.strip() for cell in row[:end] if cell.strip() and not _writes(asked, _plain(cell)))


def _cell_by_value(question: str, content: str) -> Cell | None:
    """The one cell holding the value the question gives, in the row or column it names ("Category 8 这一行里数值为 5
    的是哪个系列", "for which category does Series 6 have the value 3", "最后一行数据里数值为5的是哪个系列"), or the
    largest or smallest of the one row it names ("类别 4 取值最大的系列"), or the one cell of the table holding a decimal
    the question writes out asking which row ("which baseline scores 81.18"; or a whole number with its unit, "721 W"),
    labelled by its row's word cells the question does not write out (none: the row is named, not asked for);
    None when there is no one such cell."""
    given = _VALUE_GIVEN.search(question)
    written = {float(_THOUSANDS.sub("", n)) for n in _WRITTEN_DECIMAL.findall(question)
               + _WRITTEN_MEASURE.findall(question) + _WRITTEN_GROUPED.findall(question)} \
        if given is None and _ASKS_WHICH.search(question) else set()
    extreme = _asked_extreme(question) if given is None else None
    if (given is None and extreme is None and not written) or not _ASKS_WHICH_HEADER.search(question):
        return None
    rows = _rows(content)
    grid = [row for row, _ in rows if len(row) > 2]
    if len(grid) < 3:
        return None
    header, data = grid[0], grid[1:]
    # (a row's own block's header: the second table of a chunk has its own, "股东名称 | 持有无限售条件股份数量 | …")
    block_header = {id(row): headers for headers, block in _blocks(rows) for row in block}

    def found(row: list[str], j: int, label: str = "") -> Cell:
        label = label or row[0].strip() or f"#{data.index(row) + 1}"
        own = block_header.get(id(row), header)
        return Cell(label, (own[j] if j < len(own) and own[j].strip() else header[j]).strip(), row[j].strip(),
                    1.0, 1.0, True)

    if written:
        held = [(row, j) for row in data for j in range(1, min(len(row), len(header)))
                if _single_number(row[j]) in written]
        if len(held) > 1:  # (the column the question names: "scores 27.4 on the Few classes")
            held = [(row, j) for row, j in held if _writes(_plain(question), _plain(header[j]))] or held
        # (of several values written, the row holding most of them: "允许以272 A充电10秒的是哪一个温度档")
        holds = {id(row): len({_single_number(r[j]) for r, j in held if r is row}) for row, _ in held}
        most = max(holds.values(), default=0)
        held = [(row, j) for row, j in held if holds[id(row)] == most]
        # (and a row the question names by its item number is the one asked: "the nominal capacity row (1.1.1) …
        # the higher ≥196 Ah figure", not 1.1.7's "≥196 Ah")
        if len({id(row) for row, _ in held}) == 1 \
                and not any(r is not held[0][0] and _item_number_written(r[0], question) for r in data):
            # the row's label is its word cells the question does not write out ("ImageNet-LT | Decouple-τ-norm [20]
            # | ResNet-50" of "Among the ImageNet-LT rows, which ResNet-50 method scores 27.4"): a row the question
            # names by its label is not asked for ("税金及附加 jumped 52.87%. Which explanation …"), nor is a label
            # other rows share ("优于大市" tells no peer apart)
            labels = [_unwritten_label(row, _plain(question)) for row in data]
            label = labels[next(i for i, r in enumerate(data) if r is held[0][0])]
            if label and labels.count(label) == 1:
                return found(*held[0], label)
        if given is None and extreme is None:
            return None
    asked = _plain(question)
    place = asked_row(question)
    named_rows = [data[-1 if place == LAST else place - 1]] if place is not None and place <= len(data) else \
        [row for row in data if row[0].strip() and _writes(asked, _plain(row[0]))]
    named_columns = [j for j in range(1, len(header)) if header[j].strip() and _writes(asked, _plain(header[j]))]
    if not named_rows and not named_columns or (extreme is not None and (len(named_rows) != 1 or named_columns)):
        return None  # nothing says where the value is (a column's extreme row is `_extreme_row`'s)
    cells = [(row, j, _single_number(row[j])) for row in named_rows or data for j in named_columns or range(1, len(row))
             if j < len(row) and j < len(header)]
    if extreme is not None:
        numbers = [n for _, _, n in cells if n is not None]
        if len(numbers) < 2:
            return None
        value = max(numbers) if extreme > 0 else min(numbers)
    else:
        value = float(next(g for g in given.groups() if g))
    hits = [(row, j) for row, j, n in cells if n == value]
    return found(*hits[0]) if len(hits) == 1 else None


def table_cell(question: str, content: str, subject: frozenset[str] = frozenset(), glosses: str = "") -> Cell | None:
    """The cell of a " | " table the question asks for (`_cell`), or None when it names no row: by its label, by a
    value of words it writes out or, when no label is named, by numbers it states that one row alone holds
    ("收盘价5.6元那一行" of rows all labelled 优于大市; not "the column holding 50, 150, 200", held by three rows);
    a cell the question finds by its value in a row or column it names answers with its header or label."""
    cell = _cell_by_value(question, content) or _cell(question, content, subject, glosses)
    if cell is not None and cell.value.strip() in _MARKS and _matrix(content) is not None \
            and not _writes(_plain(question), _plain(cell.header.split()[-1] if cell.header.strip() else "")):
        return None  # a mark of a matrix answers only whether its row and column meet, both written out
    if cell is not None:
        return cell
    rows = _rows(content)
    conditions = _conditions(_TABLE_DESCRIPTION.sub(r"\1", question), rows, subject | scope_only_terms(question))
    stated = {value for value in _unique_values(content, numbers=True) if _decimals(value)
              and _decimals(value) <= conditions}
    holding = [row for row, _ in rows[1:] if stated.intersection(map(_plain, row[1:]))]
    if len(holding) != 1 or _NUMBER_CELL.match(holding[0][0]):
        return None  # a table of values labels no row ("0.06C | 90%", its label the line before it)
    return _cell(question, content, subject, glosses, frozenset(stated))


# a matrix of marks ("×" where a row's item takes from a column's): asked which row or column is marked at
# exactly the items the question lists ("which receiving safety factor takes input from exactly SF1, SF5 and SF11",
# "恰好只从SF1、SF2、SF6…接受输入"), or at all the others ("provides input to all 13 other safety factors")
_MARKS = frozenset("×✓√✔●Xx")
_ASKS_EXACTLY = re.compile(r"\bexactly\b|\bonly\b|恰好|只[从有对向给被]|仅|此外不|\b(?:and|but) (?:to |from )?no other",
                           re.IGNORECASE)
# a run of items written as a range ("SF1至SF11", "SF1 through SF11"), and the items a question says are not marked
# ("却不接受SF13和SF14的输入", "but from neither SF13 nor SF14"): with a range, the items marked are exactly those asked
_ITEM_RANGE = re.compile(r"(?<![a-z0-9])([a-z]+)\s*([0-9]{1,3})\s*(?:至|到|~|～|–|—|-|\bthrough\b|\bto\b)"
                         r"\s*\1?\s*([0-9]{1,3})(?![0-9])", re.IGNORECASE)
_NOT_MARKED = re.compile(r"不接受|不向|不为|不提供|却不|而不|\bneither\b|\bnor\b|\bbut not\b", re.IGNORECASE)
_ASKS_ALL_OTHERS = re.compile(r"\ball\s+(?:[0-9]+\s+)?(?:of\s+the\s+)?other|\bevery other\b|其余全部|其他全部|其余所有|其他所有",
                              re.IGNORECASE)
_EXCEPT = re.compile(r"\bexcept\b|\bbut one\b|除了?|以外|之外", re.IGNORECASE)
# or the one item an item is not marked at ("SF1 provides input to every other … except one. Which one?")
_ASKS_EXCEPT_ONE = re.compile(r"\bexcept (?:for )?one\b|\bbut one\b|除了?一个", re.IGNORECASE)
# or the items written are the only ones left unmarked ("除自身外只有SF11、SF12、SF14三列没有打×", "唯独不向SF2和SF9提供",
# "leaves only the SF9 and SF14 rows unmarked", "left blank only under SF10", "marked for every factor except SF1"): all
# the others are marked
_ONLY_UNMARKED = re.compile(r"(?:只有|只在|仅在?|唯独|\bonly\b)[^？?。]{0,40}?(?:没有?打|未打|不打|没有?标|\bunmarked\b|\bblank\b)"
                            r"|唯独不|\b(?:unmarked|blank|empty)\s+only\b|\bevery\b[^?？。]{0,40}?\bexcept\b", re.IGNORECASE)
MIN_MATRIX_ITEMS = 3


@lru_cache(maxsize=4096)  # asked of each table in a context by every question saying "only", "exactly", "全部"
def _matrix(content: str) -> tuple[str, str, dict[str, frozenset[str]], dict[str, frozenset[str]]] | None:
    """A table of marks as (its rows' group label, its columns' group label, each row label's marked column
    headers, each column header's marked row labels), or None: a header row of distinct items over rows each
    labelled right before the columns of those items, every cell under them a mark or blank."""
    rows = _read_rows(content)
    for h in range(len(rows) - 1, -1, -1):
        header = rows[h][0]
        columns = [j for j, cell in enumerate(header) if cell and cell not in _MARKS and not _NUMBER_CELL.match(cell)]
        data = [row for row, _ in rows[h + 1:]]
        if len(columns) < MIN_MATRIX_ITEMS or len({header[j] for j in columns}) < len(columns) or not data \
                or columns[0] == 0 or any(len(row) <= columns[-1] for row in data):
            continue
        k = columns[0] - 1  # the labels' column
        cells = [row[j] for row in data for j in columns]
        if any(cell and cell not in _MARKS for cell in cells) or not any(cells) \
                or any(not row[k] for row in data):
            return None
        marked = {row[k]: frozenset(header[j] for j in columns if row[j]) for row in data}
        by_column = {header[j]: frozenset(row[k] for row in data if row[j]) for j in columns}
        row_group = next((row[k - 1] for row in data if k > 0 and row[k - 1]), "")
        column_group = next((above[columns[0]] for above, _ in rows[:h] if len(above) > columns[0]), "")
        return row_group, column_group, marked, by_column
    return None


def _matrix_cell(question: str, content: str, glosses: str) -> Cell | None:
    """The row or column of a table of marks (`_matrix`) marked at exactly the items the question writes out, or at
    every other item, as a cell: its label, what it is marked at; or the one item the item written out is not marked
    at. When a row and a column both are, the one whose group label the question's terms (its glosses too) name
    more ("接受输入的安全要素": a row); None when that leaves more than one."""
    asked = unicodedata.normalize("NFKC", question).lower()  # (spaces kept: "exactly SF1, SF3 and SF11")
    ranges = list(_ITEM_RANGE.finditer(asked))
    not_marked = _NOT_MARKED.search(asked)
    except_one = bool(_ASKS_EXCEPT_ONE.search(question))
    only_unmarked = bool(_ONLY_UNMARKED.search(question)) and not except_one
    exactly = not only_unmarked and (bool(_ASKS_EXACTLY.search(question)) or bool(ranges and not_marked))
    all_others = bool(_ASKS_ALL_OTHERS.search(question)) or only_unmarked
    # "every other factor except SF12, SF13 and SF14": all the others but the items written
    all_but = all_others and (bool(_EXCEPT.search(question)) or only_unmarked) and not except_one
    if not (exactly or all_others or except_one) or (_EXCEPT.search(question) and not (except_one or all_but)):
        return None
    found = _matrix(content)
    if found is None:
        return None
    row_group, column_group, marked, by_column = found
    q = set(terms(f"{question} {glosses}"))
    spans = {item: [m.start() for m in re.finditer(rf"(?<![a-z0-9]){re.escape(_plain(item))}(?![a-z0-9])", asked)]
             for item in (*marked, *by_column)}
    in_range = {item for item in spans for m in ranges if _plain(item) in
                {f"{m.group(1)}{n}" for n in range(int(m.group(2)), int(m.group(3)) + 1)}}
    # (an item written only after "却不", "neither" is one the answer is not marked at)
    written = {item for item, at in spans.items() if any(only_unmarked or not not_marked or a < not_marked.start()
                                                          for a in at)} | in_range
    hits = []
    for group, other, lines, others in ((row_group, column_group, marked, set(by_column)),
                                        (column_group, row_group, by_column, set(marked))):
        for label, items in lines.items():
            if except_one:
                missing = others - items - {label}
                if written == {label} and len(missing) == 1:  # the one item is on the other axis
                    hits.append((named(group, q), other, f"{group} {label}", missing.pop(), {"—"}))
                continue
            every_other = items == others - {label} - (written if all_but else set()) and label not in written
            # (a range's own items are not what is asked: SF11's row is SF1 to SF10)
            exact = items == written - {label} and not (ranges and label in in_range)
            if items and (exact if exactly else every_other):
                hits.append((named(group, q), group, other, label, items))
    best = max((hit[0] for hit in hits), default=0.0)
    top = [hit for hit in hits if hit[0] == best]
    if len(top) != 1:
        return None
    _, group, other, label, items = top[0]
    return Cell(f"{group} {label}".strip(), other, "、".join(sorted(items, key=_natural)), 1.0 + best, 1.0, True)


# the year of a report a question names ("its Q1 2025 report", "2025年一季报", "2024年年报")
_REPORT_YEAR = re.compile(r"(?:19|20)[0-9]{2}\s*年?\s*(?:Q[1-4]|第?[一二三四]季度|[一二三四](?=季)|半年|年度)?\s*"
                          r"(?:(?:annual|quarterly|interim)\s+)?(?:report|年报|季报|报告)"
                          r"|Q[1-4]\s*(?:19|20)[0-9]{2}\s+(?:(?:annual|quarterly|interim)\s+)?report", re.IGNORECASE)


def _named_by_label(header: str, label: str, q: frozenset[str]) -> bool:
    """Whether the question names the header only by words of the row label it writes out."""
    own = terms(header)
    return bool(own) and (own <= terms(label) or bool(own & q) and own & q <= terms(label))


def _natural(item: str) -> tuple:
    """"SF2" before "SF10"."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"([0-9]+)", item))


# a range the question names a row by ("-10℃≤T<-5℃", "0°C ≤ T < 5°C"): its bounds state no value
_RANGE_WRITTEN = re.compile(r"-?[0-9]+(?:\.[0-9]+)?\s*[°℃C]{0,3}\s*[≤<]\s*T\s*[≤<]\s*-?[0-9]+(?:\.[0-9]+)?"
                            r"(?:\s*[°℃C]{1,3})?")


def _conditions(question: str, rows: list[tuple[list[str], bool]], subject: frozenset[str]) -> set[str]:
    """The numbers the question states as values (not one naming the document, "SVOLT 196Ah", a table or
    figure, "图表 2", a row or column, "Category 7", "Series 5", nor a range's bound, the 10 of "-10℃≤T<-5℃",
    which "10%" is not): a row's condition."""
    return _decimals(_RANGE_WRITTEN.sub(" ", question)) - subject - _referenced(question) - _label_numbers(rows)


# "which method tops the F-measure column", "哪个方法的Overall总体准确率最高": the row of the extreme value of the
# column named is asked, its label the answer
_ASKS_MOST = re.compile(r"最高|最大|最多|\b(?:highest|largest|greatest|most|tops?|best)\b", re.IGNORECASE)
_ASKS_LEAST = re.compile(r"最低|最小|最少|\b(?:lowest|smallest|least|fewest)\b", re.IGNORECASE)
_ASKS_WHICH = re.compile(r"\bwhich\b|\bwho\b|哪个|哪一|哪种|哪类|哪家|谁", re.IGNORECASE)
EXTREME_ROW_SCORE = 10.0  # above any row the question names by its label: the question's shape decides


def _asked_extreme(question: str) -> int | None:
    """+1 when the question asks which row holds a column's largest value, -1 its smallest, else None."""
    most, least = _ASKS_MOST.search(question), _ASKS_LEAST.search(question)
    return None if bool(most) == bool(least) else 1 if most else -1


def _extreme_row(sign: int, q: frozenset[str], question_numbers: set[str], data: list[list[str]],
                 headers: list[str], scores: list[float]) -> Cell | None:
    """The cell of the largest (`sign` +1; -1: smallest) number in the one column the question (its terms `q`, its
    numbers `question_numbers`, signs kept) names best, among the rows of the group it names ("iNaturalist 2018"),
    when one row alone holds it; else None. The labels' own column is the one answering, never the one compared
    ("哪个电芯温度档允许的充电电流最小": not the smallest "≥-20" of 电芯温度)."""
    scores = [0.0, *scores[1:]]
    top = max(scores, default=0.0)

    def written(cell: str) -> bool:  # a range's label by its numbers, signs kept: "≥ -20" is not the 20 of "20% SOC"
        return bool(terms(cell)) and terms(cell) <= q and _signed_decimals(cell) <= question_numbers

    # (a row the question writes out asks the extreme across its columns, "类别 4 取值最大的系列": not read here)
    labels = Counter(row[0] for row in data if row)
    if top <= 0 or scores.count(top) > 1 or any(n == 1 and written(label) for label, n in labels.items()):
        return None
    j = scores.index(top)

    def label_cells(row: list[str]) -> list[str]:  # the cells before its first number
        return row[:next((i for i, c in enumerate(row) if _NUMBER_CELL.match(c)), len(row))]

    named_group = [row for row in data if any(written(c) for c in label_cells(row))]
    numbers = [(_single_number(row[j]), row) for row in (named_group if 0 < len(named_group) < len(data) else data)
               if j < len(row)]
    found = sorted(((n, row) for n, row in numbers if n is not None), key=lambda nr: -sign * nr[0])
    if len(found) < 2 or found[0][0] == found[1][0]:
        return None
    row = found[0][1]
    # a row labelled by a range ("≥25 | 636 | 10") is named by it, though it reads as a number
    label = label_cells(row) or (row[:1] if j > 0 else [])
    return Cell(" | ".join(c for c in label if c), headers[j], row[j], EXTREME_ROW_SCORE, top, True)


# "the coldest temperature band in which pulse discharge is still permitted", "温度最高的允许充电区间": of the rows of a
# table by temperature whose column asked holds a number (not "不允许No discharging"), the coldest or hottest
_ASKS_COLDEST = re.compile(r"\bcoldest\b|\blowest[- ]temperature\b|最低温度|温度最低|最冷", re.IGNORECASE)
_ASKS_HOTTEST = re.compile(r"\b(?:hottest|warmest)\b|\bhighest[- ]temperature\b|最高温度|温度最高|最热", re.IGNORECASE)
_TEMPERATURE = re.compile(r"温度|temperature|[℃°]", re.IGNORECASE)


def _asked_band(question: str) -> int | None:
    """-1 when the question asks a table's coldest temperature band, +1 its hottest, else None."""
    cold, hot = _ASKS_COLDEST.search(question), _ASKS_HOTTEST.search(question)
    return None if bool(cold) == bool(hot) else -1 if cold else 1


def _band_row(sign: int, data: list[list[str]], headers: list[str], scores: list[float]) -> Cell | None:
    """The cell of the column the question names best in the coldest (`sign` -1) or hottest (+1) row of a table
    labelled by temperatures ("≥ -30 | 117 | 30") that holds a number there; None unless one row alone is."""
    top = max(scores[1:], default=0.0)
    if top <= 0 or scores[1:].count(top) > 1 or not headers or not _TEMPERATURE.search(headers[0]):
        return None
    j = scores.index(top, 1)
    bands = [(sign * (max if sign > 0 else min)(float(n) for n in numbers), row)
             for row in data if j < len(row) and _single_number(row[j]) is not None
             for numbers in [_signed_decimals(row[0])] if numbers]
    bands.sort(key=lambda band: -band[0])
    if not bands or (len(bands) > 1 and bands[0][0] == bands[1][0]):
        return None
    row = bands[0][1]
    return Cell(row[0].strip(), headers[j], row[j], EXTREME_ROW_SCORE, top, True)


# a temperature the question states ("此刻温度为22℃", "sitting at 48 °C"; not a bound, "below -20℃", "≥-10℃", "15–20 ℃",
# nor a test's condition, "(25℃, 1C …)"): the band holding it ("20°C≤T<25℃", "≥45" up to "≥55", "<-30") is the row asked
_TEMPERATURE_STATED = re.compile(r"(?:温度|temperature|\bat|\bis|为|是)\s{0,2}(?:大?约|about\s|around\s)?\s?"
                                 r"(?<![0-9.≤<≥>\-–~～至到])"
                                 r"(-?[0-9]+(?:\.[0-9]+)?)\s*(?:°\s*C|℃)(?!\s*(?:[≤<]|以[上下]|or\b))",
                                 re.IGNORECASE)
_TWO_SIDED = re.compile(r"(-?[0-9.]+)\D{0,4}?[≤<]\s*T\s*([≤<])\D{0,2}?(-?[0-9.]+)")
_ONE_SIDED = re.compile(r"^\s*([≥>≤<])\s*(-?[0-9.]+)\D*$|^\s*(-?[0-9.]+)\D{0,4}?([<≤])\s*T\s*$")


def _stated_temperature(question: str) -> float | None:
    stated = {float(t) for t in _TEMPERATURE_STATED.findall(_RANGE_WRITTEN.sub(" ", question))}
    return stated.pop() if len(stated) == 1 else None


def _band_holding(temperature: float, labels: list[str]) -> set[str]:
    """The labels of temperature bands ("15°℃≤T<20℃", "≥ -10", "<-30", "55℃<T") holding the temperature; a "≥" band
    reaches up to the next "≥" band's bound."""
    read = {label: unicodedata.normalize("NFKC", label) for label in labels}
    floors = sorted({float(m.group(2)) for label in read.values()
                     for m in [_ONE_SIDED.match(label)] if m and m.group(1) and m.group(1) in "≥>"})
    holding = set()
    for label, normal in read.items():
        two, one = _TWO_SIDED.search(normal), _ONE_SIDED.match(normal)
        if two and not _HAS_LETTERS.search(normal):
            low, high = float(two.group(1)), float(two.group(3))
            inside = low <= temperature < high or (two.group(2) == "≤" and temperature == high)
        elif one and one.group(1):
            bound = float(one.group(2))
            above = [f for f in floors if f > bound]
            inside = bound <= temperature < (above[0] if above else math.inf) if one.group(1) in "≥>" \
                else temperature < bound or (one.group(1) == "≤" and temperature == bound)
        elif one:
            inside = temperature > float(one.group(3))
        else:
            continue
        if inside:
            holding.add(label)
    return holding


_CASH_FLOW_STATEMENT = re.compile(r"(?:consolidated\s+)?(?:statements?\s+of\s+cash\s+flows?"
                                  r"|cash[\s-]+flows?\s+statements?)|(?:合并)?现金流量表", re.IGNORECASE)
_CASH_FLOW_SAID = re.compile(r"\bcash[\s-]+flows?\b|现金流", re.IGNORECASE)
_CASH_SAID = re.compile(r"\bcash\b|现金", re.IGNORECASE)
_CASH_FLOW_TERMS = terms("现金流量表 flow flows statement") - terms("现金")


def _single_number(cell: str) -> float | None:
    """The one number a value cell holds ("72.0", "2.1C", "-10", "24,338"), else None."""
    found = _signed_decimals(_THOUSANDS.sub("", cell)) if _NUMBER_CELL.match(cell) else set()
    return float(next(iter(found))) if len(found) == 1 else None


def _cell(question: str, content: str, subject: frozenset[str] = frozenset(), glosses: str = "",
          stated: frozenset[str] = frozenset()) -> Cell | None:
    """The cell of a " | " table the question asks for, or None when no row label is named. The
    question's terms in `subject` name the document ("CC-SAM" of "in the CC-SAM paper, what does
    MiSLAS reach"): a row they name ranks below a row the question's other terms name. `glosses`:
    the Chinese an English question's words translate to, or the English a Chinese one's do
    (`tasks.qa.gloss`); they name rows and columns as its words do, but write no label out ("财务费用" of
    "shown under finance expenses"). The one year a question names, when it names the document too, names
    the statement's current period ("本期发生额" of "in January–March 2025" in BYD's Q1 2025 report)."""
    question = _SET_APART.sub(" ", _TABLE_DESCRIPTION.sub(r"\1", question))
    q, q_numbers = terms(f"{question} {glosses}"), _numbers(question)
    # the cash flow statement named ("according to its consolidated cash flow statement") names no row by its words
    # ("经营活动产生的现金流量净额"), unless the question says them beside it ("net cash flow from …")
    beside = _CASH_FLOW_STATEMENT.sub(" ", question)
    if beside != question and not _CASH_FLOW_SAID.search(beside):
        q -= _CASH_FLOW_TERMS if _CASH_SAID.search(beside) else _CASH_FLOW_TERMS | terms("现金 cash")
    # the year of the report named ("its Q1 2025 report", "2025年一季报") names no column when another year is asked
    report_years = {y for m in _REPORT_YEAR.finditer(question) for y in _years(_numbers(m.group()))}
    column_numbers = q_numbers - report_years if _years(q_numbers) - report_years else q_numbers
    ratio = bool(_ASKS_RATIO.search(question))  # "持股比例", "毛利率": a percentage answers
    numbering_asked = bool(_ASKS_NUMBERING.search(question))
    # "原因是什么", not "多少" / "哪一年" / "by what rate"
    holds_asked = answers_what_is_asked(question)
    wants_words = holds_asked is None and not ratio and not numbering_asked
    best: tuple[float, Cell] | None = None
    extreme_sign = _asked_extreme(question) if _ASKS_WHICH.search(question) else None
    band_sign = _asked_band(question)
    rows = _rows(content)
    matrix = _matrix_cell(question, content, glosses)
    if matrix is not None:
        return matrix
    asked, asked_about = _plain(question), _plain(focus(question))
    # (a list's item written in the other language: "蓝莓、草莓" of "Blueberry, Strawberry, Cranberry")
    items_asked = f"{asked} {_plain(glosses)}" if glosses else asked
    symbols = _symbols_asked(question)
    subject = subject | scope_only_terms(question)
    periods = _period_terms(f"{question} {glosses}")
    named_by = q | periods  # what names a column
    years = _years(q_numbers)  # (two years named, "2025" and "January–March 2024", ask by dates; "2025E" a forecast)
    current = not periods and len(years) == 1 and years <= subject and not _FORECAST_YEAR.search(question)
    asked_terms = terms(focus(question)) or q | periods
    conditions = _conditions(question, rows, subject)
    targets = {n for m in _TARGET.finditer(question) for n in _decimals(m.group(1))} & conditions
    asked_numbers = _signed_decimals(question)
    bounds = {n for m in _BOUND_WRITTEN.finditer(question) for n in _signed_decimals(m.group())}
    meaning = bool(_ASKS_MEANING.search(question))
    capitalized = frozenset(_CAPITALIZED.findall(question))
    change = bool(_ASKS_CHANGE.search(question))
    change_asked = bool(_ASKS_ANY_CHANGE.search(question))
    # neither a change nor a rate asked: a column of changes against a base is not the one asked ("at the end of the
    # previous year" names 上年度末, not 本报告期末比上年度末增减（%）)
    amount_asked = not change_asked and not ratio
    # a value the question writes out that no other row holds names its row ("负责工会经费使用监督审查工作的是
    # 哪个职位": 经审委员's duty): the row's label, or another column, is what is asked
    quotes = {cell for cell in _unique_values(content) if cell in asked} | stated
    place_asked = asked_row(question)
    column_asked = asked_column(question)
    row_start, column_head = _asked_first_cell(_ASKED_ROW_START, question), \
        _asked_first_cell(_ASKED_COLUMN_HEAD, question)
    forecast = bool(_ASKS_FORECAST.search(question)) or not years  # no year asked: any column may be
    focused = terms(focus(question))
    # a file the question writes out ("…征求意见稿（zh_docx/nbt_npp_…_part1_draft.docx）有多少字节") is the row of a file
    # list asked, whatever words the other rows' cells share with the question (part 12's Chinese title)
    paths = {row[0] for row, _ in rows[1:] if row and FILE_PATH.fullmatch(row[0].strip())
             and _writes(asked, _plain(row[0]))}
    # so is a grade or code it writes out ("TA12 (not TA12-1)", "TC6"): another code's row shares only its parts
    # ("ta", "12" and the "1" of "Table 1" name "TA12-1" as well as "TA12")
    codes = _whole_codes({row[0] for row, _ in rows[1:] if row and _CODE_LABEL.match(_plain(row[0]))
                          and _writes(asked, _plain(row[0]))}, question)
    temperature = _stated_temperature(question)
    for block_headers, data in _blocks(rows):
        banded = _band_holding(temperature, [row[0] for row in data if row]) if temperature is not None else set()
        group_written = None  # the row score of the group item ("（一）…") the question writes out, while its items follow
        # a block with a column saying the opposite of what is asked is the other table ("前10名无限售条件
        # 股东持股情况" for 有限售条件股份): none of its columns is named
        other_table = any(_opposite(h, question) for h in block_headers)
        missing = symbols - {_symbol(h.split()[-1]) for h in block_headers if h.strip()}

        def column_scores(headers: list[str], condition_header: str = "") -> list[float]:
            naming, numbers = (named_by - terms(condition_header), column_numbers - _numbers(condition_header)) \
                if condition_header else (named_by, column_numbers)
            return [0.0 if other_table or (amount_asked and _CHANGE_COLUMN.search(h))
                    else _column_score(h, naming, numbers, asked, meaning, symbols, missing, capitalized, forecast)
                    + (CURRENT_PERIOD_SCORE if current and _CURRENT_PERIOD.match(h) else 0.0) for h in headers]

        def answer_scores(headers: list[str], condition_header: str = "") -> list[float]:
            """The column scores a cell is chosen by: a change's column takes its base's (`_compared`)."""
            scores = column_scores(headers, condition_header)
            return _compared(headers, scores) if change else scores

        block_scores = column_scores(block_headers)
        # (a row of the document's own name, "CC-SAM" of "In CC-SAM's comparison", writes no row out)
        extreme = _extreme_row(extreme_sign, q - subject, asked_numbers, data, block_headers, block_scores) \
            if extreme_sign else _band_row(band_sign, data, block_headers, block_scores) if band_sign else None
        if extreme is not None and (best is None or EXTREME_ROW_SCORE > best[0]):
            best = (EXTREME_ROW_SCORE, extreme)
        # the labels' own column named ("which position", "Column A"), when the label is the first cell or the
        # second after a "No." column
        label_asked = [k < len(block_headers) and bool(block_headers[k].strip()) and named(block_headers[k], q) > 0
                       for k in (0, 1)]
        # a column asked by its place, or by what its first row holds (the header, or a grid's first row)
        heads = block_headers if any(h.strip() for h in block_headers) else (data[0] if data else [])
        placed_column = next((j for j, h in enumerate(heads) if _plain(h) == column_head), None) \
            if column_head else None
        if change:
            block_scores = _compared(block_headers, block_scores)
        headers, col_scores, group_of = block_headers, block_scores, None
        groups = _group_headers(data)
        places = sum(group is not row for row, group in zip(data, groups))
        place = 0
        for row, group in zip(data, groups):
            if group is row:
                continue  # a row group's own header names its columns: it answers nothing
            place += 1
            if (paths and row[0] not in paths) or (codes and row[0] not in codes and _CODE_LABEL.match(_plain(row[0]))):
                continue
            started = row_start is not None and _plain(row[0]) == row_start
            at_place = started or \
                (place_asked is not None and place == (places if place_asked == LAST else place_asked))
            if group is not group_of:  # the group's header names the columns it fills, the block's the rest
                group_of = group
                headers = block_headers if group is None else \
                    [g or (block_headers[j] if j < len(block_headers) else "") for j, g in enumerate(group)]
                col_scores = block_scores if group is None else answer_scores(headers)
            # the label: the first cell, or the second after a "No." column ("1.1.1 | 电芯容量 | …"),
            # with the word cells after it that name the row too (a row group's "ImageNet-LT | CC-SAM
            # | ResNeXt-50 | 63.1"); a label the question writes out ("≥-10" in "温度≥-10℃时") counts one more
            k = 1 if _NUMBERING.match(row[0]) and len(row) > 2 else 0
            key = k + 1
            while key < len(row) and key - k < MAX_KEY_CELLS and row[key] and not _NUMBER_CELL.match(row[key]):
                key += 1
            # "其中:利息费用" is the row of 利息费用, "LADE [17]" of LADE (a citation names nothing)
            name = _uncited(_SUB_ITEM.sub("", row[k]))
            label = " ".join(dict.fromkeys(_uncited(c) for c in [name, *row[k + 1:key]] if c))
            shown = " ".join(dict.fromkeys([row[k], *(c for c in row[k + 1:key] if c and terms(_uncited(c)) <= q)]))
            values = [j for j in range(k + 1, len(row)) if row[j]]
            if not values and row[k] and at_place and label_asked[k]:
                # "what is in the Column A cell of the last row": the label is the value asked, the place names it
                values, shown = [k], f"#{place}"
            if k and numbering_asked:
                values.insert(0, 0)  # "这一行的编号（No.）是什么", "which item number": the row's own number
            at_column = placed_column if column_asked is None else \
                len(row) - 1 if column_asked == LAST else column_asked - 1
            if at_column is not None and 0 <= at_column < len(row) and row[at_column] and at_column not in values:
                values = sorted([*values, at_column])  # a place counts every cell, the label's too
            # a label cell the question writes out ("with a ResNeXt-50 backbone") is said, not asked
            said = [j for j in values if j < key and terms(_uncited(row[j])) <= q]
            if len(said) < len(values):
                values = [j for j in values if j not in said]
            # the terms the whole label shares with the question break ties among the rows its first
            # cell names alike (a row group's "ImageNet-LT": "… DisAlign [58] | ResNet-50" is DisAlign's)
            # a word cell of the label is named on its own too: "Name of the currently running routine", not
            # the "Schema name of …" of the row before, when the question asks "which variable holds the name …"
            words = [_uncited(c) for c in row[k + 1:key] if c]
            row_score = max(named(name, q), named(label, q), *(named(c, q) for c in words)) \
                + GROUP_TIE_WEIGHT * len(terms(label) & q)
            # (a value the question writes out names its row even where it sits in the label's cells: "PACKAGE_VERSION |
            # VARCHAR(64)" of "数据类型为VARCHAR(64)的是哪一个")
            quoted = [j for j in range(k + 1, len(row)) if row[j] and _plain(row[j]) in quotes]
            if quoted:
                row_score = max(row_score, *(named(row[j], q) for j in quoted))
            # the labels' own column named ("which position …", "哪个职位"): the label is asked, and the row is named by
            # what its words say, in the other language too ("in overall charge of the union's work": 全面负责工会工作)
            described = max((named(row[j], q, subject) for j in values if j >= key and not _NUMBER_CELL.match(row[j])),
                            default=0.0) if label_asked[k] else 0.0
            row_score = max(row_score, described)
            if at_place:  # the row asked by its place is named as by its label written out (`written`)
                row_score = max(row_score, GROUP_TIE_WEIGHT)
                name, shown = name or f"#{place}", row[0] if started else shown.strip() or f"#{place}"
            # so is a row by its own item number written out ("item 1.1.11", "4.1.5.5"), one of two levels or more
            numbered = bool(k) and _item_number_written(row[0], question)
            if numbered:
                row_score = max(row_score, GROUP_TIE_WEIGHT)
            if banded and _RANGE_SIGN.search(row[k]):  # another band is not asked ("30 s" is no "≥ -30")
                if row[k] not in banded:
                    continue
                row_score = max(row_score, GROUP_TIE_WEIGHT)
            if _changes_row(name) and row_score > 0:  # the change of the row above: asked as a change or not at all
                row_score += GROUP_TIE_WEIGHT if change_asked else -GROUP_TIE_WEIGHT
            if not name or not values or row_score <= 0:
                continue
            # a value the question states is the row's condition, not its answer ("充到90% SOC那一段的
            # 充电电流": the row holding "90%" is the one asked, its other cell the answer)
            stated = [j for j in values if _states(row[j], conditions) or _lists_written(row[j], items_asked)
                      or _condition_written(row[j], conditions)]
            conditioned = 0 < len(stated) < len(values)
            scores_here = col_scores
            if conditioned:
                values = [j for j in values if j not in stated]
                # the words and year naming the condition's column name no other ("2023A每股收益为0.48元的那家公司收盘价":
                # EPS 2023A holds the condition, the closing price is asked, not PE 2023A)
                condition_header = " ".join(headers[j] for j in stated if j < len(headers))
                if condition_header.strip():
                    scores_here = answer_scores(headers, condition_header)
            # (its label's terms beside the document's own name break ties first: "Places-LT | CE", not the paper's
            # own "Places-LT | CC-SAM" row)
            own = max(named(name, q, subject), named(label, q, subject), described) \
                + GROUP_TIE_WEIGHT * len(terms(label) & q - subject) if subject else row_score
            if subject:
                row_score = own + SUBJECT_ROW_WEIGHT * row_score
            # a range's label is written out by its numbers, signs kept, whatever its symbols ("-15℃C≤T<-10℃"
            # as OCR read it, "-15℃≤T<-10℃" in the question; not "10°℃≤T<15℃")
            label_numbers = _signed_decimals(name)
            # its unit apart, when a column is named too ("营业收入, in yuan, for the same period of the previous year"
            # of "营业收入（元）"; not "净利润" alone, of "净利润(百万元)")
            column_named = max(scores_here, default=0.0) > 0
            # (a label of the document's own name writes no row out, "CC-SAM" in the CC-SAM paper, but a path is
            # one: "zh_pdf/prc_constitution.pdf" names its row of a file list, whatever document it names)
            written_name = name.rsplit(None, 1)[0] if _changes_row(name) else name  # the row above's label
            written_name = _ITEM_PREFIX.sub("", written_name) or written_name
            written = (len(_plain(written_name)) >= 2 and _writes(asked, _plain(written_name), column_named)
                       and (bool(terms(name) - subject) or len(terms(name)) >= PATH_LABEL_TERMS)) or \
                (label_numbers <= (asked_numbers if len(label_numbers) >= 2 else bounds)  # a one-sided "≥-10": bounds
                 and bool(label_numbers) and not _HAS_LETTERS.search(name) and _RANGE_SIGN.search(name) is not None) \
                or bool(quoted) or at_place or numbered or row[k] in banded
            if written:
                # the row of what is asked beats a row the question names as its setting ("财务费用项下的利息费用")
                row_score += 1.0 + FOCUS_ROW_BONUS * (_plain(written_name) in asked_about)
            if _GROUP_ITEM.match(name):
                group_written = row_score if written else None
            elif written and group_written is not None and _NUMBERED_SUB_ITEM.match(name):
                # an item of the group the question writes out too is what it asks ("“不能重分类进损益的其他综合收益”项下
                # 的所得税影响": "5.所得税影响", not "（一）不能重分类…")
                row_score = max(row_score, group_written + GROUP_TIE_WEIGHT)
            # a number naming the row too ("20" of "15℃≤T<20℃", not the 10 of "-10℃≤T<-5℃") may be the
            # question's way to name the row only: its step "20%" is a weaker sign of the condition asked
            if conditioned:
                beyond_label = any(_signed_decimals(row[j]) - _signed_decimals(name) for j in stated)
                row_score += CONDITION_BONUS * (1.0 if beyond_label else LABEL_CONDITION_SHARE)
                # "从35%充到55%": the step the question goes to, not the one it starts from
                row_score += TARGET_BONUS * any(_states(row[j], targets) for j in stated)
            # a header the words writing the row's label out hold is not named by them ("Type" of "the
            # description of ROUTINE_TYPE"; "Data type" of "the data type of USER_TYPE" is; "变动率" of "公允价值变动收益
            # 金额" is not, its 变动 being the label's; nor "Ti" by the composition "TB3 (Ti-3.5Al-10Mo-8V-1Fe)")
            row_columns = scores_here if not written else \
                [0.0 if _named_by_label(h, label, named_by) and _symbol(h.split()[-1]) not in symbols else score
                 for h, score in zip(headers, scores_here)]  # (the "Ta" of "TA29" is asked as 钽（Ta）)
            # among columns named alike, the one what is asked names ("Series 5" of "（Series 4、Series 5、Series 8）
            # 中，第二行数据的 Series 5 数值") breaks the tie
            scored = [((row_columns[j] if j < len(row_columns) else 0.0) + (NUMBERING_SCORE if j < k else 0.0)
                       + (PLACED_COLUMN_SCORE if j == at_column else 0.0)
                       + (PERCENT_BONUS if ratio and "%" in row[j] else 0.0)
                       + GROUP_TIE_WEIGHT * (j < len(row_columns) and row_columns[j] > 0 and bool(focused)
                                             and terms(headers[j]) <= focused), -j)
                      for j in values]
            # a question asking no number takes a named column of words over a named year's number
            # ("2025年1-3月管理费用增加的原因" → 变动原因, not 2025年1-3月)
            worded = [sj for sj in scored if sj[0] > 0 and not _NUMBER_CELL.match(row[-sj[1]])]
            # and one asking a number a named column holding one over a named column of words, digits none ("谷物类每一份含多少
            # 卡路里": "Calories per portion", not the "Food" of "食物表中"; a range, "0.7~1.5", is a number asked)
            best_cell = max(worded if wants_words and worded else scored)
            if holds_asked is not None and not _HAS_DIGIT.search(row[-best_cell[1]]):
                best_cell = max((sj for sj in scored if sj[0] > 0 and holds_asked(row[-sj[1]])), default=best_cell)
            score, j = best_cell
            j = -j
            if conditioned and len(values) == 1:
                score = max(score, IMPLIED_COLUMN_SCORE)  # the value beside the one stated is what is asked
            if len(row) < len(headers) and (j >= key or named(headers[j], asked_terms) <= 0):
                # MinerU merged some of this row's cells ("TA10 | Ti-0.3Mo-0.8Ni | 余量 | 0.6~0.9 | 0.2~0.4 |
                # …" under 21 element columns): past the label's own cells, which header a value is under
                # cannot be told, so the row answers whole; so it does unless what is asked names the
                # header ("名义化学成分是什么", not a number matching a garbled "A1" for "Al")
                cell = Cell(shown, "", " | ".join(row[i] for i in values), row_score, max(score, 0.0), written)
            elif score > 0:
                value = _paired(row[j], [row[i] for i in stated], question) if conditioned else row[j]
                # (a row picked by an item of its list the question writes, "Food一栏含有Maple的那一类", is named as
                # surely as by its label)
                listed = conditioned and any(_lists_written(row[i], items_asked) for i in stated)
                cell = Cell(shown, headers[j] if j < len(headers) else "", value, row_score, score, written or listed)
            else:
                every = "；".join(f"{headers[j]}: {row[j]}" if j < len(headers) and headers[j] else row[j]
                                 for j in values)
                # a table whose header was left on the page before names no column: a row written out answers
                # with all its values as a named cell does ("夏佐全 — 境内自然人；2.72%；…；61,976,705；…"), and so
                # does one holding a word the question says, as a named column would ("pledged": "融捷投资… | 5.11% |
                # … | 质押 | 13,570,000")
                unheaded = not any(h.strip() for h in headers)
                said = max((named(row[j], q) for j in values if terms(row[j]) and terms(row[j]) <= q
                            and not _NUMBER_CELL.match(row[j])), default=0.0) if unheaded else 0.0
                score = max(IMPLIED_COLUMN_SCORE, said) if said else score
                implied = IMPLIED_COLUMN_SCORE if unheaded and (written or said) else 0.0
                cell = Cell(shown, "", every, row_score, implied, written)
            if own <= 0 and score <= 0:
                continue  # only the document's name names the row ("CC-SAM" of "In the CC-SAM paper"), no column
            total = row_score + 0.8 * max(score, 0.0)
            if best is None or total > best[0]:
                best = (total, cell)
    return best[1] if best is not None else None


_NAMED_NUMBER = re.compile(r"^\s*[^\W\d_][^\d]{0,20}?\s([0-9]+)\s*$")  # "Category 7", "系列 2"; not "-10℃≤T"
# a table or figure a question refers to by number ("图表 2", "Table 3", "Figure 1")
_REFERENCE = re.compile(r"(?:图表|图|表|table|figure|fig\.|chart)\s*([0-9]+)", re.IGNORECASE)


def _referenced(question: str) -> set[str]:
    return {n for m in _REFERENCE.finditer(question) for n in _decimals(m.group(1))}


def _label_numbers(rows: list[tuple[list[str], bool]]) -> set[str]:
    """The numbers ending a name that labels a row or heads a column ("Category 7", "Series 5", "类别 4"):
    a value cell holding one states nothing the question asks by."""
    out: set[str] = set()
    for i, (row, _) in enumerate(rows):
        for cell in row if i == 0 else row[:1]:
            m = _NAMED_NUMBER.match(cell)
            if m:
                out |= _decimals(m.group(1))
    return out


def _uncited(cell: str) -> str:
    """A cell without its citations ("LADE [17]" → "LADE"; "OpenMax [3]OLTR [32]" → "OpenMax OLTR")."""
    return _CITATION.sub(" ", cell).strip()


# letters and digits OCR reads one for the other in a grade's name ("TA7E1I" for TA7ELI, "TCA" for TC4):
# `_OCR_LOOKALIKES` and the 4 OCR reads as A, which an element symbol never holds
_GRADE_LOOKALIKES = str.maketrans("104i", "loal")
_GRADE = re.compile(r"^[a-z]{1,3}[0-9]|^[a-z]{2}a$")  # "ta12", "tc4eli"; "tca" as OCR read "TC4"
_CODE_LABEL = re.compile(r"^[a-z]{1,3}[0-9]+[a-z0-9-]*$")  # a row labelled by a code alone: "ta12-1", "tc4eli"


# what a question sets apart from what it asks names no row or column: "TA24-1, not TA24 itself",
# "其他非流动资产（不是其他非流动金融资产）", "TA23（Ti-2.5Al-2Zr-1Fe，不是TA23-1）", "which standard covers plate, not the
# aviation plate-and-strip specification?"; what it tells the row apart from ("注意与TA12区分", "the lower-silicon
# sibling of TA23")
_SET_APART = re.compile(r"\b(?:not|rather than)\s+(?:the\s+)?\S+\s+itself\b|(?:不是|而非|并非)\S{1,20}?本身"
                       r"|[（(]\s*(?:不是|而非|并非|not\b)[^()（）]{1,60}[)）]|[，,]\s*(?:不是|而非|并非)[^，,。？?()（）]{1,40}"
                       r"|,\s*(?:not|rather than)\s+(?:the\s+)?[^,，?？;；()]{2,80}"
                       r"|(?:注意)?[与和][^\s，,。？?、（）()与和]{1,20}?相?区[分别]开?"
                       r"|\b(?:sibling|counterpart)\s+of\s+(?:the\s+)?\S+"
                       r"|\b(?:unlike|as opposed to|instead of)\s+(?:the\s+)?[^,，?？;；()]{2,40}", re.IGNORECASE)


_UNIT_SUFFIX = re.compile(r"(?<=.{2})\([^()0-9]{1,6}\)$")  # "营业收入(元)" (`_plain`), "voltage(v)": the unit


# a code as the question writes it, whole: "TA1G-1", "TA32", "TC4" of "TC4钛合金"
_CODE_WRITTEN = re.compile(r"(?<![a-z0-9])[a-z]{1,3}[0-9][a-z0-9]*(?:-[a-z0-9]+)*")


def _whole_codes(codes: set[str], question: str) -> set[str]:
    """Of the codes the question writes out, those it writes whole, when it does: not "TA1" and "TA1G" of "TA1G-1",
    nor "TA3" of "TA32" (`_plain` drops the spaces that tell where a code ends), as OCR may have read them ("TA7E1I"
    for "TA7ELI")."""
    whole = {t.translate(_GRADE_LOOKALIKES)
             for t in _CODE_WRITTEN.findall(unicodedata.normalize("NFKC", question).lower())}
    return {code for code in codes if _plain(code).translate(_GRADE_LOOKALIKES) in whole} or codes


def _writes(asked: str, label: str, unit_apart: bool = False) -> bool:
    """Whether the question (`_plain`, spaces gone) writes the label out, not as the start of a longer one
    with a dash ("TA12" of "TA12-1"), a grade as OCR may have read it ("TA7E1I" for "TA7ELI", "TCA" for
    "TC4"), nor as a part of an identifier ("USAGE" of "FUNCTION_USAGE"; "USER_TYPE" is written "user type"); with
    `unit_apart`, its bracketed unit may be left out ("营业收入" of "营业收入（元）")."""
    unit = _UNIT_SUFFIX.search(label) if unit_apart else None
    if unit and _writes(asked, label[:unit.start()]):
        return True
    if "_" in label and len(label) > 3:  # "USER_TYPE" written "user type"
        return _writes(asked.replace("_", ""), label.replace("_", ""))
    if not label[-1:].isascii() or not label[-1:].isalnum():
        return label in asked
    if (_HAS_DIGIT.search(label) and re.search(r"[a-z]", label)) or _GRADE.match(label):
        asked, label = asked.translate(_GRADE_LOOKALIKES), label.translate(_GRADE_LOOKALIKES)
    at = asked.find(label)
    while at >= 0:
        after = asked[at + len(label):at + len(label) + 2]
        # (nor as a part of an identifier: "USAGE" of "FUNCTION_USAGE")
        if not (after[:1] == "-" and after[1:].isascii() and after[1:].isalnum()) \
                and "_" not in (asked[at - 1:at], after[:1]):
            return True
        at = asked.find(label, at + 1)
    return False


@lru_cache(maxsize=65536)  # a batch reads the same tables' labels for many questions
def _plain(text: str) -> str:
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text or "").lower())


# ------------------------------------------------------------------------------------------------
# text


def clauses(sentence: str) -> list[str]:
    return [c for c in (p.strip() for p in _CLAUSE_END.split(sentence or "")) if c]


def overlap(question_terms: set[str], text: str) -> float:
    """Share of the question's terms found in `text`."""
    return len(question_terms & terms(text)) / len(question_terms) if question_terms else 0.0


def shortest_clause(question: str, sentence: str) -> str:
    """The clause of `sentence` holding most of the question's terms (the earliest on a tie, since a
    sentence states its subject first), widened to its neighbour when it (nearly) only restates the
    question — to the whole sentence when it is the last clause ("国有经济，即…，是国民经济中的主导
    力量") — and to the nearest clause with a digit when the question asks for a number or a date."""
    parts = clauses(sentence)
    if len(parts) < 2:
        return sentence.strip()
    q = terms(question)
    scores = [len(terms(p) & q) for p in parts]
    i = max(range(len(parts)), key=lambda k: (scores[k], -k))
    if scores[i] == 0:
        return sentence.strip()
    # every clause that holds a good part of what the best one does, and what lies between them
    strong = [k for k, sc in enumerate(scores) if sc * 2 >= scores[i]]
    lo, hi = min(strong), max(strong)
    if len(set().union(*(terms(p) for p in parts[lo:hi + 1])) - q) < 2:  # restates the question only
        if hi + 1 < len(parts):
            hi += 1
        else:
            lo = 0
    answers = answers_what_is_asked(question)
    if answers is not None and not any(answers(p) for p in parts[lo:hi + 1]):
        holding = [k for k, p in enumerate(parts) if answers(p)]
        if holding:
            k = min(holding, key=lambda k: (abs(k - i), k > i))  # the nearest, the earlier on a tie
            lo, hi = min(lo, k), max(hi, k)
    return "".join(parts[lo:hi + 1]).rstrip("，,；;：:")


_ASKED_AT = re.compile(r"是多少|多少|是几|几[个年月天日次岁人项条种周倍]|是什么|什么|是哪|哪[一个些家年天]|是谁|谁|何时|多大|多长|是否")
# "What is the weight of the cell?" → "weight"; after a clause ("…, chart 1 plots Series 4, Series 5 and Series 8
# without category labels; what is the Series 5 value in the third data row?" → "Series 5 value")
_ASKED_EN = re.compile(r"(?:^|(?<=[;,:]))\s*(?:what|which|who)\s+(?:is|are|was|were)\s+(?:the\s+|an?\s+)?(.+?)\s+"
                       r"(?:of|for|in|on|at|that|when)\b", re.IGNORECASE)
# "What dividend yield does the broker report …", "…, what F-measure does IEM get …": the X of "what X does"
_ASKED_DOES = re.compile(r"\bwhat\s+((?:[\w'’-]+\s+){0,5}?[\w'’-]+)\s+(?:does|did|do)\b", re.IGNORECASE)
_FOCUS_START = re.compile(r".*[的，,、：:；;。？?]|.*中|.*里")
_ASIDE = re.compile(r"[（(][^（）()]*[，,、；;][^（）()]*[）)]")  # a bracketed aside of clauses
_MEANS = re.compile(r"(?:指的|是指|指|代表|表示|的含义|的意思|的全称)$")  # "X指的是什么", "SF代表什么": X is asked about
# "What (Chinese term) does SF stand for?", "What does PSR mean?": the abbreviation asked about
_STANDS_FOR = re.compile(r"\bwhat\s+(?:[\w-]+\s+){0,2}does\s+(?:the\s+)?(?:abbreviation\s+|acronym\s+|symbol\s+)?"
                         r"['\"“‘]?([\w./-]{1,20}?)['\"”’]?\s+(?:stand\s+for|mean|denote)\b"
                         # "How does clause 1.4 expand the acronym SSCs?"
                         r"|\b(?:expand|spell\s+out)\s+(?:the\s+)?(?:abbreviation|acronym)\s+"
                         r"['\"“‘]?([\w./-]{1,20}?)['\"”’]?(?=[\s?？,.]|$)", re.IGNORECASE)


# a question asking the title of a numbered figure or example ("图7的标题", "the caption of Example 3-10"); a Chinese
# question's 图 names an English document's "Figure 4-69" too, and the other way round
_FIGURE_NAMED = re.compile(r"(图|\bfigure|\bfig\.|\bexample)\s*([0-9]+(?:[.\-][0-9]+)?)(?![0-9])", re.IGNORECASE)
_ASKS_FIGURE_TITLE = re.compile(r"\btitle|\bcaption|\bheading|\bcalled\b|标题|题目|图题|题注|图注|展示的是什么", re.IGNORECASE)
_FIGURE = r"(?:图|figure|fig\.)"  # however the question writes it


def figure_asked(question: str) -> tuple[str, str] | None:
    """The numbered figure (or example) whose title the question asks, as (its kind's alternation, its number), each
    escaped for a pattern: ("(?:图|figure|fig\\.)", "4\\-68"); None for none."""
    m = _FIGURE_NAMED.search(question) if _ASKS_FIGURE_TITLE.search(question) else None
    return ("example" if m.group(1).lower() == "example" else _FIGURE, re.escape(m.group(2))) if m else None


# a closing sentence saying in what language to answer ("Give the Chinese wording.", "Quote the Chinese.", "Answer in
# Chinese.", "Give it as written in the Chinese text."), not what is asked
_ANSWER_FORM = re.compile(r"(?<=[?？.。])\s*(?:please\s+)?(?:give|quote|answer|reply)\b"
                          r"(?:\s+(?:in|with|it|as|written|the|its))*\s+(?:chinese|english)\b[^.?!。？]{0,40}[.。]?\s*$",
                          re.IGNORECASE)


def without_answer_form(question: str) -> str:
    """The question without a closing sentence saying in what language to answer: its "Chinese", "wording", "term"
    or "title" match covers ("中华人民共和国…", "University of Chinese Academy of Sciences") and headings, not the
    answer."""
    return _ANSWER_FORM.sub("", question).rstrip() or question


def focus(question: str) -> str:
    """The words a Chinese question asks about: what stands right before its asking word, after the
    last "的" or clause mark ("三季度末某服装企业的存货周转天数是多少天" → "存货周转天数"), or right after
    an opening asking word ("哪一年…"); in English, X of "What is the X of …", of "what X does …" or of
    "what does X stand for" ("" for other forms)."""
    question = question or ""
    english = _ASKED_EN.search(question) or _STANDS_FOR.search(question) or _ASKED_DOES.search(question)
    if english:
        return next(g for g in english.groups() if g).strip()
    m = _ASKED_AT.search(question)
    if m is None:
        return ""
    before = _MEANS.sub("", question[:m.start()])  # "NNSA指的是什么": NNSA
    before = _ASIDE.sub("", before)  # "利息费用在上期（2024年一季度，经重述）是多少": not "经重述"
    head = _FOCUS_START.match(before)
    span = before[head.end():] if head else before
    if len(span) < 2:  # "谁是…", "…的是什么": the words after it
        span = re.split(r"[的，,、？?。]", question[m.end():], maxsplit=1)[0]
    return span.strip()


# where a question says which document it asks about: a 《title》, a leading "X中，" / "X里的" / "X上的" /
# "根据X，" / "X这项标准", or "In the X paper, …" / "In the X's table, …" / "… in the X paper's table"
_DOCUMENT_WORDS = "standard|paper|report|document|guide|manual|datasheet"  # the words for a document
_DOCUMENT_WORDS_CJK = "论文|研报|报告|标准|手册|说明书|规格书"  # and in Chinese
# the words for a document in both languages, one alternation (`tasks.qa.filters`: they name no document)
DOCUMENT_WORDS = f"{_DOCUMENT_WORDS}|{_DOCUMENT_WORDS_CJK}"
_SCOPE_TITLE = re.compile(r"《([^》]+)》")
# "X中，…", "X里的…" within the first clause (a "…之上的" further on is what is asked, not where)
_SCOPE_CJK = re.compile(r"^\s*([^，,？?]{2,40}?)(?:中|里|上)(?:，|,|的)|^\s*(?:根据|按照|依据|按)(.{2,40}?)(?:，|,)"
                        r"|^\s*(.{2,40}?)这(?:项|份|个|篇|部|本)"
                        # "CC-SAM论文中Places-LT、…的对比表里，…", "CC-SAM论文表3的…": to the word for a document, past a
                        # bracketed aside of its own ("类条件锐度感知最小化（CC-SAM，CVPR 2023）论文的表3中")
                        rf"|^\s*((?:[（(][^（）()]{{1,30}}[)）]|[^，,。？?]){{2,40}}?(?:{_DOCUMENT_WORDS_CJK}|文档))"
                        r"(?:中|里|的?(?=第[0-9]|[表图]\s*[0-9]|(?i:table|figure)\s*[0-9]))"
                        # "IBM DB2 for i 行列访问控制（RCAC）红皮书指出，…": the document says what is asked
                        r"|^\s*([^，,。？?]{2,40}?)(?:指出|提到|写道|称|说)[，,]"
                        # "这份政府采购合同要求…": to the first word for a document
                        r"|^\s*[这那](?:项|份|篇|部|本)(.{0,20}?(?:合同|文档|文件|报告|研报|标准|说明书|手册|规范|制度|论文|指南))")
# a source cited anywhere in the question: "（依据CC-SAM论文表3）", "（见CC-SAM论文Table 4）", "请依据CC-SAM论文的表4。",
# "（CC-SAM论文Table 4）"
_SCOPE_CITED = re.compile(r"[（(]\s*(?:依据|根据|按照|参见|参照|见)\s*([^（）()]{2,40}?)\s*[)）]"
                          r"|(?:请|需)?(?:依据|根据|参照)([^，,。？?（）()]{2,40}?)[。.]?\s*$"
                          rf"|[（(]([^（）()]{{1,30}}?(?:{_DOCUMENT_WORDS_CJK})[^（）()]{{0,12}})[)）]")
_SCOPE_EN_START = r"^\s*(?:in|from|according to|under|(?:as\s+)?per(?!\s+cent\b))\s+(?:the\s+)?"
_SCOPE_EN = re.compile(_SCOPE_EN_START
                       # "In BYD's 2025 first-quarter report, …": to the word for a document, past a name's "'s"
                       + rf"([^,，?？]{{2,160}}?\b(?:{_DOCUMENT_WORDS})s?)(?:'s\b|’s\b|,)"
                       + rf"|{_SCOPE_EN_START}(.{{2,160}}?)(?:'s\b|’s\b|,)"
                       r"|\b(?:in|from|of) the (\S+(?: \S+)?)(?:'s|’s)? (?:paper|report|document|datasheet|standard|manual)\b",
                       re.IGNORECASE)
# a quoted title beside the word for a document: "the draft NB/T standard 'Periodic safety review … —
# Part 12: Design'", "the 'Summer activities' duck document" (not a quoted term: "the 'don't forget' list")
_SCOPE_QUOTED = re.compile(rf"\b(?:{_DOCUMENT_WORDS}|article|book)\s+"
                           r"['\"‘“]([^'\"’”]{6,}?)['\"’”](?!\w)"
                           r"|['\"‘“]([^'\"’”]{6,}?)['\"’”]\s+(?:\w+\s+)?"
                           r"(?:standard|paper|report|document|guide|manual)\b", re.IGNORECASE)

# what a document is on: "the draft NB/T standard on periodic safety review of nuclear power plants
# (Part 1: General Requirements)", to a comma or the question's end
_SCOPE_ON = re.compile(rf"\bthe\s+(?:\S+\s+){{0,3}}(?:{_DOCUMENT_WORDS}|notes)\s+on\s+"
                       r"([^,，?？()（）]{6,80}?(?:\s*\([^()]{2,60}\))?)(?=\s*[,，?？]|\s*$)", re.IGNORECASE)

# the words before the word for a document, and that word, say which it is: "the draft NB/T energy-industry
# standard", "the titanium standard" (a foreword's "系列标准" names the standard, as its cover's "NB/T" does: neither
# answers a question asking its ICS number); a word taking an object is a verb ("must … the central government
# report their local regulations")
_SCOPE_KIND = re.compile(rf"\bthe\s+((?:[\w/.-]+\s+){{1,4}}(?:{_DOCUMENT_WORDS}))\b"
                         r"(?!\s+(?:their|its|his|her|them|the|a|an|to|that)\b)", re.IGNORECASE)


def document_scope(question: str) -> str:
    """The words of a question that name the document it asks about ("《核电厂定期安全评价 第12部分：
    设计》由哪个单位归口", "比亚迪2025年一季报财务报表上的会计机构负责人是谁", "In the CC-SAM paper, what
    …"); "" when it names none that way."""
    return " ".join(scope_parts(question))


# an official document's number ("党委【2017】010号", "国发〔2016〕5号") names the document, whatever the sentence
_SCOPE_NUMBER = re.compile(r"[\u4e00-\u9fff]{1,8}[【〔\[]\d{4}[】〕\]]\s*\d{1,4}\s*号")


# a closing parenthesis of lower-case words describes what precedes it ("Table 2-1 of the Redpaper (the columns of
# the FUNCTION_USAGE view)"); a name's is one word, capitalized or Chinese ("(ucasthesis)", "(General Requirements)")
_DESCRIBED = re.compile(r"\s*\((?=[a-z]+\s)[^()]*\)\s*$")
# the codes Chinese standards' numbers open with ("GB/T 3620.1—2016", "YS/T 658—2007", "HAF 103")
STANDARD_PREFIXES = "GB|GJB|YS|HB|JB|NB|DL|HG|SH|QB|SJ|YY|HAD|HAF|EJ"
_LEADING_STANDARD = re.compile(rf"^\s*((?:{STANDARD_PREFIXES})(?:/[TZ])?\s*"
                               r"[0-9]+(?:\.[0-9]+)*\s*[—–-]\s*(?:19|20)[0-9]{2})\s*(?=[\u4e00-\u9fff])"
                               r"(?![表图]\s*[0-9]|附录)")


# a 《title》 whose number is asked ("附录D.3所列参考标准，《钛及钛合金锻造板坯》的标准编号是什么") is the entry asked
# about when the question names its document otherwise
_NUMBER_ASKED_AFTER = re.compile(r"\s*(?:对应)?的?\s*(?:标准)?(?:编号|代号|标准号)")
# a title a reference list cites ("论文参考文献中，《Inflated episodic memory …》的作者"): an entry asked, not the document
_REFERENCES_BEFORE = re.compile(r"(?:参考文献|references|reference list|bibliography)[中里内]?[，,：:\s]*$", re.IGNORECASE)


def scope_parts(question: str) -> list[str]:
    found = [m.group(1) for m in _SCOPE_TITLE.finditer(question or "")]
    found += [next(g for g in m.groups() if g) for m in _SCOPE_QUOTED.finditer(question or "")]
    found += [m.group(1) for m in _SCOPE_ON.finditer(question or "")]
    found += _SCOPE_NUMBER.findall(question or "")
    found += [next(g for g in m.groups() if g) for m in _SCOPE_CITED.finditer(question or "")]
    m = _SCOPE_CJK.match(question or "") or _SCOPE_EN.search(question or "")
    if m:
        scope = _DESCRIBED.sub("", next(g for g in m.groups() if g))
        # "GB/T 3620.1—2016前言列出的主要起草人名单中，…": the standard's number names it, the words after it say
        # where in it the answer is (but "表1", "附录D.3" go with it: their numbers name no row)
        numbered = _LEADING_STANDARD.match(scope)
        found.append(numbered.group(1) if numbered else scope)
    kinds = [m.group(1).strip() for m in _SCOPE_KIND.finditer(question or "")]
    found += [kind for kind in kinds if not any(kind in part for part in found)]
    entries = {m.group(1) for m in _SCOPE_TITLE.finditer(question or "")
               if _NUMBER_ASKED_AFTER.match(question, m.end()) or _REFERENCES_BEFORE.search(question, 0, m.start())}
    named_otherwise = [part for part in found if part not in entries]
    return named_otherwise if entries and named_otherwise else found


@lru_cache(maxsize=4096)  # table_cell asks it once per table of the context, of the same question
def scope_only_terms(question: str) -> frozenset[str]:
    """The terms a question uses only to name its document ("CC-SAM" of "In the CC-SAM paper's table,
    what does LDAM-DRW reach"): they name no row of a table."""
    parts = scope_parts(question)
    return terms(" ".join(parts)) - terms(without_scope(question, parts))


def without_scope(question: str, parts: list[str]) -> str:
    """The question without the words naming its document (`scope_parts`), longest first ("report on the
    X company" before "the X company")."""
    for part in sorted(parts, key=len, reverse=True):
        question = question.replace(part, " ")
    return question


def cjk_numbers(text: str) -> set[str]:
    """Numbers written in Chinese numerals ("二十周岁", "满四年", "百分之二十"), not ordinals ("第四十条")
    nor words that merely hold a numeral ("一方", "统一"): two numerals or more, or one before a unit."""
    return {m.group(1) for m in _CJK_NUMBER.finditer(text or "")}


# a question asking a code, a document's number or a standard ("which safety-factor code", "公告编号", "rounded
# according to which standard", "按哪个标准进行") is answered by one: letters with digits ("SF3", "IAEA SSG-25",
# "NB/T 20513.1-2018", "GB/T 8170") or digits joined by a dash ("2025-035"), not "第11部分"
_ASKS_CODE = re.compile(r"\b(?:which|what)\s+(?:[\w-]+\s+){0,3}(?:code|standard(?!\s+(?:charg|discharg|cycl|condition|"
                        r"capacit|temperature|voltage|current|value|test)))\b|代号|代码|编码|编号"
                        r"|哪(?:个|项|一|份|部)?[\u4e00-\u9fff]{0,4}标准(?!化)", re.IGNORECASE)
_CODE_VALUE = re.compile(r"(?<![A-Za-z0-9])(?:[A-Z]{1,6}[-/ ]?[0-9][0-9A-Za-z.\-—]*|[0-9]{2,}[-—][0-9]+)")
_CODE_YEAR = re.compile(r"\s*[-—–]\s*(?:19|20)[0-9]{2}$")
_ISO_DATE = re.compile(r"(?<![0-9])(?:19|20)[0-9]{2}-[0-9]{1,2}-[0-9]{1,2}(?![0-9])")


def _code_numbers(text: str) -> set[str]:
    """The codes a text writes, a standard's without its year, dates none: the cover's "GB/T 3620.1—2007" (the
    edition it replaces) is the standard a question names as "GB/T 3620.1-2016", no other one it may ask for, and
    its "2016-12-30发布" no code."""
    return {_CODE_YEAR.sub("", code) for code in _CODE_VALUE.findall(_ISO_DATE.sub(" ", text))}


# a question asking how many of a measure ("多少天", "几届", "how many days"): a clause holding a number of that
# measure says it ("存货周转天数同比+71天", "连续任职不得超过两届"), one of another measure does not
_MEASURES = "个月|周岁|字节|分钟|小时|天|年|月|周|元|股|户|人|名|家|次|倍|届|条|页|种|项|份|字|秒"
_ENGLISH_MEASURES = {"day": "天", "year": "年", "month": "个月|月", "week": "周", "hour": "小时", "minute": "分钟",
                     "second": "秒", "time": "次|倍", "people": "人|名", "person": "人|名", "share": "股", "byte": "字节",
                     "page": "页", "household": "户", "member": "人|名"}
_ASKS_MEASURE = re.compile(rf"(?:多少|几)\s*({_MEASURES})(?![权东])|\bhow many\s+({'|'.join(_ENGLISH_MEASURES)})s?\b",
                           re.IGNORECASE)
_COUNT = r"(?:[0-9][0-9,]*(?:\.[0-9]+)?|[零〇一二两三四五六七八九十百千万]+)\s*[万亿千百]?\s*"


def measure_asked(question: str) -> re.Pattern | None:
    """A pattern finding a number of the measure the question asks how many of ("71天", "两届"; "30 days" and "三十天"
    for "how many days"), years of the calendar aside ("2025年" is no number of years), or None."""
    m = _ASKS_MEASURE.search(question)
    if m is None:
        return None
    chinese = m.group(1) or _ENGLISH_MEASURES[m.group(2).lower()]
    english = m.group(2) or next((w for w, zh in _ENGLISH_MEASURES.items() if chinese in zh.split("|")), "")
    found = rf"(?<![0-9.])(?!(?:19|20)[0-9]{{2}}\s*年){_COUNT}(?:{chinese})"
    if english:
        found += rf"|(?<![0-9.])[0-9][0-9,]*(?:\.[0-9]+)?\s*{english}s?\b"
    return re.compile(found, re.IGNORECASE)


def answers_what_is_asked(question: str):
    """For a question asking a code, a date, a number, a web or an e-mail address: a test whether a clause holds a
    code / a date / a number the question does not state itself (in digits or in Chinese numerals) / an address;
    None for other questions."""
    stated, stated_cjk = _numbers(question), cjk_numbers(question)
    if _ASKS_EMAIL.search(question):
        return lambda part: bool(_EMAIL.search(part))
    if _ASKS_URL.search(question) and not _ASKS_NUMBER.search(question):
        return lambda part: bool(_URL.search(part))
    if _ASKS_DATE.search(question):
        return lambda part: any(_numbers(m.group()) - stated for m in _DATE.finditer(part))
    if _ASKS_CODE.search(question):
        stated_codes = _code_numbers(question)
        return lambda part: bool(_code_numbers(part) - stated_codes)
    if _ASKS_NUMBER.search(question):
        # (a citation, "OLTR [32]", states no number)
        return lambda part: bool(_numbers(_CITATION.sub("", part)) - stated) or bool(cjk_numbers(part) - stated_cjk)
    return None
