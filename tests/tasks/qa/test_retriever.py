"""Retrieval stages on hand-made rankings, the cross-encoder stage with a tiny model built here,
and the whole pipeline on a knowledge base ingested from cmrc2018 trial passages."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from schemas.chunk import Chunk
from schemas.qa import RERANK, RRF, Question
from schemas.settings import Settings, load_settings
from tasks.qa.questions import read_questions
from tasks.qa.filters import (adaptive_top_k, chapter_markers, filter_candidates, is_enum_query, jaccard_matrix,
                              mmr, mmr_order)
from tasks.qa.fusion import dynamic_weights, figures_on_vector_scale, rrf_fuse, sharpness
from tasks.qa.rerank import Reranker
from tasks.qa.retriever import Retriever
from tasks.qa.types import BM25, FIGURE, STAGES, VECTOR, Candidate, ChannelHits, trace_records

S = Settings()


def cand(chunk_id, score=0.5, *, source="a.md", section="", tokens=(), chunk_type="text") -> Candidate:
    return Candidate(chunk_id, score=score, chunk=Chunk(content=chunk_id, chunk_type=chunk_type, source=source,
                                                        section_path=section, tokens=list(tokens), chunk_id=chunk_id))


# ---------------------------------------------------------------- pure stages


def test_rrf_is_normalized_to_first_everywhere():
    vec = ChannelHits(VECTOR, 0.5, [("a", 0.9), ("b", 0.8), ("c", 0.7)])
    bm = ChannelHits(BM25, 0.5, [("b", 12.0), ("a", 3.0)])
    fused = dict(rrf_fuse([vec, bm], k=60))
    best = 2 * 0.5 / 61
    assert fused["a"] == pytest.approx((0.5 / 61 + 0.5 / 62) / best)
    assert fused["c"] == pytest.approx((0.5 / 63) / best)
    assert [cid for cid, _ in rrf_fuse([vec, bm], k=60)] == ["a", "b", "c"]  # a tie keeps first-seen order
    assert rrf_fuse([ChannelHits(VECTOR, 1.0, [("a", 1.0)]), ChannelHits(BM25, 1.0, [("a", 1.0)])])[0][1] == 1.0
    # the image channel adds to a figure's score but not to the normalizer; capped at 1
    fig = ChannelHits(FIGURE, 0.5, [("a", 0.9)])
    assert dict(rrf_fuse([vec, bm, fig]))["a"] == 1.0
    # weights are configurable: a heavier BM25 puts its first hit first
    assert rrf_fuse([vec, replace(bm, weight=2.0)])[0][0] == "b"


def test_figures_are_ranked_on_the_vector_scale():
    vector = ChannelHits(VECTOR, 0.5, [("a", 0.9), ("b", 0.8), ("c", 0.7)])
    figures = figures_on_vector_scale(vector, ChannelHits(FIGURE, 0.5, [("t1", 0.85), ("b", 0.8), ("t2", 0.5)]))
    assert figures.hits == [("t1", 0.85), ("t2", 0.5)] and figures.ranks == [2, 4]  # b is not counted twice
    fused = dict(rrf_fuse([vector, figures], k=60))
    assert fused["t1"] == pytest.approx((0.5 / 62) / (0.5 / 61)) and fused["t2"] < fused["c"] < fused["t1"]


def test_dynamic_weights_follow_each_ranking_sharpness():
    flat = [0.845 - 0.0003 * i for i in range(40)]  # e5 with nothing close to the question
    sharp = [10.2] + [3.7 - 0.1 * i for i in range(39)]  # BM25 with one chunk sharing the rare terms
    assert sharpness(flat) == pytest.approx(1 / 9) and sharpness(sharp) == pytest.approx(6.5 / 7.3)
    assert sharpness([1.0]) == 0.0 and sharpness([1.0, 1.0, 1.0]) == 0.0
    # the cmrc case: BM25 ranks the gold passage first by far, e5 ranks it 35th among near-equal cosines
    vec_ids = [f"v{i}" for i in range(40)]
    vec_ids[34] = "gold"
    vec = ChannelHits(VECTOR, 0.5, list(zip(vec_ids, flat)))
    bm = ChannelHits(BM25, 0.5, list(zip(["gold"] + [f"x{i}" for i in range(8)] + [f"v{i}" for i in range(31)], sharp)))
    rank = lambda fused: [cid for cid, _ in fused].index("gold") + 1  # noqa: E731
    static, dynamic = rank(rrf_fuse([vec, bm], k=60)), rank(rrf_fuse(dynamic_weights([vec, bm], gain=3.0), k=60))
    assert static > 5 and dynamic < static
    weights = [ch.weight for ch in dynamic_weights([vec, bm], gain=3.0)]
    assert weights[0] == pytest.approx(0.5 * (1 + 3 / 9)) and weights[1] == pytest.approx(0.5 * (1 + 3 * 6.5 / 7.3))


def test_filters_status_source_section_and_chapters():
    cands = [cand("a", section="第一章 总则 > 第一节"), cand("b", section="第一章节外"), cand("c", source="b.md"),
             cand("d", section="第二章 > 第三条"), Candidate("unknown")]
    ids = lambda cs: [c.chunk_id for c in cs]  # noqa: E731
    assert ids(filter_candidates(cands)) == ["a", "b", "c", "d"]  # unknown to DuckDB: dropped
    assert ids(filter_candidates(cands, inactive={"a"})) == ["b", "c", "d"]
    assert ids(filter_candidates(cands, sources=["b.md"])) == ["c"]
    assert ids(filter_candidates(cands, section="第一章 总则")) == ["a"]
    assert chapter_markers("第二章第三条规定了什么？") == ["第二章", "第三条"]
    assert ids(filter_candidates(cands, chapters=["第三条"])) == ["d"]
    assert ids(filter_candidates(cands, chapters=["第九章"])) == ["a", "b", "c", "d"]  # no match: no narrowing


def test_mmr_drops_near_duplicates_and_keeps_fused_order():
    sim = jaccard_matrix([["甲", "乙", "丙"], ["甲", "乙", "丙"], ["丁", "戊"], []])
    assert sim[0, 1] == 1.0 and sim[0, 2] == 0.0 and sim[3, 3] == 0.0
    assert mmr_order([1.0, 0.95, 0.6, 0.1], sim, 2, 0.5) == [0, 2]
    assert mmr_order([1.0, 0.95, 0.6], sim[:3, :3], 2, 1.0) == [0, 1]  # lambda 1 = relevance only
    cands = [cand("a", 1.0, tokens="甲乙丙"), cand("b", 0.95, tokens="甲乙丙"), cand("c", 0.9, tokens="丁戊"),
             cand("d", 0.5, tokens="己")]
    assert [c.chunk_id for c in mmr(cands, 3, 0.5)] == ["a", "c", "d"]
    assert [c.chunk_id for c in mmr(cands, 4, 0.5)] == ["a", "b", "c", "d"]  # nothing to cut
    assert is_enum_query("安全检查包括哪些方面？") and not is_enum_query("清川市的水价是多少？")


def test_adaptive_top_k_works_on_both_scales():
    s = Settings(top_k=15, adaptive_topk_min=5, adaptive_topk_max=30)
    assert adaptive_top_k([0.98] + [0.5] * 40, RRF, s) == 5  # channels agree on the top chunk
    assert adaptive_top_k([0.7] + [0.5] * 40, RRF, s) == 15
    assert adaptive_top_k([0.45] * 40, RRF, s) == 30
    # after a rerank (seed defect 000 §6.3: the seed skipped this step) and never under min_score
    assert adaptive_top_k([0.9] + [0.5] * 20, RERANK, s) == 5
    assert adaptive_top_k([0.6] * 10 + [0.01] * 10, RERANK, s) == 10
    assert adaptive_top_k([0.2] * 10 + [0.04] * 30, RERANK, s) == 10
    assert adaptive_top_k([0.98] * 40, RRF, replace(s, adaptive_topk_enabled=False)) == 15
    assert adaptive_top_k([], RRF, s) == 0


# ---------------------------------------------------------------- a tiny cross-encoder


def build_tiny_cross_encoder(path, texts):
    """A 1-layer BERT sequence classifier with random weights and a character WordPiece tokenizer
    built from `texts` with the `tokenizers` library: a real CrossEncoder folder, no hub access."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])}
    for ch in sorted({ch for text in texts for ch in text.lower() if not ch.isspace()}):
        vocab.setdefault(ch, len(vocab))
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=200))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True, handle_chinese_chars=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                            sep_token="[SEP]", mask_token="[MASK]", model_max_length=512).save_pretrained(path)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(path)
    return path


