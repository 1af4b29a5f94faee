"""What a batch-QA run does, without Prefect: answer one batch of questions (retrieve → expand +
budget → grade → widen the weak ones once, CRAG-lite → answer) into `qa_results` / `qa_traces`
rows and its counts; the run's `qa_runs` row, opened before the batches and completed from their
counts; the results file; the run's summary table.

`flows.batch_qa` maps `answer_batch` over the batches of a question set and lands what it returns.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.errors import InvalidValueError
from schemas.qa import EXTRACTIVE, INSUFFICIENT, LLM, QA_RESULT_SCHEMA, InvalidRow, QAResult, QARun, QATrace, Question
from schemas.settings import Settings
from tasks.common.files import atomic_path, write_parquet
from tasks.common.http import safe_url
from tasks.common.lock import is_dead, run_alive
from tasks.qa.answer import Answerer, confidence, confidence_instruction, grade_evidence, result_record
from tasks.qa.context import Context, contexts_for, expand_batch
from tasks.qa.evaluate import hit_at, reciprocal_rank_at
from tasks.qa.questions import QuestionSet
from tasks.qa.retriever import Retriever
from tasks.qa.types import MODES, Retrieval, trace_records, with_citation_fields
from warehouse import db, published
from warehouse.qa import running_qa_runs

log = logging.getLogger("kbflow.qa")

OUT_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".parquet": "parquet"}


@dataclass
class BatchStats:
    questions: int = 0
    answered: int = 0
    insufficient: int = 0
    llm: int = 0
    extractive: int = 0
    llm_failures: int = 0
    widened: int = 0
    labelled: int = 0
    hit1: float = 0.0  # sums over the labelled questions
    hit5: float = 0.0
    reciprocal_rank: float = 0.0  # within 10
    retrieval_s: float = 0.0  # wall time of retrieval (both passes), contexts and answers excluded
    rerank_fallbacks: int = 0  # questions the reranker failed for (fused order kept)

    def add(self, other: BatchStats) -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


@dataclass
class RetrievalOptions:
    """How a run retrieves: the recall channels, the filters, and the stages an ablation switches off."""

    mode: str = "hybrid"  # tasks.qa.types.MODES
    sources: list[str] | None = None
    section: str | None = None
    rescues: bool = True
    rerank: bool = True  # the cross-encoder stage, when a reranker model is configured


@dataclass
class BatchParts:
    """What one batch landed on disk: its `qa_results` and `qa_traces` Parquet parts, and its counts."""

    index: int
    results: Path
    traces: Path
    stats: BatchStats


@dataclass
class QASummary:
    """What a batch-QA run returns: its completed `qa_runs` row, the results file, the rows it skipped."""

    run: QARun
    out_path: str
    invalid: list[InvalidRow] = field(default_factory=list)
    note: str = ""  # e.g. a read-only home: nothing landed in the warehouse


# ------------------------------------------------------------------------------------------------
# one batch


def answer_batch(questions: list[Question], retriever: Retriever, answerer: Answerer, settings: Settings, *,
                 run_id: str, options: RetrievalOptions, floor: float | None = None,
                 ) -> tuple[list[QAResult], list[QATrace], BatchStats]:
    """Retrieve → expand → budget → grade → (widen the weak ones once) → answer, for one batch."""
    s, o = settings, options
    n = len(questions)

    def retrieve(texts: list[str], widen: bool = False) -> list[Retrieval]:
        return retriever.retrieve_batch(texts, o.mode, sources=o.sources, section=o.section, widen=widen,
                                        rescues=o.rescues, use_reranker=o.rerank)

    started = time.perf_counter()
    retrievals = retrieve([q.question for q in questions])
    retrieval_s = time.perf_counter() - started

    def contexts(rs: list[Retrieval]) -> tuple[list[list], list[Context], float]:
        t0 = time.perf_counter()
        extra = expand_batch(s.db_path, retriever.kb, rs, s)
        ctx = contexts_for(rs, extra, s)
        return extra, ctx, (time.perf_counter() - t0) * 1000 / max(1, len(rs))

    expansions, ctxs, ctx_ms = contexts(retrievals)
    context_ms = [ctx_ms] * n
    grades = [grade_evidence(r, c, s, floor) for r, c in zip(retrievals, ctxs)]
    weak = [i for i, (ok, _) in enumerate(grades) if not ok] if s.answer.crag_enabled else []
    if weak:  # CRAG-lite: widen once, with the same filters (seed 002)
        t0 = time.perf_counter()
        wider = retrieve([questions[i].question for i in weak], widen=True)
        retrieval_s += time.perf_counter() - t0
        extra2, ctx2, ms2 = contexts(wider)
        for j, i in enumerate(weak):
            first = retrievals[i].timings
            wider[j].timings = {k: v + first.get(k, 0.0) for k, v in wider[j].timings.items()}
            retrievals[i], expansions[i], ctxs[i] = wider[j], extra2[j], ctx2[j]
            grades[i] = grade_evidence(wider[j], ctx2[j], s, floor)
            context_ms[i] += ms2

    jobs = [(q.question, c, confidence_instruction(confidence(r), r.score_scale, s), not ok)
            for q, r, c, (ok, _) in zip(questions, retrievals, ctxs, grades)]
    answers = answerer.answer_many(jobs)

    results, traces, stats = [], [], BatchStats(questions=n, retrieval_s=retrieval_s)
    for q, r, extra, c, (ok, why), a, c_ms in zip(questions, retrievals, expansions, ctxs, grades, answers,
                                                   context_ms):
        llm_failed = bool(a.error) and answerer.uses_llm  # before the insufficiency note below takes `error`
        if not ok and a.mode == INSUFFICIENT and not a.error:
            a.error = f"insufficient evidence: {why}"
        r.trace("expand", extra)
        r.trace("context", c.chunks)
        retrieval_ms = sum(r.timings.values()) * 1000
        rec = result_record(run_id, q, r, c, a, context_ms=c_ms, total_ms=retrieval_ms + c_ms + a.ms)
        rec = with_citation_fields(rec, [*c.chunks, *r.ranked, *extra])
        results.append(rec)
        known = {cand.chunk_id: cand.chunk for cand in [*r.ranked, *extra, *c.chunks] if cand.chunk is not None}

        def is_gold(chunk_id: str, q=q, known=known) -> bool | None:
            if not q.labelled:
                return None
            chunk = known.get(chunk_id)
            if chunk is not None:
                return q.is_gold(chunk_id, chunk.source, chunk.page_start, chunk.page_end)
            return q.is_gold(chunk_id, chunk_id.rsplit("_", 1)[0])  # chunk_id = f"{source}_{index}"

        traces.extend(trace_records(run_id, q.qid, r, is_gold, s.runtime.trace_max_rank))
        stats.answered += a.mode in (LLM, EXTRACTIVE)
        stats.insufficient += a.mode == INSUFFICIENT
        stats.llm += a.mode == LLM
        stats.extractive += a.mode == EXTRACTIVE
        stats.llm_failures += llm_failed
        stats.widened += r.widened
        stats.rerank_fallbacks += r.rerank_fallback
        if q.labelled:
            stats.labelled += 1
            stats.hit1 += hit_at(rec.gold_rank, 1)
            stats.hit5 += hit_at(rec.gold_rank, 5)
            stats.reciprocal_rank += reciprocal_rank_at(rec.gold_rank, 10)
    return results, traces, stats


def question_batches(questions: list[Question], size: int) -> list[list[Question]]:
    """The question set in order, `size` questions a batch (at least one)."""
    size = max(1, size)
    return [questions[i:i + size] for i in range(0, len(questions), size)]


# ------------------------------------------------------------------------------------------------
# the run


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def out_path_for(settings: Settings, run_id: str, out: str | None) -> Path:
    default = settings.home / "qa" if home_writable(settings) else Path(tempfile.gettempdir())  # read-only home
    path = Path(out).expanduser().resolve() if out else default / f"{run_id}.jsonl"
    if path.suffix.lower() not in OUT_FORMATS:
        raise InvalidValueError(f"--out {path.name!r}: use a .jsonl or .parquet file")
    return path


# ------------------------------------------------------------------------------------------------
# a run beside other processes: see warehouse.published (readers) and tasks.common.lock (run_alive)


def home_writable(settings: Settings) -> bool:
    return os.access(settings.home, os.W_OK) or not settings.home.exists()


@contextlib.contextmanager
def qa_scope(settings: Settings) -> Iterator[None]:
    """A batch-QA or eval flow run: waits `warehouse_wait_s` for an ingest's transaction, marks dead
    runs interrupted, and reads one published generation throughout."""
    db.set_busy_wait(settings.runtime.warehouse_wait_s)
    reap_interrupted(settings)
    with published.pin(settings.db_path):
        yield


def reap_interrupted(settings: Settings) -> list[str]:
    """Runs left `running` by a process that died (kill -9, a crash): marked `interrupted`, their
    part files deleted. A live run holds its `run_alive` lock, so it is never taken for dead."""
    home = settings.home
    if not home_writable(settings) or not settings.db_path.exists():
        return []
    runs_dir = home / "qa" / "runs"
    candidates = set(running_qa_runs(settings.db_path))
    candidates |= {p.name for p in runs_dir.iterdir() if p.is_dir()} if runs_dir.is_dir() else set()
    dead = sorted(r for r in candidates if is_dead(home, r))
    if dead:
        db.mark_qa_interrupted(settings.db_path, dead)
        for run_id in dead:
            shutil.rmtree(runs_dir / run_id, ignore_errors=True)
        log.warning("batch-QA run(s) %s died before finishing: marked interrupted, part files removed",
                    ", ".join(dead))
    return dead


_alive: dict[str, contextlib.ExitStack] = {}  # run_id → its held run_alive lock


def open_run(settings: Settings, run: QARun) -> Path:
    """Start a run: hold its alive lock, save its `qa_runs` row (`running`); return the folder of its
    part files. On a read-only home nothing is saved and the parts go to a temporary folder."""
    if not home_writable(settings):
        log.warning("%s is read-only: run %s answers the questions but lands nothing in the warehouse "
                    "(results file: %s)", settings.home, run.run_id, run.out_path)
        return Path(tempfile.mkdtemp(prefix=f"kbflow-{run.run_id}-"))
    stack = contextlib.ExitStack()
    stack.enter_context(run_alive(settings.home, run.run_id))
    _alive[run.run_id] = stack
    try:
        db.save_qa_run(settings.db_path, run)
    except BaseException:
        _alive.pop(run.run_id).close()
        raise
    return settings.home / "qa" / "runs" / run.run_id


def landing_note(settings: Settings) -> str:
    return "" if home_writable(settings) else (f"{settings.home} is read-only: results not landed in the warehouse "
                                               "(they are in the results file)")


def land_run(settings: Settings, run: QARun, results: list[Path], traces: list[Path]) -> None:
    """Land a finished run's parts and row (one short retried transaction), then let its alive lock go."""
    if not home_writable(settings):
        return
    db.land_qa(settings.db_path, run, results, traces)
    if (stack := _alive.pop(run.run_id, None)) is not None:
        stack.close()


