"""Fusion (seed 000 §5.2, seed 002) of the recall channels into one ranking, two ways:

- `score_fuse` (the default, `fusion = "score"`): a convex combination of each channel's scores,
  each normalized against that channel's own first hit, so a chunk one channel finds with a strong
  score keeps that strength (RRF only sees its rank; seed 002 says so: "排名本身不表达" how far
  first is ahead of second);
- `rrf_fuse` (`fusion = "rrf"`): weighted reciprocal-rank fusion, the seed's.
Both take per-question weights from how sharply each channel singles out its first hit (the seed's
DYNAMIC_RRF_ENABLED, formula ours), rank the image/table channel on the vector channel's scale, and
score on [0, 1] with 1 = first in every text channel and query variant (the "rrf" score scale).

The score-fusion defaults (settings.retrieval.fusion_*) were fitted leave-one-set-out on the five
question sets of ../shared/data/qa by bench/retrieval.py; the figures are in the README ("Fusion")."""
from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import replace

from schemas.settings import RetrievalSettings
from tasks.qa.types import BM25, FIGURE, ChannelHits


def rrf_fuse(channels: Sequence[ChannelHits], k: int = 60) -> list[tuple[str, float]]:
    """Weighted reciprocal-rank fusion (seed 002 `_rrf_ranked`): Σ weight / (k + rank) over every
    channel and query variant, divided by the best attainable sum over the text channels, so 1.0 =
    first everywhere. The image channel is not in the normalizer; scores are capped at 1. Best
    first, ties in first-seen order."""
    fused: dict[str, float] = {}
    text = [c for c in channels if c.channel != FIGURE] or list(channels)
    best = sum(c.weight / (k + 1) for c in text)
    for ch in channels:
        for i, (chunk_id, _) in enumerate(ch.hits):
            rank = ch.ranks[i] if ch.ranks is not None else i + 1
            fused[chunk_id] = fused.get(chunk_id, 0.0) + ch.weight / (k + rank)
    if best <= 0:
        return []
    order = sorted(fused.items(), key=lambda kv: -kv[1])  # stable: ties keep first-seen order
    return [(chunk_id, min(1.0, score / best)) for chunk_id, score in order]


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
    by_rank: dict[str, float] = {}
    for ch in channels:
        if not ch.hits:
            continue
        top = vector_top.get(ch.variant, ch.hits[0][1]) if ch.channel == FIGURE else ch.hits[0][1]
        norm = normalized_scores(ch, top, vector_scale=vector_scale, bm25_scale=bm25_scale)
        for i, ((chunk_id, _), value) in enumerate(zip(ch.hits, norm)):
            rank = ch.ranks[i] if ch.ranks is not None else i + 1
            fused[chunk_id] = fused.get(chunk_id, 0.0) + ch.weight * value
            by_rank[chunk_id] = by_rank.get(chunk_id, 0.0) + ch.weight / (TIE_RRF_K + rank)
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



FUSIONS = ("score", "rrf")


def fuse(channels: Sequence[ChannelHits], r: RetrievalSettings) -> list[tuple[str, float]]:
    """The channels of one question fused as the retrieval settings say (`fusion`, its weights)."""
    if r.fusion == "rrf":
        chs = dynamic_weights(channels, r.dynamic_rrf_gain) if r.dynamic_rrf_enabled else list(channels)
        return rrf_fuse(chs, r.rrf_k)
    if r.fusion != "score":
        raise ValueError(f"fusion must be one of {FUSIONS}, not {r.fusion!r}")
    weighted = [replace(ch, weight=(1.0 - r.fusion_vector_weight) if ch.channel == BM25 else r.fusion_vector_weight)
                for ch in channels]
    if r.dynamic_rrf_enabled:
        weighted = dynamic_weights(weighted, r.fusion_gain)
    return score_fuse(weighted, vector_scale=r.fusion_vector_scale, bm25_scale=r.fusion_bm25_scale)
