"""Heading levels across MinerU's version quirks, Chinese numbering rules, section paths."""
from __future__ import annotations

import json

import pytest

from schemas.chunk import Chunk
from tasks.ingest.content_list import normalize_parsed, normalize_v1, normalize_v2
from tasks.ingest.headings import HeadingRules, assign_heading_levels, assign_section_paths, heading_length, numbering_of
from tasks.ingest.parse.text_reader import read_text_document
from tests.conftest import CVPR_DIR, DOCS, SVOLT_DIR, need


def H(text: str, level: int, page: int = 1) -> Chunk:
    return Chunk(text, "heading", text_level=level, title=text, page_start=page, page_end=page)


def T(text: str, page: int = 1) -> Chunk:
    return Chunk(text, "text", page_start=page, page_end=page)


def _levels(chunks):
    return [(c.content, c.chunk_type, c.text_level) for c in chunks]


@pytest.mark.parametrize("text, expected", [
    ("第一编 总则", "part"), ("第一章 总则", "chapter"), ("第一章　总　纲", "chapter"), ("第三节 国务院", "section"),
    ("第十条 本法", "article"), ("一、主要财务数据", "cn_item"), ("（一） 主要会计", "cn_paren"),
    ("(二)选举", "cn_paren"), ("1 样品电性能指标", "arabic1"), ("1. Introduction", "arabic1"),
    ("1.1 范围", "arabic2"), ("1.1.1 标准", "arabic3"), ("1.2.3.4 细则", "arabic4"), ("(1) 说明", "arabic_paren"),
    ("1、方法", "arabic_dun"), ("① 注意", "circled"),
    # no boundary after the number: body sentences, not headings
    ("第二章所述的条件", None), ("11.5.14.2的试验", None), ("1.1概述", None), ("12 月 4 日公布", None),
    ("2025 年工作", None), ("3.14 是圆周率", "arabic2"),
])
def test_numbering_requires_a_boundary(text, expected):
    assert numbering_of(text) == expected


def test_lenient_numbering_for_text_mineru_marked_as_heading():
    assert numbering_of("1.1概述", lenient=True) == "arabic2"
    assert numbering_of("6.1.2差异项分析", lenient=True) == "arabic3"


def test_v4_flash_docx_levels_are_compressed_and_title_kept():
    # v4 flash: Title=1, H1=2, H2=3
    chunks = [H("水资源管理办法", 1), H("第一章 总则", 2), T("正文"), H("第一节 目的", 3), T("正文"), H("第二章 配置", 2)]
    assign_heading_levels(chunks)
    assert [c.text_level for c in chunks] == [1, 1, 0, 2, 0, 1]
    assert [c.section_path for c in assign_section_paths(chunks)] == [
        "水资源管理办法", "第一章 总则", "第一章 总则", "第一章 总则 > 第一节 目的", "第一章 总则 > 第一节 目的", "第二章 配置"]


def test_v3_levels_without_a_title_stay_as_they_are():
    chunks = [H("1 范围", 1), H("1.1 目的", 2), T("x"), H("2 术语", 1)]
    assert [c.text_level for c in assign_heading_levels(chunks)] == [1, 2, 0, 1]


def test_flat_levels_use_numbering_ranks_relative_to_the_document():
    # text PDFs: every heading 2; government numbering 一、 > （一） > 1.
    chunks = [H("年度报告", 1), H("一、主要财务数据", 2), H("（一）会计数据", 2), H("1. 说明", 2), T("正文"),
              H("二、股东信息", 2), H("风险提示", 2)]
    assign_heading_levels(chunks)
    assert [c.text_level for c in chunks] == [1, 1, 2, 3, 0, 1, 1]  # unnumbered: sibling of the previous


def test_flat_levels_promote_numbered_body_text_but_not_sentences():
    chunks = [T("第一章 总 纲"), T("第一条 中华人民共和国是工人阶级领导的、以工农联盟为基础的人民民主专政的社会主义国家。"),
              T("第二章所述的权利"), T("第三章 国家机构"), T("第一节 全国人民代表大会"),
              T("(六)选举中央军事委员会主席，根据提名，决定"), T("第七节 人民法院和人民检察院第四章 国旗"), T("序 言")]
    assign_heading_levels(chunks)
    assert _levels(chunks) == [
        ("第一章 总 纲", "heading", 1), (chunks[1].content, "text", 0), ("第二章所述的权利", "text", 0),
        ("第三章 国家机构", "heading", 1), ("第一节 全国人民代表大会", "heading", 2),
        ("(六)选举中央军事委员会主席，根据提名，决定", "text", 0), ("第七节 人民法院和人民检察院第四章 国旗", "text", 0),
        ("序 言", "heading", 2)]


