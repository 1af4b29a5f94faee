"""The types a question's retrieval passes between its stages: candidates, one channel's hits, the
retrieval of one question with its per-stage traces, and the `qa_traces` rows made from them."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from schemas.chunk import CHART, IMAGE, TABLE, Chunk
from schemas.qa import QAResult, QATrace

VECTOR, BM25, FIGURE = "vector", "bm25", "image"
MODES: dict[str, tuple[str, ...]] = {"hybrid": (VECTOR, BM25, FIGURE), "vector": (VECTOR, FIGURE), "bm25": (BM25,)}
FIGURE_TYPES = (IMAGE, CHART, TABLE)  # the image/table channel (seed 000 §9.1, seed 001 §4.2)
# stage names, in pipeline order (qa_traces.stage_order)
STAGES = ("vector", "bm25", "image", "rrf", "filter", "mmr", "rerank", "topk", "rescue", "expand", "context")
STAGE_ORDER = {name: i for i, name in enumerate(STAGES)}


@dataclass
class Candidate:
    """One chunk on its way through the stages. `score` is on the retrieval's `score_scale`."""

    chunk_id: str
    score: float = 0.0
    rerank: float | None = None
    rescued: str = ""  # why a rescue brought it back
    expanded_from: str = ""  # the seed chunk whose section-prefix neighbour this is
    asked: bool = False  # a neighbour the question names (a heading it quotes): admitted as a kept chunk is
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
    # the question's own best (chunk_id, cosine) when the hits of its translation were merged in
    # (`Retriever._with_translation`): the CRAG floor is calibrated on the question's own cosines
    own_top: tuple[str, float] | None = None


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
    top_cosine_across: bool = False  # the best cosine's chunk is written in the other language than the question
    stages: list[StageTrace] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # stage → seconds for this question
    rerank_fallback: bool = False  # the reranker failed for this question: the fused order stands
    named_documents: frozenset[str] = frozenset()  # the sources the question names ("根据宪法第十条": the constitution)

    def trace(self, stage: str, cands: Sequence[Candidate] | Sequence[tuple[str, float, str]]) -> None:
        hits = [c if isinstance(c, tuple) else (c.chunk_id, c.score, c.rescued or c.expanded_from) for c in cands]
        self.stages.append(StageTrace(stage, hits))



def evidence_text(chunk: Chunk) -> str:
    """What a chunk says, as the reranker and the answerer read it: a figure's description, a
    table's caption and cells, a text chunk's content."""
    if chunk.chunk_type in (IMAGE, CHART):
        return chunk.semantic_content or chunk.caption or chunk.content
    if chunk.chunk_type == TABLE:
        return "\n".join(p for p in (chunk.caption, chunk.content or chunk.semantic_content) if p)
    return chunk.content or chunk.semantic_content



def page_range(page_start: int, page_end: int) -> str:
    """"12-14", or "5" for one page (seed 000 §10.2 page_range); "" when the page is unknown."""
    if page_start <= 0:
        return ""
    return str(page_start) if page_end <= page_start else f"{page_start}-{page_end}"


def with_citation_fields(result: QAResult, cands: Sequence[Candidate]) -> QAResult:
    """`result` with what an analyst needs of each citation (source, pages, section, chunk type,
    score), parallel to `result.citations`, taken from the first of `cands` holding that chunk
    (pass the context before the ranking: its scores are the ones the answerer saw)."""
    by_id: dict[str, Candidate] = {}
    for c in cands:
        if c.chunk is not None:
            by_id.setdefault(c.chunk_id, c)
    found = [by_id.get(cid) for cid in result.citations]
    chunks = [c.chunk if c else None for c in found]
    return replace(
        result,
        citation_sources=[ch.source if ch else cid.rsplit("_", 1)[0] for cid, ch in zip(result.citations, chunks)],
        citation_pages=[page_range(ch.page_start, ch.page_end) if ch else "" for ch in chunks],
        citation_page_starts=[ch.page_start if ch else 0 for ch in chunks],
        citation_page_ends=[max(ch.page_end, ch.page_start) if ch else 0 for ch in chunks],
        citation_sections=[ch.section_path if ch else "" for ch in chunks],
        citation_chunk_types=[ch.chunk_type if ch else "" for ch in chunks],
        citation_scores=[round(float(c.score), 6) if c else 0.0 for c in found])


def trace_records(run_id: str, qid: str, retrieval: Retrieval, is_gold, max_rank: int) -> list[QATrace]:
    """`qa_traces` rows for one question: each stage's candidates down to `max_rank`.
    `is_gold(chunk_id) -> bool | None` marks gold evidence (None for an unlabelled question)."""
    rows = []
    for st in retrieval.stages:
        for rank, (chunk_id, score, note) in enumerate(st.hits[:max_rank], 1):
            rows.append(QATrace(run_id, qid, st.stage, STAGE_ORDER.get(st.stage, len(STAGES)), chunk_id, rank,
                                float(score), is_gold(chunk_id), note))
    return rows
