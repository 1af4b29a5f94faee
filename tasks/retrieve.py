"""Retrieval (SPEC §4; seed 000 §5.2, seed 001 §4-§5, seed 002): recall channels → RRF → filters →
MMR → cross-encoder rerank → adaptive top-k → rescues (`tasks.rescue`).

Each stage is a plain function over `Candidate`s; `Retriever` loads the embedder, the Chroma
collection, the BM25 index and the optional reranker once per run and answers a batch of
questions with one query-embedding call, one Chroma query per channel, one BM25 sparse product,
one DuckDB read and one cross-encoder call. DuckDB is the record: chunk text, section path and
BM25 terms of the candidates come from its `chunks` table, never from Chroma's documents.

Fusion: weighted RRF (k = 60) whose per-question weights follow how sharply each channel singles
out its first hit (the seed's DYNAMIC_RRF_ENABLED, formula ours: an e5 channel whose cosines are
all alike says little); the image/table channel recalls figures beyond the vector channel's depth
and ranks them where their cosine falls among the vector hits (ranked on their own, the first
figure would outrank the best text for every question).

Scores live on named scales (seed 002: they do not compare): the fused score is RRF normalized to
[0, 1] (1 = ranked first by every text channel and query), a reranked list carries cross-encoder
probabilities. Adaptive top-k reads the list's own scale, so it works after a rerank too (seed
defect 000 §6.3: the seed skipped it whenever the scores had come through RRF).

Order: adaptive top-k runs before the rescues on purpose. The rescues are the safety net for what a
truncation or a low score dropped (seed 000 §8.1 case B: "被 rerank top_k 截断"); what they save is
appended after the kept chunks and survives the cut.
"""
from __future__ import annotations

import bisect
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from schemas.arrow import from_table
from schemas.chunk import CHART, IMAGE, TABLE, Chunk
from schemas.qa import RERANK, RRF, QATrace
from schemas.settings import Settings

VECTOR, BM25, FIGURE = "vector", "bm25", "image"
MODES: dict[str, tuple[str, ...]] = {"hybrid": (VECTOR, BM25, FIGURE), "vector": (VECTOR, FIGURE), "bm25": (BM25,)}
FIGURE_TYPES = (IMAGE, CHART, TABLE)  # the image/table channel (seed 000 §9.1, seed 001 §4.2)
# stage names, in pipeline order (qa_traces.stage_order)
STAGES = ("vector", "bm25", "image", "rrf", "filter", "mmr", "rerank", "topk", "rescue", "expand", "context")
STAGE_ORDER = {name: i for i, name in enumerate(STAGES)}
# columns read from DuckDB for every candidate (not table_html, bbox, ...: the answerer needs none)
CHUNK_COLUMNS = ("chunk_id", "source", "doc_md5", "chunk_index", "chunk_type", "section_path", "text_level",
                 "title", "content", "semantic_content", "caption", "table_summary", "tokens", "page_start",
                 "page_end")

_ENUM_QUERY = re.compile(r"有哪些|有哪几|哪几[个种类项条]|包括哪|包含哪|列举|列出|分别是|分别有|都有什么|有几[个种类项条]|几个方面|"
                         r"哪些方面|主要内容|\blist\b|\bwhat are the\b", re.IGNORECASE)
# "第三章", "第12条", "第二节" in a question: a chapter the answer must come from (seed 000 §5.2 [17])
_CHAPTER = re.compile(r"第[一二三四五六七八九十百千零〇两\d]+[编章节条款篇部]")


@dataclass
class Candidate:
    """One chunk on its way through the stages. `score` is on the retrieval's `score_scale`."""

    chunk_id: str
    score: float = 0.0
    rerank: float | None = None
    rescued: str = ""  # why a rescue brought it back
    expanded_from: str = ""  # the seed chunk whose section-prefix neighbour this is
    chunk: Chunk | None = None  # the DuckDB record

    @property
    def source(self) -> str:
        return self.chunk.source if self.chunk else ""

    @property
    def section(self) -> str:
        return self.chunk.section_path if self.chunk else ""


