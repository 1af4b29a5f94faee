"""Flow `evaluate` (SPEC §5): run a labelled question set through the batch-QA pipeline once per
configuration — the default pipeline, or with `ablate` vector-only, BM25-only, hybrid, hybrid +
rerank and hybrid + rescues — and land one `qa_metrics` row per configuration.

Each configuration is a real batch-QA run (`flows.batch_qa.run_batch_qa`: its own run_id in
`qa_runs`, `qa_results`, `qa_traces`) on one loaded retriever; its metrics are computed from the
results it landed (`tasks.qa.evaluate`). A configuration that cannot run (rerank without a reranker
model) lands as `skipped`, with a note that says how to enable it.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.task_runners import ThreadPoolTaskRunner

from flows.batch_qa import read_questions_task, run_batch_qa
from flows.warm import embedder_for
from schemas.qa import QAMetric, QARun, Question
from schemas.settings import Settings, check_kb_name, load_settings
from tasks.common.display import artifact_key
from tasks.qa.answer import Answerer
from tasks.qa.batch import RetrievalOptions, load_retriever, new_run_id, out_path_for, qa_scope
from tasks.qa.evaluate import (ABLATION, NO_RERANKER, PIPELINE, EvalConfig, gold_chunk_sets, metric_artifact_table,
                               metrics_out_path, read_chunk_refs, score_run, skipped, write_metrics)
from warehouse import db
from warehouse.qa import qa_results


@dataclass
class Evaluation:
    eval_id: str
    kb: str
    metrics: list[QAMetric]  # one per configuration, in evaluation order
    out_path: str  # "" when no metrics file was asked for


@task(name="gold-chunks", cache_policy=NO_CACHE)
def gold_chunks_task(settings: Settings, kb: str, questions: list[Question]) -> dict[str, frozenset[str]]:
    gold = gold_chunk_sets(questions, read_chunk_refs(settings.db_path, kb))
    missing = sum(1 for ids in gold.values() if not ids)
    if missing:
        get_run_logger().warning("%d labelled questions have no gold chunk in kb %r: they score 0 on retrieval",
                                 missing, kb)
    return gold


@task(name="score-run", cache_policy=NO_CACHE)
def score_run_task(settings: Settings, eval_id: str, config: EvalConfig, run: QARun, questions: list[Question],
                   gold: dict[str, frozenset[str]]) -> QAMetric:
    return score_run(eval_id, config.name, run, questions, qa_results(settings.db_path, run.run_id), gold)


@task(name="land-metrics", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=2)
def land_metrics_task(settings: Settings, metrics: list[QAMetric]) -> None:
    db.save_metrics(settings.db_path, metrics)


@task(name="write-metrics", cache_policy=NO_CACHE)
def write_metrics_task(metrics: list[QAMetric], out: Path) -> Path:
    return write_metrics(metrics, out)


@flow(name="evaluate", log_prints=False, task_runner=ThreadPoolTaskRunner(max_workers=2))
def evaluate(questions: str, kb: str, home: str | None = None, ablate: bool = False,
             out: str | None = None) -> Evaluation:
    """Retrieval and answer metrics of `questions` (with gold labels / expected answers) on `kb`."""
    logger = get_run_logger()
    check_kb_name(kb)
    settings = load_settings(home)
    out_path = metrics_out_path(out)
    with qa_scope(settings):  # dead runs marked interrupted; one published generation read throughout
        qset = read_questions_task(questions)
        retriever = load_retriever(settings, kb, embedder=embedder_for(settings))
        answerer = Answerer(settings, encoder=lambda: retriever.embedder)
        gold = gold_chunks_task(settings, kb, qset.questions)
        if qset.questions:  # jieba's dictionary and the model's first pass would count against the first config
            retriever.retrieve_batch([qset.questions[0].question], "hybrid")

        eval_id = uuid.uuid4().hex[:12]
        questions_path = str(Path(qset.path).resolve())
        metrics: list[QAMetric] = []
        for config in ABLATION if ablate else (PIPELINE,):
            if config.needs_reranker and retriever.reranker is None:
                metrics.append(skipped(eval_id, config.name, kb, questions_path, NO_RERANKER))
                continue
            run_id = new_run_id()
            options = RetrievalOptions(mode=config.mode, rescues=config.rescues, rerank=config.rerank)
            summary = run_batch_qa(qset, retriever, answerer, settings, run_id=run_id,
                                   out_path=out_path_for(settings, run_id, None), options=options,
                                   artifact=artifact_key("eval", kb, config.name))
            metrics.append(score_run_task(settings, eval_id, config, summary.run, qset.questions, gold))
            logger.info("eval %s: %s → batch-QA run %s", eval_id, config.name, run_id)
        land_metrics_task(settings, metrics)
        if out_path is not None:
            write_metrics_task(metrics, out_path)
        create_table_artifact(
            key=artifact_key("eval", kb), table=metric_artifact_table(metrics),
            description=f"kbflow eval {eval_id} on kb {kb!r}; SQL: SELECT * FROM qa_metrics WHERE eval_id = '{eval_id}'")
        return Evaluation(eval_id, kb, metrics, str(out_path or ""))
