"""Benchmark: `kbflow eval` on a knowledge base built from one ../shared/data/qa set.

    .venv/bin/python bench/eval_kb.py ../shared/data/qa/cmrc2018_trial [--home DIR] [--kb NAME]
                                      [--no-ablate] [--out FILE]

Writes one document per passage of the set's `corpus.jsonl` (`{pid}.md` holding `# title` + text,
or `{pid}.txt` when the set has no titles — as the cmrc_kb test fixture does, so a question's
`gold_pids` are the file stems), ingests them with kbflow's own `ingest` flow (incremental: a re-run
only checks the files), then runs `kbflow eval` on the set's `queries.jsonl` (with --ablate unless
--no-ablate) and prints its table. Default home: /tmp/kbflow-eval-SET.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


def write_passages(set_dir: Path, corpus: Path) -> int:
    """One file per passage; an existing file with the same text is left alone (keeps its mtime)."""
    corpus.mkdir(parents=True, exist_ok=True)
    n = 0
    with (set_dir / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row.get("title"):
                path, text = corpus / f"{row['pid']}.md", f"# {row['title']}\n\n{row['text']}\n"
            else:
                path, text = corpus / f"{row['pid']}.txt", row["text"] + "\n"
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
            n += 1
    return n


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("set_dir", type=Path, help="a folder with corpus.jsonl and queries.jsonl")
    parser.add_argument("--home", type=Path, help="default: /tmp/kbflow-eval-SET")
    parser.add_argument("--kb", help="knowledge-base name (default: the set's folder name)")
    parser.add_argument("--no-ablate", action="store_true", help="only the default pipeline")
    parser.add_argument("--out", help="also write the metrics to this .json or .csv file")
    args = parser.parse_args(argv)

    from flows.cli import main as kbflow
    from flows.ingest import ingest

    set_dir = args.set_dir.resolve()
    name = set_dir.name
    home = (args.home or Path(f"/tmp/kbflow-eval-{name}")).resolve()
    kb = args.kb or name
    files = write_passages(set_dir, home / "corpus")
    print(f"ingesting {files} passages of {name} into kb {kb!r} under {home} …", flush=True)
    started = time.perf_counter()
    summary = ingest(paths=[str(home / "corpus")], kb=kb, home=str(home))
    print(f"ingest: {summary.added} added, {summary.changed} changed, {summary.skipped} unchanged, "
          f"{summary.failed} failed; {summary.index.chunks} chunks indexed in {time.perf_counter() - started:.0f} s",
          flush=True)

    started = time.perf_counter()
    eval_args = ["--home", str(home), "eval", str(set_dir / "queries.jsonl"), "--kb", kb]
    eval_args += [] if args.no_ablate else ["--ablate"]
    eval_args += ["--out", args.out] if args.out else []
    code = kbflow(eval_args)
    print(f"eval: {time.perf_counter() - started:.0f} s on {os.cpu_count()} cores", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
