"""Retrieval (SPEC §4; seed 000 §5.2, seed 001 §4-§5, seed 002): recall channels → RRF → filters →
MMR → cross-encoder rerank → adaptive top-k → rescues (`tasks.qa.rescue`).

Each stage is a plain function over `Candidate`s; `Retriever` loads the embedder, the Chroma
collection, the BM25 index and the optional reranker once per run and answers a batch of
questions with one query-embedding call, one Chroma query per channel, one BM25 sparse product,
one DuckDB read and one cross-encoder call. DuckDB is the record: chunk text, section path and
BM25 terms of the candidates come from its `chunks` table, never from Chroma's documents.

Fusion (`tasks.qa.fusion`): by default learned — a linear model over each candidate's ranks and
scores in every channel (a cosine's gap to the top cosine, a BM25 score's share of the top score),
fitted on five question sets; `fusion = "score"` gives the score-aware convex combination,
`fusion = "rrf"` the seed's weighted RRF (k = 60). The image/table channel recalls figures beyond
the vector channel's depth and ranks them where their cosine falls among the vector hits (ranked on
their own, the first figure would outrank the best text for every question).

Scores live on named scales (seed 002: they do not compare): the fused score ("rrf" scale, every
fusion) is on [0, 1] (1 = ranked first by every text channel and query), a reranked list carries
cross-encoder probabilities. Adaptive top-k reads the list's own scale, so it works after a rerank too (seed
defect 000 §6.3: the seed skipped it whenever the scores had come through RRF).

Order: adaptive top-k runs before the rescues on purpose. The rescues are the safety net for what a
truncation or a low score dropped (seed 000 §8.1 case B: "被 rerank top_k 截断"); what they save is
appended after the kept chunks and survives the cut.
"""
from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import replace

import numpy as np

from schemas.chunk import Chunk
from schemas.qa import RERANK, RRF
from schemas.settings import Settings
from tasks.index.views import chunk_id_of
from tasks.qa.filters import (COVER_CHARS_READ, COVER_NAME_CHUNKS, DocumentNames, adaptive_top_k, catalogues_last,
                              chapter_markers, chapter_scope, filter_candidates, in_section, is_enum_query, mmr,
                              named_documents_first, term_id_sets)
from tasks.qa.fusion import check_fusion_settings, figures_on_vector_scale, fuse
from tasks.qa.gloss import across_languages, english_glosses, gloss_terms
from tasks.qa.rerank import Reranker, rerank, reranker_from_settings
from tasks.qa.rescue import rescue
from tasks.qa.types import (BM25, FIGURE, FIGURE_TYPES, MODES, VECTOR, Candidate, ChannelHits, Retrieval,
                            evidence_text)

# ------------------------------------------------------------------------------------------------
# the retriever

# query texts per forward pass: bf16 on AMX pays off with big matrices (bench/retrieval.py, e5-small on
# 2 cores: 34 questions/s in passes of 32, 95 in passes of 128, 89 in one pass of 320)
QUERY_ENCODE_BATCH = 128
RECORD_CACHE_MAX = 50_000  # chunk records a retriever keeps between batches (text and terms: a few KB each)


def chunk_hits(ids: Sequence[str], distances: Sequence[float]) -> list[tuple[str, float]]:
    """(chunk_id, cosine) best first from one query's vector ids and cosine distances: a view's hit
    counts for its chunk (`tasks.index.views`), once, at its best cosine. Chroma guarantees no order
    among equal distances (duplicate chunks, repeated table rows): sorted by id, ties rank the same
    in every run, and so do the rescues that read the ranks."""
    best: dict[str, float] = {}
    for vector_id, distance in zip(ids, distances):
        chunk_id, score = chunk_id_of(vector_id), 1.0 - float(distance)
        if score > best.get(chunk_id, -2.0):
            best[chunk_id] = score
    return sorted(best.items(), key=lambda hit: (-hit[1], hit[0]))


