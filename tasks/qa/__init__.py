"""Batch QA: questions → retrieval → context → cited answers → results, traces and metrics."""
