"""Fusion (seed 000 §5.2, seed 002): weighted reciprocal-rank fusion of the recall channels, with
per-question weights from how sharply each channel singles out its first hit (the seed's
DYNAMIC_RRF_ENABLED, formula ours), and the image/table channel ranked on the vector channel's scale."""
from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import replace

from tasks.qa.types import FIGURE, ChannelHits


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