class Retriever:
    """Recall → … → rescues for batches of questions against one knowledge base."""

    def __init__(self, settings: Settings, kb: str, *, embedder=None, reranker: Reranker | None = None,
                 bm25=None, collection=None):
        from tasks.index import snapshot
        from tasks.index.bm25 import BM25Index

        self.settings, self.kb = settings, kb
        check_fusion_settings(settings.retrieval)  # unusable coefficients fail the run before any question
        # the published snapshots, never the live Chroma/BM25 an ingest may be changing (tasks.index.snapshot)
        self.collection = collection if collection is not None else snapshot.read_collection(settings, kb)
        self.size = self.collection.count()
        if bm25 is None:
            bm25_dir = snapshot.bm25_dir(settings, kb)
            bm25 = BM25Index.load(bm25_dir) if bm25_dir.exists() else BM25Index()
        self.bm25 = bm25
        # more vectors than chunks: long tables have views (tasks.index.views), which fold into their table
        self.has_views = self.size > len(bm25)
        self._embedder = embedder
        self._document_names: DocumentNames | None = None
        self._records: dict[str, Chunk | None] = {}  # chunk_id → DuckDB record (None: not in DuckDB)
        self._terms: dict[str, int] = {}  # BM25 term → id, for the chunks' term sets (MMR's Jaccard)
        self._term_sets: dict[str, np.ndarray] = {}  # chunk_id → its distinct term ids
        self.reranker = reranker if reranker is not None else reranker_from_settings(settings)
        # the KB does not change during a run: which chunks are not active, whether any figure exists
        self.inactive = frozenset(chunk_id_of(i) for i in self.collection.get(
            where={"status": {"$ne": "active"}}, include=[])["ids"]) if self.size else frozenset()
        self.has_figures = bool(self.size and self.collection.get(
            where={"chunk_type": {"$in": list(FIGURE_TYPES)}}, limit=1, include=[])["ids"])

    @property
    def embedder(self):
        if self._embedder is None:  # loaded on first use: a BM25-only run never needs it
            from tasks.index.query_encoder import load_query_encoder

            self._embedder = load_query_encoder(self.settings)
        return self._embedder

    @property
    def document_names(self) -> DocumentNames:
        """The names of the KB's documents (`DocumentNames`), read on first use: the KB does not change in a run."""
        if self._document_names is None:
            from warehouse.chunks import document_covers

            self._document_names = DocumentNames(document_covers(self.settings.db_path, self.kb, COVER_NAME_CHUNKS,
                                                                 COVER_CHARS_READ))
        return self._document_names

    def records(self, chunk_ids: Collection[str]) -> dict[str, Chunk]:
        """The DuckDB records of `chunk_ids` (those it knows), read once per run: a batch reads only
        the chunks no earlier batch found (the run reads one published generation throughout)."""
        from warehouse.chunks import fetch_chunks

        missing = [cid for cid in chunk_ids if cid not in self._records]
        if missing:
            if len(self._records) + len(missing) > RECORD_CACHE_MAX:
                self._records.clear()
                self._terms.clear()
                self._term_sets.clear()
                missing = list(chunk_ids)
            found = fetch_chunks(self.settings.db_path, self.kb, missing)
            self._records.update({cid: found.get(cid) for cid in missing})
        return {cid: rec for cid in chunk_ids if (rec := self._records.get(cid)) is not None}

    def _term_ids(self, cands: Sequence[Candidate]) -> list[np.ndarray]:
        """The candidates' distinct BM25 term ids, each chunk's computed once per run (MMR)."""
        out = []
        for c in cands:
            ids = self._term_sets.get(c.chunk_id)
            if ids is None:
                (ids,) = term_id_sets([c.chunk.tokens if c.chunk else []], self._terms)
                self._term_sets[c.chunk_id] = ids
            out.append(ids)
        return out

    # -- recall

    def _vector(self, vectors: np.ndarray, n: int, where: dict | None, channel: str, weight: float,
                ) -> list[ChannelHits]:
        n = min(n, self.size)
        if n <= 0 or not len(vectors):
            return [ChannelHits(channel, weight, [], v) for v in range(len(vectors))]
        # with views, twice as deep, so that n chunks remain when views fold into their table
        depth = min(2 * n, self.size) if self.has_views else n
        res = self.collection.query(query_embeddings=vectors, n_results=depth, where=where, include=["distances"])
        return [ChannelHits(channel, weight, chunk_hits(ids, dists)[:n], v)
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
        if mode not in MODES:
            raise ValueError(f"mode must be one of {sorted(MODES)}, not {mode!r}")
        if not questions:
            return []
        s = self.settings
        factor = max(1, s.answer.crag_widen_factor) if widen else 1
        clock = {"recall": 0.0, "fusion": 0.0, "rerank": 0.0, "rescue": 0.0}

        t0 = time.perf_counter()
        variants, terms = self._variants(questions, widen)
        per_query, records = self._recall(variants, terms, MODES[mode], s.retrieval.recall_k * factor, factor,
                                          sources, section)
        clock["recall"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        out, bm25_tops = [], []
        for question, vs, chs in zip(questions, variants, per_query):
            r = Retrieval(question, mode, RRF, [], 0, None, vs, widened=widen)
            bm25_tops.append(self._fuse_filter_mmr(r, chs, records, s.retrieval.mmr_top_k * factor, sources, section))
            out.append(r)
        clock["fusion"] = time.perf_counter() - t0

        if self.reranker is not None and use_reranker:
            t0 = time.perf_counter()
            self._rerank(out, s.retrieval.rerank_candidates * factor)
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
        from tasks.common.text import subscripted_symbols, tokenize

        user_dict = self.settings.index.bm25_user_dict or None
        variants, terms = [], []
        for q in questions:
            t = tokenize(q, user_dict)
            keywords = " ".join(t)
            t = t + subscripted_symbols(q)
            if self.settings.retrieval.gloss_enabled:
                # senses paraphrased ("to renounce; to abandon; to give up") are too loose for a query over the whole
                # corpus: an English question's Chinese words would find Chinese passages on other subjects; a Chinese
                # question's words each add their one most specific English sense (three drew English passages on
                # other subjects: docs set +20 -15 against +16 -8)
                t = t + gloss_terms(q, self.bm25.vocab, paraphrases=False) + english_glosses(q, self.bm25.vocab, most=1)
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
            vecs = self.embedder.embed_queries([text for _, _, text in flat], batch_size=QUERY_ENCODE_BATCH)
            runs = [(VECTOR, recall_k, self._where(sources), s.retrieval.rrf_vector_weight)]
            if FIGURE in channels and self.has_figures:
                runs.append((FIGURE, max(s.retrieval.image_recall_min, s.retrieval.top_k // 2) * factor,
                             self._where(sources, figures=True), s.retrieval.rrf_image_weight))
            for channel, k, where, weight in runs:
                for (qi, vi, _), hits in zip(flat, self._vector(vecs, k, where, channel, weight)):
                    hits.variant = vi
                    if channel == FIGURE:
                        (vector,) = [ch for ch in per_query[qi] if ch.channel == VECTOR and ch.variant == vi]
                        hits = figures_on_vector_scale(vector, hits)
                    per_query[qi].append(hits)
                if channel == VECTOR and s.retrieval.gloss_enabled:  # before figures are ranked among its hits
                    self._with_translation(variants, per_query, k, where)
        if BM25 in channels:
            # BM25 cannot filter while it ranks: with a source/section filter it looks deeper
            k = recall_k if not (sources or section) else max(recall_k, min(len(self.bm25), recall_k * 10))
            found = self.bm25.search([terms[qi][vi] for qi, vi, _ in flat], k)
            for (qi, vi, _), hits in zip(flat, found):
                per_query[qi].append(ChannelHits(BM25, s.retrieval.rrf_bm25_weight, hits, vi))
        records = self.records({cid for chs in per_query for ch in chs for cid, _ in ch.hits})
        if sources or section:  # re-rank BM25 within the filter, as Chroma did with its `where`
            wanted = set(sources or ())
            for ch in (ch for chs in per_query for ch in chs if ch.channel == BM25):
                ch.hits = [(cid, sc) for cid, sc in ch.hits if (rec := records.get(cid)) is not None
                           and (not wanted or rec.source in wanted)
                           and (not section or in_section(rec.section_path, section))][:recall_k]
        return per_query, records

    def _with_translation(self, variants: list[list[str]], per_query: list[list[ChannelHits]], recall_k: int,
                          where: dict | None) -> None:
        """Merge into the vector hits of each Chinese question whose best hit is English those of its English
        as a query of its own (the senses of its words the knowledge base writes, `english_glosses`), each
        chunk at the better of the question's cosine and the translation's + `translated_query_offset`.
        e5-small matches a Chinese question to English passages poorly and English words to them well
        (xquad's Chinese questions over its English paragraphs: vector hit@1 0.17 → 0.53 / 0.62 on either
        half of its articles); the words' cosines run lower than a sentence's, hence the offset. Only where
        the question's own best hit is English: a knowledge base holding its Chinese answer too would see
        English passages on the subject outrank it (bench/retrieval.py's mixed knowledge base)."""
        own = {qi: ch for qi, chs in enumerate(per_query) for ch in chs
               if ch.channel == VECTOR and ch.variant == 0 and ch.hits}
        english = {qi: words for qi in own if (words := english_glosses(variants[qi][0], self.bm25.vocab))}
        first = self.records({own[qi].hits[0][0] for qi in english})  # (read once: the run keeps them)
        translated = {qi: " ".join(words) for qi, words in english.items()
                      if (top := first.get(own[qi].hits[0][0])) is not None
                      and across_languages(variants[qi][0], top.content)}
        if not translated:
            return
        offset = self.settings.retrieval.translated_query_offset
        vecs = self.embedder.embed_queries(list(translated.values()), batch_size=QUERY_ENCODE_BATCH)
        for qi, found in zip(translated, self._vector(vecs, recall_k, where, VECTOR, 0.0)):
            merged = dict(own[qi].hits)
            for chunk_id, cosine in found.hits:
                merged[chunk_id] = max(merged.get(chunk_id, -1.0), cosine + offset)
            own[qi].own_top = own[qi].hits[0]
            own[qi].hits = sorted(merged.items(), key=lambda kv: -kv[1])[:recall_k]

    def _fuse_filter_mmr(self, r: Retrieval, chs: list[ChannelHits], records: dict[str, Chunk], mmr_k: int,
                         sources: Sequence[str] | None, section: str | None) -> list[Candidate]:
        """RRF → filters → MMR into `r.ranked` (traced); returns BM25's top chunks for the rescue."""
        s = self.settings
        for ch in chs:
            r.trace(ch.channel, [(cid, score, f"variant {ch.variant}" if ch.variant else "") for cid, score in ch.hits])
        tops = (ch.own_top or ch.hits[0] for ch in chs if ch.channel == VECTOR and ch.hits)
        best = max(((cosine, chunk_id) for chunk_id, cosine in tops), default=None)
        if best is not None:
            r.top_cosine = best[0]
            # (a passage in the other language scores lower: `tasks.qa.answer.question_floor`)
            # (the run's records: the question's own best hit may have left the merged hits, `_with_translation`)
            top = self.records([best[1]]).get(best[1])
            r.top_cosine_across = top is not None and across_languages(r.question, top.content)
        r.named_documents = self.document_names.named(r.question)
        cands = named_documents_first(r.named_documents, catalogues_last(r.question, self._fuse(chs, records)))
        r.trace("rrf", cands)
        chapters = chapter_markers(r.question) if s.retrieval.section_filter_enabled else []
        cands = filter_candidates(cands, inactive=self.inactive, sources=sources, section=section, chapters=chapters)
        within = chapter_scope(cands, chapters)  # what the question's chapter kept, when a candidate held it
        r.trace("filter", cands)
        # BM25's own top ranks, for the divergence rescue (seed 000 §8.1 `_bm25_top3`), same filters
        bm25_top = self._bm25_top(chs, records, cands, sources, section)
        if within is not None:
            bm25_top = [c for c in bm25_top if within(c)]
        if s.retrieval.mmr_enabled:
            lam = s.retrieval.enum_query_mmr_lambda if is_enum_query(r.question) else s.retrieval.mmr_lambda
            cands = mmr(cands, mmr_k, lam, term_ids=self._term_ids, question=r.question)
        else:
            cands = cands[:mmr_k]
        r.trace("mmr", cands)
        r.ranked = cands
        return bm25_top

    def _rerank(self, out: list[Retrieval], n: int) -> None:
        """The first `n` candidates of every question through the reranker (one call per batch or per
        question, by backend); the rest (never reranked) score 0 on the rerank scale. A question the
        reranker failed for keeps its fused order and scale, marked `rerank_fallback`."""
        batch = [(r, r.ranked[:n]) for r in out if r.ranked]
        scored = self.reranker.score_lists([(r.question, [evidence_text(c.chunk) for c in cs]) for r, cs in batch])
        for (r, cs), scores in zip(batch, scored):
            if scores is None:
                r.rerank_fallback = True
                continue
            tail = [replace(c, score=0.0) for c in r.ranked[len(cs):]]
            r.ranked = rerank(cs, scores) + tail
            r.score_scale = RERANK
            r.trace("rerank", r.ranked[:len(cs)])

    def _fuse(self, chs: list[ChannelHits], records: dict[str, Chunk]) -> list[Candidate]:
        return [Candidate(chunk_id, score=score, chunk=records.get(chunk_id))
                for chunk_id, score in fuse(chs, self.settings.retrieval)]

    def _bm25_top(self, chs: list[ChannelHits], records: dict[str, Chunk], fused: list[Candidate],
                  sources: Sequence[str] | None, section: str | None) -> list[Candidate]:
        """The chunks the original question's BM25 ranks within `bm25_divergence_max_rank` that pass
        the filters, as candidates (with their fused state when they have one)."""
        by_id = {c.chunk_id: c for c in fused}
        out: list[Candidate] = []
        for ch in chs:
            if ch.channel != BM25 or ch.variant != 0:
                continue
            for chunk_id, _ in ch.hits[:self.settings.retrieval.bm25_divergence_max_rank]:
                base = by_id.get(chunk_id)
                c = replace(base) if base else Candidate(chunk_id, chunk=records.get(chunk_id))
                out.extend(filter_candidates([c], inactive=self.inactive, sources=sources, section=section))
        return out


