"""Benchmark: a Chinese question's English as a second vector query (`Retriever._with_translation`), on xquad.

    .venv/bin/python bench/translated_query.py [--home DIR]

xquad holds the same 240 paragraphs and 1,190 questions in English and in Chinese (../shared/data/qa/xquad).
This builds a knowledge base of its English paragraphs as bench/eval_kb.py does (one `# title` + text file
each, kbflow's own ingest; a re-run only checks the files) and asks its Chinese questions. Each question's
translation is what the retriever embeds: the English senses of its words that the knowledge base writes
(`english_glosses`); a chunk scores the better of the question's cosine and the translation's + offset.
The retriever's own vector channel (its stage trace; "question only" = glosses off), hit@1 / hit@10 of the
gold paragraph, for each offset on each half of xquad's articles (even / odd), then the offset fitted on one
half (best hit@1) reported on the other: how `retrieval.translated_query_offset` was chosen. Not part of CI:
prints figures only.
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
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

from cosine_floor import XQUAD  # noqa: E402  (bench/ is the script's folder)
from eval_kb import write_passages  # noqa: E402

OFFSETS = (0.0, 0.01, 0.02, 0.03, 0.05, 0.08)


def hit_rates(ranked: list[list[str]], gold: list[str], rows: np.ndarray) -> tuple[float, float]:
    """hit@1 and hit@10 of the questions `rows`, from each question's paragraphs best first."""
    first = [ranked[i][:1] == [gold[i]] for i in rows]
    ten = [gold[i] in ranked[i][:10] for i in rows]
    return float(np.mean(first)), float(np.mean(ten))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, default=Path("/tmp/kbflow-translated-query"))
    args = parser.parse_args(argv)

    from flows.ingest import ingest
    from schemas.settings import load_settings
    from tasks.index.views import document_name
    from tasks.qa.retriever import Retriever

    home = args.home.resolve()
    write_passages(XQUAD / "en", home / "corpus")
    ingest(paths=[str(home / "corpus")], kb="xquad-en", home=str(home))
    settings = load_settings(str(home))
    questions = [json.loads(line) for line in (XQUAD / "zh" / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    asked, gold = [q["question"] for q in questions], [q["gold_pids"][0] for q in questions]

    def ranked(retriever: Retriever) -> list[list[str]]:
        """Each question's paragraphs in the order of the vector channel's hits (its stage trace)."""
        found = retriever.retrieve_batch(asked, "vector", rescues=False)
        names = {cid: document_name(rec.source) for cid, rec in retriever.records(
            {cid for r in found for cid, *_ in r.stages[0].hits}).items()}
        return [list(dict.fromkeys(names[cid] for cid, *_ in r.stages[0].hits)) for r in found]

    alone = Retriever(settings.replace(gloss_enabled=False), "xquad-en")
    print(f"model {alone.embedder.model_id}; {len(asked)} Chinese questions over {alone.size} chunks of xquad's "
          "English paragraphs; vector channel hit@1 / hit@10")
    rankings = {None: ranked(alone)} | {o: ranked(Retriever(settings.replace(translated_query_offset=o), "xquad-en"))
                                        for o in OFFSETS}
    half = np.array([int(g.split("-")[1]) % 2 for g in gold])  # "xq-<article>-<paragraph>"
    rows = {h: np.flatnonzero(half == h) for h in (0, 1)}
    table = {offset: {h: hit_rates(r, gold, rows[h]) for h in rows} for offset, r in rankings.items()}
    for offset, by_half in table.items():
        label = "question only" if offset is None else f"offset {offset:.2f}"
        print(f"  {label:<14} " + "   ".join(f"half {h}: {a:.3f} / {b:.3f}" for h, (a, b) in by_half.items()))
    for fit in (0, 1):
        best = max(OFFSETS, key=lambda o: (table[o][fit][0], -o))
        print(f"  fitted on half {fit}: offset {best:.2f}; half {1 - fit}: {table[None][1 - fit][0]:.3f} → "
              f"{table[best][1 - fit][0]:.3f} hit@1")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
