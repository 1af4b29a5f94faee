"""Cross-page table merging and HTML table helpers."""
from __future__ import annotations

import json

from schemas.chunk import Chunk
from tasks.ingest.content_list import normalize_v1
from tasks.ingest.tables import (column_count, html_table_rows, merge_cross_page_tables, statement_title, table_grid,
                                 table_text, title_tables)
from tests.conftest import CVPR_DIR, SVOLT_DIR, need


def table(html, page, caption=""):
    return Chunk(table_text(html), "table", page_start=page, page_end=page, source_pages=[page], table_html=html,
                 caption=caption)


HEAD = "<tr><td>项目</td><td>期末</td><td>期初</td></tr>"


def test_rows_and_column_count_with_colspan_and_nesting():
    html = '<table><tr><td colspan="2">合并</td><td>c</td></tr><tr><td>a<table><tr><td>x</td></tr></table></td>' \
           '<td>b</td><td>c</td></tr></table>'
    assert column_count(html) == 3
    assert html_table_rows(html) == [["合并", "c"], ["ax", "b", "c"]]


def test_same_column_count_on_next_page_merges():
    a = table(f"<table>{HEAD}<tr><td>现金</td><td>1</td><td>2</td></tr></table>", 5)
    b = table("<table><tr><td>存货</td><td>3</td><td>4</td></tr></table>", 6)
    (merged,) = merge_cross_page_tables([a, b])
    assert (merged.page_start, merged.page_end, merged.source_pages) == (5, 6, [5, 6])
    assert html_table_rows(merged.table_html) == [["项目", "期末", "期初"], ["现金", "1", "2"], ["存货", "3", "4"]]


def test_repeated_header_is_dropped_and_marker_merges_different_widths():
    a = table(f"<table>{HEAD}<tr><td>现金</td><td>1</td><td>2</td></tr></table>", 1)
    b = table(f"<table><thead>{HEAD}</thead><tbody><tr><td>存货</td><td>3</td><td>4</td></tr></tbody></table>", 2)
    (merged,) = merge_cross_page_tables([a, b])
    assert [r[0] for r in html_table_rows(merged.table_html)] == ["项目", "现金", "存货"]
    c = table("<table><tr><td>续表</td><td>x</td></tr></table>", 3)
    assert len(merge_cross_page_tables([merged, c])) == 1
    d = table("<table><tr><td>a</td><td>b</td></tr></table>", 4, caption="表2 (续)")
    e = table("<table><tr><td>a</td><td>b</td><td>c</td><td>d</td></tr></table>", 4)
    assert len(merge_cross_page_tables([c, d])) == 1  # marker in the caption
    assert len(merge_cross_page_tables([d, e])) == 2  # same page: not a continuation


def test_no_merge_across_a_gap_or_with_text_between():
    a = table(f"<table>{HEAD}</table>", 1)
    b = table(f"<table>{HEAD.replace('项目', '科目')}</table>", 3)
    assert len(merge_cross_page_tables([a, b])) == 2
    text = Chunk("正文", "text", page_start=2, page_end=2)
    b2 = table(f"<table>{HEAD.replace('项目', '科目')}</table>", 2)
    assert len(merge_cross_page_tables([a, text, b2])) == 3


def test_mineru_ghost_merges_are_recorded_not_redone():
    result = normalize_v1(json.loads(next(need(SVOLT_DIR).glob("*_content_list.json")).read_text(encoding="utf-8")))
    spans = [(c.page_start, c.page_end) for c in result.chunks if c.chunk_type == "table"]
    # the five ghost continuations (page_idx 3, 5, 9, 12, 15) extend the tables MinerU merged them into
    assert [s for s in spans if s[0] != s[1]] == [(3, 4), (5, 6), (9, 10), (12, 13), (15, 16)]
    merged = merge_cross_page_tables(result.chunks)
    assert [(c.page_start, c.page_end) for c in merged if c.chunk_type == "table"] == spans


