"""Benchmark: Chroma add rate through kbflow's upsert path, on N chunks (default 20,000).

    .venv/bin/python bench/chroma_add.py [N]

Chunks are built from ../shared/data/qa passages (real text and metadata sizes); the vectors are
random unit vectors of the default model's dimension (384), so the figure is Chroma's write rate,
not the embedding rate (see bench/embed_speed.py). Prints chunks/s for the whole upsert (batches
of 4,000) and the time of an id listing used by `kbflow check`.
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def main(argv: list[str]) -> int:
    from schemas.chunk import Chunk, assign_ids
    from schemas.settings import load_settings
    from tasks.index import vector_index

    n = int(argv[1]) if len(argv) > 1 else 20000
    texts: list[str] = []
    for corpus in sorted((REPO.parent / "shared" / "data" / "qa").rglob("corpus.jsonl")):
        for line in corpus.read_text(encoding="utf-8").splitlines():
            text = json.loads(line)["text"]
            texts.extend(text[i:i + 200] for i in range(0, len(text), 200))
    texts = (texts * (n // max(len(texts), 1) + 1))[:n]
    chunks = assign_ids([Chunk(t, "text", section_path="第一章 > 1.1", semantic_content=t) for t in texts],
                        kb="bench", doc_md5="0" * 32, source="bench.md")
    vectors = np.random.default_rng(0).normal(size=(n, 384)).astype("float32")
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    settings = load_settings(tempfile.mkdtemp(prefix="kbflow-chroma-"))
    col = vector_index.collection(settings, "bench")
    started = time.perf_counter()
    vector_index.upsert_document(col, "bench", chunks, vectors, source="bench.md")
    seconds = time.perf_counter() - started
    started = time.perf_counter()
    ids = vector_index.all_ids(col)
    listing = time.perf_counter() - started
    print(f"Chroma upsert: {n} chunks in {seconds:.1f} s = {n / seconds:,.0f} chunks/s "
          f"(PersistentClient, 384-d, seed §3.2 metadata); id listing of {len(ids)} ids: {listing:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
