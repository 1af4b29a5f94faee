"""Images and captions on real parser output: DOCX/PDF through MinerU flash, the CVPR cloud-API sample."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from schemas.chunk import Chunk
from tasks.ingest.content_list import normalize_parsed, normalize_v2
from tasks.ingest.headings import assign_section_paths
from tasks.ingest.images import attach_captions, copy_images, figure_number, is_caption_text, split_caption, table_image_refs
from tests.conftest import CVPR_DIR, DOCS, REPO, need, parsed_dir_of

DEMO_DOCX = DOCS / "zh_docx" / "mineru_docx_demo_zh_en_headings_tables_images.docx"
CONTRACT_DOCX = DOCS / "zh_docx" / "procurement_contract_headings_table_images.docx"
THESIS_PDF = DOCS / "zh_pdf" / "ucasthesis_template_guide.pdf"
WATER_DOCX = REPO / "examples" / "corpus" / "water_management_policy.docx"


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("images_home")


def _parse(path: Path, home: Path) -> Path:
    return parsed_dir_of(path, home)


def _chunks(parsed_dir: Path) -> list[Chunk]:
    return assign_section_paths(normalize_parsed(parsed_dir).chunks)


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def _captions_docx(path: Path) -> Path:
    """A DOCX as people write it: plain paragraphs (not Word's Caption style) as captions."""
    from docx import Document
    from docx.shared import Inches
    from PIL import Image, ImageDraw

    arch = Image.new("RGB", (300, 200), "white")
    ImageDraw.Draw(arch).rectangle((20, 20, 280, 180), outline="blue", width=5)
    arch.save(path.with_name("arch.png"))
    Image.new("RGB", (200, 200), "yellow").save(path.with_name("photo.png"))
    doc = Document()
    doc.add_heading("第一章 系统概述", level=1)
    doc.add_paragraph("系统由采集、处理和展示三个模块组成，各模块通过消息队列通信。")
    doc.add_picture(str(path.with_name("arch.png")), width=Inches(3))
    doc.add_paragraph("图1.1 系统架构示意图")
    doc.add_paragraph("如图1.1所示，采集模块负责从传感器读取水位数据。")
    doc.add_heading("1.2 设备", level=2)
    doc.add_paragraph("表1.2 主要设备清单")
    table = doc.add_table(rows=3, cols=3)
    for r, row in enumerate([["设备", "数量", "单位"], ["水位计", "12", "台"], ["雨量计", "8", "台"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    doc.add_paragraph("设备由市水务局统一采购。")
    doc.add_picture(str(path.with_name("photo.png")), width=Inches(1))
    doc.add_paragraph("以上为现场照片。")
    doc.save(path)
    return path


# ---------------------------------------------------------------- copy_images


def test_demo_docx_images_copied_by_content_md5_and_deduped(home, tmp_path):
    parsed = _parse(DEMO_DOCX, home)
    chunks = _chunks(parsed)
    originals = {c.image_path for c in chunks if c.image_path}
    # 7 standalone images + the mascot "Figure 1"; two more images live only inside table HTML
    assert len(originals) == 8 and not any(c.images for c in chunks)
    images_dir = tmp_path / "images"
    result = copy_images(chunks, parsed, images_dir)

    # page_0_image_1.png (title logo) and page_2_image_67.png (Figure 1) are the same bytes
    assert _md5(parsed / "images/page_0_image_1.png") == _md5(parsed / "images/page_2_image_67.png")
    assert (result.copied, result.reused, result.missing, result.rejected) == (10, 1, [], [])
    files = sorted(p.name for p in images_dir.iterdir())
    assert len(files) == 10  # 11 source files, one duplicate
    for name in files:
        assert name == _md5(images_dir / name) + Path(name).suffix and name == name.lower()
    logo, mascot = (c for c in chunks if c.image_path == _md5(parsed / "images/page_0_image_1.png") + ".png")
    assert (logo.page_start, mascot.caption) == (1, "Figure 1: This is a cute mascot")
    # every reference is now a bare file name inside images_dir
    for chunk in chunks:
        for name in ([chunk.image_path] if chunk.image_path else []) + chunk.images:
            assert "/" not in name and (images_dir / name).is_file()


def test_table_html_images_extracted_and_rewritten(home, tmp_path):
    parsed = _parse(DEMO_DOCX, home)
    chunks = _chunks(parsed)
    with_pictures = [c for c in chunks if c.table_html and "<img" in c.table_html]
    assert [table_image_refs(c.table_html) for c in with_pictures] == [
        ["images/page_2_table_image_23_1.gif", "images/page_2_table_image_23_2.gif"],
        ["images/page_2_table_image_32_1.gif"],
    ]
    copy_images(chunks, parsed, tmp_path / "images")
    first, form = with_pictures
    assert first.images == [_md5(parsed / "images/page_2_table_image_23_1.gif") + ".gif",
                            _md5(parsed / "images/page_2_table_image_23_2.gif") + ".gif"]
    assert form.images == [_md5(parsed / "images/page_2_table_image_32_1.gif") + ".gif"]
    # the HTML points at the copies, so it renders from images_dir
    assert table_image_refs(first.table_html) == first.images
    assert "images/" not in first.table_html and "images/" not in form.table_html


def test_copy_is_idempotent(home, tmp_path):
    parsed = _parse(DEMO_DOCX, home)
    images_dir = tmp_path / "images"
    copy_images(_chunks(parsed), parsed, images_dir)
    before = {p.name: p.stat().st_mtime_ns for p in images_dir.iterdir()}
    again = copy_images(_chunks(parsed), parsed, images_dir)
    assert (again.copied, again.reused) == (0, 11)
    assert {p.name: p.stat().st_mtime_ns for p in images_dir.iterdir()} == before


def test_cvpr_sample_images_missing_are_counted_not_fatal(tmp_path):
    # The cloud-API zip sample ships without images/: 3 charts, 2 images, 4 tables, 16 equations
    # all reference files that are not there.
    (path,) = need(CVPR_DIR).glob("*_content_list_v2.json")
    chunks = normalize_v2(json.loads(path.read_text(encoding="utf-8"))).chunks
    refs = [c.image_path for c in chunks if c.image_path]
    assert len(refs) == 25
    result = copy_images(chunks, CVPR_DIR, tmp_path / "images")
    assert (result.copied, result.reused, result.rejected) == (0, 0, [])
    assert sorted(result.missing) == sorted(refs)
    assert [c.image_path for c in chunks if c.image_path] == refs  # original paths kept
    assert list((tmp_path / "images").iterdir()) == []


def test_unsafe_paths_rejected_and_nothing_written_outside(tmp_path):
    parsed = tmp_path / "parsed"
    (parsed / "images").mkdir(parents=True)
    (parsed / "images" / "Ok.PNG").write_bytes(b"png bytes")
    (tmp_path / "secret.png").write_bytes(b"secret")
    os.symlink(tmp_path / "secret.png", parsed / "images" / "link.png")
    chunks = [
        Chunk("", "image", image_path="../secret.png"),
        Chunk("", "image", image_path=str(tmp_path / "secret.png")),
        Chunk("", "image", image_path="images/../../secret.png"),
        Chunk("", "image", image_path="images/link.png"),  # a symlink out of the parse folder
        Chunk("", "image", image_path="images/Ok.PNG"),
        Chunk("t", "table", table_html='<table><tr><td><img src="../secret.png"><img src="images/Ok.PNG"></td></tr></table>'),
    ]
    images_dir = tmp_path / "out" / "images"
    result = copy_images(chunks, parsed, images_dir)
    ok = hashlib.md5(b"png bytes").hexdigest() + ".png"  # extension lowercased
    assert [c.image_path for c in chunks[:5]] == [None, None, None, None, ok]
    # counted once per distinct reference
    assert len(result.rejected) == 4 and (result.copied, result.reused) == (1, 0)
    assert chunks[5].images == [ok]
    assert chunks[5].table_html == f'<table><tr><td><img src=""><img src="{ok}"></td></tr></table>'
    assert [p.name for p in images_dir.iterdir()] == [ok]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "parsed", "secret.png"]


# ---------------------------------------------------------------- numbers and caption detection


@pytest.mark.parametrize("caption, number", [
    ("图 2.1 Q 判据等值面图，同时测试一下一个很长的标题", "图2.1"),  # ucasthesis
    ("图1:公司季度营业收入及增速（亿元，%）", "图1"),  # broker report
    ("表1 各区年度用水指标（万立方米）", "表1"),  # water policy docx
    ("Table 1. Top-1 Accuracy on CIFAR-10-LT and CIFAR-100-LT.", "Table 1"),  # CVPR
    ("(b) 1D local loss landscape. Figure 1. Loss value vs. noise norm ratio", "Figure 1"),
    ("Figure 1: This is a cute mascot", "Figure 1"),
    ("图表 1", "图表1"), ("表格 1", "表格1"),  # Word's Chinese caption labels (contract docx)
    ("图3-1 流程", "图3-1"), ("Fig. 2 Overview", "Fig. 2"), ("续表 4", "表4"), ("表一 基本情况", "表一"),
    ("发票 1", ""), ("(a) 1D global loss landscape.", ""), ("Accuracy as in Table 2", ""), ("图片", ""), ("", ""),
])
def test_figure_number(caption, number):
    assert figure_number(caption) == number


def test_split_caption():
    assert split_caption("图 2.1：系统架构图") == ("图2.1", "系统架构图")
    assert split_caption("Table 1. Top-1 Accuracy") == ("Table 1", "Top-1 Accuracy")
    assert split_caption("(a) 1D global loss landscape.") == ("", "(a) 1D global loss landscape.")


@pytest.mark.parametrize("text, kind, expected", [
    ("图 2.3 总声压级。(a) 这是子图说明信息", "image", True),
    ("Figure 3: Overall framework", "chart", True),
    ("Fig. 2 Loss landscape", "image", True),
    ("表1.2 主要设备清单", "table", True),
    ("续表", "table", True),
    ("TABLE 4 Results", "table", True),
    ("图1.1所示，采集模块负责读取数据。", "image", False),  # a reference sentence
    ("表1中的数据为年度值", "table", False),
    ("Figure 3 shows the framework", "image", False),
    ("表1.2 主要设备清单", "image", False),  # wrong kind: a figure never takes a table caption
    ("图1 系统架构", "table", False),
    ("以上为现场照片。", "image", False),
    ("图书馆平面", "image", False),
    ("图 2.3 " + "很长的说明" * 20, "image", False),  # longer than a caption
])
def test_is_caption_text(text, kind, expected):
    assert is_caption_text(text, kind) is expected


def test_caption_length_is_configurable():
    text = "Figure 2.3 OASPL. " + "x" * 100
    assert not is_caption_text(text, "image")
    assert is_caption_text(text, "image", max_len=200)


# ---------------------------------------------------------------- attach_captions on real documents


def test_thesis_figure_group_takes_caption_after_its_sublabels(home):
    # ucasthesis p.26: four sub-figures, "(a)".."(d)" label blocks, then the caption as a text block.
    chunks = _chunks(_parse(THESIS_PDF, home))
    page = [c for c in chunks if c.page_start == 26]
    assert [c.chunk_type for c in page[:9]] == ["image", "image", "text", "text", "image", "image", "text", "text", "text"]
    caption = page[8].content
    assert caption.startswith("图 2.3 总声压级。") and len(caption) == 62
    kept = attach_captions(chunks)
    assert len(kept) == len(chunks) - 1 and page[8] not in kept  # absorbed once, not indexed twice
    group = [c for c in page if c.chunk_type == "image"]
    assert [(c.caption, c.figure_number) for c in group] == [(caption, "图2.3")] * 4
    assert all(c.content.startswith(caption) for c in group)
    assert [c.content for c in page[2:4] + page[6:8]] == ["(a)", "(b)", "(c)", "(d)"]  # labels stay
    # the English twin caption (172 chars) is not a caption block by length; it becomes context
    assert all(c.context_after.startswith("Figure 2.3 OASPL.") and c.context_after.endswith("…") for c in group)
    assert all(len(c.context_after) == 151 for c in group)  # 150 chars + "…"
    # the figures whose captions MinerU kept are untouched, numbers extracted
    numbered = {c.figure_number: c.caption for c in kept if c.chunk_type == "image" and c.page_start == 25}
    assert sorted(numbered) == ["图2.1", "图2.2"]


def test_plain_paragraph_captions_in_docx(tmp_path, home):
    chunks = _chunks(_parse(_captions_docx(tmp_path / "captions.docx"), home))
    texts = [c.content for c in chunks if c.chunk_type == "text"]
    # MinerU absorbs "图1.1 …" below the picture itself but leaves "表1.2 …" above the table as text
    assert "图1.1 系统架构示意图" not in texts and "表1.2 主要设备清单" in texts
    kept = attach_captions(chunks)
    assert len(kept) == len(chunks) - 1
    assert "表1.2 主要设备清单" not in [c.content for c in kept]
    figure, table, photo = (c for c in kept if c.chunk_type in ("image", "table"))
    assert (figure.caption, figure.figure_number) == ("图1.1 系统架构示意图", "图1.1")
    assert (table.caption, table.figure_number) == ("表1.2 主要设备清单", "表1.2")
    assert table.content.startswith("设备 | 数量 | 单位")  # a table's content stays its rows
    # no caption to find: caption stays empty (never "图片"), the following sentence stays text
    assert (photo.caption, photo.figure_number) == ("", "")
    assert "以上为现场照片。" in [c.content for c in kept]
    assert (figure.context_before, figure.context_after) == (
        "系统由采集、处理和展示三个模块组成，各模块通过消息队列通信。", "如图1.1所示，采集模块负责从传感器读取水位数据。")
    assert (photo.context_before, photo.context_after) == ("设备由市水务局统一采购。", "以上为现场照片。")


def test_water_policy_table_caption_from_docx_caption_style(home):
    chunks = _chunks(_parse(WATER_DOCX, home))
    kept = attach_captions(chunks)
    assert len(kept) == len(chunks)  # "…各区年度用水指标见表1。" before the table is body text, not a caption
    (table,) = [c for c in kept if c.chunk_type == "table"]
    assert (table.caption, table.figure_number) == ("表1 各区年度用水指标（万立方米）", "表1")


def test_contract_docx_word_caption_labels(home):
    kept = attach_captions(_chunks(_parse(CONTRACT_DOCX, home)))
    got = [(c.chunk_type, c.caption, c.figure_number) for c in kept if c.chunk_type in ("image", "table", "chart")]
    assert got == [("image", "发票 1", ""), ("table", "表格 1", "表格1"),
                   ("chart", "图表 1", "图表1"), ("chart", "图表 2", "图表2")]


def test_demo_docx_uncaptioned_images_keep_empty_caption(home):
    chunks = _chunks(_parse(DEMO_DOCX, home))
    kept = attach_captions(chunks)
    assert len(kept) == len(chunks)
    images = [c for c in kept if c.chunk_type == "image"]
    assert [c.caption for c in images] == [""] * 7 + ["Figure 1: This is a cute mascot"]
    assert not any(c.caption in ("图片", "图表") for c in kept)
    logo = images[0]  # the title logo: the next block is the subtitle, not a caption
    assert (logo.context_before, logo.context_after) == ("", "MinerU支持docx解析了")  # heading before it ends the search
    grouped = images[1:5]
    assert all(c.context_before == "There are 2 pictures grouped together" and c.context_after == "" for c in grouped)


def test_cvpr_list_captions_kept_and_subfigures_numbered():
    (path,) = need(CVPR_DIR).glob("*_content_list_v2.json")
    chunks = assign_section_paths(normalize_v2(json.loads(path.read_text(encoding="utf-8"))).chunks)
    kept = attach_captions(chunks)
    assert len(kept) == len(chunks)
    got = [(c.chunk_type, c.caption[:20], c.figure_number) for c in kept if c.chunk_type in ("image", "chart", "table")]
    assert got == [
        ("chart", "(a) 1D global loss l", "Figure 1"),  # sub-figure numbered from its sibling's caption
        ("chart", "(b) 1D local loss la", "Figure 1"),
        ("chart", "Figure 2. Performanc", "Figure 2"),
        ("image", "(a) Stage 1: Class-c", "Figure 3"),
        ("image", "(b) Stage 2: Robust ", "Figure 3"),
        ("table", "Table 1. Top-1 Accur", "Table 1"),
        ("table", "Table 2. Ablation st", "Table 2"),
        ("table", "Table 3. Top-1 Accur", "Table 3"),
        ("table", "Table 4. Open long-t", "Table 4"),
    ]
    stage1 = next(c for c in kept if c.caption.startswith("(a) Stage 1"))
    assert stage1.context_after == "and the optimal perturbation vector"
    # an equation sits between the figure and this sentence; it is passed over
    assert stage1.context_before == ("Moreover, the perturbative bound can be approximated by a "
                                     "first-order Taylor expansion, yielding")
    chart = next(c for c in kept if c.caption.startswith("(a) 1D global"))
    assert chart.context_before.startswith("…") and len(chart.context_before) == 151


# ---------------------------------------------------------------- attach_captions rules


def _t(text: str, page: int = 1) -> Chunk:
    return Chunk(text, "text", page_start=page, page_end=page)


def _img(page: int = 1, caption: str = "", kind: str = "image") -> Chunk:
    return Chunk(caption, kind, page_start=page, page_end=page, caption=caption, image_path="x.png")


def _tab(rows: str = "a | b", caption: str = "") -> Chunk:
    return Chunk(rows, "table", caption=caption, table_html="<table><tr><td>a</td><td>b</td></tr></table>")


def test_figure_prefers_next_block_then_previous():
    chunks = [_t("图1 上方的说明"), _img(), _t("图2 下方的说明")]
    kept = attach_captions(chunks)
    assert [c.content for c in kept] == ["图1 上方的说明", "图2 下方的说明"]
    assert kept[1].figure_number == "图2"
    kept = attach_captions([_t("Figure 5: above"), _img(), _t("Plain text after.")])
    assert (kept[0].caption, [c.content for c in kept[1:]]) == ("Figure 5: above", ["Plain text after."])


def test_table_prefers_block_above_and_never_steals_the_next_tables_caption():
    first, second = _tab(), _tab()
    kept = attach_captions([first, _t("表2 第二张表"), second])
    assert (first.caption, second.caption) == ("", "表2 第二张表")
    assert kept == [first, second]


def test_each_caption_block_is_absorbed_once():
    a, b = _img(), _img()
    kept = attach_captions([a, _t("图1 唯一的说明"), b])
    # a takes it; b's previous neighbour is then a figure, so b stays uncaptioned
    assert (a.caption, b.caption, len(kept)) == ("图1 唯一的说明", "", 2)


def test_placeholder_caption_treated_as_missing_and_cross_page_blocks_ignored():
    a = _img(caption="图片")
    kept = attach_captions([a, _t("图4 水位过程线")])
    assert (a.caption, a.figure_number, len(kept)) == ("图4 水位过程线", "图4", 1)
    b = _img(page=1, caption="图表", kind="chart")
    kept = attach_captions([b, _t("图5 下一页的图", page=2)])
    assert (b.caption, len(kept)) == ("", 2)


def test_context_truncation_and_heading_boundary():
    long_before, long_after = "前" * 300 + "尾", "首" + "后" * 300
    fig = _img()
    attach_captions([Chunk("1.2 概述", "heading", text_level=2, title="1.2 概述"), _t(long_before), fig, _t(long_after)],
                    context_chars=100)
    assert fig.context_before == "…" + ("前" * 300 + "尾")[-100:]  # the end nearest the figure
    assert fig.context_after == "首" + "后" * 99 + "…"
    lone = _img()
    attach_captions([_t("上一节的正文"), Chunk("2 新章节", "heading", text_level=1, title="2 新章节"), lone])
    assert lone.context_before == ""
