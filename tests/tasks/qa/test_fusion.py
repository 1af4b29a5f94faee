"""Fusion on hand-made rankings: weighted RRF normalized to the first place, the image channel on
the vector scale, weights that follow each ranking's sharpness, and the score-aware fusion (the
default): a strong single-channel hit kept, the fitted defaults applied, ties in a fixed order."""
from __future__ import annotations

from dataclasses import replace

import pytest

from schemas.settings import Settings
from tasks.qa.fusion import dynamic_weights, figures_on_vector_scale, fuse, rrf_fuse, score_fuse, sharpness
from tasks.qa.types import BM25, FIGURE, VECTOR, ChannelHits


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


# ---------------------------------------------------------------- score-aware fusion (the default)

DEFAULTS = Settings().retrieval


def test_a_strong_hit_of_one_channel_is_not_lost():
    """The cmrc/drcd case: BM25 finds the gold chunk by its rare terms far ahead of everything else,
    e5's cosines are all alike and do not hold it. RRF puts the chunks both channels hold half-way
    down ahead of it; score fusion keeps it first."""
    flat = [0.845 - 0.0004 * i for i in range(40)]
    vec = ChannelHits(VECTOR, 0.5, [(f"v{i}", s) for i, s in enumerate(flat)])
    both = [f"v{i}" for i in range(3, 13)]  # chunks both channels hold, mid-ranked in each
    bm = ChannelHits(BM25, 0.5, [("gold", 24.0)] + [(cid, 9.0 - 0.2 * j) for j, cid in enumerate(both)])
    assert [cid for cid, _ in fuse([vec, bm], replace(DEFAULTS, fusion="rrf"))][0] != "gold"
    fused = fuse([vec, bm], DEFAULTS)
    assert fused[0][0] == "gold"
    # and symmetrically: a cosine far above the rest, BM25 sharing only common terms with it
    sharp = ChannelHits(VECTOR, 0.5, [("gold", 0.93)] + [(f"v{i}", s) for i, s in enumerate(flat)])
    weak = ChannelHits(BM25, 0.5, [(cid, 3.0 - 0.1 * j) for j, cid in enumerate(both)])
    assert fuse([sharp, weak], DEFAULTS)[0][0] == "gold"


def test_the_fitted_defaults_are_the_weights_applied():
    vec = ChannelHits(VECTOR, 0.5, [("a", 0.86), ("b", 0.85), ("c", 0.80)])
    bm = ChannelHits(BM25, 0.5, [("c", 12.0), ("b", 9.0), ("d", 2.0)])
    r = DEFAULTS
    weighted = dynamic_weights([replace(vec, weight=r.fusion_vector_weight),
                                replace(bm, weight=1 - r.fusion_vector_weight)], r.fusion_gain)
    expected = score_fuse(weighted, vector_scale=r.fusion_vector_scale, bm25_scale=r.fusion_bm25_scale)
    assert fuse([vec, bm], r) == expected
    # by hand: normalized against each channel's top, weights × (1 + gain × sharpness), over their sum
    wv, wb = weighted[0].weight, weighted[1].weight
    nv_b = max(0.0, 1 - 0.01 / r.fusion_vector_scale)
    nb_b = max(0.0, 1 - (1 - 9 / 12) / r.fusion_bm25_scale)
    assert dict(expected)["b"] == pytest.approx(min(1.0, (wv * nv_b + wb * nb_b) / (wv + wb)))
    assert dict(expected)["d"] == pytest.approx(max(0.0, 1 - (1 - 2 / 12) / r.fusion_bm25_scale) * wb / (wv + wb))
    # every knob moves the result: the weight decides between a vector-first and a BM25-first chunk
    assert fuse([vec, bm], replace(r, fusion_vector_weight=0.9, fusion_gain=0.0))[0][0] == "a"
    assert fuse([vec, bm], replace(r, fusion_vector_weight=0.1, fusion_gain=0.0))[0][0] == "c"
    # the seed's RRF stays one setting away; an unknown fusion is refused
    assert fuse([vec, bm], replace(r, fusion="rrf")) == rrf_fuse(dynamic_weights([vec, bm], r.dynamic_rrf_gain),
                                                                r.rrf_k)
    with pytest.raises(ValueError, match="fusion"):
        fuse([vec, bm], replace(r, fusion="sum"))


def test_score_fusion_is_normalized_and_orders_ties_deterministically():
    vec = ChannelHits(VECTOR, 1.0, [("a", 0.9), ("b", 0.9), ("c", 0.5)])
    bm = ChannelHits(BM25, 1.0, [("a", 10.0), ("z", 10.0), ("y", 10.0)])
    fused = score_fuse([vec, bm], vector_scale=0.05, bm25_scale=0.5)
    assert fused[0] == ("a", 1.0)  # first in both = 1
    # b (vector rank 2), y and z (BM25 ranks 3, 2) all score 0.5: the better best rank first, then the id
    assert [cid for cid, _ in fused] == ["a", "b", "z", "y", "c"]
    assert [s for _, s in fused[1:4]] == [0.5, 0.5, 0.5] and fused[4] == ("c", 0.0)  # far below: 0, kept last
    # the channels' order does not matter
    assert score_fuse([bm, vec], vector_scale=0.05, bm25_scale=0.5) == fused
    # the image channel adds on the vector scale (against the vector channel's top) and is not in the normalizer
    fig = ChannelHits(FIGURE, 1.0, [("t", 0.89)], ranks=[2])
    with_fig = dict(score_fuse([vec, bm, fig], vector_scale=0.05, bm25_scale=0.5))
    assert with_fig["t"] == pytest.approx((1 - 0.01 / 0.05) / 2)
    assert score_fuse([], vector_scale=0.05, bm25_scale=0.5) == []
