"""Benchmark: the BM25 rebuild of a knowledge base (`tasks.index.sync.rebuild_bm25`: DuckDB → index
→ save) at 10,000 and 50,000 chunks — build time and peak memory, each size in a fresh process.

    .venv/bin/python bench/bm25_build.py [--sizes 10000,50000] [--tmp DIR] [--code DIR]

Chunks: the passages of ../shared/data/qa (rgb_zh_refine_dev, drcd_dev, cmrc2018_trial), one chunk
per small file, tokenized once with kbflow's tokenizer; beyond the 8,593 distinct passages they
repeat with the copy number as one more term, so the vocabulary keeps growing. Each size's
warehouse is landed once under --tmp (default /tmp/kbflow-bm25-build) and reused.

Per size: seconds; peak RSS of the process (ru_maxrss) and its growth over the RSS just before the
rebuild (imports excluded); tracemalloc's peak in a second run (tracing slows Python, so it is not
timed); then the ratio of the largest size to the smallest. `--code DIR`: import kbflow from another
checkout (e.g. `git archive` of the commit before a change) to compare versions on the same data.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KBFLOW_SHARED_DATA", REPO.parent / "shared" / "data"))
QA_SETS = ("rgb_zh_refine_dev", "drcd_dev", "cmrc2018_trial")
KB = "bench"
CHUNKS_PER_FILE = 5000  # Parquet files landed in one statement


def passage_terms(tmp: Path) -> tuple[list[str], list[list[str]]]:
    """(text, terms) of every passage, tokenized once and cached."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cache = tmp / "terms.parquet"
    if not cache.exists():
        from tasks.common.text import tokenize_many

        texts = []
        for name in QA_SETS:
            with (SHARED / "qa" / name / "corpus.jsonl").open(encoding="utf-8") as f:
                texts += [json.loads(line)["text"] for line in f]
        pq.write_table(pa.table({"text": texts, "tokens": tokenize_many(texts)}), cache)
    table = pq.read_table(cache)
    return table.column("text").to_pylist(), table.column("tokens").to_pylist()


def land_warehouse(tmp: Path, size: int) -> Path:
    """A home whose warehouse holds `size` one-chunk documents of kb `bench`."""
    from schemas.arrow import to_table
    from schemas.chunk import Chunk
    from schemas.settings import load_settings
    import pyarrow.parquet as pq
    from warehouse import db

    home = tmp / f"home-{size}"
    if (home / ".complete").exists():
        return home
    texts, terms = passage_terms(tmp)
    settings = load_settings(home)
    folder = home / "bench-chunks"
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for start in range(0, size, CHUNKS_PER_FILE):
        chunks = []
        for i in range(start, min(size, start + CHUNKS_PER_FILE)):
            copy, p = divmod(i, len(texts))
            tokens = terms[p] + [f"副本{copy}"] if copy else terms[p]
            chunks.append(Chunk(content=texts[p], chunk_type="text", semantic_content=texts[p], tokens=tokens,
                                source=f"p{i:06d}.md", chunk_index=0, chunk_id=f"p{i:06d}.md_0", kb=KB))
        files.append(folder / f"{start:06d}.parquet")
        pq.write_table(to_table(chunks, Chunk), files[-1])
    db.insert_chunk_files(settings.db_path, files)
    (home / ".complete").touch()
    return home


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def child(home: Path, trace: bool) -> None:
    """One rebuild in this (fresh) process; prints its figures as JSON."""
    import tracemalloc

    import bm25s  # noqa: F401  imported before the baseline: not part of the rebuild's memory
    import duckdb  # noqa: F401
    import tasks.index.bm25  # noqa: F401
    from schemas.settings import load_settings
    from tasks.index.sync import rebuild_bm25

    settings = load_settings(home)
    before = _rss_mb()
    if trace:
        tracemalloc.start()
    t0 = time.perf_counter()
    chunks = rebuild_bm25(settings, KB)
    seconds = time.perf_counter() - t0
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    traced = tracemalloc.get_traced_memory()[1] / 2**20 if trace else None
    print(json.dumps({"chunks": chunks, "seconds": seconds, "peak_rss_mb": peak_rss,
                      "rss_growth_mb": peak_rss - before, "tracemalloc_peak_mb": traced}))


def run(code: Path, home: Path, trace: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code)}
    args = [sys.executable, __file__, "--child", str(home)] + (["--trace"] if trace else [])
    out = subprocess.run(args, env=env, cwd=code, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,50000")
    parser.add_argument("--tmp", type=Path, default=Path("/tmp/kbflow-bm25-build"))
    parser.add_argument("--code", type=Path, default=REPO, help="the kbflow checkout to measure")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.trace)
        return
    sys.path.insert(0, str(REPO))  # landing uses this checkout's schemas and warehouse
    args.tmp.mkdir(parents=True, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    results = {}
    print(f"code: {args.code}")
    print(f"{'chunks':>8} {'seconds':>8} {'peak RSS MB':>12} {'RSS growth MB':>14} {'tracemalloc MB':>15}")
    for size in sizes:
        home = land_warehouse(args.tmp, size)
        timed, traced = run(args.code, home, False), run(args.code, home, True)
        results[size] = {**timed, "tracemalloc_peak_mb": traced["tracemalloc_peak_mb"]}
        r = results[size]
        print(f"{r['chunks']:>8,} {r['seconds']:>8.2f} {r['peak_rss_mb']:>12.0f} {r['rss_growth_mb']:>14.0f} "
              f"{r['tracemalloc_peak_mb']:>15.0f}")
    small, large = results[min(sizes)], results[max(sizes)]
    print(f"ratio {max(sizes)}/{min(sizes)}: " + ", ".join(
        f"{key} {large[key] / small[key]:.2f}×" for key in ("seconds", "peak_rss_mb", "rss_growth_mb",
                                                             "tracemalloc_peak_mb")))


if __name__ == "__main__":
    main()
