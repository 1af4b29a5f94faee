"""Benchmark: kbflow's hybrid retrieval side by side with LlamaIndex's QueryFusionRetriever, on the
same chunks, the same embedding model and the same jieba terms.

    .venv/bin/pip install -e '.[peer]'     (once: the optional `peer` extra, used by this script only)
    .venv/bin/python bench/peer_llamaindex.py [--home DIR] [--questions N] [--quality-only]
                                              [--fusion-coef C1,C2,...]

The `peer` extra (llama-index-core 0.14, llama-index-retrievers-bm25 0.8) goes into the project's
venv: `pip install --dry-run` showed it only adds packages (llama-index-*, nltk, tiktoken, PyStemmer,
…) and moves none of the pinned ones (torch 2.13.0, prefect 3.9, chromadb, bm25s stay as they are).

Knowledge base: `bench` under --home (default /tmp/kbflow-bench), 9,957 chunks, built by
bench/retrieval.py (`.venv/bin/python bench/retrieval.py --build-only`). Questions: the 81 of
../shared/data/qa/rgb_zh_refine_dev, gold = a chunk whose source is one of the question's positive
passages (bench/retrieval.py's `questions_of`).

The peer, built in memory from the chunks of kbflow's DuckDB (`chunks`: chunk_id, source,
semantic_content, tokens):
- nodes: one TextNode per chunk, text = what kbflow embeds (`embedding_text`), metadata (source,
  chunk_id) kept out of the embedded and BM25 text;
- embeddings: kbflow's Embedder and SQLite embedding cache behind LlamaIndex's `BaseEmbedding`
  (passages "passage: " through `embed_texts`, so every chunk comes from the home's cache; queries
  "query: " through `embed_queries`, as kbflow's Retriever embeds them);
- vector: `VectorStoreIndex` (its default in-memory SimpleVectorStore), top 100;
- BM25: LlamaIndex's `BM25Retriever` (llama-index-retrievers-bm25) over kbflow's jieba terms, top
  100. Its API takes no tokenizer (only a regex `token_pattern` and a PyStemmer stemmer; the
  `tokenizer` argument is deprecated and ignored), so the bm25s index it wraps is built from the
  chunks' stored jieba terms with LlamaIndex's own bm25s defaults, and a query reaches it as its
  jieba terms (kbflow's `tokenize`) joined by spaces with token_pattern `\\S+`;
- fusion: `QueryFusionRetriever(mode="reciprocal_rerank", num_queries=1)` (no LLM query
  generation: a MockLLM that is never called), top 10.
kbflow: `Retriever` on the same home, hybrid mode (vector ∥ BM25 → fusion as the home's settings
say, by default the learned one → filters → MMR → adaptive top-k), without and with the rescues;
vector-only and BM25-only rows for both sides. `--fusion-coef` adds a hybrid row with these learned
coefficients instead of the settings' (those bench/retrieval.py fits without rgb: "fold without
rgb_zh_refine_dev"), and `--fusion-params` with these score-fusion parameters (w_vec, gain, vec_scale,
bm25_scale of the same fold), so rgb is compared held out as well as with a fit that saw it.

Prints hit@1, hit@5, MRR@10 and questions/s. LlamaIndex answers one question per call (it has no
batch API): "q/s each" times every pipeline one question per call, interleaved question by question
so load from other work hits all alike, each call after a full garbage collection so none pays for
another's garbage; kbflow's "q/s batched" is its batch-QA mode (batches of qa_batch_size), whose
rankings give kbflow's metrics. About 5 minutes on 2 cores, most of it those garbage collections.
Not part of CI: prints figures only.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
for path in (REPO, REPO / "bench"):  # kbflow, and bench/retrieval.py's helpers
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

try:
    import bm25s
    from llama_index.core import VectorStoreIndex
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.core.schema import QueryBundle, TextNode
    from llama_index.core.vector_stores.utils import node_to_metadata_dict
    from llama_index.retrievers.bm25 import BM25Retriever
    from pydantic import PrivateAttr
except ImportError as exc:
    raise SystemExit(f"{exc}: install the peer first: .venv/bin/pip install -e '.[peer]'") from None

KB = "bench"
RRF_TOP = 10  # the fused list the peer returns: enough for MRR@10
Ranking = list[tuple[str, str]]  # (chunk_id, source), best first


class KbflowEmbedding(BaseEmbedding):
    """kbflow's Embedder and embedding cache behind LlamaIndex's embedding interface."""

    _embedder: Any = PrivateAttr()
    _cache: Any = PrivateAttr()
    _batch_size: int = PrivateAttr()

    def __init__(self, embedder, cache, batch_size: int):
        # LlamaIndex hands texts over in groups of embed_batch_size (default 10): its maximum
        # means fewer cache look-ups; the model itself still encodes `batch_size` at a time
        super().__init__(model_name=embedder.model_id, embed_batch_size=2048)
        self._embedder, self._cache, self._batch_size = embedder, cache, batch_size

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embedder.embed_queries([query])[0].tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        from tasks.index.embed import embed_texts

        return embed_texts(texts, self._embedder, self._cache, batch_size=self._batch_size).tolist()


class JiebaBM25Retriever(BM25Retriever):
    """LlamaIndex's BM25Retriever over kbflow's jieba terms (see the module docstring for why the
    terms go in this way)."""

    def __init__(self, nodes: list[TextNode], terms: list[list[str]], *, similarity_top_k: int,
                 user_dict: str | None):
        bm25 = bm25s.BM25()  # what BM25Retriever itself builds: method "lucene", k1 1.5, b 0.75
        bm25.index([list(t) for t in terms], show_progress=False)
        bm25.corpus = [node_to_metadata_dict(n) | {"node_id": n.node_id} for n in nodes]  # as BM25Retriever does
        super().__init__(existing_bm25=bm25, similarity_top_k=similarity_top_k, skip_stemming=True,
                         token_pattern=r"\S+")
        self._user_dict = user_dict

    def _retrieve(self, query_bundle: QueryBundle):
        from tasks.common.text import tokenize

        return super()._retrieve(QueryBundle(" ".join(tokenize(query_bundle.query_str, self._user_dict))))


def load_chunks(settings):
    from warehouse.chunks import kb_chunks

    return kb_chunks(settings.db_path, KB)


def build_peer(chunks, embedder, settings) -> dict[str, Any]:
    """The peer's vector, BM25 and fusion retrievers over `chunks`."""
    from tasks.index.views import embedding_text
    from warehouse.embedding_cache import EmbeddingCache

    hidden = ["source", "chunk_id"]  # kept for scoring, out of the embedded and BM25 text
    nodes = [TextNode(id_=c.chunk_id, text=embedding_text(c), metadata={"source": c.source, "chunk_id": c.chunk_id},
                      excluded_embed_metadata_keys=hidden, excluded_llm_metadata_keys=hidden) for c in chunks]
    cache = EmbeddingCache.for_settings(settings, embedder.model_id)
    index = VectorStoreIndex(nodes, embed_model=KbflowEmbedding(embedder, cache, settings.runtime.embedding_batch_size))
    vector = index.as_retriever(similarity_top_k=settings.retrieval.recall_k)
    bm25 = JiebaBM25Retriever(nodes, [c.tokens for c in chunks], similarity_top_k=settings.retrieval.recall_k,
                              user_dict=settings.index.bm25_user_dict or None)
    # use_async=False: both retrievers are CPU-bound here, an event loop per question would gain nothing
    fusion = QueryFusionRetriever([vector, bm25], llm=MockLLM(), mode="reciprocal_rerank", num_queries=1,
                                  similarity_top_k=RRF_TOP, use_async=False)
    return {"vector": vector, "bm25": bm25, "fusion": fusion}


