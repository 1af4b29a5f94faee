"""Benchmark: first ingest of a corpus vs re-ingest of the same, unchanged corpus, in one process.

    .venv/bin/python bench/reingest.py [CORPUS] [--runner default|dask] [--home DIR]

Run 1 ingests every file into a fresh home (parse, chunk, land, embed, index); run 2, on the same
home with nothing changed, should skip every file by the manifest (path + MD5 + settings): no
parse, no chunking, no embedding, no Chroma or BM25 write. Both runs are flow runs against the
same Prefect server (the temporary one, started once before run 1), so server start-up is in
neither figure. Prints each run's wall time and counts, and the ratio. Not part of CI.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")  # before prefect is imported

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(REPO))


def _line(label: str, summary, seconds: float) -> str:
    idx = summary.index
    return (f"{label}: {seconds:7.1f} s  | {summary.added} added, {summary.changed} changed, "
            f"{summary.skipped} unchanged (skipped), {summary.removed} removed, {summary.failed} failed or "
            f"rejected | parsed {sum(o.status == 'landed' and not o.parse_cached for o in summary.outcomes)}, "
            f"embedded {idx.embedded}, upserted {idx.chunks} chunks, BM25 {'rebuilt' if idx.bm25_rebuilt else 'kept'}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", default=str(REPO.parent / "shared" / "data" / "docs"))
    parser.add_argument("--runner", choices=("default", "dask"), default="default")
    parser.add_argument("--home", help="home to use (default: a fresh temporary one)")
    args = parser.parse_args(argv[1:])
    corpus = Path(args.corpus).resolve()
    if not corpus.exists():
        print(f"corpus not found: {corpus}", file=sys.stderr)
        return 2
    files = sorted(p for p in corpus.rglob("*") if p.is_file())

    from prefect.client.orchestration import get_client

    from flows.ingest import ingest

    with tempfile.TemporaryDirectory(prefix="kbflow-bench-") as tmp:
        home = args.home or str(Path(tmp) / "home")
        print(f"corpus: {corpus} ({len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB)")
        print(f"home:   {home}; task runner: {args.runner}; {os.cpu_count()} CPU cores")
        with get_client(sync_client=True) as client:  # start the temporary server before timing anything
            client.hello()

        t0 = time.perf_counter()
        first = ingest(paths=[str(corpus)], kb="bench", home=home, runner=args.runner)
        wall1 = time.perf_counter() - t0
        t0 = time.perf_counter()
        second = ingest(paths=[str(corpus)], kb="bench", home=home, runner=args.runner)
        wall2 = time.perf_counter() - t0

        print(_line("first ingest     ", first, wall1))
        print(_line("unchanged re-run ", second, wall2))
        print(f"re-ingest / first ingest = {wall2 / wall1:.3f} ({wall1 / wall2:.1f}x faster); "
              f"{first.index.chunks} chunks in the KB")
        if second.landed or second.removed or second.skipped != first.landed:
            print("UNEXPECTED: the unchanged re-run did more than skip the landed files", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":  # MinerU spawns worker processes: nothing may run on import
    sys.exit(main(sys.argv))