def load_retriever(settings: Settings, kb: str, *, embedder=None) -> Retriever:
    retriever = Retriever(settings, kb, embedder=embedder)  # embedder: one already loaded (flows/warm.py)
    if not retriever.size:
        log.warning("knowledge base %r is empty or missing under %s: every answer will be 'insufficient'",
                    kb, settings.home)
    return retriever


def settings_used(settings: Settings, options: RetrievalOptions) -> Settings:
    """The settings as a run used them: stages the options switched off read as off in `qa_runs`."""
    off: dict[str, Any] = {}
    if not options.rescues:
        off.update(bm25_divergence_rescue_enabled=False, lexical_rescue_enabled=False,
                   section_cluster_rescue_enabled=False)
    if not options.rerank:
        off.update(rerank_model="", rerank_url="", rerank_backend="off")
    return settings.replace(**off)


def settings_json(settings: Settings) -> str:
    # Keys come from the environment only; a URL setting may still carry credentials (user:password@,
    # ?api_key=...): stored without user info, query and fragment.
    values = {k: (str(v) if isinstance(v, Path) else safe_url(v) if k.endswith("_url") and v else v)
              for k, v in settings.flat().items()}
    return json.dumps(values, ensure_ascii=False, sort_keys=True)


def new_run(qset: QuestionSet, retriever: Retriever, answerer: Answerer, settings: Settings, *, run_id: str,
            out_path: Path, options: RetrievalOptions, flow_run_id: str) -> QARun:
    """The `qa_runs` row of a run about to start (status `running`, no counts yet). It loads the
    retriever's embedder when the mode recalls by vector."""
    used = settings_used(settings, options)
    embedding_model = retriever.embedder.model_id if "vector" in MODES[options.mode] else ""  # loaded before the map
    reranker = getattr(retriever, "reranker", None) if options.rerank else None
    return QARun(run_id=run_id, kb=retriever.kb, flow_run_id=flow_run_id,
                 questions_path=str(Path(qset.path).resolve()), out_path=str(out_path), mode=options.mode,
                 started_at=datetime.now(timezone.utc), finished_at=None, status="running",
                 questions=len(qset.questions), invalid_rows=len(qset.invalid),
                 invalid_reasons=[f"line {r.line}: {r.reason}" for r in qset.invalid[:100]], failed=0, answered=0,
                 insufficient=0, llm_answers=0, extractive_answers=0, llm_failures=0, widened=0, labelled=0,
                 hit_at_1=None, hit_at_5=None, mrr_at_10=None, retrieval_qps=0.0, embedding_model=embedding_model,
                 rerank_model=reranker.model_id if reranker is not None else "",
                 llm_model=settings.llm.llm_model if answerer.uses_llm else "",
                 settings_json=settings_json(used))