def peer_ranking(nodes) -> Ranking:
    return [(n.node.metadata["chunk_id"], n.node.metadata["source"]) for n in nodes]


def kbflow_ranking(retrieval) -> Ranking:
    return [(c.chunk_id, c.source) for c in retrieval.ranked]


def scores(questions, rankings: list[Ranking]) -> dict[str, float]:
    hit1 = hit5 = rr = 0.0
    for q, ranking in zip(questions, rankings):
        rank = next((k for k, (chunk_id, source) in enumerate(ranking, 1) if q.is_gold(chunk_id, source)), None)
        hit1 += rank == 1
        hit5 += rank is not None and rank <= 5
        rr += 1.0 / rank if rank is not None and rank <= 10 else 0.0
    n = len(questions)
    return {"hit@1": hit1 / n, "hit@5": hit5 / n, "MRR@10": rr / n}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, default=Path("/tmp/kbflow-bench"))
    parser.add_argument("--questions", type=int, default=0, help="the first N rgb questions (default: all 81)")
    parser.add_argument("--quality-only", action="store_true",
                        help="rankings only: the peer answers each question once, kbflow only batched (no "
                             "one-per-call timing loop; for a loaded machine)")
    parser.add_argument("--fusion-coef", type=lambda v: tuple(float(c) for c in v.split(",")),
                        help="learned-fusion coefficients for an extra kbflow hybrid row (comma-separated)")
    parser.add_argument("--fusion-params", type=lambda v: tuple(float(c) for c in v.split(",")),
                        help="with --fusion-coef: that row's score-fusion w_vec,gain,vec_scale,bm25_scale")
    args = parser.parse_args(argv)

    from retrieval import coef_text, questions_of, retrieve_all

    from schemas.settings import load_settings
    from tasks.index.embed import Embedder, resolve_model
    from tasks.qa.retriever import Retriever

    settings = load_settings(args.home.resolve())
    if not settings.db_path.exists():
        print(f"no knowledge base under {settings.home}: build it with .venv/bin/python bench/retrieval.py "
              "--build-only", file=sys.stderr)
        return 2
    questions = questions_of("rgb_zh_refine_dev")
    questions = questions[:args.questions] if args.questions else questions
    print(f"{len(questions)} rgb_zh_refine_dev questions; {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.2f}")

    started = time.perf_counter()
    embedder = Embedder(resolve_model(settings), batch_size=settings.runtime.embedding_batch_size)
    print(f"embedding model {embedder.model_id} loaded in {time.perf_counter() - started:.1f} s, shared by both "
          f"(prompts: passage {embedder.passage_prompt!r}, query {embedder.query_prompt!r})")

    started = time.perf_counter()
    retriever = Retriever(settings, KB, embedder=embedder)
    print(f"kbflow: Retriever opened in {time.perf_counter() - started:.1f} s ({retriever.size} chunks in Chroma, "
          f"{len(retriever.bm25)} in BM25)")
    started = time.perf_counter()
    chunks = load_chunks(settings)
    encoded = embedder.encoded
    peer = build_peer(chunks, embedder, settings)
    print(f"peer: {len(chunks)} chunks read from DuckDB, VectorStoreIndex + BM25Retriever built in "
          f"{time.perf_counter() - started:.1f} s ({embedder.encoded - encoded} chunks encoded, the rest "
          "from the embedding cache)")

    # label → (mode, rescues, settings changed)
    kbflow_configs = {"kbflow vector-only": ("vector", False, {}), "kbflow BM25-only": ("bm25", False, {}),
                      "kbflow hybrid": ("hybrid", False, {}), "kbflow hybrid+rescues": ("hybrid", True, {})}
    print(f"kbflow fusion: {settings.retrieval.fusion!r}"
          + (f", coefficients {coef_text(settings.retrieval.fusion_learned_coef)}"
             if settings.retrieval.fusion in ("learned", "blend") else ""))
    if args.fusion_coef:
        held_out = {"fusion": settings.retrieval.fusion if settings.retrieval.fusion == "blend" else "learned",
                    "fusion_learned_coef": args.fusion_coef}
        if args.fusion_params:
            held_out |= dict(zip(("fusion_vector_weight", "fusion_gain", "fusion_vector_scale", "fusion_bm25_scale"),
                                 args.fusion_params))
        kbflow_configs["kbflow hybrid --fusion-coef"] = ("hybrid", False, held_out)
        print(f"kbflow hybrid --fusion-coef: {held_out['fusion']}, coefficients {coef_text(args.fusion_coef)}"
              + (f", score parameters {args.fusion_params}" if args.fusion_params else ""))

    def kbflow(label: str, qs: list) -> list:
        """kbflow's retrievals of `qs` with the pipeline `label`, in batches of qa_batch_size."""
        mode, rescues, over = kbflow_configs[label]
        retriever.settings = settings.replace(**over)
        return retrieve_all(retriever, qs, mode, rescues=rescues, batch=settings.runtime.qa_batch_size)

    peer_labels = {"vector": "peer vector (VectorIndex)", "bm25": "peer BM25 (jieba terms)",
                   "fusion": "peer QueryFusion (RRF)"}

    def one_question(label: str):
        """A callable answering one question with the pipeline `label`, returning its ranking."""
        if label in kbflow_configs:
            return lambda q: kbflow_ranking(kbflow(label, [q])[0])
        name = next(k for k, v in peer_labels.items() if v == label)
        return lambda q: peer_ranking(peer[name].retrieve(q))

    pipelines = {label: one_question(label)
                 for label in [*([] if args.quality_only else kbflow_configs), *peer_labels.values()]}
    for answer in pipelines.values():
        answer("预热")  # first-call costs outside the timings

    # one question per call, every pipeline, interleaved (order reversed every other question)
    each_s = dict.fromkeys(pipelines, 0.0)
    each_rankings: dict[str, list[Ranking]] = {label: [] for label in pipelines}
    for i, q in enumerate(questions):
        for label in (list(pipelines)[::-1] if i % 2 else pipelines):
            if not args.quality_only:
                gc.collect()  # each call pays for its own garbage, not for the previous pipeline's
            t0 = time.perf_counter()
            each_rankings[label].append(pipelines[label](q.question))
            each_s[label] += time.perf_counter() - t0

    # kbflow's batch-QA mode: its rankings are the ones scored
    batched_s: dict[str, float] = {}
    rankings = dict(each_rankings)
    for label in kbflow_configs:
        gc.collect()
        t0 = time.perf_counter()
        rs = kbflow(label, questions)
        batched_s[label] = time.perf_counter() - t0
        rankings[label] = [kbflow_ranking(r) for r in rs]

    n = len(questions)
    metrics = {label: scores(questions, rankings[label]) for label in rankings}
    print(f"\nrgb_zh_refine_dev, {n} questions, {retriever.size} chunks (peer channels: top 10 of their 100; "
          f"kbflow: its final ranking after adaptive top-k and rescues; batches of {settings.runtime.qa_batch_size}):")
    header = f"{'pipeline':<28}{'hit@1':>8}{'hit@5':>8}{'MRR@10':>8}{'q/s each':>10}{'q/s batched':>13}"
    print(header)
    print("-" * len(header))
    for label, m in metrics.items():
        batched = f"{n / batched_s[label]:.1f}" if label in batched_s else "-"
        each = f"{n / each_s[label]:.1f}" if label in each_s else "-"
        print(f"{label:<28}{m['hit@1']:>8.3f}{m['hit@5']:>8.3f}{m['MRR@10']:>8.3f}{each:>10}{batched:>13}")
    for label in (label for label in kbflow_configs if label in each_rankings):
        differing = sum(a != b for a, b in zip(each_rankings[label], rankings[label]))
        if differing:
            print(f"  {label}: {differing} of {n} rankings differ between one-per-call and batched "
                  "(query embeddings in a batch differ in the last float bits)")

    fusion = peer_labels["fusion"]
    print(f"\nratios to the peer ({fusion}):")
    for label in (label for label in kbflow_configs if label.startswith("kbflow hybrid")):
        ours, theirs = metrics[label], metrics[fusion]
        quality = "  ".join(f"{k} {ours[k]:.3f}/{theirs[k]:.3f} = {ours[k] / theirs[k]:.2f}x" if theirs[k]
                            else f"{k} {ours[k]:.3f}/0" for k in ours)
        print(f"  {label:<28} {quality}  (hit@1 {ours['hit@1'] - theirs['hit@1']:+.3f})")
        if label in each_s:
            print(f"  {'':<28} q/s: one per call {each_s[fusion] / each_s[label]:.1f}x the peer's, "
                  f"batched {each_s[fusion] / batched_s[label]:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
