"""Fusion (seed 000 §5.2, seed 002) of the recall channels into one ranking, four ways:

- `blend_fuse` (the default, `fusion = "blend"`): the mean of the next two's scores. Held out (fitted
  on four sets, reported on the fifth) each of them falls below the best single channel on one set
  (learned on drcd, where BM25 is far ahead of the vector channel; score on rgb, where it is behind):
  they err on different questions, and their mean is above the best channel on all five;
- `learned_fuse` (`fusion = "learned"`): a linear model over each candidate's rank and
  score features in every channel (`learned_features`), its coefficients fitted as a pairwise
  logistic regression (RankNet-style: the gold chunk against every other candidate of a question)
  by bench/fusion_fit.py, mapped onto the "rrf" scale (`learned_fuse` says how);
- `score_fuse` (`fusion = "score"`): a convex combination of each channel's scores,
  each normalized against that channel's own first hit, so a chunk one channel finds with a strong
  score keeps that strength (RRF only sees its rank; seed 002 says so: "排名本身不表达" how far
  first is ahead of second);
- `rrf_fuse` (`fusion = "rrf"`): weighted reciprocal-rank fusion, the seed's.
All rank the image/table channel on the vector channel's scale and score on [0, 1] with 1 = first
in every text channel and query variant (the "rrf" score scale); score and RRF fusion take
per-question weights from how sharply each channel singles out its first hit (the seed's
DYNAMIC_RRF_ENABLED, formula ours).

The learned coefficients (settings.retrieval.fusion_learned_coef) and the score-fusion defaults
(fusion_*) were fitted on the five question sets of ../shared/data/qa by bench/retrieval.py, and
checked leave-one-set-out there; the figures are in the README ("Fusion")."""
from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from schemas.errors import SettingsError
from schemas.settings import CHOICES, RetrievalSettings
from tasks.qa.types import BM25, FIGURE, VECTOR, ChannelHits


def rrf_fuse(channels: Sequence[ChannelHits], k: int = 60) -> list[tuple[str, float]]:
    """Weighted reciprocal-rank fusion (seed 002 `_rrf_ranked`): Σ weight / (k + rank) over every
    channel and query variant, divided by the best attainable sum over the text channels, so 1.0 =
    first everywhere. The image channel is not in the normalizer; scores are capped at 1. Best
    first, ties in first-seen order."""
    text = [c for c in channels if c.channel != FIGURE] or list(channels)
    best = sum(c.weight / (k + 1) for c in text)
    if best <= 0:
        return []
    order = sorted(reciprocal_ranks(channels, k).items(), key=lambda kv: -kv[1])  # stable: ties keep first-seen order
    return [(chunk_id, min(1.0, score / best)) for chunk_id, score in order]


def reciprocal_ranks(channels: Sequence[ChannelHits], k: int) -> dict[str, float]:
    """Σ weight / (k + rank) per chunk over every channel and query variant, in first-seen order."""
    fused: dict[str, float] = {}
    for ch in channels:
        for i, (chunk_id, _) in enumerate(ch.hits):
            rank = ch.ranks[i] if ch.ranks is not None else i + 1
            fused[chunk_id] = fused.get(chunk_id, 0.0) + ch.weight / (k + rank)
    return fused


TIE_RRF_K = 60  # score fusion's tie-break: reciprocal ranks with the seed's RRF_K


def normalized_scores(ch: ChannelHits, top: float, *, vector_scale: float, bm25_scale: float) -> list[float]:
    """A channel's raw scores on [0, 1] against its first hit `top` (1 = as good as the first):
    a cosine falls linearly to 0 at `vector_scale` below the top cosine (e5's cosines crowd into a
    few hundredths); a BM25 score at its share of the top score, falling to 0 at a share of
    1 − `bm25_scale` (BM25's absolute scale follows the question's length and rare terms)."""
    if ch.channel == BM25:
        if top <= 0:
            return [0.0] * len(ch.hits)
        return [max(0.0, 1.0 - (1.0 - s / top) / bm25_scale) for _, s in ch.hits]
    return [min(1.0, max(0.0, 1.0 - (top - s) / vector_scale)) for _, s in ch.hits]


