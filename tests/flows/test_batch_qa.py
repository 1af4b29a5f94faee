"""Flow `batch_qa` and `kbflow ask` on the cmrc knowledge base: broken rows never stop a run,
citations only point at context chunks, results land in DuckDB and the results file."""
from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
import pytest

from flows import batch_qa as batch_qa_module
from flows.batch_qa import batch_qa
from flows.cli import main
from schemas.qa import EXTRACTIVE, INSUFFICIENT, LLM
from tasks.common.progress import listening
from tasks.qa.answer import NOT_FOUND
from tests.http_fakes import FakeServer, Reply, chat_reply
from warehouse import db

N = 40  # questions per run: enough for every batch path, quick on two cores


@pytest.fixture
def qa(cmrc_kb, tmp_path, monkeypatch):
    home, questions_path = cmrc_kb
    for var in ("KBFLOW_LLM_BASE_URL", "KBFLOW_LLM_MODEL", "KBFLOW_CRAG_MIN_COSINE", "KBFLOW_QA_BATCH_SIZE"):
        monkeypatch.delenv(var, raising=False)
    lines = questions_path.read_text(encoding="utf-8").splitlines()[:N]
    return home, lines, tmp_path


def rows(home, sql, params=None):
    columns, data = db.query(home / "kbflow.duckdb", sql, params)
    return [dict(zip(columns, r)) for r in data]


def test_offline_run_with_broken_rows_lands_everything(qa):
    home, lines, tmp = qa
    path = tmp / "questions.jsonl"
    broken = ["{not json", json.dumps({"id": "no-question"}), json.dumps({"qid": "x", "question": ["a list"]})]
    path.write_text("\n".join(lines[:10] + broken + lines[10:]) + "\n", encoding="utf-8")
    out = tmp / "answers.jsonl"

    summary = batch_qa(questions=str(path), kb="cmrc", home=str(home), out=str(out))
    run = summary.run
    assert run.status == "completed" and run.questions == N and run.invalid_rows == 3
    assert [r.line for r in summary.invalid] == [11, 12, 13]
    assert run.answered + run.insufficient == N and run.extractive_answers == run.answered and run.llm_answers == 0
    assert run.labelled == N and run.hit_at_5 >= 0.9 and run.retrieval_qps > 0

    results = rows(home, "SELECT * FROM qa_results WHERE run_id = ?", [run.run_id])
    assert len(results) == N
    file_rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["qid"] for r in file_rows] == [json.loads(line)["qid"] for line in lines]
    for r in results:
        assert set(r["citations"]) <= set(r["context_chunk_ids"])
        assert set(re.findall(r"\[ref:([^\]]+)\]", r["answer"])) <= set(r["context_chunk_ids"])
        assert r["answer_mode"] in (EXTRACTIVE, INSUFFICIENT) and r["score_scale"] == "rrf"
        assert r["total_ms"] > 0 and r["recall_ms"] > 0
    answered = [r for r in results if r["answer_mode"] == EXTRACTIVE]
    assert answered and all(r["citations"] for r in answered)
    # each citation's source, pages, section, chunk type and score, without a join (in DuckDB and the file)
    by_qid = {r["qid"]: r for r in file_rows}
    for r in answered:
        n = len(r["citations"])
        assert [len(r[c]) for c in ("citation_sources", "citation_pages", "citation_sections", "citation_chunk_types",
                                    "citation_scores")] == [n] * 5
        assert set(r["citation_sources"]) <= set(r["top_sources"]) and set(r["citation_chunk_types"]) <= {"text"}
        assert by_qid[r["qid"]]["citation_sources"] == r["citation_sources"]
        assert by_qid[r["qid"]]["citation_scores"] == pytest.approx(r["citation_scores"])

    # a question can be explained with SQL: which stages held its gold chunk, at which rank
    q = results[0]
    trail = rows(home, "SELECT stage, min(rank) AS rank FROM qa_traces WHERE run_id = ? AND qid = ? AND is_gold "
                       "GROUP BY stage, stage_order ORDER BY stage_order", [run.run_id, q["qid"]])
    assert [t["stage"] for t in trail][:2] == ["vector", "bm25"] and "context" in [t["stage"] for t in trail]
    (summary_row,) = rows(home, "SELECT * FROM qa_run_summary WHERE run_id = ?", [run.run_id])
    assert summary_row["questions"] == N and summary_row["hit_at_5"] == pytest.approx(run.hit_at_5)
    (run_row,) = rows(home, "SELECT * FROM qa_runs WHERE run_id = ?", [run.run_id])
    assert run_row["status"] == "completed" and run_row["invalid_rows"] == 3
    assert run_row["invalid_reasons"][0].startswith("line 11")
    stages = rows(home, "SELECT stage FROM qa_stage_hits WHERE run_id = ? ORDER BY stage_order", [run.run_id])
    assert [s["stage"] for s in stages][:3] == ["vector", "bm25", "rrf"]
    assert not (home / "qa" / "runs" / run.run_id).exists()  # the per-batch parts are gone once landed

    from prefect.artifacts import Artifact

    artifact = Artifact.get("batch-qa-cmrc")
    assert artifact is not None and run.run_id in (artifact.description or "")


