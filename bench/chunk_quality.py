"""Benchmark: chunk quality before and after the chunking passes, and the passes' speed.

    .venv/bin/python bench/chunk_quality.py [CORPUS...]   (default: ../shared/data/docs and the MinerU samples)

Every document is parsed once into a temporary home. "Before" lands the normalized MinerU items
with MinerU's own heading levels (what a naive pipeline stores); "after" lands the output of
`tasks.ingest.chunk.build_chunks`. Both go through the warehouse's `chunk_quality` view, printed per
document and in total. Then the passes (tables, headings, captions, post-processing, semantic
content) are timed over all documents in memory: chunks/s. Not part of CI: prints figures only.
"""
from __future__ import annotations

import copy
import os
from datetime import datetime, timezone
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

QUALITY_COLUMNS = ("total_chunks", "table_chunks", "image_chunks", "heading_only_chunks", "heading_only_share",
                   "fragments", "median_text_chars", "max_text_chars", "heading_chains", "longest_heading_chain")


def main(argv: list[str]) -> int:
    from schemas.chunk import assign_ids
    from schemas.ingest import Document
    from schemas.settings import load_settings
    from tasks.ingest.chunk import build_chunks, chunking_settings, structure
    from tasks.ingest.content_list import normalize_parsed
    from tasks.ingest.discover import discover
    from tasks.ingest.enrich import build_semantic_content
    from tasks.ingest.headings import assign_section_paths
    from schemas.chunk import chunks_path
    from tasks.ingest.land import write_chunks
    from tasks.ingest.parse import parse_source
    from tasks.ingest.postprocess import postprocess
    from warehouse import db
    from warehouse.chunks import chunk_quality, chunk_quality_totals

    shared = REPO.parent / "shared" / "data"
    corpora = [Path(a) for a in argv[1:]] or [shared / "docs", shared / "mineru_samples"]
    settings = load_settings(tempfile.mkdtemp(prefix="kbflow-bench-"))
    found = discover(corpora, settings)
    parsed = []
    for src in found.sources:
        try:
            parsed.append((src, parse_source(src, settings).parsed_dir))
        except Exception as exc:  # noqa: BLE001 - a bench reports and goes on
            print(f"skip {src.source}: {type(exc).__name__}")

    for src, folder in parsed:
        before = assign_section_paths(normalize_parsed(folder).chunks)
        after = build_chunks(folder, settings, kb="after", doc_md5=src.md5, source=src.source).chunks
        for kb, chunks in (("before", assign_ids(before, kb="before", doc_md5=src.md5, source=src.source)),
                           ("after", after)):
            path = write_chunks(chunks, chunks_path(settings.chunks_dir, kb, src.md5))
            doc = Document(kb=kb, doc_md5=src.md5, source=src.source, path=str(src.path), doc_type=src.doc_type,
                           size_bytes=src.size_bytes, parse_backend="bench", parser_version="", parsed_dir=str(folder),
                           chunks_path=str(path), chunk_count=len(chunks), items_total=0, dropped_empty=0,
                           dropped_furniture=0, dropped_ghost=0, parse_seconds=0.0, parse_cached=True, run_id="bench",
                           ingested_at=datetime.now(timezone.utc))
            db.replace_document(settings.db_path, doc, path)

    for kb in ("before", "after"):
        columns, rows = chunk_quality(settings.db_path, kb)
        shown = [columns.index(c) for c in ("source",) + QUALITY_COLUMNS]
        print(f"\nchunk_quality — {kb} the passes")
        print(" | ".join(("source",) + QUALITY_COLUMNS))
        for row in rows:
            print(" | ".join(str(row[i]) for i in shown))
    totals = chunk_quality_totals(settings.db_path)
    print("\ntotals: kb | chunks | heading-only (<20) | heading-only share of text chunks | fragments (<100) "
          "| heading chains | longest chain")
    for row in totals:
        print(" | ".join(str(v) for v in row))

    # Speed of the passes alone (parsing and I/O excluded): normalized items in, final chunks out.
    normalized = [normalize_parsed(folder) for _, folder in parsed]
    items = sum(len(n.chunks) for n in normalized)
    repeats = 5
    started = time.perf_counter()
    out = 0
    for _ in range(repeats):
        for n in copy.deepcopy(normalized):
            chunks = postprocess(structure(n, settings), chunking_settings(settings))
            out += len(build_semantic_content(chunks))
    seconds = time.perf_counter() - started
    print(f"\npasses: {len(parsed)} documents, {items} normalized items → {out // repeats} chunks; "
          f"{repeats * items / seconds:,.0f} items/s, {out / seconds:,.0f} output chunks/s "
          f"({seconds / repeats * 1000:.0f} ms per pass over the corpus)")
    return 0


if __name__ == "__main__":  # MinerU starts worker processes: keep the guard
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    sys.exit(main(sys.argv))
