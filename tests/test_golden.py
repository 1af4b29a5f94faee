"""Golden chunk tables for real MinerU output and real documents.

Each golden file lists, per chunk: id, type, level, pages, section_path, length, content hash and a
short preview for review by eye. Regenerate after an intended change, then review the diff:

    KBFLOW_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_golden.py
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest

from schemas.settings import load_settings
from tasks.ingest.chunk import build_chunks
from tasks.ingest.discover import discover
from tasks.ingest.parse import parse_source
from tests.conftest import CVPR_DIR, DOCS, SVOLT_DIR, need

GOLDEN = Path(__file__).parent / "golden"
CASES = {
    "svolt_mineru2.7.6": lambda: SVOLT_DIR,
    "cvpr_mineru3.4.4": lambda: CVPR_DIR,
    "byd_2025q1_quarterly_report": lambda: DOCS / "zh_pdf" / "byd_2025q1_quarterly_report.pdf",
    "prc_constitution": lambda: DOCS / "zh_pdf" / "prc_constitution.pdf",
    "procurement_contract_custom_headings": lambda: DOCS / "zh_docx" / "procurement_contract_headings_table_images.docx",
    "nbt_npp_psr_part1_custom_headings": lambda: DOCS / "zh_docx" / "nbt_npp_periodic_safety_review_part1_draft.docx",
    "mineru_docx_demo": lambda: DOCS / "zh_docx" / "mineru_docx_demo_zh_en_headings_tables_images.docx",
}


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return load_settings(tmp_path_factory.mktemp("golden_home"))


def chunks_of(name: str, settings):
    found = discover([need(CASES[name]())], settings)
    (src,) = found.sources
    parsed = parse_source(src, settings)
    return build_chunks(parsed.parsed_dir, settings, kb="golden", doc_md5=src.md5, source=src.source).chunks


def golden_rows(chunks) -> list[dict]:
    return [{"id": c.chunk_id, "type": c.chunk_type, "level": c.text_level, "pages": [c.page_start, c.page_end],
             "section": c.section_path, "chars": len(c.content),
             "md5": hashlib.md5(c.content.encode()).hexdigest()[:12], "preview": c.content[:24]} for c in chunks]


@pytest.mark.parametrize("name", sorted(CASES))
def test_chunks_match_golden(name, home):
    rows = golden_rows(chunks_of(name, home))
    path = GOLDEN / f"{name}.jsonl"
    if os.environ.get("KBFLOW_UPDATE_GOLDEN"):
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    expected = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len(expected), f"{name}: {len(rows)} chunks, golden has {len(expected)}"
    for got, want in zip(rows, expected):
        assert got == want


def test_byd_balance_sheet_is_one_table_over_pages_5_and_6(home):
    chunks = chunks_of("byd_2025q1_quarterly_report", home)
    (sheet,) = [c for c in chunks if c.chunk_type == "table" and "使用权资产" in c.content]
    assert (sheet.page_start, sheet.page_end, sheet.source_pages) == (5, 6, [5, 6])
    assert sheet.content.startswith("项目 | 期末余额 | 期初余额")
    assert "流动资产合计" in sheet.content and "负债和所有者权益总计" in sheet.content


def test_byd_statements_take_the_title_line_above_them_as_caption(home):
    # MinerU reads "2、合并利润表" / "单位:元" as text above the table; "3、合并现金流量表" is glued to the
    # signature line before it, and "资产负债表" follows a "适用 □不适用" box
    tables = [c for c in chunks_of("byd_2025q1_quarterly_report", home) if c.chunk_type == "table"]
    captions = {(c.content.split(" | ")[0], c.page_start): c.caption for c in tables}
    assert [captions["项目", page] for page in (5, 7, 8)] == ["1、合并资产负债表", "2、合并利润表", "3、合并现金流量表"]
    assert sorted(c.caption for c in tables if c.content.startswith("科目名称")) == ["损益表", "现金流量表", "资产负债表"]
    assert "" in captions.values()  # the key figures table above which no statement is named


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_short_heading_only_chunk_before_its_body(name, home):
    chunks = chunks_of(name, home)
    for heading, following in zip(chunks, chunks[1:]):
        if heading.chunk_type == "heading" and len(heading.content) < 20:
            body_follows = following.chunk_type in ("text", "list") and (
                following.section_path == heading.section_path
                or following.section_path.startswith(heading.section_path + " > "))
            assert not body_follows, (heading.chunk_id, heading.content, following.content[:40])


def test_constitution_articles_carry_chapter_and_section_paths(home):
    chunks = chunks_of("prc_constitution", home)
    articles = [c for c in chunks if re.search(r"第[一二三四五六七八九十百]+条 ", c.content)]
    assert len(articles) > 35
    assert all(re.match(r"第[一二三四五六七八九十]+章 ", c.section_path) for c in articles)
    nested = [c.section_path for c in articles if " > " in c.section_path]
    assert nested and all(re.match(r"^第.+章 .+ > 第.+节 .+$", p) for p in nested)
    (art65,) = [c for c in chunks if "第六十五条" in c.content]
    assert art65.section_path == "第三章 国家机构 > 第一节 全国人民代表大会"
