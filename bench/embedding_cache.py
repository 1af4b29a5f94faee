"""Benchmark: the on-disk embedding cache (warehouse/embedding_cache.py) at scale.

    .venv/bin/python bench/embedding_cache.py [N]

Stores N random 384-d vectors (default 20,000) in transactions of 1,000 (as `embed_texts` stores one
embedding batch at a time), then looks all of them up in one `get_many` call (as a re-ingest of an
unchanged corpus does). Prints vectors/s for both and the load average; the former timed test
(`put < 10 s, get < 3 s` for 20,000) is the target printed as met or not. Not part of CI.
"""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

PUT_TARGET_S, GET_TARGET_S = 10.0, 3.0  # for 20,000 vectors


def main(argv: list[str]) -> int:
    from warehouse.embedding_cache import EmbeddingCache

    n = int(argv[1]) if len(argv) > 1 else 20_000
    keys = [hashlib.sha256(f"chunk {i}".encode()).digest() for i in range(n)]
    vectors = np.random.default_rng(0).standard_normal((n, 384)).astype(np.float32)
    with tempfile.TemporaryDirectory(prefix="kbflow-cache-bench-") as work, \
            EmbeddingCache(Path(work) / "embeddings", "bench@0") as cache:
        started = time.perf_counter()
        for a in range(0, n, 1000):
            cache.put_many(list(zip(keys[a:a + 1000], vectors[a:a + 1000])), kind="passage")
        put_s = time.perf_counter() - started
        started = time.perf_counter()
        found = cache.get_many(keys, dim=384, kind="passage")
        get_s = time.perf_counter() - started
        assert len(found) == n
    scale = n / 20_000
    print(f"{n} vectors: put {put_s:.2f} s ({n / put_s:,.0f}/s), get {get_s:.2f} s ({n / get_s:,.0f}/s); "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"target (put < {PUT_TARGET_S * scale:.1f} s, get < {GET_TARGET_S * scale:.1f} s): "
          f"{'met' if put_s < PUT_TARGET_S * scale and get_s < GET_TARGET_S * scale else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
