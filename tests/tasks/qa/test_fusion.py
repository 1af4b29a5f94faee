"""Fusion on hand-made rankings: weighted RRF normalized to the first place, the image channel on
the vector scale, weights that follow each ranking's sharpness, the score-aware fusion (a strong
single-channel hit kept, the fitted defaults applied, ties in a fixed order), the learned fusion
(first everywhere first and at 1, the coefficients decide, the channels' order does not, the bench
fits on the very features the pipeline scores with) and their blend, the default (the mean of both,
the bench's order)."""
from __future__ import annotations

import itertools
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from schemas.qa import Question
from schemas.settings import Settings
from tasks.qa.fusion import (FUSIONS, LEARNED_FEATURES, blend_fuse, dynamic_weights, figures_on_vector_scale, fuse,
                             learned_candidates, learned_fuse, rrf_fuse, score_fuse, sharpness)
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


# ---------------------------------------------------------------- score-aware fusion

DEFAULTS = replace(Settings().retrieval, fusion="score")


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


# ---------------------------------------------------------------- learned fusion

COEF = Settings().retrieval.fusion_learned_coef


def test_learned_fusion_puts_first_everywhere_first():
    r = replace(Settings().retrieval, fusion="learned")
    assert len(COEF) == len(LEARNED_FEATURES)
    vec = ChannelHits(VECTOR, 0.5, [("a", 0.89), ("v", 0.88), ("b", 0.86)])
    bm = ChannelHits(BM25, 0.5, [("a", 15.0), ("m", 14.0), ("b", 3.0)])
    both_first = [vec, bm]
    fused = fuse(both_first, r)
    assert fused == learned_fuse(both_first, COEF) and fused[0] == ("a", pytest.approx(1.0))
    # so with a query variant (widened questions): first in both channels of both variants is still 1
    variants = both_first + [replace(ch, variant=1) for ch in both_first]
    assert learned_fuse(variants, COEF)[0] == ("a", pytest.approx(1.0))
    # a variant that misses a chunk halves its linear score: a vector-only chunk of variant 0 drops
    one = dict(learned_fuse(both_first, COEF))["v"]
    assert dict(learned_fuse([*both_first, replace(bm, variant=1)], COEF))["v"] < one
    with pytest.raises(ValueError, match="fusion_learned_coef"):
        learned_fuse(both_first, COEF[:-1])


def test_learned_scores_are_on_the_rrf_scale():
    """1 = first in every text channel present, 0.5 = first in one and absent from the other (RRF's
    two anchors; with these coefficients both channels weigh the same), on [0, 1] throughout."""
    even = (1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.5)  # cosine gap, BM25 share, both ranks; figures
    vec = ChannelHits(VECTOR, 0.5, [("a", 0.90), ("v", 0.85)] + [(f"x{i}", 0.8 - 0.01 * i) for i in range(30)])
    bm = ChannelHits(BM25, 0.5, [("a", 20.0), ("b", 9.0)] + [(f"y{i}", 8.0 - 0.2 * i) for i in range(30)])
    only_v = ChannelHits(VECTOR, 0.5, [("v", 0.90)])
    fused = dict(learned_fuse([vec, bm], even))
    assert fused["a"] == pytest.approx(1.0) and all(0.0 <= v <= 1.0 for v in fused.values())
    assert dict(learned_fuse([only_v, replace(bm, hits=[("b", 20.0)])], even))["v"] == pytest.approx(0.5, abs=1e-4)
    # a single channel's first hit is first everywhere in that mode (as in RRF and score fusion)
    assert learned_fuse([bm], even)[0] == ("a", pytest.approx(1.0))
    # a figure adds to a chunk's score and is capped at 1
    fig = ChannelHits(FIGURE, 0.5, [("a", 0.90)], ranks=[1])
    assert dict(learned_fuse([vec, bm, fig], even))["a"] == 1.0
    assert learned_fuse([], even) == []


def test_the_coefficients_decide_between_a_strong_single_channel_and_weak_agreement():
    """BM25 finds `gold` far ahead of the rest; `both` is found by both channels, low in each."""
    flat = [(f"v{i}", 0.845 - 0.0004 * i) for i in range(40)]
    vec = ChannelHits(VECTOR, 0.5, flat[:20] + [("both", 0.80)] + flat[20:])
    bm = ChannelHits(BM25, 0.5, [("gold", 24.0)] + [(f"w{i}", 8.0 - 0.1 * i) for i in range(9)] + [("both", 6.0)])
    rank = lambda fused, cid: [c for c, _ in fused].index(cid)  # noqa: E731
    assert rank(learned_fuse([vec, bm], COEF), "gold") < rank(learned_fuse([vec, bm], COEF), "both")
    presence = (0.0, 0.0, 0.1, 0.0, 0.1, 0.1, 2.0, 2.0, 0.0)  # coefficients that value being found by both
    assert rank(learned_fuse([vec, bm], presence), "both") < rank(learned_fuse([vec, bm], presence), "gold")


