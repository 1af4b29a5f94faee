"""Flow `batch_qa`: read a question set → per batch of questions: retrieve → expand + budget →
grade (widen once, CRAG-lite) → answer → Parquet parts → land in DuckDB (`qa_runs`, `qa_results`,
`qa_traces`) and the results file → a table artifact. What a batch does is `tasks.qa.batch`.
The retriever (its embedder preloaded by `flows.warm` when the CLI warmed one) is loaded once per
run. An invalid row is skipped and reported; a failed batch is counted, the others land.
`run_batch_qa` is one run in a flow run: `evaluate` calls it per configuration on one retriever.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from prefect import flow, get_run_logger, task, unmapped
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run
from prefect.task_runners import ThreadPoolTaskRunner

from flows.warm import embedder_for
from schemas.arrow import to_table
from schemas.errors import InvalidValueError
from schemas.qa import QAResult, QARun, QATrace, Question
from schemas.settings import Settings, check_kb_name, load_settings
from tasks.common.display import artifact_key
from tasks.common.files import write_parquet
from tasks.common.progress import track
from tasks.qa.answer import Answerer, cosine_floor
from tasks.qa.batch import (BatchParts, BatchStats, QASummary, RetrievalOptions, answer_batch, finish_run,
                            land_run, landing_note, load_retriever, new_run, new_run_id, open_run, out_path_for,
                            qa_scope, question_batches, run_table, write_results)
from tasks.qa.questions import QuestionSet, read_questions
from tasks.qa.retriever import Retriever
from tasks.qa.types import MODES


@task(name="read-questions", cache_policy=NO_CACHE)
def read_questions_task(path: str) -> QuestionSet:
    qset = read_questions(path)
    logger = get_run_logger()
    for bad in qset.invalid:
        logger.warning("%s line %d: %s (skipped)", path, bad.line, bad.reason)
    return qset


@task(name="qa-batch", cache_policy=NO_CACHE)
def qa_batch_task(index: int, questions: list[Question], retriever: Retriever, answerer: Answerer,
                  settings: Settings, run_id: str, options: RetrievalOptions, floor: float | None,
                  parts_dir: Path) -> BatchParts:
    results, traces, stats = answer_batch(questions, retriever, answerer, settings, run_id=run_id, options=options,
                                          floor=floor)
    return BatchParts(index, write_parquet(to_table(results, QAResult), parts_dir / f"results-{index:05d}.parquet"),
                      write_parquet(to_table(traces, QATrace), parts_dir / f"traces-{index:05d}.parquet"), stats)


@task(name="land-qa", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=2)
def land_qa_task(settings: Settings, run: QARun, parts: list[BatchParts]) -> None:
    land_run(settings, run, [p.results for p in parts], [p.traces for p in parts])


@task(name="write-results", cache_policy=NO_CACHE)
def write_results_task(parts: list[BatchParts], out: Path) -> Path:
    return write_results([p.results for p in parts], out)


def run_batch_qa(qset: QuestionSet, retriever: Retriever, answerer: Answerer, settings: Settings, *, run_id: str,
                 out_path: Path, options: RetrievalOptions, artifact: str = "") -> QASummary:
    """One run in a flow run: map the batches, land results and traces under `run_id`, write the results
    file, create the artifact `artifact` (default `batch-qa-<kb>`, the user's runs; eval names its own)."""
    logger = get_run_logger()
    run = new_run(qset, retriever, answerer, settings, run_id=run_id, out_path=out_path, options=options,
                  flow_run_id=flow_run.id or "")
    parts_dir = open_run(settings, run)  # its row (running), its alive lock, its part files' folder
    batches = question_batches(qset.questions, settings.runtime.qa_batch_size)
    futures = qa_batch_task.map(list(range(len(batches))), batches, unmapped(retriever), unmapped(answerer),
                                unmapped(settings), unmapped(run_id), unmapped(options),
                                unmapped(cosine_floor(settings, run.embedding_model)), unmapped(parts_dir))
    parts: list[BatchParts] = []
    stats, failed = BatchStats(), 0
    with track("questions", total=len(qset.questions), unit="questions") as progress:
        for index, future in enumerate(futures):
            try:
                part = future.result()
            except Exception as exc:  # one batch's failure must not lose the others
                logger.error("batch %d (%d questions) failed: %s: %s", index, len(batches[index]),
                             type(exc).__name__, exc)
                failed += len(batches[index])
            else:
                parts.append(part)
                stats.add(part.stats)
            progress.advance(len(batches[index]))  # a failed batch's questions are done with too
    finish_run(run, stats, failed=failed, landed_batches=len(parts))
    write_results_task(parts, out_path)
    land_qa_task(settings, run, parts)
    shutil.rmtree(parts_dir, ignore_errors=True)  # landed in DuckDB and in the results file
    create_table_artifact(
        key=artifact or artifact_key("batch-qa", run.kb), table=run_table(run, qset.invalid),
        description=f"kbflow batch QA run {run.run_id} on kb {run.kb!r} ({run.mode}): results in {run.out_path}; "
                    f"SQL: SELECT * FROM qa_results WHERE run_id = '{run.run_id}'")
    logger.info("batch QA run %s: %d questions, %d answered, %d insufficient, %d invalid rows; results in %s",
                run_id, run.questions, run.answered, run.insufficient, run.invalid_rows, out_path)
    return QASummary(run, str(out_path), qset.invalid, landing_note(settings))


@flow(name="batch_qa", log_prints=False, task_runner=ThreadPoolTaskRunner(max_workers=2))
def batch_qa(questions: str, kb: str, home: str | None = None, out: str | None = None, mode: str = "hybrid",
             sources: list[str] | None = None, section: str | None = None) -> QASummary:
    """Answer every question of `questions` (JSONL/CSV/Parquet) from knowledge base `kb`."""
    check_kb_name(kb)
    if mode not in MODES:
        raise InvalidValueError(f"mode must be one of {sorted(MODES)}, not {mode!r}")
    settings = load_settings(home)
    run_id = new_run_id()
    out_path = out_path_for(settings, run_id, out)
    qset = read_questions_task(questions)
    with qa_scope(settings):  # dead runs marked interrupted; one published generation read throughout
        retriever = load_retriever(settings, kb, embedder=embedder_for(settings))  # None unless warmed
        answerer = Answerer(settings, encoder=lambda: retriever.embedder)  # its model, loaded once
        return run_batch_qa(qset, retriever, answerer, settings, run_id=run_id,
                            out_path=out_path, options=RetrievalOptions(mode=mode, sources=sources, section=section))
