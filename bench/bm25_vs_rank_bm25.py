"""Benchmark: kbflow's BM25 (tasks/index/bm25.py: bm25s scores + sparse batched retrieval) against
rank_bm25's BM25Okapi, on the same ~20k chunks and the same questions, in one run.

    .venv/bin/python bench/bm25_vs_rank_bm25.py [--questions N] [--modes]

Corpus: every passage of ../shared/data/qa (rgb_zh_refine_dev 7,337 + drcd_dev 1,000 +
cmrc2018_trial 256 + xquad zh/en 240 each) cut into 200-char windows with an 88-char stride
(≈ 20k chunks). A question hits when a chunk of one of its gold passages is in the top 10.
rank_bm25 scores a question in ~0.1 s here, so both systems answer the same deterministic sample
of questions (--questions, default 1,500, spread over the sets); ours also answers all of them.
--modes also compares jieba's cut modes (hit@10, MRR@10 of ours per mode): the reason for the mode
`tokenize` uses (search mode, no HMM).
Not part of CI: prints figures only.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

QA = REPO.parent / "shared" / "data" / "qa"
SETS = ("rgb_zh_refine_dev", "drcd_dev", "cmrc2018_trial", "xquad/zh", "xquad/en")
WINDOW, STRIDE, K = 200, 88, 10


@dataclass
class Bench:
    chunk_ids: list[str]
    texts: list[str]
    chunk_pid: list[str]
    questions: list[tuple[str, str, set[str]]]  # (set, question, gold pids)


def windows(text: str) -> list[str]:
    if len(text) <= WINDOW:
        return [text]
    starts = range(0, len(text) - WINDOW + STRIDE, STRIDE)
    return [text[s:s + WINDOW] for s in starts]


def load(qa: Path = QA) -> Bench:
    ids, texts, pids, questions = [], [], [], []
    for name in SETS:
        tag = name.replace("/", "_")
        for line in (qa / name / "corpus.jsonl").open(encoding="utf-8"):
            row = json.loads(line)
            pid = f"{tag}:{row['pid']}"
            for i, w in enumerate(windows(row["text"])):
                ids.append(f"{pid}_{i}")
                texts.append(w)
                pids.append(pid)
        for line in (qa / name / "queries.jsonl").open(encoding="utf-8"):
            row = json.loads(line)
            questions.append((name, row["question"], {f"{tag}:{p}" for p in row["gold_pids"]}))
    return Bench(ids, texts, pids, questions)


def sample(questions: list, n: int) -> list:
    """Deterministic, spread over the sets in proportion (every rgb question: there are only 81)."""
    by_set = defaultdict(list)
    for q in questions:
        by_set[q[0]].append(q)
    if n >= len(questions):
        return list(questions)
    rng = random.Random(0)
    out = list(by_set.pop("rgb_zh_refine_dev", []))
    budget, rest = n - len(out), sum(len(v) for v in by_set.values())
    for qs in by_set.values():
        out += rng.sample(qs, max(1, round(budget * len(qs) / rest)))
    return out


def hit_at_k(ranked: list[list[int]], golds: list[set[str]], chunk_pid: list[str]) -> float:
    hits = sum(any(chunk_pid[d] in gold for d in docs[:K]) for docs, gold in zip(ranked, golds))
    return hits / max(1, len(golds))


def fmt_rate(x: float) -> str:
    return f"{x:,.0f}"


def mrr_at_k(ranked: list[list[int]], golds: list[set[str]], chunk_pid: list[str]) -> float:
    total = 0.0
    for docs, gold in zip(ranked, golds):
        rank = next((r for r, d in enumerate(docs[:K], 1) if chunk_pid[d] in gold), None)
        total += 1 / rank if rank else 0.0
    return total / max(1, len(golds))


def compare_modes(bench: Bench, pos: dict[str, int]) -> None:
    """hit@10 / MRR@10 of ours with each jieba cut mode (same normalization and filtering)."""
    from tasks.common import text as bm25_text
    from tasks.common.text import tokenize
    from tasks.index.bm25 import BM25Index

    cuts = {
        "search, no HMM (ours)": lambda tok, t: tok.cut_for_search(t, HMM=False),
        "search + HMM": lambda tok, t: tok.cut_for_search(t),
        "precise, no HMM": lambda tok, t: tok.cut(t, HMM=False),
        "precise + HMM": lambda tok, t: tok.cut(t),
        "full": lambda tok, t: tok.cut(t, cut_all=True),
    }
    tok = bm25_text._jieba(None)

    def terms(cut, text: str) -> list[str]:
        return bm25_text._terms(bm25_text._pieces(bm25_text._normalize(text), lambda part: cut(tok, part)))

    ours = cuts["search, no HMM (ours)"]
    assert all(terms(ours, t) == tokenize(t) for t in bench.texts[:200]), "bench mode drifted from tokenize()"
    golds = [g for _, _, g in bench.questions]
    print(f"\njieba mode (ours, all {len(golds):,} questions)   hit@{K}  MRR@{K}  rgb hit/MRR  corpus tokenize")
    for name, cut in cuts.items():
        t0 = time.perf_counter()
        toks = [terms(cut, t) for t in bench.texts]
        dt = time.perf_counter() - t0
        hits = BM25Index.build(bench.chunk_ids, toks).search([terms(cut, q) for _, q, _ in bench.questions], K)
        ranked = [[pos[c] for c, _ in h] for h in hits]
        rgb = [i for i, (s, _, _) in enumerate(bench.questions) if s == "rgb_zh_refine_dev"]
        rgb_r, rgb_g = [ranked[i] for i in rgb], [golds[i] for i in rgb]
        print(f"  {name:38}{hit_at_k(ranked, golds, bench.chunk_pid):7.4f}{mrr_at_k(ranked, golds, bench.chunk_pid):8.4f}"
              f"  {hit_at_k(rgb_r, rgb_g, bench.chunk_pid):.3f}/{mrr_at_k(rgb_r, rgb_g, bench.chunk_pid):.3f}"
              f"  {dt:5.1f} s ({sum(map(len, toks)) / len(toks):.0f} terms/chunk)", flush=True)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=1500)
    ap.add_argument("--modes", action="store_true", help="also compare jieba cut modes by hit@10")
    args = ap.parse_args(argv)

    import rank_bm25

    from tasks.index import bm25 as bm25_index
    from tasks.common.text import tokenize, tokenize_many
    from tasks.index.bm25 import BM25Index

    if not QA.exists():
        print(f"shared data not found: {QA}")
        return 2
    bench = load()
    tokenize("预热")  # load jieba's dictionary outside the timings
    n_chars = sum(len(t) for t in bench.texts)
    print(f"corpus: {len(bench.texts):,} chunks ({n_chars:,} chars) from {len(set(bench.chunk_pid)):,} passages; "
          f"{len(bench.questions):,} questions")

    t0 = time.perf_counter()
    tokens = tokenize_many(bench.texts)
    t_tok = time.perf_counter() - t0
    n_tokens = sum(len(t) for t in tokens)
    print(f"tokenize (jieba search mode, no HMM): {t_tok:.1f} s, {fmt_rate(n_tokens / t_tok)} terms/s, "
          f"{fmt_rate(n_chars / t_tok)} chars/s, {n_tokens / len(tokens):.1f} terms/chunk")

    t0 = time.perf_counter()
    ours = BM25Index.build(bench.chunk_ids, tokens)
    t_build_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    okapi = rank_bm25.BM25Okapi(tokens, k1=1.5, b=0.75)
    t_build_ref = time.perf_counter() - t0

    # rebuilding from landed Parquet (what deleting/replacing a document costs)
    import pyarrow as pa
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        step = 1000
        for i in range(0, len(tokens), step):  # ~1k-chunk "documents"
            path = Path(tmp) / f"doc{i // step:03d}.parquet"
            pq.write_table(pa.table({"chunk_id": bench.chunk_ids[i:i + step], "tokens": tokens[i:i + step],
                                     "content": bench.texts[i:i + step]}), path)
            paths.append(path)
        t0 = time.perf_counter()
        rebuilt = bm25_index.index_for_kb(paths)
        t_rebuild = time.perf_counter() - t0
        t0 = time.perf_counter()
        rebuilt.save(Path(tmp) / "bm25")
        t_save = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in (Path(tmp) / "bm25").rglob("*") if p.is_file())
        t0 = time.perf_counter()
        BM25Index.load(Path(tmp) / "bm25")
        t_load = time.perf_counter() - t0

    qs = sample(bench.questions, args.questions)
    golds = [g for _, _, g in qs]
    t0 = time.perf_counter()
    q_tokens = tokenize_many([q for _, q, _ in qs])
    t_qtok = time.perf_counter() - t0
    pos = {c: i for i, c in enumerate(bench.chunk_ids)}

    t0 = time.perf_counter()
    ours_hits = ours.search(q_tokens, K)
    t_ours = time.perf_counter() - t0
    ours_ranked = [[pos[c] for c, _ in hits] for hits in ours_hits]

    t0 = time.perf_counter()
    ref_ranked, ref_scores = [], []
    for q in q_tokens:
        scores = okapi.get_scores(q)
        ref_ranked.append(np.argsort(scores)[::-1][:K].tolist())
        ref_scores.append(scores)
    t_ref = time.perf_counter() - t0

    t0 = time.perf_counter()
    for q in q_tokens:
        ours.search([q], K)
    t_single = time.perf_counter() - t0

    # bm25s's own retrieve (per-query np.add.at loop; numba is not installed) on the same scores
    import bm25s

    ret = bm25s.BM25(k1=1.5, b=0.75, method=BM25Index.METHOD, idf_method=BM25Index.IDF_METHOD)
    ret.index(tokens, show_progress=False)
    t0 = time.perf_counter()
    ret.retrieve(q_tokens, k=K, show_progress=False)
    t_bm25s = time.perf_counter() - t0

    all_tokens = tokenize_many([q for _, q, _ in bench.questions])
    t0 = time.perf_counter()
    all_hits = ours.search(all_tokens, K)
    t_all = time.perf_counter() - t0
    all_hit = hit_at_k([[pos[c] for c, _ in h] for h in all_hits], [g for _, _, g in bench.questions],
                       bench.chunk_pid)

    # parity on the sample: same top-1, same top-10 set, Spearman of the full score vectors
    from scipy.stats import spearmanr

    same_top1 = same_top10 = same_top10_ties = 0
    rhos, max_rel = [], 0.0
    for q, mine, ref, ref_s in zip(q_tokens, ours_ranked, ref_ranked, ref_scores):
        if not mine:
            continue
        same_top1 += mine[0] == ref[0] or np.isclose(ref_s[mine[0]], ref_s[ref[0]], rtol=1e-5)
        same_top10 += set(mine) == set(ref[:len(mine)])
        # equal up to ties: the same score at every rank (chunks with equal scores may swap)
        same_top10_ties += np.allclose(ref_s[mine], ref_s[ref[:len(mine)]], rtol=1e-5)
        mine_full = np.zeros(len(bench.chunk_ids))
        for c, s in ours.search([q], len(bench.chunk_ids))[0]:
            mine_full[pos[c]] = s
        nz = (mine_full > 0) | (ref_s > 0)
        rhos.append(spearmanr(mine_full[nz], ref_s[nz]).statistic if nz.sum() > 2 else 1.0)
        scale = np.abs(ref_s[nz]).max()
        max_rel = max(max_rel, float(np.abs(mine_full[nz] - ref_s[nz]).max() / scale))
    n_q = sum(1 for m in ours_ranked if m)

    nq = len(qs)
    rows = [
        ("index build (s)", f"{t_build_ours:.2f}", f"{t_build_ref:.2f}"),
        ("latency / query (ms)", f"{1000 * t_ours / nq:.3f}", f"{1000 * t_ref / nq:.2f}"),
        ("queries / s", fmt_rate(nq / t_ours), fmt_rate(nq / t_ref)),
        (f"hit@{K} ({nq} questions)", f"{hit_at_k(ours_ranked, golds, bench.chunk_pid):.4f}",
         f"{hit_at_k(ref_ranked, golds, bench.chunk_pid):.4f}"),
    ]
    print()
    print(f"{'':28}{'kbflow (bm25s)':>18}{'rank_bm25 Okapi':>18}")
    for name, a, b in rows:
        print(f"{name:28}{a:>18}{b:>18}")
    print(f"speed ratio (search): {t_ref / t_ours:,.0f}x   (bm25s.retrieve, same scores: "
          f"{1000 * t_bm25s / nq:.3f} ms/query, {t_bm25s / t_ours:.1f}x slower than ours)")
    print(f"ours one query per call (no batching): {1000 * t_single / nq:.3f} ms/query, "
          f"{t_ref / t_single:,.0f}x faster than rank_bm25")
    print(f"query tokenization: {1000 * t_qtok / nq:.3f} ms/question (not in the latencies above)")
    print(f"all {len(bench.questions):,} questions, ours: {1000 * t_all / len(bench.questions):.3f} ms/query, "
          f"hit@{K} {all_hit:.4f}")
    per_set = defaultdict(list)
    for (name, _, gold), h in zip(bench.questions, all_hits):
        per_set[name].append((h, gold))
    print("  per set: " + ", ".join(
        f"{name} {hit_at_k([[pos[c] for c, _ in h] for h, _ in v], [g for _, g in v], bench.chunk_pid):.3f}"
        for name, v in per_set.items()))
    print(f"parity on {n_q} questions with hits: same top-1 {same_top1 / n_q:.2%}, identical top-{K} set "
          f"{same_top10 / n_q:.2%} ({same_top10_ties / n_q:.2%} up to tied scores), Spearman rho median {np.median(rhos):.4f} / min {min(rhos):.4f}, "
          f"max |score diff| / max score {max_rel:.2e}")
    print(f"rebuild from {len(paths)} Parquet files (chunk_id+tokens only): {t_rebuild:.2f} s; "
          f"save {t_save:.2f} s, load {t_load:.2f} s, {size / 1e6:.1f} MB on disk")

    if args.modes:
        compare_modes(bench, pos)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