def test_learned_fusion_does_not_depend_on_the_channels_order():
    vec = ChannelHits(VECTOR, 0.5, [("a", 0.9), ("b", 0.9), ("c", 0.85)])
    fig = figures_on_vector_scale(vec, ChannelHits(FIGURE, 0.5, [("t", 0.88), ("b", 0.9)]))
    bm = ChannelHits(BM25, 0.5, [("c", 10.0), ("b", 10.0), ("z", 4.0)])
    orders = [learned_fuse(list(chs), COEF) for chs in itertools.permutations([vec, fig, bm])]
    assert all(o == orders[0] for o in orders) and {cid for cid, _ in orders[0]} == {"a", "b", "c", "t", "z"}


def test_the_bench_fits_on_the_features_the_pipeline_scores_with(monkeypatch):
    """bench/fusion_fit.py's SetMatrix features (what `fit_learned` trains on) are learned_fuse's own,
    and its matrix order is learned_fuse's order."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[3] / "bench"))
    sys.modules.pop("fusion_fit", None)
    import fusion_fit as ff

    questions = [Question("q1", "?"), Question("q2", "?")]
    vec = ChannelHits(VECTOR, 0.5, [("a", 0.91), ("b", 0.9), ("c", 0.84)])
    fig = figures_on_vector_scale(vec, ChannelHits(FIGURE, 0.5, [("t", 0.905)]))
    bm = ChannelHits(BM25, 0.5, [("c", 11.0), ("d", 7.5), ("a", 2.0)])
    channels = [[vec, fig, bm], [ChannelHits(BM25, 0.5, [("e", 3.0), ("f", 1.0)])]]
    m = ff.SetMatrix.of(ff.CachedSet("toy", questions, channels, {}))
    x = ff.learned_features(m)
    for i, chs in enumerate(channels):
        ids, mine = learned_candidates(chs)
        np.testing.assert_array_equal(x[i, :len(ids)], mine)
        order = np.argsort(-m.learned_scores(COEF)[i][:len(ids)], kind="stable")
        assert [ids[j] for j in order] == [cid for cid, _ in learned_fuse(chs, COEF)]


def test_unusable_learned_coefficients_fail_before_the_first_question(tmp_path):
    from schemas.errors import SettingsError
    from tasks.qa.fusion import check_learned_coef
    from tasks.qa.retriever import Retriever

    check_learned_coef(COEF)  # the shipped ones
    # scoring "first in one channel" above "first in both": adaptive top-k and confidence would misread them
    reversed_ = tuple(-c for c in COEF)
    with pytest.raises(SettingsError, match="fusion_learned_coef.*first in both channels"):
        check_learned_coef(reversed_)
    with pytest.raises(SettingsError, match="fusion_learned_coef: needs"):
        check_learned_coef(COEF[:-1])
    settings = Settings(home=tmp_path)
    settings = replace(settings, retrieval=replace(settings.retrieval, fusion_learned_coef=reversed_))
    with pytest.raises(SettingsError, match="fusion_learned_coef"):
        Retriever(settings, "any", collection=object(), bm25=object(), reranker=object())


# ---------------------------------------------------------------- blend (the default)


def test_the_blend_is_the_default_and_the_mean_of_the_learned_and_the_score_fusion():
    r = Settings().retrieval
    assert r.fusion == FUSIONS[0] == "blend"
    # "v" second by cosine, "m" by BM25: the learned fusion puts "v" second, the score fusion "m"
    vec = ChannelHits(VECTOR, 0.5, [("a", 0.89), ("v", 0.889), ("b", 0.86), ("c", 0.85)])
    bm = ChannelHits(BM25, 0.5, [("a", 15.0), ("m", 14.0), ("b", 3.0), ("c", 2.9)])
    fused = fuse([vec, bm], r)
    assert fused == blend_fuse([vec, bm], r) and fused[0] == ("a", pytest.approx(1.0))
    learned, score = learned_fuse([vec, bm], COEF), fuse([vec, bm], replace(r, fusion="score"))
    assert [learned[1][0], score[1][0]] == ["v", "m"]
    mean = {cid: (value + dict(score)[cid]) / 2 for cid, value in learned}
    assert dict(fused) == pytest.approx(mean)
    assert [value for _, value in fused] == sorted(mean.values(), reverse=True)


def test_the_bench_blends_as_the_pipeline_does(monkeypatch):
    """bench/fusion_fit.py's blend scores (what its leave-one-set-out table reports) order a question's
    candidates as blend_fuse does."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[3] / "bench"))
    sys.modules.pop("fusion_fit", None)
    import fusion_fit as ff

    r = Settings().retrieval
    vec = ChannelHits(VECTOR, 0.5, [("a", 0.91), ("b", 0.9), ("c", 0.84), ("g", 0.83)])
    fig = figures_on_vector_scale(vec, ChannelHits(FIGURE, 0.5, [("t", 0.905)]))
    bm = ChannelHits(BM25, 0.5, [("c", 11.0), ("d", 7.5), ("a", 2.0), ("h", 1.0)])
    m = ff.SetMatrix.of(ff.CachedSet("toy", [Question("q1", "?")], [[vec, fig, bm]], {}))
    params = {k: getattr(r, k) for k in ff.GRID}
    ids, _ = learned_candidates([vec, fig, bm])
    scores = m.blend_scores(COEF, params)[0][:len(ids)]
    pipeline = blend_fuse([vec, fig, bm], r)
    assert [ids[j] for j in np.argsort(-scores, kind="stable")] == [cid for cid, _ in pipeline]
    assert sorted(scores, reverse=True) == pytest.approx([value for _, value in pipeline], abs=1e-6)
