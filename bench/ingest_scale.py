"""Benchmark: ingest at corpus scale — synthetic corpora of many small files, and the real documents.

    .venv/bin/python bench/ingest_scale.py [--sizes 1000,10000,50000] [--docs] [--parquet] [--tmp DIR]
                                           [--no-embed | --ingest-only] [--keep]

Per corpus, each in a fresh process (so peak RSS is its own) and a fresh home:
- first ingest (the `ingest` flow, in-process, the temporary Prefect server started before timing):
  total wall time, and files/s (chunks/s for embed) of each stage from its progress tracker
  (the stages overlap: each rate is over that stage's own span);
- embedding-only: the same chunk texts encoded again in the same process by a fresh embedder
  in the stage's own variant (`embedding_precision`), without the cache — the floor the ingest
  aims at — and total / embedding-only;
- peak RSS of the flow process and of its largest worker process;
- unchanged re-ingest: `kbflow ingest` of the same corpus as a new process (Python and Prefect
  start-up included), which must skip every file.

Synthetic corpora: the passages of ../shared/data/qa (rgb_zh_refine_dev, drcd_dev, cmrc2018_trial),
one per file, alternately .md (with the title as heading) and .txt, repeated with a numbered
suffix beyond the 8,593 distinct passages so that every file is distinct; written once under
--tmp (default /tmp/kbflow-scale) and reused. `--docs`: ../shared/data/docs as it is.

`--parquet`: chunk Parquet per document vs per batch at both ends — writing, landing them in
DuckDB, and the index stage reading them back (BM25, `kbflow check` and the re-ingest plan read
DuckDB and the documents table, not the Parquet files). Not part of CI.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")  # before prefect is imported
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")  # a loaded machine

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("KBFLOW_SHARED_DATA", REPO.parent / "shared" / "data"))  # ../shared/data
QA_SETS = ("rgb_zh_refine_dev", "drcd_dev", "cmrc2018_trial")


def passages() -> list[tuple[str, str]]:
    found = []
    for name in QA_SETS:
        with (SHARED / "qa" / name / "corpus.jsonl").open(encoding="utf-8") as f:
            found += [(row.get("title", ""), row["text"]) for row in map(json.loads, f)]
    return found


def synthetic_corpus(root: Path, files: int) -> Path:
    folder = root / f"corpus-{files}"
    if (folder / ".complete").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    texts = passages()
    for i in range(files):
        title, text = texts[i % len(texts)]
        if i >= len(texts):
            text += f"\n\n（第{i // len(texts) + 1}份副本，编号{i}）"
        sub = folder / f"{i // 1000:03d}"
        sub.mkdir(parents=True, exist_ok=True)
        if i % 2:
            (sub / f"p{i:06d}.txt").write_text(text + "\n", encoding="utf-8")
        else:
            (sub / f"p{i:06d}.md").write_text(f"# {title or '段落'}\n\n{text}\n", encoding="utf-8")
    (folder / ".complete").touch()
    return folder


def _rss_mb(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # KiB on Linux


def run_one(corpus: Path, home: Path, embed: bool = True, floor: bool = True) -> dict:
    """Ingest `corpus` into `home` in this process; then (`floor`) embedding-only and the unchanged re-ingest."""
    import pyarrow.parquet as pq
    from prefect.client.orchestration import get_client

    from flows.ingest import ingest
    from schemas.errors import IndexIncompleteError
    from schemas.settings import load_settings
    from tasks.common.progress import listening
    from tasks.index.embed import Embedder, embed_texts
    from warehouse import db

    with get_client(sync_client=True) as client:  # the temporary server starts before timing
        client.hello()
    updates = []
    started = time.perf_counter()
    with listening(updates.append):
        try:
            summary = ingest(paths=[str(corpus)], kb="scale", home=str(home))
        except IndexIncompleteError as exc:  # --no-embed: landed, not indexed (the run says so)
            summary = exc.summary
    total = time.perf_counter() - started
    # a stage's span ends when it reached its final count (its tracker is closed later, with the run)
    final = {u.stage: u.done for u in updates if u.finished}
    stages = {}
    for u in updates:
        if u.stage in final and u.stage not in stages and u.done == final[u.stage]:
            stages[u.stage] = (u.done, u.elapsed_s)

    result = {"files": len(summary.outcomes), "landed": summary.landed, "failed": summary.failed,
              "chunks": summary.index.chunks, "total_s": total, "stages": stages,
              "rss_flow_mb": _rss_mb(resource.RUSAGE_SELF), "rss_worker_mb": _rss_mb(resource.RUSAGE_CHILDREN)}
    # (measured before the re-ingest below starts a process of its own)
    if not (embed and floor):
        return result
    settings = load_settings(home)
    texts = []
    for _, path in db.landed_documents(settings.db_path, "scale").values():
        table = pq.read_table(path, columns=["semantic_content", "content"]).to_pydict()
        texts += [s or c for s, c in zip(table["semantic_content"], table["content"])]
    embedder = Embedder.from_settings(settings)  # the variant the index stage used (bf16 on AMX)
    embed_texts(texts[:64], embedder, None, batch_size=settings.runtime.embedding_batch_size)  # warm
    t0 = time.perf_counter()
    embed_texts(texts, embedder, None, batch_size=settings.runtime.embedding_batch_size)
    embed_only = time.perf_counter() - t0

    noop = prefect_noop_s()
    t0 = time.perf_counter()
    again = subprocess.run([sys.executable, "-m", "flows.cli", "--home", str(home), "ingest", str(corpus),
                            "--kb", "scale"], cwd=REPO, capture_output=True, text=True)
    reingest = time.perf_counter() - t0
    skipped_all = again.returncode == 0 and f"0 added, 0 changed, {summary.landed} unchanged" in " ".join(
        again.stdout.split())
    return {**result, "embed_only_s": embed_only, "reingest_s": reingest, "reingest_skipped_all": skipped_all,
            "prefect_noop_s": noop}


def prefect_noop_s() -> float:
    """Wall time of a flow that does nothing, in a new process (Python, Prefect and its temporary
    server starting): the floor of any `kbflow ingest`, measured beside the unchanged re-ingest."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from prefect import flow; flow(name='noop')(lambda: None)()"],
                   capture_output=True)
    return time.perf_counter() - t0


