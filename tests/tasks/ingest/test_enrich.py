"""semantic_content: no heading said three times (seed 000 §13.3 失配1), table summaries, figure descriptions."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from schemas.chunk import Chunk
from tasks.ingest.content_list import normalize_parsed, normalize_v2
from tasks.ingest.enrich import build_semantic_content, image_description, table_summary, text_semantic, topic
from tasks.ingest.headings import assign_section_paths
from tasks.ingest.images import attach_captions
from tests.conftest import CVPR_DIR, DOCS, REPO, need, parsed_dir_of

DEMO_DOCX = DOCS / "zh_docx" / "mineru_docx_demo_zh_en_headings_tables_images.docx"
PSR_DOCX = DOCS / "zh_docx" / "nbt_npp_periodic_safety_review_part1_draft.docx"
WATER_DOCX = REPO / "examples" / "corpus" / "water_management_policy.docx"


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("enrich_home")


def _enriched(path: Path, home: Path) -> list[Chunk]:
    chunks = assign_section_paths(normalize_parsed(parsed_dir_of(path, home)).chunks)
    return build_semantic_content(attach_captions(chunks))


def _heading(title: str, level: int, path: str) -> Chunk:
    return Chunk(title, "heading", text_level=level, title=title, section_path=path)


# ---------------------------------------------------------------- text and headings


def test_seed_defect_heading_is_not_said_three_times():
    # seed 000 §13.3 失配1: title + "主题：title" + title for a heading without a parent
    title = "三、做好货源投放前的基础工作"
    assert text_semantic(_heading(title, 1, title)) == title
    nested = _heading("（一）摸清需求", 2, f"{title} > （一）摸清需求")
    assert text_semantic(nested) == f"主题：{title}\n（一）摸清需求"


def test_topic_truncated_to_last_three_levels_and_only_when_it_adds_information():
    body = Chunk("正文内容。", "text", section_path="A > B > C > D")
    assert text_semantic(body) == "主题：B > C > D\n正文内容。"
    assert topic(body, max_levels=2) == "C > D"
    # a merged heading+body chunk already starts with its heading: the parent path is stated instead
    merged = Chunk("1.1 概述\n本节说明范围。", "text", section_path="第一章 > 1.1 概述")
    assert text_semantic(merged) == "主题：第一章\n1.1 概述\n本节说明范围。"
    # whitespace differences (MinerU keeps tabs in DOCX headings) do not defeat the check
    tabbed = _heading("1.2.2\tTable with nested table", 4, "1 X > 1.2 Y > 1.2.2\tTable with nested table")
    assert text_semantic(tabbed) == "主题：1 X > 1.2 Y\n1.2.2\tTable with nested table"
    # a parent with the same text as the heading (title page repeated as H1) is not repeated
    assert text_semantic(_heading("手册", 2, "手册 > 手册")) == "手册"
    assert text_semantic(Chunk("无章节的正文", "text")) == "无章节的正文"
    (one,) = build_semantic_content([Chunk("正文内容。", "text", section_path="A > B > C > D")], section_levels=1)
    assert one.semantic_content == "主题：D\n正文内容。"


def test_code_caption_stated_once():
    code = Chunk("1: procedure EUCLID(a, b)", "code", caption="算法 1 Euclid’s algorithm", section_path="2.3.5 算法")
    assert text_semantic(code) == "主题：2.3.5 算法\n算法 1 Euclid’s algorithm\n1: procedure EUCLID(a, b)"


@pytest.mark.parametrize("doc", [WATER_DOCX, DEMO_DOCX, PSR_DOCX])
def test_real_documents_no_repeated_lines_and_headings_once(doc, home):
    chunks = _enriched(doc, home)
    assert all(c.semantic_content.strip() for c in chunks)
    headings = [c for c in chunks if c.chunk_type == "heading"]
    assert len(headings) >= 10
    for chunk in chunks:
        if chunk.chunk_type == "table":
            continue  # table rows may legitimately repeat
        lines = [ln for ln in chunk.semantic_content.splitlines() if ln.strip()]
        assert not [ln for ln, n in Counter(lines).items() if n > 1], chunk.semantic_content
    for h in headings:
        assert h.semantic_content.count(h.title) == 1, h.semantic_content
        assert h.semantic_content.endswith(h.title) and len(h.semantic_content.splitlines()) <= 2


def test_water_policy_semantic_content(home):
    chunks = _enriched(WATER_DOCX, home)
    title = next(c for c in chunks if c.text_level == 1)
    assert title.semantic_content == "清川市水资源管理办法"
    section = next(c for c in chunks if c.title == "第一节 用水总量控制")
    assert section.semantic_content == "主题：清川市水资源管理办法 > 第二章 水资源配置与取水管理\n第一节 用水总量控制"
    body = chunks[chunks.index(section) + 1]
    assert body.semantic_content.startswith(
        "主题：清川市水资源管理办法 > 第二章 水资源配置与取水管理 > 第一节 用水总量控制\n本市实行用水总量控制制度。")


# ---------------------------------------------------------------- tables


def test_water_policy_table_summary(home):
    (table,) = [c for c in _enriched(WATER_DOCX, home) if c.chunk_type == "table"]
    assert table.semantic_content == table_summary(table) == "\n".join([
        "主题：清川市水资源管理办法 > 第二章 水资源配置与取水管理 > 第一节 用水总量控制",
        "表格：表1 各区年度用水指标（万立方米）",
        "字段：行政区、2024年度指标、2025年度指标、主要水源",
        "描述：该表包含5行数据，4列",
        "示例：行政区=东湖区, 2024年度指标=21500, 2025年度指标=21000, 主要水源=青龙湖水库",
        "",
        "行政区 | 2024年度指标 | 2025年度指标 | 主要水源",
        "东湖区 | 21500 | 21000 | 青龙湖水库",
        "西岭区 | 16800 | 16500 | 白石水库",
        "南滨区 | 19200 | 18800 | 松溪水库",
        "北塘区 | 12600 | 12400 | 柳湾水库",
        "新港区 | 9900 | 10300 | 清江过境水",
    ])


def test_table_summary_title_row_and_misaligned_header(home):
    chunks = _enriched(DEMO_DOCX, home)
    form = next(c for c in chunks if c.chunk_type == "table" and c.content.startswith("主申请人-基本情况"))
    lines = form.semantic_content.splitlines()
    # the one-cell banner row is a title, the next row holds the fields
    assert lines[1].startswith("字段：姓名、MinerU、曾用名、性别、一寸照片") and "主申请人" not in lines[1]
    # CVPR Table 1: a merged two-cell header over a seven-column body; no wrong field=value pairs
    (path,) = need(CVPR_DIR).glob("*_content_list_v2.json")
    cvpr = normalize_v2(json.loads(path.read_text(encoding="utf-8"))).chunks
    table1 = next(c for c in cvpr if c.caption.startswith("Table 1."))
    summary = table_summary(table1).splitlines()
    assert summary[:3] == ["表格：" + table1.caption, "字段：CIFAR-10-LT、CIFAR-100-LT", "描述：该表包含13行数据，7列"]
    assert summary[3] == "示例：Imbalance Ratio, 200, 100, 50, 200, 100, 50" and "=" not in summary[3]


def test_table_summary_without_html_or_rows():
    image_only = Chunk("表3 监测站分布", "table", caption="表3 监测站分布", section_path="第二节 水质监测", image_path="a.jpg")
    assert table_summary(image_only) == "主题：第二节 水质监测\n表格：表3 监测站分布"
    empty_caption = Chunk("x | y", "table", table_html="<table><tr><td>x</td><td>y</td></tr></table>")
    assert table_summary(empty_caption) == "字段：x、y\n描述：该表包含0行数据，2列\n\nx | y"


def test_table_summary_limits_are_keyword_arguments():
    html = "<table><tr>" + "".join(f"<td>f{i}</td>" for i in range(12)) + "</tr><tr>" + \
        "".join(f"<td>v{i}</td>" for i in range(12)) + "</tr></table>"
    lines = table_summary(Chunk("", "table", table_html=html), max_fields=3, max_example_fields=2).splitlines()
    assert lines[0] == "字段：f0、f1、f2等" and lines[2] == "示例：f0=v0, f1=v1"


# ---------------------------------------------------------------- figures


def test_image_description_seed_example():
    chunk = Chunk("图2.1 系统架构图", "image", page_start=5, caption="图2.1 系统架构图", figure_number="图2.1",
                  section_path="第一章 > 1.2 概述", context_before="系统由三个模块组成。", context_after="如图所示，各模块之间通过消息通信。")
    assert image_description(chunk) == (
        "图片：图2.1，系统架构图，位于「第一章 > 1.2 概述」，第5页\n"
        "前文：系统由三个模块组成。\n"
        "后文：如图所示，各模块之间通过消息通信。")


def test_image_description_without_caption_has_no_placeholder():
    chunk = Chunk("", "chart", page_start=3, section_path="A > B > C > D")
    assert image_description(chunk) == "图表：位于「B > C > D」，第3页"
    assert "图片，" not in image_description(Chunk("", "image")) and image_description(Chunk("", "image")) == "图片：第1页"


def test_image_description_number_stated_once_and_extra_content():
    # CVPR: the number sits mid-caption ("(b) … Figure 1. …"); it is not prepended again
    sub = Chunk("", "chart", page_start=2, caption="(b) 1D local loss landscape. Figure 1. Loss value", figure_number="Figure 1")
    assert image_description(sub) == "图表：(b) 1D local loss landscape. Figure 1. Loss value，第2页"
    # a sub-figure whose number came from its sibling: the number is stated, then the caption
    sib = Chunk("", "chart", page_start=2, caption="(a) 1D global loss landscape.", figure_number="Figure 1",
                chart_markdown="x | y\n1 | 2", footnote="数据来源：实验")
    assert image_description(sib) == ("图表：Figure 1，(a) 1D global loss landscape.，第2页\n注：数据来源：实验\n"
                                      "数据：\nx | y\n1 | 2")
    vlm = Chunk("", "image", caption="Figure 4 Mascot", vlm_description="A cartoon duck.")
    assert image_description(vlm) == "图片：Figure 4，Mascot，第1页\n内容：A cartoon duck."


def test_real_figures_described_with_context(home):
    chunks = _enriched(DEMO_DOCX, home)
    images = [c for c in chunks if c.chunk_type == "image"]
    assert images[0].semantic_content == ("图片：位于「MinerU supports DOCX document parsing now」，第1页\n"
                                          "后文：MinerU支持docx解析了")
    mascot = images[-1]
    assert mascot.semantic_content.startswith("图片：Figure 1，This is a cute mascot，位于「")
    chart = next(c for c in chunks if c.chunk_type == "chart")
    assert chart.semantic_content.startswith("图表：Chart 1，This is an easy line chart，位于「")
    assert "数据：\n | Series 7 | Series 5 | Series 6" in chart.semantic_content
    assert not any("图片：图片" in c.semantic_content or "图表：图表" in c.semantic_content for c in chunks)
