"""LLM/VLM enrichment against a local fake endpoint: answers feed semantic_content, failures fall
back to the offline text, the disk cache makes a re-run free, the key stays out of everything."""
from __future__ import annotations

import base64
import copy
import threading
import time
from pathlib import Path

import pytest
import requests

from schemas.chunk import Chunk
from schemas.settings import load_settings
from tasks.common import llm
from tasks.ingest.enrich import (
    EnrichStats,
    build_semantic_content,
    enrich_chunks,
    table_summary,
)
from tasks.common.llm import ChatClient
from tests.http_fakes import FakeServer, Reply, chat_reply
from tests.tasks.ingest.test_enrich import DEMO_DOCX

KEY = "sk-enrich-SECRET-42"
TABLE_HTML = ("<table><tr><td>行政区</td><td>指标</td></tr><tr><td>东湖区</td><td>21500</td></tr>"
              "<tr><td>西岭区</td><td>16800</td></tr></table>")
VLM_TEXT = "柱状图，显示2024年各区用水量，东湖区最高。"
LLM_TEXT = "该表列出各行政区的年度用水指标，东湖区最高（21500）。"


def _png(path: Path, colour: str) -> str:
    from PIL import Image

    Image.new("RGB", (8, 8), colour).save(path)
    return path.name


@pytest.fixture
def corpus(tmp_path):
    """Settings pointing nowhere yet, an images folder with two images, and fresh chunks."""
    settings = load_settings(tmp_path / "home", llm_model="qwen-test", vlm_model="vl-test", enrich_concurrency=2)
    settings.images_dir.mkdir(parents=True)
    red = _png(settings.images_dir / "0a1b.png", "red")
    blue = _png(settings.images_dir / "2c3d.png", "blue")

    def chunks() -> list[Chunk]:
        return [
            Chunk("第一章 总则", "heading", text_level=1, title="第一章 总则", section_path="第一章 总则"),
            Chunk("图1 用水量", "chart", page_start=2, caption="图1 用水量", figure_number="图1", image_path=red,
                  section_path="第一章 总则", context_before="各区用水量如下。"),
            Chunk("", "image", page_start=3, image_path=blue, section_path="第一章 总则"),
            Chunk("行政区 | 指标", "table", caption="表1 指标", table_html=TABLE_HTML, section_path="第一章 总则"),
            Chunk("正文。", "text", section_path="第一章 总则"),
        ]

    return settings, chunks


def _answer(req):
    body = req.json()
    if body["model"] == "vl-test":
        parts = body["messages"][0]["content"]
        assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
        return chat_reply(VLM_TEXT)
    assert body["model"] in ("qwen-test", "other-llm") and "东湖区 | 21500" in body["messages"][0]["content"]
    return chat_reply(LLM_TEXT)


def _with(settings, url):
    return load_settings(settings.home, llm_base_url=url + "/v1", llm_model=settings.llm.llm_model,
                         vlm_model=settings.llm.vlm_model, enrich_concurrency=settings.runtime.enrich_concurrency)


def _fast(url: str) -> ChatClient:
    return ChatClient(url + "/v1", api_key=KEY, backoff_s=0.001, max_retries=2)


def test_offline_default_makes_no_call_and_changes_nothing(corpus, monkeypatch):
    settings, chunks = corpus
    assert settings.llm.llm_base_url == ""

    def no_network(*a, **k):
        raise AssertionError("network used offline")

    monkeypatch.setattr(requests.Session, "request", no_network)
    offline = build_semantic_content(chunks())
    enriched = chunks()
    assert enrich_chunks(enriched, settings.images_dir, settings) == EnrichStats()
    assert build_semantic_content(enriched) == offline
    assert not settings.cache_dir.exists()


