"""Benchmark: batch-QA retrieval on a ~10k-chunk knowledge base built by kbflow's own `ingest` flow.

    .venv/bin/python bench/retrieval.py [--home DIR] [--build-only | --no-ingest] [--sample N]
                                        [--cache DIR] [--throughput-questions N] [--throughput-only]

Knowledge base `bench` (built once under --home, default /tmp/kbflow-bench; re-runs reuse it):
every passage of ../shared/data/qa — rgb_zh_refine_dev 7,337, drcd_dev 1,000, cmrc2018_trial 256,
xquad zh/en 240 each — one document per passage (`{set}/{pid}.txt`, `# title` Markdown where the
set has titles), plus the real documents of ../shared/data/docs that parse offline (Civil Code,
Constitution, reports, DOCX with headings, tables and images; English PDFs/DOCX) for long sectioned
documents with tables. Ingest is incremental: a re-run only checks the files. Prints:

1. per set (rgb's 81 questions; a deterministic sample of --sample questions of the others, every
   passage staying in the KB), recall channels computed once and cached under --cache (default
   HOME/fusion-cache) so fusion experiments never re-run retrieval;
2. the learned fusion's coefficients (a pairwise logistic regression) and the score fusion's
   parameters (a grid search), fitted leave-one-set-out (fitted on four sets, reported on the fifth;
   bench/fusion_fit.py) and on all five (the defaults' source), with the held-out figures of the
   cached channels alone (no filters, MMR or top-k);
3. per set, hit@1, hit@5, MRR@10 of the final ranking (filters, MMR, adaptive top-k, rescues when
   on) for vector-only, BM25-only, hybrid RRF, hybrid learned and score fusion with the settings in
   use and with the held-out fold's coefficients/parameters, both + rescues, and + rerank when a
   reranker is configured; whether each fusion is at least the best single channel on hit@1 and
   MRR@10;
4. whether hybrid + rescues gives the same rankings twice with real recall (rgb);
5. questions/s of retrieval without an LLM or reranker (recall → fusion → filters → MMR → adaptive
   top-k → rescues), and of retrieval + context + extractive answer, on a deterministic sample of
   every set's questions, in batches of `qa_batch_size`.
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
for path in (REPO, REPO / "bench"):  # kbflow, and bench/fusion_fit.py
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
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


def retrieve_all(retriever, questions, mode, *, rescues, batch, use_reranker=True):
    out = []
    for a in range(0, len(questions), batch):
        out.extend(retriever.retrieve_batch([q.question for q in questions[a:a + batch]], mode, rescues=rescues,
                                            use_reranker=use_reranker))
    return out


def sample_of(questions, n: int):
    """A deterministic sample of `n` questions, in the set's order (all when n = 0 or the set is smaller)."""
    if not n or len(questions) <= n:
        return questions
    keep = set(random.Random(0).sample(range(len(questions)), n))
    return [q for i, q in enumerate(questions) if i in keep]


def row(label: str, m: dict[str, float], extra: str = "") -> str:
    return f"  {label:<30}{m['hit@1']:>8.3f}{m.get('hit@5', float('nan')):>8.3f}{m['MRR@10']:>8.3f}  {extra}"


def params_text(p: dict) -> str:
    return (f"w_vec {p['fusion_vector_weight']:.1f} gain {p['fusion_gain']:.0f} "
            f"vec_scale {p['fusion_vector_scale']:.2f} bm25_scale {p['fusion_bm25_scale']:.2f}")