@dataclass
class ChannelHits:
    """One channel's ranking for one query variant, best first: (chunk_id, raw score). `ranks`
    overrides the positions (the image channel's figures are ranked on the vector channel's scale)."""

    channel: str
    weight: float
    hits: list[tuple[str, float]]
    variant: int = 0
    ranks: list[int] | None = None


@dataclass
class StageTrace:
    stage: str
    hits: list[tuple[str, float, str]]  # (chunk_id, score on the stage's scale, note), best first


@dataclass
class Retrieval:
    """What retrieval made of one question: the final ranking and every stage's candidates."""

    question: str
    mode: str
    score_scale: str  # rrf / rerank
    ranked: list[Candidate]  # kept by adaptive top-k (best first), then the rescued
    kept: int  # how many of `ranked` adaptive top-k kept (the rest were rescued)
    top_cosine: float | None  # best cosine of the vector channel over the query variants
    variants: list[str]
    widened: bool = False
    stages: list[StageTrace] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # stage → seconds for this question

    def trace(self, stage: str, cands: Sequence[Candidate] | Sequence[tuple[str, float, str]]) -> None:
        hits = [c if isinstance(c, tuple) else (c.chunk_id, c.score, c.rescued or c.expanded_from) for c in cands]
        self.stages.append(StageTrace(stage, hits))


# ------------------------------------------------------------------------------------------------
# pure stages


def is_enum_query(question: str) -> bool:
    """Enumeration questions ("有哪些…") want several alike chunks: MMR uses the milder lambda."""
    return bool(_ENUM_QUERY.search(question))


def chapter_markers(question: str) -> list[str]:
    return _CHAPTER.findall(question)


def in_section(section_path: str, prefix: str) -> bool:
    """Section prefix match on whole path components: "第一章" holds "第一章 > 1.1" but not "第一章节"."""
    return not prefix or section_path == prefix or section_path.startswith(prefix + " > ")


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


def filter_candidates(cands: Sequence[Candidate], *, inactive: set[str] | frozenset[str] = frozenset(),
                      sources: Sequence[str] | None = None, section: str | None = None,
                      chapters: Sequence[str] = ()) -> list[Candidate]:
    """Status, source and section filters (seed 000 §5.2 [14], [17], [22]). A candidate DuckDB does
    not know is dropped (DuckDB is the record). `chapters` (markers from the question) narrow the
    list only when some candidate's section carries one."""
    wanted = set(sources or ())
    out = [c for c in cands if c.chunk is not None and c.chunk_id not in inactive
           and (not wanted or c.chunk.source in wanted) and (not section or in_section(c.chunk.section_path, section))]
    if chapters:
        narrowed = [c for c in out if any(m in c.chunk.section_path for m in chapters)]
        if narrowed:
            out = narrowed
    return out


def jaccard_matrix(token_lists: Sequence[Sequence[str]]) -> np.ndarray:
    """Pairwise Jaccard similarity of the candidates' term sets (dense n × n, float32)."""
    n = len(token_lists)
    vocab: dict[str, int] = {}
    rows, cols = [], []
    for i, tokens in enumerate(token_lists):
        for t in set(tokens):
            rows.append(i)
            cols.append(vocab.setdefault(t, len(vocab)))
    if not vocab:
        return np.zeros((n, n), dtype=np.float32)
    x = sp.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(n, len(vocab)))
    inter = (x @ x.T).toarray()
    sizes = np.asarray(x.sum(axis=1)).ravel()
    union = sizes[:, None] + sizes[None, :] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / union, 0.0).astype(np.float32)


def mmr_order(relevance: Sequence[float], similarity: np.ndarray, k: int, lam: float) -> list[int]:
    """Maximal marginal relevance: indices of up to k items, each maximizing
    lam · relevance − (1 − lam) · (max similarity to those already chosen). Relevance is scaled
    by its maximum so lam means the same on every scale."""
    rel = np.asarray(relevance, dtype=np.float64)
    n = len(rel)
    if n == 0 or k <= 0:
        return []
    top = rel.max()
    rel = rel / top if top > 0 else rel
    chosen: list[int] = []
    max_sim = np.zeros(n)
    free = np.ones(n, dtype=bool)
    for _ in range(min(k, n)):
        gain = np.where(free, lam * rel - (1 - lam) * max_sim, -np.inf)
        best = int(np.argmax(gain))  # ties → the earlier (better fused) candidate
        chosen.append(best)
        free[best] = False
        max_sim = np.maximum(max_sim, similarity[best])
    return chosen


