"""The three rescues of seed 000 §8 (seed 001 §6): bring back chunks that a low score or a
truncation dropped although the evidence says they matter.

Input: the chunks adaptive top-k `kept` (best first), the ones it `cut` (ranked lower, or under
`context_min_score` on the rerank scale) and the question's BM25 top ranks. Output: the rescued
chunks, to be appended after the kept ones: a rescue never outranks a chunk that passed on its own
(seed 000 §8.1: the floor "不会高于 rerank 正常通过的切片").

1. BM25 divergence (`_rescue_bm25_divergence`): BM25's rank ≤ 3 is an exact-term signal; such a
   chunk that was cut (case A) or never made the list (case B, injected from the BM25 backup) is
   rescued.
2. Lexical match (`_rescue_lexical_match`): a cut chunk holding > 35 % of the question's character
   bigrams is rescued, and so are the cut chunks that follow it in its document (8 by default:
   the items under an enumeration's header).
3. Section cluster (`_rescue_section_cluster`): a section (source + first 2 levels of the path)
   with ≥ 3 members of ≥ 2 chunk types of which none was kept — while other sections were — is an
   under-rated cluster; the 3 strongest get up to 6 members each back.

Scores: on the rerank scale a rescued chunk gets max(score, CLUSTER_RESCUE_FLOOR = 0.06), just
over RERANK_CONTEXT_MIN_SCORE so the prompt's min-score filter lets it through. On the rrf scale
nothing is filtered by score, so a rescued chunk keeps its fused score.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from schemas.qa import RERANK
from schemas.settings import Settings
from tasks.common.text import bigram_hit_rate, bigrams, clean_text
from tasks.qa.types import Candidate

BM25_DIVERGENCE, LEXICAL, LEXICAL_NEIGHBOUR, SECTION_CLUSTER = (
    "bm25_divergence", "lexical", "lexical_neighbour", "section_cluster")


def normalize_section(section_path: str, levels: int) -> str:
    """The first `levels` components of a section path (CLUSTER_SECTION_PREFIX_LEVELS)."""
    return " > ".join(section_path.split(" > ")[:max(1, levels)]) if section_path else ""


def _saved(c: Candidate, reason: str, scale: str, floor: float) -> Candidate:
    score = max(c.score, floor) if scale == RERANK else c.score
    return replace(c, score=score, rescued=reason)


def rescue_bm25_divergence(kept_ids: set[str], bm25_top: Sequence[Candidate], cut: Sequence[Candidate], *,
                           scale: str, settings: Settings) -> list[Candidate]:
    cut_by_id = {c.chunk_id: c for c in cut}
    out = []
    for c in bm25_top[:settings.retrieval.bm25_divergence_max_rank]:
        if c.chunk_id in kept_ids:
            continue
        base = cut_by_id.get(c.chunk_id, c)  # case A: cut with a score; case B: from the BM25 backup
        if scale == RERANK and base.rerank is None:
            base = replace(base, score=0.0)  # its fused score is not on the rerank scale
        out.append(_saved(base, BM25_DIVERGENCE, scale, settings.retrieval.cluster_rescue_floor))
    return out


def rescue_lexical_match(question: str, cut: Sequence[Candidate], *, scale: str,
                         settings: Settings) -> list[Candidate]:
    q = bigrams(question)
    if len(clean_text(question)) < 2 or not q:
        return []
    floor = settings.retrieval.cluster_rescue_floor
    out: list[Candidate] = []
    min_hit = settings.retrieval.lexical_rescue_min_hit
    seeds = [c for c in cut if c.chunk and bigram_hit_rate(q, c.chunk.content) > min_hit]
    taken = {c.chunk_id for c in seeds}
    for seed in seeds:
        out.append(_saved(seed, LEXICAL, scale, floor))
        for c in cut:  # the items that follow a rescued header (enumerations)
            if (c.chunk_id not in taken and c.chunk and c.chunk.source == seed.chunk.source
                    and 0 < c.chunk.chunk_index - seed.chunk.chunk_index
                    <= settings.retrieval.lexical_rescue_neighbours):
                taken.add(c.chunk_id)
                out.append(_saved(c, f"{LEXICAL_NEIGHBOUR}:{seed.chunk_id}", scale, floor))
    return out


def rescue_section_cluster(question: str, kept: Sequence[Candidate], cut: Sequence[Candidate], *, scale: str,
                           settings: Settings) -> list[Candidate]:
    if not kept:  # "other sections pass": with nothing kept there is no contrast to judge by
        return []
    levels = settings.retrieval.cluster_section_prefix_levels

    def key(c: Candidate) -> tuple[str, str]:
        return c.chunk.source, normalize_section(c.chunk.section_path, levels)

    alive = {key(c) for c in kept if c.chunk}
    groups: dict[tuple[str, str], list[Candidate]] = {}
    for c in cut:
        if c.chunk and c.chunk.section_path and key(c) not in alive:
            groups.setdefault(key(c), []).append(c)
    q = bigrams(question)
    strong = []
    for (source, section), members in groups.items():
        types = {c.chunk.chunk_type for c in members}
        if (len(members) >= settings.retrieval.cluster_min_members
                and len(types) >= settings.retrieval.cluster_min_types):
            strength = len(members) * len(types) * (1 + bigram_hit_rate(q, section))
            strong.append((strength, (source, section), members))
    strong.sort(key=lambda x: -x[0])  # stable: equal strength keeps the better-ranked section first
    out = []
    for _, (_, section), members in strong[:settings.retrieval.cluster_max_sections]:
        for c in sorted(members, key=lambda c: -c.score)[:settings.retrieval.cluster_max_rescue_per_section]:
            out.append(_saved(c, f"{SECTION_CLUSTER}:{section}", scale, settings.retrieval.cluster_rescue_floor))
    return out


def rescue(question: str, kept: Sequence[Candidate], cut: Sequence[Candidate], bm25_top: Sequence[Candidate],
           scale: str, settings: Settings) -> list[Candidate]:
    """The three rescues in the seed's order; each chunk is rescued once (by the first that finds it),
    in that order."""
    done = {c.chunk_id for c in kept}
    out: list[Candidate] = []

    def take(found: list[Candidate]) -> None:
        for c in found:
            if c.chunk_id not in done:
                done.add(c.chunk_id)
                out.append(c)

    if settings.retrieval.bm25_divergence_rescue_enabled:
        take(rescue_bm25_divergence(done, bm25_top, cut, scale=scale, settings=settings))
    if settings.retrieval.lexical_rescue_enabled:
        take(rescue_lexical_match(question, cut, scale=scale, settings=settings))
    if settings.retrieval.section_cluster_rescue_enabled:
        take(rescue_section_cluster(question, kept, cut, scale=scale, settings=settings))
    return out
