"""What a batch-QA run does without Prefect: one batch answered on a tiny warehouse with a fake
retriever (CRAG-lite widening, gold marks in the traces, the counts), the `qa_runs` row opened and
completed from the batches' counts, the settings a run used, the results file and its name."""
from __future__ import annotations

import json

from pathlib import Path
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest

from schemas.arrow import to_table
from schemas.chunk import Chunk
from schemas.qa import EXTRACTIVE, INSUFFICIENT, InvalidRow, QAResult, Question
from schemas.settings import Settings
from tasks.common.files import write_parquet
from tasks.qa.answer import NOT_FOUND, Answer, Answerer
from tasks.qa.batch import (BatchStats, RetrievalOptions, answer_batch, finish_run, load_retriever, new_run,
                            out_path_for, question_batches, run_table, settings_json, settings_used, write_results)
from tasks.qa.questions import QuestionSet
from tasks.qa.types import Candidate, Retrieval
from warehouse import db

TEXTS = ["水枪泡封敌人会减少生命数。", "生命数耗完即算为踢爆。", "重生者在一定时间内无敌。", "关卡共有五十关。"]
GOOD, WEAK = 0.9, 0.5  # best cosines of a sufficient and of a weak retrieval; the floor is between
FLOOR = 0.8


def chunk(i: int, source: str = "game.md") -> Chunk:
    return Chunk(content=TEXTS[i], chunk_type="text", section_path="玩法", source=source, kb="kb", doc_md5="m",
                 chunk_index=i, chunk_id=f"{source}_{i}")


@pytest.fixture
def home(tmp_path):
    """A settings home whose warehouse holds game.md's four chunks in one section."""
    settings = Settings(home=tmp_path)
    with db.connect(settings.db_path) as con:
        con.register("rows", to_table([chunk(i) for i in range(len(TEXTS))], Chunk))
        con.execute("INSERT INTO chunks BY NAME SELECT * FROM rows")
    return settings


class FakeRetriever:
    """Ranks game.md_1, game.md_0 (and an id DuckDB does not know) for every question; the best
    cosine is WEAK for the questions in `weak` until a widened pass."""

    kb = "kb"

    def __init__(self, weak=(), model_id="e5@1"):
        self.weak, self.calls = set(weak), []
        self.embedder = SimpleNamespace(model_id=model_id)

    def retrieve_batch(self, texts, mode, **kw):
        self.calls.append((list(texts), mode, kw))
        widen = kw["widen"]
        out = []
        for text in texts:
            ranked = [Candidate("game.md_1", 1.0, chunk=chunk(1)), Candidate("game.md_0", 0.8, chunk=chunk(0)),
                      Candidate("gone.md_7", 0.5)]
            r = Retrieval(text, mode, "rrf", ranked, 2, GOOD if widen or text not in self.weak else WEAK, [text],
                          widened=widen, timings={"recall": 0.002})
            r.trace("vector", ranked)
            out.append(r)
        return out


def questions() -> list[Question]:
    return [Question("q1", "生命数耗完即算为什么？", gold_sources=["game.md"]),
            Question("q2", "重生者多久无敌？", gold_chunk_ids=["game.md_0"]),
            Question("q3", "生命数耗完会怎样？")]  # unlabelled