def test_grid_repeats_a_row_group_label_and_a_header_over_the_sub_columns_it_heads():
    html = ('<table><tr><td rowspan="2">Dataset</td><td colspan="2">CIFAR-10-LT</td><td>Note</td></tr>'
            '<tr><td>200</td><td>100</td><td></td></tr>'
            '<tr><td rowspan="2">ImageNet-LT</td><td>1.0</td><td>2.0</td><td rowspan="2">' + "long note " * 6 +
            '</td></tr><tr><td>3.0</td><td>4.0</td></tr></table>')
    assert table_grid(html) == [["Dataset", "CIFAR-10-LT", "CIFAR-10-LT", "Note"], ["Dataset", "200", "100", ""],
                                ["ImageNet-LT", "1.0", "2.0", ("long note " * 6).strip()],
                                ["ImageNet-LT", "3.0", "4.0", ""]]  # a long cell is written once


def test_grid_keeps_a_layout_colspan_once_and_a_line_across_the_table_apart():
    # BYD's holders table: "0" over two columns in every row is one column; a note across the table
    # is one cell, and the sub-table after it lays out its columns apart ("股份种类" over "股份种类 | 数量")
    html = ('<table><tr><td colspan="2">王念强</td><td>0.60%</td><td colspan="2">0</td></tr>'
            '<tr><td colspan="2">李柯</td><td>0.36%</td><td colspan="2">8,146,050</td></tr>'
            '<tr><td colspan="5">前10名无限售条件股东持股情况</td></tr>'
            '<tr><td rowspan="2">股东名称</td><td colspan="2" rowspan="2">持有无限售条件股份数量</td>'
            '<td colspan="2">股份种类</td></tr><tr><td>股份种类</td><td>数量</td></tr>'
            '<tr><td>吕向阳</td><td colspan="2">59,807,155</td><td>人民币普通股</td><td>59,807,155</td></tr></table>')
    assert table_grid(html) == [["王念强", "0.60%", "0"], ["李柯", "0.36%", "8,146,050"], ["前10名无限售条件股东持股情况"],
                                ["股东名称", "持有无限售条件股份数量", "股份种类", "股份种类"],
                                ["股东名称", "持有无限售条件股份数量", "股份种类", "数量"],
                                ["吕向阳", "59,807,155", "人民币普通股", "59,807,155"]]
    assert table_text(html).splitlines()[2] == "前10名无限售条件股东持股情况"


def test_grid_keeps_a_forms_blank_field_as_a_column():
    # the DOCX demo's form: a blank field beside "曾用名" is a column of its own, whatever its colspan
    html = ('<table><tr><td>姓名</td><td colspan="3">MinerU</td><td colspan="5">曾用名</td><td colspan="5"></td></tr>'
            '<tr><td>身份证号</td><td colspan="8"></td><td colspan="5"></td></tr></table>')
    assert table_grid(html) == [["姓名", "MinerU", "曾用名", ""], ["身份证号", "", "", ""]]


def test_spans_of_the_real_cvpr_table_are_resolved():
    # MinerU 3.4.4 (cloud zip) of the CC-SAM paper: ImageNet-LT spans 14 rows of the long-tail table
    content = json.loads(next(need(CVPR_DIR).glob("*content_list*.json")).read_text(encoding="utf-8"))
    html = next(item["table_body"] for item in content if item.get("type") == "table"
                and "iNaturalist" in item.get("table_body", ""))
    rows = table_grid(html)
    assert ["ImageNet-LT", "CC-SAM", "ResNeXt-50", "63.1", "53.4", "41.1", "55.4"] in rows
    assert sum(r[0] == "ImageNet-LT" for r in rows) == 14


