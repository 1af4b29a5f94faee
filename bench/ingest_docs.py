"""Benchmark: ingest every file of a corpus into a fresh home, twice.

    .venv/bin/python bench/ingest_docs.py [CORPUS]     (default: ../shared/data/docs beside the repo)

The first run parses every file (empty home); the second, on the same home, skips every unchanged
file (manifest) — bench/reingest.py measures that alone. Prints one row per file (source, status, parse seconds, chunks, failure
reason), each run's wall time and the ratio. Not part of CI: it prints figures, asserts nothing.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")  # before prefect is imported

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(REPO))


def _short(reason: str, width: int = 60) -> str:
    reason = " ".join(reason.split())
    return reason if len(reason) <= width else reason[:width - 1] + "…"


def _table(outcomes) -> str:
    header = ("source", "status", "parse_s", "cached", "chunks", "reason")
    rows = [(o.source, o.status, f"{o.parse_seconds:.2f}" if o.status == "landed" else "",
             "yes" if o.parse_cached else "", str(o.chunks), _short(o.reason))
            for o in outcomes]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    lines = []
    for r in [header, *rows]:
        lines.append("  ".join(v.ljust(w) if i in (0, 1) else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths)))
                     + "  " + r[-1])
    lines.insert(1, "-" * max(len(line) for line in lines))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    corpus = Path(argv[1]) if len(argv) > 1 else REPO.parent / "shared" / "data" / "docs"
    corpus = corpus.resolve()
    if not corpus.exists():
        print(f"corpus not found: {corpus}", file=sys.stderr)
        return 2
    files = sorted(p for p in corpus.rglob("*") if p.is_file())
    from flows.ingest import ingest  # imports prefect

    with tempfile.TemporaryDirectory(prefix="kbflow-bench-") as tmp:
        home = str(Path(tmp) / "home")
        print(f"corpus: {corpus} ({len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB)")
        print(f"home:   {home} (fresh)\n")

        t0 = time.perf_counter()
        first = ingest(paths=[str(corpus)], kb="bench", home=home)
        wall1 = time.perf_counter() - t0
        print(f"run 1 (every file parsed): {first.landed} landed, {first.failed} failed or rejected")
        print(_table(first.outcomes))
        for o in first.outcomes:
            if o.status != "landed":
                print(f"  {o.source}: {o.reason}")
        parse_total = sum(o.parse_seconds for o in first.outcomes)
        print(f"\nrun 1 wall time: {wall1:.1f} s (sum of parse seconds {parse_total:.1f} s, "
              f"{sum(o.chunks for o in first.outcomes)} chunks)\n")

        t0 = time.perf_counter()
        second = ingest(paths=[str(corpus)], kb="bench", home=home)
        wall2 = time.perf_counter() - t0
        cached = sum(o.parse_cached for o in second.outcomes)
        print(f"run 2 (same home): {second.landed} landed, {second.skipped} unchanged (skipped, not parsed), "
              f"{second.failed} failed or rejected, {cached} parses reused")
        # an unchanged file is skipped on the re-run (manifest): "skipped" stands for "landed" here
        def same(o) -> tuple:
            return (o.source, "landed" if o.status == "skipped" else o.status, o.chunks)
        changed = [(a.source, a.status, a.chunks, b.status, b.chunks) for a, b in
                   zip(sorted(first.outcomes, key=lambda o: o.source), sorted(second.outcomes, key=lambda o: o.source))
                   if same(a) != same(b)]
        if changed or len(first.outcomes) != len(second.outcomes):
            print("outcomes differing between the runs:", changed or "(different file counts)")
        print(f"run 2 wall time: {wall2:.1f} s; run 2 / run 1 = {wall2 / wall1:.3f} "
              f"({wall1 / wall2:.1f}x faster)")
    return 0


if __name__ == "__main__":  # MinerU spawns worker processes: nothing may run on import
    sys.exit(main(sys.argv))