def test_table_of_contents_entries_are_not_headings():
    chunks = [H("目 录", 2), T("第一节 总则"), T("第二节 分则"), T("第一章 总则", page=2), T("第一节 总则", page=2)]
    assign_heading_levels(chunks)
    assert [c.chunk_type for c in chunks] == ["heading", "text", "text", "heading", "heading"]


def test_contents_of_a_document_without_pages_end_at_its_next_heading(tmp_path):
    # a Markdown file is one "page": "## Contents" (its entries a table) must not demote every "##" after it
    read_text_document(need(DOCS / "en" / "groundtruth" / "redp5110_sampled.md"), tmp_path, markdown=True)
    chunks = assign_section_paths(assign_heading_levels(normalize_parsed(tmp_path).chunks))
    headings = [c.content for c in chunks if c.chunk_type == "heading"]
    assert "Contents" in headings and "1.2  Current state of IBM i security" in headings and "Preface" in headings
    (body,) = [c for c in chunks if c.content.startswith("Many businesses are trying to limit data access")]
    assert body.section_path.endswith("1.2  Current state of IBM i security")
    # a PDF's contents still run to the end of their page, whatever its parser marks as headings there
    paged = [H("目 录", 2), H("第一章 总则", 2), H("第一章 总则", 2, page=2), T("正文", page=2)]
    assign_heading_levels(paged)
    assert [c.chunk_type for c in paged] == ["heading", "text", "heading", "text"]


def test_length_caps_and_sentence_endings_demote_to_body():
    rules = HeadingRules()
    long_h1 = "一、" + "很" * 40  # 42 CJK characters > 40
    chunks = [H(long_h1, 2), H("二、短标题", 2), H("三、这是一句话。", 2), H("（一）" + "长" * 55, 2), H("**四、加粗**", 2)]
    assign_heading_levels(chunks, rules)
    assert [(c.chunk_type, c.text_level) for c in chunks] == [
        ("text", 0), ("heading", 1), ("text", 0), ("heading", 2), ("heading", 1)]
    assert chunks[4].content == chunks[4].title == "四、加粗"  # markdown bold stripped
    assert assign_heading_levels([H("（一）" + "长" * 58, 2)])[0].chunk_type == "text"  # H2 > 60
    assert heading_length("Deep Long-Tailed Recognition") == 13  # English counts half
    continued = assign_heading_levels([H("Title", 1), H("1 Intro", 2), H("is a very long title.", 2), H("• 仿宋", 2)])
    assert [c.chunk_type for c in continued] == ["heading", "heading", "text", "text"]


def test_svolt_2x_all_level_1_gets_numbered_hierarchy():
    chunks = assign_section_paths(assign_heading_levels(normalize_v1(json.loads(
        next(need(SVOLT_DIR).glob("*_content_list.json")).read_text(encoding="utf-8"))).chunks))
    by_title = {c.title: c for c in chunks if c.chunk_type == "heading"}
    assert by_title["1 样品电性能指标 Cell Performance"].text_level == 1
    assert by_title["1.2 标准充电条件(模式) Standard Charge Condition"].text_level == 2
    level3 = next(c for t, c in by_title.items() if t.startswith("1.2.1 "))
    assert level3.text_level == 3
    assert level3.section_path.startswith("1 样品电性能指标 Cell Performance > 1.2 标准充电条件")


def test_cvpr_v3_title_and_numbered_sections():
    chunks = assign_section_paths(assign_heading_levels(normalize_v2(json.loads(
        next(need(CVPR_DIR).glob("*_content_list_v2.json")).read_text(encoding="utf-8"))).chunks))
    headings = [(c.text_level, c.content) for c in chunks if c.chunk_type == "heading"]
    assert headings[0] == (1, "Class-Conditional Sharpness-Aware Minimization for Deep Long-Tailed Recognition")
    assert (1, "1. Introduction") in headings
    sub = next(c for c in chunks if c.chunk_type == "heading" and c.text_level == 2)
    assert " > " in sub.section_path
