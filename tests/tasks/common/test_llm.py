"""The OpenAI-compatible client against a local fake endpoint: answers, retries, errors, the key, the cache."""
from __future__ import annotations

import json
import time

import pytest

from tasks.common import llm
from tasks.common.llm import (
    ChatClient,
    DiskCache,
    LLMAuthError,
    LLMConfigError,
    LLMRequestError,
    LLMResponseError,
    LLMUnavailableError,
    content_md5,
)
from tests.http_fakes import FakeServer, Reply, chat_reply, scripted

KEY = "sk-test-SECRET-0123456789"
MESSAGES = [{"role": "user", "content": "你好"}]


def _client(server: FakeServer, sleeps: list[float] | None = None, **kw) -> ChatClient:
    sleeps = sleeps if sleeps is not None else []
    return ChatClient(server.url + "/v1", api_key=KEY, sleep=sleeps.append, **kw)


def test_chat_success_request_shape():
    with FakeServer(lambda req: chat_reply("  您好！  ")) as server:
        text = _client(server).chat(MESSAGES, model="qwen-test", temperature=0.2, max_tokens=64, top_p=0.9)
    assert text == "您好！"
    (req,) = server.requests
    assert (req.method, req.path) == ("POST", "/v1/chat/completions")
    assert req.headers["Authorization"] == f"Bearer {KEY}"
    assert req.json() == {"model": "qwen-test", "messages": MESSAGES, "temperature": 0.2, "max_tokens": 64, "top_p": 0.9}


def test_key_from_env_only_and_optional(monkeypatch):
    monkeypatch.setenv(llm.API_KEY_ENV, KEY)
    with FakeServer(lambda req: chat_reply("ok")) as server:
        assert llm.chat(MESSAGES, model="m", base_url=server.url + "/v1/") == "ok"
        monkeypatch.delenv(llm.API_KEY_ENV)
        assert ChatClient.from_env(server.url + "/v1/chat/completions").chat(MESSAGES, model="m") == "ok"
    first, second = server.requests
    assert first.headers["Authorization"] == f"Bearer {KEY}" and "Authorization" not in second.headers
    assert second.path == "/v1/chat/completions"  # a full endpoint URL is used as is
    assert KEY not in repr(ChatClient(server.url, api_key=KEY))


def test_429_then_success_honours_retry_after():
    sleeps: list[float] = []
    handler = scripted(Reply.json({"error": "slow down"}, 429, {"Retry-After": "3"}), chat_reply("done"))
    with FakeServer(handler) as server:
        assert _client(server, sleeps).chat(MESSAGES, model="m") == "done"
    assert len(server.requests) == 2 and sleeps == [3.0]


def test_persistent_500_gives_up_with_exponential_backoff():
    sleeps: list[float] = []
    with FakeServer(lambda req: Reply(500, b"upstream exploded")) as server:
        with pytest.raises(LLMUnavailableError, match="HTTP 500.*gave up after 4 attempts") as info:
            _client(server, sleeps, max_retries=3, backoff_s=1.0).chat(MESSAGES, model="m")
    assert len(server.requests) == 4 and info.value.status == 500
    # 1, 2, 4 s with jitter in [0.5, 1.0] of each
    assert [0.5 <= s / base <= 1.0 for s, base in zip(sleeps, (1, 2, 4))] == [True] * 3


def test_timeout_is_retried():
    handler = scripted(Reply(200, b"{}", delay_s=1.0), chat_reply("on time"))
    started = time.monotonic()
    with FakeServer(handler) as server:
        text = _client(server, read_timeout_s=0.2).chat(MESSAGES, model="m")
    assert text == "on time" and len(server.requests) == 2
    assert time.monotonic() - started < 5


def test_connection_refused_is_unavailable():
    with FakeServer(lambda req: chat_reply("x")) as server:
        url = server.url
    with pytest.raises(LLMUnavailableError, match="connection failed"):
        ChatClient(url, max_retries=1, sleep=lambda s: None).chat(MESSAGES, model="m")


def test_auth_error_not_retried_and_key_never_in_message():
    # a careless server echoes the Authorization header in its error body
    echo = lambda req: Reply.json({"error": {"message": f"bad key {req.headers['Authorization']}"}}, 401)
    with FakeServer(echo) as server:
        with pytest.raises(LLMAuthError) as info:
            _client(server).chat(MESSAGES, model="m")
    assert len(server.requests) == 1
    message = str(info.value)
    assert KEY not in message and "***" in message and llm.API_KEY_ENV in message


def test_other_4xx_not_retried():
    with FakeServer(lambda req: Reply.json({"error": "model not found"}, 404)) as server:
        with pytest.raises(LLMRequestError, match="HTTP 404 for model 'nope'"):
            _client(server).chat(MESSAGES, model="nope")
    assert len(server.requests) == 1


@pytest.mark.parametrize("body, match", [
    (b"<html>gateway</html>", "not JSON"),
    (json.dumps({"error": {"message": "quota"}}).encode(), "not a chat completion"),
    (json.dumps({"choices": [{"message": {"content": ""}, "finish_reason": "length"}]}).encode(), "empty answer"),
    (json.dumps({"choices": [{"message": {"content": "<think>hmm</think>"}}]}).encode(), "empty answer"),
])
def test_malformed_answers(body, match):
    with FakeServer(lambda req: Reply(200, body)) as server:
        with pytest.raises(LLMResponseError, match=match):
            _client(server).chat(MESSAGES, model="m")


def test_reasoning_block_and_content_parts():
    parts = {"choices": [{"message": {"content": [{"type": "text", "text": "第一"}, {"type": "text", "text": "第二"}]}}]}
    handler = scripted(chat_reply("<think>\nlet me see\n</think>\n答案"), Reply.json(parts))
    with FakeServer(handler) as server:
        client = _client(server)
        assert client.chat(MESSAGES, model="m") == "答案"
        assert client.chat(MESSAGES, model="m") == "第一第二"


def test_config_errors():
    for url in ("", "ftp://x", "localhost:8000"):
        with pytest.raises(LLMConfigError):
            ChatClient(url)
    with pytest.raises(LLMConfigError, match="no model"):
        ChatClient("http://127.0.0.1:9").chat(MESSAGES, model="")


def test_disk_cache_roundtrip_keys_and_atomicity(tmp_path):
    cache = DiskCache(tmp_path / "llm")
    md5 = content_md5("表题", "a | b")
    assert cache.get("m", "p1", md5) is None
    path = cache.put("m", "p1", md5, "摘要")
    assert cache.get("m", "p1", md5) == "摘要"
    # any part of the key changes the entry
    assert cache.get("m2", "p1", md5) is None and cache.get("m", "p2", md5) is None
    assert cache.get("m", "p1", content_md5("表题a", " | b")) is None
    assert json.loads(path.read_text(encoding="utf-8"))["text"] == "摘要"
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp files left
    path.write_text("{truncated", encoding="utf-8")
    assert cache.get("m", "p1", md5) is None  # unreadable: a miss, not a crash
    cache.put("m", "p1", md5, "again")
    assert cache.get("m", "p1", md5) == "again"