def test_llm_answers_cite_only_context_chunks(qa, monkeypatch):
    home, lines, tmp = qa
    path = tmp / "questions.csv"
    qs = [json.loads(line) for line in lines[:12]]
    path.write_text("id,question,gold_pids\n" + "".join(f"{q['qid']},{q['question']},{q['gold_pids'][0]}\n" for q in qs)
                    + "bad,,\n", encoding="utf-8")

    def handler(req):
        prompt = req.json()["messages"][1]["content"]
        first = re.search(r"\[ref:([^\]]+)\]", prompt).group(1)
        return chat_reply(f"依据资料[ref:{first}]，另见[ref:not_in_context.md_7][3]。")

    with FakeServer(handler) as server:
        monkeypatch.setenv("KBFLOW_LLM_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("KBFLOW_LLM_MODEL", "fake-qa")
        summary = batch_qa(questions=str(path), kb="cmrc", home=str(home), out=str(tmp / "answers.parquet"))
    run = summary.run
    assert run.questions == 12 and run.invalid_rows == 1 and run.llm_answers == 12 and run.llm_model == "fake-qa"
    assert len(server.requests) == 12
    table = pq.read_table(tmp / "answers.parquet").to_pylist()
    assert len(table) == 12
    for r in table:
        assert r["answer_mode"] == LLM and len(r["citations"]) == 1
        assert r["citations"][0] in r["context_chunk_ids"] and "not_in_context" not in r["answer"]
        assert "[3]" not in r["answer"]


def test_crag_widens_once_then_says_the_kb_does_not_contain_it(qa, monkeypatch):
    home, lines, tmp = qa
    path = tmp / "q.jsonl"
    path.write_text("\n".join(lines[:6]) + "\n", encoding="utf-8")
    monkeypatch.setenv("KBFLOW_CRAG_MIN_COSINE", "0.999")  # no e5 cosine gets there
    run = batch_qa(questions=str(path), kb="cmrc", home=str(home)).run
    assert run.widened == 6 and run.insufficient == 6 and run.answered == 0
    results = rows(home, "SELECT * FROM qa_results WHERE run_id = ?", [run.run_id])
    assert {r["answer"] for r in results} == {NOT_FOUND}
    assert all(r["widened"] and r["citations"] == [] and "insufficient evidence: best cosine" in r["error"]
               for r in results)
    # the widened retrieval (two query variants) is what the traces show
    notes = rows(home, "SELECT DISTINCT note FROM qa_traces WHERE run_id = ? AND stage = 'bm25'", [run.run_id])
    assert {n["note"] for n in notes} == {"", "variant 1"}
    monkeypatch.setenv("KBFLOW_CRAG_MIN_COSINE", "0.5")
    run = batch_qa(questions=str(path), kb="cmrc", home=str(home)).run
    assert run.widened == 0 and run.answered == 6


def test_http_reranker_and_its_failures_per_question(qa, monkeypatch):
    """A TEI-shaped /rerank server that scores by shared characters and fails (HTTP 500) for two of
    the questions: those keep the fused order, are marked in qa_results and counted in qa_runs."""
    home, lines, tmp = qa
    qs = [json.loads(line) for line in lines[:6]]
    failing = {qs[1]["question"], qs[4]["question"]}
    path = tmp / "q.jsonl"
    path.write_text("\n".join(lines[:6]) + "\n", encoding="utf-8")

    def tei(req):
        body = req.json()
        if body["query"] in failing:
            return Reply(500, b"CUDA error")
        chars = set(body["query"])
        scores = [len(chars & set(t)) / len(chars) for t in body["texts"]]
        return Reply.json([{"index": i, "score": sc} for i, sc in sorted(enumerate(scores), key=lambda x: -x[1])])

    with FakeServer(tei) as server:
        for name, value in (("RERANK_URL", server.url), ("RERANK_API", "tei"), ("RERANK_MAX_RETRIES", "0")):
            monkeypatch.setenv(f"KBFLOW_{name}", value)
        run = batch_qa(questions=str(path), kb="cmrc", home=str(home)).run
    assert run.rerank_failures == 2 and run.rerank_model == server.url + "/rerank" and run.answered == 6
    results = {r["question"]: r for r in rows(home, "SELECT * FROM qa_results WHERE run_id = ?", [run.run_id])}
    for question, r in results.items():
        assert r["rerank_fallback"] == (question in failing)
        assert r["score_scale"] == ("rrf" if question in failing else "rerank")
    assert {json.loads(r.body)["query"] for r in server.requests} == {q["question"] for q in qs}


def test_a_failed_batch_does_not_lose_the_others(qa, monkeypatch):
    home, lines, tmp = qa
    path = tmp / "q.jsonl"
    path.write_text("\n".join(lines[:12]) + "\n", encoding="utf-8")
    monkeypatch.setenv("KBFLOW_QA_BATCH_SIZE", "4")
    real = batch_qa_module.answer_batch
    doomed = json.loads(lines[5])["qid"]

    def flaky(questions, *args, **kwargs):
        if any(q.qid == doomed for q in questions):
            raise RuntimeError("chroma went away")
        return real(questions, *args, **kwargs)

    monkeypatch.setattr(batch_qa_module, "answer_batch", flaky)  # the name the qa-batch task calls
    updates = []
    with listening(updates.append):
        run = batch_qa(questions=str(path), kb="cmrc", home=str(home)).run
    assert run.status == "completed_with_failures" and run.failed == 4
    assert len(rows(home, "SELECT qid FROM qa_results WHERE run_id = ?", [run.run_id])) == 8
    # progress moves a batch at a time, the failed batch's questions included
    questions = [u for u in updates if u.stage == "questions"]
    assert [u.done for u in questions] == [0, 4, 8, 12, 12] and questions[-1].finished
    assert {(u.total, u.unit) for u in questions} == {(12, "questions")}


def test_cli_ask(qa, capsys):
    home, lines, tmp = qa
    path = tmp / "q.jsonl"
    path.write_text("\n".join(lines[:5]) + "\n{oops\n", encoding="utf-8")
    assert main(["--home", str(home), "ask", str(path), "--kb", "cmrc", "--out", str(tmp / "a.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "questions" in out and "hit@5" in out and "skipped line 6" in out and str(tmp / "a.jsonl") in out
    assert len((tmp / "a.jsonl").read_text(encoding="utf-8").splitlines()) == 5
    assert main(["--home", str(home), "ask", str(path), "--kb", "cmrc", "--out", str(tmp / "a.csv")]) == 2
    assert main(["--home", str(home), "ask", str(tmp / "missing.jsonl"), "--kb", "cmrc"]) == 2


@pytest.fixture(scope="module")
def demo_kb(prefect_harness, tmp_path_factory):
    """The bundled demo corpus (DOCX with headings and a table, a text PDF, Markdown, TXT)."""
    from flows.ingest import ingest
    from tests.conftest import REPO

    home = tmp_path_factory.mktemp("demo") / "home"
    summary = ingest(paths=[str(REPO / "examples" / "corpus")], kb="demo", home=str(home))
    assert summary.landed == 4
    return home, REPO / "examples" / "questions.jsonl"


def test_demo_question_set_end_to_end(demo_kb, tmp_path):
    home, questions = demo_kb
    run = batch_qa(questions=str(questions), kb="demo", home=str(home), out=str(tmp_path / "a.jsonl")).run
    assert run.status == "completed" and run.questions == 16 and run.labelled == 16
    assert run.hit_at_5 >= 0.8
    results = rows(home, "SELECT * FROM qa_results WHERE run_id = ?", [run.run_id])
    for r in results:
        assert set(r["citations"]) <= set(r["context_chunk_ids"])
    # the offline answer quotes the evidence: most expected answers appear in it verbatim
    quoted = sum(any(a in r["answer"] for a in r["expected_answers"]) for r in results)
    assert quoted >= len(results) // 2, [(r["question"], r["answer"]) for r in results]
    # the table question is answered by the cell it names (row and column), cited
    (table_q,) = [r for r in results if "西岭区" in r["question"]]
    assert table_q["answer"].startswith("西岭区 — 2025年度指标: 16500[ref:water_management_policy.docx_4]")
    assert "water_management_policy.docx_4" in table_q["citations"]
