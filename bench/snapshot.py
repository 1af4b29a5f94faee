"""Regression snapshot: what the pipeline makes of a corpus and a question set, as JSONL to diff.

    .venv/bin/python bench/snapshot.py chunks OUT.jsonl [CORPUS...]    (default: ../shared/data/docs + mineru_samples)
    .venv/bin/python bench/snapshot.py rankings OUT.jsonl --home DIR --kb NAME QUESTIONS.jsonl

`chunks`: discover → parse → build_chunks for every file that parses offline; one line per chunk
with its id and the SHA-256 of every field (so a refactor that changes nothing writes the same
file). `rankings`: the final ranking (chunk ids and scores) of every question for vector-only,
BM25-only, hybrid and hybrid + rescues on an existing KB. Compare two snapshots with `diff`.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
SHARED = REPO.parent / "shared" / "data"


def snapshot_chunks(out: Path, corpora: list[Path]) -> int:
    from schemas.settings import load_settings
    from tasks.ingest.chunk import build_chunks
    from tasks.ingest.discover import discover
    from tasks.ingest.parse import parse_source

    settings = load_settings(tempfile.mkdtemp(prefix="kbflow-snapshot-"))
    found = discover(corpora, settings)
    n = 0
    with out.open("w", encoding="utf-8") as fh:
        for src in sorted(found.sources, key=lambda s: s.source):
            try:
                parsed = parse_source(src, settings)
            except Exception as exc:  # noqa: BLE001 - recorded in the snapshot
                fh.write(json.dumps({"source": src.source, "error": type(exc).__name__}, ensure_ascii=False) + "\n")
                continue
            for chunk in build_chunks(parsed.parsed_dir, settings, kb="snap", doc_md5=src.md5,
                                      source=src.source).chunks:
                row = asdict(chunk)
                digest = hashlib.sha256(json.dumps(row, ensure_ascii=False, sort_keys=True).encode()).hexdigest()
                fh.write(json.dumps({"chunk_id": chunk.chunk_id, "sha256": digest[:16]}, ensure_ascii=False) + "\n")
                n += 1
    return n


def snapshot_rankings(out: Path, home: Path, kb: str, questions: Path) -> int:
    from schemas.settings import load_settings
    from tasks.qa.questions import read_questions
    from tasks.qa.retriever import Retriever

    settings = load_settings(home)
    retriever = Retriever(settings, kb)
    qs = read_questions(questions).questions
    n = 0
    with out.open("w", encoding="utf-8") as fh:
        for label, mode, rescues in (("vector", "vector", False), ("bm25", "bm25", False),
                                     ("hybrid", "hybrid", False), ("hybrid+rescues", "hybrid", True)):
            for a in range(0, len(qs), 32):
                batch = qs[a:a + 32]
                for q, r in zip(batch, retriever.retrieve_batch([q.question for q in batch], mode, rescues=rescues)):
                    fh.write(json.dumps({"config": label, "qid": q.qid,
                                         "ranked": [[c.chunk_id, round(c.score, 6)] for c in r.ranked]},
                                        ensure_ascii=False) + "\n")
                    n += 1
    return n


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("chunks")
    p.add_argument("out", type=Path)
    p.add_argument("corpora", nargs="*", type=Path)
    p = sub.add_parser("rankings")
    p.add_argument("out", type=Path)
    p.add_argument("questions", type=Path)
    p.add_argument("--home", type=Path, required=True)
    p.add_argument("--kb", required=True)
    args = parser.parse_args(argv)
    if args.what == "chunks":
        n = snapshot_chunks(args.out, args.corpora or [SHARED / "docs", SHARED / "mineru_samples"])
    else:
        n = snapshot_rankings(args.out, args.home.resolve(), args.kb, args.questions)
    print(f"{n} lines → {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