def mmr(cands: Sequence[Candidate], k: int, lam: float) -> list[Candidate]:
    """MMR de-duplication with Jaccard over BM25 terms (seed 000 §11 MMR_USE_EMBEDDING=false).
    MMR decides which k candidates survive; they keep their fused order (the reranker, or the
    answerer, sees the most relevant first)."""
    if len(cands) <= k:
        return list(cands)
    sim = jaccard_matrix([c.chunk.tokens if c.chunk else [] for c in cands])
    # selection only: on rgb_zh_refine_dev (bench/retrieval.py) MMR's own order cost 2.4 points of hit@5
    keep = sorted(mmr_order([c.score for c in cands], sim, k, lam))
    return [cands[i] for i in keep]


def adaptive_top_k(scores: Sequence[float], scale: str, settings: Settings) -> int:
    """How many ranked chunks to keep: few when the top one is strong, more when it is weak
    (seed 000 §5.2 [26]), on the list's own scale; on the rerank scale chunks under
    `context_min_score` are never kept (they are the rescues' to bring back)."""
    if not scores:
        return 0
    if scale == RERANK:
        passing = sum(1 for s in scores if s >= settings.context_min_score)
        high, low = settings.adaptive_high_rerank, settings.adaptive_low_rerank
    else:
        passing = len(scores)
        high, low = settings.adaptive_high_rrf, settings.adaptive_low_rrf
    k = settings.top_k
    if settings.adaptive_topk_enabled:
        if scores[0] >= high:
            k = settings.adaptive_topk_min
        elif scores[0] < low:
            k = settings.adaptive_topk_max
    return max(0, min(k, passing))


class Reranker:
    """A sentence-transformers CrossEncoder from a local folder; scores are probabilities (sigmoid)."""

    def __init__(self, model_path: str | Path, *, batch_size: int = 32, max_length: int = 512):
        from sentence_transformers import CrossEncoder

        path = Path(model_path).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"rerank_model {str(model_path)!r} is not a local model folder")
        self.model_id = path.name
        self.batch_size = batch_size
        self.model = CrossEncoder(str(path), device="cpu", max_length=max_length, local_files_only=True)

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        import torch

        if not pairs:
            return np.zeros(0, dtype=np.float32)
        scores = self.model.predict([list(p) for p in pairs], batch_size=self.batch_size, show_progress_bar=False,
                                    activation_fn=torch.nn.Sigmoid(), convert_to_numpy=True)
        return np.asarray(scores, dtype=np.float32).reshape(len(pairs), -1)[:, -1]


def evidence_text(chunk: Chunk) -> str:
    """What a chunk says, as the reranker and the answerer read it: a figure's description, a
    table's caption and cells, a text chunk's content."""
    if chunk.chunk_type in (IMAGE, CHART):
        return chunk.semantic_content or chunk.caption or chunk.content
    if chunk.chunk_type == TABLE:
        return "\n".join(p for p in (chunk.caption, chunk.content or chunk.semantic_content) if p)
    return chunk.content or chunk.semantic_content


def rerank(cands: Sequence[Candidate], scores: Sequence[float]) -> list[Candidate]:
    """The candidates with their cross-encoder probabilities as scores, best first."""
    out = [replace(c, rerank=float(s), score=float(s)) for c, s in zip(cands, scores)]
    out.sort(key=lambda c: -c.score)
    return out


# ------------------------------------------------------------------------------------------------
# the record


