"""Benchmark: ingestion throughput per stage, each against a baseline measured in the same run.

    .venv/bin/python bench/ingest_stages.py [--corpus DIR] [--parse-rounds N] [--rounds N]

Corpus (default ../shared/data/docs beside the repo): every file MinerU parses (PDF, DOCX);
files it cannot parse offline (the two scanned PDFs need OCR models) are listed with their reason
and left out of every figure. Everything is written into a fresh temporary home, enrichment off
(no LLM endpoint). Stages, in pipeline order, each with kbflow's own function and its baseline:

- parse: `tasks.ingest.parse.parse_source` (MinerU flash in-process, content lists v1/v2, markdown,
  middle json, manifest, atomic swap) vs MinerU's own `mineru.parser.parse` + `ParseResult.save`
  (its result package) on the same file; each side parses every file --parse-rounds times
  (default 3; ours into a fresh home each time) and its fastest time counts, so one-time costs and
  bursts of load from other work drop out; the sides alternate which goes first.
- chunk: the ingest flow's chunk task (normalize → structure → post-processing passes → images →
  semantic content → jieba tokens → ids → Parquet) vs `normalize_parsed` alone (reading the
  content list), in items of the content list per second.
- DuckDB land: the land task (`db.replace_document`, one transaction per document, with its
  documents and manifest rows) into a fresh warehouse vs one bulk
  `INSERT INTO chunks … FROM read_parquet([every file])` into another fresh one (chunks only).
- embed: `embed_texts` per document with a cold cache (hashing, SQLite lookups and writes) vs raw
  `SentenceTransformer.encode` of the same texts with the same prompt and batch size, interleaved
  per document; then `embed_texts` again with the warm cache vs the cold run.
- Chroma add: `vector_index.upsert_document` per document (metadata, upsert, prune query) vs a raw
  `collection.add(ids, embeddings, documents)` of the same vectors, no metadata, no prune; each
  into a fresh collection of the same configuration, interleaved per document.
- BM25 build: `index.rebuild_bm25` (tokens read from the landed Parquet, bm25s scores, atomic
  save) vs `rank_bm25.BM25Okapi` over the same tokens already in memory (needs the `test` extra);
  and `BM25Index.build` alone on those tokens, the like-for-like figure.

The fast stages (chunk, land, Chroma, BM25) run --rounds times (default 3), alternating which side
goes first; their figures are totals over the rounds. The ratio is ours / baseline in throughput
(1.0 = no overhead, 0.5 = ours takes twice as long). 5-10 minutes on 2 shared cores, most of it
the two cold embedding passes. Not part of CI: prints figures only.
"""
from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")  # before prefect is imported

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(REPO))

KB = "bench"


@dataclass
class StageFigure:
    stage: str
    amount: float  # units of work done by each side
    unit: str  # what `amount` counts: "pages", "chunks", …
    ours_s: float
    baseline: str
    baseline_s: float

    @property
    def ratio(self) -> float:
        return self.baseline_s / self.ours_s  # = our throughput / the baseline's


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    # a full collection first: a call pays for its own garbage only; otherwise a gen-2 pause
    # (0.1 s and more in this heap) lands on whichever side happens to trip it
    gc.collect()
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def alternate(calls: dict[str, Callable[[], Any]], totals: dict[str, float], *, swap: bool) -> dict[str, Any]:
    """Call every side once, in reverse order every other time so that drift in machine load hits
    all alike; add each side's seconds to `totals`; return each side's result."""
    results = {}
    for side in (list(calls)[::-1] if swap else list(calls)):
        results[side], seconds = timed(calls[side])
        totals[side] = totals.get(side, 0.0) + seconds
    return results


def caught(fn: Callable[[], Any]) -> Callable[[], Any]:
    """`fn`, returning its exception instead of raising it."""
    def call() -> Any:
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - a file that cannot be parsed here is reported, not fatal
            return exc
    return call


def pdf_pages(path: Path) -> int:
    import pypdfium2

    pdf = pypdfium2.PdfDocument(str(path))
    try:
        return len(pdf)
    finally:
        pdf.close()


def mineru_parse_and_save(path: Path, out: Path, tier: str, mineru_home: Path) -> None:
    """MinerU's own way to parse a file and write its result package (in the same offline
    environment as ours)."""
    from tasks.ingest.parse.mineru_local import mineru_environment

    with mineru_environment(mineru_home):
        from mineru.parser import parse
        from mineru.parser.writer import FileBasedDataWriter

        parse(path, tier=tier).save(FileBasedDataWriter(str(out)))


