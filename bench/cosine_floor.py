"""Benchmark: where the CRAG cosine floor sits for each pair of question and passage language (xquad).

    .venv/bin/python bench/cosine_floor.py [--home DIR]

xquad holds the same 240 paragraphs and 1,190 questions in English and in Chinese (../shared/data/qa/xquad).
For each pairing of question language and passage language it embeds the paragraphs with kbflow's embedding
model (passage prompt) and the questions (query prompt), and prints the quantiles of the best cosine a
question reaches: answerable (its paragraph in the knowledge base) and unanswerable (a knowledge base of
every other paragraph). `tasks.qa.answer.COSINE_FLOORS` and its offsets are read off these figures: a floor
that keeps ~95 % of the answerable questions while the lowest quarter of the unanswerable ones stays under it.
Not part of CI: prints figures only.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

XQUAD = Path(os.environ.get("KBFLOW_SHARED", REPO.parent / "shared")) / "data" / "qa" / "xquad"
LANGUAGES = ("zh", "en")


def read(language: str) -> tuple[list[str], list[str], list[str], list[str]]:
    """(paragraph ids, paragraph texts, questions, each question's gold paragraph id)."""
    corpus, queries = ([json.loads(line) for line in (XQUAD / language / name).read_text(encoding="utf-8").splitlines()]
                       for name in ("corpus.jsonl", "queries.jsonl"))
    return ([p["pid"] for p in corpus], [p["text"] for p in corpus],
            [q["question"] for q in queries], [q["gold_pids"][0] for q in queries])


def normalized(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, default=Path("/tmp/kbflow-cosine-floor"))
    args = parser.parse_args(argv)

    from schemas.settings import load_settings
    from tasks.index.embed import Embedder

    embedder = Embedder.from_settings(load_settings(str(args.home)))
    data = {language: read(language) for language in LANGUAGES}
    passages = {language: normalized(embedder.embed_passages(data[language][1])) for language in LANGUAGES}
    queries = {language: normalized(embedder.embed_queries(data[language][2])) for language in LANGUAGES}
    print(f"model {embedder.model_id}; best cosine quantiles (5 % / 25 % / 50 %)")
    print(f"{'questions':<10} {'passages':<9} {'answerable':>22} {'unanswerable':>22}")
    for asked in LANGUAGES:
        for written in LANGUAGES:
            pids, gold = data[written][0], data[asked][3]
            cosines = queries[asked] @ passages[written].T
            own = np.array([[pid == g for pid in pids] for g in gold])
            answerable = cosines.max(axis=1)
            unanswerable = np.where(own, -1.0, cosines).max(axis=1)
            a, u = (np.quantile(x, [0.05, 0.25, 0.5]) for x in (answerable, unanswerable))
            print(f"{asked:<10} {written:<9} {' / '.join(f'{v:.3f}' for v in a):>22} "
                  f"{' / '.join(f'{v:.3f}' for v in u):>22}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
