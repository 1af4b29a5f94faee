"""Each post-processing pass on its own, then the whole chain on a real document."""
from __future__ import annotations

import json

from schemas.chunk import Chunk
from tasks.ingest.content_list import normalize_v1
from tasks.ingest.headings import assign_heading_levels, assign_section_paths
from tasks.ingest.postprocess import (ChunkingSettings, filter_empty, merge_fragments, merge_heading_chains, postprocess,
                               prepend_orphan_headings, split_oversize, split_text)
from tests.conftest import SVOLT_DIR, need


def H(text, level, path="", page=1):
    return Chunk(text, "heading", text_level=level, title=text, section_path=path or text, page_start=page,
                 page_end=page, source_pages=[page])


def T(text, path="", page=1, kind="text"):
    return Chunk(text, kind, section_path=path, page_start=page, page_end=page, source_pages=[page])


def test_filter_empty_keeps_images_and_tables_without_text():
    chunks = [T(""), T("  "), T("x"), Chunk("", "image", image_path="a.png"), Chunk("", "table", table_html="<table/>")]
    assert [c.chunk_type for c in filter_empty(chunks)] == ["text", "image", "table"]


def test_merge_fragments_heading_takes_its_body_and_short_text_joins():
    long = "长" * 150
    chunks = [H("一、总则", 1), T("短句一。", "一、总则"), T("短句二。", "一、总则"), T(long, "一、总则"),
              T(long, "一、总则"), Chunk("表", "table", table_html="<table/>"), T("表后短句。", "一、总则")]
    out = merge_fragments(chunks)
    assert [c.content for c in out] == ["一、总则\n短句一。\n短句二。\n" + long, long, "表", "表后短句。"]
    assert (out[0].chunk_type, out[0].text_level, out[0].title) == ("text", 1, "一、总则")


def test_merge_fragments_respects_the_cap_and_pages():
    settings = ChunkingSettings(min_merge_size=100, max_merged_size=30)
    chunks = [T("a" * 10, page=1), T("b" * 10, page=2), T("c" * 15, page=3)]
    out = merge_fragments(chunks, settings)
    assert [c.content for c in out] == ["a" * 10 + "\n" + "b" * 10, "c" * 15]
    assert (out[0].page_start, out[0].page_end, out[0].source_pages) == (1, 2, [1, 2])


def test_a_sentence_cut_between_two_paragraphs_is_one_chunk_again():
    """MinerU ends a PDF paragraph mid-sentence ("…常务委员会必" / "须完成…"): the next paragraph continues
    it, however long both are; an article or item, a heading-like line or another kind starts anew."""
    cut = "第六十条 全国人民代表大会每届任期五年。" + "全" * 100 + "，常务委员会必"
    rest = "须完成下届全国人民代表大会代表的选举。" + "选" * 100
    assert [c.content for c in merge_fragments([T(cut), T(rest)])] == [cut + rest]  # one sentence: no line break inside it
    article = "第六十一条 全国人民代表大会会议每年举行一次。" + "会" * 100
    item = "（一）修改宪法；" + "改" * 100
    heading_like = "序" * 120 + "\n6.3.2 质量控制"
    for before, after in ((cut, article), (cut, item), (heading_like, rest)):
        assert len(merge_fragments([T(before), T(after)])) == 2
    assert len(merge_fragments([T(cut), T(rest, kind="list")])) == 2


def test_a_real_constitution_article_cut_by_the_pdf_reads_whole(tmp_path):
    from schemas.settings import load_settings
    from tests.test_golden import chunks_of

    chunks = chunks_of("prc_constitution", load_settings(tmp_path))
    assert any("全国人民代表大会常务委员会必须完成下届全国人民代表大会代表的选举" in c.content for c in chunks)