def score_fuse(channels: Sequence[ChannelHits], *, vector_scale: float, bm25_scale: float,
               ) -> list[tuple[str, float]]:
    """Score-aware fusion: Σ weight × normalized score over every channel and query variant,
    divided by the text channels' weights (1.0 = first in every text channel). The image channel
    is normalized against the vector channel's top cosine of the same variant (it ranks on the
    vector scale) and, as in RRF, adds without being in the normalizer; capped at 1. Chunks beyond
    a channel's scale score 0 there, so ties are common in the tail: they are ordered by their
    reciprocal ranks (Σ weight / (60 + rank), RRF), then by chunk id — the order does not depend
    on the order of the channels, and the tail is ranked by rank fusion, not by name."""
    text = [c for c in channels if c.channel != FIGURE] or list(channels)
    best = sum(c.weight for c in text)
    if best <= 0:
        return []
    vector_top = {c.variant: c.hits[0][1] for c in channels if c.channel != BM25 and c.channel != FIGURE and c.hits}
    fused: dict[str, float] = {}
    for ch in channels:
        if not ch.hits:
            continue
        top = vector_top.get(ch.variant, ch.hits[0][1]) if ch.channel == FIGURE else ch.hits[0][1]
        norm = normalized_scores(ch, top, vector_scale=vector_scale, bm25_scale=bm25_scale)
        for (chunk_id, _), value in zip(ch.hits, norm):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + ch.weight * value
    by_rank = reciprocal_ranks(channels, TIE_RRF_K)
    order = sorted(fused, key=lambda cid: (-round(fused[cid], 12), -by_rank[cid], cid))
    return [(chunk_id, min(1.0, fused[chunk_id] / best)) for chunk_id in order]


def sharpness(scores: Sequence[float], depth: int = 10) -> float:
    """How far a channel's first hit stands out: (s1 − s2) / (s1 − s_depth), in [0, 1]. A flat list
    (an e5 channel with nothing close to the question: cosines 0.845, 0.844, …) is ~0; a BM25 list
    whose first chunk shares the question's rare terms and the rest share little is near 1."""
    if len(scores) < 2:
        return 0.0
    last = scores[min(depth, len(scores)) - 1]
    spread = scores[0] - last
    return float(min(1.0, max(0.0, (scores[0] - scores[1]) / spread))) if spread > 0 else 0.0


def figures_on_vector_scale(vector: ChannelHits, figures: ChannelHits) -> ChannelHits:
    """The image/table channel (seed 000 §9.1) exists so figures are not crowded out of the
    candidates by text: it recalls figures beyond the vector channel's depth. Ranked on their own
    (first figure = rank 1) they would get a first-ranked text hit's credit for every question, so
    each figure the vector channel did not already return is ranked where its cosine falls among the
    vector channel's hits; those it did return are not counted twice."""
    seen = {cid for cid, _ in vector.hits}
    cosines = sorted((-score for _, score in vector.hits))  # ascending negated = descending cosines
    hits, ranks = [], []
    for cid, score in figures.hits:
        if cid not in seen:
            hits.append((cid, score))
            ranks.append(1 + bisect.bisect_left(cosines, -score))
    return replace(figures, hits=hits, ranks=ranks)


def dynamic_weights(channels: Sequence[ChannelHits], gain: float, depth: int = 10) -> list[ChannelHits]:
    """Dynamic RRF weights (seed 000 §5.2 [12] DYNAMIC_RRF_ENABLED; the seed gives no formula, this
    one is ours): each ranking's weight × (1 + gain × sharpness), so a channel that singles out
    one chunk counts for more than one that cannot tell its candidates apart."""
    return [replace(ch, weight=ch.weight * (1 + gain * sharpness([s for _, s in ch.hits], depth)))
            if ch.channel != FIGURE else ch for ch in channels]


# ---------------------------------------------------------------- learned fusion

# a candidate's features in one query variant, in the order of settings.retrieval.fusion_learned_coef
LEARNED_FEATURES = ("cosine near the top: exp(-gap/0.02)", "cosine at the top: exp(-gap/0.005)",
                    "BM25 share of the top score", "its cube", "1 / vector rank", "1 / BM25 rank",
                    "found by vector", "found by BM25", "figure cosine near the top: exp(-gap/0.02)")
GAP_CAP = 0.2  # a cosine this far below the top (or none) is as good as not found: e5 crowds into hundredths
_CHANNEL_ORDER = {VECTOR: 0, FIGURE: 1, BM25: 2}


