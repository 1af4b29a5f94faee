"""Evaluation (SPEC §5): a batch-QA run's rankings against gold evidence and its answers against
the expected ones, into one `QAMetric` row per evaluated configuration.

Retrieval, per labelled question, over its final ranking (`QAResult.retrieved_chunk_ids`):
hit@k and MRR@10 from the rank of the first gold chunk; recall@k = share of the question's gold
chunks in the top k; nDCG@10 with binary relevance, the ideal DCG from min(10, gold chunks). The
gold chunks of a `gold_sources` / `gold_pids` question are the KB's chunks that `Question.is_gold`
accepts on their metadata, so rankings and gold sets speak of the same chunk ids. A labelled
question whose gold is not in the KB scores 0 (the KB cannot answer it), it is not dropped.

Answers (SQuAD / CMRC 2018 style, best over the expected answers), on text normalized by
`answer_tokens` (NFKC: full-width → half-width; lower case; punctuation and spaces dropped;
every CJK character a token, other letter/digit runs one token each — so F1 is character-level
for Chinese and word-level for English): exact match, token F1, "contains an expected answer",
and RGB's all-of rule (every group of alternatives has one alternative in the answer; RGB's
`checkanswer` on normalized text).
"""
from __future__ import annotations

import csv
import json
import math
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from schemas.errors import InvalidValueError
from schemas.qa import QAMetric, QAResult, QARun, Question
from tasks.common.files import atomic_path
from tasks.qa.answer import without_citations

COMPLETED, SKIPPED = "completed", "skipped"
NO_RERANKER = ("no reranker configured: set rerank_url (an HTTP /rerank endpoint: TEI, Infinity, Xinference, vLLM, "
               "Jina/Cohere-compatible), rerank_backend = \"llm\" (the llm_base_url chat endpoint), or rerank_model "
               "to a local sentence-transformers CrossEncoder folder (kbflow.toml, or KBFLOW_RERANK_URL, "
               "KBFLOW_RERANK_BACKEND, KBFLOW_RERANK_MODEL)")
METRIC_FORMATS = (".json", ".csv")


@dataclass(frozen=True)
class EvalConfig:
    """One pipeline variant to evaluate: which recall channels, and whether the rescues and the
    cross-encoder stage (when a reranker is configured) run."""

    name: str
    mode: str  # tasks.retrieve.MODES
    rescues: bool
    rerank: bool
    needs_reranker: bool = False  # meaningless without one: skipped, with a note saying how to configure it


# the default pipeline (it reranks too when a reranker is configured)
PIPELINE = EvalConfig("hybrid+rescues", "hybrid", rescues=True, rerank=True)
ABLATION = (
    EvalConfig("vector-only", "vector", rescues=False, rerank=False),
    EvalConfig("bm25-only", "bm25", rescues=False, rerank=False),
    EvalConfig("hybrid", "hybrid", rescues=False, rerank=False),
    EvalConfig("hybrid+rerank", "hybrid", rescues=False, rerank=True, needs_reranker=True),
    PIPELINE,
)

# the printed and artifact table: (heading, QAMetric field)
TABLE_COLUMNS = (("hit@1", "hit_at_1"), ("hit@3", "hit_at_3"), ("hit@5", "hit_at_5"), ("hit@10", "hit_at_10"),
                 ("MRR@10", "mrr_at_10"), ("R@10", "recall_at_10"), ("nDCG@10", "ndcg_at_10"), ("EM", "exact_match"),
                 ("F1", "answer_f1"), ("has-ans", "contains_answer"), ("all-of", "answers_all_of"),
                 ("q/s", "retrieval_qps"))


# ------------------------------------------------------------------------------------------------
# retrieval metrics of one ranking


def first_gold_rank(ranked: Sequence[str], gold: Collection[str]) -> int | None:
    """1-based rank of the first gold chunk in the ranking; None when none is there."""
    return next((rank for rank, chunk_id in enumerate(ranked, 1) if chunk_id in gold), None)


def hit_at(rank: int | None, k: int) -> float:
    return 1.0 if rank is not None and rank <= k else 0.0


def reciprocal_rank_at(rank: int | None, k: int) -> float:
    return 1.0 / rank if rank is not None and rank <= k else 0.0