def test_tiny_cross_encoder_scores_are_probabilities(tmp_path):
    texts = ["生命数耗完即算为什么？", "生命数耗完即算为踢爆。", "计算神经科学"]
    reranker = Reranker(build_tiny_cross_encoder(tmp_path / "ce", texts))
    scores = reranker.score([(texts[0], texts[1]), (texts[0], texts[2]), (texts[0], texts[1])])
    assert scores.shape == (3,) and np.all((scores > 0) & (scores < 1))
    assert scores[0] == pytest.approx(scores[2]) and scores[0] != pytest.approx(scores[1])
    assert reranker.score([]).shape == (0,)
    with pytest.raises(FileNotFoundError, match="not a local model folder"):
        Reranker(tmp_path / "missing")


# ---------------------------------------------------------------- on a real knowledge base


@pytest.fixture(scope="module")
def cmrc(cmrc_kb):
    home, questions_path = cmrc_kb
    settings = load_settings(home)
    return settings, Retriever(settings, "cmrc"), read_questions(questions_path).questions


def _ranks(retriever, questions, mode, **kw) -> list[int | None]:
    out = []
    for a in range(0, len(questions), 32):
        part = questions[a:a + 32]
        for q, r in zip(part, retriever.retrieve_batch([q.question for q in part], mode, **kw)):
            out.append(next((k for k, c in enumerate(r.ranked, 1) if q.is_gold(c.chunk_id, c.source)), None))
    return out


