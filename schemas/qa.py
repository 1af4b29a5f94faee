"""Batch QA records: a question, its answer (`qa_results`), what each retrieval stage kept
(`qa_traces`) and the run (`qa_runs`). One definition each → dataclass and pyarrow schema."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePosixPath

from schemas.arrow import arrow_schema, columns_of

# answer_mode values
LLM, EXTRACTIVE, INSUFFICIENT = "llm", "extractive", "insufficient"
# score scales (seed 002: RRF, cosine and reranker probabilities are not comparable); "rrf" is the
# fused score of every fusion (tasks.qa.fusion), on [0, 1] with 1 = first in every text channel
RRF, RERANK = "rrf", "rerank"


def _same_file(source: str, gold: str) -> bool:
    """A gold source names a file by its path or by its trailing folders and name: a source is
    recorded relative to the KB root (`../en/report.pdf`, `dept_a/说明.md`), a question set names
    it the way its author saw it (`report.pdf`, `en/report.pdf`)."""
    if source == gold:
        return True
    parts, tail = PurePosixPath(source).parts, PurePosixPath(gold).parts
    return bool(tail) and ".." not in tail and parts[-len(tail):] == tail


@dataclass
class Question:
    qid: str
    question: str
    answers: list[str] = field(default_factory=list)  # any one counts; `answers_all_of` groups are flattened
    answer_groups: list[list[str]] = field(default_factory=list)  # `answers_all_of`: each group needs one match
    gold_chunk_ids: list[str] = field(default_factory=list)
    gold_sources: list[str] = field(default_factory=list)
    gold_pids: list[str] = field(default_factory=list)  # a passage id = a source's file stem (one doc per passage)
    gold_pages: list[int] = field(default_factory=list)  # with gold_sources: the evidence's pages
    line: int = 0  # 1-based row of the input file

    @property
    def labelled(self) -> bool:
        return bool(self.gold_chunk_ids or self.gold_sources or self.gold_pids)

    def is_gold(self, chunk_id: str, source: str, page_start: int = 0, page_end: int = 0) -> bool:
        """Whether a chunk is gold evidence for this question: its id is listed, or its source is
        (within gold_pages when given), or its source's file stem is a gold passage id."""
        if chunk_id in self.gold_chunk_ids:
            return True
        if any(_same_file(source, gold) for gold in self.gold_sources):
            if not self.gold_pages:
                return True
            return any(page_start <= p <= max(page_end, page_start) for p in self.gold_pages)
        if self.gold_pids:
            return source in self.gold_pids or PurePosixPath(source).stem in self.gold_pids
        return False


@dataclass
class InvalidRow:
    line: int
    reason: str


@dataclass
class QAResult:
    run_id: str
    qid: str
    question: str
    answer: str
    answer_mode: str  # llm / extractive / insufficient
    citations: list[str]  # chunk ids cited in the answer; always a subset of context_chunk_ids
    context_chunk_ids: list[str]  # what the answerer was given, in prompt order
    retrieved_chunk_ids: list[str]  # the final ranking (kept, then rescued), best first
    top_sources: list[str]  # distinct sources of the context, best first
    confidence: float  # top-3 mean score on `score_scale` (seed 001 §7.5)
    score_scale: str  # rrf / rerank
    insufficient: bool  # CRAG-lite: the evidence stayed insufficient after widening once
    widened: bool  # CRAG-lite widened the candidates for this question
    context_chars: int
    expected_answers: list[str]
    gold_rank: int | None  # 1-based rank of the first gold chunk in retrieved_chunk_ids; None if missed/unlabelled
    gold_in_context: bool | None  # None when the question has no gold labels
    error: str  # e.g. the LLM failure that made this answer extractive
    # latency per stage, ms per question; batched stages (recall, fusion, rerank) are the batch's
    # time divided by its questions
    recall_ms: float
    fusion_ms: float  # RRF + filters + MMR
    rerank_ms: float
    rescue_ms: float
    context_ms: float  # expansion + budget
    answer_ms: float
    total_ms: float
    # per citation, parallel to `citations` (seed 000 §10.2 sources), so an analyst needs no join
    # with `chunks`: `SELECT qid, unnest(citations), unnest(citation_sources), unnest(citation_pages) …`
    citation_sources: list[str] = field(default_factory=list)
    citation_pages: list[str] = field(default_factory=list)  # page range "12-14", "5"; "" when unknown
    citation_page_starts: list[int] = field(default_factory=list)
    citation_page_ends: list[int] = field(default_factory=list)
    citation_sections: list[str] = field(default_factory=list)  # section_path, "第三章 > 第二节"
    citation_chunk_types: list[str] = field(default_factory=list)  # text / table / image / ...
    citation_scores: list[float] = field(default_factory=list)  # the chunk's final score, on `score_scale`
    rerank_fallback: bool = False  # a reranker was configured but failed for this question: fused order kept


