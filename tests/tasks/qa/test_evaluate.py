"""Evaluation metrics on hand-made rankings and answers: edge cases first (no gold, gold never
retrieved, gold listed or ranked twice), Chinese character F1 vs English word F1, RGB all-of groups."""
from __future__ import annotations

import csv
import json
import math
from datetime import datetime, timezone

import pytest

from schemas.qa import QAResult, QARun, Question
from tasks.qa.evaluate import (SKIPPED, ChunkRef, answer_scores, answer_tokens, first_gold_rank, gold_chunk_sets, hit_at,
                            metric_artifact_table, metric_table, metrics_out_path, ndcg_at, recall_at,
                            reciprocal_rank_at, score_run, skipped, write_metrics)


def test_rank_hit_and_reciprocal_rank():
    ranked = ["x", "y", "g2", "g1"]
    rank = first_gold_rank(ranked, {"g1", "g2"})
    assert rank == 3
    assert [hit_at(rank, k) for k in (1, 3, 5)] == [0.0, 1.0, 1.0]
    assert reciprocal_rank_at(rank, 10) == pytest.approx(1 / 3)
    assert reciprocal_rank_at(11, 10) == 0.0 and hit_at(11, 10) == 0.0
    # gold never retrieved, and a question without gold chunks: a miss, never an error
    for gold in ({"absent"}, set()):
        rank = first_gold_rank(ranked, gold)
        assert rank is None and hit_at(rank, 10) == 0.0 and reciprocal_rank_at(rank, 10) == 0.0


def test_recall_counts_distinct_gold_chunks_once():
    assert recall_at(["a", "x", "b", "y", "c"], ["a", "b", "c", "d"], 5) == pytest.approx(0.75)
    assert recall_at(["a", "x", "b", "y", "c"], ["a", "b", "c", "d"], 2) == pytest.approx(0.25)
    # a gold chunk listed twice is one chunk; ranked twice it is found once
    assert recall_at(["a", "a", "x"], ["a", "a", "b"], 5) == pytest.approx(0.5)
    assert recall_at(["a"], [], 5) == 0.0
    assert recall_at([], ["a"], 5) == 0.0


