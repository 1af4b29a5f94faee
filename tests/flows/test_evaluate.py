"""Flow `evaluate` and `kbflow eval` on the cmrc knowledge base: one real batch-QA run per
configuration, one `qa_metrics` row each, metrics that agree with what landed in `qa_results`."""
from __future__ import annotations

import json

import pytest

from flows.cli import main
from flows.evaluate import evaluate
from warehouse import db

N = 40  # questions: every configuration is a full batch-QA run
CONFIGS = ["vector-only", "bm25-only", "hybrid", "hybrid+rerank", "hybrid+rescues"]
METRICS = ("hit_at_1", "hit_at_3", "hit_at_5", "hit_at_10", "mrr_at_10", "recall_at_5", "recall_at_10",
           "ndcg_at_10", "exact_match", "answer_f1", "contains_answer")


@pytest.fixture
def questions(cmrc_kb, tmp_path, monkeypatch):
    """(home, a file of the first n cmrc questions) with no LLM and no reranker configured."""
    home, questions_path = cmrc_kb
    for var in ("KBFLOW_LLM_BASE_URL", "KBFLOW_LLM_MODEL", "KBFLOW_RERANK_MODEL", "KBFLOW_CRAG_MIN_COSINE",
                "KBFLOW_QA_BATCH_SIZE"):
        monkeypatch.delenv(var, raising=False)
    lines = questions_path.read_text(encoding="utf-8").splitlines()

    def first(n: int, name: str = "q.jsonl"):
        path = tmp_path / name
        path.write_text("\n".join(lines[:n]) + "\n", encoding="utf-8")
        return path

    return home, first


def rows(home, sql, params=None):
    columns, data = db.query(home / "kbflow.duckdb", sql, params)
    return [dict(zip(columns, r)) for r in data]


def test_ablation_lands_one_row_per_configuration(questions, tmp_path):
    home, first = questions
    path = first(N)
    result = evaluate(questions=str(path), kb="cmrc", home=str(home), ablate=True, out=str(tmp_path / "m.csv"))
    assert [m.config for m in result.metrics] == CONFIGS

    landed = {r["config"]: r for r in rows(home, "SELECT * FROM qa_metrics WHERE eval_id = ?", [result.eval_id])}
    assert sorted(landed) == sorted(CONFIGS)
    rerank = landed.pop("hybrid+rerank")
    assert rerank["status"] == "skipped" and rerank["run_id"] == "" and rerank["hit_at_5"] is None
    assert "KBFLOW_RERANK_MODEL" in rerank["note"] and "rerank_model" in rerank["note"]

    for config, m in landed.items():
        assert m["status"] == "completed" and m["questions"] == m["labelled"] == m["with_answers"] == N, config
        for name in METRICS:
            assert 0.0 <= m[name] <= 1.0, (config, name)
        assert m["answers_all_of"] is None  # cmrc has no answers_all_of groups
        assert m["hit_at_1"] <= m["hit_at_3"] <= m["hit_at_5"] <= m["hit_at_10"], config
        assert m["retrieval_qps"] > 0
        # the landed hit@5 is what SQL makes of the run's own results
        (sql,) = rows(home, "SELECT count(*) AS n, avg(CASE WHEN gold_rank <= 5 THEN 1.0 ELSE 0.0 END) AS hit5 "
                            "FROM qa_results WHERE run_id = ?", [m["run_id"]])
        assert sql["n"] == N and sql["hit5"] == pytest.approx(m["hit_at_5"]), config
        (run,) = rows(home, "SELECT mode, hit_at_5, settings_json FROM qa_runs WHERE run_id = ?", [m["run_id"]])
        assert run["hit_at_5"] == pytest.approx(m["hit_at_5"])  # batch_qa's own figure agrees
        rescues_on = json.loads(run["settings_json"])["lexical_rescue_enabled"]
        assert (run["mode"], rescues_on) == {"vector-only": ("vector", False), "bm25-only": ("bm25", False),
                                             "hybrid": ("hybrid", False), "hybrid+rescues": ("hybrid", True)}[config]
        if not rescues_on:  # the stage really was off: nothing rescued
            assert not rows(home, "SELECT 1 FROM qa_traces WHERE run_id = ? AND stage = 'rescue'", [m["run_id"]])

    assert landed["hybrid"]["hit_at_5"] >= max(landed["vector-only"]["hit_at_5"], landed["bm25-only"]["hit_at_5"])
    assert landed["hybrid+rescues"]["hit_at_5"] >= 0.9
    assert landed["hybrid+rescues"]["contains_answer"] > 0.3  # the extractive answer quotes the answer span

    (csv_header, *csv_rows) = (tmp_path / "m.csv").read_text(encoding="utf-8").splitlines()
    assert csv_header.startswith("eval_id,config,run_id") and len(csv_rows) == len(CONFIGS)
    latest = rows(home, "SELECT config FROM qa_metrics_latest WHERE questions_path = ?", [str(path.resolve())])
    assert sorted(r["config"] for r in latest) == sorted(CONFIGS)

    from prefect.artifacts import Artifact

    artifact = Artifact.get("eval-cmrc")
    assert artifact is not None and result.eval_id in (artifact.description or "")


def test_rerank_configuration_runs_when_a_reranker_is_configured(questions, tmp_path, monkeypatch):
    from tests.tasks.qa.test_rerank import build_tiny_cross_encoder

    home, first = questions
    path = first(8, "few.jsonl")
    texts = [json.loads(line)["question"] for line in path.read_text(encoding="utf-8").splitlines()]
    monkeypatch.setenv("KBFLOW_RERANK_MODEL", str(build_tiny_cross_encoder(tmp_path / "ce", texts)))
    result = evaluate(questions=str(path), kb="cmrc", home=str(home), ablate=True)
    by_config = {m.config: m for m in result.metrics}
    assert all(m.status == "completed" and m.questions == 8 for m in result.metrics)
    scales = {config: {r["score_scale"] for r in rows(home, "SELECT score_scale FROM qa_results WHERE run_id = ?",
                                                      [m.run_id])} for config, m in by_config.items()}
    assert scales == {"vector-only": {"rrf"}, "bm25-only": {"rrf"}, "hybrid": {"rrf"}, "hybrid+rerank": {"rerank"},
                      "hybrid+rescues": {"rerank"}}  # the default pipeline reranks when a reranker exists
    models = {r["run_id"]: r["rerank_model"] for r in rows(home, "SELECT run_id, rerank_model FROM qa_runs")}
    assert models[by_config["hybrid"].run_id] == "" and models[by_config["hybrid+rerank"].run_id].endswith("ce")


def test_cli_eval_prints_the_table(questions, tmp_path, capsys):
    home, first = questions
    path = first(10)
    out = tmp_path / "metrics.json"
    assert main(["--home", str(home), "eval", str(path), "--kb", "cmrc", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    for heading in ("config", "hit@1", "hit@10", "MRR@10", "R@10", "nDCG@10", "EM", "F1", "has-ans", "all-of", "q/s"):
        assert heading in printed
    assert "hybrid+rescues" in printed and "vector-only" not in printed and "qa_metrics" in printed
    (row,) = json.loads(out.read_text(encoding="utf-8"))
    assert row["config"] == "hybrid+rescues" and row["questions"] == 10 and 0 <= row["ndcg_at_10"] <= 1
    assert f"{row['hit_at_5']:.3f}" in printed
    assert main(["--home", str(home), "eval", str(path), "--kb", "cmrc", "--out", str(tmp_path / "m.txt")]) == 2
    assert main(["--home", str(home), "eval", str(tmp_path / "missing.jsonl"), "--kb", "cmrc"]) == 2