def test_success_feeds_semantic_content_and_key_stays_out_of_the_cache(corpus, monkeypatch):
    settings, chunks = corpus
    monkeypatch.setenv(llm.API_KEY_ENV, KEY)
    with FakeServer(_answer) as server:
        enriched = chunks()
        stats = enrich_chunks(enriched, settings.images_dir, _with(settings, server.url))
    assert (stats.images, stats.tables, stats.calls, stats.cache_hits, stats.fallbacks, stats.skipped) == (2, 1, 3, 0, 0, 0)
    assert all(r.headers["Authorization"] == f"Bearer {KEY}" for r in server.requests)
    # the image went as a data URL holding exactly the file's bytes
    sent = {base64.b64decode(r.json()["messages"][0]["content"][1]["image_url"]["url"].split(",", 1)[1])
            for r in server.requests if r.json()["model"] == "vl-test"}
    assert sent == {p.read_bytes() for p in settings.images_dir.glob("*.png")}
    build_semantic_content(enriched)
    _, chart, image, table, _ = enriched
    assert chart.vlm_description == image.vlm_description == VLM_TEXT
    assert chart.semantic_content == ("图表：图1，用水量，位于「第一章 总则」，第2页\n前文：各区用水量如下。\n"
                                      f"内容：{VLM_TEXT}")
    assert table.table_summary == LLM_TEXT
    # the LLM summary replaces the rule-based 字段/描述/示例 lines; the table text stays
    assert table.semantic_content == ("主题：第一章 总则\n表格：表1 指标\n"
                                      f"摘要：{LLM_TEXT}\n\n行政区 | 指标\n东湖区 | 21500\n西岭区 | 16800")
    assert "字段：" in table_summary(table)  # the offline summary is still what the rules give
    files = [p for p in settings.cache_dir.rglob("*") if p.is_file()]
    assert len(files) == 3 and {p.relative_to(settings.cache_dir).parts[0] for p in files} == {"vlm", "llm"}
    assert not any(KEY in p.read_text(encoding="utf-8") for p in files)


def test_429_then_success(corpus):
    settings, chunks = corpus
    seen: set[str] = set()
    lock = threading.Lock()

    def first_429(req):  # every distinct request is refused once, then answered
        with lock:
            key = req.body.decode()
            if key not in seen:
                seen.add(key)
                return Reply.json({"error": "rate limited"}, 429, {"Retry-After": "0"})
        return _answer(req)

    with FakeServer(first_429) as server:
        enriched = chunks()
        stats = enrich_chunks(enriched, settings.images_dir, _with(settings, server.url), client=_fast(server.url))
    assert (stats.calls, stats.fallbacks) == (3, 0) and len(server.requests) == 6
    assert enriched[3].table_summary == LLM_TEXT


def test_persistent_500_falls_back_counted_and_not_cached(corpus):
    settings, chunks = corpus
    offline = build_semantic_content(chunks())
    with FakeServer(lambda req: Reply(500, f"boom {req.headers.get('Authorization')}".encode())) as server:
        enriched = chunks()
        stats = enrich_chunks(enriched, settings.images_dir, _with(settings, server.url), client=_fast(server.url))
    assert (stats.calls, stats.fallbacks, stats.cache_hits) == (3, 3, 0)
    assert len(server.requests) == 9  # 3 requests x (1 + 2 retries)
    assert stats.errors and all("HTTP 500" in e and KEY not in e for e in stats.errors)
    assert build_semantic_content(enriched) == offline  # exactly the offline text
    assert not [p for p in settings.cache_dir.rglob("*") if p.is_file()]  # a failure is tried again next time


def test_a_refused_key_or_a_dead_endpoint_stops_the_document_early(tmp_path, monkeypatch):
    monkeypatch.setenv(llm.API_KEY_ENV, KEY)
    tables = [Chunk("", "table", table_html=f"<table><tr><td>k</td><td>{i}</td></tr></table>") for i in range(6)]
    with FakeServer(lambda req: Reply.json({"error": "invalid api key"}, 401)) as server:
        settings = load_settings(tmp_path / "home", llm_base_url=server.url, llm_model="m", enrich_concurrency=1)
        stats = enrich_chunks(tables, settings.images_dir, settings)
    assert (len(server.requests), stats.calls, stats.fallbacks) == (1, 1, 6)
    assert "check KBFLOW_LLM_API_KEY" in stats.errors[0] and KEY not in stats.errors[0]
    with FakeServer(lambda req: chat_reply("x")) as server:
        url = server.url  # closed: connection refused from now on
    settings = load_settings(tmp_path / "home", llm_base_url=url, llm_model="m", enrich_concurrency=1)
    client = ChatClient(url, backoff_s=0.001, max_retries=1)
    stats = enrich_chunks(tables, settings.images_dir, settings, client=client)
    assert (stats.calls, stats.fallbacks, client.requests_sent) == (3, 6, 6)
    assert all(c.table_summary == "" for c in tables)


def test_cache_hit_on_rerun_makes_no_request(corpus):
    settings, chunks = corpus
    with FakeServer(_answer) as server:
        live = _with(settings, server.url)
        first = chunks()
        enrich_chunks(first, settings.images_dir, live)
        n = len(server.requests)
        second = chunks()
        stats2 = enrich_chunks(second, settings.images_dir, live)
    assert len(server.requests) == n == 3
    assert (stats2.calls, stats2.cache_hits, stats2.fallbacks) == (0, 3, 0)
    assert build_semantic_content(second) == build_semantic_content(first)
    # a new prompt version or model is a new entry
    with FakeServer(_answer) as server:
        other = load_settings(settings.home, llm_base_url=server.url, llm_model="other-llm", vlm_model="vl-test")
        stats3 = enrich_chunks(chunks(), settings.images_dir, other)
    assert (stats3.calls, stats3.cache_hits, stats3.fallbacks) == (1, 2, 0)


