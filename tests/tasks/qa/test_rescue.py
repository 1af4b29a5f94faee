"""The three rescues of seed 000 §8 on hand-made candidates."""
from __future__ import annotations

from dataclasses import replace

import pytest

from schemas.chunk import Chunk
from schemas.qa import RERANK, RRF
from schemas.settings import Settings
from tasks.qa.rescue import (BM25_DIVERGENCE, LEXICAL, LEXICAL_NEIGHBOUR, SECTION_CLUSTER, normalize_section, rescue,
                             rescue_bm25_divergence, rescue_lexical_match, rescue_section_cluster)
from tasks.qa.types import Candidate

S = Settings()
FLOOR = S.retrieval.cluster_rescue_floor


def cand(chunk_id: str, score: float, *, source: str = "a.docx", index: int = 0, section: str = "",
         content: str = "无关的内容", chunk_type: str = "text", rerank: float | None = None) -> Candidate:
    chunk = Chunk(content=content, chunk_type=chunk_type, source=source, chunk_index=index, section_path=section,
                  chunk_id=chunk_id)
    return Candidate(chunk_id, score=score, rerank=rerank, chunk=chunk)


def test_normalize_section_keeps_the_first_levels():
    assert normalize_section("一 > （二） > 3. 细则", 2) == "一 > （二）"


def test_bm25_divergence_cases_a_and_b_on_the_rerank_scale():
    cut = [cand("c1", 0.003, rerank=0.003)]  # case A: reranked far below min_score
    bm25_top = [cand("k1", 0.0), cand("c1", 0.02), cand("lost", 0.02), cand("rank4", 0.02)]  # case B: "lost"
    saved = rescue_bm25_divergence({"k1"}, bm25_top, cut, scale=RERANK, settings=S)
    assert [(c.chunk_id, c.score, c.rescued) for c in saved] == [
        ("c1", FLOOR, BM25_DIVERGENCE), ("lost", FLOOR, BM25_DIVERGENCE)]
    # rank 4 of BM25 is beyond BM25_DIVERGENCE_MAX_RANK = 3
    assert "rank4" not in {c.chunk_id for c in saved}
    # on the rrf scale nothing is filtered by score: a rescued chunk keeps its fused score
    saved = rescue_bm25_divergence({"k1"}, bm25_top, cut, scale=RRF, settings=S)
    assert [(c.chunk_id, c.score) for c in saved] == [("c1", 0.003), ("lost", 0.02)]


def test_lexical_match_rescues_the_header_and_the_items_after_it():
    question = "安全检查应包括哪些方面？"
    header = cand("h", 0.01, index=10, content="安全检查应包括以下几个方面：")
    items = [cand(f"i{n}", 0.01, index=10 + n, content=f"第{n}项，设备状态。") for n in (1, 2, 8, 9)]
    other_doc = cand("o", 0.01, source="b.docx", index=11, content="设备状态")
    unrelated = cand("u", 0.01, index=3, content="与此无关。")
    saved = rescue_lexical_match(question, [header, *items, other_doc, unrelated], scale=RERANK, settings=S)
    assert [(c.chunk_id, c.rescued) for c in saved] == [
        ("h", LEXICAL), ("i1", f"{LEXICAL_NEIGHBOUR}:h"), ("i2", f"{LEXICAL_NEIGHBOUR}:h"),
        ("i8", f"{LEXICAL_NEIGHBOUR}:h")]
    assert all(c.score == S.retrieval.cluster_rescue_floor for c in saved)
    assert rescue_lexical_match("？", [header], scale=RERANK, settings=S) == []  # nothing to match


def test_section_cluster_rescues_whole_dead_sections_only():
    kept = [cand("k", 0.8, section="一、总则", content="总则内容")]
    dead = [cand(f"d{n}", 0.01 * n, index=n, section="二、货源 > （一）投放 > 1. 细则",
                 chunk_type="table" if n == 2 else "text") for n in range(1, 9)]
    one_type = [cand(f"t{n}", 0.01, index=20 + n, section="三、其他") for n in range(4)]
    small = [cand(f"s{n}", 0.01, index=30 + n, section="四、附则", chunk_type=("text", "table")[n]) for n in range(2)]
    saved = rescue_section_cluster("货源投放的要求", kept, dead + one_type + small, scale=RERANK, settings=S)
    # one section qualifies (8 members, 2 types); at most 6 of its chunks, best first
    assert [c.chunk_id for c in saved] == ["d8", "d7", "d6", "d5", "d4", "d3"]
    assert {c.rescued for c in saved} == {f"{SECTION_CLUSTER}:二、货源 > （一）投放"}
    assert rescue_section_cluster("x", [], dead, scale=RERANK, settings=S) == []  # nothing passed: no contrast
    # a section with a kept member is alive
    alive = [replace(kept[0], chunk=replace(dead[0].chunk, chunk_id="k2"), chunk_id="k2")]
    assert rescue_section_cluster("x", alive, dead, scale=RERANK, settings=S) == []


@pytest.mark.parametrize("flag", ["bm25_divergence_rescue_enabled", "lexical_rescue_enabled",
                                  "section_cluster_rescue_enabled"])
def test_rescue_runs_each_once_in_order_and_can_be_switched_off(flag):
    kept = [cand("k", 0.9, rerank=0.9, section="甲", content="甲的内容")]
    match = cand("m", 0.01, rerank=0.01, index=5, section="乙", content="安全检查应包括以下方面")
    cut = [match, *[cand(f"c{n}", 0.01, rerank=0.01, index=40 + n, section="丙",
                         chunk_type=("text", "table")[n % 2]) for n in range(3)]]
    bm25_top = [replace(match)]
    saved = rescue("安全检查应包括哪些方面", kept, cut, bm25_top, RERANK, S)
    assert [(c.chunk_id, c.rescued.split(":")[0]) for c in saved] == [
        ("m", BM25_DIVERGENCE), ("c0", SECTION_CLUSTER), ("c1", SECTION_CLUSTER), ("c2", SECTION_CLUSTER)]
    off = S.replace(**{flag: False})
    reasons = {c.rescued.split(":")[0] for c in rescue("安全检查应包括哪些方面", kept, cut, bm25_top, RERANK, off)}
    expected = {"bm25_divergence_rescue_enabled": {LEXICAL, SECTION_CLUSTER},
                "lexical_rescue_enabled": {BM25_DIVERGENCE, SECTION_CLUSTER},
                "section_cluster_rescue_enabled": {BM25_DIVERGENCE}}[flag]
    assert reasons == expected
