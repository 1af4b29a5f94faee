"""Warehouse reads of batch-QA runs (warehouse/qa.py), on a real DuckDB file."""
from __future__ import annotations

from datetime import datetime, timezone

from schemas.arrow import to_table
from schemas.qa import QAResult, QARun
from tasks.common.files import write_parquet
from warehouse import db
from warehouse.qa import qa_results


def _result(run_id: str, qid: str) -> QAResult:
    return QAResult(run_id=run_id, qid=qid, question=f"问题 {qid}", answer="答", answer_mode="extractive",
                    citations=["a.md_0"], context_chunk_ids=["a.md_0"], retrieved_chunk_ids=["a.md_0", "a.md_1"],
                    top_sources=["a.md"], confidence=0.5, score_scale="rrf", insufficient=False, widened=False,
                    context_chars=10, expected_answers=["答"], gold_rank=1, gold_in_context=True, error="",
                    recall_ms=1.0, fusion_ms=1.0, rerank_ms=0.0, rescue_ms=0.0, context_ms=1.0, answer_ms=1.0,
                    total_ms=4.0)


def _run(run_id: str) -> QARun:
    now = datetime.now(timezone.utc)
    return QARun(run_id=run_id, kb="k", flow_run_id="", questions_path="q.jsonl", out_path="out.jsonl",
                 mode="hybrid", started_at=now, finished_at=now, status="completed", questions=2, invalid_rows=0,
                 invalid_reasons=[], failed=0, answered=2, insufficient=0, llm_answers=0, extractive_answers=2,
                 llm_failures=0, widened=0, labelled=2, hit_at_1=1.0, hit_at_5=1.0, mrr_at_10=1.0,
                 retrieval_qps=10.0, embedding_model="e5", rerank_model="", llm_model="", settings_json="{}")


def test_qa_results_of_one_run(tmp_path):
    w = tmp_path / "w.duckdb"
    for run_id, qids in (("r1", ["q1", "q2"]), ("r2", ["q1"])):
        part = write_parquet(to_table([_result(run_id, q) for q in qids], QAResult), tmp_path / f"{run_id}.parquet")
        db.land_qa(w, _run(run_id), [part], [])
    got = qa_results(w, "r1")
    assert sorted(r.qid for r in got) == ["q1", "q2"]
    assert sorted(got, key=lambda r: r.qid)[0] == _result("r1", "q1")  # every column round-trips
    assert qa_results(w, "none") == []
