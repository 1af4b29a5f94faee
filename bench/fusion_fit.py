"""bench/retrieval.py's fitting of the learned and the score fusion (tasks.qa.fusion), leave-one-set-out.

1. `cache_channels`: every question's recall channels (vector, image/table, BM25 candidate lists
   with their raw scores) and the DuckDB records of the chunks they found, computed once per set
   with the real `Retriever` and pickled under --cache, so fusion experiments never re-run retrieval.
2. `SetMatrix`: a set's channels as padded question × candidate arrays (cosine, figure cosine,
   BM25 score, ranks, gold flag), so one parameter combination is scored on a whole set by a
   few numpy operations (the same formulas as `score_fuse`/`rrf_fuse`, ties broken by best rank).
3. `fit`: a grid search over (vector weight, sharpness gain, vector scale, BM25 scale) maximizing the
   training sets' mean of (hit@1 + MRR@10) / 2, each set weighing the same;
4. `fit_learned`: the learned fusion's coefficients, a pairwise logistic regression over
   `tasks.qa.fusion.learned_features` (the same function the pipeline scores with);
`leave_one_set_out` fits both on all sets but one and reports on that one (and their blend), for every set.
`CachedRetriever` replays the cache through the rest of the real pipeline (filters, MMR, adaptive
top-k, rescues) for the per-set tables. Not part of CI.
"""
from __future__ import annotations

import itertools
import pickle
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from tasks.qa import fusion
from tasks.qa.fusion import sharpness
from tasks.qa.retriever import Retriever
from tasks.qa.types import BM25, MODES, VECTOR

GRID = {
    "fusion_vector_weight": (0.3, 0.4, 0.5, 0.6, 0.7),
    "fusion_gain": (0.0, 1.0, 3.0),
    "fusion_vector_scale": (0.002, 0.005, 0.01, 0.02, 0.04, 0.08),
    "fusion_bm25_scale": (0.05, 0.1, 0.2, 0.35, 0.6, 1.0),
}


@dataclass
class CachedSet:
    name: str
    questions: list  # schemas.qa.Question, gold pinned to the set's folder
    channels: list  # per question: list[ChannelHits] (variant 0)
    records: dict  # chunk_id → Chunk, every chunk any channel found


def cache_channels(retriever: Retriever, name: str, questions: list, cache_dir: Path, batch: int) -> CachedSet:
    path = cache_dir / f"{name.replace('/', '_')}-{len(questions)}.pkl"
    if path.exists():
        return pickle.loads(path.read_bytes())
    s = retriever.settings
    channels, records = [], {}
    for a in range(0, len(questions), batch):
        part = questions[a:a + batch]
        variants, terms = retriever._variants([q.question for q in part], False)
        per_query, recs = retriever._recall(variants, terms, MODES["hybrid"], s.retrieval.recall_k, 1, None, None)
        channels.extend(per_query)
        records.update(recs)
    cached = CachedSet(name, questions, channels, records)
    cache_dir.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(cached))
    return cached


class CachedRetriever(Retriever):
    """The real pipeline after recall, fed from the cache (question text → its channels)."""

    def __init__(self, base: Retriever, sets: list[CachedSet]):
        self.__dict__.update(base.__dict__)
        self._cache = {q.question: (chs, cs.records) for cs in sets for q, chs in zip(cs.questions, cs.channels)}

    def _recall(self, variants, terms, channels, recall_k, factor, sources, section):
        per_query, records = [], {}
        for vs in variants:
            chs, recs = self._cache[vs[0]]
            per_query.append([replace(ch, hits=list(ch.hits)) for ch in chs if ch.channel in channels])
            records.update({cid: recs[cid] for ch in per_query[-1] for cid, _ in ch.hits if cid in recs})
        return per_query, records


