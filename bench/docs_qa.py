"""Benchmark: offline answers on our own question set (tests/data/docs_qa, issue 13 target 3).

    .venv/bin/python bench/docs_qa.py [--home DIR] [--no-ingest] [--out FILE.json] [--compare OLD.json]
                                      [--check FILE.jsonl] [SPLIT ...]

Builds knowledge base `docs` (once, under --home, default /tmp/kbflow-docs; a re-run only checks the
files) with kbflow's own `ingest` flow from the documents of ../shared/data/docs that parse offline
and two real MinerU outputs (the CC-SAM paper, the SVOLT datasheet), then answers each split's
questions through the batch-QA path (`tasks.qa.batch.answer_batch`, offline extractive `Answerer`)
and prints, per split, has-ans (an expected answer inside the answer) and ctx (inside the context the
answerer was given). SPLIT is a file stem of tests/data/docs_qa (default: every split). --out writes
every question's outcome; --compare prints the questions whose has-ans differs from an earlier --out.
--check validates a new split before it is committed (and answers nothing, so it stays unseen): its rows'
fields, an expected answer of each question in the text of its gold source's chunks, no question worded
nearly as one of the committed splits. Not part of CI: prints figures only.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

SHARED = Path(os.environ.get("KBFLOW_SHARED", REPO.parent / "shared")) / "data"
SPLITS = REPO / "tests" / "data" / "docs_qa"
KB = "docs"


def corpus_paths() -> list[Path]:
    """The documents the question set asks about (the pumpkin PDF is a scan: not part of it)."""
    docs = SHARED / "docs"
    pdfs = sorted(p for p in (docs / "zh_pdf").glob("*.pdf") if "pumpkin" not in p.name)
    samples = SHARED / "mineru_samples"
    return [docs / "en", docs / "zh_docx", docs / "SOURCES.md", *pdfs,
            samples / "mineru3.4.4_cloud_api_zip_cvpr2023_ccsam",
            samples / "mineru2.7.6_pipeline_local_svolt_datasheet"]


FIELDS = {"qid", "kind", "question", "answers", "gold_sources", "gold_pages"}
NEAR_DUPLICATE = 0.7  # the share of character bigrams two questions share (Jaccard) to be worded alike


def _bigrams(text: str) -> set[str]:
    text = re.sub(r"[\s,，、]", "", text).lower()
    return {text[i:i + 2] for i in range(len(text) - 1)}


def check_split(path: Path, settings) -> list[str]:
    """What is wrong with a new split (`--check`): [] when it may be committed."""
    from warehouse.chunks import kb_chunks

    texts: dict[str, list[str]] = {}
    for chunk in kb_chunks(settings.db_path, KB):
        texts.setdefault(chunk.source, []).append(chunk.content)
    flat = {source: re.sub(r"[\s,，、]", "", " ".join(parts)).lower() for source, parts in texts.items()}
    committed = [(p.stem, json.loads(line)["question"]) for p in SPLITS.glob("*.jsonl") if p.resolve() != path.resolve()
                 for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    worded = [(stem, _bigrams(q)) for stem, q in committed]
    problems, qids = [], set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if set(row) != FIELDS:
            problems.append(f"line {n}: fields {sorted(row)}, not {sorted(FIELDS)}")
            continue
        if row["qid"] in qids or row["kind"] not in ("table", "text") or not all(a.strip() for a in row["answers"]):
            problems.append(f"line {n}: a repeated qid, a kind other than table/text, or an empty answer")
        qids.add(row["qid"])
        for name in row["gold_sources"]:
            held = [text for source, text in flat.items() if source == name or source.endswith("/" + name)]
            if not held:
                problems.append(f"line {n}: gold source {name!r} is not in the knowledge base")
            elif not any(re.sub(r"[\s,，、]", "", a).lower() in text for a in row["answers"] for text in held):
                problems.append(f"line {n}: no expected answer is in the text of {name}")
        mine = _bigrams(row["question"])
        alike = next((stem for stem, theirs in worded
                      if mine and len(mine & theirs) / len(mine | theirs) > NEAR_DUPLICATE), None)
        if alike:
            problems.append(f"line {n}: worded nearly as a question of {alike}")
    return problems


def split_key(stem: str) -> tuple[int, str]:
    digits = stem.removeprefix("fresh")
    return (int(digits) if digits.isdigit() else (1 if stem == "fresh" else -1), stem)


def run_split(path: Path, retriever, answerer, settings, floor) -> list[dict]:
    from tasks.qa.batch import RetrievalOptions, answer_batch, question_batches
    from tasks.qa.evaluate import answer_scores
    from tasks.qa.questions import read_questions

    out = []
    for batch in question_batches(read_questions(path).questions, settings.runtime.qa_batch_size):
        answerer.contexts = []
        results, _, _ = answer_batch(batch, retriever, answerer, settings, run_id="bench-docs-qa",
                                     options=RetrievalOptions(), floor=floor)
        for q, rec, context in zip(batch, results, answerer.contexts):
            out.append({"split": path.stem, "qid": q.qid,
                        "has": bool(answer_scores(rec.answer, q.answers).contains),
                        "ctx": bool(answer_scores(context, q.answers).contains), "answer": rec.answer})
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("splits", nargs="*", help="file stems of tests/data/docs_qa (default: all)")
    parser.add_argument("--home", type=Path, default=Path("/tmp/kbflow-docs"))
    parser.add_argument("--no-ingest", action="store_true", help="use the knowledge base already under --home")
    parser.add_argument("--out", type=Path, help="write every question's outcome to this JSON file")
    parser.add_argument("--compare", type=Path, help="an earlier --out: print the questions that changed")
    parser.add_argument("--check", type=Path, help="validate a new split (JSONL) against the knowledge base")
    args = parser.parse_args(argv)

    from schemas.settings import load_settings
    from tasks.qa.answer import Answerer, cosine_floor
    from tasks.qa.batch import load_retriever

    home = args.home.resolve()
    if not args.no_ingest:
        from flows.ingest import ingest

        started = time.perf_counter()
        summary = ingest(paths=[str(p) for p in corpus_paths()], kb=KB, home=str(home))
        print(f"ingest: {summary.added} added, {summary.changed} changed, {summary.skipped} unchanged, "
              f"{summary.failed} failed; {summary.index.chunks} chunks in {time.perf_counter() - started:.0f} s",
              flush=True)

    class RecordingAnswerer(Answerer):
        """The offline answerer, keeping each context's text so `ctx` can be scored."""

        def answer_many(self, jobs):
            self.contexts.extend(context.text for _, context, _, _ in jobs)
            return super().answer_many(jobs)

    settings = load_settings(str(home))
    if args.check:
        problems = check_split(args.check, settings)
        print("\n".join(problems) or f"{args.check}: OK")
        return 1 if problems else 0
    retriever = load_retriever(settings, KB)
    answerer = RecordingAnswerer(settings, encoder=lambda: retriever.embedder)
    floor = cosine_floor(settings, retriever.embedder.model_id)
    stems = args.splits or sorted((p.stem for p in SPLITS.glob("*.jsonl")), key=split_key)
    rows: list[dict] = []
    started = time.perf_counter()
    print(f"{'split':<10} {'n':>4} {'has-ans':>8} {'ctx':>6}")
    for stem in stems:
        split = run_split(SPLITS / f"{stem}.jsonl", retriever, answerer, settings, floor)
        rows += split
        n = len(split)
        print(f"{stem:<10} {n:>4} {sum(r['has'] for r in split) / n:>8.3f} {sum(r['ctx'] for r in split) / n:>6.3f}",
              flush=True)
    n = len(rows)
    print(f"{'all':<10} {n:>4} {sum(r['has'] for r in rows) / n:>8.3f} {sum(r['ctx'] for r in rows) / n:>6.3f}  "
          f"({time.perf_counter() - started:.0f} s)")
    if args.out:
        args.out.write_text(json.dumps(rows, ensure_ascii=False, indent=0), encoding="utf-8")
    if args.compare:
        before = {(r["split"], r["qid"]): r for r in json.loads(args.compare.read_text(encoding="utf-8"))}
        changed = [(b, r) for r in rows if (b := before.get((r["split"], r["qid"]))) and b["has"] != r["has"]]
        for b, r in changed:
            print(f"{'+' if r['has'] else '-'} {r['split']}/{r['qid']}: {b['answer'][:70]!r} → {r['answer'][:70]!r}")
        print(f"compared with {args.compare}: +{sum(r['has'] for _, r in changed)} "
              f"-{sum(not r['has'] for _, r in changed)}, "
              f"{sum(1 for r in rows if (b := before.get((r['split'], r['qid']))) and b['answer'] != r['answer'])} "
              f"answers changed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
