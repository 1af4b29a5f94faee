"""The on-disk embedding cache (warehouse/embedding_cache.py): a SQLite table keyed by (model, kind, text hash)."""
from __future__ import annotations

import hashlib
import time

import numpy as np
import pytest

from schemas.settings import Settings
from warehouse.embedding_cache import CACHE_FILE, EmbeddingCache


def key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def vec(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def test_round_trip_per_model_and_kind(tmp_path):
    with EmbeddingCache(tmp_path / "embeddings", "m@1") as cache:
        cache.put_many([(key("a"), vec(1, 0)), (key("b"), vec(0, 1))], kind="passage")
        cache.put_many([(key("a"), vec(0.5, 0.5))], kind="query")
        cache.put_many([(key("a"), vec(9, 9))], kind="passage", model_id="other@1")
        found = cache.get_many([key("a"), key("b"), key("a"), key("c")], dim=2, kind="passage")
        assert sorted(found) == sorted([key("a"), key("b")])  # duplicates asked once, misses left out
        np.testing.assert_array_equal(found[key("a")], vec(1, 0))
        np.testing.assert_array_equal(cache.get_many([key("a")], dim=2, kind="query")[key("a")], vec(0.5, 0.5))
        assert (cache.count(), cache.count("other@1")) == (3, 1)
    assert (tmp_path / "embeddings" / CACHE_FILE).is_file()
    with EmbeddingCache(tmp_path / "embeddings") as unbound:  # persisted; unbound calls name the model
        assert len(unbound) == 4
        with pytest.raises(ValueError, match="no model_id"):
            unbound.get_many([key("a")], dim=2, kind="passage")


def test_a_vector_of_another_dimension_is_a_miss_then_replaced(tmp_path):
    with EmbeddingCache(tmp_path / "embeddings", "m@1") as cache:
        cache.put_many([(key("a"), vec(1, 0, 0))], kind="passage")
        assert cache.get_many([key("a")], dim=2, kind="passage") == {}
        cache.put_many([(key("a"), vec(0, 1))], kind="passage")
        np.testing.assert_array_equal(cache.get_many([key("a")], dim=2, kind="passage")[key("a")], vec(0, 1))
        assert cache.count() == 1


def test_for_settings_lives_under_the_cache_dir(tmp_path):
    settings = Settings(home=tmp_path)
    with EmbeddingCache.for_settings(settings, "m@1") as cache:
        assert cache.path == settings.cache_dir / "embeddings" / CACHE_FILE and cache.model_id == "m@1"


def test_cache_lookups_scale(tmp_path):
    cache = EmbeddingCache(tmp_path / "embeddings", "m@1")
    keys = [key(f"chunk {i}") for i in range(20_000)]
    vectors = np.random.default_rng(0).standard_normal((len(keys), 384)).astype(np.float32)
    started = time.perf_counter()
    for a in range(0, len(keys), 1000):
        cache.put_many(list(zip(keys[a:a + 1000], vectors[a:a + 1000])), kind="passage")
    put_s = time.perf_counter() - started
    started = time.perf_counter()
    found = cache.get_many(keys, dim=384, kind="passage")
    get_s = time.perf_counter() - started
    assert len(found) == len(keys)
    np.testing.assert_array_equal(found[keys[12345]], vectors[12345])
    assert put_s < 10 and get_s < 3, (put_s, get_s)
