"""Normalization of real MinerU content lists (v1 2.7.6, v1+v2 3.4.4) and of edge cases."""
from __future__ import annotations

import json
from collections import Counter

from schemas.chunk import Chunk
from tasks.ingest.content_list import normalize_parsed, normalize_v1, normalize_v2, strip_bold
from tests.conftest import CVPR_DIR, SVOLT_DIR, need


def _load(folder, suffix):
    (path,) = need(folder).glob(f"*{suffix}")
    return json.loads(path.read_text(encoding="utf-8"))


def _types(chunks: list[Chunk]) -> Counter:
    return Counter(c.chunk_type for c in chunks)


def test_svolt_v1_counts_drop_furniture_empties_and_ghost_tables():
    # Counted by hand in the file: 208 items = 168 text (48 titles at level 1, 1 empty) + 22 discarded
    # + 17 tables (5 ghost continuations on page_idx 3/5/9/12/15 with no body and img_path "") + 1 image.
    items = _load(SVOLT_DIR, "_content_list.json")
    result = normalize_v1(items)
    assert result.items_total == 208
    assert _types(result.chunks) == {"text": 119, "heading": 48, "table": 12, "image": 1}
    assert result.dropped_furniture == 22
    assert result.dropped_empty == 1
    assert result.dropped_ghost == 5
    ghost_pages = sorted(i["page_idx"] for i in items if i["type"] == "table" and not i.get("table_body"))
    assert ghost_pages == [3, 5, 9, 12, 15]


def test_svolt_tables_keep_html_and_readable_text():
    result = normalize_v1(_load(SVOLT_DIR, "_content_list.json"))
    tables = [c for c in result.chunks if c.chunk_type == "table"]
    assert all(t.table_html and t.table_html.startswith("<table") for t in tables)
    # rows rendered as cell text, not raw HTML; one table has a single column
    assert sum(" | " in t.content for t in tables) == 11
    assert all("<td" not in t.content and "<tr" not in t.content for t in tables)
    single = next(t for t in tables if " | " not in t.content)
    assert single.content == "-30°C≤T<55C\n2.0 V"  # entities decoded


def test_cvpr_v1_and_v2_agree():
    # 130 items each: 86 text/paragraph+title (21 titles, 11 empty), 16 equations, 4 tables, 3 charts,
    # 3 lists, 2 images, 1 code/algorithm; furniture = 11 page_number + 2 header + 2 page_footnote.
    v1 = normalize_v1(_load(CVPR_DIR, "_content_list.json"))
    v2 = normalize_v2(_load(CVPR_DIR, "_content_list_v2.json"))
    expected = {"text": 54, "heading": 21, "equation": 16, "table": 4, "chart": 3, "list": 3, "image": 2, "code": 1}
    for result in (v1, v2):
        assert result.items_total == 130
        assert _types(result.chunks) == expected
        assert (result.dropped_furniture, result.dropped_empty, result.dropped_ghost) == (15, 11, 0)
    assert [c.chunk_type for c in v1.chunks] == [c.chunk_type for c in v2.chunks]
    assert [c.page_start for c in v1.chunks] == [c.page_start for c in v2.chunks]
    assert [c.text_level for c in v1.chunks] == [c.text_level for c in v2.chunks]
    assert Counter(c.text_level for c in v2.chunks if c.text_level) == {1: 1, 2: 20}


def test_cvpr_v2_carries_captions_bbox_and_image_paths():
    v2 = normalize_v2(_load(CVPR_DIR, "_content_list_v2.json"))
    tables = [c for c in v2.chunks if c.chunk_type == "table"]
    assert tables[0].caption.startswith("Table 1. Top-1 Accuracy on CIFAR-10-LT")
    assert tables[0].image_path.startswith("images/")
    charts = [c for c in v2.chunks if c.chunk_type == "chart"]
    assert charts[0].caption == "(a) 1D global loss landscape."
    assert all(c.bbox and len(c.bbox) == 4 for c in v2.chunks)
    assert v2.chunks[0].page_start == 1 and v2.chunks[-1].page_start == 11


def test_normalize_parsed_prefers_v2(tmp_path):
    (tmp_path / "content_list.json").write_text(json.dumps([{"type": "text", "text": "from v1", "page_idx": 0}]))
    (tmp_path / "content_list_v2.json").write_text(json.dumps(
        [[{"type": "paragraph", "content": {"paragraph_content": [{"type": "text", "content": "from v2"}]}}]]))
    result = normalize_parsed(tmp_path)
    assert result.format == "v2" and result.chunks[0].content == "from v2"
    (tmp_path / "content_list_v2.json").unlink()
    assert normalize_parsed(tmp_path).chunks[0].content == "from v1"


def test_heading_bold_is_stripped_and_levels_kept():
    result = normalize_v1([
        {"type": "text", "text": "**第一章 总则**", "text_level": 1, "page_idx": 0},
        {"type": "text", "text": "本办法适用于**全市**。", "page_idx": 0},
    ])
    heading, body = result.chunks
    assert (heading.chunk_type, heading.content, heading.title, heading.text_level) == ("heading", "第一章 总则", "第一章 总则", 1)
    assert body.content == "本办法适用于**全市**。"  # body text is left as MinerU wrote it
    assert strip_bold("__A__ and **B**") == "A and B"


def test_edge_cases_empty_lists_whitespace_and_keep_furniture():
    items = [
        {"type": "text", "text": "   ", "page_idx": 0},
        {"type": "list", "list_items": [], "page_idx": 0},
        {"type": "equation", "text": "", "page_idx": 0},
        {"type": "image", "img_path": "", "image_caption": [], "page_idx": 0},
        {"type": "page_number", "text": "3", "page_idx": 2},
        {"type": "code", "code_body": "print(1)", "code_caption": ["Listing 1"], "sub_type": "code", "page_idx": 1},
        {"type": "mystery", "text": "unknown types keep their text", "page_idx": 1},
    ]
    result = normalize_v1(items)
    assert [c.chunk_type for c in result.chunks] == ["code", "text"]
    assert result.chunks[1].item_type == "mystery"
    assert (result.dropped_empty, result.dropped_furniture) == (4, 1)
    kept = normalize_v1(items, keep_furniture=True)
    assert [c.item_type for c in kept.chunks] == ["page_number", "code", "mystery"]
    assert kept.chunks[0].page_start == 3


def test_v2_title_from_paragraph_content_and_spans_flattened():
    pages = [[
        {"type": "title", "content": {"paragraph_content": [{"type": "text", "content": "DOCX title"}], "level": 2}},
        {"type": "paragraph", "content": {"paragraph_content": [
            {"type": "text", "content": "E = "}, {"type": "equation_inline", "content": "mc^2"},
            {"type": "hyperlink", "content": " link", "url": "https://example.org"}]}},
        {"type": "list", "content": {"list_type": "text_list", "list_items": [
            {"item_type": "text", "item_content": [{"type": "text", "content": "one"}]},
            {"item_type": "text", "item_content": []}]}},
    ]]
    title, para, lst = normalize_v2(pages).chunks
    assert (title.chunk_type, title.text_level, title.content) == ("heading", 2, "DOCX title")
    assert para.content == "E = $mc^2$ link"
    assert lst.content == "one" and lst.sub_type == "text_list"