def test_hybrid_hit_at_5_is_at_least_the_better_single_channel(cmrc):
    _, retriever, questions = cmrc
    assert len(questions) >= 200
    hit5 = {mode: np.mean([r is not None and r <= 5 for r in _ranks(retriever, questions, mode)])
            for mode in ("vector", "bm25", "hybrid")}
    print("hit@5 on the cmrc KB:", hit5)
    assert hit5["vector"] > 0.9 and hit5["bm25"] > 0.9  # both channels work on their own
    assert hit5["hybrid"] >= max(hit5["vector"], hit5["bm25"])


def test_retrieval_stages_and_traces(cmrc):
    settings, retriever, questions = cmrc
    q = questions[0]
    (r,) = retriever.retrieve_batch([q.question])
    assert r.score_scale == RRF and r.kept == len(r.ranked) - sum(bool(c.rescued) for c in r.ranked)
    assert [st.stage for st in r.stages] == ["vector", "bm25", "rrf", "filter", "mmr", "topk", "rescue"]
    vector = r.stages[0].hits
    assert len(vector) == min(settings.recall_k, retriever.size) and r.top_cosine == vector[0][1]
    assert len(r.stages[4].hits) <= settings.mmr_top_k
    scores = [c.score for c in r.ranked[:r.kept]]
    assert scores == sorted(scores, reverse=True) and all(c.chunk is not None for c in r.ranked)
    assert set(r.timings) == {"recall", "fusion", "rerank", "rescue"}
    rows = trace_records("run", q.qid, r, lambda cid: q.is_gold(cid, cid.rsplit("_", 1)[0]), max_rank=10)
    assert {row.stage for row in rows} <= set(STAGES) and max(row.rank for row in rows) <= 10
    assert any(row.is_gold for row in rows if row.stage == "topk")


def test_widening_adds_a_keyword_variant_and_more_candidates(cmrc):
    settings, retriever, questions = cmrc
    (narrow,), (wide,) = retriever.retrieve_batch([questions[0].question]), retriever.retrieve_batch(
        [questions[0].question], widen=True)
    assert len(wide.variants) == 2 and wide.widened and wide.variants[1] != wide.variants[0]
    assert len([st for st in wide.stages if st.stage == "bm25"]) == 2
    mmr_hits = lambda r: next(st.hits for st in r.stages if st.stage == "mmr")  # noqa: E731
    assert len(mmr_hits(wide)) >= len(mmr_hits(narrow))


def test_source_and_section_filters_hold_everywhere(cmrc):
    settings, retriever, questions = cmrc
    q = questions[0]
    source = f"{q.gold_pids[0]}.md"
    (r,) = retriever.retrieve_batch([q.question], sources=[source])
    assert r.ranked and {c.source for c in r.ranked} == {source}
    (r,) = retriever.retrieve_batch([q.question], widen=True, sources=[source])
    assert {c.source for c in r.ranked} == {source}
    section = r.ranked[0].section
    (r,) = retriever.retrieve_batch(["完全无关"], section=section)
    assert {c.section for c in r.ranked} <= {section}


def test_bm25_only_mode_needs_no_embedder(cmrc):
    settings, _, questions = cmrc
    retriever = Retriever(settings, "cmrc")
    (r,) = retriever.retrieve_batch([questions[0].question], "bm25")
    assert retriever._embedder is None and r.top_cosine is None and r.ranked


def test_rerank_stage_with_a_tiny_cross_encoder(cmrc, tmp_path):
    settings, retriever, questions = cmrc
    texts = [q.question for q in questions[:4]]
    texts += [c.chunk.content for q in questions[:4] for c in retriever.retrieve_batch([q.question])[0].ranked]
    model = build_tiny_cross_encoder(tmp_path / "ce", texts)
    s = replace(settings, rerank_model=str(model), rerank_candidates=8)
    reranking = Retriever(s, "cmrc", embedder=retriever.embedder, bm25=retriever.bm25,
                          collection=retriever.collection)
    assert reranking.reranker is not None
    out = reranking.retrieve_batch(texts[:4])
    for r in out:
        assert r.score_scale == RERANK
        rerank_stage = next(st.hits for st in r.stages if st.stage == "rerank")
        assert len(rerank_stage) == 8 and all(0 < score < 1 for _, score, _ in rerank_stage)
        kept = r.ranked[:r.kept]
        assert [c.score for c in kept] == sorted((c.score for c in kept), reverse=True)
        assert all(c.rerank is not None and c.score >= s.context_min_score for c in kept)
        assert all(c.score >= s.cluster_rescue_floor for c in r.ranked[r.kept:])
    assert out[0].timings["rerank"] > 0
    # the same batch without the reranker is on the rrf scale
    assert reranking.retrieve_batch(texts[:1], use_reranker=False)[0].score_scale == RRF


def test_questions_file_round_trip(cmrc_kb):
    _, path = cmrc_kb
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    q = read_questions(path).questions[0]
    assert isinstance(q, Question) and q.qid == first["qid"] and q.gold_pids == first["gold_pids"]