def test_ndcg_binary_relevance():
    assert ndcg_at(["a", "b", "x"], {"a", "b"}, 10) == pytest.approx(1.0)
    # gold at ranks 2 and 3: (1/log2 3 + 1/log2 4) / (1 + 1/log2 3)
    expected = (1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert ndcg_at(["x", "a", "b"], {"a", "b"}, 10) == pytest.approx(expected)
    # a chunk ranked twice gains once: one of two gold chunks found, at rank 1
    assert ndcg_at(["a", "a"], {"a", "b"}, 10) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    # more gold chunks than k: the ideal is k hits, so k gold chunks on top score 1
    assert ndcg_at(["g1", "g2"], {"g1", "g2", "g3"}, 2) == pytest.approx(1.0)
    # only the top k count
    assert ndcg_at(["x", "y", "a"], {"a"}, 2) == 0.0
    assert ndcg_at(["a"], set(), 10) == 0.0


def test_answer_tokens_normalize_width_case_punctuation_and_script():
    assert answer_tokens("ＡＢＣ，Ｄｅｆ　１２３！") == ["abc", "def", "123"]
    assert answer_tokens(" 南宁市。") == ["南", "宁", "市"]
    assert answer_tokens("2500万人次") == ["2500", "万", "人", "次"]
    assert answer_tokens("New-York's “Met”") == ["new", "york", "s", "met"]
    assert answer_tokens("——。") == []


def test_chinese_f1_is_per_character_and_citations_are_not_answer_text():
    s = answer_scores("首趟RCEP班列从南宁出发[ref:rgb/rgbzh-81.txt_0]。", ["南宁"])
    # 10 tokens (首 趟 rcep 班 列 从 南 宁 出 发), 2 of them expected: P = 0.2, R = 1
    assert s.f1 == pytest.approx(2 * 0.2 * 1 / 1.2)
    assert s.exact_match == 0.0 and s.contains == 1.0 and s.all_of is None
    # a partly right Chinese answer gets partial credit per character
    assert answer_scores("南宁站", ["南宁市"]).f1 == pytest.approx(2 / 3)


def test_english_f1_is_per_word():
    s = answer_scores("The Denver Broncos", ["Denver Broncos"])
    assert s.f1 == pytest.approx(0.8) and s.exact_match == 0.0 and s.contains == 1.0
    # characters would overlap ("Denver" vs "Dever"); words do not
    assert answer_scores("Dever", ["Denver"]).f1 == 0.0


def test_exact_match_after_normalization_and_best_over_answers():
    assert answer_scores("４分钟。", ["4分钟"]).exact_match == 1.0
    assert answer_scores(" broncos! ", ["Denver Broncos", "BRONCOS"]).exact_match == 1.0
    s = answer_scores("被踢爆", ["踢爆", "被踢爆"])
    assert s.exact_match == 1.0 and s.f1 == 1.0
    none = answer_scores("", ["踢爆"])
    assert (none.exact_match, none.f1, none.contains) == (0.0, 0.0, 0.0)
    # an expected answer that is only punctuation matches nothing (not every answer)
    assert answer_scores("任何回答", ["。"]).contains == 0.0


def test_all_of_needs_every_group_and_takes_any_alternative():
    groups = [["张艺谋"], ["张和平"], ["陆川"]]
    flat = [a for g in groups for a in g]
    two = answer_scores("总导演张艺谋，张和平任艺术总监", flat, groups)
    assert two.contains == 1.0 and two.all_of == 0.0
    assert answer_scores("张艺谋、张和平与陆川", flat, groups).all_of == 1.0
    albanese = [["安东尼·阿尔巴内斯", "Anthony Albanese"]]
    assert answer_scores("New PM: ANTHONY ALBANESE.", albanese[0], albanese).all_of == 1.0
    assert answer_scores("安东尼・阿尔巴内斯当选", albanese[0], albanese).all_of == 1.0  # katakana middle dot
    assert answer_scores("安东尼当选", albanese[0], albanese).all_of == 0.0


def test_gold_chunk_sets_follow_is_gold_on_chunk_metadata():
    chunks = [ChunkRef("rgb/p1.txt_0", "rgb/p1.txt"), ChunkRef("rgb/p1.txt_1", "rgb/p1.txt"),
              ChunkRef("rgb/p2.txt_0", "rgb/p2.txt"), ChunkRef("law.pdf_0", "law.pdf", 1, 1),
              ChunkRef("law.pdf_1", "law.pdf", 2, 3), ChunkRef("law.pdf_2", "law.pdf", 4, 4)]
    questions = [Question("pid", "q", gold_pids=["p1"]),
                 Question("pages", "q", gold_sources=["law.pdf"], gold_pages=[3]),
                 Question("ids", "q", gold_chunk_ids=["rgb/p2.txt_0", "rgb/p2.txt_0", "gone_7"]),
                 Question("not-in-kb", "q", gold_pids=["p9"]),
                 Question("unlabelled", "q", answers=["a"])]
    gold = gold_chunk_sets(questions, chunks)
    assert gold["pid"] == {"rgb/p1.txt_0", "rgb/p1.txt_1"}
    assert gold["pages"] == {"law.pdf_1"}
    assert gold["ids"] == {"rgb/p2.txt_0", "gone_7"}  # listed ids count even when the KB lost them
    assert gold["not-in-kb"] == frozenset()
    assert "unlabelled" not in gold


def test_gold_chunk_sets_match_a_source_by_its_trailing_folders_and_name():
    # the KB root was ../shared/data/docs: sources are "zh_pdf/report.pdf"; a question set names "report.pdf"
    chunks = [ChunkRef("zh_pdf/report.pdf_0", "zh_pdf/report.pdf", 5, 5),
              ChunkRef("zh_pdf/report.pdf_1", "zh_pdf/report.pdf", 6, 6),
              ChunkRef("other/report.pdf.md_0", "other/report.pdf.md", 5, 5)]
    questions = [Question("name", "q", gold_sources=["report.pdf"], gold_pages=[5]),
                 Question("folder", "q", gold_sources=["zh_pdf/report.pdf"]),
                 Question("wrong-folder", "q", gold_sources=["en/report.pdf"])]
    gold = gold_chunk_sets(questions, chunks)
    assert gold["name"] == {"zh_pdf/report.pdf_0"}
    assert gold["folder"] == {"zh_pdf/report.pdf_0", "zh_pdf/report.pdf_1"}
    assert gold["wrong-folder"] == frozenset()


def _run(**overrides) -> QARun:
    values = dict(run_id="r1", kb="kb", flow_run_id="", questions_path="/q.jsonl", out_path="", mode="hybrid",
                  started_at=datetime.now(timezone.utc), finished_at=None, status="completed", questions=5,
                  invalid_rows=0, invalid_reasons=[], failed=0, answered=0, insufficient=0, llm_answers=0,
                  extractive_answers=0, llm_failures=0, widened=0, labelled=0, hit_at_1=None, hit_at_5=None,
                  mrr_at_10=None, retrieval_qps=12.5, embedding_model="", rerank_model="", llm_model="",
                  settings_json="{}")
    return QARun(**(values | overrides))


def _result(qid: str, ranked: list[str], answer: str) -> QAResult:
    return QAResult(run_id="r1", qid=qid, question="q", answer=answer, answer_mode="extractive", citations=[],
                    context_chunk_ids=[], retrieved_chunk_ids=ranked, top_sources=[], confidence=0.0,
                    score_scale="rrf", insufficient=False, widened=False, context_chars=0, expected_answers=[],
                    gold_rank=None, gold_in_context=None, error="", recall_ms=0, fusion_ms=0, rerank_ms=0,
                    rescue_ms=0, context_ms=0, answer_ms=0, total_ms=0)


def test_score_run_averages_over_the_questions_each_metric_applies_to():
    questions = [Question("top", "q", answers=["南宁"], answer_groups=[["南宁"], ["广西"]], gold_chunk_ids=["g"]),
                 Question("third", "q", answers=["x"], gold_chunk_ids=["g", "h"]),
                 Question("missed", "q", gold_chunk_ids=["g"]),
                 Question("answers-only", "q", answers=["南宁"]),
                 Question("failed-batch", "q", gold_chunk_ids=["g"])]
    results = [_result("top", ["g", "a"], "南宁"), _result("third", ["a", "b", "h", "g"], "y"),
               _result("missed", ["a", "b"], ""), _result("answers-only", ["a"], "在南宁[ref:a]")]
    gold = gold_chunk_sets(questions, [])
    m = score_run("e1", "hybrid", _run(failed=1), questions, results, gold)
    assert (m.questions, m.labelled, m.with_answers) == (4, 3, 3)
    assert m.hit_at_1 == pytest.approx(1 / 3) and m.hit_at_3 == pytest.approx(2 / 3)
    assert m.hit_at_10 == pytest.approx(2 / 3) and m.mrr_at_10 == pytest.approx((1 + 1 / 3) / 3)
    assert m.recall_at_5 == pytest.approx((1 + 1 + 0) / 3)
    assert m.ndcg_at_10 == pytest.approx((1 + (1 / math.log2(4) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))) / 3)
    assert m.exact_match == pytest.approx(1 / 3) and m.contains_answer == pytest.approx(2 / 3)
    assert m.answers_all_of == 0.0  # the one question with groups misses 广西
    assert m.retrieval_qps == 12.5 and m.run_id == "r1" and m.status == "completed"
    assert "1 questions of failed batches" in m.note