def fetch_chunks(db_path: Path, kb: str, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
    """Chunk records by id from DuckDB's `chunks` (one query for a whole batch)."""
    from warehouse import db

    ids = sorted(set(chunk_ids))
    if not ids:
        return {}
    cols = ", ".join(CHUNK_COLUMNS)
    with db.connect(db_path, read_only=True) as con:
        table = con.sql(f"SELECT {cols} FROM chunks WHERE kb = ? AND chunk_id IN (SELECT unnest(?::VARCHAR[]))",
                        params=[kb, ids]).to_arrow_table()
    return {c.chunk_id: c for c in from_table(table, Chunk)}


# ------------------------------------------------------------------------------------------------
# the retriever


class Retriever:
    """Recall → … → rescues for batches of questions against one knowledge base."""

    def __init__(self, settings: Settings, kb: str, *, embedder=None, reranker: Reranker | None = None,
                 bm25=None, collection=None):
        from tasks import vector_index
        from tasks.bm25_index import BM25Index

        self.settings, self.kb = settings, kb
        self.collection = collection if collection is not None else vector_index.collection(settings, kb)
        self.size = self.collection.count()
        if bm25 is None:
            bm25_dir = settings.bm25_dir / kb
            bm25 = BM25Index.load(bm25_dir) if bm25_dir.exists() else BM25Index()
        self.bm25 = bm25
        self._embedder = embedder
        if reranker is None and settings.rerank_model:
            reranker = Reranker(settings.rerank_model, batch_size=settings.rerank_batch_size,
                                max_length=settings.rerank_max_length)
        self.reranker = reranker
        # the KB does not change during a run: which chunks are not active, whether any figure exists
        self.inactive = frozenset(self.collection.get(where={"status": {"$ne": "active"}}, include=[])["ids"]) \
            if self.size else frozenset()
        self.has_figures = bool(self.size and self.collection.get(
            where={"chunk_type": {"$in": list(FIGURE_TYPES)}}, limit=1, include=[])["ids"])

    @property
    def embedder(self):
        if self._embedder is None:  # loaded on first use: a BM25-only run never needs it
            from tasks.embed import Embedder

            self._embedder = Embedder.from_settings(self.settings)
        return self._embedder

    # -- recall

    def _vector(self, vectors: np.ndarray, n: int, where: dict | None, channel: str, weight: float,
                ) -> list[ChannelHits]:
        n = min(n, self.size)
        if n <= 0 or not len(vectors):
            return [ChannelHits(channel, weight, [], v) for v in range(len(vectors))]
        res = self.collection.query(query_embeddings=vectors, n_results=n, where=where, include=["distances"])
        return [ChannelHits(channel, weight, [(i, 1.0 - float(d)) for i, d in zip(ids, dists)], v)
                for v, (ids, dists) in enumerate(zip(res["ids"], res["distances"]))]

    def _where(self, sources: Sequence[str] | None, figures: bool = False) -> dict | None:
        clauses = []
        if sources:
            clauses.append({"source": {"$in": list(sources)}})
        if figures:
            clauses.append({"chunk_type": {"$in": list(FIGURE_TYPES)}})
        return None if not clauses else clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def retrieve_batch(self, questions: Sequence[str], mode: str = "hybrid", *, sources: Sequence[str] | None = None,
                       section: str | None = None, widen: bool = False, rescues: bool = True,
                       use_reranker: bool = True) -> list[Retrieval]:
        """Retrieve for every question at once. `widen` (CRAG-lite, seed 002) multiplies the
        candidate counts by `crag_widen_factor` and adds a keyword variant of each question
        (its BM25 terms) fused into the same RRF; filters are kept as they are."""
        from tasks.rescue import rescue

        if mode not in MODES:
            raise ValueError(f"mode must be one of {sorted(MODES)}, not {mode!r}")
        if not questions:
            return []
        s = self.settings
        factor = max(1, s.crag_widen_factor) if widen else 1
        clock = {"recall": 0.0, "fusion": 0.0, "rerank": 0.0, "rescue": 0.0}

        t0 = time.perf_counter()
        variants, terms = self._variants(questions, widen)
        per_query, records = self._recall(variants, terms, MODES[mode], s.recall_k * factor, factor, sources, section)
        clock["recall"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        out, bm25_tops = [], []
        for question, vs, chs in zip(questions, variants, per_query):
            r = Retrieval(question, mode, RRF, [], 0, None, vs, widened=widen)
            bm25_tops.append(self._fuse_filter_mmr(r, chs, records, s.mmr_top_k * factor, sources, section))
            out.append(r)
        clock["fusion"] = time.perf_counter() - t0

        if self.reranker is not None and use_reranker:
            t0 = time.perf_counter()
            self._rerank(out, s.rerank_candidates * factor)
            clock["rerank"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        for r, bm25_top in zip(out, bm25_tops):
            k = adaptive_top_k([c.score for c in r.ranked], r.score_scale, s)
            kept, cut = r.ranked[:k], r.ranked[k:]
            r.trace("topk", kept)
            saved = rescue(r.question, kept, cut, bm25_top, r.score_scale, s) if rescues else []
            r.trace("rescue", saved)
            r.ranked, r.kept = kept + saved, len(kept)
        clock["rescue"] = time.perf_counter() - t0
        for r in out:
            r.timings = {stage: secs / len(questions) for stage, secs in clock.items()}
        return out

    def _variants(self, questions: Sequence[str], widen: bool) -> tuple[list[list[str]], list[list[list[str]]]]:
        """Per question its query variants (the question; widened, also its BM25 terms joined) and
        their BM25 terms."""
        from tasks.bm25_index import tokenize

        user_dict = self.settings.bm25_user_dict or None
        variants, terms = [], []
        for q in questions:
            t = tokenize(q, user_dict)
            keywords = " ".join(t)
            if widen and keywords and keywords != q:
                variants.append([q, keywords])
                terms.append([t, tokenize(keywords, user_dict)])
            else:
                variants.append([q])
                terms.append([t])
        return variants, terms

    def _recall(self, variants: list[list[str]], terms: list[list[list[str]]], channels: tuple[str, ...],
                recall_k: int, factor: int, sources: Sequence[str] | None, section: str | None,
                ) -> tuple[list[list[ChannelHits]], dict[str, Chunk]]:
        """Every channel for every variant of every question: one embedding call, one Chroma query
        per channel, one BM25 product; then the DuckDB records of every chunk found."""
        s = self.settings
        flat = [(qi, vi, text) for qi, vs in enumerate(variants) for vi, text in enumerate(vs)]
        per_query: list[list[ChannelHits]] = [[] for _ in variants]
        if VECTOR in channels and self.size:
            vecs = self.embedder.embed_queries([text for _, _, text in flat])
            runs = [(VECTOR, recall_k, self._where(sources), s.rrf_vector_weight)]
            if FIGURE in channels and self.has_figures:
                runs.append((FIGURE, max(s.image_recall_min, s.top_k // 2) * factor,
                             self._where(sources, figures=True), s.rrf_image_weight))
            for channel, k, where, weight in runs:
                for (qi, vi, _), hits in zip(flat, self._vector(vecs, k, where, channel, weight)):
                    hits.variant = vi
                    if channel == FIGURE:
                        (vector,) = [ch for ch in per_query[qi] if ch.channel == VECTOR and ch.variant == vi]
                        hits = figures_on_vector_scale(vector, hits)
                    per_query[qi].append(hits)
        if BM25 in channels:
            # BM25 cannot filter while it ranks: with a source/section filter it looks deeper
            k = recall_k if not (sources or section) else max(recall_k, min(len(self.bm25), recall_k * 10))
            found = self.bm25.search([terms[qi][vi] for qi, vi, _ in flat], k)
            for (qi, vi, _), hits in zip(flat, found):
                per_query[qi].append(ChannelHits(BM25, s.rrf_bm25_weight, hits, vi))
        records = fetch_chunks(s.db_path, self.kb, list({cid for chs in per_query for ch in chs for cid, _ in ch.hits}))
        if sources or section:  # re-rank BM25 within the filter, as Chroma did with its `where`
            wanted = set(sources or ())
            for ch in (ch for chs in per_query for ch in chs if ch.channel == BM25):
                ch.hits = [(cid, sc) for cid, sc in ch.hits if (rec := records.get(cid)) is not None
                           and (not wanted or rec.source in wanted)
                           and (not section or in_section(rec.section_path, section))][:recall_k]
        return per_query, records

    def _fuse_filter_mmr(self, r: Retrieval, chs: list[ChannelHits], records: dict[str, Chunk], mmr_k: int,
                         sources: Sequence[str] | None, section: str | None) -> list[Candidate]:
        """RRF → filters → MMR into `r.ranked` (traced); returns BM25's top chunks for the rescue."""
        s = self.settings
        for ch in chs:
            r.trace(ch.channel, [(cid, score, f"variant {ch.variant}" if ch.variant else "") for cid, score in ch.hits])
        cosines = [hits[0][1] for ch in chs if ch.channel == VECTOR and (hits := ch.hits)]
        r.top_cosine = max(cosines) if cosines else None
        cands = self._fuse(chs, records)
        r.trace("rrf", cands)
        chapters = chapter_markers(r.question) if s.section_filter_enabled else []
        cands = filter_candidates(cands, inactive=self.inactive, sources=sources, section=section, chapters=chapters)
        r.trace("filter", cands)
        # BM25's own top ranks, for the divergence rescue (seed 000 §8.1 `_bm25_top3`), same filters
        bm25_top = self._bm25_top(chs, records, cands, sources, section)
        if chapters and any(m in c.section for c in cands for m in chapters):  # the question's chapter held
            bm25_top = [c for c in bm25_top if any(m in c.section for m in chapters)]
        if s.mmr_enabled:
            cands = mmr(cands, mmr_k, s.enum_query_mmr_lambda if is_enum_query(r.question) else s.mmr_lambda)
        else:
            cands = cands[:mmr_k]
        r.trace("mmr", cands)
        r.ranked = cands
        return bm25_top

    def _rerank(self, out: list[Retrieval], n: int) -> None:
        """The first `n` candidates of every question through the cross-encoder in one call; the
        rest (never reranked) score 0 on the rerank scale."""
        batch = [(r, r.ranked[:n]) for r in out if r.ranked]
        scores = self.reranker.score([(r.question, evidence_text(c.chunk)) for r, cs in batch for c in cs])
        pos = 0
        for r, cs in batch:
            tail = [replace(c, score=0.0) for c in r.ranked[len(cs):]]
            r.ranked = rerank(cs, scores[pos:pos + len(cs)]) + tail
            r.score_scale = RERANK
            r.trace("rerank", r.ranked[:len(cs)])
            pos += len(cs)

    def _fuse(self, chs: list[ChannelHits], records: dict[str, Chunk]) -> list[Candidate]:
        if self.settings.dynamic_rrf_enabled:
            chs = dynamic_weights(chs, self.settings.dynamic_rrf_gain)
        return [Candidate(chunk_id, score=score, chunk=records.get(chunk_id))
                for chunk_id, score in rrf_fuse(chs, self.settings.rrf_k)]

    def _bm25_top(self, chs: list[ChannelHits], records: dict[str, Chunk], fused: list[Candidate],
                  sources: Sequence[str] | None, section: str | None) -> list[Candidate]:
        """The chunks the original question's BM25 ranks within `bm25_divergence_max_rank` that pass
        the filters, as candidates (with their fused state when they have one)."""
        by_id = {c.chunk_id: c for c in fused}
        out: list[Candidate] = []
        for ch in chs:
            if ch.channel != BM25 or ch.variant != 0:
                continue
            for chunk_id, _ in ch.hits[:self.settings.bm25_divergence_max_rank]:
                base = by_id.get(chunk_id)
                c = replace(base) if base else Candidate(chunk_id, chunk=records.get(chunk_id))
                out.extend(filter_candidates([c], inactive=self.inactive, sources=sources, section=section))
        return out


# ------------------------------------------------------------------------------------------------
# traces


def trace_records(run_id: str, qid: str, retrieval: Retrieval, is_gold, max_rank: int) -> list[QATrace]:
    """`qa_traces` rows for one question: each stage's candidates down to `max_rank`.
    `is_gold(chunk_id) -> bool | None` marks gold evidence (None for an unlabelled question)."""
    rows = []
    for st in retrieval.stages:
        for rank, (chunk_id, score, note) in enumerate(st.hits[:max_rank], 1):
            rows.append(QATrace(run_id, qid, st.stage, STAGE_ORDER.get(st.stage, len(STAGES)), chunk_id, rank,
                                float(score), is_gold(chunk_id), note))
    return rows
