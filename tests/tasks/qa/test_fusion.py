"""Fusion on hand-made rankings: weighted RRF normalized to the first place, the image channel on
the vector scale, and weights that follow each ranking's sharpness."""
from __future__ import annotations

from dataclasses import replace

import pytest

from tasks.qa.fusion import dynamic_weights, figures_on_vector_scale, rrf_fuse, sharpness
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
