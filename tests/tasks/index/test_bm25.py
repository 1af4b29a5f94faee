"""The one BM25 implementation: retrieval on real text, parity with rank_bm25,
pickle-free atomic persistence, re-indexing from landed Parquet without re-tokenizing, and the
streamed build from DuckDB equal to the in-memory one."""
from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

from schemas.arrow import to_table
from schemas.chunk import Chunk, chunks_path
from schemas.settings import load_settings
from tasks.index import bm25 as bm25_index
from tasks.common.text import tokenize, tokenize_many
from tasks.index.bm25 import BM25Index, ChunkCount, index_for_kb
from tasks.ingest.chunk import build_chunks
from tasks.ingest.land import write_chunks
from tests.conftest import CVPR_DIR, DATA, SVOLT_DIR, need, parsed_dir_of
from warehouse import db
from warehouse.chunks import chunk_term_batches

CMRC = DATA / "qa" / "cmrc2018_trial"


def _jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


@pytest.fixture(scope="module")
def cmrc():
    """(pids, passage terms, questions) of the CMRC2018 trial set."""
    rows = _jsonl(need(CMRC / "corpus.jsonl"))
    questions = _jsonl(need(CMRC / "queries.jsonl"))
    return [r["pid"] for r in rows], tokenize_many([r["text"] for r in rows]), questions


# --- search -------------------------------------------------------------------------------------

def _toy() -> BM25Index:
    return BM25Index.build(["a", "b", "c", "d", "e"],
                           [["电池", "容量"], ["电池", "电压", "电压"], ["水泵"], [], ["阀门", "管道"]])


def test_empty_and_unknown_queries_return_nothing_and_k_may_exceed_the_corpus():
    index = _toy()
    hits = index.search([[], ["不存在"], ["电压"], ["电池", "不存在"]], k=100)
    assert hits[0] == [] and hits[1] == []
    assert [c for c, _ in hits[2]] == ["b"]
    assert {c for c, _ in hits[3]} == {"a", "b"}  # never the chunk without terms
    assert index.search([["电池"]], k=0) == [[]]
    assert index.search([], k=5) == []


def test_results_are_sorted_batched_and_deterministic_on_ties():
    # every term in fewer than half the chunks (see test_term_in_more_than_half_the_chunks...)
    index = BM25Index.build([f"c{i}" for i in range(8)],
                            [["x", "y"], ["x", "y"], ["x", "y"], ["z"], ["z"], ["w"], ["v"], ["u"]])
    (hits,) = index.search([["x"]], k=2)
    assert [c for c, _ in hits] == ["c0", "c1"]  # equal scores: chunk order
    batch = index.search([["z"], ["x"], ["w"]], k=10)
    assert [[c for c, _ in h] for h in batch] == [["c3", "c4"], ["c0", "c1", "c2"], ["c5"]]
    scores = [s for h in batch for _, s in h]
    assert all(s > 0 for s in scores)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="duplicate"):
        BM25Index.build(["a", "a"], [["x"], ["y"]])
    with pytest.raises(ValueError, match="token lists"):
        BM25Index.build(["a"], [["x"], ["y"]])
    with pytest.raises(TypeError):
        _toy().search(["电池", "容量"], k=3)  # one query's tokens, not a list of queries


def test_term_in_more_than_half_the_chunks_carries_no_weight():
    """Okapi's idf log((N-df+0.5)/(df+0.5)) is ≤ 0 there; bm25s "robertson" clamps it to 0 (rank_bm25
    uses a floor of 0.25 × mean idf instead): such a term alone finds nothing."""
    index = BM25Index.build(["a", "b", "c"], [["常见", "少见"], ["常见"], ["其他"]])
    assert index.search([["常见"]], k=3) == [[]]
    assert [c for c, _ in index.search([["常见", "少见"]], k=3)[0]] == ["a"]