def land_each(docs, kb: str, run_id: str, settings) -> None:
    """The ingest flow's land task, document by document."""
    from flows.ingest import land_task

    for src, parsed, landed in docs:
        land_task.fn(src, parsed, landed, kb, run_id, settings)


def reason_of(exc: Exception) -> str:
    from schemas.errors import KbflowError

    text = exc.reason if isinstance(exc, KbflowError) else f"{type(exc).__name__}: {exc}"
    text = " ".join(text.split())
    return text if len(text) <= 90 else text[:89] + "…"


def print_table(header: tuple[str, ...], rows: list[tuple[str, ...]], left: set[int]) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(v.ljust(w) if i in left else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths)))
             for r in [header, *rows]]
    lines.insert(1, "-" * max(len(line) for line in lines))
    print("\n".join(lines))


# ------------------------------------------------------------------------------------------------
# stages


def bench_parse(sources, settings, work: Path, rounds: int) -> tuple[list, list[StageFigure]]:
    """Returns [(src, parsed)] of the files parsed, and the parse figures. Each file is parsed
    `rounds` times by each side (ours into a fresh home each round, so never from its cache); the
    fastest round counts, so one-time costs (imports, fonts, encoders, render workers) and bursts
    of load from other work drop out."""
    from tasks.ingest.parse import parse_source
    parsed: dict[str, object] = {}
    best: dict[tuple[str, str], float] = {}
    failed: dict[str, str] = {}
    for r in range(rounds):
        round_settings = settings.replace(home=work / f"parse-{r}")
        for i, src in enumerate([s for s in sources if s.source not in failed]):
            seconds: dict[str, float] = {}
            out = alternate({"ours": caught(partial(parse_source, src, round_settings)),
                             "mineru": caught(partial(mineru_parse_and_save, src.path, work / f"mineru-{r}" / src.md5[:12],
                                                      settings.ingest.mineru_tier, settings.mineru_home))},
                            seconds, swap=(i + r) % 2 == 1)
            errors = [out[side] for side in ("ours", "mineru") if isinstance(out[side], Exception)]
            if errors:  # ours first: its message says what to do
                failed[src.source] = reason_of(errors[0])
                continue
            parsed[src.source] = out["ours"]
            for side, took in seconds.items():
                best[side, src.source] = min(took, best.get((side, src.source), took))

    done = [s for s in sources if s.source not in failed]
    pages = {s.source: pdf_pages(s.path) for s in done if s.path.suffix.lower() == ".pdf"}
    rows = [(s.source, str(pages[s.source]) if s.source in pages else "-", f"{s.size_bytes / 1e6:.2f}",
             f"{best['ours', s.source]:.2f}", f"{best['mineru', s.source]:.2f}",
             f"{best['mineru', s.source] / best['ours', s.source]:.3f}") for s in done]
    print(f"parse, per file (MinerU tier {settings.ingest.mineru_tier!r}; fastest of {rounds} rounds per side; "
          "ratio = MinerU's own / ours in seconds, 1.0 = no overhead):")
    print_table(("file", "pages", "MB", "ours_s", "mineru_s", "ratio"), rows, left={0})
    for source, reason in failed.items():
        print(f"  not parsed, left out: {source}: {reason}")

    def total(side: str, only_pdfs: bool = False) -> float:
        return sum(best[side, s.source] for s in done if not only_pdfs or s.source in pages)

    baseline = "mineru parse + ParseResult.save"
    figures = [StageFigure("parse, all files", sum(s.size_bytes for s in done) / 1e6, "MB", total("ours"),
                           baseline, total("mineru")),
               StageFigure("parse, PDFs only", sum(pages.values()), "pages", total("ours", True), baseline,
                           total("mineru", True))]
    return [(s, parsed[s.source]) for s in done], figures


def bench_chunk(parsed_docs, settings, rounds: int) -> tuple[list, StageFigure]:
    """Returns [(src, parsed, landed_chunks)] and the chunk figure."""
    from flows.ingest import chunk_task
    from tasks.common.text import tokenize
    from tasks.ingest.content_list import normalize_parsed

    tokenize("预热")  # load jieba's dictionary outside the timings
    landed: dict[str, object] = {}
    seconds: dict[str, float] = {}
    for r in range(rounds):
        for i, (src, parsed) in enumerate(parsed_docs):
            out = alternate({"ours": partial(chunk_task.fn, src, parsed, KB, settings),
                             "normalize": partial(normalize_parsed, parsed.parsed_dir,
                                                  keep_furniture=settings.ingest.keep_furniture)},
                            seconds, swap=(i + r) % 2 == 1)
            landed[src.md5] = out["ours"]
    docs = [(src, parsed, landed[src.md5]) for src, parsed in parsed_docs]
    items = sum(c.items_total for _, _, c in docs)
    calls = sum(c.enrich_calls for _, _, c in docs)
    print(f"chunk: {sum(c.chunk_count for _, _, c in docs)} chunks from {items} content-list items "
          f"in {len(docs)} documents; {calls} enrichment calls (offline)")
    return docs, StageFigure("chunk", items * rounds, "items", seconds["ours"], "normalize_parsed only",
                             seconds["normalize"])