def finish_run(run: QARun, stats: BatchStats, *, failed: int, landed_batches: int) -> None:
    """Complete the run's row: the landed batches' counts and hit rates, the questions of failed
    batches, the status, the finish time."""
    run.failed = failed
    run.answered, run.insufficient = stats.answered, stats.insufficient
    run.llm_answers, run.extractive_answers, run.llm_failures = stats.llm, stats.extractive, stats.llm_failures
    run.widened, run.labelled = stats.widened, stats.labelled
    run.rerank_failures = stats.rerank_fallbacks
    if stats.labelled:
        run.hit_at_1 = stats.hit1 / stats.labelled
        run.hit_at_5 = stats.hit5 / stats.labelled
        run.mrr_at_10 = stats.reciprocal_rank / stats.labelled
    run.retrieval_qps = stats.questions / stats.retrieval_s if stats.retrieval_s > 0 else 0.0
    run.status = "completed" if not run.failed else ("failed" if not landed_batches else "completed_with_failures")
    run.finished_at = datetime.now(timezone.utc)


def write_results(result_parts: list[Path], out: Path) -> Path:
    """The results file, in question order: Parquet or JSONL by suffix, written atomically."""
    tables = [pq.read_table(p) for p in result_parts]
    table = pa.concat_tables(tables) if tables else QA_RESULT_SCHEMA.empty_table()
    if OUT_FORMATS[out.suffix.lower()] == "parquet":
        return write_parquet(table, out)
    with atomic_path(out) as tmp, tmp.open("w", encoding="utf-8") as fh:
        for row in table.to_pylist():
            fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
    return out