def test_an_exact_phrase_finds_its_chunk(cmrc):
    pids, terms, _ = cmrc
    index = BM25Index.build(pids, terms)
    texts = {r["pid"]: r["text"] for r in _jsonl(CMRC / "corpus.jsonl")}
    picked = pids[::8]  # 32 passages
    phrases = [texts[p][len(texts[p]) // 2:len(texts[p]) // 2 + 20] for p in picked]
    hits = index.search(tokenize_many(phrases), k=3)
    for pid, phrase, h in zip(picked, phrases, hits):
        assert pid in [c for c, _ in h], (phrase, h)
    assert sum(h[0][0] == pid for pid, h in zip(picked, hits)) >= 0.95 * len(picked)


def test_parity_with_rank_bm25_okapi(cmrc):
    """bm25s "atire" term frequency + "robertson" idf, k1=1.5, b=0.75 is rank_bm25's BM25Okapi except
    for terms in more than half the passages (0 here, rank_bm25's ε floor there). So: scores equal
    to Okapi's scores of the query without those terms, for every passage and question."""
    rank_bm25 = pytest.importorskip("rank_bm25")
    pids, terms, questions = cmrc
    okapi = rank_bm25.BM25Okapi(terms, k1=1.5, b=0.75)
    index = BM25Index.build(pids, terms)
    n = len(pids)
    df = Counter(t for doc in terms for t in set(doc))
    common = {t for t, c in df.items() if c > n / 2}
    assert common <= {"年", "有", "中"}  # the only ones in this corpus (the test exercises the rule)
    queries = [q for q in tokenize_many([q["question"] for q in questions]) if q]
    assert len(queries) >= 1000
    position = {p: i for i, p in enumerate(pids)}

    same_top1 = same_top10 = plain = 0
    for query, hits in zip(queries, index.search(queries, k=n)):
        ours = np.zeros(n)
        for pid, score in hits:
            ours[position[pid]] = score
        reference = okapi.get_scores([t for t in query if t not in common])
        np.testing.assert_allclose(ours, reference, rtol=1e-5, atol=1e-5)
        full = okapi.get_scores(query)  # rank_bm25 as it is, ε floor included
        if hits:
            best = position[hits[0][0]]
            same_top1 += bool(np.isclose(full[best], full.max(), rtol=1e-6))
        if not set(query) & common:
            plain += 1
            top10 = np.argsort(-full, kind="stable")[:10]
            same_top10 += np.allclose(np.sort(ours)[::-1][:10], full[top10], rtol=1e-5)
    assert plain >= 700
    assert same_top10 == plain  # identical top-10 (up to equal scores) whenever no ε floor applies
    assert same_top1 >= 0.99 * len(queries)  # measured 996 of 1,000 with the floor's effect included


# --- persistence ----------------------------------------------------------------------------------

QUERIES = [["电池"], ["电压", "容量"], ["阀门"], [], ["不存在"]]


def test_save_load_round_trip_without_pickle(tmp_path):
    index = _toy()
    index.save(tmp_path / "bm25")
    loaded = BM25Index.load(tmp_path / "bm25")
    assert loaded.chunk_ids == index.chunk_ids
    assert loaded.search(QUERIES, k=10) == index.search(QUERIES, k=10)

    files = [p for p in (tmp_path / "bm25").rglob("*") if p.is_file()]
    assert files
    for path in files:
        assert path.suffix not in {".pkl", ".pickle", ".joblib"}
        assert not path.read_bytes().startswith(b"\x80")  # pickle protocol ≥ 2 header
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as z:
                assert all(z[name].dtype != object for name in z.files)
        elif path.suffix == ".json":
            json.loads(path.read_text(encoding="utf-8"))


def test_empty_index_round_trip(tmp_path):
    empty = BM25Index.build([], [])
    assert empty.search([["电池"]], k=5) == [[]]
    empty.save(tmp_path / "bm25")
    loaded = BM25Index.load(tmp_path / "bm25")
    assert loaded.chunk_ids == [] and loaded.search([["电池"]], k=5) == [[]]


def test_load_of_nothing_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no BM25 index"):
        BM25Index.load(tmp_path / "nowhere")


@pytest.mark.parametrize("where", ["savez", "json", "switch"])
def test_crash_mid_save_leaves_the_previous_index(tmp_path, monkeypatch, where):
    directory = tmp_path / "bm25"
    old = _toy()
    old.save(directory)
    before = sorted(p.name for p in directory.iterdir())
    new = BM25Index.build(["n1", "n2"], [["电池"], ["新词"]])

    def boom(*args, **kwargs):
        raise RuntimeError("killed")

    if where == "savez":
        monkeypatch.setattr(bm25_index.np, "savez", boom)
    elif where == "json":
        monkeypatch.setattr(bm25_index.json, "dump", boom)
    else:  # everything written, the pointer switch fails
        monkeypatch.setattr(bm25_index.os, "replace", boom)
    with pytest.raises(RuntimeError, match="killed"):
        new.save(directory)
    monkeypatch.undo()

    loaded = BM25Index.load(directory)
    assert loaded.chunk_ids == old.chunk_ids
    assert loaded.search(QUERIES, k=10) == old.search(QUERIES, k=10)
    assert sorted(p.name for p in directory.iterdir()) == before  # nothing half-written left behind
    new.save(directory)  # and the next save works
    assert BM25Index.load(directory).chunk_ids == ["n1", "n2"]


def test_a_killed_save_leaves_the_previous_index_and_its_debris_is_collected(tmp_path):
    """A SIGKILL runs no cleanup: what it can leave is a temp folder or an unswitched version."""
    directory = tmp_path / "bm25"
    old = _toy()
    old.save(directory)
    half = directory / ".tmp-00000000000000000001-dead"
    half.mkdir()
    (half / "scores.npz").write_bytes(b"PK\x03\x04 truncated")
    orphan = directory / "v-00000000000000000002-dead"
    orphan.mkdir()
    (orphan / "meta.json").write_text("{", encoding="utf-8")
    assert BM25Index.load(directory).search(QUERIES, k=10) == old.search(QUERIES, k=10)

    os.utime(half, (0, 0))  # an hour-old temp folder is a dead save's, not a running one's
    BM25Index.build(["n1"], [["电池"]]).save(directory)
    assert not half.exists() and not orphan.exists()


def test_a_failed_first_save_leaves_no_folder(tmp_path, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("killed")

    monkeypatch.setattr(bm25_index.json, "dump", boom)
    with pytest.raises(RuntimeError):
        _toy().save(tmp_path / "bm25")
    assert not (tmp_path / "bm25").exists()


def test_a_reader_during_a_save_sees_the_old_index(tmp_path, monkeypatch):
    directory = tmp_path / "bm25"
    old = _toy()
    old.save(directory)
    seen = []
    real_savez = np.savez

    def savez_then_read(*args, **kwargs):
        real_savez(*args, **kwargs)
        seen.append(BM25Index.load(directory).chunk_ids)  # a concurrent reader, mid-save

    monkeypatch.setattr(bm25_index.np, "savez", savez_then_read)
    BM25Index.build(["n1"], [["电池"]]).save(directory)
    assert seen == [old.chunk_ids]
    assert BM25Index.load(directory).chunk_ids == ["n1"]


def test_old_versions_are_collected(tmp_path):
    directory = tmp_path / "bm25"
    for i in range(4):
        BM25Index.build([f"c{i}"], [["电池"]]).save(directory)
    versions = [p for p in directory.iterdir() if p.is_dir()]
    assert len(versions) == 2  # the current one and the one it replaced (for in-flight readers)
    assert BM25Index.load(directory).chunk_ids == ["c3"]


def test_count_and_chunk_ids_are_read_without_the_score_matrix(tmp_path, monkeypatch):
    directory = tmp_path / "bm25"
    index = _toy()
    version = index.save(directory)

    def boom(*args, **kwargs):
        raise AssertionError("the score matrix was read")

    monkeypatch.setattr(bm25_index.np, "load", boom)
    assert BM25Index.read_count(directory) == ChunkCount.of({"e", "d", "c", "b", "a"})  # a set, any order
    assert BM25Index.read_count(directory).chunks == 5
    assert BM25Index.read_chunk_ids(directory) == index.chunk_ids
    assert ChunkCount.of(["a", "b"]) != ChunkCount.of(["a", "c"])
    (version / "count.json").unlink()  # an index saved before count files: the same, from its ids
    assert BM25Index.read_count(directory) == ChunkCount.of(index.chunk_ids)


def test_a_truncated_index_file_fails_the_count(tmp_path):
    directory = tmp_path / "bm25"
    version = _toy().save(directory)
    with open(version / "scores.npz", "r+b") as fh:
        fh.truncate(10)
    with pytest.raises(ValueError, match="bytes it was saved with"):
        BM25Index.read_count(directory)
    with pytest.raises(FileNotFoundError, match="no BM25 index"):
        BM25Index.read_count(tmp_path / "nowhere")


# --- re-indexing from landed Parquet -------------------------------------------------------------

def _chunk(source: str, index: int, tokens: list[str], text: str) -> Chunk:
    return Chunk(content=text, chunk_type="text", semantic_content=text, tokens=tokens,
                 source=source, chunk_index=index, chunk_id=f"{source}_{index}", kb="kb")


def test_index_for_kb_reads_stored_tokens_only(tmp_path):
    # the stored terms deliberately disagree with the text: the index must use the terms
    doc1 = [_chunk("a.md", 0, ["水泵", "扬程"], "完全不同的文字"), _chunk("a.md", 1, ["阀门"], "另一段")]
    doc2 = [_chunk("b.md", 0, ["电池", "容量"], "水泵 扬程 阀门"), _chunk("b.md", 1, ["管道"], "管道")]
    paths = []
    for name, chunks in (("a", doc1), ("b", doc2)):
        path = tmp_path / f"{name}.parquet"
        pq.write_table(to_table(chunks, Chunk), path)
        paths.append(path)
    index = index_for_kb(paths)
    assert sorted(index.chunk_ids) == ["a.md_0", "a.md_1", "b.md_0", "b.md_1"]
    hits = index.search([["水泵"], ["电池"], tokenize("完全不同的文字")], k=5)
    assert [c for c, _ in hits[0]] == ["a.md_0"]
    assert [c for c, _ in hits[1]] == ["b.md_0"]
    assert hits[2] == []

    # replacing/deleting a document = rebuilding from the current files
    pq.write_table(to_table([_chunk("a.md", 0, ["新泵"], "x")], Chunk), paths[0])
    index = index_for_kb(paths)
    assert sorted(index.chunk_ids) == ["a.md_0", "b.md_0", "b.md_1"]
    old_terms, new_terms = index.search([["水泵"], ["新泵"]], k=5)
    assert old_terms == [] and [c for c, _ in new_terms] == ["a.md_0"]
    assert index_for_kb(paths[1:]).chunk_ids == ["b.md_0", "b.md_1"]
    assert index_for_kb([]).chunk_ids == []


def test_index_for_kb_accepts_minimal_files(tmp_path):
    path = tmp_path / "min.parquet"
    pq.write_table(pa.table({"chunk_id": ["x_0", "x_1", "x_2"], "tokens": [["电池"], None, ["水泵"]],
                             "other": [1, 2, 3]}), path)
    index = index_for_kb([str(path)])
    assert index.chunk_ids == ["x_0", "x_1", "x_2"]
    assert [c for c, _ in index.search([["电池"]], k=5)[0]] == ["x_0"]


# --- streamed build --------------------------------------------------------------------------------

def _same_matrix(a, b) -> bool:
    return a.shape == b.shape and all(np.array_equal(getattr(a, k), getattr(b, k))
                                      for k in ("indptr", "indices", "data"))


def test_the_streamed_build_from_duckdb_is_the_in_memory_build_and_bm25s_own(tmp_path):
    """Real chunks (two MinerU outputs, chunked as ingest does) landed in DuckDB and read back in
    batches of 16: the same chunk ids, vocabulary and score matrix, bit for bit, as one in-memory
    batch; and the same scores as bm25s indexing the term strings itself (the build before
    streaming, whose vocabulary was numbered in a set's order: equal up to that numbering)."""
    import bm25s

    home = tmp_path / "home"
    settings = load_settings(home)
    files = []
    for md5, folder in (("a" * 32, SVOLT_DIR), ("b" * 32, CVPR_DIR)):
        chunks = build_chunks(parsed_dir_of(folder, home), settings, kb="kb", doc_md5=md5, source=folder.name).chunks
        files.append(write_chunks(chunks, chunks_path(settings.chunks_dir, "kb", md5)))
    db.insert_chunk_files(settings.db_path, files)

    batches = list(chunk_term_batches(settings.db_path, "kb", rows=16))
    streamed = BM25Index.build_streamed(batches)
    table = pa.Table.from_batches(batches)
    chunk_ids, tokens = table.column("chunk_id").to_pylist(), [t or [] for t in table.column("tokens").to_pylist()]
    in_memory = BM25Index.build(chunk_ids, tokens)
    assert len(batches) > 10 and streamed.chunk_ids == in_memory.chunk_ids == chunk_ids
    assert streamed.vocab == in_memory.vocab
    assert _same_matrix(streamed._matrix, in_memory._matrix)

    reference = bm25s.BM25(k1=BM25Index.K1, b=BM25Index.B, method=BM25Index.METHOD, idf_method=BM25Index.IDF_METHOD)
    reference.index(tokens, create_empty_token=False, show_progress=False)
    s = reference.scores
    theirs = sp.csr_matrix((s["data"], s["indices"], s["indptr"]), shape=(len(reference.vocab_dict), s["num_docs"]))
    assert reference.vocab_dict.keys() == streamed.vocab.keys()
    ours_in_their_order = [streamed.vocab[term] for term in sorted(reference.vocab_dict, key=reference.vocab_dict.get)]
    assert _same_matrix(streamed._matrix[ours_in_their_order], theirs)
