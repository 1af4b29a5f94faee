"""The cross-encoder rerank stage: a local sentence-transformers CrossEncoder; scores become
probabilities on the rerank scale."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from schemas.errors import RerankModelError
from tasks.qa.types import Candidate


class Reranker:
    """A sentence-transformers CrossEncoder from a local folder; scores are probabilities (sigmoid)."""

    def __init__(self, model_path: str | Path, *, batch_size: int = 32, max_length: int = 512):
        from sentence_transformers import CrossEncoder

        path = Path(model_path).expanduser()
        if not path.is_dir():
            raise RerankModelError(f"rerank_model {str(model_path)!r} is not a local model folder")
        self.model_id = path.name
        self.batch_size = batch_size
        self.model = CrossEncoder(str(path), device="cpu", max_length=max_length, local_files_only=True)

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        import torch

        if not pairs:
            return np.zeros(0, dtype=np.float32)
        scores = self.model.predict([list(p) for p in pairs], batch_size=self.batch_size, show_progress_bar=False,
                                    activation_fn=torch.nn.Sigmoid(), convert_to_numpy=True)
        return np.asarray(scores, dtype=np.float32).reshape(len(pairs), -1)[:, -1]



def rerank(cands: Sequence[Candidate], scores: Sequence[float]) -> list[Candidate]:
    """The candidates with their cross-encoder probabilities as scores, best first."""
    out = [replace(c, rerank=float(s), score=float(s)) for c, s in zip(cands, scores)]
    out.sort(key=lambda c: -c.score)
    return out

