"""Question sets: JSONL, CSV and Parquet read into Questions; bad rows reported, never fatal."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schemas.qa import Question
from tasks.qa.questions import QuestionSetError, read_questions


def test_jsonl_valid_rows_and_every_kind_of_bad_row(tmp_path):
    path = tmp_path / "q.jsonl"
    lines = [
        json.dumps({"id": "a", "question": "  清川市的用水 总量是多少？ ", "answer": "86000万立方米",
                    "gold_sources": ["policy.docx"], "gold_pages": [2, 3]}, ensure_ascii=False),
        json.dumps({"qid": 7, "question": "首趟RCEP班列的起点？", "answers_all_of": [["南宁", "南宁市"], ["广西"]],
                    "gold_pids": ["rgbzh-81"]}, ensure_ascii=False),
        "",  # blank lines are not rows
        "{broken json",
        json.dumps(["not", "an", "object"]),
        json.dumps({"id": "c"}),  # no question
        json.dumps({"id": "a", "question": "duplicate id"}),
        json.dumps({"id": "d", "question": "bad gold", "gold_chunk_ids": {"x": 1}}),
        json.dumps({"id": "e", "question": 42}),
        json.dumps({"question": "no id at all", "gold_chunk_ids": ["doc.md_3"]}),
    ]
    raw = ("\n".join(lines) + "\n").encode("utf-8") + b'{"id": "f", "question": "\xff\xfe"}\n'
    path.write_bytes(raw)
    qset = read_questions(path)

    assert [q.qid for q in qset.questions] == ["a", "7", "line-10"]
    a, seven, auto = qset.questions
    assert a.question == "清川市的用水 总量是多少？" and a.answers == ["86000万立方米"]
    assert a.gold_sources == ["policy.docx"] and a.gold_pages == [2, 3] and a.line == 1
    assert seven.answers == ["南宁", "南宁市", "广西"] and seven.gold_pids == ["rgbzh-81"]
    assert seven.answer_groups == [["南宁", "南宁市"], ["广西"]] and a.answer_groups == []
    assert auto.gold_chunk_ids == ["doc.md_3"]
    reasons = {bad.line: bad.reason for bad in qset.invalid}
    assert set(reasons) == {4, 5, 6, 7, 8, 9, 11}
    assert "broken JSON" in reasons[4] and "not an object" in reasons[5] and reasons[6] == "no question"
    assert "duplicate id 'a'" in reasons[7] and "gold_chunk_ids" in reasons[8] and "text" in reasons[9]
    assert reasons[11] == "not UTF-8 text"


def test_csv_lists_as_pipes_or_json(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("id,question,answers,gold_sources,extra\n"
                    "1,第一个问题？,甲|乙,a.md|b.md,x\n"
                    '2,第二个问题？,"[""丙""]",,\n'
                    "3,,,,\n"
                    "4,多出的单元格,a,b,c,d\n", encoding="utf-8")
    qset = read_questions(path)
    first, second = qset.questions
    assert first.answers == ["甲", "乙"] and first.gold_sources == ["a.md", "b.md"]
    assert second.answers == ["丙"] and second.gold_sources == [] and not second.labelled
    assert [(b.line, b.reason) for b in qset.invalid][0] == (4, "no question")
    assert qset.invalid[1].line == 5 and "beyond the header" in qset.invalid[1].reason


def test_parquet_with_list_columns_and_nulls(tmp_path):
    path = tmp_path / "q.parquet"
    pq.write_table(pa.table({"qid": ["x", "y", "z"], "question": ["问题一？", None, "问题三？"],
                             "gold_chunk_ids": [["s.md_0"], [], None]}), path)
    qset = read_questions(path)
    assert [q.qid for q in qset.questions] == ["x", "z"]
    assert qset.questions[0].gold_chunk_ids == ["s.md_0"] and qset.questions[1].gold_chunk_ids == []
    assert [(b.line, b.reason) for b in qset.invalid] == [(2, "no question")]


def test_answers_all_of_groups_in_every_format(tmp_path):
    """RGB's rule: every group needs one of its alternatives; a bare string is a group of one."""
    csv_path = tmp_path / "q.csv"
    csv_path.write_text("id,question,answers_all_of\n"
                        '1,谁执导？,"[[""张艺谋"", ""Zhang Yimou""], [""陆川""]]"\n'
                        "2,哪两国？,波兰|斯洛文尼亚\n"
                        '3,坏的,"[[""a""], {""b"": 1}]"\n', encoding="utf-8")
    qset = read_questions(csv_path)
    one, two = qset.questions
    assert one.answer_groups == [["张艺谋", "Zhang Yimou"], ["陆川"]]
    assert one.answers == ["张艺谋", "Zhang Yimou", "陆川"]
    assert two.answer_groups == [["波兰"], ["斯洛文尼亚"]]
    assert [b.line for b in qset.invalid] == [4] and "answers_all_of" in qset.invalid[0].reason
    parquet = tmp_path / "q.parquet"
    pq.write_table(pa.table({"qid": ["x", "y"], "question": ["问？", "问？"],
                             "answers_all_of": [[["11月9"], ["11日"]], None]}), parquet)
    x, y = read_questions(parquet).questions
    assert x.answer_groups == [["11月9"], ["11日"]] and y.answer_groups == [] and y.answers == []
    jsonl = tmp_path / "q.jsonl"
    jsonl.write_text(json.dumps({"id": "f", "question": "?", "answers_all_of": ["甲", ["乙", "丙"], []]},
                                ensure_ascii=False) + "\n", encoding="utf-8")
    (flat,) = read_questions(jsonl).questions
    assert flat.answer_groups == [["甲"], ["乙", "丙"]]


def test_unreadable_files_are_errors(tmp_path):
    with pytest.raises(QuestionSetError, match="unknown question-set format"):
        read_questions(tmp_path / "q.txt")
    with pytest.raises(QuestionSetError, match="no such question file"):
        read_questions(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    with pytest.raises(QuestionSetError, match="not a readable Parquet"):
        read_questions(bad)


def test_gold_matching():
    q = Question("q", "?", gold_chunk_ids=["a.md_3"])
    assert q.is_gold("a.md_3", "a.md") and not q.is_gold("a.md_4", "a.md")
    q = Question("q", "?", gold_sources=["report.pdf"], gold_pages=[5])
    assert q.is_gold("x", "report.pdf", 4, 6) and not q.is_gold("x", "report.pdf", 1, 2)
    assert not q.is_gold("x", "other.pdf", 5, 5)
    # sources are recorded relative to the KB root: a gold name matches their trailing path parts
    assert q.is_gold("x", "../en/report.pdf", 5, 5) and q.is_gold("x", "docs/report.pdf", 4, 6)
    assert not q.is_gold("x", "../en/old_report.pdf", 5, 5)
    q = Question("q", "?", gold_pids=["TRIAL_800"])
    assert q.is_gold("TRIAL_800.md_0", "TRIAL_800.md") and q.is_gold("c", "cmrc/TRIAL_800.txt")
    assert not q.is_gold("TRIAL_8000.md_0", "TRIAL_8000.md")
    assert not Question("q", "?").labelled