def coef_text(coef) -> str:
    return "(" + ", ".join(f"{c:.4f}" for c in coef) + ")"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, default=Path("/tmp/kbflow-bench"))
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--no-ingest", action="store_true", help="use the KB under --home as it is")
    parser.add_argument("--cache", type=Path, help="per-question channel results (default: HOME/fusion-cache)")
    parser.add_argument("--sample", type=int, default=400,
                        help="questions per set (a deterministic sample; 0 = all; every passage stays in the KB)")
    parser.add_argument("--throughput-questions", type=int, default=2000)
    parser.add_argument("--throughput-only", action="store_true",
                        help="only section 5 (questions/s): to alternate with another tree on the same KB")
    args = parser.parse_args(argv)

    from schemas.settings import load_settings

    home = args.home.resolve()
    settings = load_settings(home)
    if not args.no_ingest:
        build(home)  # incremental: unchanged files are skipped
    chunks = kb_size(settings)
    print(f"kb {KB!r} under {home}: {chunks} chunks; {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    if args.build_only:
        return 0

    import fusion_fit as ff

    from tasks.qa.retriever import Retriever
    from tasks.qa.types import BM25, VECTOR

    started = time.perf_counter()
    retriever = Retriever(settings, KB)
    retriever.embedder  # noqa: B018 - load the model before timing anything
    print(f"retriever loaded in {time.perf_counter() - started:.1f} s (embedding model {retriever.embedder.model_id})")
    batch = settings.runtime.qa_batch_size

    if args.throughput_only:
        return throughput(retriever, settings, args.throughput_questions, chunks)

    # 1. every set's recall channels, once (cached on disk)
    cache = (args.cache or home / "fusion-cache").resolve()
    cached = []
    for name in SETS:
        qs = questions_of(name)
        sample = sample_of(qs, 0 if name == "rgb_zh_refine_dev" else args.sample)
        t0 = time.perf_counter()
        cached.append(ff.cache_channels(retriever, name, sample, cache, batch))
        print(f"{name}: {len(sample)} of {len(qs)} questions, channels cached in {time.perf_counter() - t0:.0f} s "
              f"({cache})", flush=True)

    # 2. the learned and the score fusion fitted leave-one-set-out on the cached channels
    matrices = [ff.SetMatrix.of(cs) for cs in cached]
    t0 = time.perf_counter()
    loso = ff.leave_one_set_out(matrices)
    all_params, _ = ff.fit(matrices)
    all_coef = ff.fit_learned(matrices)
    print(f"\nfusions fitted on the cached channels ({time.perf_counter() - t0:.0f} s; score: {len(ff.grid())} grid "
          f"points; learned: pairwise logistic regression, C = {ff.LEARNED_C})")
    print(f"fitted on all five sets: learned {coef_text(all_coef)}")
    print(f"                         score   {params_text(all_params)}")
    defaults = {k: getattr(settings.retrieval, k) for k in ff.GRID}
    print(f"settings in use (defaults unless the home's kbflow.toml says otherwise): fusion "
          f"{settings.retrieval.fusion!r}, learned {coef_text(settings.retrieval.fusion_learned_coef)}, "
          f"score {params_text(defaults)}")
    for name, fold in loso.items():
        print(f"  fold without {name:<18} learned {coef_text(fold['coef'])}  score {params_text(fold['params'])}")
    print("\nheld out, cached channels only (no filters, MMR, top-k): hit@1 / MRR@10")
    print(f"  {'set':<20}{'vector':>14}{'BM25':>14}{'score LOSO':>14}{'learned LOSO':>14}{'blend LOSO':>14}")
    for m, fold in zip(matrices, loso.values()):
        cells = [*(m.metrics(m.channel_scores(ch)) for ch in (VECTOR, BM25)), fold["metrics"], fold["learned"],
                 fold["blend"]]
        print(f"  {m.name:<20}" + "".join(f"{c['hit@1']:.3f}/{c['MRR@10']:.3f}".rjust(14) for c in cells))

    # 3. the real pipeline after recall (filters, MMR, adaptive top-k, rescues), fed from the cache
    replay = ff.CachedRetriever(retriever, cached)
    blend, learned, score = {"fusion": "blend"}, {"fusion": "learned"}, {"fusion": "score"}
    # (label, mode, settings changed — or the fusion whose held-out fold's fit applies —, rescues)
    configs = [("vector-only", "vector", {}, False), ("BM25-only", "bm25", {}, False),
               ("hybrid RRF", "hybrid", {"fusion": "rrf"}, False),
               ("hybrid blend (settings)", "hybrid", blend, False),
               ("hybrid blend (LOSO)", "hybrid", "blend", False),
               ("hybrid blend + rescues", "hybrid", blend, True),
               ("hybrid learned (settings)", "hybrid", learned, False),
               ("hybrid learned (LOSO)", "hybrid", "learned", False),
               ("hybrid learned + rescues", "hybrid", learned, True),
               ("hybrid score (settings)", "hybrid", score, False),
               ("hybrid score (LOSO)", "hybrid", "score", False),
               ("hybrid score + rescues", "hybrid", score, True)]
    if replay.reranker is not None:
        configs.append(("hybrid blend + rerank", "hybrid", blend, False))
    print("\nper set: the final ranking (filters, MMR, adaptive top-k, rescues when on), recall replayed from "
          "the cache; LOSO = coefficients/parameters fitted on the other four sets; rerank rows only with a "
          "rerank_model")
    print(f"  {'pipeline':<30}{'hit@1':>8}{'hit@5':>8}{'MRR@10':>8}")
    verdicts: dict[str, list[bool]] = {"blend": [], "learned": [], "score": []}
    for cs, fold in zip(cached, loso.values()):
        print(f"{cs.name} ({len(cs.questions)} questions)")
        held_out = {"learned": {"fusion": "learned", "fusion_learned_coef": tuple(fold["coef"].tolist())},
                    "score": {"fusion": "score", **fold["params"]},
                    "blend": {"fusion": "blend", "fusion_learned_coef": tuple(fold["coef"].tolist()), **fold["params"]}}
        results = {}
        for label, mode, over, rescues in configs:
            replay.settings = settings.replace(**(held_out[over] if isinstance(over, str) else over))
            rs = retrieve_all(replay, cs.questions, mode, rescues=rescues, batch=batch,
                              use_reranker=label.endswith("rerank"))
            results[label] = metrics(cs.questions, rs)
        replay.settings = settings
        best = {k: max(results["vector-only"][k], results["BM25-only"][k]) for k in ("hit@1", "MRR@10")}
        for label, m in results.items():
            mark = ""
            if label.startswith(("hybrid score", "hybrid learned", "hybrid blend")):
                ok = all(m[k] >= best[k] - 1e-9 for k in best)
                mark = "≥ best channel" if ok else f"below best channel ({best['hit@1']:.3f} / {best['MRR@10']:.3f})"
                if label.endswith("(LOSO)"):
                    verdicts[label.split()[1]].append(ok)
            print(row(label, m, mark), flush=True)
    print()
    for fusion, oks in verdicts.items():
        print(f"LOSO {fusion} fusion ≥ the best single channel (hit@1 and MRR@10) on {sum(oks)} of {len(oks)} sets")

    # 4. run-to-run determinism of hybrid + rescues with real recall (rgb, twice)
    rgb = cached[0].questions
    runs = [retrieve_all(retriever, rgb, "hybrid", rescues=True, batch=batch) for _ in range(2)]
    differ = sum([(c.chunk_id, c.score) for c in a.ranked] != [(c.chunk_id, c.score) for c in b.ranked]
                 for a, b in zip(*runs))
    print(f"\nhybrid + rescues on rgb_zh_refine_dev twice with real recall: {differ} of {len(rgb)} rankings differ")

    # 5. throughput on a deterministic sample of every set's questions, real recall, no reranker
    return throughput(retriever, settings, args.throughput_questions, chunks)


def throughput(retriever, settings, questions: int, chunks: int) -> int:
    """Section 5: questions/s of retrieval, and of retrieval + context + extractive answer."""
    from tasks.qa.answer import Answerer
    from tasks.qa.context import contexts_for, expand_batch

    batch = settings.runtime.qa_batch_size
    pool = [q for name in SETS for q in questions_of(name)]
    sample = random.Random(0).sample(pool, min(questions, len(pool)))
    answerer = Answerer(settings.replace(llm_base_url=""), encoder=lambda: retriever.embedder)
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    rs = retrieve_all(retriever, sample, "hybrid", rescues=True, batch=batch, use_reranker=False)
    t_retrieve = time.perf_counter() - t0
    t0 = time.perf_counter()
    for a in range(0, len(rs), batch):
        part = rs[a:a + batch]
        ctx = contexts_for(part, expand_batch(settings.db_path, KB, part, settings), settings)
        answerer.answer_many([(r.question, c, "", False) for r, c in zip(part, ctx)])
    t_rest = time.perf_counter() - t0
    n = len(sample)
    print(f"\nthroughput on {chunks} chunks, {n} questions (all sets), batches of {batch}, fusion "
          f"{settings.retrieval.fusion!r}, {os.cpu_count()} cores, load average {load_before:.1f} → "
          f"{os.getloadavg()[0]:.1f}:")
    print(f"  retrieval (hybrid + rescues, no LLM, no reranker): {n / t_retrieve:7.1f} questions/s")
    print(f"  retrieval + context + extractive answer:           {n / (t_retrieve + t_rest):7.1f} questions/s")
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