def bench_land(docs, settings, work: Path, rounds: int) -> tuple[object, StageFigure]:
    """Returns the settings of a home whose warehouse holds every document, and the land figure."""
    from warehouse import db
    from warehouse.chunks import count_chunks

    paths = [c.chunks_path for _, _, c in docs]
    n_chunks = sum(c.chunk_count for _, _, c in docs)
    seconds: dict[str, float] = {}
    land_settings = settings
    for r in range(rounds):
        land_settings = settings.replace(home=work / f"land-{r}")  # a fresh warehouse per round
        bulk_db = work / f"bulk-{r}.duckdb"
        alternate({"ours": partial(land_each, docs, KB, uuid.uuid4().hex, land_settings),
                   "bulk": partial(db.insert_chunk_files, bulk_db, paths)}, seconds, swap=r % 2 == 1)
        ours_rows, bulk_rows = count_chunks(land_settings.db_path), count_chunks(bulk_db)
        if ours_rows != n_chunks or bulk_rows != n_chunks:
            raise SystemExit(f"land: expected {n_chunks} rows, ours {ours_rows}, bulk {bulk_rows}")
    return land_settings, StageFigure("DuckDB land", n_chunks * rounds, "chunks", seconds["ours"],
                                      "one bulk INSERT from Parquet", seconds["bulk"])


def bench_embed(doc_chunks, settings) -> tuple[list, list[StageFigure]]:
    """Returns the vectors per document and the embed figures (cold vs raw, warm vs cold)."""
    import numpy as np

    from tasks.index.embed import Embedder, embed_texts, resolve_model
    from tasks.index.views import embedding_text
    from warehouse.embedding_cache import EmbeddingCache

    started = time.perf_counter()
    embedder = Embedder(resolve_model(settings), batch_size=settings.runtime.embedding_batch_size)
    print(f"embed: model {embedder.model_id} converted and loaded in {time.perf_counter() - started:.1f} s "
          f"(untimed); passage prompt {embedder.passage_prompt!r}, batch size {settings.runtime.embedding_batch_size}")
    embedder.model.encode(["预热"] * 4, show_progress_bar=False)  # first-call allocations, outside the cache
    cache = EmbeddingCache.for_settings(settings, embedder.model_id)
    batch_size = settings.runtime.embedding_batch_size
    texts = [[embedding_text(c) for c in chunks] for _, chunks in doc_chunks]
    n = sum(map(len, texts))

    vectors: list[np.ndarray] = []
    cold: dict[str, float] = {}
    max_diff = 0.0
    for i, part in enumerate(texts):
        out = alternate({"ours": partial(embed_texts, part, embedder, cache, batch_size=batch_size),
                         "raw": partial(embedder.model.encode, part, prompt=embedder.passage_prompt,
                                        batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
                                        show_progress_bar=False)},
                        cold, swap=i % 2 == 1)
        vectors.append(out["ours"])
        max_diff = max(max_diff, float(np.abs(out["ours"] - out["raw"]).max()))
    encoded_cold = embedder.encoded

    warm_s = 0.0
    for part, expected in zip(texts, vectors):
        again, took = timed(partial(embed_texts, part, embedder, cache, batch_size=batch_size))
        warm_s += took
        assert np.array_equal(again, expected)
    print(f"embed: {n} texts, {encoded_cold} encoded cold (the rest are duplicates), "
          f"{embedder.encoded - encoded_cold} encoded warm; max |ours - raw| {max_diff:.1e}")
    return vectors, [StageFigure("embed, cold cache", n, "texts", cold["ours"], "SentenceTransformer.encode",
                                 cold["raw"]),
                     StageFigure("embed, warm cache", n, "texts", warm_s, "embed_texts, cold cache",
                                 cold["ours"])]