def test_answer_batch_widens_the_weak_once_and_counts(home):
    qs = questions()
    retriever = FakeRetriever(weak={qs[1].question})
    options = RetrievalOptions(mode="vector", sources=["game.md"], section="玩法", rescues=False, rerank=False)
    results, traces, stats = answer_batch(qs, retriever, Answerer(home), home, run_id="r1", options=options,
                                          floor=FLOOR)

    # the batch, then only its weak question widened, with the same filters and switches
    filters = dict(sources=["game.md"], section="玩法", rescues=False, use_reranker=False)
    assert retriever.calls == [([q.question for q in qs], "vector", filters | {"widen": False}),
                               ([qs[1].question], "vector", filters | {"widen": True})]

    assert [r.qid for r in results] == ["q1", "q2", "q3"] and [r.widened for r in results] == [False, True, False]
    assert all(r.answer_mode == EXTRACTIVE and r.citations for r in results)
    assert results[1].recall_ms == pytest.approx(4.0)  # both passes' recall time
    assert [r.gold_rank for r in results] == [1, 2, None]
    assert stats == BatchStats(questions=3, answered=3, extractive=3, widened=1, labelled=2, hit1=1.0, hit5=2.0,
                               reciprocal_rank=1.5, retrieval_s=stats.retrieval_s)
    assert stats.retrieval_s > 0

    gold = {(t.qid, t.stage, t.chunk_id): t.is_gold for t in traces}
    assert gold[("q1", "vector", "game.md_1")] is True
    assert gold[("q1", "vector", "gone.md_7")] is False  # unknown to DuckDB: judged by its id's source
    assert gold[("q2", "vector", "game.md_1")] is False and gold[("q2", "vector", "game.md_0")] is True
    assert {gold[k] for k in gold if k[0] == "q3"} == {None}  # unlabelled
    assert {t.stage for t in traces} == {"vector", "expand", "context"}
    # the seeds' section neighbours not already ranked, each noted with its seed
    assert [(t.chunk_id, t.note) for t in traces if t.stage == "expand" and t.qid == "q1"] == [
        ("game.md_2", "game.md_1"), ("game.md_3", "game.md_1")]


def test_still_weak_after_widening_is_insufficient_with_the_reason(home):
    qs = questions()[:1]
    retriever = FakeRetriever(weak={qs[0].question})
    results, _, stats = answer_batch(qs, retriever, Answerer(home), home, run_id="r1", options=RetrievalOptions(),
                                     floor=0.95)
    (r,) = results
    assert r.answer == NOT_FOUND and r.answer_mode == INSUFFICIENT and r.widened
    assert r.error.startswith("insufficient evidence: best cosine 0.900 < 0.95")
    assert (stats.answered, stats.insufficient, stats.widened) == (0, 1, 1)

    no_crag = home.replace(crag_enabled=False)
    results, _, stats = answer_batch(qs, FakeRetriever(weak={qs[0].question}), Answerer(no_crag), no_crag,
                                     run_id="r1", options=RetrievalOptions(), floor=0.95)
    assert stats.widened == 0 and results[0].answer_mode == INSUFFICIENT  # graded, never widened


def test_llm_failures_are_counted_before_the_insufficiency_note(home):
    class FailingLLM:
        uses_llm = True

        def answer_many(self, jobs):
            return [Answer("x[ref:game.md_1]", EXTRACTIVE, ["game.md_1"], error="LLMTimeout: read timed out")
                    if not insufficient else Answer(NOT_FOUND, INSUFFICIENT, [], error="LLMTimeout: read timed out")
                    for _, _, _, insufficient in jobs]

    qs = questions()[:2]
    results, _, stats = answer_batch(qs, FakeRetriever(), FailingLLM(), home, run_id="r1",
                                     options=RetrievalOptions(), floor=None)
    assert stats.llm_failures == 2 and stats.extractive == 2 and stats.llm == 0
    assert all(r.error == "LLMTimeout: read timed out" for r in results)


def test_question_batches_keep_order_and_size():
    qs = [Question(f"q{i}", "?") for i in range(5)]
    assert [[q.qid for q in b] for b in question_batches(qs, 2)] == [["q0", "q1"], ["q2", "q3"], ["q4"]]
    assert [len(b) for b in question_batches(qs, 0)] == [1] * 5
    assert question_batches([], 32) == []


def test_settings_used_switch_off_what_the_options_switch_off():
    s = Settings.of(rerank_model="/models/ce")
    assert settings_used(s, RetrievalOptions()) == s
    off = settings_used(s, RetrievalOptions(rescues=False, rerank=False))
    r = off.retrieval
    assert not (r.bm25_divergence_rescue_enabled or r.lexical_rescue_enabled
                or r.section_cluster_rescue_enabled) and r.rerank_model == ""
    assert settings_used(s, RetrievalOptions(rerank=False)).retrieval.lexical_rescue_enabled
    values = json.loads(settings_json(off))
    assert values["home"] == str(s.home) and values["lexical_rescue_enabled"] is False
    assert list(values) == sorted(values)


