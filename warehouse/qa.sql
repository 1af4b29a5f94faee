-- Batch-QA views (SPEC §4). Re-created by the first writer connection of each process, after quality.sql.
-- qa_results.gold_rank is the 1-based rank of the first gold chunk in the final ranking (NULL when
-- missed or unlabelled); qa_traces holds every stage's candidates with is_gold (NULL = unlabelled).

-- One row per run: answers, refusals and, for labelled questions, hit@1/5, MRR@10 and how often
-- the gold evidence reached the answerer's context; latency per question.
CREATE OR REPLACE VIEW qa_run_summary AS
SELECT
    r.run_id,
    any_value(u.kb)                                                       AS kb,
    any_value(u.mode)                                                     AS mode,
    any_value(u.started_at)                                               AS started_at,
    count(*)                                                              AS questions,
    count(*) FILTER (WHERE r.answer_mode = 'llm')                         AS llm_answers,
    count(*) FILTER (WHERE r.answer_mode = 'extractive')                  AS extractive_answers,
    count(*) FILTER (WHERE r.insufficient)                                AS insufficient,
    count(*) FILTER (WHERE r.widened)                                     AS widened,
    count(*) FILTER (WHERE r.gold_in_context IS NOT NULL)                 AS labelled,
    avg(CASE WHEN r.gold_rank = 1 THEN 1.0 ELSE 0.0 END)
        FILTER (WHERE r.gold_in_context IS NOT NULL)                      AS hit_at_1,
    avg(CASE WHEN r.gold_rank <= 5 THEN 1.0 ELSE 0.0 END)
        FILTER (WHERE r.gold_in_context IS NOT NULL)                      AS hit_at_5,
    avg(CASE WHEN r.gold_rank <= 10 THEN 1.0 / r.gold_rank ELSE 0.0 END)
        FILTER (WHERE r.gold_in_context IS NOT NULL)                      AS mrr_at_10,
    avg(CASE WHEN r.gold_in_context THEN 1.0 ELSE 0.0 END)
        FILTER (WHERE r.gold_in_context IS NOT NULL)                      AS gold_in_context,
    avg(r.confidence)                                                     AS mean_confidence,
    avg(r.context_chars)                                                  AS mean_context_chars,
    avg(r.recall_ms + r.fusion_ms + r.rerank_ms + r.rescue_ms)            AS mean_retrieval_ms,
    avg(r.answer_ms)                                                      AS mean_answer_ms,
    quantile_cont(r.total_ms, 0.5)                                        AS p50_total_ms,
    quantile_cont(r.total_ms, 0.95)                                       AS p95_total_ms
FROM qa_results r
LEFT JOIN qa_runs u USING (run_id)
GROUP BY r.run_id;

-- Per run and stage: of the labelled questions, how many had gold evidence among the stage's
-- candidates at all, and within its top 5. Reading down the stages shows where evidence is lost.
CREATE OR REPLACE VIEW qa_stage_hits AS
WITH labelled AS (
    SELECT run_id, count(*) AS questions
    FROM qa_results WHERE gold_in_context IS NOT NULL GROUP BY run_id
),
per_question AS (
    SELECT run_id, qid, stage, any_value(stage_order) AS stage_order,
           min(rank) FILTER (WHERE is_gold) AS best_gold_rank
    FROM qa_traces
    WHERE is_gold IS NOT NULL
    GROUP BY run_id, qid, stage
)
SELECT
    p.run_id,
    p.stage,
    any_value(p.stage_order)                                              AS stage_order,
    any_value(l.questions)                                                AS labelled_questions,
    count(*) FILTER (WHERE p.best_gold_rank IS NOT NULL)                  AS with_gold,
    count(*) FILTER (WHERE p.best_gold_rank <= 5)                         AS gold_in_top5,
    round(avg(p.best_gold_rank), 2)                                       AS mean_best_gold_rank
FROM per_question p
JOIN labelled l USING (run_id)
GROUP BY p.run_id, p.stage
ORDER BY p.run_id, stage_order;

-- Labelled questions whose gold evidence never reached the context, with the last stage that
-- still held it (NULL: no channel recalled it) and its best rank there.
CREATE OR REPLACE VIEW qa_misses AS
WITH trail AS (
    SELECT run_id, qid, stage, stage_order, min(rank) AS best_gold_rank
    FROM qa_traces
    WHERE is_gold
    GROUP BY run_id, qid, stage, stage_order
),
last_seen AS (
    SELECT run_id, qid, arg_max(stage, stage_order) AS last_stage_with_gold,
           arg_max(best_gold_rank, stage_order) AS best_gold_rank_there,
           min(best_gold_rank) FILTER (WHERE stage IN ('vector', 'bm25', 'image')) AS best_recall_rank
    FROM trail
    GROUP BY run_id, qid
)
SELECT r.run_id, r.qid, r.question, r.answer, r.answer_mode, r.confidence,
       s.last_stage_with_gold, s.best_gold_rank_there, s.best_recall_rank
FROM qa_results r
LEFT JOIN last_seen s USING (run_id, qid)
WHERE r.gold_in_context = FALSE;

-- `kbflow eval`: the latest row of each configuration per knowledge base and question set
-- (skipped configurations included, with their note), so a dashboard needs no eval_id.
CREATE OR REPLACE VIEW qa_metrics_latest AS
SELECT *
FROM qa_metrics
QUALIFY row_number() OVER (PARTITION BY kb, questions_path, config ORDER BY created_at DESC) = 1;