@dataclass
class SetMatrix:
    """One set's candidates as arrays (questions × candidates); NaN = not found by that channel."""

    name: str
    cos: np.ndarray
    fig: np.ndarray
    bm25: np.ndarray
    rank_v: np.ndarray  # rank in the vector channel (inf if absent); figures: on the vector scale
    rank_b: np.ndarray
    gold: np.ndarray  # bool
    top_v: np.ndarray  # per question
    top_b: np.ndarray
    sharp_v: np.ndarray
    sharp_b: np.ndarray

    @classmethod
    def of(cls, cs: CachedSet) -> SetMatrix:
        rows = []
        for q, chs in zip(cs.questions, cs.channels):
            chs = [ch for ch in chs if ch.variant == 0]
            ids: dict[str, int] = {}
            for ch in chs:
                for cid, _ in ch.hits:
                    ids.setdefault(cid, len(ids))
            rows.append((q, chs, ids))
        width = max(1, max(len(ids) for _, _, ids in rows))
        n = len(rows)
        nan = lambda: np.full((n, width), np.nan)  # noqa: E731
        cos, fig, bm, rv, rb = nan(), nan(), nan(), np.full((n, width), np.inf), np.full((n, width), np.inf)
        gold = np.zeros((n, width), dtype=bool)
        top_v, top_b, sh_v, sh_b = (np.zeros(n) for _ in range(4))
        for i, (q, chs, ids) in enumerate(rows):
            arrays = fusion.channel_arrays(chs, ids)  # the pipeline's own reading of the channels
            for name, out in (("cos", cos), ("fig", fig), ("bm25", bm), ("rank_v", rv), ("rank_b", rb)):
                out[i, :len(ids)] = arrays[name]
            top_v[i], top_b[i] = arrays["top_v"], arrays["top_b"]
            for cid, j in ids.items():
                rec = cs.records.get(cid)
                gold[i, j] = rec is not None and q.is_gold(cid, rec.source, rec.page_start, rec.page_end)
            by = {ch.channel: ch for ch in chs}
            if VECTOR in by and by[VECTOR].hits:
                sh_v[i] = sharpness([s for _, s in by[VECTOR].hits])
            if BM25 in by and by[BM25].hits:
                sh_b[i] = sharpness([s for _, s in by[BM25].hits])
        return cls(cs.name, cos, fig, bm, rv, rb, gold, top_v, top_b, sh_v, sh_b)

    @property
    def found(self) -> np.ndarray:
        """Real candidates (a text channel or the image channel found them), not padding."""
        return np.isfinite(self.rank_v) | np.isfinite(self.rank_b)

    def scores(self, p: dict) -> np.ndarray:
        """`score_fuse` after `dynamic_weights` (tasks.qa.fusion.fuse) on every question at once."""
        w, g = p["fusion_vector_weight"], p["fusion_gain"]
        tv, tb = self.top_v[:, None], self.top_b[:, None]
        nv = np.nan_to_num(np.clip(1 - (tv - self.cos) / p["fusion_vector_scale"], 0, 1))
        nf = np.nan_to_num(np.clip(1 - (tv - self.fig) / p["fusion_vector_scale"], 0, 1))
        with np.errstate(invalid="ignore", divide="ignore"):
            nb = np.nan_to_num(np.clip(1 - (1 - self.bm25 / np.where(tb > 0, tb, np.nan)) / p["fusion_bm25_scale"], 0, 1))
        wv = w * (1 + g * self.sharp_v[:, None])
        wb = (1 - w) * (1 + g * self.sharp_b[:, None])
        return wv * nv + w * nf + wb * nb

    def rrf_scores(self, k: int, weights: tuple[float, float, float], gain: float) -> np.ndarray:
        wv = weights[0] * (1 + gain * self.sharp_v[:, None])
        wb = weights[2] * (1 + gain * self.sharp_b[:, None])
        has_v, has_f, has_b = ~np.isnan(self.cos), ~np.isnan(self.fig), ~np.isnan(self.bm25)
        return (np.where(has_v, wv / (k + self.rank_v), 0) + np.where(has_f, weights[1] / (k + self.rank_v), 0)
                + np.where(has_b, wb / (k + self.rank_b), 0))

    def learned_scores(self, coef) -> np.ndarray:
        """`learned_fuse`'s linear scores (its order) on every question at once."""
        return np.where(self.found, learned_features(self) @ np.asarray(coef, dtype=float), -np.inf)

    def blend_scores(self, coef, p: dict) -> np.ndarray:
        """`blend_fuse`'s scores: the mean of `learned_fuse`'s and `score_fuse`'s, both on the rrf scale
        (every bench question has both text channels); ties in the learned order."""
        linear = learned_features(self) @ np.asarray(coef, dtype=float)
        top, width = fusion.first_everywhere(coef, vector=True, bm25=True), fusion.learned_scale(coef)
        learned = np.minimum(1.0, 2.0 / (1.0 + np.exp(np.clip((top - linear) / width, -700.0, 700.0))))
        w, g = p["fusion_vector_weight"], p["fusion_gain"]
        weights = w * (1 + g * self.sharp_v) + (1 - w) * (1 + g * self.sharp_b)
        score = np.minimum(1.0, self.scores(p) / weights[:, None])
        return np.where(self.found, (learned + score) / 2 + 1e-9 * np.tanh(linear), -np.inf)

    def channel_scores(self, channel: str) -> np.ndarray:
        """A single channel's own order (vector: cosines of text and figures alike)."""
        if channel == BM25:
            return np.where(np.isnan(self.bm25), -np.inf, -self.rank_b)
        return np.where(np.isnan(self.cos) & np.isnan(self.fig), -np.inf, -self.rank_v)

    def tie_break(self, p: dict | None) -> np.ndarray:
        """score_fuse's tie-break: reciprocal ranks (k = 60) with the fusion's weights."""
        w = 0.5 if p is None else p["fusion_vector_weight"]
        has_v, has_b = np.isfinite(self.rank_v), np.isfinite(self.rank_b)
        return (np.where(has_v, w / (60 + np.where(has_v, self.rank_v, 0)), 0)
                + np.where(has_b, (1 - w) / (60 + np.where(has_b, self.rank_b, 0)), 0))

    def metrics(self, scores: np.ndarray, p: dict | None = None) -> dict[str, float]:
        """hit@1 and MRR@10 of ranking by `scores`, ties broken as score_fuse does (reciprocal
        ranks); what still ties with the best gold candidate is counted ahead of it (pessimistic),
        so a fit cannot profit from an order among equals."""
        key = np.round(np.where(np.isfinite(scores), scores, -1e18), 9) + 1e-7 * self.tie_break(p)
        found = np.where(self.gold, key, -np.inf).max(axis=1)
        rank = 1 + (key > found[:, None]).sum(axis=1) + ((key == found[:, None]) & ~self.gold).sum(axis=1)
        rank = np.where(np.isfinite(found) & self.gold.any(axis=1), rank, 10 ** 6)
        return {"hit@1": float(np.mean(rank == 1)), "MRR@10": float(np.mean(np.where(rank <= 10, 1.0 / rank, 0.0)))}


