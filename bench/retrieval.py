"""Benchmark: batch-QA retrieval on a ~10k-chunk knowledge base built by kbflow's own `ingest` flow.

    .venv/bin/python bench/retrieval.py [--home DIR] [--build-only | --no-ingest] [--throughput-questions N]

Knowledge base `bench` (built once under --home, default /tmp/kbflow-bench; re-runs reuse it):
every passage of ../shared/data/qa — rgb_zh_refine_dev 7,337, drcd_dev 1,000, cmrc2018_trial 256,
xquad zh/en 240 each — one document per passage (`{set}/{pid}.txt`, `# title` Markdown where the
set has titles), plus the real documents of ../shared/data/docs that parse offline (Civil Code,
Constitution, reports, DOCX with headings, tables and images; English PDFs/DOCX) for long sectioned
documents with tables. Ingest is incremental: a re-run only checks the files. Prints:

1. hit@1, hit@5, MRR@10 of the final ranking on rgb_zh_refine_dev's 81 questions (gold = a chunk of
   one of the question's positive passages) for vector-only, BM25-only, hybrid (RRF, rescues off)
   and hybrid + rescues; also the share of questions whose gold reached the answerer's context.
2. questions/s of retrieval without an LLM (recall → RRF → filters → MMR → adaptive top-k →
   rescues), and of retrieval + context (section-prefix expansion, budget) + extractive answer, on a
   deterministic sample of every set's questions, in batches of `qa_batch_size`.
Not part of CI: prints figures only.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

QA = REPO.parent / "shared" / "data" / "qa"
DOCS = REPO.parent / "shared" / "data" / "docs"
SETS = ("rgb_zh_refine_dev", "drcd_dev", "cmrc2018_trial", "xquad/zh", "xquad/en")
# every real document that parses offline (the 196-page textbook and the GB/T standard need OCR models)
PDFS = (
    *(f"zh_pdf/{name}" for name in (
        "prc_civil_code.pdf", "prc_constitution.pdf", "byd_2025q1_quarterly_report.pdf",
        "broker_research_report_anonymized.pdf", "ucasthesis_template_guide.pdf", "party_union_rules_1page_table.pdf")),
    *(f"zh_docx/{name}" for name in (
        "mineru_docx_demo_zh_en_headings_tables_images.docx", "nbt_npp_periodic_safety_review_part12_design_draft.docx",
        "nbt_npp_periodic_safety_review_part1_draft.docx", "nbt_npp_psr_part1_drafting_notes.docx",
        "procurement_contract_headings_table_images.docx")),
    *(f"en/{name}" for name in ("multi_page.pdf", "redp5110_sampled.pdf", "unit_test_headers_numbered.docx",
                                "word_sample.docx")),
)
KB = "bench"


def write_corpus(root: Path) -> int:
    """One document per passage; returns the number of files."""
    n = 0
    for name in SETS:
        folder = root / name.replace("/", "_")
        folder.mkdir(parents=True, exist_ok=True)
        for line in (QA / name / "corpus.jsonl").open(encoding="utf-8"):
            row = json.loads(line)
            if row.get("title"):
                (folder / f"{row['pid']}.md").write_text(f"# {row['title']}\n\n{row['text']}\n", encoding="utf-8")
            else:
                (folder / f"{row['pid']}.txt").write_text(row["text"] + "\n", encoding="utf-8")
            n += 1
    pdfs = root / "docs"
    pdfs.mkdir(exist_ok=True)
    for name in PDFS:
        target = pdfs / Path(name).name
        if not target.exists():
            target.write_bytes((DOCS / name).read_bytes())
        n += 1
    return n


def kb_size(settings) -> int:
    from warehouse.chunks import count_chunks

    if not settings.db_path.exists():
        return 0
    return count_chunks(settings.db_path, KB)


def build(home: Path) -> None:
    from flows.ingest import ingest

    corpus = home / "corpus"
    files = write_corpus(corpus)
    print(f"ingesting {files} documents from {corpus} into kb {KB!r} …", flush=True)
    started = time.perf_counter()
    summary = ingest(paths=[str(corpus)], kb=KB, home=str(home))
    print(f"ingest: {summary.landed} landed, {summary.failed} failed, {summary.index.chunks} chunks indexed "
          f"in {time.perf_counter() - started:.0f} s", flush=True)


def questions_of(name: str):
    from tasks.qa.questions import read_questions

    qset = read_questions(QA / name / "queries.jsonl")
    if qset.invalid:  # cmrc2018_trial has two rows with an empty question
        print(f"{name}: {len(qset.invalid)} invalid rows skipped ({qset.invalid[0].reason})")
    tag = name.replace("/", "_")
    # gold pids are file stems; this KB holds several sets, so pin gold to the set's own folder
    return [replace(q, gold_pids=[], gold_sources=[f"{tag}/{p}.{ext}" for p in q.gold_pids for ext in ("txt", "md")])
            for q in qset.questions]


def metrics(questions, retrievals, contexts=None) -> dict[str, float]:
    from tasks.qa.evaluate import first_gold_rank, hit_at, reciprocal_rank_at

    hit1 = hit5 = rr = in_ctx = 0.0
    for i, (q, r) in enumerate(zip(questions, retrievals)):
        gold = {c.chunk_id for c in r.ranked if q.is_gold(c.chunk_id, c.source)}
        rank = first_gold_rank([c.chunk_id for c in r.ranked], gold)
        hit1 += hit_at(rank, 1)
        hit5 += hit_at(rank, 5)
        rr += reciprocal_rank_at(rank, 10)
        if contexts is not None:
            in_ctx += any(q.is_gold(c.chunk_id, c.source) for c in contexts[i].chunks)
    n = len(questions)
    out = {"hit@1": hit1 / n, "hit@5": hit5 / n, "MRR@10": rr / n}
    if contexts is not None:
        out["gold in context"] = in_ctx / n
    return out


def retrieve_all(retriever, questions, mode, *, rescues, batch):
    out = []
    for a in range(0, len(questions), batch):
        out.extend(retriever.retrieve_batch([q.question for q in questions[a:a + batch]], mode, rescues=rescues))
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, default=Path("/tmp/kbflow-bench"))
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--no-ingest", action="store_true", help="use the KB under --home as it is")
    parser.add_argument("--throughput-questions", type=int, default=2000)
    args = parser.parse_args(argv)

    from schemas.settings import load_settings

    home = args.home.resolve()
    settings = load_settings(home)
    if not args.no_ingest:
        build(home)  # incremental: unchanged files are skipped
    chunks = kb_size(settings)
    print(f"kb {KB!r} under {home}: {chunks} chunks", flush=True)
    if args.build_only:
        return 0

    from tasks.qa.answer import Answerer
    from tasks.qa.context import contexts_for, expand_batch
    from tasks.qa.retriever import Retriever

    started = time.perf_counter()
    retriever = Retriever(settings, KB)
    retriever.embedder  # noqa: B018 - load the model before timing anything
    print(f"retriever loaded in {time.perf_counter() - started:.1f} s (embedding model {retriever.embedder.model_id})")
    batch = settings.runtime.qa_batch_size

    rgb = questions_of("rgb_zh_refine_dev")
    print(f"\nrgb_zh_refine_dev: {len(rgb)} questions, final ranking after adaptive top-k (and rescues)")
    print(f"{'pipeline':<18}{'hit@1':>8}{'hit@5':>8}{'MRR@10':>8}{'ctx':>8}{'q/s':>8}")
    for label, mode, rescues in (("vector-only", "vector", False), ("BM25-only", "bm25", False),
                                 ("hybrid", "hybrid", False), ("hybrid+rescues", "hybrid", True)):
        t0 = time.perf_counter()
        rs = retrieve_all(retriever, rgb, mode, rescues=rescues, batch=batch)
        secs = time.perf_counter() - t0
        ctx = contexts_for(rs, expand_batch(settings.db_path, KB, rs, settings), settings)
        m = metrics(rgb, rs, ctx)
        print(f"{label:<18}{m['hit@1']:>8.3f}{m['hit@5']:>8.3f}{m['MRR@10']:>8.3f}{m['gold in context']:>8.3f}"
              f"{len(rgb) / secs:>8.1f}", flush=True)

    # throughput on a deterministic sample of every set's questions
    pool = [q for name in SETS for q in questions_of(name)]
    sample = random.Random(0).sample(pool, min(args.throughput_questions, len(pool)))
    answerer = Answerer(settings.replace(llm_base_url=""))
    t0 = time.perf_counter()
    rs = retrieve_all(retriever, sample, "hybrid", rescues=True, batch=batch)
    t_retrieve = time.perf_counter() - t0
    t0 = time.perf_counter()
    for a in range(0, len(rs), batch):
        part = rs[a:a + batch]
        ctx = contexts_for(part, expand_batch(settings.db_path, KB, part, settings), settings)
        answerer.answer_many([(r.question, c, "", False) for r, c in zip(part, ctx)])
    t_rest = time.perf_counter() - t0
    n = len(sample)
    print(f"\nthroughput on {chunks} chunks, {n} questions (all sets), batches of {batch}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}:")
    print(f"  retrieval (hybrid + rescues, no LLM):            {n / t_retrieve:7.1f} questions/s")
    print(f"  retrieval + context + extractive answer:         {n / (t_retrieve + t_rest):7.1f} questions/s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