def bench_chroma(doc_chunks, vectors, settings, rounds: int) -> StageFigure:
    from tasks.index import vector_index

    seconds: dict[str, float] = {}
    for r in range(rounds):
        ours_col = vector_index.collection(settings, f"{KB}-{r}")  # fresh collections, same configuration
        raw_col = vector_index.collection(settings, f"raw-{r}")
        for i, ((source, chunks), vecs) in enumerate(zip(doc_chunks, vectors)):
            alternate({"ours": partial(vector_index.upsert_document, ours_col, KB, chunks, vecs, source=source),
                       "raw": partial(raw_col.add, ids=[c.chunk_id for c in chunks], embeddings=vecs,
                                      documents=[c.semantic_content for c in chunks])},
                      seconds, swap=(i + r) % 2 == 1)
        if ours_col.count() != raw_col.count():
            raise SystemExit(f"Chroma: ours holds {ours_col.count()} ids, the raw collection {raw_col.count()}")
    n = sum(len(chunks) for _, chunks in doc_chunks) * rounds
    return StageFigure("Chroma add", n, "chunks", seconds["ours"], "collection.add, no metadata", seconds["raw"])


def bench_bm25(doc_chunks, land_settings, rounds: int) -> list[StageFigure]:
    import rank_bm25

    from tasks.index.bm25 import BM25Index
    from tasks.index.sync import rebuild_bm25

    chunk_ids = [c.chunk_id for _, chunks in doc_chunks for c in chunks]
    tokens = [c.tokens for _, chunks in doc_chunks for c in chunks]
    seconds: dict[str, float] = {}
    for r in range(rounds):
        alternate({"rebuild": partial(rebuild_bm25, land_settings, KB),
                   "build": partial(BM25Index.build, chunk_ids, tokens),
                   "okapi": partial(rank_bm25.BM25Okapi, tokens, k1=1.5, b=0.75)}, seconds, swap=r % 2 == 1)
    n = len(tokens) * rounds
    baseline = "rank_bm25.BM25Okapi, in memory"
    return [StageFigure("BM25 rebuild", n, "chunks", seconds["rebuild"], baseline, seconds["okapi"]),
            StageFigure("  of which index only", n, "chunks", seconds["build"], baseline, seconds["okapi"])]


# ------------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "data" / "docs")
    parser.add_argument("--parse-rounds", type=int, default=3, help="parses of each file per side (fastest counts)")
    parser.add_argument("--rounds", type=int, default=3, help="repetitions of the fast stages")
    args = parser.parse_args(argv)
    corpus = args.corpus.resolve()
    if not corpus.exists():
        print(f"corpus not found: {corpus}", file=sys.stderr)
        return 2

    from schemas.settings import load_settings
    from tasks.ingest.discover import discover
    from tasks.index.sync import read_chunks

    work = Path(tempfile.mkdtemp(prefix="kbflow-stages-"))
    try:
        settings = load_settings(work / "home", llm_base_url="")  # enrichment off: no endpoint
        found = discover([str(corpus)], settings)
        sources = [s for s in found.sources if s.kind == "mineru"]
        skipped = len(found.sources) - len(sources)
        print(f"corpus: {corpus}: {len(sources)} files for MinerU ({sum(s.size_bytes for s in sources) / 1e6:.1f} MB); "
              f"{skipped} Markdown/text files and {len(found.rejected)} rejected left out")
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; rounds of the fast stages: "
              f"{args.rounds}\n")

        parsed_docs, figures = bench_parse(sources, settings, work, args.parse_rounds)
        docs, chunk_figure = bench_chunk(parsed_docs, settings, args.rounds)
        land_settings, land_figure = bench_land(docs, settings, work, args.rounds)
        doc_chunks = [(src.source, read_chunks(landed.chunks_path)) for src, _, landed in docs]
        vectors, embed_figures = bench_embed(doc_chunks, settings)
        figures += [chunk_figure, land_figure, *embed_figures,
                    bench_chroma(doc_chunks, vectors, settings, args.rounds),
                    *bench_bm25(doc_chunks, land_settings, args.rounds)]

        print(f"\nper stage (ratio = our throughput / the baseline's; load average now {os.getloadavg()[0]:.2f}):")
        rows = [(f.stage, f"{f.amount:,.0f} {f.unit}" if f.amount >= 100 else f"{f.amount:.1f} {f.unit}",
                 f"{f.ours_s:.3f}", f"{f.amount / f.ours_s:,.1f}", f.baseline, f"{f.baseline_s:.3f}",
                 f"{f.amount / f.baseline_s:,.1f}", f"{f.ratio:.3f}")
                for f in figures]
        print_table(("stage", "work", "ours_s", "ours/s", "baseline", "base_s", "base/s", "ratio"), rows,
                    left={0, 4})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":  # MinerU spawns worker processes: nothing may run on import
    sys.exit(main(sys.argv[1:]))
