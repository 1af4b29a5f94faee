"""The rerank stage: each backend against what it really talks to — a tiny CrossEncoder folder built
here (no hub access), local HTTP servers speaking the TEI and the Jina/Cohere `/rerank` shapes, an
OpenAI-compatible chat endpoint for the LLM reranker — plus retries, failure per question, the
cache, and the settings that choose a backend."""
from __future__ import annotations

import json

import numpy as np
import pytest

from schemas.chunk import Chunk
from schemas.errors import LLMResponseError, SettingsError
from schemas.settings import Settings
from tasks.common.llm import ChatClient
from tasks.qa.rerank import (CrossEncoderBackend, HttpRerankBackend, LLMRerankBackend, RerankCache, Reranker,
                             parse_llm_scores, parse_rerank_response, rerank, rerank_endpoint, reranker_backend,
                             reranker_from_settings)
from tasks.qa.types import Candidate
from tests.http_fakes import FakeServer, Reply, chat_reply, scripted

QUERY = "生命数耗完即算为什么？"
TEXTS = ["计算神经科学是研究神经系统的科学。", "生命数耗完即算为踢爆。", "玩家以水枪泡封敌人。"]
RELEVANCE = [0.05, 0.97, 0.40]  # what the fake servers answer for TEXTS


def build_tiny_cross_encoder(path, texts):
    """A 1-layer BERT sequence classifier with random weights and a character WordPiece tokenizer
    built from `texts` with the `tokenizers` library: a real CrossEncoder folder, no hub access."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])}
    for ch in sorted({ch for text in texts for ch in text.lower() if not ch.isspace()}):
        vocab.setdefault(ch, len(vocab))
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=200))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True, handle_chinese_chars=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                            sep_token="[SEP]", mask_token="[MASK]", model_max_length=512).save_pretrained(path)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(path)
    return path


def tei(req):
    """Hugging Face TEI `/rerank`: {"query", "texts"} → [{"index", "score"}], best first."""
    body = req.json()
    if "texts" not in body:
        return Reply.json({"error": "missing field `texts`", "error_type": "Validation"}, 422)
    ranked = sorted(range(len(body["texts"])), key=lambda i: -RELEVANCE[TEXTS.index(body["texts"][i])])
    return Reply.json([{"index": i, "score": RELEVANCE[TEXTS.index(body["texts"][i])]} for i in ranked])


def cohere(req):
    """The Jina/Cohere shape (Infinity, Xinference, vLLM): {"model", "query", "documents", "top_n"} →
    {"results": [{"index", "relevance_score", "document"}]}, best first, top_n of them."""
    body = req.json()
    if "documents" not in body or "model" not in body:
        return Reply.json({"detail": [{"loc": ["body", "documents"], "msg": "Field required"}]}, 422)
    docs = body["documents"]
    ranked = sorted(range(len(docs)), key=lambda i: -RELEVANCE[TEXTS.index(docs[i])])[:body.get("top_n", len(docs))]
    return Reply.json({"id": "rerank-1", "model": body["model"], "usage": {"total_tokens": 42},
                       "results": [{"index": i, "document": {"text": docs[i]},
                                    "relevance_score": RELEVANCE[TEXTS.index(docs[i])]} for i in ranked]})


def http_reranker(server, api="auto", model="", tmp_path=None, **kw) -> Reranker:
    client = ChatClient(server.url, sleep=lambda s: None, max_retries=kw.pop("max_retries", 2))
    backend = HttpRerankBackend(server.url, model, api=api, client=client, **kw)
    cache = RerankCache(tmp_path / "cache" if tmp_path else None, f"http:{backend.model_id}")
    return Reranker(backend, cache=cache, concurrency=2)


# ------------------------------------------------------------------------------------------------
# the local CrossEncoder folder


def test_tiny_cross_encoder_scores_are_probabilities(tmp_path):
    texts = ["生命数耗完即算为什么？", "生命数耗完即算为踢爆。", "计算神经科学"]
    backend = CrossEncoderBackend(build_tiny_cross_encoder(tmp_path / "ce", texts))
    scores = backend.score([(texts[0], texts[1]), (texts[0], texts[2]), (texts[0], texts[1])])
    assert scores.shape == (3,) and np.all((scores > 0) & (scores < 1))
    assert scores[0] == pytest.approx(scores[2]) and scores[0] != pytest.approx(scores[1])
    assert backend.score([]).shape == (0,)
    with pytest.raises(FileNotFoundError, match="not a local model folder"):
        CrossEncoderBackend(tmp_path / "missing")
    # through the stage: one question's list, cached on disk by (model, query, text md5)
    reranker = reranker_from_settings(Settings.of(home=tmp_path / "home", rerank_model=str(tmp_path / "ce")))
    assert isinstance(reranker.backend, CrossEncoderBackend) and reranker.model_id == "ce"
    (got,) = reranker.score_lists([(texts[0], texts[1:])])
    assert got == pytest.approx(scores[:2])
    again = reranker_from_settings(Settings.of(home=tmp_path / "home", rerank_model=str(tmp_path / "ce")))
    again.backend = None  # a second run reads the disk cache: the model is never asked again
    assert again.score_lists([(texts[0], texts[1:])])[0] == pytest.approx(scores[:2]) and again.cache.hits == 2


def test_rerank_puts_probabilities_on_the_candidates_best_first():
    cands = [Candidate("a", score=0.9, chunk=Chunk(content="甲", chunk_type="text", chunk_id="a")),
             Candidate("b", score=0.1), Candidate("c", score=0.5)]
    out = rerank(cands, [0.2, 0.7, 0.2])
    assert [(c.chunk_id, c.score, c.rerank) for c in out] == [("b", 0.7, 0.7), ("a", 0.2, 0.2), ("c", 0.2, 0.2)]
    assert out[1].chunk is cands[0].chunk and cands[0].score == 0.9  # new candidates; the inputs are untouched
    assert rerank([], []) == []


# ------------------------------------------------------------------------------------------------
# HTTP /rerank endpoints


def test_tei_shape(tmp_path):
    with FakeServer(tei) as server:
        reranker = http_reranker(server, api="tei", tmp_path=tmp_path)
        (scores,) = reranker.score_lists([(QUERY, TEXTS)])
    assert scores == pytest.approx(RELEVANCE)  # input order, whatever order the server answers in
    (req,) = server.requests
    assert req.path == "/rerank" and req.json() == {"query": QUERY, "texts": TEXTS, "truncate": True}


def test_cohere_jina_shape_with_a_model(tmp_path):
    with FakeServer(cohere) as server:
        reranker = http_reranker(server, model="bge-reranker-v2-m3")
        (scores,) = reranker.score_lists([(QUERY, TEXTS)])
    assert scores == pytest.approx(RELEVANCE)
    assert server.requests[0].json() == {"model": "bge-reranker-v2-m3", "query": QUERY, "documents": TEXTS,
                                         "top_n": 3}


def test_auto_switches_shape_once_when_the_server_refuses_the_body():
    with FakeServer(tei) as server:  # a model is named, so auto starts with the Cohere shape; TEI says 422
        reranker = http_reranker(server, model="bge-reranker-base")
        first, second = reranker.score_lists([(QUERY, TEXTS), (QUERY + "？", TEXTS[:2])])
        assert first == pytest.approx(RELEVANCE) and second == pytest.approx(RELEVANCE[:2])
        assert reranker.backend.shape == "tei" and reranker.failures == 0
        sent = len(server.requests)
        reranker.score_lists([(QUERY + "!", TEXTS)])  # from now on only the shape that worked
    assert len(server.requests) == sent + 1 and "texts" in server.requests[-1].json()


def test_5xx_is_retried_then_answers(tmp_path):
    with FakeServer(scripted(Reply(503, b"loading"), Reply(502, b"bad gateway"), tei)) as server:
        reranker = http_reranker(server, api="tei")
        (scores,) = reranker.score_lists([(QUERY, TEXTS)])
    assert scores == pytest.approx(RELEVANCE) and len(server.requests) == 3 and reranker.failures == 0


def test_failure_is_per_question_and_counted():
    def flaky(req):  # one question's calls always fail, the other's succeed
        return Reply(500, b"CUDA out of memory") if req.json()["query"] == "坏" else tei(req)

    with FakeServer(flaky) as server:
        reranker = http_reranker(server, api="tei", max_retries=1)
        good, bad, garbled = reranker.score_lists([(QUERY, TEXTS), ("坏", TEXTS), ("", [])])
    assert good == pytest.approx(RELEVANCE) and bad is None and garbled is not None and len(garbled) == 0
    assert reranker.failures == 1 and "HTTP 500" in reranker.last_error
    assert sum(r.json()["query"] == "坏" for r in server.requests) == 2  # the first try and one retry


def test_scores_are_cached_by_model_query_and_text(tmp_path):
    with FakeServer(tei) as server:
        reranker = http_reranker(server, api="tei", tmp_path=tmp_path)
        reranker.score_lists([(QUERY, TEXTS[:2])])
        (scores,) = reranker.score_lists([(QUERY, TEXTS)])  # two cached, one new
        assert server.requests[-1].json()["texts"] == [TEXTS[2]] and scores == pytest.approx(RELEVANCE)
        reranker.score_lists([(QUERY + "?", TEXTS[:1])])  # another query is another key
        assert len(server.requests) == 3
        fresh = http_reranker(server, api="tei", tmp_path=tmp_path)  # the next run: from disk
        assert fresh.score_lists([(QUERY, TEXTS)])[0] == pytest.approx(RELEVANCE) and len(server.requests) == 3
        other_model = http_reranker(server, api="tei", model="m2", tmp_path=tmp_path)
        other_model.score_lists([(QUERY, TEXTS)])
        assert len(server.requests) == 4


@pytest.mark.parametrize("data, n, expected", [
    ([{"index": 1, "score": 0.9}, {"index": 0, "score": 0.1}], 2, [0.1, 0.9]),
    ({"results": [{"index": 0, "relevance_score": 0.3, "document": {"text": "x"}}]}, 1, [0.3]),
    ({"data": [{"index": 0, "score": 0.5}]}, 1, [0.5]),  # SiliconFlow-style
    ([{"index": 0, "score": 2.0}, {"index": 1, "score": -2.0}], 2, [0.8808, 0.1192]),  # raw logits → sigmoid
])
def test_rerank_response_shapes(data, n, expected):
    assert parse_rerank_response(data, n) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize("data", [{"error": "overloaded"}, [{"index": 0, "score": 0.1}], [{"index": 5, "score": 1}],
                                  [{"index": 0, "score": "high"}, {"index": 1, "score": 0.2}], "ok"])
def test_rerank_response_that_does_not_score_every_text_is_an_error(data):
    with pytest.raises(LLMResponseError):
        parse_rerank_response(data, 2)


def test_endpoint_url_and_backend_choice(tmp_path):
    assert rerank_endpoint("http://h:8080") == "http://h:8080/rerank"
    assert rerank_endpoint("http://h:9997/v1/") == "http://h:9997/v1/rerank"
    assert rerank_endpoint("https://api.jina.ai/v1/rerank") == "https://api.jina.ai/v1/rerank"
    s = Settings.of(home=tmp_path)
    assert reranker_backend(s) == "" and reranker_from_settings(s) is None
    assert reranker_backend(s.replace(rerank_url="http://h:8080")) == "http"
    assert reranker_backend(s.replace(rerank_model="/models/ce")) == "crossencoder"
    assert reranker_backend(s.replace(rerank_url="http://h", rerank_backend="off")) == ""
    with pytest.raises(SettingsError, match="rerank_backend"):
        reranker_backend(s.replace(rerank_backend="cloud"))
    with pytest.raises(SettingsError, match="llm_base_url"):
        reranker_from_settings(s.replace(rerank_backend="llm"))
    http = reranker_from_settings(s.replace(rerank_url="http://127.0.0.1:9/v1", rerank_model="bge"))
    assert http.backend.url == "http://127.0.0.1:9/v1/rerank" and http.model_id == "bge"


# ------------------------------------------------------------------------------------------------
# the LLM reranker


@pytest.mark.parametrize("text, expected", [
    ('[{"id": 1, "score": 2}, {"id": 2, "score": 9}, {"id": 3, "score": 5}]', [0.2, 0.9, 0.5]),
    ('```json\n{"scores": [1, 10, 4]}\n```', [0.1, 1.0, 0.4]),
    ('<think>ignored upstream</think>好的，评分如下：{"1": 0, "2": 8.5, "3": 3}', [0.0, 0.85, 0.3]),
    ("[1] 3/10\n[2] 9/10\n[3] 6/10", [0.3, 0.9, 0.6]),
    ("文档1：2分\n文档2：10分\n文档3：7分", [0.2, 1.0, 0.7]),
    ("Passage 1: score 1\nPassage 2 - score: 9\nPassage 3 -> 4", [0.1, 0.9, 0.4]),
    ("1. 0.1\n2. 0.95\n3. 0.5", [0.1, 0.95, 0.5]),  # probabilities as such
    ("1: 20\n2: 90\n3: 55", [0.2, 0.9, 0.55]),  # a 0-100 scale
    ("2: 8\n3: 4", [0.0, 0.8, 0.4]),  # an unscored candidate gets 0
])
def test_llm_scores_parsed_from_messy_output(text, expected):
    assert parse_llm_scores(text, 3) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["都不相关。", "3: 8", '{"verdict": "passage 2"}'])
def test_llm_scores_too_few_is_an_error(text):
    with pytest.raises(LLMResponseError):
        parse_llm_scores(text, 3)


def test_llm_reranker_through_the_chat_client():
    replies = {QUERY: chat_reply('评分：[{"id": 1, "score": 1}, {"id": 2, "score": 10}, {"id": 3, "score": 4}]'),
               "乱": chat_reply("我觉得第二条最好。")}

    def handler(req):
        user = req.json()["messages"][1]["content"]
        return replies[user.split("【问题】", 1)[1].split("\n", 1)[0]]

    with FakeServer(scripted(Reply(500, b"busy"), handler)) as server:
        client = ChatClient(server.url + "/v1", sleep=lambda s: None, max_retries=2)
        reranker = Reranker(LLMRerankBackend(client, "qwen-chat", max_chars=8), concurrency=2)
        good, messy = reranker.score_lists([(QUERY, TEXTS), ("乱", TEXTS)])
    assert good == pytest.approx([0.1, 1.0, 0.4]) and messy is None and reranker.failures == 1
    body = next(r.json() for r in server.requests if QUERY in r.json()["messages"][1]["content"])
    assert body["model"] == "qwen-chat" and "[2] 生命数耗完即算为\n" in body["messages"][1]["content"]
    assert TEXTS[1] not in body["messages"][1]["content"]  # cut to max_chars
    assert reranker.model_id.startswith("qwen-chat@")
    json.dumps(body)  # the prompt is plain JSON-serialisable text
