"""The query encoder of a question-answering run: the embedding model exported once to ONNX and run by
ONNX Runtime, so a short `kbflow ask` never imports torch, transformers or sentence-transformers.

Those imports and the model load cost ~9-10 s per process on a 2-core machine (bench/cli_latency.py);
ONNX Runtime and `tokenizers` load the same model in well under a second and give the same vectors (cosine to the
fp32 `Embedder` ≥ 0.99999, identical token ids; tests/tasks/index/test_query_encoder.py).

- `export(embedder, dest)`: traces the whole sentence-transformers pipeline of an fp32 `Embedder`
  (transformer, pooling, normalization) into `dest/model.onnx` (its weights in `model.onnx.data`, which
  ONNX Runtime maps instead of parsing), beside the model's own fast tokenizer
  (`tokenizer.json`) and `encoder.json` (input names, query prompt, length limit, padding, file sizes);
  written into a temporary sibling folder and renamed into place.
- `ensure_exported(settings)`: the export of the configured model, under
  `models_dir/onnx/{model identity}` (the identity carries the model's checksum, so a changed model
  gets a new export), made when missing by the ingest's index stage (`tasks.index.sync.sync_indexes`).
- `load_query_encoder(settings)`: `OnnxQueryEncoder` over that export when it exists and loads, else
  the torch `Embedder` (a model that could not be exported, an export not made yet).
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import uuid
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from schemas.settings import Settings

log = logging.getLogger("kbflow.embed")

MODEL_FILE, WEIGHTS_FILE, TOKENIZER_FILE, META_FILE = "model.onnx", "model.onnx.data", "tokenizer.json", "encoder.json"
# tokenizer feature name → the attribute of a `tokenizers.Encoding` that holds it
_FEATURES = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
ONNX_OPSET = 17


def export_dir(settings: Settings, model_identity: str) -> Path:
    return settings.models_dir / "onnx" / re.sub(r"[^A-Za-z0-9._@-]+", "_", model_identity)


def export(embedder, dest: Path) -> Path:
    """Write the ONNX export of `embedder` (an fp32 `tasks.index.embed.Embedder`) to `dest`, atomically."""
    import onnx
    import torch

    if embedder.precision != "fp32":
        raise ValueError(f"export an fp32 embedder, not {embedder.precision}")
    model = embedder.model
    backend = getattr(getattr(model, "tokenizer", None), "backend_tokenizer", None)
    if backend is None:
        raise ValueError("the model has no fast (tokenizers) tokenizer")
    example = model.preprocess(["query: 导出", "query: export an example"])
    names = [n for n, v in example.items() if isinstance(v, torch.Tensor)]
    if not set(names) <= set(_FEATURES) or "input_ids" not in names:
        raise ValueError(f"tokenizer features {names} (expected {sorted(_FEATURES)})")
    pad_id = model.tokenizer.pad_token_id
    if pad_id is None or getattr(model.tokenizer, "padding_side", "right") != "right":
        raise ValueError("the tokenizer pads on the left or has no pad token")

    class Pipeline(torch.nn.Module):  # the modules' own forward: what `SentenceTransformer.encode` runs
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *features):
            out = self.model(dict(zip(names, features)))["sentence_embedding"]
            return torch.nn.functional.normalize(out, p=2, dim=1)

    tmp = dest.with_name(f".tmp-{dest.name}-{uuid.uuid4().hex[:8]}")
    tmp.mkdir(parents=True)
    try:
        axes = {0: "batch", 1: "tokens"}
        traced = tmp / "traced.onnx"
        with warnings.catch_warnings():  # the tracer's notes on shapes it fixes: none affects this graph
            warnings.simplefilter("ignore")
            torch.onnx.export(Pipeline().eval(), tuple(example[n] for n in names), str(traced),
                              input_names=names, output_names=["embedding"], opset_version=ONNX_OPSET,
                              dynamic_axes={**{n: axes for n in names}, "embedding": {0: "batch"}}, dynamo=False)
        # the weights in a file of their own: ONNX Runtime maps it instead of parsing 470 MB (0.2 s, not 1.4 s)
        onnx.save_model(onnx.load(str(traced)), str(tmp / MODEL_FILE), save_as_external_data=True,
                        all_tensors_to_one_file=True, location=WEIGHTS_FILE, size_threshold=1024)
        traced.unlink()
        (tmp / WEIGHTS_FILE).chmod(0o644)  # onnx writes it owner-only; it is as readable as the model it came from
        backend.save(str(tmp / TOKENIZER_FILE))
        meta = {"model_id": embedder.model_id, "inputs": names, "query_prompt": embedder.query_prompt,
                "max_length": int(model.max_seq_length), "pad_id": int(pad_id),
                "pad_token": model.tokenizer.pad_token, "dim": embedder.dim,
                "files": {f: (tmp / f).stat().st_size for f in (MODEL_FILE, WEIGHTS_FILE, TOKENIZER_FILE)}}
        (tmp / META_FILE).write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _complete(folder: Path) -> dict | None:
    """The export's `encoder.json` when every file it lists is there with its size, else None."""
    try:
        meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
        if all((folder / name).stat().st_size == size for name, size in meta["files"].items()):
            return meta
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def ensure_exported(settings: Settings) -> Path | None:
    """The ONNX export of the configured embedding model, made once (~15 s) when missing; None when the
    model cannot be exported (the torch embedder then encodes the queries: slower to load, same vectors)."""
    from tasks.common.display import announce
    from tasks.index.embed import Embedder

    found = _model_and_export_dir(settings)
    if found is None:
        return None
    model, dest = found
    if _complete(dest) is not None:
        return dest
    announce("exporting the embedding model for fast question answering, once (~15 s)…")
    try:
        return export(Embedder(model, precision="fp32"), dest)
    except Exception as exc:  # noqa: BLE001 - an optional speed-up: questions are still answered without it
        log.warning("the embedding model could not be exported to ONNX (%s): questions use the torch embedder", exc)
        return None