def report(label: str, r: dict) -> None:
    rates = ", ".join(f"{stage} {done / max(s, 1e-9):.1f}/s" for stage, (done, s) in r["stages"].items())
    if "embed_only_s" not in r:
        print(f"{label}, {'ingest only' if r['chunks'] else 'no embedding'}: {r['files']} files ({r['landed']} landed, {r['failed']} failed) | total "
              f"{r['total_s']:.1f} s | {rates} | peak RSS flow {r['rss_flow_mb']:.0f} MB, worker "
              f"{r['rss_worker_mb']:.0f} MB", flush=True)
        return
    print(f"{label}: {r['files']} files ({r['landed']} landed, {r['failed']} failed), {r['chunks']} chunks | "
          f"total {r['total_s']:.1f} s, embedding-only {r['embed_only_s']:.1f} s, ratio "
          f"{r['total_s'] / max(r['embed_only_s'], 1e-9):.2f} | {rates} | peak RSS flow {r['rss_flow_mb']:.0f} MB, "
          f"worker {r['rss_worker_mb']:.0f} MB | unchanged re-ingest {r['reingest_s']:.1f} s (a no-op Prefect flow: "
          f"{r.get('prefect_noop_s', 0):.1f} s)"
          f"{'' if r['reingest_skipped_all'] else ' (DID NOT SKIP EVERY FILE)'}", flush=True)


