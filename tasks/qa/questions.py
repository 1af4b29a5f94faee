"""Question sets: JSONL, CSV or Parquet rows → `Question` records, with every bad row reported.

Columns (any order; unknown ones are ignored):
- `id` or `qid` (a number is taken as text; a missing id becomes `line-N`); `question` (required);
- `answer` / `answers` (any one counts) / `answers_all_of` (RGB: a list of groups of alternatives,
  every group must be matched; kept as `answer_groups` and flattened into `answers` too);
- gold evidence: `gold_chunk_ids`, `gold_sources` (+ `gold_pages`), `gold_pids`.
List columns take a list, a JSON array or, in CSV, `a|b|c`. A row that cannot be read (broken
JSON, no question, a duplicate id, a gold field of the wrong type) is skipped and reported as an
`InvalidRow`; only an unreadable file or an unknown format is an error.
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemas.errors import QuestionSetError
from schemas.qa import InvalidRow, Question

FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv", ".parquet": "parquet"}
MAX_QUESTION_CHARS = 4000  # longer "questions" are pasted documents, not questions
_LIST_FIELDS = ("gold_chunk_ids", "gold_sources", "gold_pids")


@dataclass
class QuestionSet:
    path: str
    questions: list[Question] = field(default_factory=list)
    invalid: list[InvalidRow] = field(default_factory=list)


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or (isinstance(value, str)
                                                                                  and not value.strip())


def _text_list(value: Any, name: str, *, csv_cell: bool) -> list[str]:
    """A list of non-empty strings from a list, a JSON array string, a `|`-separated CSV cell or a scalar."""
    if _blank(value):
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except ValueError:
                raise ValueError(f"{name} is not a JSON array: {text[:60]!r}") from None
        elif csv_cell:
            return [part.strip() for part in text.split("|") if part.strip()]
        else:
            return [text]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [str(value)]
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{name} must be a list of strings, got {type(value).__name__}")
    out = []
    for item in value:
        if isinstance(item, (list, tuple)):  # answers_all_of: groups of alternatives
            out.extend(_text_list(list(item), name, csv_cell=False))
        elif isinstance(item, (str, int, float)) and not isinstance(item, bool):
            if str(item).strip():
                out.append(str(item).strip())
        elif item is not None:
            raise ValueError(f"{name} must hold strings, got {type(item).__name__}")
    return out


def _answer_groups(value: Any, *, csv_cell: bool) -> list[list[str]]:
    """`answers_all_of` as groups of alternatives; a bare string is a group of one (as in RGB's
    `checkanswer`), so a CSV cell `a|b` means "a and b"."""
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError(f"answers_all_of is not a JSON array: {value.strip()[:60]!r}") from None
    if not isinstance(value, (list, tuple)):
        return [[a] for a in _text_list(value, "answers_all_of", csv_cell=csv_cell)]
    groups = (_text_list(list(item) if isinstance(item, (list, tuple)) else [item], "answers_all_of", csv_cell=False)
              for item in value)
    return [g for g in groups if g]


def _pages(value: Any, *, csv_cell: bool) -> list[int]:
    try:
        return [int(p) for p in _text_list(value, "gold_pages", csv_cell=csv_cell)]
    except ValueError:
        raise ValueError(f"gold_pages must be page numbers, got {value!r}") from None


def question_from_row(row: Any, line: int, *, csv_cell: bool = False) -> Question:
    """One row → a Question; ValueError says what is wrong with the row."""
    if not isinstance(row, dict):
        raise ValueError(f"not an object but {type(row).__name__}")
    qid = row.get("id", row.get("qid"))
    qid = f"line-{line}" if _blank(qid) else (str(int(qid)) if isinstance(qid, float) and qid.is_integer()
                                              else str(qid).strip())
    question = row.get("question")
    if _blank(question):
        raise ValueError("no question")
    if not isinstance(question, str):
        raise ValueError(f"question must be text, got {type(question).__name__}")
    question = " ".join(question.split())
    if len(question) > MAX_QUESTION_CHARS:
        raise ValueError(f"question longer than {MAX_QUESTION_CHARS} characters")
    answers: list[str] = []
    for name in ("answer", "answers", "answers_all_of"):
        answers.extend(a for a in _text_list(row.get(name), name, csv_cell=csv_cell) if a not in answers)
    lists = {name: _text_list(row.get(name), name, csv_cell=csv_cell) for name in _LIST_FIELDS}
    return Question(qid=qid, question=question, answers=answers,
                    answer_groups=_answer_groups(row.get("answers_all_of"), csv_cell=csv_cell),
                    gold_pages=_pages(row.get("gold_pages"), csv_cell=csv_cell), line=line, **lists)


def _rows(path: Path, fmt: str):
    """(line, row or the error of an unreadable row) in file order."""
    if fmt == "jsonl":
        with path.open("rb") as fh:  # decoded line by line: one bad line is one invalid row
            for line, raw in enumerate(fh, 1):
                try:
                    text = raw.decode("utf-8-sig" if line == 1 else "utf-8")
                except UnicodeDecodeError:
                    yield line, ValueError("not UTF-8 text")
                    continue
                if not text.strip():
                    continue
                try:
                    yield line, json.loads(text)
                except json.JSONDecodeError as exc:
                    yield line, ValueError(f"broken JSON ({exc.msg} at column {exc.colno})")
    elif fmt == "csv":
        with path.open(encoding="utf-8-sig", newline="") as fh:
            reader = csv.DictReader(fh)
            if not reader.fieldnames:
                return
            for line, row in enumerate(reader, 2):  # line 1 is the header
                if None in row:  # more cells than header columns
                    yield line, ValueError(f"{len(row[None])} cells beyond the header's {len(reader.fieldnames)}")
                else:
                    yield line, row
    else:
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except Exception as exc:  # noqa: BLE001 - any pyarrow failure means the file is unreadable
            raise QuestionSetError(f"{path}: not a readable Parquet file ({exc})") from None
        for line, row in enumerate(table.to_pylist(), 1):
            yield line, row


def read_questions(path: str | Path) -> QuestionSet:
    """Every valid question of the file, in file order, and every invalid row with its reason."""
    path = Path(path)
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise QuestionSetError(f"{path}: unknown question-set format {path.suffix!r} "
                               f"(use {', '.join(sorted(FORMATS))})")
    if not path.is_file():
        raise QuestionSetError(f"{path}: no such question file")
    out = QuestionSet(str(path))
    seen: set[str] = set()
    try:
        for line, row in _rows(path, fmt):
            try:
                if isinstance(row, Exception):
                    raise row
                question = question_from_row(row, line, csv_cell=fmt == "csv")
                if question.qid in seen:
                    raise ValueError(f"duplicate id {question.qid!r}")
            except ValueError as exc:
                out.invalid.append(InvalidRow(line, str(exc)))
                continue
            seen.add(question.qid)
            out.questions.append(question)
    except UnicodeDecodeError as exc:
        raise QuestionSetError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except csv.Error as exc:
        raise QuestionSetError(f"{path}: not a readable CSV file ({exc})") from None
    return out
