"""The retrieval types on hand-made values: stage traces, their `qa_traces` rows, and the evidence
text the reranker and the answerer read."""
from __future__ import annotations

from dataclasses import replace

from schemas.chunk import CHART, IMAGE, TABLE, TEXT, Chunk
from schemas.qa import RRF
from tasks.qa.types import STAGES, STAGE_ORDER, Candidate, Retrieval, evidence_text, trace_records


def _retrieval() -> Retrieval:
    return Retrieval("问题", "hybrid", RRF, ranked=[], kept=0, top_cosine=None, variants=["问题"])


def test_a_candidate_without_its_record_has_no_source_or_section():
    assert Candidate("x").source == "" and Candidate("x").section == ""
    chunk = Chunk(content="正文", chunk_type=TEXT, source="a.md", section_path="一 > 二", chunk_id="a_1")
    c = Candidate("a_1", chunk=chunk)
    assert (c.source, c.section) == ("a.md", "一 > 二")


def test_trace_takes_candidates_or_hits_and_notes_why_a_candidate_is_there():
    r = _retrieval()
    r.trace("vector", [("a", 0.9, ""), ("b", 0.8, "variant 1")])
    r.trace("rescue", [Candidate("c", 0.3, rescued="lexical"), Candidate("d", 0.2, expanded_from="c"),
                       Candidate("e", 0.1)])
    assert [(st.stage, st.hits) for st in r.stages] == [
        ("vector", [("a", 0.9, ""), ("b", 0.8, "variant 1")]),
        ("rescue", [("c", 0.3, "lexical"), ("d", 0.2, "c"), ("e", 0.1, "")])]


def test_trace_records_are_cut_at_max_rank_in_stage_order():
    r = _retrieval()
    r.trace("rrf", [("a", 1.0, ""), ("b", 0.5, ""), ("c", 0.25, "")])
    r.trace("custom", [("b", 2, "note")])  # a stage outside STAGES sorts after them
    rows = trace_records("run", "q1", r, lambda cid: cid == "b" or None, max_rank=2)
    assert [(t.stage, t.stage_order, t.chunk_id, t.rank, t.score, t.is_gold, t.note) for t in rows] == [
        ("rrf", STAGE_ORDER["rrf"], "a", 1, 1.0, None, ""), ("rrf", STAGE_ORDER["rrf"], "b", 2, 0.5, True, ""),
        ("custom", len(STAGES), "b", 1, 2.0, True, "note")]
    assert {(t.run_id, t.qid) for t in rows} == {("run", "q1")} and isinstance(rows[2].score, float)
    assert trace_records("run", "q1", _retrieval(), lambda cid: None, max_rank=10) == []


def test_evidence_text_per_chunk_type():
    assert evidence_text(Chunk(content="正文", chunk_type=TEXT, semantic_content="语义")) == "正文"
    assert evidence_text(Chunk(content="", chunk_type=TEXT, semantic_content="语义")) == "语义"
    for kind in (IMAGE, CHART):
        figure = Chunk(content="![](a.png)", chunk_type=kind, caption="图1", semantic_content="描述")
        assert evidence_text(figure) == "描述"
        assert evidence_text(replace(figure, semantic_content="")) == "图1"
        assert evidence_text(replace(figure, semantic_content="", caption="")) == "![](a.png)"
    assert evidence_text(Chunk(content="| a | b |", chunk_type=TABLE, caption="表1")) == "表1\n| a | b |"
    assert evidence_text(Chunk(content="", chunk_type=TABLE, semantic_content="表的摘要")) == "表的摘要"