def grid() -> list[dict]:
    return [dict(zip(GRID, values)) for values in itertools.product(*GRID.values())]


def objective(m: dict[str, float]) -> float:
    return (m["hit@1"] + m["MRR@10"]) / 2


def fit(train: list[SetMatrix]) -> tuple[dict, float]:
    """The grid point with the best mean objective over `train` (each set weighing the same);
    ties → the first in grid order."""
    best, best_value = None, -1.0
    for p in grid():
        value = float(np.mean([objective(m.metrics(m.scores(p), p)) for m in train]))
        if value > best_value + 1e-12:
            best, best_value = p, value
    return best, best_value


# L2 strength of the learned fit: held out, hit@1 with 0.1 ≥ with 0.01 and with 1 on every set but cmrc (1: +0.004)
LEARNED_C = 0.1


def learned_features(m: SetMatrix) -> np.ndarray:
    """tasks.qa.fusion.learned_features on a whole set: questions × candidates × features."""
    return fusion.learned_features(m.cos, m.fig, m.bm25, m.rank_v, m.rank_b, m.top_v[:, None], m.top_b[:, None])


def learned_pairs(m: SetMatrix, x: np.ndarray) -> np.ndarray:
    """Per question with a gold candidate: the features of its first gold candidate (in the order the
    channels found them: the vector channel's best gold, else the image channel's, else BM25's)
    minus those of every non-gold candidate."""
    found, out = m.found, []
    for i in range(len(x)):
        gold = np.flatnonzero(m.gold[i] & found[i])
        if len(gold):
            out.append(x[i, gold[0]] - x[i, found[i] & ~m.gold[i]])
    return np.concatenate(out) if out else np.zeros((0, x.shape[-1]))


def fit_learned(train: list[SetMatrix], c: float = LEARNED_C) -> np.ndarray:
    """The learned fusion's coefficients: logistic regression without intercept on the pairs'
    feature differences, mirrored (gold − other → 1, other − gold → 0), L2 with strength `c`, each
    set weighing the same whatever its number of pairs."""
    from sklearn.linear_model import LogisticRegression  # comes with sentence-transformers

    diffs = [learned_pairs(m, learned_features(m)) for m in train]
    x = np.vstack([np.vstack([d, -d]) for d in diffs])
    y = np.concatenate([np.r_[np.ones(len(d)), np.zeros(len(d))] for d in diffs])
    weight = np.concatenate([np.full(2 * len(d), 1.0 / len(d)) for d in diffs]) * len(y) / len(train)
    model = LogisticRegression(C=c, fit_intercept=False, max_iter=2000).fit(x, y, sample_weight=weight)
    return model.coef_[0]


def leave_one_set_out(sets: list[SetMatrix]) -> dict[str, dict]:
    """Per held-out set: the score fusion's parameters and the learned coefficients fitted on the
    others, and their metrics on it."""
    out = {}
    for held in sets:
        train = [m for m in sets if m is not held]
        params, _ = fit(train)
        coef = fit_learned(train)
        out[held.name] = {"params": params, "metrics": held.metrics(held.scores(params), params),
                          "coef": coef, "learned": held.metrics(held.learned_scores(coef)),
                          "blend": held.metrics(held.blend_scores(coef, params), params)}
    return out