def test_the_run_row_is_opened_then_completed_from_the_batches(tmp_path):
    settings = Settings.of(home=tmp_path, rerank_model="/models/ce", llm_model="qwen")
    qset = QuestionSet("q.jsonl", questions()[:2], [InvalidRow(3, "no question"), InvalidRow(5, "duplicate id")])
    out = tmp_path / "a.jsonl"
    run = new_run(qset, FakeRetriever(), Answerer(settings), settings, run_id="r1", out_path=out,
                  options=RetrievalOptions(mode="bm25", rerank=False), flow_run_id="f1")
    assert (run.status, run.questions, run.invalid_rows, run.failed, run.finished_at) == ("running", 2, 2, 0, None)
    assert run.invalid_reasons == ["line 3: no question", "line 5: duplicate id"]
    assert run.questions_path == str(Path("q.jsonl").resolve()) and run.out_path == str(out)
    # BM25 recall needs no embedder; the stage switched off and the absent LLM read as ""
    assert (run.embedding_model, run.rerank_model, run.llm_model) == ("", "", "")
    assert json.loads(run.settings_json)["rerank_model"] == ""
    assert new_run(qset, FakeRetriever(), Answerer(settings), settings, run_id="r1", out_path=out,
                   options=RetrievalOptions(), flow_run_id="").embedding_model == "e5@1"

    stats = BatchStats(questions=4, answered=3, insufficient=1, extractive=3, widened=1, labelled=2, hit1=1.0,
                       hit5=2.0, reciprocal_rank=1.5, retrieval_s=0.5)
    stats.add(BatchStats(questions=2, answered=1, llm=1, llm_failures=1, retrieval_s=0.5))
    finish_run(run, stats, failed=0, landed_batches=2)
    assert (run.status, run.answered, run.insufficient, run.llm_answers, run.extractive_answers) == (
        "completed", 4, 1, 1, 3)
    assert (run.llm_failures, run.widened, run.labelled, run.retrieval_qps) == (1, 1, 2, 6.0)
    assert (run.hit_at_1, run.hit_at_5, run.mrr_at_10) == (0.5, 1.0, 0.75) and run.finished_at is not None

    finish_run(run, BatchStats(questions=2), failed=3, landed_batches=1)
    assert (run.status, run.failed, run.labelled, run.retrieval_qps) == ("completed_with_failures", 3, 0, 0.0)
    finish_run(run, BatchStats(), failed=5, landed_batches=0)
    assert run.status == "failed"


def test_run_table_lists_the_counts_then_hit_rates_then_invalid_rows(tmp_path):
    settings = Settings(home=tmp_path)
    invalid = [InvalidRow(i, "broken JSON") for i in range(30)]
    run = new_run(QuestionSet("q.jsonl", questions(), invalid), FakeRetriever(), Answerer(settings), settings,
                  run_id="r1", out_path=tmp_path / "a.jsonl", options=RetrievalOptions(mode="bm25"), flow_run_id="")
    finish_run(run, BatchStats(questions=3, answered=2, extractive=2, insufficient=1, retrieval_s=2.0), failed=0,
               landed_batches=1)
    rows = run_table(run, invalid)
    assert rows[2] == {"metric": "answered (llm / extractive)", "value": "2 (0 / 2)"}
    assert {"metric": "retrieval questions/s", "value": 1.5} in rows
    assert not any(r["metric"] == "hit@5" for r in rows)  # nothing labelled
    assert sum(r["metric"].startswith("invalid: line") for r in rows) == 20

    finish_run(run, BatchStats(questions=3, labelled=3, hit1=1.0, hit5=2.0, reciprocal_rank=1.0), failed=0,
               landed_batches=1)
    assert {"metric": "hit@5", "value": 0.6667} in run_table(run, [])


def test_out_path_by_suffix(tmp_path):
    settings = Settings(home=tmp_path)
    assert out_path_for(settings, "r1", None) == tmp_path / "qa" / "r1.jsonl"
    for name in ("a.jsonl", "a.NDJSON", "a.json", "a.Parquet"):
        assert out_path_for(settings, "r1", str(tmp_path / name)) == tmp_path / name
    with pytest.raises(ValueError, match="use a .jsonl or .parquet file"):
        out_path_for(settings, "r1", str(tmp_path / "a.csv"))