# questions per ONNX Runtime pass: unlike torch's bf16 on AMX, its fp32 kernels run smaller matrices
# faster (e5-small, ~31-token questions, 2-core AMD EPYC: 56 / 65 / 70 / 76 questions/s in passes of
# 128 / 64 / 32 / 16)
ONNX_PASS = 16


class OnnxQueryEncoder:
    """`embed_queries` of an `Embedder`, by ONNX Runtime over an export (`export`)."""

    def __init__(self, folder: Path, *, open_session: bool = True):
        from tokenizers import Tokenizer

        meta = _complete(folder)
        if meta is None:
            raise FileNotFoundError(f"incomplete ONNX export: {folder}")
        self.names = meta["inputs"]
        self.query_prompt = meta["query_prompt"]
        self.dim = int(meta["dim"])
        self.model_id = f"{meta['model_id']}+onnx"
        self.precision = "fp32"
        self.encoded = 0
        self.tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        self.tokenizer.enable_truncation(meta["max_length"])
        self.tokenizer.enable_padding(pad_id=meta["pad_id"], pad_token=meta["pad_token"])
        self.model_file = folder / MODEL_FILE
        self._session: ort.InferenceSession | None = None
        if open_session:
            self.session  # noqa: B018 - a damaged export fails here, not at the first question

    @property
    def session(self):
        """Opened on first use (0.2 s: the weights are mapped). Never in a process that forks afterwards:
        a child cannot open a session once its parent has one (ONNX Runtime hangs), see flows/warm_server.py."""
        if self._session is None:
            import onnxruntime as ort

            self._session = ort.InferenceSession(str(self.model_file), providers=["CPUExecutionProvider"])
        return self._session

    def embed_queries(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """Vectors (float32, L2-normalized) in input order; batches of similar length, longest first."""
        texts = list(texts)
        size = min(batch_size or ONNX_PASS, ONNX_PASS)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        for a in range(0, len(order), size):
            rows = order[a:a + size]
            encodings = self.tokenizer.encode_batch([self.query_prompt + texts[i] for i in rows])
            feed = {n: np.array([getattr(e, _FEATURES[n]) for e in encodings], dtype=np.int64) for n in self.names}
            out[rows] = self.session.run(None, feed)[0]
            self.encoded += len(rows)
        return out

    def __repr__(self) -> str:
        return f"OnnxQueryEncoder({self.model_id}, dim={self.dim}, encoded={self.encoded})"


def _model_and_export_dir(settings: Settings) -> tuple[Path | str, Path] | None:
    """The configured model and where its export belongs; None when there is no usable model (whoever
    loads it reports why)."""
    from tasks.index.embed import model_identity, resolve_model

    try:
        model = resolve_model(settings)
    except Exception as exc:  # noqa: BLE001 - reported by the embedder's own load
        log.debug("no embedding model: %s", exc)
        return None
    return model, export_dir(settings, model_identity(model))


def exported(settings: Settings) -> Path | None:
    """The complete ONNX export of the configured model, else None (also when there is no model)."""
    found = _model_and_export_dir(settings)
    return found[1] if found is not None and _complete(found[1]) is not None else None


def load_query_encoder(settings: Settings, *, open_session: bool = True):
    """What encodes a run's questions: the ONNX export of the configured model when there is one,
    else the torch `Embedder` (same vectors). `open_session=False`: the ONNX session is opened at the
    first question (by a process that forks, in its children)."""
    from tasks.index.embed import Embedder

    folder = exported(settings)
    if folder is not None:
        try:
            return OnnxQueryEncoder(folder, open_session=open_session)
        except Exception as exc:  # noqa: BLE001 - a damaged export: the torch embedder still works
            log.warning("the ONNX query encoder %s did not load (%s): using the torch embedder", folder, exc)
    return Embedder.from_settings(settings)
