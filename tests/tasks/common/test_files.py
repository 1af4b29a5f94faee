"""Files: streamed hashes (MD5 names documents, SHA-256 checks model files) and atomic writes."""
from __future__ import annotations

import hashlib
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.common.files import atomic_path, file_digest, file_md5, files_md5, write_parquet


def test_md5_is_streamed_and_correct(tmp_path):
    data = os.urandom(3 * 1024 * 1024 + 17)
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    assert file_md5(path, chunk_size=4096) == hashlib.md5(data).hexdigest()


def test_sha256_digest(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(b"weights" * 1000)
    assert file_digest(path, "sha256", chunk_size=100) == hashlib.sha256(b"weights" * 1000).hexdigest()
    assert file_digest(path) == file_md5(path) == hashlib.md5(b"weights" * 1000).hexdigest()


def test_files_md5_covers_names_bytes_and_order(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_bytes(b"one")
    b.write_bytes(b"two")
    assert files_md5([a, b]) == hashlib.md5(b"a.jsononeb.jsontwo").hexdigest()
    assert files_md5([a, b]) != files_md5([b, a])
    renamed = tmp_path / "c.json"
    renamed.write_bytes(b"one")
    assert files_md5([renamed, b]) != files_md5([a, b])  # same bytes under another name


def test_atomic_path_replaces_the_file_whole(tmp_path):
    path = tmp_path / "sub" / "out.txt"
    with atomic_path(path) as tmp:
        assert tmp.parent == path.parent and tmp.name.startswith(".") and not path.exists()
        tmp.write_text("new", encoding="utf-8")
    assert path.read_text(encoding="utf-8") == "new" and os.listdir(path.parent) == ["out.txt"]


def test_atomic_path_keeps_the_old_file_when_the_write_fails(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old", encoding="utf-8")
    with pytest.raises(RuntimeError, match="disk full"):
        with atomic_path(path) as tmp:
            tmp.write_text("half", encoding="utf-8")
            raise RuntimeError("disk full")
    assert path.read_text(encoding="utf-8") == "old" and os.listdir(tmp_path) == ["out.txt"]  # no temp file left


def test_write_parquet_round_trip(tmp_path):
    table = pa.table({"chunk_id": ["a_0", "a_1"], "tokens": [["电池"], []]})
    path = write_parquet(table, tmp_path / "kb=k" / "x.parquet")
    assert path == tmp_path / "kb=k" / "x.parquet" and pq.read_table(path).equals(table)
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).compression == "ZSTD"
    assert os.listdir(path.parent) == ["x.parquet"]