@dataclass
class QATrace:
    """One candidate a stage kept for a question: `SELECT * FROM qa_traces WHERE qid = ? ORDER BY
    stage_order, rank` shows where a question's evidence was found, moved or lost."""

    run_id: str
    qid: str
    stage: str  # vector / bm25 / image / rrf / filter / mmr / rerank / topk / rescue / expand / context
    stage_order: int
    chunk_id: str
    rank: int  # 1-based within the stage
    score: float  # the stage's own scale: cosine, bm25, normalized rrf, rerank probability
    is_gold: bool | None  # None when the question has no gold labels
    note: str = ""  # rescue reason, expansion seed, query variant


@dataclass
class QARun:
    run_id: str
    kb: str
    flow_run_id: str
    questions_path: str
    out_path: str
    mode: str  # hybrid / vector / bm25
    started_at: datetime
    finished_at: datetime | None
    status: str  # running / completed / failed
    questions: int  # valid rows
    invalid_rows: int
    invalid_reasons: list[str]  # "line 7: no question", at most 100
    failed: int  # questions of batches that failed (an infrastructure error, logged); not in qa_results
    answered: int  # llm + extractive
    insufficient: int
    llm_answers: int
    extractive_answers: int
    llm_failures: int  # LLM calls that failed after retries (those answers fell back to extractive)
    widened: int
    labelled: int  # questions with gold evidence
    hit_at_1: float | None
    hit_at_5: float | None
    mrr_at_10: float | None
    retrieval_qps: float  # questions per second of retrieval (recall → rescues), LLM excluded
    embedding_model: str
    rerank_model: str
    llm_model: str  # "" = extractive answers
    settings_json: str  # the retrieval/answer settings of this run (no secrets)
    rerank_failures: int = 0  # questions whose rerank call failed after retries (they kept the fused order)


@dataclass
class QAMetric:
    """One evaluated configuration of one `kbflow eval` (`qa_metrics`): retrieval metrics against
    gold evidence, answer metrics against expected answers. A metric is None when the question set
    has nothing to measure it on (no gold labels, no answers, no `answers_all_of` groups)."""

    eval_id: str  # one `kbflow eval` invocation; an --ablate run has one row per configuration
    config: str  # vector-only / bm25-only / hybrid / hybrid+rerank / hybrid+rescues
    run_id: str  # the batch-QA run (qa_runs, qa_results, qa_traces) this configuration produced; "" if skipped
    kb: str
    questions_path: str
    created_at: datetime
    status: str  # completed / skipped
    note: str  # why a configuration was skipped, e.g. no reranker model configured
    questions: int
    labelled: int  # questions with gold evidence
    with_answers: int  # questions with expected answers
    hit_at_1: float | None
    hit_at_3: float | None
    hit_at_5: float | None
    hit_at_10: float | None
    mrr_at_10: float | None
    recall_at_5: float | None  # share of a question's gold chunks in the top 5, averaged
    recall_at_10: float | None
    ndcg_at_10: float | None  # binary relevance
    exact_match: float | None
    answer_f1: float | None  # character-level for Chinese, token-level for English; best over answers
    contains_answer: float | None  # the answer contains any expected answer
    answers_all_of: float | None  # RGB: every group of alternatives matched
    retrieval_qps: float


QA_RESULT_SCHEMA = arrow_schema(QAResult)
QA_TRACE_SCHEMA = arrow_schema(QATrace)
QA_RUN_SCHEMA = arrow_schema(QARun)
QA_METRIC_SCHEMA = arrow_schema(QAMetric)

# Columns `kbflow report` shows, in this order; `seconds` (finished_at - started_at) is computed by its query.
QA_RUN_COLUMNS = columns_of(QARun, ("run_id", "kb", "mode", "status", "started_at", "seconds", "questions",
                                    "invalid_rows", "answered", "insufficient", "widened", "failed", "labelled",
                                    "hit_at_1", "hit_at_5", "mrr_at_10", "retrieval_qps", "llm_model",
                                    "rerank_model"), computed=("seconds",))
QA_METRIC_COLUMNS = columns_of(QAMetric, ("eval_id", "config", "run_id", "kb", "status", "questions", "labelled",
                                          "with_answers", "hit_at_1", "hit_at_3", "hit_at_5", "hit_at_10",
                                          "mrr_at_10", "recall_at_5", "recall_at_10", "ndcg_at_10", "exact_match",
                                          "answer_f1", "contains_answer", "answers_all_of", "retrieval_qps", "note"))
