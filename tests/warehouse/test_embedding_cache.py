"""The on-disk embedding cache (warehouse/embedding_cache.py): a SQLite table keyed by (model, kind, text hash)."""
from __future__ import annotations

import hashlib

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


def test_many_batches_and_a_lookup_larger_than_one_select(tmp_path):
    """Several transactions, then one lookup spanning several `SELECT ... IN` chunks; the speed is
    measured by bench/embedding_cache.py, not here (a timed assertion fails under load)."""
    cache = EmbeddingCache(tmp_path / "embeddings", "m@1")
    keys = [key(f"chunk {i}") for i in range(3 * EmbeddingCache._CHUNK + 7)]
    vectors = np.random.default_rng(0).standard_normal((len(keys), 384)).astype(np.float32)
    for a in range(0, len(keys), 400):
        cache.put_many(list(zip(keys[a:a + 400], vectors[a:a + 400])), kind="passage")
    found = cache.get_many(keys + [key("absent")], dim=384, kind="passage")
    assert len(found) == len(keys) and cache.count() == len(keys)
    for i in (0, EmbeddingCache._CHUNK, len(keys) - 1):  # first, across a chunk boundary, last
        np.testing.assert_array_equal(found[keys[i]], vectors[i])
