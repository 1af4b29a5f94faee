"""The one BM25 implementation (SPEC §2.10; seed defect 000 §4 had two): jieba terms + bm25s scores.

- `tokenize` turns text into BM25 terms. Chunking calls it once per chunk and stores the terms in
  the chunk Parquet (`Chunk.tokens`); queries go through the same function, so both sides match.
- `BM25Index.build_streamed` scores pre-tokenized chunks with bm25s (never re-tokenizes), read as
  Arrow record batches whose terms become int ids batch by batch (a KB's rebuild never holds all
  its terms as Python strings); `build` is the same on in-memory lists. `search` answers a batch of
  queries with one sparse matrix product; `save`/`load` persist without pickle, atomically;
  `read_count`/`read_chunk_ids` tell what a saved index holds without loading its score matrix.
- `index_for_kb` rebuilds a knowledge base's index from its landed Parquet files (`chunk_id`,
  `tokens` columns only, streamed). Deleting or replacing a document = rebuilding from the current
  files; that takes well under a second for 20k chunks (bench/bm25_vs_rank_bm25.py).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp

FORMAT_VERSION = 1
_CURRENT = "CURRENT"  # pointer file: the name of the version folder readers load
_SCORES = "scores.npz"
_META = "meta.json"
_COUNT = "count.json"  # ChunkCount and the other files' sizes: what cheap checks read
_VERSION_PREFIX = "v-"
_TMP_PREFIX = ".tmp-"
_STALE_TMP_SECONDS = 3600.0


class BM25Index:
    """A BM25 index over chunk ids. Scores come from bm25s; retrieval is a sparse matrix product.

    Parameters match rank_bm25's BM25Okapi: bm25s method "atire" computes Okapi's term-frequency
    part tf·(k1+1)/(tf + k1·(1-b+b·dl/avgdl)) and idf_method "robertson" Okapi's idf
    log((N-df+0.5)/(df+0.5)); the one difference is a term in more than half of the chunks: 0
    here, a floor of 0.25 × mean idf in rank_bm25. So such a term is no evidence on its own, and
    an index of 1 or 2 chunks finds nothing (every idf is 0): Okapi's idf, by choice, for parity."""

    K1 = 1.5
    B = 0.75
    METHOD = "atire"
    IDF_METHOD = "robertson"

    def __init__(self) -> None:
        self.chunk_ids: list[str] = []
        self.vocab: dict[str, int] = {}
        # term × chunk scores (CSR): row t holds bm25 score of term t in every chunk containing it
        self._matrix = sp.csr_matrix((0, 0), dtype=np.float32)

    def __len__(self) -> int:
        return len(self.chunk_ids)

    @classmethod
    def build(cls, chunk_ids: Sequence[str], tokens: Sequence[Sequence[str] | None]) -> BM25Index:
        """Index chunks from their stored terms (never re-tokenizes): `build_streamed` of one batch."""
        if len(chunk_ids) != len(tokens):
            raise ValueError(f"{len(chunk_ids)} chunk ids but {len(tokens)} token lists")
        batch = pa.record_batch({"chunk_id": pa.array([str(c) for c in chunk_ids], pa.string()),
                                 "tokens": pa.array(tokens, pa.list_(pa.string()))})
        return cls.build_streamed([batch])

    @classmethod
    def build_streamed(cls, batches: Iterable[pa.RecordBatch]) -> BM25Index:
        """Index chunks from Arrow record batches (`chunk_id`, `tokens`: list of terms, null = none).
        Each batch's terms become int32 ids as it arrives, so a build holds the vocabulary and four
        bytes per term occurrence, never every chunk's terms as Python strings."""
        import bm25s
        from bm25s.tokenization import Tokenized

        index = cls()
        corpus = _ChunkTermIds()
        for batch in batches:
            index.chunk_ids.extend(batch.column("chunk_id").to_pylist())
            corpus.add(batch.column("tokens"), index.vocab)
        if len(set(index.chunk_ids)) != len(index.chunk_ids):
            raise ValueError("duplicate chunk ids")
        if not index.vocab:  # no chunks, or none with terms: bm25s cannot index an empty vocabulary
            index._matrix = sp.csr_matrix((0, len(index.chunk_ids)), dtype=np.float32)
            return index
        # scipy's COO → CSC conversion: the same matrix as bm25s's numpy one, without its int64 sort keys
        retriever = bm25s.BM25(k1=cls.K1, b=cls.B, method=cls.METHOD, idf_method=cls.IDF_METHOD,
                               csc_backend="scipy")
        # create_empty_token=False: we answer empty queries ourselves instead of scoring a fake term
        retriever.index(Tokenized(ids=corpus, vocab=index.vocab), create_empty_token=False, show_progress=False)
        s = retriever.scores
        # bm25s stores a chunk × term CSC matrix; its arrays are exactly the term × chunk CSR one
        index._matrix = sp.csr_matrix((s["data"], s["indices"], s["indptr"]),
                                      shape=(len(index.vocab), s["num_docs"]))
        return index

    def _query_matrix(self, queries_tokens: Sequence[Sequence[str]]) -> sp.csr_matrix:
        """query × term counts; unknown terms are dropped (a repeated query term counts twice,
        as in bm25s's and rank_bm25's own scoring)."""
        rows, cols = [], []
        for q, terms in enumerate(queries_tokens):
            for term in terms:
                t = self.vocab.get(term)
                if t is not None:
                    rows.append(q)
                    cols.append(t)
        data = np.ones(len(rows), dtype=np.float32)
        return sp.csr_matrix((data, (rows, cols)), shape=(len(queries_tokens), len(self.vocab)))

    def search(self, queries_tokens: Sequence[Sequence[str]], k: int) -> list[list[tuple[str, float]]]:
        """Top-k (chunk_id, score) per query, best first. Chunks sharing no term with the query are
        not returned, so an empty query or one of unknown terms gets []; k may exceed the corpus."""
        if isinstance(queries_tokens, str) or (queries_tokens and isinstance(queries_tokens[0], str)):
            raise TypeError("search takes a list of token lists (one per query); use tokenize() first")
        out: list[list[tuple[str, float]]] = []
        if k <= 0 or not self.vocab:
            return [[] for _ in queries_tokens]
        # batches bound the memory of the (sparse) query × chunk score matrix
        for start in range(0, len(queries_tokens), 512):
            scores = (self._query_matrix(queries_tokens[start:start + 512]) @ self._matrix).tocsr()
            for q in range(scores.shape[0]):
                lo, hi = scores.indptr[q], scores.indptr[q + 1]
                docs, vals = scores.indices[lo:hi], scores.data[lo:hi]
                keep = vals > 0  # a term in more than half the chunks has idf 0: no evidence
                docs, vals = docs[keep], vals[keep]
                if len(vals) > k:  # keep everything tied with the k-th score, so ties break below
                    kth = np.partition(vals, len(vals) - k)[len(vals) - k]
                    docs, vals = docs[vals >= kth], vals[vals >= kth]
                order = np.lexsort((docs, -vals))[:k]  # score desc, then chunk order: deterministic
                out.append([(self.chunk_ids[d], float(v)) for d, v in zip(docs[order], vals[order])])
        return out

    # persistence: <dir>/CURRENT names a complete version folder <dir>/v-…/{scores.npz,meta.json,count.json}

    def save(self, directory: str | os.PathLike) -> Path:
        """Write the index atomically: a new version folder is written and fsynced in full, then
        the CURRENT pointer is replaced (os.replace). A reader sees the old or the new index, never
        a half-written one; a crash before the switch leaves the previous index in place."""
        directory = Path(directory)
        created = not directory.exists()
        directory.mkdir(parents=True, exist_ok=True)
        previous = _current_name(directory)
        token = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
        tmp = directory / f"{_TMP_PREFIX}{token}"
        version = directory / f"{_VERSION_PREFIX}{token}"
        pointer = directory / f"{_TMP_PREFIX}{token}.{_CURRENT}"
        tmp.mkdir()
        try:
            m = self._matrix
            # np.savez pickles object arrays unless told not to: all arrays here are numeric
            with open(tmp / _SCORES, "wb") as fh:
                np.savez(fh, data=m.data.astype(np.float32, copy=False),
                         indices=m.indices.astype(np.int32, copy=False),
                         indptr=m.indptr.astype(np.int64, copy=False), allow_pickle=False)
                _fsync(fh)
            vocab = [""] * len(self.vocab)
            for term, t in self.vocab.items():
                vocab[t] = term
            meta = {"format": FORMAT_VERSION, "k1": self.K1, "b": self.B, "method": self.METHOD,
                    "idf_method": self.IDF_METHOD,
                    "num_chunks": len(self.chunk_ids), "num_terms": len(vocab),
                    "chunk_ids": self.chunk_ids, "vocab": vocab}
            with open(tmp / _META, "w", encoding="utf-8") as fh:
                json.dump(meta, fh, ensure_ascii=False, separators=(",", ":"))
                _fsync(fh)
            sizes = {name: (tmp / name).stat().st_size for name in (_SCORES, _META)}
            with open(tmp / _COUNT, "w", encoding="utf-8") as fh:
                json.dump({**asdict(ChunkCount.of(self.chunk_ids)), "bytes": sizes}, fh)
                _fsync(fh)
            os.rename(tmp, version)  # a version folder only ever exists complete
            with open(pointer, "w", encoding="utf-8") as fh:
                fh.write(version.name)
                _fsync(fh)
            os.replace(pointer, directory / _CURRENT)  # the switch
            _fsync_dir(directory)
        except BaseException:
            # not switched: CURRENT still names the previous version; drop what this save wrote
            if _current_name(directory) != version.name:
                shutil.rmtree(tmp, ignore_errors=True)
                shutil.rmtree(version, ignore_errors=True)
                pointer.unlink(missing_ok=True)
                if created and not any(directory.iterdir()):
                    directory.rmdir()  # so "the folder exists" keeps meaning "an index is there"
            raise
        _collect_garbage(directory, keep={version.name, previous})
        return version

    @classmethod
    def load(cls, directory: str | os.PathLike) -> BM25Index:
        version = _current_version(Path(directory))
        meta = _read_meta(version)
        with np.load(version / _SCORES, allow_pickle=False) as z:
            data, indices, indptr = z["data"], z["indices"], z["indptr"]
        index = cls()
        index.chunk_ids = list(meta["chunk_ids"])
        index.vocab = {term: t for t, term in enumerate(meta["vocab"])}
        if len(indptr) != len(index.vocab) + 1 or meta["num_chunks"] != len(index.chunk_ids):
            raise ValueError(f"{version}: inconsistent BM25 index files")
        index._matrix = sp.csr_matrix((data, indices, indptr), shape=(len(index.vocab), len(index.chunk_ids)))
        return index

    @staticmethod
    def read_chunk_ids(directory: str | os.PathLike) -> list[str]:
        """The saved index's chunk ids, without its score matrix."""
        return _read_meta(_current_version(Path(directory)))["chunk_ids"]

    @staticmethod
    def read_count(directory: str | os.PathLike) -> ChunkCount:
        """The saved index's `ChunkCount` from its few-byte count file, neither the score matrix nor
        the vocabulary; an index saved before count files existed: from its chunk ids. ValueError
        when a file of the index no longer has the size it was saved with (truncated, overwritten)."""
        version = _current_version(Path(directory))
        try:
            count = json.loads((version / _COUNT).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return ChunkCount.of(_read_meta(version)["chunk_ids"])
        for name, size in count["bytes"].items():
            if (version / name).stat().st_size != size:
                raise ValueError(f"{version / name}: not the {size} bytes it was saved with")
        return ChunkCount(count["chunks"], count["chunk_ids_sha256"])


@dataclass(frozen=True)
class ChunkCount:
    """How many chunks a store holds and a fingerprint of their id set: two stores with equal
    ChunkCounts hold the very same chunks, so comparing them reads no ids from the index."""

    chunks: int
    chunk_ids_sha256: str

    @classmethod
    def of(cls, chunk_ids: Collection[str]) -> ChunkCount:
        # sorted: the set, not its order; NUL cannot occur in a chunk id (source path + index)
        return cls(len(chunk_ids), hashlib.sha256("\0".join(sorted(chunk_ids)).encode()).hexdigest())


class _ChunkTermIds:
    """Every chunk's term ids, as bm25s reads a pre-tokenized corpus (its length, then chunk after
    chunk, several times): an int32 array per batch underneath, one chunk at a time a Python list."""

    def __init__(self) -> None:
        self._batches: list[tuple[np.ndarray, np.ndarray]] = []  # (term ids, each chunk's bounds in them)
        self._chunks = 0

    def add(self, tokens: pa.Array, vocab: dict[str, int]) -> None:
        """Map one batch's token lists to vocab ids; new terms join `vocab` in first-seen order. Only
        the batch's distinct terms become Python strings (Arrow's dictionary encoding finds them, in
        order of appearance)."""
        encoded = pc.dictionary_encode(tokens.flatten())
        distinct = encoded.dictionary.to_pylist()
        to_vocab = np.fromiter((vocab.setdefault(term, len(vocab)) for term in distinct), np.int32, len(distinct))
        lengths = pc.fill_null(pc.list_value_length(tokens), 0).to_numpy()
        self._batches.append((to_vocab[encoded.indices.to_numpy()], np.concatenate([[0], np.cumsum(lengths)])))
        self._chunks += len(tokens)

    def __len__(self) -> int:
        return self._chunks

    def __iter__(self) -> Iterator[list[int]]:
        for ids, bounds in self._batches:
            bounds = bounds.tolist()
            for lo, hi in zip(bounds, bounds[1:]):
                yield ids[lo:hi].tolist()


def _fsync(fh) -> None:
    fh.flush()
    os.fsync(fh.fileno())


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _current_version(directory: Path) -> Path:
    name = _current_name(directory)
    if not name:
        raise FileNotFoundError(f"no BM25 index in {directory}")
    return directory / name


def _read_meta(version: Path) -> dict:
    with open(version / _META, encoding="utf-8") as fh:
        meta = json.load(fh)
    if meta.get("format") != FORMAT_VERSION:
        raise ValueError(f"{version}: BM25 index format {meta.get('format')!r}, expected {FORMAT_VERSION}")
    return meta


def _current_name(directory: Path) -> str:
    try:
        return (directory / _CURRENT).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return ""


def _collect_garbage(directory: Path, keep: set[str]) -> None:
    """Drop every version but the new one and the one it replaced (a reader that read the old
    pointer just before the switch can still open it), and temp files left by crashed saves."""
    for p in directory.glob(f"{_VERSION_PREFIX}*"):
        if p.name not in keep:
            shutil.rmtree(p, ignore_errors=True)
    now = time.time()
    for p in directory.glob(f"{_TMP_PREFIX}*"):
        try:
            stale = now - p.stat().st_mtime > _STALE_TMP_SECONDS  # young ones may be a concurrent save's
        except FileNotFoundError:
            continue
        if stale:
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)


def index_for_kb(parquet_paths: Iterable[str | os.PathLike]) -> BM25Index:
    """Build a knowledge base's index from its landed chunk Parquet files, streamed batch by batch
    and reading only the `chunk_id` and `tokens` columns: re-indexing never re-tokenizes."""
    return BM25Index.build_streamed(_parquet_term_batches(parquet_paths))


def _parquet_term_batches(parquet_paths: Iterable[str | os.PathLike]) -> Iterator[pa.RecordBatch]:
    import pyarrow.parquet as pq

    for path in parquet_paths:
        with pq.ParquetFile(path) as file:
            yield from file.iter_batches(columns=["chunk_id", "tokens"])