def learned_features(cos: np.ndarray, fig: np.ndarray, bm25: np.ndarray, rank_v: np.ndarray, rank_b: np.ndarray,
                     top_v: np.ndarray | float, top_b: np.ndarray | float) -> np.ndarray:
    """Candidates' features, shape (*cos.shape, len(LEARNED_FEATURES)), from arrays of one shape:
    cosine, figure cosine, BM25 score (NaN = not found by that channel), vector-scale rank (figures
    included) and BM25 rank (inf = absent); `top_v`, `top_b` (the vector channel's top cosine, BM25's
    top score) broadcast against them. The cosine speaks through its gap to the top at two widths
    (e5's absolute cosines say little), BM25 through its share of the top score (its absolute scale
    follows the question's length and rare terms), both through their ranks; a figure through its
    cosine's gap to the vector channel's top (as in score_fuse). One implementation for
    `learned_fuse` and the fit (bench/fusion_fit.py)."""
    found_v, found_f, found_b = ~np.isnan(cos), ~np.isnan(fig), ~np.isnan(bm25)
    gap = np.where(found_v, np.clip(top_v - cos, 0.0, GAP_CAP), GAP_CAP)
    fig_gap = np.where(found_f, np.clip(top_v - fig, 0.0, GAP_CAP), GAP_CAP)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.nan_to_num(np.where(found_b, bm25 / np.where(np.greater(top_b, 0), top_b, np.nan), 0.0))
    inv_v = np.where(np.isfinite(rank_v), 1.0 / rank_v, 0.0)
    inv_b = np.where(np.isfinite(rank_b), 1.0 / rank_b, 0.0)
    return np.stack([np.exp(-gap / 0.02), np.exp(-gap / 0.005), share, share ** 3, inv_v, inv_b,
                     found_v * 1.0, found_b * 1.0, found_f * np.exp(-fig_gap / 0.02)], axis=-1)


def channel_arrays(channels: Sequence[ChannelHits], ids: dict[str, int]) -> dict[str, np.ndarray | float]:
    """One query variant's channels as `learned_features`' arguments over the candidates `ids`
    (chunk id → position). The image channel's ranks are on the vector scale (figures_on_vector_scale),
    its cosines compared with the vector channel's top (its own when the vector channel found nothing)."""
    n = len(ids)
    cos, fig, bm25 = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    rank_v, rank_b = np.full(n, np.inf), np.full(n, np.inf)
    top: dict[str, float] = {}
    for ch in sorted(channels, key=lambda c: _CHANNEL_ORDER.get(c.channel, 3)):  # the channels' order is no input
        values, ranks = {VECTOR: (cos, rank_v), FIGURE: (fig, rank_v), BM25: (bm25, rank_b)}[ch.channel]
        for i, (chunk_id, score) in enumerate(ch.hits):
            values[ids[chunk_id]] = score
            ranks[ids[chunk_id]] = ch.ranks[i] if ch.ranks is not None else i + 1
        if ch.hits:
            top.setdefault(ch.channel, ch.hits[0][1])
    return {"cos": cos, "fig": fig, "bm25": bm25, "rank_v": rank_v, "rank_b": rank_b,
            "top_v": top.get(VECTOR, top.get(FIGURE, 0.0)), "top_b": top.get(BM25, 0.0)}


def learned_candidates(channels: Sequence[ChannelHits]) -> tuple[list[str], np.ndarray]:
    """A question's candidates (first-seen order) and their features averaged over the query
    variants with a text channel (a variant that did not find a candidate adds its features of
    absence, ~0 for every coefficient)."""
    ids: dict[str, int] = {}
    for ch in channels:
        for chunk_id, _ in ch.hits:
            ids.setdefault(chunk_id, len(ids))
    total = np.zeros((len(ids), len(LEARNED_FEATURES)))
    for variant in sorted({ch.variant for ch in channels}):
        total += learned_features(**channel_arrays([ch for ch in channels if ch.variant == variant], ids))
    text_variants = {ch.variant for ch in channels if ch.channel != FIGURE}
    return list(ids), total / max(1, len(text_variants))


def first_everywhere(coef: Sequence[float], *, vector: bool, bm25: bool) -> float:
    """The linear score of a chunk first in these text channels with their top cosine / score."""
    one = lambda on, value: np.array([value if on else np.nan])  # noqa: E731
    x = learned_features(one(vector, 0.0), one(False, 0.0), one(bm25, 1.0), np.array([1.0 if vector else np.inf]),
                         np.array([1.0 if bm25 else np.inf]), 0.0, 1.0)[0]
    return float(x @ np.asarray(coef, dtype=float))


def learned_scale(coef: Sequence[float]) -> float:
    """The logistic's width mapping a linear score onto the rrf scale: 2σ((s − first in both) / width)
    is 1 for a chunk first in both text channels and 0.5 (RRF's value) for one first in a single
    channel and absent from the other (the mean of the two such chunks)."""
    both = first_everywhere(coef, vector=True, bm25=True)
    single = (first_everywhere(coef, vector=True, bm25=False) + first_everywhere(coef, vector=False, bm25=True)) / 2
    if not both > single:
        raise SettingsError("setting fusion_learned_coef: it must score a chunk first in both channels above one "
                            "first in one channel only (refit them with bench/fusion_fit.py)")
    return (both - single) / math.log(3)