def test_same_image_twice_is_one_request_and_skips(corpus):
    settings, chunks = corpus
    items = chunks()
    twin = copy.deepcopy(items[1])
    missing = Chunk("", "image", image_path="images/not_copied.jpg")
    described = Chunk("", "image", image_path=items[2].image_path, vlm_description="MinerU 的 VLM 描述")
    image_table = Chunk("表3", "table", caption="表3", image_path=items[2].image_path)
    with FakeServer(_answer) as server:
        stats = enrich_chunks(items + [twin, missing, described, image_table], settings.images_dir,
                              _with(settings, server.url))
    assert (stats.images, stats.tables, stats.calls, stats.skipped) == (5, 2, 3, 3)
    assert twin.vlm_description == VLM_TEXT and described.vlm_description == "MinerU 的 VLM 描述"
    # no vlm_model: figures are not sent at all
    with FakeServer(_answer) as server:
        no_vlm = load_settings(settings.home, llm_base_url=server.url, llm_model="qwen-test", vlm_model="")
        stats = enrich_chunks(chunks(), settings.images_dir, no_vlm)
    assert (stats.calls, stats.skipped) == (0, 2) and stats.cache_hits == 1


def test_concurrency_is_bounded(tmp_path):
    active, peak = 0, 0
    lock = threading.Lock()

    def slow(req):
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.05)
        with lock:
            active -= 1
        return chat_reply("摘要")

    tables = [Chunk("", "table", table_html=f"<table><tr><td>k</td><td>{i}</td></tr></table>") for i in range(8)]
    with FakeServer(slow) as server:
        settings = load_settings(tmp_path / "home", llm_base_url=server.url, llm_model="m", enrich_concurrency=3)
        stats = enrich_chunks(tables, settings.images_dir, settings)
    assert stats.calls == 8 and 1 < peak <= 3


def test_missing_image_file_is_skipped(corpus):
    settings, chunks = corpus
    items = chunks()
    (settings.images_dir / items[2].image_path).unlink()
    with FakeServer(_answer) as server:
        stats = enrich_chunks(items, settings.images_dir, _with(settings, server.url))
    assert (stats.skipped, stats.fallbacks, stats.calls) == (1, 0, 2) and items[2].vlm_description == ""


def test_unexpected_error_in_a_call_is_a_fallback_not_a_failure(corpus):
    settings, chunks = corpus

    class Broken:
        def chat(self, *a, **k):
            raise RuntimeError("bug in a client")

    items = chunks()
    stats = enrich_chunks(items, settings.images_dir, _with(settings, "http://127.0.0.1:9"), client=Broken())
    assert (stats.calls, stats.fallbacks) == (3, 3) and "RuntimeError" in stats.errors[0]
    assert build_semantic_content(items) == build_semantic_content(chunks())


def test_second_build_of_a_real_document_makes_zero_calls(tmp_path, monkeypatch):
    """The chunk stage of a real DOCX (images, a chart, tables) twice: the second pays nothing."""
    from tasks.ingest.chunk import build_chunks
    from tests.conftest import need, parsed_dir_of

    home = tmp_path / "home"
    parsed = parsed_dir_of(need(DEMO_DOCX), home)
    monkeypatch.setenv(llm.API_KEY_ENV, KEY)
    with FakeServer(lambda req: chat_reply(f"描述 {len(req.body)}")) as server:
        settings = load_settings(home, llm_base_url=server.url + "/v1", llm_model="qwen-test", vlm_model="vl-test")
        first = build_chunks(parsed, settings, kb="kb", doc_md5="x", source="demo.docx")
        n = len(server.requests)
        second = build_chunks(parsed, settings, kb="kb", doc_md5="x", source="demo.docx")
    e1, e2 = first.enrichment, second.enrichment
    assert e1.calls == n > 5 and e1.fallbacks == 0 and e1.images >= 1 and e1.tables >= 5
    assert (e2.calls, e2.fallbacks, e2.cache_hits) == (0, 0, e1.calls) and len(server.requests) == n
    assert [c.semantic_content for c in second.chunks] == [c.semantic_content for c in first.chunks]
    assert any(c.vlm_description.startswith("描述") for c in second.chunks)
    assert any(c.table_summary.startswith("描述") and "摘要：描述" in c.semantic_content for c in second.chunks)
    assert not any(KEY in p.read_text(encoding="utf-8") for p in settings.cache_dir.rglob("*.json"))
