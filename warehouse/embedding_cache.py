"""The on-disk embedding cache: vectors keyed by (model_id, kind, sha256 of the text) in one SQLite
table (WAL) under `settings.cache_dir / "embeddings"`. No pickle; each batch is committed in one
transaction, so a killed run keeps every finished batch and never a torn row.
"""
from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Self

import numpy as np

from schemas.settings import Settings

CACHE_FILE = "embeddings.sqlite3"


class EmbeddingCache:
    """Vectors on disk keyed by (model_id, kind, sha256(text)), in one SQLite file under `directory`.

    `model_id` binds the cache to one model (checked by `embed_texts`); unbound, calls name it.
    """

    _CHUNK = 500  # keys per SELECT ... IN (...)

    def __init__(self, directory: str | os.PathLike, model_id: str | None = None):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / CACHE_FILE
        self.model_id = model_id
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("""CREATE TABLE IF NOT EXISTS embeddings (
            model_id TEXT NOT NULL, kind TEXT NOT NULL, text_sha256 BLOB NOT NULL,
            dim INTEGER NOT NULL, vector BLOB NOT NULL,
            PRIMARY KEY (model_id, kind, text_sha256)) WITHOUT ROWID""")

    @classmethod
    def for_settings(cls, settings: Settings, model_id: str | None = None) -> EmbeddingCache:
        return cls(settings.cache_dir / "embeddings", model_id)

    def _model(self, model_id: str | None) -> str:
        model_id = model_id or self.model_id
        if not model_id:
            raise ValueError("EmbeddingCache: no model_id (bind one or pass it)")
        return model_id

    def get_many(self, keys: Sequence[bytes], *, dim: int, kind: str,
                 model_id: str | None = None) -> dict[bytes, np.ndarray]:
        model_id = self._model(model_id)
        found: dict[bytes, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            for a in range(0, len(unique), self._CHUNK):
                part = unique[a:a + self._CHUNK]
                rows = self._db.execute(
                    f"SELECT text_sha256, dim, vector FROM embeddings WHERE model_id = ? AND kind = ? "
                    f"AND text_sha256 IN ({','.join('?' * len(part))})", [model_id, kind, *part]).fetchall()
                for key, row_dim, blob in rows:
                    if row_dim == dim and len(blob) == 4 * dim:  # anything else is a miss, overwritten later
                        found[bytes(key)] = np.frombuffer(blob, dtype="<f4")
        return found

    def put_many(self, items: Sequence[tuple[bytes, np.ndarray]], *, kind: str,
                 model_id: str | None = None) -> None:
        """Store vectors in one transaction (all or nothing)."""
        model_id = self._model(model_id)
        rows = [(model_id, kind, key, int(vec.shape[-1]), np.asarray(vec, dtype="<f4").tobytes())
                for key, vec in items]
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?, ?)", rows)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def count(self, model_id: str | None = None) -> int:
        with self._lock:
            if model_id or self.model_id:
                return self._db.execute("SELECT count(*) FROM embeddings WHERE model_id = ?",
                                        [self._model(model_id)]).fetchone()[0]
            return self._db.execute("SELECT count(*) FROM embeddings").fetchone()[0]

    def __len__(self) -> int:
        return self.count()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