def run_table(run: QARun, invalid: list[InvalidRow]) -> list[dict[str, Any]]:
    """The run's summary as (metric, value) rows: the batch-QA artifact's table."""
    rows: list[dict[str, Any]] = [
        {"metric": "questions (valid rows)", "value": run.questions},
        {"metric": "invalid rows (skipped)", "value": run.invalid_rows},
        {"metric": "answered (llm / extractive)",
         "value": f"{run.answered} ({run.llm_answers} / {run.extractive_answers})"},
        {"metric": "insufficient evidence", "value": run.insufficient},
        {"metric": "widened once (CRAG-lite)", "value": run.widened},
        {"metric": "LLM failures (fell back to extractive)", "value": run.llm_failures},
        {"metric": "rerank failures (fused order kept)", "value": run.rerank_failures},
        {"metric": "failed (batch errors)", "value": run.failed},
        {"metric": "retrieval questions/s", "value": round(run.retrieval_qps, 2)},
    ]
    if run.labelled:
        rows += [{"metric": "labelled questions", "value": run.labelled},
                 {"metric": "hit@1", "value": round(run.hit_at_1 or 0.0, 4)},
                 {"metric": "hit@5", "value": round(run.hit_at_5 or 0.0, 4)},
                 {"metric": "MRR@10", "value": round(run.mrr_at_10 or 0.0, 4)}]
    rows += [{"metric": f"invalid: line {r.line}", "value": r.reason} for r in invalid[:20]]
    return rows