def test_results_file_in_part_order_by_suffix(home, tmp_path):
    qs = questions()
    results, _, _ = answer_batch(qs, FakeRetriever(), Answerer(home), home, run_id="r1", options=RetrievalOptions())
    parts = [write_parquet(to_table(results[i:i + 2], QAResult), tmp_path / f"part-{i}.parquet") for i in (0, 2)]

    lines = write_results(parts, tmp_path / "a.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["qid"] for line in lines] == ["q1", "q2", "q3"] and "生命数" in lines[0]
    assert pq.read_table(write_results(parts, tmp_path / "a.parquet")).column("qid").to_pylist() == ["q1", "q2", "q3"]
    assert write_results([], tmp_path / "none.jsonl").read_text(encoding="utf-8") == ""
    assert pq.read_table(write_results([], tmp_path / "none.parquet")).num_rows == 0


def test_an_empty_knowledge_base_is_loaded_with_a_warning(tmp_path, caplog):
    with caplog.at_level("WARNING", logger="kbflow.qa"):
        retriever = load_retriever(Settings(home=tmp_path), "empty")
    assert retriever.size == 0 and retriever.kb == "empty"
    assert "knowledge base 'empty' is empty or missing" in caplog.text and "'insufficient'" in caplog.text


def test_each_citation_carries_its_source_pages_section_type_and_score(home, tmp_path):
    pages = {"game.md_0": (5, 6), "game.md_1": (2, 2)}

    class PagedRetriever(FakeRetriever):
        def retrieve_batch(self, texts, mode, **kw):
            out = super().retrieve_batch(texts, mode, **kw)
            for r in out:
                for c in r.ranked:
                    if c.chunk is not None:
                        c.chunk.page_start, c.chunk.page_end = pages[c.chunk_id]
            return out

    results, _, _ = answer_batch(questions(), PagedRetriever(), Answerer(home), home, run_id="r1",
                                 options=RetrievalOptions())
    scores = {"game.md_1": 1.0, "game.md_0": 0.8}
    for r in results:
        assert r.citations and len(r.citation_sources) == len(r.citations)
        assert r.citation_sources == ["game.md"] * len(r.citations)
        assert r.citation_sections == ["玩法"] * len(r.citations) and set(r.citation_chunk_types) == {"text"}
        for cid, page, start, end, score in zip(r.citations, r.citation_pages, r.citation_page_starts,
                                                r.citation_page_ends, r.citation_scores):
            if cid in pages:  # a ranked chunk: its pages and fused score
                assert (start, end) == pages[cid] and page == ("5-6" if cid == "game.md_0" else "2")
                assert score == pytest.approx(scores[cid])
    # the results file carries them as they are
    part = write_parquet(to_table(results, QAResult), tmp_path / "part-0.parquet")
    row = json.loads(write_results([part], tmp_path / "a.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert row["citation_sources"] == results[0].citation_sources and row["citation_pages"] == results[0].citation_pages
    assert row["citation_scores"] == results[0].citation_scores


def test_an_existing_qa_results_table_gets_the_citation_columns(tmp_path):
    """A home made before the citation columns: its qa_results gains them, old rows read as empty."""
    import duckdb

    path = tmp_path / "kbflow.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE qa_results (run_id VARCHAR, qid VARCHAR, citations VARCHAR[])")
    con.execute("INSERT INTO qa_results VALUES ('old', 'q1', ['a.md_0'])")
    con.close()
    db._ENSURED.discard(str(path.resolve()))
    with db.connect(path) as con:
        cols = {r[0]: r[1] for r in con.execute("DESCRIBE qa_results").fetchall()}
        assert cols["citation_sources"] == "VARCHAR[]" and cols["citation_scores"] == "DOUBLE[]"
        assert cols["citation_page_starts"] == "BIGINT[]"
        assert con.execute("SELECT qid, citation_sources FROM qa_results").fetchall() == [("q1", None)]