def recall_at(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    """Share of the distinct gold chunks found in the top k (0 when there is no gold)."""
    gold = set(gold)
    return len(gold.intersection(ranked[:k])) / len(gold) if gold else 0.0


def ndcg_at(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    """nDCG@k, binary relevance; a chunk ranked twice gains once; ideal = min(k, |gold|) hits on top."""
    gold = set(gold)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(k, len(gold)) + 1))
    if not ideal:
        return 0.0
    seen: set[str] = set()
    dcg = 0.0
    for i, chunk_id in enumerate(ranked[:k], 1):
        if chunk_id in gold and chunk_id not in seen:
            seen.add(chunk_id)
            dcg += 1.0 / math.log2(i + 1)
    return dcg / ideal


# ------------------------------------------------------------------------------------------------
# answer metrics of one answer

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # kana and CJK ideographs: one token each
_TOKEN = re.compile(rf"(?:(?![{_CJK}])[^\W_])+|[^\W_]")  # a run of non-CJK letters/digits, or one CJK one


def answer_tokens(text: str) -> list[str]:
    """Normalized tokens: NFKC (full-width → half-width), lower case, punctuation and whitespace
    dropped; each CJK character one token, each run of other letters/digits one token."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text or "").lower())


def token_f1(prediction: Sequence[str], truth: Sequence[str]) -> float:
    common = sum((Counter(prediction) & Counter(truth)).values())
    if not common:
        return 0.0
    precision, recall = common / len(prediction), common / len(truth)
    return 2 * precision * recall / (precision + recall)


@dataclass
class AnswerScores:
    exact_match: float
    f1: float
    contains: float
    all_of: float | None  # None when the question has no answer groups


def answer_scores(answer: str, expected: Sequence[str], groups: Sequence[Sequence[str]] = ()) -> AnswerScores:
    """EM, F1 and containment, best over `expected`; the all-of rule over `groups`. Citation marks
    are not part of the answer."""
    tokens = answer_tokens(without_citations(answer))
    text = "".join(tokens)
    truths = [t for t in (answer_tokens(e) for e in expected) if t]

    def contains(alternatives: Sequence[str]) -> bool:
        return any((t := "".join(answer_tokens(a))) and t in text for a in alternatives)

    groups = [g for g in groups if any(answer_tokens(a) for a in g)]
    return AnswerScores(
        exact_match=float(any(tokens == t for t in truths)),
        f1=max((token_f1(tokens, t) for t in truths), default=0.0),
        contains=float(contains(expected)),
        all_of=float(all(contains(g) for g in groups)) if groups else None,
    )


# ------------------------------------------------------------------------------------------------
# gold chunks


@dataclass(frozen=True)
class ChunkRef:
    """What gold matching needs of a KB chunk."""

    chunk_id: str
    source: str
    page_start: int = 0
    page_end: int = 0


def gold_chunk_sets(questions: Sequence[Question], chunks: Sequence[ChunkRef]) -> dict[str, frozenset[str]]:
    """qid → its gold chunk ids, for every labelled question: the listed `gold_chunk_ids` and the
    KB chunks `Question.is_gold` accepts (gold sources within gold pages, gold passage ids)."""
    by_name: dict[str, list[ChunkRef]] = defaultdict(list)  # source, its trailing parts, file stem → chunks
    for c in chunks:
        parts = PurePosixPath(c.source).parts
        # a gold source may name the file by its trailing folders and name (Question.is_gold)
        names = {str(PurePosixPath(*parts[i:])) for i in range(len(parts))} | {c.source, PurePosixPath(c.source).stem}
        for name in names:
            by_name[name].append(c)
    out = {}
    for q in questions:
        if not q.labelled:
            continue
        candidates = {c for name in (*q.gold_sources, *q.gold_pids) for c in by_name.get(name, ())}
        out[q.qid] = frozenset(q.gold_chunk_ids) | {c.chunk_id for c in candidates
                                                    if q.is_gold(c.chunk_id, c.source, c.page_start, c.page_end)}
    return out


# ------------------------------------------------------------------------------------------------
# one configuration


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def score_run(eval_id: str, config: str, run: QARun, questions: Sequence[Question], results: Sequence[QAResult],
              gold: Mapping[str, frozenset[str]]) -> QAMetric:
    """The metrics of one batch-QA run's results (questions of failed batches have none: not scored,
    and the note says how many)."""
    by_qid = {q.qid: q for q in questions}
    scored = [(by_qid[r.qid], r) for r in results if r.qid in by_qid]
    retrieval: dict[str, list[float]] = defaultdict(list)
    answers: dict[str, list[float]] = defaultdict(list)
    for q, r in scored:
        if q.labelled:
            ranked, gold_ids = r.retrieved_chunk_ids, gold.get(q.qid, frozenset())
            rank = first_gold_rank(ranked, gold_ids)
            for k in (1, 3, 5, 10):
                retrieval[f"hit_at_{k}"].append(hit_at(rank, k))
            retrieval["mrr_at_10"].append(reciprocal_rank_at(rank, 10))
            retrieval["recall_at_5"].append(recall_at(ranked, gold_ids, 5))
            retrieval["recall_at_10"].append(recall_at(ranked, gold_ids, 10))
            retrieval["ndcg_at_10"].append(ndcg_at(ranked, gold_ids, 10))
        if q.answers:
            s = answer_scores(r.answer, q.answers, q.answer_groups)
            answers["exact_match"].append(s.exact_match)
            answers["answer_f1"].append(s.f1)
            answers["contains_answer"].append(s.contains)
            if s.all_of is not None:
                answers["answers_all_of"].append(s.all_of)
    note = f"{run.failed} questions of failed batches not scored" if run.failed else ""
    fields = ("hit_at_1", "hit_at_3", "hit_at_5", "hit_at_10", "mrr_at_10", "recall_at_5", "recall_at_10",
              "ndcg_at_10")
    return QAMetric(
        eval_id=eval_id, config=config, run_id=run.run_id, kb=run.kb, questions_path=run.questions_path,
        created_at=datetime.now(timezone.utc), status=COMPLETED, note=note, questions=len(scored),
        labelled=sum(q.labelled for q, _ in scored), with_answers=sum(bool(q.answers) for q, _ in scored),
        **{name: _mean(retrieval[name]) for name in fields},
        **{name: _mean(answers[name]) for name in ("exact_match", "answer_f1", "contains_answer", "answers_all_of")},
        retrieval_qps=run.retrieval_qps)


def skipped(eval_id: str, config: str, kb: str, questions_path: str, note: str) -> QAMetric:
    """The row of a configuration that could not run (its metrics are None)."""
    return QAMetric(eval_id=eval_id, config=config, run_id="", kb=kb, questions_path=questions_path,
                    created_at=datetime.now(timezone.utc), status=SKIPPED, note=note, questions=0, labelled=0,
                    with_answers=0, hit_at_1=None, hit_at_3=None, hit_at_5=None, hit_at_10=None, mrr_at_10=None,
                    recall_at_5=None, recall_at_10=None, ndcg_at_10=None, exact_match=None, answer_f1=None,
                    contains_answer=None, answers_all_of=None, retrieval_qps=0.0)


def metric_table(metrics: Sequence[QAMetric]) -> tuple[list[str], list[list[str]]]:
    """(headings, rows) of the evaluation table: three decimals, q/s one; blank = not measured."""
    rows = []
    for m in metrics:
        cells = [m.config]
        for _, name in TABLE_COLUMNS:
            value = getattr(m, name)
            if m.status == SKIPPED or value is None:
                cells.append("")
            else:
                cells.append(f"{value:.1f}" if name == "retrieval_qps" else f"{value:.3f}")
        rows.append(cells)
    return ["config", *(heading for heading, _ in TABLE_COLUMNS)], rows


def metric_artifact_table(metrics: Sequence[QAMetric]) -> list[dict[str, str]]:
    """The evaluation table as the `evaluate` artifact's rows: the printed columns, then status, run and note."""
    headings, rows = metric_table(metrics)
    return [dict(zip(headings, row)) | {"status": m.status, "run_id": m.run_id, "note": m.note}
            for m, row in zip(metrics, rows)]


# ------------------------------------------------------------------------------------------------
# the metrics file


def metrics_out_path(out: str | None) -> Path | None:
    if not out:
        return None
    path = Path(out).expanduser().resolve()
    if path.suffix.lower() not in METRIC_FORMATS:
        raise InvalidValueError(f"--out {path.name!r}: use a .json or .csv file")
    return path


def write_metrics(metrics: Sequence[QAMetric], out: Path) -> Path:
    """The metrics rows as a JSON array or a CSV table (by suffix), written atomically."""
    rows = [{k: (v.isoformat() if k == "created_at" else v) for k, v in asdict(m).items()} for m in metrics]
    with atomic_path(out) as tmp, tmp.open("w", encoding="utf-8", newline="") as fh:
        if out.suffix.lower() == ".csv":
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else [])
            writer.writeheader()
            writer.writerows(rows)
        else:
            json.dump(rows, fh, ensure_ascii=False, indent=1)
    return out


# ------------------------------------------------------------------------------------------------
# the warehouse


def read_chunk_refs(db_path: Path, kb: str) -> list[ChunkRef]:
    from warehouse.chunks import chunk_pages

    if not db_path.exists():
        return []
    return [ChunkRef(*row) for row in chunk_pages(db_path, kb)]