def test_score_run_without_labels_or_answers_leaves_metrics_empty():
    m = score_run("e1", "hybrid", _run(), [Question("q", "q")], [_result("q", ["a"], "b")], {})
    assert m.questions == 1 and m.labelled == 0 and m.hit_at_1 is None and m.ndcg_at_10 is None
    assert m.exact_match is None and m.answers_all_of is None


def test_metric_table_blanks_what_was_not_measured():
    done = score_run("e1", "bm25-only", _run(), [Question("q", "q", gold_chunk_ids=["g"])],
                     [_result("q", ["g"], "")], {"q": frozenset({"g"})})
    skip = skipped("e1", "hybrid+rerank", "kb", "/q.jsonl", "no reranker")
    headings, rows = metric_table([done, skip])
    assert headings[:2] == ["config", "hit@1"] and headings[-1] == "q/s"
    assert rows[0][:2] == ["bm25-only", "1.000"] and rows[0][headings.index("EM")] == ""
    assert rows[0][-1] == "12.5"
    assert skip.status == SKIPPED and rows[1] == ["hybrid+rerank"] + [""] * (len(headings) - 1)


def test_metric_artifact_table_adds_status_run_and_note_to_the_printed_columns():
    done = score_run("e1", "hybrid", _run(), [Question("q", "q", gold_chunk_ids=["g"])],
                     [_result("q", ["g"], "")], {"q": frozenset({"g"})})
    skip = skipped("e1", "hybrid+rerank", "kb", "/q.jsonl", "no reranker")
    headings, _ = metric_table([done, skip])
    first, second = metric_artifact_table([done, skip])
    assert list(first) == [*headings, "status", "run_id", "note"]
    assert (first["config"], first["hit@1"], first["status"], first["run_id"]) == ("hybrid", "1.000", "completed", "r1")
    assert (second["status"], second["run_id"], second["note"], second["hit@1"]) == ("skipped", "", "no reranker", "")


def test_metrics_file_as_json_or_csv_by_suffix(tmp_path):
    assert metrics_out_path(None) is None and metrics_out_path("") is None
    assert metrics_out_path(str(tmp_path / "m.CSV")) == tmp_path / "m.CSV"
    with pytest.raises(ValueError, match="use a .json or .csv file"):
        metrics_out_path(str(tmp_path / "m.txt"))

    answered = score_run("e1", "hybrid", _run(), [Question("q", "q", answers=["南宁"])], [_result("q", [], "南宁")], {})
    metrics = [answered, skipped("e1", "hybrid+rerank", "kb", "/q.jsonl", "no reranker")]
    (row, _) = json.loads(write_metrics(metrics, tmp_path / "m.json").read_text(encoding="utf-8"))
    assert row["config"] == "hybrid" and row["exact_match"] == 1.0 and row["hit_at_1"] is None
    assert datetime.fromisoformat(row["created_at"]) == metrics[0].created_at
    with write_metrics(metrics, tmp_path / "m.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["config"] for r in rows] == ["hybrid", "hybrid+rerank"] and rows[1]["note"] == "no reranker"
    assert list(rows[0])[:3] == ["eval_id", "config", "run_id"]
    assert write_metrics([], tmp_path / "none.json").read_text(encoding="utf-8") == "[]"