def check_learned_coef(coef: Sequence[float], *, scale: bool = True) -> None:
    """Raise SettingsError for coefficients learned fusion cannot use (their number; with `scale`,
    their order, `learned_scale`): a run checks them before its first question, not at it."""
    if len(coef) != len(LEARNED_FEATURES):
        raise SettingsError(f"setting fusion_learned_coef: needs {len(LEARNED_FEATURES)} numbers, not {len(coef)}")
    if scale:
        learned_scale(tuple(coef))


def check_fusion_settings(r: RetrievalSettings) -> None:
    """Raise SettingsError for fusion settings a run could not use (learned fusion's coefficients)."""
    if r.fusion in ("learned", "blend"):
        check_learned_coef(r.fusion_learned_coef)


@functools.lru_cache(maxsize=64)  # per question otherwise: four feature computations of their own
def _anchors(coef: tuple[float, ...], vector: bool, bm25: bool) -> tuple[float, float]:
    return first_everywhere(coef, vector=vector, bm25=bm25), learned_scale(coef)


def learned_fuse(channels: Sequence[ChannelHits], coef: Sequence[float]) -> list[tuple[str, float]]:
    """Learned fusion: a candidate's linear score s = features · coef (`learned_features`, averaged
    over the query variants), best first; ties (rare: features are continuous) by reciprocal ranks
    then chunk id, as score_fuse. Scores on the rrf scale: 2σ((s − s₁) / width), capped at 1, where
    s₁ is the score of a chunk first in every text channel present with its top cosine / score
    (so 1 = first everywhere, a figure that adds to it stays 1) and the width (`learned_scale`)
    puts a chunk first in one channel only (absent from the other) at 0.5: RRF's two anchors, the
    contract of adaptive top-k (0.95 / 0.5), the confidence instructions (0.4 / 0.6) and MMR, which
    read the rrf scale. σ(s − s₁) itself is the pairwise model's probability that the chunk beats
    one first everywhere; the width only tempers it onto those anchors."""
    check_learned_coef(coef, scale=False)  # the order is checked once per coefficients, by _anchors
    ids, x = learned_candidates(channels)
    if not ids:
        return []
    text = {ch.channel for ch in channels if ch.channel != FIGURE}
    top, width = _anchors(tuple(coef), VECTOR in text, BM25 in text)
    linear = x @ np.asarray(coef, dtype=float)
    scores = np.minimum(1.0, 2.0 / (1.0 + np.exp(np.clip((top - linear) / width, -700.0, 700.0)))).tolist()
    by_rank = reciprocal_ranks(channels, TIE_RRF_K)
    key = np.round(linear, 12).tolist()  # the order is the linear score's: capped scores still differ there
    order = sorted(range(len(ids)), key=lambda j: (-key[j], -by_rank[ids[j]], ids[j]))
    return [(ids[j], scores[j]) for j in order]


def blend_fuse(channels: Sequence[ChannelHits], r: RetrievalSettings) -> list[tuple[str, float]]:
    """The mean of the learned and the score fusion's scores (both on the rrf scale: 1 = first everywhere,
    0.5 = first in one channel only), best first; ties in the learned fusion's order."""
    learned = learned_fuse(channels, r.fusion_learned_coef)
    score = dict(_score_fused(channels, r))
    blended = [(chunk_id, (value + score.get(chunk_id, 0.0)) / 2) for chunk_id, value in learned]
    order = sorted(range(len(blended)), key=lambda j: (-round(blended[j][1], 12), j))
    return [blended[j] for j in order]


def _score_fused(channels: Sequence[ChannelHits], r: RetrievalSettings) -> list[tuple[str, float]]:
    weighted = [replace(ch, weight=(1.0 - r.fusion_vector_weight) if ch.channel == BM25 else r.fusion_vector_weight)
                for ch in channels]
    if r.dynamic_rrf_enabled:
        weighted = dynamic_weights(weighted, r.fusion_gain)
    return score_fuse(weighted, vector_scale=r.fusion_vector_scale, bm25_scale=r.fusion_bm25_scale)


FUSIONS = CHOICES["fusion"]  # ("blend", "learned", "score", "rrf"): the settings check a value against it too


def fuse(channels: Sequence[ChannelHits], r: RetrievalSettings) -> list[tuple[str, float]]:
    """The channels of one question fused as the retrieval settings say (`fusion`, its weights)."""
    if r.fusion == "blend":
        return blend_fuse(channels, r)
    if r.fusion == "learned":
        return learned_fuse(channels, r.fusion_learned_coef)
    if r.fusion == "rrf":
        chs = dynamic_weights(channels, r.dynamic_rrf_gain) if r.dynamic_rrf_enabled else list(channels)
        return rrf_fuse(chs, r.rrf_k)
    if r.fusion != "score":
        raise ValueError(f"fusion must be one of {FUSIONS}, not {r.fusion!r}")
    return _score_fused(channels, r)