def test_tables_images_equations_never_merge_with_text():
    chunks = [T("前文"), Chunk("E=mc^2", "equation"), T("中间"), Chunk("", "image", image_path="x.png"), T("后文")]
    out = merge_fragments(chunks)
    assert [c.chunk_type for c in out] == ["text", "equation", "text", "image", "text"]


def test_split_text_at_sentence_then_comma_never_inside_numbers():
    text = "第一句话。" * 30 + "第二句，" * 10
    pieces = split_text(text, 40)
    assert all(len(p) <= 40 for p in pieces) and "".join(pieces) == text
    assert all(p.endswith(("。", "，")) for p in pieces[:-1])
    numbers = "金额为1,234,567.89元，" * 8
    assert not any(p.endswith(("1,", "234,")) for p in split_text(numbers, 30))
    hard = split_text("编号12345678" * 6, 15)  # no punctuation at all: a hard cut, but not inside a number
    assert "".join(hard) == "编号12345678" * 6 and all(len(p) <= 15 for p in hard)
    assert all(not (a[-1].isdigit() and b[0].isdigit()) for a, b in zip(hard, hard[1:]))


def test_split_oversize_only_splits_text_beyond_the_limit():
    settings = ChunkingSettings(max_chunk_size=50)
    chunks = [T("句子。" * 30, "节"), T("短。"), Chunk("|" * 80, "table", table_html="<table/>")]
    out = split_oversize(chunks, settings)
    assert [len(c.content) <= 50 for c in out if c.chunk_type == "text"] == [True] * (len(out) - 1)
    assert sum(c.chunk_type == "table" for c in out) == 1 and len(out) > 3
    assert all(c.section_path == "节" for c in out[:-2])


def test_heading_chains_merge_below_h1_only():
    chunks = [H("第一章", 1), H("第一节", 2, "第一章 > 第一节"), H("一、", 3, "第一章 > 第一节 > 一、"),
              H("第二章", 1), H("第一节", 2, "第二章 > 第一节"), T("正文", "第二章 > 第一节")]
    out = merge_heading_chains(chunks)
    assert [(c.content, c.text_level, c.section_path) for c in out] == [
        ("第一章", 1, "第一章"), ("第一节\n一、", 2, "第一章 > 第一节"), ("第二章", 1, "第二章"),
        ("第一节", 2, "第二章 > 第一节"), ("正文", 0, "第二章 > 第一节")]


def test_orphan_heading_is_prepended_to_its_first_child():
    chunks = [H("四、指标与分类", 1, "四、指标与分类"), T("（一）货源属性分类\n1.紧俏品规……", "四、指标与分类 > （一）货源属性分类"),
              H("五、附则", 1), Chunk("", "image", image_path="x.png", section_path="五、附则"),
              H("六、其他", 1), T("不相关的章节", "七、别处")]
    out = prepend_orphan_headings(chunks)
    assert out[0].content == "四、指标与分类\n（一）货源属性分类\n1.紧俏品规……"
    assert out[0].section_path == "四、指标与分类 > （一）货源属性分类" and out[0].text_level == 1
    assert [c.chunk_type for c in out[1:]] == ["heading", "image", "heading", "text"]  # not across sections


def test_whole_chain_on_real_svolt_output():
    chunks = assign_section_paths(assign_heading_levels(normalize_v1(json.loads(
        next(need(SVOLT_DIR).glob("*_content_list.json")).read_text(encoding="utf-8"))).chunks))
    out = postprocess(chunks)
    assert len(out) < len(chunks)
    assert max(len(c.content) for c in out if c.chunk_type == "text") <= 1000
    # no short heading-only chunk is left where body text follows it within its section
    for heading, nxt in zip(out, out[1:]):
        if heading.chunk_type == "heading" and len(heading.content) < 20:
            assert not (nxt.chunk_type in ("text", "list") and nxt.section_path.startswith(heading.section_path))
    assert sum(c.chunk_type == "table" for c in out) == sum(c.chunk_type == "table" for c in chunks)
