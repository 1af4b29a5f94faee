"""The ONNX query encoder (tasks/index/query_encoder.py): the same token ids and vectors as the torch
embedder, loaded without importing torch, and the fallbacks when there is no usable export."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from schemas.settings import load_settings
from tasks.index import query_encoder as qe
from tasks.index.embed import Embedder
from tests.conftest import DATA, REPO, need
from tests.tasks.index.test_e5_convert import converted_home, shared_embedder


@pytest.fixture(scope="session")
def export_home(tmp_path_factory):
    """The session's converted e5 home and the ONNX export of its model (~15 s, once per machine: the
    export lives in the user-level model cache, keyed by the model's checksum, as the flows' own do)."""
    settings = load_settings(converted_home(tmp_path_factory))
    assert qe.ensure_exported(settings) is not None
    return settings


def questions() -> list[str]:
    """Real questions (Chinese, English, mixed) and a passage far over the 512-token limit (truncation)."""
    demo = [json.loads(line)["question"] for line in (REPO / "examples" / "questions.jsonl").open(encoding="utf-8")]
    rows = (need(DATA / "qa" / "rgb_zh_refine_dev" / "corpus.jsonl")).open(encoding="utf-8")
    long_text = "".join(json.loads(next(rows))["text"] for _ in range(30))
    return demo + ["What is the nominal capacity of the SVOLT blade cell?", "SVOLT 电芯的 nominal voltage 是多少", "",
                   long_text]


def test_same_token_ids_and_vectors_as_the_torch_embedder(export_home, tmp_path_factory):
    embedder = shared_embedder(tmp_path_factory)
    encoder = qe.load_query_encoder(export_home)
    assert isinstance(encoder, qe.OnnxQueryEncoder)
    assert encoder.model_id == embedder.model_id + "+onnx" and encoder.dim == embedder.dim
    texts = questions()

    features = embedder.model.preprocess(texts, prompt=embedder.query_prompt)
    theirs = [[int(i) for i, m in zip(ids, mask) if m] for ids, mask in zip(features["input_ids"], features["attention_mask"])]
    ours = [[i for i, m in zip(e.ids, e.attention_mask) if m]
            for e in encoder.tokenizer.encode_batch([encoder.query_prompt + t for t in texts])]
    assert ours == theirs
    assert max(len(ids) for ids in ours) == embedder.model.max_seq_length  # the long text was truncated alike

    reference = embedder.embed_queries(texts)
    vectors = encoder.embed_queries(texts, batch_size=4)  # several batches, in input order
    assert vectors.dtype == np.float32 and vectors.shape == reference.shape
    assert float((vectors * reference).sum(axis=1).min()) > 0.99999
    assert encoder.encoded == len(texts)


def test_a_question_process_never_imports_torch(export_home):
    """What the export is for: `kbflow ask` loads it without torch, transformers or sentence-transformers."""
    script = (
        "import sys\n"
        "from schemas.settings import load_settings\n"
        "from tasks.index.query_encoder import load_query_encoder\n"
        f"encoder = load_query_encoder(load_settings({str(export_home.home)!r}, model_cache_dir={str(export_home.models_dir)!r}))\n"
        "vector = encoder.embed_queries(['白石水库汛末蓄水量是多少万立方米？'])\n"
        "print(type(encoder).__name__, vector.shape, sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "OnnxQueryEncoder (1, 384) []"


def test_without_a_complete_export_the_torch_embedder_answers(export_home, tmp_path, monkeypatch):
    monkeypatch.setattr(Embedder, "from_settings", classmethod(lambda cls, settings: "torch embedder"))
    # no export in this model cache
    empty = load_settings(export_home.home, model_cache_dir=str(tmp_path / "none"))
    assert qe.load_query_encoder(empty) == "torch embedder"

    # a damaged export (a file cut short): never loaded, and ensure_exported would make it again
    from tasks.index.embed import model_identity, resolve_model

    folder = qe.export_dir(export_home, model_identity(resolve_model(export_home)))
    damaged = tmp_path / "cache" / "onnx" / folder.name
    damaged.mkdir(parents=True)
    for name in (qe.META_FILE, qe.TOKENIZER_FILE):
        (damaged / name).write_bytes((folder / name).read_bytes())
    (damaged / qe.MODEL_FILE).write_bytes((folder / qe.MODEL_FILE).read_bytes()[:1000])
    cut = load_settings(export_home.home, model_cache_dir=str(tmp_path / "cache"))
    assert qe.export_dir(cut, model_identity(resolve_model(cut))) == damaged
    assert qe.load_query_encoder(cut) == "torch embedder"


def test_a_model_without_a_fast_tokenizer_is_not_exported(tmp_path):
    class SlowTokenizer:
        pad_token_id = 1

    class Model:
        tokenizer = SlowTokenizer()

    class Fake:
        precision, model = "fp32", Model()

    with pytest.raises(ValueError, match="fast"):
        qe.export(Fake(), tmp_path / "out")
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="fp32"):
        qe.export(type("Bf16", (), {"precision": "bf16"})(), tmp_path / "out")