def parquet_per_document_vs_batch(n_docs: int = 2000, batch: int = 256) -> None:
    """Per-document vs per-batch chunk Parquet: write, land (one INSERT from the files), read back."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from schemas.arrow import from_table, to_table
    from schemas.chunk import Chunk, assign_ids
    from tasks.common.files import write_parquet
    from tasks.index.sync import read_chunks
    from tasks.ingest.land import write_chunks
    from warehouse import db

    texts = [t for _, t in passages()[:n_docs]]
    tables = [to_table(assign_ids([Chunk(content=t, chunk_type="text", semantic_content=t, tokens=list(t[:50]))],
                                  kb="kb", doc_md5=f"{i:032x}", source=f"d{i}.md"), Chunk) for i, t in enumerate(texts)]
    with tempfile.TemporaryDirectory(prefix="kbflow-parquet-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        [write_parquet(t, root / "zstd" / f"{i}.parquet") for i, t in enumerate(tables)]
        write_zstd = time.perf_counter() - t0
        t0 = time.perf_counter()
        per_doc = [write_chunks(from_table(t, Chunk), root / "doc" / f"{i}.parquet") for i, t in enumerate(tables)]
        write_doc = time.perf_counter() - t0
        t0 = time.perf_counter()
        per_batch = [write_parquet(pa.concat_tables(tables[i:i + batch]), root / "batch" / f"{i}.parquet")
                     for i in range(0, len(tables), batch)]
        write_batch = time.perf_counter() - t0
        lands = {}
        for name, files in (("doc", per_doc), ("batch", per_batch)):
            t0 = time.perf_counter()
            for i in range(0, n_docs, batch):  # one transaction per landing batch, as the flow does
                db.insert_chunk_files(root / f"{name}.duckdb", files[i:i + batch] if name == "doc" else
                                      [files[i // batch]])
            lands[name] = time.perf_counter() - t0
        t0 = time.perf_counter()
        for p in per_doc:
            read_chunks(p)
        read_doc = time.perf_counter() - t0
        t0 = time.perf_counter()
        for p in per_batch:  # a batch file is read once for all its documents
            read_chunks(p)
        read_batch = time.perf_counter() - t0
        size_doc = sum(p.stat().st_size for p in per_doc)
        size_batch = sum(p.stat().st_size for p in per_batch)
        pq.read_table(per_batch[0])
    print(f"parquet, {n_docs} one-chunk documents, batches of {batch}: per document vs per batch (x = doc / batch)")
    print(f"  write {write_doc:.2f} s (zstd as before: {write_zstd:.2f} s) vs {write_batch:.2f} s ({write_doc / write_batch:.1f}x, in the worker processes) | "
          f"land {lands['doc']:.2f} s vs {lands['batch']:.2f} s ({lands['doc'] / lands['batch']:.1f}x) | "
          f"index read {read_doc:.2f} s vs {read_batch:.2f} s ({read_doc / read_batch:.1f}x) | "
          f"{size_doc / 1e6:.1f} MB vs {size_batch / 1e6:.1f} MB; per file: write "
          f"{1000 * (write_doc - write_batch) / n_docs:.2f} ms, land {1000 * (lands['doc'] - lands['batch']) / n_docs:.2f} ms, "
          f"read {1000 * (read_doc - read_batch) / n_docs:.2f} ms", flush=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="synthetic corpus sizes (files), comma-separated")
    parser.add_argument("--docs", action="store_true", help="also ingest ../shared/data/docs")
    parser.add_argument("--parquet", action="store_true", help="per-document vs per-batch Parquet")
    parser.add_argument("--tmp", default="/tmp/kbflow-scale", help="where corpora and homes are written")
    parser.add_argument("--no-embed", action="store_true",
                        help="no embedding model (the index stage fails at once): the other stages' files/s and "
                             "peak RSS alone, at sizes whose embedding would take hours here")
    parser.add_argument("--ingest-only", action="store_true",
                        help="the ingest alone (files/s, peak RSS): no embedding-only pass, no re-ingest")
    parser.add_argument("--keep", action="store_true", help="keep each corpus's home (e.g. to re-time the "
                        "unchanged re-ingest later: `kbflow --home HOME ingest CORPUS --kb scale`)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: corpus to ingest in this process
    parser.add_argument("--home", help=argparse.SUPPRESS)
    args = parser.parse_args(argv[1:])
    if args.one:
        print("RESULT " + json.dumps(run_one(Path(args.one), Path(args.home), embed=not args.no_embed,
                                                  floor=not args.ingest_only)), flush=True)
        return 0
    print(f"{os.cpu_count()} CPU cores; load average {os.getloadavg()[0]:.1f} at start", flush=True)
    if args.parquet:
        parquet_per_document_vs_batch()
    root = Path(args.tmp)
    if args.no_embed:
        os.environ["KBFLOW_EMBEDDING_MODEL"] = str(root / "no-such-model")
    elif not os.environ.get("KBFLOW_EMBEDDING_MODEL"):  # one converted model for every fresh home
        from tasks.index.e5_convert import ensure_converted

        os.environ["KBFLOW_EMBEDDING_MODEL"] = str(ensure_converted(root / "models"))
    corpora = [(f"{n} files", synthetic_corpus(root, n)) for n in map(int, filter(None, args.sizes.split(",")))]
    if args.docs:
        corpora.append(("shared docs", SHARED / "docs"))
    for label, corpus in corpora:
        home = root / f"home-{corpus.name}"
        shutil.rmtree(home, ignore_errors=True)
        done = subprocess.run([sys.executable, __file__, "--one", str(corpus), "--home", str(home),
                               *(["--no-embed"] if args.no_embed else []),
                               *(["--ingest-only"] if args.ingest_only else [])], cwd=REPO, capture_output=True, text=True)
        lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        if done.returncode or not lines:
            print(f"{label}: FAILED (rc {done.returncode})\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
            return 1
        report(f"{label} (load {os.getloadavg()[0]:.1f})", json.loads(lines[-1][len("RESULT "):]))
        if args.keep:
            print(f"  home kept: {home}", flush=True)
        else:
            shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":  # the worker processes are spawned: nothing may run on import
    sys.exit(main(sys.argv))