def test_a_cell_stacking_the_labels_of_the_rows_it_spans_is_split_among_them():
    # MinerU's table model writes the method names of booktabs rows with no rule between them as one
    # rowspan cell; each label ends at its citation, an acronym glued to the next splits off
    html = ('<table><tr><td>Method</td><td>Few</td></tr>'
            '<tr><td rowspan="3">CEDecouple-τ-norm [20]Balanced Softmax [40]</td><td>8.2</td></tr>'
            '<tr><td>31.8</td></tr><tr><td>30.5</td></tr>'
            '<tr><td rowspan="2">Balanced Softmax [40]</td><td>1.0</td></tr><tr><td>2.0</td></tr>'
            '<tr><td>VS + SAM [38] GCL [26]</td><td>46.60</td></tr><tr><td></td><td>48.71</td></tr></table>')
    assert table_grid(html) == [["Method", "Few"], ["CE", "8.2"], ["Decouple-τ-norm [20]", "31.8"],
                                ["Balanced Softmax [40]", "30.5"],
                                # one label over two rows is each row's; labels stacked without a span
                                # are left: which values are whose, MinerU did not say
                                ["Balanced Softmax [40]", "1.0"], ["Balanced Softmax [40]", "2.0"],
                                ["VS + SAM [38] GCL [26]", "46.60"], ["", "48.71"]]


def test_empty_cells_pushing_a_row_past_the_last_column_are_dropped():
    # a stray empty colspan pushes a row's values right of the header; a row that needs its blank
    # field to reach that far (a form) keeps it
    html = ('<table><tr><td>Method</td><td>Backbone</td><td>Many</td><td>Few</td></tr>'
            '<tr><td>LADE</td><td>ResNet-152</td><td>42.8</td><td>31.2</td></tr>'
            '<tr><td>RSG</td><td colspan="2"></td><td>ResNet-152</td><td>41.9</td><td>30.1</td></tr>'
            '<tr><td>Note</td><td></td><td></td><td>x</td></tr></table>')
    assert table_grid(html) == [["Method", "Backbone", "Many", "Few"], ["LADE", "ResNet-152", "42.8", "31.2"],
                                ["RSG", "ResNet-152", "41.9", "30.1"], ["Note", "", "", "x"]]


def test_the_real_cvpr_places_rows_each_have_their_method_and_their_columns():
    content = json.loads(next(need(CVPR_DIR).glob("*content_list*.json")).read_text(encoding="utf-8"))
    tables = {key: next(table_grid(item["table_body"]) for item in content if item.get("type") == "table"
                        and key in item.get("table_body", "")) for key in ("iNaturalist", "OLTR")}
    large = tables["iNaturalist"]
    assert ["Places-LT", "Balanced Softmax [40]", "ResNet-152", "42.0", "39.3", "30.5", "38.6"] in large
    assert ["Places-LT", "Decouple-τ-norm [20]", "ResNet-152", "37.8", "40.7", "31.8", "37.9"] in large
    assert ["iNaturalist 2018", "BGP [49]", "ResNet-50", "70.0", "69.9", "69.6", "70.5"] in large
    assert ["OLTR [32]", "41.9", "33.9", "17.4", "0.474", "44.6", "36.8", "25.2", "0.464"] in tables["OLTR"]


def test_a_statement_title_ending_the_text_above_a_table_is_found():
    assert statement_title("法定代表人:王传福 会计机构负责人:刘惠3、合并现金流量表") == "3、合并现金流量表"
    assert statement_title("1、合并资产负债表编制单位:比亚迪股份有限公司") == "1、合并资产负债表"
    assert statement_title("适用 □不适用\uf052资产负债表") == "资产负债表"  # the box may be a private-use glyph
    assert statement_title("适用范围表") == "适用范围表"
    # a sentence pointing at a table, a box line, a section heading, a bare "表": no title
    for text in ("具体情况见下表", "适用 □不适用", "（二） 非经常性损益项目和金额", "表", "王传福说：这是利润表"):
        assert statement_title(text) == "", text


def test_an_untitled_table_takes_the_title_over_its_unit_line_only_from_nearby_text():
    def block(kind, content, page, caption=""):
        return Chunk(content=content, chunk_type=kind, page_start=page, page_end=page, caption=caption)

    chunks = title_tables([block("text", "2、合并利润表", 7), block("text", "单位:元", 7), block("table", "项目 | 本期", 7),
                           block("text", "3、合并现金流量表", 8), block("table", "项目 | 本期", 8, caption="表3 现金流量"),
                           block("text", "4、附注表", 8), block("table", "项目 | 本期", 10)])
    assert [c.caption for c in chunks if c.chunk_type == "table"] == ["2、合并利润表", "表3 现金流量", ""]
