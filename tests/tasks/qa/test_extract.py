"""Offline answers from real table chunks (MinerU output from ../shared: the SVOLT datasheet's
bilingual tables, the BYD quarterly report's balance sheet merged over pages 5-6) and the
shortest clause of a sentence."""
from __future__ import annotations

import pytest

from schemas.chunk import CHART, TABLE, TEXT, Chunk
from schemas.settings import Settings
from tasks.qa.answer import (_table_unit, asked_ordinal, extractive_answer, heading_asked, item_number, sentences,
                             table_notes, words)
from tasks.qa.context import build_context
from tasks.qa.extract import (_cell_by_value, _lists_written, _rows, _symbols_asked, _unshifted, answers_what_is_asked,
                              Cell, cjk_numbers, document_scope, focus, form_lines, LAST, asked_column, asked_row,
                              labelled_rows, scope_only_terms, scope_parts, shortest_clause, table_cell, terms,
                              without_answer_form)
from tasks.qa.gloss import gloss_terms
from tasks.qa.types import Candidate
from tests.test_golden import chunks_of


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    from schemas.settings import load_settings

    settings = load_settings(tmp_path_factory.mktemp("extract_home"))
    return {name: chunks_of(name, settings)
            for name in ("svolt_mineru2.7.6", "byd_2025q1_quarterly_report", "cvpr_mineru3.4.4", "mineru_docx_demo")}


@pytest.fixture(scope="module")
def tables(documents):
    return {name: tables_of(chunks) for name, chunks in documents.items()}


def tables_of(chunks):
    return [c for c in chunks if c.chunk_type == TABLE]


def table_with(chunks, text):
    (chunk,) = [c for c in chunks if text in c.content]
    return chunk


def test_the_beginning_of_the_year_is_the_opening_balance(tables):
    sheet = table_with(tables["byd_2025q1_quarterly_report"], "使用权资产")
    cell = table_cell("比亚迪一季报合并资产负债表中，长期应收款在年初（2024年12月31日）的余额是多少元？", sheet.content)
    assert (cell.header, cell.value) == ("期初余额", "10,206,134,000.00")


def test_by_what_percentage_takes_the_change_rate_not_the_reason(tables):
    changes = table_with(tables["byd_2025q1_quarterly_report"], "研究及开发费用")
    cell = table_cell("By what percentage did BYD's research and development expenses rise year on year in "
                      "January–March 2025?", changes.content, glosses="研发 费用 研究 开发 变动")
    assert (cell.label, cell.header, cell.value) == ("研究及开发费用", "变动率", "34.04%")
    # the year of the report named ("its Q1 2025 report") names no column when the question asks another year
    cash = table_with(tables["byd_2025q1_quarterly_report"], "主要是本期配售H股收到款项所致")
    prior = table_cell("What net cash flow from financing activities did BYD have in 2024, the comparative period of "
                       "its Q1 2025 report?", cash.content, glosses="筹资 活动 现金流量 净额")
    assert (prior.header, prior.value) == ("2024年1-3月", "-5,183,543,000.00")
    # the label's own 变动 ("公允价值变动收益") names no 变动率: an amount asked is not the rate
    gains = table_with(tables["byd_2025q1_quarterly_report"], "主要是理财收益增加所致")
    amount = table_cell("比亚迪2025年1-3月的公允价值变动收益金额是多少元？", gains.content)
    assert amount.header != "变动率" and "246,269,000.00" in amount.value
    # the two dates compared written before the change asked ("Between end-2024 and 31 March 2025, by what
    # percentage …"): the rate of no base of its own, not the base's amount
    sheet = table_with(tables["byd_2025q1_quarterly_report"], "主要是资本化研发支出增加所致")
    cell = table_cell("Between end-2024 and 31 March 2025, by what percentage did BYD's development expenditure "
                      "(开发支出) change?", sheet.content)
    assert (cell.label, cell.header, cell.value) == ("开发支出", "变动率", "69.28%")


# broker_research_report_anonymized.pdf, chunk 21: the earnings forecast, each "(+/-%)" row the change of the row above
FORECAST = (" | 2022 | 2023 | 2024E | 2025E | 2026E\n营业收入(百万元) | 18,562 | 21,528 | 21,021 | 22,776 | 24,601\n"
            "(+/-%) | -8.1% | 16.0% | -2.4% | 8.3% | 8.0%\n净利润(百万元) | 2155 | 2952 | 2397 | 2764 | 3002\n"
            "(+/-%) | -13.5% | 37.0% | -18.8% | 15.3% | 8.6%\n每股收益（元） | 0.50 | 0.67 | 0.50 | 0.58 | 0.63")


def test_a_row_labelled_only_as_a_change_is_the_change_of_the_row_above():
    cell = table_cell("盈利预测表中，净利润2022年同比变动（+/-%）是多少？", FORECAST)
    assert (cell.label, cell.header, cell.value) == ("净利润(百万元) (+/-%)", "2022", "-13.5%")
    assert table_cell("盈利预测表中，2023年营业收入增长了多少？", FORECAST).value == "16.0%"
    assert table_cell("How much did net profit change year on year in 2022?", FORECAST, glosses="净利润").value \
        == "-13.5%"
    # the amount asked is the row's own, not its change's
    cell = table_cell("盈利预测表中，2022年净利润是多少？", FORECAST)
    assert (cell.label, cell.value) == ("净利润(百万元)", "2155")


def test_an_amount_asked_in_english_at_the_end_of_the_previous_year_is_the_opening_column(tables):
    # BYD's key accounting data: "at the end of the previous year" is 上年度末, and no change against it is asked
    data = table_with(tables["byd_2025q1_quarterly_report"], "本报告期末比上年度末增减")
    question = ("Per BYD's Q1 2025 report, how much equity attributable to shareholders of the listed company "
                "(归属于上市公司股东的所有者权益) did the company have at the end of the previous year, in yuan?")
    cell = table_cell(question, data.content, frozenset({"2025", "byd", "report"}), "上市公司 上年 归属于 股东 公司")
    assert (cell.header, cell.value) == ("上年度末", "185,251,104,000.00")
    # asked as a change, the change column answers
    cell = table_cell("By what percentage did BYD's total assets change from the end of the previous year?",
                      data.content, glosses="总资产 上年 变动")
    assert cell.value == "7.30%"


def test_a_change_against_a_base_takes_the_column_comparing_with_it(tables):
    # BYD's key accounting data: "上年同期" is the base the question compares with, "本报告期比上年同期增减（%）"
    # the change asked
    data = table_with(tables["byd_2025q1_quarterly_report"], "本报告期比上年同期增减")
    question = ("In the key accounting data of BYD's Q1 2025 report, by what percentage did net cash flow from "
                "operating activities change compared with the same period last year?")
    glosses = "经营 活动 现金 流量 净额 上年 同期 变动"
    assert table_cell(question, data.content, glosses=glosses).value == "-16.10%"
    assert table_cell("比亚迪一季报主要会计数据中，经营活动产生的现金流量净额比上年同期增减了多少？", data.content).value \
        == "-16.10%"
    # a rise asked in other words ("涨了百分之多少")
    assert table_cell("比亚迪今年一季度的稀释每股收益较去年同期涨了百分之多少？按一季报主要财务指标表作答。", data.content).value \
        == "98.73%"
    # the base asked for itself
    assert table_cell("比亚迪一季报主要会计数据中，经营活动产生的现金流量净额上年同期是多少元？", data.content).value \
        == "10,227,984,000.00"


def test_an_explanation_asked_is_the_column_of_reasons(tables):
    (variance,) = [c for c in tables["byd_2025q1_quarterly_report"] if "变动原因" in c.content and "税金及附加" in c.content]
    question = ("BYD's taxes and surcharges (税金及附加) jumped 52.87% in January–March 2025. Which explanation does "
                "the 损益表 variance table of its first-quarter report offer?")
    assert table_cell(question, variance.content).text == "税金及附加 — 变动原因: 主要是新能源汽车业务增长所致"
    assert table_cell("比亚迪一季报中财务费用为什么变动？", variance.content).header == "变动原因"
    # the 比 of 比亚迪 compares with nothing: the year's column is asked, not the change's
    assert table_cell("比亚迪一季报的损益表项目变动表里，2024年1-3月那一栏的管理费用是多少元？", variance.content).header \
        == "2024年1-3月"


def test_a_level_is_no_answer_to_a_change_asked():
    question = ("According to the earnings forecast table in the broker report on 600398.SH, how much did net profit "
                "change year on year (+/-%) in 2022?")
    assert not Cell("净利润", "2022", "2155", 1.0, 1.0).answers_change(question)
    assert Cell("净利润(百万元) (+/-%)", "2022", "-13.5%", 1.0, 1.0).answers_change(question)
    assert Cell("存货", "增减额", "1,000", 1.0, 1.0).answers_change(question)
    assert Cell("净利润", "2022", "2155", 1.0, 1.0).answers_change("2022年的净利润是多少百万元？")  # no change asked
    # so the income statement's level names no column asked, and the change row outscores it
    statement = Chunk(content=" | 2022 | 2023\n净利润 | 2155 | 2952", chunk_type=TABLE, source="broker.pdf",
                      chunk_id="broker.pdf_27")
    forecast = Chunk(content=" | 2022 | 2023\n净利润(百万元) | 2155 | 2952\n(+/-%) | -13.5% | 37.0%",
                     chunk_type=TABLE, source="broker.pdf", chunk_id="broker.pdf_21")
    glosses = "净利润 净利 收益 预测"
    level, change = (_table_unit(question, c, glosses=glosses) for c in (statement, forecast))
    assert (level.text, change.text) == ("净利润 — 2022: 2155", "净利润(百万元) (+/-%) — 2022: -13.5%")
    assert change.bonus > level.bonus


def test_a_label_written_without_its_unit_names_its_row_when_a_column_is_named(tables):
    # "营业收入（元）": the question writes "营业收入" and says the unit its own way; naming the column too, the row
    # is the one written out (else the income statement's "营业收入 | 2025年1-3月" outranks it)
    data = table_with(tables["byd_2025q1_quarterly_report"], "本报告期比上年同期增减")
    question = ("In the key accounting data table of BYD's Q1 2025 report, what operating revenue (营业收入, in yuan) "
                "is shown for the same period of the previous year?")
    cell = table_cell(question, data.content, glosses="营业 收入 上年 同期")
    assert (cell.label, cell.header, cell.value, cell.written) == \
        ("营业收入（元）", "上年同期", "124,944,397,000.00", True)
    # no column named: the label without its unit writes no row out ("净利润" of a broker's "净利润(百万元)")
    assert not table_cell("比亚迪一季报的营业收入情况如何？", data.content).written


def test_a_label_written_with_underscores_is_written_by_its_words_and_indicates_asks_the_description():
    # the Redpaper's FUNCTION_USAGE view as its Markdown copy lands it: "user type" writes USER_TYPE out, and what a
    # value "indicates" is its description, not its data type (which "type" names too)
    view = ("Column name | Data type | Description\nFUNCTION_ID | VARCHAR(30) | ID of the function.\n"
            "USAGE | VARCHAR(7) | Usage setting: ALLOWED: The user profile is allowed to use the function.\n"
            "USER_TYPE | VARCHAR(5) | Type of user profile: USER: The user profile is a user. GROUP: The user profile "
            "is a group.")
    cell = table_cell("For the FUNCTION_USAGE view, a row whose user type column reads USER indicates what kind of "
                      "profile?", view)
    assert (cell.label, cell.header, cell.written) == ("USER_TYPE", "Description", True)
    assert not table_cell("For the FUNCTION_USAGE view, what is the usertypes column?", view).written


def test_a_code_address_asks_a_url():
    asks = answers_what_is_asked("CC-SAM论文摘要末尾给出的代码地址是什么？")
    assert asks("Code is available at https://github.com/zzpustc/CC-SAM.") and not asks("Code is available online.")
    assert answers_what_is_asked("甲方的地址是什么？") is None  # a postal address is no web address


@pytest.fixture(scope="module")
def correlation_matrix(tmp_path_factory):
    # NB/T PSR part 1's Appendix A: "×" where a receiving safety factor (row) takes input from a providing one (column)
    from schemas.settings import load_settings

    chunks = chunks_of("nbt_npp_psr_part1_custom_headings", load_settings(tmp_path_factory.mktemp("matrix_home")))
    return table_with(tables_of(chunks), "接受输入的安全要素").content


def test_a_matrix_of_marks_answers_which_row_or_column_is_marked_at_the_items_asked(correlation_matrix):
    def asked(question, glosses=""):
        cell = table_cell(question, correlation_matrix, glosses=glosses)
        return cell.label, cell.value

    # exactly the items listed: a column (its rows SF1, SF3 …), a row (its columns)
    assert asked("In Appendix A, which providing safety factor supplies input to exactly SF1, SF3, SF5, SF6, SF7 "
                 "and SF11?", glosses="提供 输入 安全 要素") == ("提供输入的安全要素 SF13", "SF1、SF3、SF5、SF6、SF7、SF11")
    assert asked("附录A中，哪个接受输入的安全要素只从SF1、SF10、SF11和SF14接受输入？") == \
        ("接受输入的安全要素 SF9", "SF1、SF10、SF11、SF14")
    # all the others: row SF11 and column SF9 both are; the group the question names decides
    assert asked("附录A中，哪一个接受输入的安全要素从其余全部13个安全要素都接受输入？")[0] == "接受输入的安全要素 SF11"
    assert asked("附录A中，哪个安全要素向其余全部13个安全要素提供输入？")[0] == "提供输入的安全要素 SF9"
    # the one item SF1 is not marked at: column SF1 leaves out SF10 alone (row SF1 leaves out two)
    assert asked("In Appendix A, SF1 provides input to every other receiving safety factor except one. Which one?",
                 glosses="提供 输入 接受 安全 要素")[0] == "接受输入的安全要素 SF10"
    # no row or column marked at exactly these: an ordinary cell, not a list of marks
    assert "、" not in asked("附录A中，哪个接受输入的安全要素只从SF1和SF2接受输入？")[1]
    # a mark answers only whether a row and a column both written meet, not what a row is called
    assert table_cell("Which safety factor is designated SF7?", correlation_matrix) is None
    assert table_cell("附录A中，接受输入的SF7是否从SF2接受输入？", correlation_matrix).value == "×"
    # a range with the items left out ("SF1至SF11 …却不接受SF13和SF14"): exactly the range, none of its own rows
    assert asked("附录A安全要素关联矩阵里，哪个接受输入的安全要素从SF1至SF11全部接受输入，却不接受SF13和SF14的输入？")[0] \
        == "接受输入的安全要素 SF12"
    assert asked("Which receiving safety factor takes input from every factor SF1 through SF11 but from neither SF13 "
                 "nor SF14?", glosses="接受 输入 安全 要素")[0] == "接受输入的安全要素 SF12"
    # every other item but those written; "只被", "此外不" ask exactly the items written
    assert asked("Which receiving safety factor in the Appendix A correlation matrix gets input from every other "
                 "factor except SF12, SF13 and SF14?", glosses="接受 输入 安全 要素")[0] == "接受输入的安全要素 SF4"
    assert asked("附录A里，哪个安全要素的评价结果只被SF1、SF5、SF6、SF7、SF8、SF10、SF11这七个要素用作输入？")[0] \
        == "提供输入的安全要素 SF12"
    assert asked("附录A矩阵按列看，为SF1、SF3、SF4、SF6、SF8、SF11、SF12、SF13提供评价输入、此外不向其他要素提供输入的是哪个安全要素？")[0] \
        == "提供输入的安全要素 SF7"
    # the items written are the only ones left unmarked: all the others are marked
    assert asked("附录A关联矩阵中，哪一个接受输入的安全要素在除自身外只有SF12、SF13、SF14三列没有打×？")[0] \
        == "接受输入的安全要素 SF4"
    assert asked("附录A关联矩阵中，哪一个要素除自身外向所有接受输入的要素都提供输入、唯独不向SF10提供？")[0] \
        == "提供输入的安全要素 SF1"
    assert asked("Which receiving safety factor is left blank only under SF12, SF13 and SF14, apart from its own "
                 "diagonal cell?", glosses="接受 输入 安全 要素")[0] == "接受输入的安全要素 SF4"


@pytest.fixture(scope="module")
def alloy_table(tmp_path_factory):
    """GB/T 3620.1's table 1 (continued), a page printed sideways, as the OCR backend writes it."""
    from tasks.ingest.parse import ocr
    from tasks.ingest.tables import table_text
    from tests.conftest import DOCS, need

    path = need(DOCS / "zh_pdf" / "gbt3620.1-2016_titanium_alloy_standard.pdf")
    (page,) = ocr.ocr_pages(path, [5], dpi=144, workers=1, cache_dir=tmp_path_factory.mktemp("ocr_models"))
    (table,) = [i for i in ocr.page_items(page) if i["type"] == "table" and "TA23" in i["table_body"]]
    return table_text(table["table_body"])


@pytest.mark.mineru
def test_a_scanned_composition_table_answers_under_the_element_asked(alloy_table):
    """Its columns are headed by the elements' symbols, as OCR read them ("A1" for Al, "0" for O) under
    rows of group headers; a question names the element in words or writes its symbol in brackets."""
    cell = lambda q: table_cell(q, alloy_table)  # noqa: E731
    assert (cell("GB/T 3620.1—2016表1中，TA23（Ti-2.5Al-2Zr-1Fe）的铁（Fe）含量范围是多少？").value) == "0.8~1.2"
    assert cell("What aluminium content range does TA21 (Ti-1Al-1Mn) have in Table 1 of GB/T 3620.1-2016?").value \
        == "0.4~1.5"
    assert cell("按GB/T 3620.1—2016，TA24钛合金（Ti-3Al-2Mo-2Zr）中钼的含量范围是多少？").value == "1.0~2.5"
    assert cell("GB/T 3620.1—2016表1中TA31中Mo的含量范围是多少？").value == "0.6~1.5"  # the symbol written bare
    # a symbol the row's own name writes ("TA29" holds "Ta") is still the column asked
    assert cell("按GB/T 3620.1—2016，TA29钛合金中钽（Ta）的含量范围是多少？").value == "1.3~1.7"


def test_the_elements_of_a_nominal_composition_written_out_are_not_asked():
    # GB/T 3620.1's table 2 as OCR read it: "TB3 (Ti-3.5Al-10Mo-8V-1Fe)" writes the row's label and its composition
    # cell out; their "Ti" names no column, the nitrogen asked does
    table = ("牌号 | 名义化学成分 | Ti | A1 | V | Mo | Fe | N\n"
             "TB2 | Ti-5 Mo-5 V-8Cr-3.A1 | 余量 | 2.5~ 3.5 | 4.7~5.7 | 4.7~5.7 | 0.30 | 0.04\n"
             "TB3 | Ti-3.5.A1-10Mo-8V-1Fe | 余量 | 2.7~3.7 | 7.5~8.5 | 9.5~11.0 | 0.8~1.2 | 0.04")
    cell = table_cell("What nitrogen ceiling does GB/T 3620.1-2016 give for the beta alloy TB3 (Ti-3.5Al-10Mo-8V-1Fe)?",
                      table, glosses="氮")
    assert (cell.label.split()[0], cell.header, cell.value) == ("TB3", "N", "0.04")


def test_an_element_naming_the_alloy_is_not_the_one_asked():
    # "含钽的TA32": tantalum says which alloy; the zirconium content is asked (GB/T 3620.1's table 1 as OCR read it)
    table = ("牌号 | 名义化学成分 | Ti | Ta | Zx | Fe | A1\n"
             "TA32 | Ti-5.5Al-3.5Sn-3Zr-1Mo-0.5Nb-0.7Ta-0.3Si | 余量 | 0.2~0.7 | 2.5 ~3.5 | 0.25 | 5.0~6.0\n"
             "TC15 | Ti-5Al-2.5Fe | 余量 | 0.01 | 0.02 | 2.0~3.0 | 4.5~5.5")
    assert table_cell("含钽的近α合金TA32，名义成分里写3Zr，国标表1（续）实际给的锆含量上下限是多少？", table).value == "2.5 ~3.5"
    assert table_cell("含铁的TC15钛合金（名义5Al-2.5Fe），其铝元素在GB/T 3620.1—2016中的允许区间是多少？", table).value \
        == "4.5~5.5"
    assert table_cell("What is the aluminium range of the iron-bearing grade TC15?", table).value == "4.5~5.5"
    assert table_cell("For the tantalum-rich alloy TA32, what zirconium range does Table 1 set?", table).value \
        == "2.5 ~3.5"
    # named alone, it is the one asked
    assert table_cell("含钽的TA32中钽的含量范围是多少？", table).value == "0.2~0.7"
    # so are the elements of a list describing it ("含铁、钼的α-β型钛合金TC24")
    assert _symbols_asked("含铁、钼的α-β型钛合金TC24（Ti-4.5Al-3V-2Mo-2Fe），杂质氧（O）最多允许多少？") == {"o"}


def test_a_grade_told_apart_from_its_sibling_is_the_one_asked():
    # GB/T 3620.1-2016 表1 as landed (OCR): TA23 and TA23-1 share their nominal composition; "lower-silicon" tells
    # the grade apart (silicon is not asked), "sibling of TA23" / "注意与TA12区分" name the grade that is not
    table = ("牌号 | 名义化学成分 | Si | Fe | H\n"
             "TA23 | Ti-2.5A1-2Zr1Fe | ≤0.15 | 0.8~1.2 | 0.010\n"
             "TA23-1 | Ti-2.5A1-2Zr1Fe | ≤0.10 | 0.8~1.1 | 0.008")
    cell = table_cell("For TA23-1, the lower-silicon sibling of TA23 (both nominally Ti-2.5Al-2Zr-1Fe), what hydrogen "
                      "maximum does GB/T 3620.1-2016 list under impurities?", table)
    assert (cell.label.split()[0], cell.header, cell.value) == ("TA23-1", "H", "0.008")
    assert _symbols_asked("For TA23-1, the lower-silicon sibling of TA23, what hydrogen maximum is listed?") == {"h"}
    assert table_cell("TA23-1的铁含量范围是多少（注意与TA23区分）？", table).value == "0.8~1.1"
    assert table_cell("What silicon limit does the titanium standard set for TA23-1?", table).value == "≤0.10"


def test_a_glued_pair_of_sub_headers_heads_its_own_column_and_the_unheaded_one_after_it():
    # GB/T 3620.1-2016 表1 as landed: "其他元素" over "单一总和", the total's column under no header
    table = ("合金 |  |  |  | 主要成分 | 杂质，不大于 |  |  | \n牌号 | 名义化学成分 |  |  |  |  |  | 其他元素 | \n"
             " |  | Ti | A1 | Si | H | 0 |  | \n |  |  |  |  |  |  | 单一总和 | \n"
             "TA12-1 | Ti-5.A1-4Sn | 余量 | 4.5~5.5 | 0.2~0.35 | 0.012 5 | 0.15 | 0.10 | 0.30\n"
             "TA34 | Ti-2A1-3.8Zr-1Mo | 余量 | 1.0~3.0 |  | 0.008 | 0.10 | 0.10 | 0.25")
    assert table_cell("钛合金牌号国标表1里，TA12-1那一行，“其他元素”一栏的总和上限是多少？", table).value == "0.30"
    cell = table_cell("What is the upper limit on the total of other elements (其他元素 总和) for grade TA34?", table)
    assert (cell.header, cell.value) == ("其他元素 总和", "0.25")
    assert table_cell("TA34的其他元素单一上限是多少？", table).value == "0.10"


def test_a_one_letter_symbol_is_the_element_asked_only_before_its_content():
    table = "牌号 | 名义化学成分 | Ti | V | Cr\nTB12 | Ti-25V-15Cr-0.3Si | 余量 | 24.0~28.0 | 13.0~17.0"
    assert table_cell("按钛及钛合金牌号和化学成分标准的表2，TB12（Ti-25V-15Cr-0.3Si）中V的含量范围是多少？", table).value \
        == "24.0~28.0"
    assert _symbols_asked("What is the N content limit of TA7?") == {"n"}
    assert _symbols_asked("电池电压为3.2 V时的容量是多少？") == frozenset()  # volts
    assert _symbols_asked("工业纯钛TA2G，其O杂质不得超过多少？") == {"o"}


def test_an_impurity_limit_asked_is_a_number_and_under_the_element_asked():
    # GB/T 3620.1-2016's tables as landed (OCR's "A1" for Al): a limit asks a number, not the nominal composition the
    # glosses of "composition" name; the impurity group's header sits over one column only ("杂质，不大于 H"), which
    # names no other element's column; "铜钛合金" describes the alloy, iron is asked
    table3 = ("合金牌号 | 名义化学成分 | Ti | Mo | Fe | 杂质，不大于 H\nTC24 | Ti-4.5A1-3V-2Mo-2Fe | 余量 | 1.8~2.2 | "
              "1.7~2.3 | 0.010")
    cell = table_cell("For the Ti-4.5Al-3V-2Mo-2Fe alloy TC24, what hydrogen impurity limit (mass %) is given?", table3,
                      glosses=" 合金 杂质 质量 成分")
    assert (cell.header, cell.value) == ("杂质，不大于 H", "0.010")
    table2 = "牌号 | 名义化学成分 | Ti | Cr | Fe | C | 杂质，不大于 H\nTB12 | Ti-25V-15Cr-0.3Si | 余量 | 13.0~17.0 | 0.25 | 0.10 | " \
        "0.015"
    assert table_cell("β型钛合金TB12（Ti-25V-15Cr-0.3Si）在国标表2中规定的杂质碳含量不大于多少？", table2).value == "0.10"
    table1 = "牌号 | 名义化学成分 | Ti | Cu | Fe | 杂质，不大于 H\nTA13 | Ti-2.5Cu | 余量 | 2.0~3.0 | 0.20 | 0.010"
    assert table_cell("采购一批TA13（Ti-2.5Cu）铜钛合金板，作为杂质的铁最多能有多少（质量分数，%）？", table1).value == "0.20"


def test_a_symbol_ocr_misread_heads_the_column_asked_unless_the_symbol_heads_one():
    # GB/T 3620.1's table 1 as OCR read its first page: "Zx" for Zr; "S1" is no Sn when Sn heads a column
    table = ("牌号 | 名义化学成分 | Ti | S1 | Zx | Sn\n"
             "TA30 | Ti-5,5A1-3.5Sn-3Zr-1Nb-1Mo-0,3Si | 余量 | 0.20~0.35 | 2.4~3.5 | 3.0~3.8")
    assert table_cell("按GB/T 3620.1—2016表1，TA30钛合金的锆（Zr）含量范围是多少？", table).value == "2.4~3.5"
    assert table_cell("按GB/T 3620.1—2016表1，TA30钛合金的锡（Sn）含量范围是多少？", table).value == "3.0~3.8"
    assert table_cell("按GB/T 3620.1—2016表1，TA30钛合金的铜（Cu）含量范围是多少？", table).header != "Zx"


def test_a_maximum_or_a_range_in_mass_percent_asks_a_number_not_the_balance():
    # "余量" (the balance) is the Ti column's word; the question asks the oxygen limit, a number
    table = ("牌号 | 名义化学成分 | Ti | Nb | H | 0\n"
             "TB8 | Ti-15Mo-3A-2.7Nb-0.25Si | 余量 | 2.4~ 3.2 | 0.015 | 0.17")
    question = "For the beta titanium alloy TB8 in GB/T 3620.1-2016, what is the maximum oxygen content allowed?"
    assert table_cell(question, table).value == "0.17"
    assert answers_what_is_asked("What niobium content range, in mass %, does TB8 have?")("2.4~ 3.2")


def test_an_item_under_a_group_both_named_is_the_item(tables):
    # BYD's income statement: "5.所得税影响" is an item of "（一）不能重分类进损益的其他综合收益"; the question writes out both
    (statement,) = [c for c in tables["byd_2025q1_quarterly_report"] if "5.所得税影响" in c.content]
    cell = table_cell("比亚迪2025年一季度合并利润表中，“不能重分类进损益的其他综合收益”项下的所得税影响，本期发生额是多少元？",
                      statement.content)
    assert (cell.label, cell.header, cell.value) == ("5.所得税影响", "本期发生额", "78,305,000.00")
    # the group asked alone is its own row; "the comparative period" is the statement's 上期
    assert table_cell("比亚迪2025年一季度合并利润表中，不能重分类进损益的其他综合收益本期发生额是多少元？", statement.content).label \
        == "（一）不能重分类进损益的其他综合收益"
    comparative = table_cell("What income-tax effect (所得税影响) does BYD's Q1 2025 consolidated income statement show "
                             "for the comparative period?", statement.content, glosses="所得税 利润表 影响 合并")
    assert comparative.value == "89,856,000.00"


def test_balance_sheet_cell_by_row_and_column(tables):
    sheet = table_with(tables["byd_2025q1_quarterly_report"], "使用权资产")
    assert len(sheet.content) > 2500 and sheet.content.startswith("项目 | 期末余额 | 期初余额")
    end = table_cell("货币资金的期末余额是多少？", sheet.content)
    start = table_cell("货币资金期初余额是多少元？", sheet.content)
    assert end.text == "货币资金 — 期末余额: 117,406,726,000.00"
    assert start.text == "货币资金 — 期初余额: 102,738,734,000.00"
    # "应收款项融资" is named exactly, "应收款项" only in part: the longer label wins
    assert table_cell("应收款项融资期末余额", sheet.content).label == "应收款项融资"
    # a row the question sets apart names no row, longer or not ("（不是其他非流动金融资产）", "，不是TA23-1")
    other = table_cell("比亚迪的其他非流动资产（不是其他非流动金融资产）期末余额有多少元？", sheet.content)
    assert other.text == "其他非流动资产 — 期末余额: 24,391,349,000.00"
    assert table_cell("What is the closing balance of 其他非流动金融资产?", sheet.content).label == "其他非流动金融资产"


def test_second_header_block_and_numbers_choose_the_column(tables):
    main = table_with(tables["byd_2025q1_quarterly_report"], "加权平均净资产收益率")
    # the table's second half has its own header row ("| 本报告期末 | 上年度末 | …")
    assert table_cell("总资产上年度末是多少？", main.content).text == "总资产（元） — 上年度末: 783,355,855,000.00"
    assert table_cell("本报告期营业收入是多少？", main.content).text == "营业收入（元） — 本报告期: 170,360,448,000.00"
    changes = table_with(tables["byd_2025q1_quarterly_report"], "主要是市场订单增加备货增加所致")
    dated = table_cell("存货在2024年12月31日是多少？", changes.content)  # header "2024/12/31"
    assert (dated.header, dated.value) == ("2024/12/31", "116,036,237,000.00")


def test_english_question_over_a_bilingual_table(tables):
    perf = table_with(tables["svolt_mineru2.7.6"], "电芯容量Nominal Capacity")
    cell = table_cell("What is the nominal capacity of the cell?", perf.content)
    assert cell.label == "电芯容量Nominal Capacity" and "196 Ah" in cell.value  # no column named: the whole row
    assert "产品规格 Specification: ≥192 Ah≥196 Ah" in cell.text
    named = table_cell("电芯容量的产品规格是多少？", perf.content)
    assert named.text == "电芯容量Nominal Capacity — 产品规格 Specification: ≥192 Ah≥196 Ah"
    assert {"nominal", "capacity", "电芯", "容量"} <= terms("电芯容量Nominal Capacity")


def test_a_condition_written_out_picks_its_value_of_those_glued_in_one_cell(tables):
    # the main-performance row holds two specifications glued ("≥592.1 Wh≥625 Wh") beside their two conditions,
    # 1C then 1/3C: the condition the question writes out is given, the value at its place is asked
    perf = table_with(tables["svolt_mineru2.7.6"], "电芯容量Nominal Capacity")
    third = table_cell("主要性能表里，按25℃、65.3A（1/3C）放电到2.0V的条件，放电能量的规格值是多少？", perf.content)
    assert third.text == "放电能量Energy — 产品规格 Specification: ≥625 Wh"
    one = table_cell("主要性能表中，按25℃、196A（1C）电流放电到2.0V的条件，能量密度的规格是多少？", perf.content)
    assert one.text == "能量密度Specific Energy — 产品规格 Specification: ≥176 Wh/Kg"
    # no condition written: both values stand
    assert table_cell("放电能量的产品规格是多少？", perf.content).value == "≥592.1 Wh≥625 Wh"


def test_the_answerer_quotes_the_cell_with_its_citation(tables):
    sheet = table_with(tables["byd_2025q1_quarterly_report"], "使用权资产")
    text = next(c for c in tables["byd_2025q1_quarterly_report"] if c is not sheet)
    ctx = build_context([Candidate(sheet.chunk_id, 0.9, chunk=sheet), Candidate(text.chunk_id, 0.5, chunk=text)],
                        Settings())
    ans = extractive_answer("比亚迪货币资金期末余额是多少？", ctx, Settings())
    assert ans.text == f"货币资金 — 期末余额: 117,406,726,000.00[ref:{sheet.chunk_id}]"
    assert ans.citations == [sheet.chunk_id]


def test_the_words_of_a_documents_file_name_are_held_by_its_cells(tables):
    """A question names the datasheet by words of its file name ("SVOLT 196Ah blade cell"); a list of
    files that spells the name out must not outscore the cell that holds what is asked."""
    perf = table_with(tables["svolt_mineru2.7.6"], "电芯容量Nominal Capacity")
    listing = Chunk(content="Also part of this set: `output/SVOLT-196Ah-3.2V-LiFePO4-Blade-Battery-Cell-"
                            "SpecificationDatasheet.pdf` (a MinerU sample; see SOURCES.md).",
                    chunk_type=TEXT, source="SOURCES.md", chunk_id="SOURCES.md_3")
    ctx = build_context([Candidate(listing.chunk_id, 0.9, chunk=listing), Candidate(perf.chunk_id, 0.8, chunk=perf)],
                        Settings())
    ans = extractive_answer("What is the weight of the SVOLT 196Ah blade cell?", ctx, Settings())
    assert ans.text.startswith("电池重量Cell weight") and "3380±50 g" in ans.text
    assert ans.citations == [perf.chunk_id]


def test_a_row_with_merged_cells_answers_whole_past_its_label():
    """MinerU merges cells of a table whose PDF has no ruling (the titanium standard's element
    columns): a row narrower than its header no longer lines up with it past its label."""
    content = ("合金 | 主要成分 | 杂质，不大于\n牌号 | 名义化学成分 | 其他元素\n"
               "Ti | Al | Si | V | Mn | Fe | Ni | Mo | C | N | H\n"
               "TQ1 | Ti-2Mo-1Ni | 余量 | 0.7~1.1 | 1.5~2.5 | 0.30 | 0.08\n")
    ni = table_cell("TQ1的Ni含量范围是多少？", content)
    assert ni.header == "" and ni.value == "Ti-2Mo-1Ni | 余量 | 0.7~1.1 | 1.5~2.5 | 0.30 | 0.08"
    assert table_cell("TQ1的名义化学成分是什么？", content).value == "Ti-2Mo-1Ni"  # its label's cells still line up


def test_a_column_saying_the_opposite_is_not_the_one_asked(tables):
    """BYD's top-10 holders: the first block (its header stayed in an image on the page before) holds
    有限售条件 shares, the second block's "持有无限售条件股份数量" shares all but one word with them."""
    holders = table_with(tables["byd_2025q1_quarterly_report"], "前10名无限售条件股东持股情况")
    held = table_cell("夏佐全持有的有限售条件股份数量是多少股？", holders.content)
    assert "61,976,705" in held.value and "无限售" not in held.header
    free = table_cell("夏佐全持有的无限售条件股份数量是多少股？", holders.content)
    assert free.text == "夏佐全 — 持有无限售条件股份数量: 20,658,902(注3）"
    # a row of the first block holding a word the question says ("质押", "pledged" glossed) answers whole: which
    # of its numbers is the pledged one, no header left on this page says
    asked = "According to BYD's top-10 shareholders table, how many of the shares held by Rongjie Investment (融捷投资) "
    pledged = table_cell(asked + "were pledged?", holders.content, glosses="融捷 投资 持有 股东 数量 质押")
    assert pledged.text.startswith("融捷投资控股集团有限公司 — ") and "质押；13,570,000" in pledged.value
    # so it does when the holder is written out and the second block names a column of shares too (股份, 数量)
    assert "质押；2,715,000" in table_cell("前10名股东持股情况表里，夏佐全处于质押状态的股份数量是多少股？", holders.content).value
    # a column the question names still answers from the second block
    free = table_cell(asked + "are unrestricted (无限售条件)?", holders.content, glosses="融捷 投资 持有 股东 数量")
    assert (free.header, free.value) == ("持有无限售条件股份数量", "155,149,602")


def test_a_question_naming_no_row_gets_no_cell(tables):
    sheet = table_with(tables["byd_2025q1_quarterly_report"], "使用权资产")
    assert table_cell("宪法规定公民有哪些权利？", sheet.content) is None
    assert table_cell("anything", "") is None


def test_shortest_clause_that_carries_the_answer():
    sentence = "玩家以水枪泡封敌人，每次泡封会减少生命数，生命数耗完即算为踢爆。"
    assert shortest_clause("生命数耗完即算为什么？", sentence) == "生命数耗完即算为踢爆。"
    # a clause that only restates the question takes its neighbour, which holds the answer
    assert shortest_clause("离开游戏会怎样？", "若离开游戏，则4分钟内不得配对。") == "若离开游戏，则4分钟内不得配对。"
    assert shortest_clause("什么颜色？", "一句没有逗号的话") == "一句没有逗号的话"


def test_a_question_asking_no_number_takes_the_named_column_of_words():
    table = ("科目名称 | 2025年1-3月 | 2024年1-3月 | 变动率 | 变动原因\n"
             "管理费用 | 4,905,868,000.00 | 3,768,509,000.00 | 30.18% | 主要是职工薪酬和物料消耗增加所致")
    assert table_cell("2025年1-3月管理费用增加的主要原因是什么？", table).text == \
        "管理费用 — 变动原因: 主要是职工薪酬和物料消耗增加所致"
    assert table_cell("2025年1-3月管理费用是多少？", table).text == "管理费用 — 2025年1-3月: 4,905,868,000.00"


def test_a_header_of_colspans_over_a_sub_header_names_each_column(tables):
    # MinerU's HTML has "ImageNet-LT" and "Places-LT" over four columns each; the " | " text repeats each
    # over the sub-header row it heads, which has a first cell ("Method | Many | … | F-measure")
    table = table_with(tables["cvpr_mineru3.4.4"], "LUNA")
    assert table.content.startswith(" | " + " | ".join(["ImageNet-LT"] * 4 + ["Places-LT"] * 4) + "\nMethod | Many")
    # a KB landed before spans were resolved has one cell per span: the header is spread over the columns
    narrow = table.content.replace(" | ".join(["ImageNet-LT"] * 4), "ImageNet-LT").replace(
        " | ".join(["Places-LT"] * 4), "Places-LT")
    assert table_cell("What F-measure does LUNA achieve on ImageNet-LT?", narrow).value == "0.579"
    imagenet = table_cell("What F-measure does LUNA achieve on ImageNet-LT?", table.content)
    places = table_cell("What is the F-measure of LUNA on Places-LT?", table.content)
    assert imagenet.text == "LUNA [5] — ImageNet-LT F-measure: 0.579"
    assert places.text == "LUNA [5] — Places-LT F-measure: 0.491"
    assert table_cell("How many Few does CE get on Places-LT?", table.content).value == "0.4"
    # MinerU read CC-SAM's row shifted ("CC-SAM 61.4 |  | 49.5 | … | 36.4 0.510 | "): its cells are put back
    assert "CC-SAM 61.4 |  | 49.5" in table.content
    assert table_cell("In the CC-SAM paper's open long-tailed recognition table, what F-measure does CC-SAM reach on "
                      "Places-LT?", table.content).text == "CC-SAM — Places-LT F-measure: 0.510"
    assert table_cell("What Many accuracy does CC-SAM get on ImageNet-LT?", table.content).value == "61.4"
    assert _unshifted(["Category 5", "", "2.4"]) == ["Category 5", "", "2.4"]  # a label's own number stays


def test_numbers_in_chinese_numerals_answer_a_number_question():
    assert cjk_numbers("结婚年龄，男不得早于二十二周岁，女不得早于二十周岁。") == {"二十二", "二十"}
    assert cjk_numbers("不得超过主合同标的额的百分之二十") == {"百分之二十"}
    assert cjk_numbers("下落不明满四年") == {"四"}
    # ordinals and words holding a numeral are not numbers
    assert cjk_numbers("第一千零四十七条 一方违约时，统一规定") == set()
    asks = answers_what_is_asked("自然人下落不明满几年，利害关系人可以申请宣告其死亡？")
    assert asks("（一）下落不明满四年；") and not asks("利害关系人可以向人民法院申请宣告该自然人为失踪人。")
    # a numeral the question states is not the answer
    assert not answers_what_is_asked("满二十周岁的公民有多少项权利？")("年满二十周岁的公民")
    # "几时" asks an hour (the Civil Code's article 203), "in which month" a date (the PSR drafting notes)
    asks = answers_what_is_asked("没有业务时间的情况下，期间的最后一日的截止时间是几时？")
    assert asks("期间的最后一日的截止时间为二十四时；") and not asks("有业务时间的，停止业务活动的时间为截止时间。")
    asks = answers_what_is_asked("In which month did the drafters finish the discussion draft?")
    assert asks("修订稿起草人员在2023年2月完成了讨论稿编写。") and not asks("（从工作组讨论稿一直写到报批稿）")


def test_focus_is_what_stands_before_the_asking_word():
    assert focus("三季度末某服装企业的存货周转天数是多少天？") == "存货周转天数"
    assert focus("比亚迪2025年一季报中的主管会计工作负责人是谁？") == "主管会计工作负责人"
    assert focus("工会主席的工作职责是什么？") == "工作职责"
    assert focus("What is the weight of the cell?") == "weight"
    # after a clause setting the scene: the procurement chart's three series, one asked
    assert focus("In the procurement contract, chart 1 plots Series 4, Series 5 and Series 8 without category "
                 "labels; what is the Series 5 value in the third data row?") == "Series 5 value"
    assert focus("How many calories per portion do berries have?") == ""
    assert focus("征求意见稿的缩略语中，PSA指的是什么？") == focus("PSA是指什么？") == "PSA"
    # an abbreviation asked what it stands for is what is asked about: its glossary line answers
    assert focus("征求意见稿的缩略语中，SF代表什么？") == "SF"
    assert focus("In the abbreviation list of the draft, what Chinese term does SF stand for?") == "SF"
    assert focus("What does PSR mean?") == "PSR"
    assert focus("How does clause 1.4 (abbreviations) of the draft expand the acronym SSCs?") == "SSCs"
    # "what X does …": X
    assert focus("What dividend yield does the broker report forecast for 2024E?") == "dividend yield"
    assert focus("In Table 4 of the CC-SAM paper, what F-measure does IEM get on Places-LT?") == "F-measure"


def test_a_glossary_line_opening_with_what_is_asked_answers_it(tmp_path):
    """NB/T PSR part 1's abbreviations: "本文件采用下列缩略语。" shares the question's "缩略语"; the line
    opening with the abbreviation asked about is the answer."""
    from schemas.settings import load_settings

    chunks = chunks_of("nbt_npp_psr_part1_custom_headings", load_settings(tmp_path))
    (glossary,) = [c for c in chunks if "本文件采用下列缩略语" in c.content]
    ctx = build_context([Candidate(glossary.chunk_id, 0.9, chunk=glossary)], Settings())
    for abbreviation, meaning in (("PSA", "概率安全分析"), ("SSCs", "构筑物、系统和部件")):
        ans = extractive_answer(f"《核电厂定期安全评价 第1部分：通用要求》的缩略语中，{abbreviation}指的是什么？", ctx,
                                Settings())
        assert ans.text == f"{abbreviation} {meaning}[ref:{glossary.chunk_id}]"
    english = extractive_answer("How does clause 1.4 (abbreviations) of the draft Part 1 (General Requirements) expand "
                                "the acronym SSCs?", ctx, Settings())
    assert english.text.startswith("SSCs 构筑物、系统和部件")


def test_a_regular_table_is_no_form(documents):
    # word_sample.docx: every row as wide as the header; a question naming a header cell only asks
    # which row holds a value, and "Food — Calories per portion" is no answer: the row holding it is
    content = "Food | Calories per portion\nLeaves | 50\nBerries | 150\nGrain | 200"
    assert table_cell("Which food category has 50 calories per portion?", content).label == "Leaves"
    assert table_cell("How many calories per portion do berries have?", content).value == "150"
    # the MinerU DOCX demo's "Table with picture" as landed: its blanks are its last column's only (the pictures
    # MinerU left out), a table of labels, no form with blanks beside its labels
    pictures = table_with(tables_of(documents["mineru_docx_demo"]), "Only text")
    assert form_lines(pictures.content) is None
    cell = table_cell("MinerU DOCX示例文档1.2.3节“Table with picture”表格中，第一行数据Column A单元格写的是什么？",
                      pictures.content)
    assert (cell.label, cell.value) == ("#1", "Only text")


def test_a_row_of_numbers_under_a_repeated_group_header_is_its_sub_header(tables):
    # the CC-SAM paper's CIFAR-LT table: "CIFAR-10-LT" over three columns, "Imbalance Ratio | 200 | 100 | 50"
    # under it; that row names the columns, it is no data row to answer from
    table = table_with(tables["cvpr_mineru3.4.4"], "Imbalance Ratio")
    cell = table_cell("What top-1 accuracy does CC-SAM achieve on CIFAR-10-LT with an imbalance ratio of 200?",
                      table.content)
    assert cell.text == "CC-SAM — CIFAR-10-LT 200: 80.94"
    assert table_cell("On CIFAR-100-LT with an imbalance ratio of 50, what top-1 accuracy does BBN get?",
                      table.content).value == "47.02"
    # MinerU stacked two rows into one label ("CE CE + Mixup [57]" over a row without one): each takes its name
    assert "CE CE + Mixup [57] | 65.68" in table.content and "\n | 65.84 | 72.96" in table.content
    mixup = table_cell("CC-SAM论文表1中，CE + Mixup在不平衡比为100的CIFAR-10-LT上的top-1准确率是多少？", table.content)
    assert mixup.text == "CE + Mixup [57] — CIFAR-10-LT 100: 72.96"
    assert table_cell("In Table 1, what top-1 accuracy does the plain CE baseline get on CIFAR-10-LT with an imbalance "
                      "ratio of 100?", table.content).value == "70.70"
    assert table_cell("CC-SAM论文表1中，GCL在不平衡比为100的CIFAR-100-LT上的top-1准确率是多少？", table.content).value == "48.71"
    assert table_cell("CC-SAM论文表1中，VS + SAM在不平衡比为100的CIFAR-10-LT上的top-1准确率是多少？", table.content).value \
        == "82.40"
    # a label that can be cut in two ways, or a table citing nothing, is left as it is
    rows = _rows("Method | A\nTotal current assets [1] | 5\n | 6\nNet profit | 7\n | 8")
    assert [r[0][0] for r in rows] == ["Method", "Total current assets [1]", "", "Net profit", ""]


def test_a_row_group_label_and_the_words_beside_it_name_the_row(tables):
    # the long-tail table: "ImageNet-LT" spans 14 rows, "CC-SAM" two (ResNet-50 and ResNeXt-50)
    table = table_with(tables["cvpr_mineru3.4.4"], "iNaturalist 2018")
    cell = table_cell("CC-SAM在ImageNet-LT上用ResNeXt-50骨干时，Few（尾部类别）的准确率是多少？", table.content)
    assert (cell.label, cell.header, cell.value) == ("ImageNet-LT CC-SAM ResNeXt-50", "Few", "41.1")
    assert table_cell("What overall accuracy does CE with ResNet-50 get on iNaturalist 2018?", table.content).value \
        == "61.7"


def test_the_documents_own_name_does_not_pick_the_row():
    table = " | CIFAR-10-LT | CIFAR-10-LT\nImbalance Ratio | 200 | 100\nMiSLAS [62] | 77.31 | 82.06\nCC-SAM | 80.94 | 83.92"
    # "in the CC-SAM paper('s table)" names the paper, not the row: those words name no row
    question = "In the CC-SAM paper's CIFAR-LT table, what does MiSLAS reach on CIFAR-10-LT with imbalance ratio 100?"
    assert scope_only_terms(question) == {"cc", "sam", "paper"}
    assert table_cell(question, table).value == "82.06"
    # the words the context shows naming the document (answer._subject_terms) only break ties too
    assert table_cell("What does MiSLAS or CC-SAM reach on CIFAR-10-LT with ratio 100?", table).value == "83.92"
    assert table_cell("What does MiSLAS or CC-SAM reach on CIFAR-10-LT with ratio 100?", table,
                      subject=terms("CC-SAM")).value == "82.06"
    # named by the document's name only, the row still answers
    assert table_cell("What does CC-SAM reach with ratio 200?", table, subject=terms("CC-SAM")).value == "80.94"


def test_a_label_the_question_writes_out_beats_a_number_it_shares():
    # SVOLT's pulse power table: "20%SOC" in the question shares "20" with the row "≥-20"
    table = ("电芯温度，℃Cell Temperature, ℃ | 功率（20%S0C），WPower(20%SOC), W | 放电时间，sDischarge time, s\n"
             "≥-20 | 204 | 30\n≥-10 | 330 | 30\n≥0 | 566 | 30")
    assert table_cell("SVOLT电芯温度≥-10℃时，20%SOC下允许的脉冲放电功率是多少瓦？", table).value == "330"
    assert table_cell("电芯温度≥0℃那一档，20%SOC下允许的脉冲放电功率是多少瓦？", table).value == "566"


def test_a_sub_table_after_a_line_across_the_table_has_its_own_header(tables):
    # BYD's shareholder table, merged across pages: the top-10 holders, a note, then "前10名无限售条件股东持股情况"
    # and that sub-table's own two header rows
    table = table_with(tables["byd_2025q1_quarterly_report"], "前10名无限售条件股东持股情况")
    cell = table_cell("吕向阳持有多少股比亚迪无限售条件股份？", table.content)
    assert (cell.label, cell.header, cell.value) == ("吕向阳", "持有无限售条件股份数量", "59,807,155")


def test_a_period_named_otherwise_names_its_column(tables):
    # BYD's cash flow statement says "本期发生额 | 上期发生额"; a reader asks for "上年同期"
    flows = table_with(tables["byd_2025q1_quarterly_report"], "支付的各项税费")
    cell = table_cell("比亚迪现金流量表中，上年同期（2024年1-3月）支付的各项税费是多少？", flows.content)
    assert (cell.label, cell.header, cell.value) == ("支付的各项税费", "上期发生额", "7,927,455,000.00")
    assert cell.written  # the question writes the row's label out
    assert table_cell("本期支付的各项税费是多少？", flows.content).header == "本期发生额"


def test_the_year_naming_the_report_names_its_current_period(tables):
    # "January–March 2025" in BYD's Q1 2025 report is the cash flow statement's 本期发生额 (else the row answers with
    # both periods, and a summary table's "2025年1-3月" column outranks it in the context)
    flows = table_with(tables["byd_2025q1_quarterly_report"], "取得借款收到的现金")
    question = ("How much cash did BYD receive from borrowings in January–March 2025, according to its Q1 2025 "
                "consolidated cash flow statement?")
    glosses = "取得 借款 收到 现金 合并 现金 流量"
    naming = frozenset({"byd", "2025"})  # the question's terms naming the document
    cell = table_cell(question, flows.content, naming, glosses)
    assert (cell.label, cell.header, cell.value) == ("取得借款收到的现金", "本期发生额", "4,175,713,000.00")
    # a year that does not name the document, or two years named, leave the period unsaid
    assert table_cell(question, flows.content, frozenset({"byd"}), glosses).header == ""
    both = question.replace("2025,", "2025 and January–March 2024,")
    assert table_cell(both, flows.content, naming, glosses).header == ""


def test_an_english_plural_names_its_singular(tables):
    # word_sample.docx's food table (here the MinerU DOCX demo's copy): "blueberries" names the row of "Blueberry"
    foods = table_with(tables["mineru_docx_demo"], "Blueberry")
    assert table_cell("In the sample food table, which category do blueberries belong to?", foods.content).label \
        == "Berries"
    assert terms("foods boxes berries class status analysis") == terms("food box berry class status analysis")


def test_the_row_the_question_asks_about_beats_the_row_it_names_as_its_setting(tables):
    # BYD's income statement: "财务费用" and its sub-item "其中:利息费用" are both written out in the question
    statement = table_with(tables["byd_2025q1_quarterly_report"], "其中:利息费用")
    question = "合并利润表中，财务费用项下的利息费用本期发生额是多少元？"
    assert table_cell(question, statement.content).text == "其中:利息费用 — 本期发生额: 601,460,000.00"
    # a bracketed aside of clauses before the asking word is not what is asked
    question = "比亚迪2025年第一季度合并利润表中，财务费用项下的利息费用在上期（2024年一季度，经重述）是多少元？"
    assert focus(question) == "利息费用在上期"
    assert table_cell(question, statement.content).text == "其中:利息费用 — 上期发生额（经重述）: 580,449,000.00"
    assert table_cell("合并利润表中财务费用的本期发生额是多少元？", statement.content).label == "财务费用"


def test_a_blank_form_answers_with_its_row_under_its_sections_title(tables):
    # the MinerU docx demo's application form: labels, their notes and a section title per group of rows,
    # beside empty cells; no cell of it is a value under a header, so its rows are quoted whole
    form = table_with(tables["mineru_docx_demo"], "曾用名")
    assert table_cell("主申请人基本情况表里，姓名一栏填的是什么？", form.content) is None
    lines = form_lines(form.content)
    assert "主申请人-获奖情况：奖项名称 | 荣誉等级 | 获得日期" in lines
    assert "主申请人-主要科研成果（工作业绩）及专业特长（500字内概括）" in lines  # a section no row follows
    ctx = build_context([Candidate(form.chunk_id, 0.9, chunk=form)], Settings())

    def answer(question: str) -> str:
        return extractive_answer(question, ctx, Settings()).text

    assert "荣誉等级" in answer("申请表中，“主申请人-获奖情况”一栏除奖项名称和获得日期外，还要求填写哪一项？")
    assert "严格按照户口本首页信息填写" in answer("申请表中，“主申请人-户籍迁移及档案情况”要求严格按照什么信息填写？")
    # the section's title tells the two "起止时间" apart: 工作经历's is 年月即可, 教育经历's 年月日
    assert "起止时间 （年月日）" in answer("申请表里，主申请人教育经历一栏的“起止时间”要求填写到什么精度？")
    assert "起止时间 （年月即可）" in answer("申请表中，主申请人工作经历的“起止时间”一栏要求填写到什么精度？")
    assert "MinerU" in answer("主申请人基本情况表里，姓名一栏填的是什么？")
    # a table is no form: the BYD balance sheet has no empty third, the SVOLT datasheet's tables are numbers
    assert all(form_lines(t.content) is None for t in tables["byd_2025q1_quarterly_report"] + tables["svolt_mineru2.7.6"])


def test_a_header_of_three_rows_repeated_after_a_page_break_is_no_data():
    # GB/T 3620.1-2016 表1 as the OCR reads it: two word rows over a wider row of element symbols (with an
    # "O" read as "0"), the header again on the next page with the page's running head, then a sub-table
    table = ("表1工业纯钛、α型和近α型钛及钛合金牌号和化学成分\n合金 | 主要成分 | 杂质，不大于\n牌号 | 名义化学成分 | 其他元素\n"
             "Ti | Al | Si | V | Fe | C | N | H | 0\n单一总和\nTA1 | 工业纯钛 | 余量 | 0.25 | 0.10\n"
             "TA10 | Ti-0.3Mo-0.8Ni | 余量 | 0.6~0.9 | 0.30\n表1（续）\n合金 | 主要成分 | 杂质，不大于 | GB/T3620.1—2016\n"
             "牌号 | 名义化学成分 | 其他元素\nTi | Al | Si | V | Fe | C | N | H | 0\nTA13 | Ti-2.5Cu | 余量 | 2.0~3.0 | 0.20\n"
             "表2β型钛合金牌号及化学成分\n合金 | 主要成分 | 杂质，不大于\n台萌 | 名义化学成分 | 其他元素\n"
             "TB11 | Ti-15Mo | 余量 | 14.0~16.0 | 0.10")
    for grade, composition in (("TA10", "Ti-0.3Mo-0.8Ni"), ("TA13", "Ti-2.5Cu"), ("TB11", "Ti-15Mo")):
        cell = table_cell(f"GB/T 3620.1—2016中牌号{grade}的名义化学成分是什么？", table)
        assert (cell.label, cell.value) == (grade, composition)
        assert "名义化学成分" in cell.header
    # a word row followed by rows as wide as it is data, not a header
    people = "姓名 | 职务\n张三 | 董事长\n李四 | 总经理"
    assert table_cell("张三的职务是什么？", people).value == "董事长"


def test_a_table_whose_header_stayed_on_the_page_before_answers_a_ratio_with_its_percentage():
    # BYD's top-10 holders, as the chunk after the header's image holds them: no header row
    holders = ("融捷投资控股集团有限公司 | 境内非国有法人 | 5.11% | 155,149,602 | 0 | 质押 | 13,570,000\n"
               "香港中央结算有限公司 | 境外法人 | 4.13% | 125,417,624 | 0 | 不适用 | 0\n前10名无限售条件股东持股情况\n"
               "股东名称 | 持有无限售条件股份数量 | 股份种类\n融捷投资控股集团有限公司 | 155,149,602 | 人民币普通股")
    assert table_cell("融捷投资控股集团有限公司持有比亚迪股份的比例是多少？", holders).text == "融捷投资控股集团有限公司 — 5.11%"
    assert table_cell("香港中央结算有限公司的持股比例是多少？", holders).value == "4.13%"
    # 功率 is power, not a ratio: the named column answers, not the one holding "50%SOC"
    spec = "参数Item | 产品规格 Specification | 条件Condition\n室温放电功率 | ≥2240W | 25±3℃,50%SOC, 10 s"
    assert table_cell("室温放电功率的规格是多少？", spec).value == "≥2240W"


def test_a_citation_mark_does_not_dilute_a_row_label():
    # the CC-SAM paper's Places-LT rows: "LADE [17]" is LADE, and "CC-SAM" only names the paper
    table = ("Dataset | Method | Backbone | Many | Medium | Few | Overall\n"
             "Places-LT | LADE [17] | ResNet-152 | 42.8 | 39.0 | 31.2 | 38.8\n"
             "Places-LT | CC-SAM | ResNet-152 | 41.2 | 42.1 | 36.4 | 40.6")
    cell = table_cell("In the CC-SAM paper's results table, what overall accuracy does LADE (ResNet-152) reach on "
                      "Places-LT?", table)
    assert (cell.label, cell.value) == ("Places-LT LADE [17] ResNet-152", "38.8")


def test_a_row_groups_own_header_names_its_columns_and_a_stated_number_picks_its_row(tables):
    # the SVOLT step-charge table: each temperature range opens with its own header row ("45℃≤T≤50℃ | |
    # 电流，ACurrent, A | SOC", MinerU glued the bilingual lines) over "45℃≤T≤50℃ | | 1.35C | 20%" rows; the
    # SOC the question states is the row's condition, the current its answer
    table = table_with(tables["svolt_mineru2.7.6"], "45℃≤T≤50℃")
    cell = table_cell("SVOLT电芯阶梯充电表中，电芯温度45℃≤T≤50℃时，充到60% SOC那一段的充电电流是多少？", table.content)
    assert (cell.label, cell.header, cell.value) == ("45℃≤T≤50℃", "电流，ACurrent, A", "1.05C")
    assert table_cell("In the step-charge table, for cell temperatures 25℃≤T<45℃, what charge current applies up "
                      "to 90% SOC?", table.content).value == "0.65C"


def test_a_number_naming_the_document_states_no_rows_condition(tables):
    # "196" of "SVOLT 196Ah" names the cell (its file name holds it), not a condition of the capacity row
    table = table_with(tables["svolt_mineru2.7.6"], "出货电压")
    cell = table_cell("What is the outgoing voltage specified for the SVOLT 196Ah blade cell?", table.content,
                      subject=frozenset({"svolt", "196", "ah", "blade", "cell"}))
    assert cell.label == "电池出货电压Outgoing Voltage" and "3.305±0.004V" in cell.value


def test_a_header_repeated_in_the_other_language_is_no_data_row():
    # a bilingual datasheet's table as MinerU parses the PDF: the English header is a second row
    content = ("电芯温度，℃ | 功率（20%SOC），W | 放电时间，s\n"
               "Cell Temperature, ℃ | Power(20%SOC), W | Discharge time, s\n"
               "<-30 | 不允许No discharging | 不允许No discharging\n"
               "≥ -20 | 204 | 30\n"
               "≥0 | 566 | 30\n")
    cell = table_cell("What 30 s pulse discharge power at 20% SOC is allowed when the cell temperature is ≥-20℃?",
                      content)
    assert (cell.label, cell.header, cell.value) == ("≥ -20", "功率（20%SOC），W Power(20%SOC), W", "204")


def test_a_capital_run_glued_to_a_word_is_two_words():
    assert {"电流", "current"} <= terms("电流，ACurrent, A") and {"soc", "current"} <= terms("SOCCurrent")
    assert "resnext" in terms("ResNeXt-50") and "cifar" in terms("CIFAR-10-LT")


def test_the_sentence_after_the_setting_answers_a_number_it_lacks():
    # a datasheet states the setting, then the value: the setting shares the question's words, the value
    # sentence holds the number asked ("when stored…" is no date question)
    chunk = Chunk(content="Self-discharge performance\nThe cell is stored at full charge for 30 days at room "
                          "temperature. The capacity loss is less than 3% of the initial capacity.",
                  chunk_type=TEXT, source="datasheet.pdf", chunk_id="datasheet.pdf_77")
    ctx = build_context([Candidate(chunk.chunk_id, 0.9, chunk=chunk)], Settings())
    question = "How much capacity may the cell lose when stored fully charged for 30 days at room temperature?"
    assert answers_what_is_asked(question)("less than 3%") and not answers_what_is_asked(question)("30 days")
    ans = extractive_answer(question, ctx, Settings())
    first, second = ans.text.split("[ref:datasheet.pdf_77]")[:2]
    assert first.endswith("stored at full charge for 30 days at room temperature.")
    assert second == "The capacity loss is less than 3% of the initial capacity."


def test_a_question_asking_a_web_address_takes_the_unit_holding_one():
    asks = answers_what_is_asked("ucasthesis模板可以从哪个GitHub地址下载？")
    assert asks("Github/ucasthesis: https://github.com/mohuangrui/ucasthesis") and not asks("下载 ucasthesis 模板并解压。")
    steps = Chunk(content="2. 获取模板:下载 ucasthesis 模板并解压。", chunk_type=TEXT, source="guide.pdf",
                  chunk_id="guide.pdf_20")
    where = Chunk(content="1.4 模板下载\nGithub/ucasthesis: https://github.com/mohuangrui/ucasthesis",
                  chunk_type=TEXT, source="guide.pdf", chunk_id="guide.pdf_19")
    ctx = build_context([Candidate(steps.chunk_id, 0.9, chunk=steps), Candidate(where.chunk_id, 0.5, chunk=where)],
                        Settings())
    ans = extractive_answer("ucasthesis模板可以从哪个GitHub地址下载？", ctx, Settings())
    assert "https://github.com/mohuangrui/ucasthesis" in ans.text and ans.citations[-1] == where.chunk_id


def test_a_label_cell_the_question_states_is_not_the_answer(tables):
    # "with a ResNeXt-50 backbone" says which row; the Backbone column it names is not what is asked
    table = table_with(tables["cvpr_mineru3.4.4"], "iNaturalist 2018")
    cell = table_cell("In the CC-SAM paper, what overall accuracy does CC-SAM with a ResNeXt-50 backbone achieve on "
                      "ImageNet-LT?", table.content)
    assert (cell.label, cell.header, cell.value) == ("ImageNet-LT CC-SAM ResNeXt-50", "Overall", "55.4")
    # a label cell the question does not write out still answers ("what backbone does …")
    assert table_cell("Which backbone does DisAlign use on ImageNet-LT?", table.content).value == "ResNet-50"


def test_a_citation_between_two_names_keeps_them_apart():
    # MinerU joins two methods' cells: "OpenMax [3]OLTR [32]" names OLTR, not "OpenMaxOLTR"
    table = "Method | ImageNet-LT F-measure\nOpenMax [3]OLTR [32] | 0.474\nCC-SAM 61.4 | 0.552"
    cell = table_cell("In the CC-SAM paper's open long-tailed table, what F-measure does OLTR achieve on ImageNet-LT?",
                      table)
    assert (cell.label, cell.value) == ("OpenMax [3]OLTR [32]", "0.474")


def test_a_charts_data_answers_as_a_table(tables):
    # the MinerU docx demo's Chart 1 lands as a chart chunk of " | " rows: its cell is the answer, and a
    # decimal value ("2.8") states neither the "2" of "图表 2" nor the "8" of "Category 8"
    chunk = Chunk(content="Chart 1: This is an easy line chart\n | Series 7 | Series 5 | Series 6\n"
                          "Category 5 | 4.3 | 2.4 | 2\nCategory 6 | 2.5 | 4.4 | 2\nCategory 7 | 3.5 | 1.8 | 3\n"
                          "Category 8 | 4.5 | 2.8 | 5", chunk_type=CHART, source="demo.docx", chunk_id="demo.docx_67")
    ctx = build_context([Candidate(chunk.chunk_id, 0.9, chunk=chunk)], Settings())
    ans = extractive_answer("示例文档里的“图表 2”中，Category 8 对应的 Series 5 数值是多少？", ctx, Settings())
    assert ans.text == "Category 8 — Series 5: 2.8[ref:demo.docx_67]"
    # numbers naming a figure ("图表 2"), a row ("Category 7") or a column state no value; the header the
    # question writes out ("Series 5") beats one sharing as many terms ("Series 7")
    assert table_cell("示例文档里的“图表 2”中，Category 7 对应的 Series 5 数值是多少？", chunk.content).text \
        == "Category 7 — Series 5: 1.8"
    bars = " | 系列 1 | 系列 2 | 系列 3\n类别 1 | 4.3 | 2.4 | 2\n类别 2 | 2.5 | 4.4 | 2\n类别 3 | 3.5 | 1.8 | 3\n类别 4 | 4.5 | 2.8 | 5"
    assert table_cell("In Chart 2 (an easy bar chart), what is the value of 系列 2 for 类别 4?", bars).value == "2.8"


def test_a_cell_found_by_its_value_answers_with_its_column_or_its_row():
    # the MinerU docx demo's Chart 1 and Chart 2, and the procurement sample's chart 1 (no category labels)
    line = ("Chart 1: This is an easy line chart\n | Series 7 | Series 5 | Series 6\nCategory 5 | 4.3 | 2.4 | 2\n"
            "Category 6 | 2.5 | 4.4 | 2\nCategory 7 | 3.5 | 1.8 | 3\nCategory 8 | 4.5 | 2.8 | 5")
    assert table_cell("MinerU DOCX示例文档的折线图“Chart 1: This is an easy line chart”中，Category 8 这一行里数值为 5 的是哪个系列？",
                      line).text == "Category 8 — Series 6: 5"
    assert table_cell("In the MinerU DOCX demo's Chart 1 (the easy line chart), for which category does Series 6 have "
                      "the value 3?", line).text == "Category 7 — Series 6: 3"
    unlabelled = (" | Series 4 | Series 5 | Series 8\n | 4.3 | 2.4 | 2\n | 2.5 | 4.4 | 2\n | 3.5 | 1.8 | 3\n"
                  " | 4.5 | 2.8 | 5")
    assert table_cell("政府采购合同示例文档的“图表 1”中，最后一行数据里数值为5的是哪个系列？", unlabelled).text == "#4 — Series 8: 5"
    bars = (" | 系列 1 | 系列 2 | 系列 3\n类别 1 | 4.3 | 2.4 | 2\n类别 2 | 2.5 | 4.4 | 2\n类别 3 | 3.5 | 1.8 | 3\n"
            "类别 4 | 4.5 | 2.8 | 5")
    assert table_cell("在MinerU的DOCX演示文档里那张简单柱状图（Chart 2）上，类别 4 取值最大的系列是哪一个？", bars).header == "系列 3"
    # a whole number reached is given as a value is ("reach 5", "达到5"; a decimal reached is written out)
    for question in ("In the bar chart 'Chart 2', for which category does 系列 3 reach 5?", "图表2中系列 3 达到5的是哪个类别？"):
        assert table_cell(question, bars).text == "类别 4 — 系列 3: 5"
    # a value two cells of the named column hold finds no one cell
    assert _cell_by_value("For which category does Series 6 have the value 2 in Chart 1?", line) is None


def test_a_decimal_the_question_writes_out_names_the_row_it_asks_which_of(tables):
    # CC-SAM's Table 1 and Table 4: "which baseline scores 81.18" asks the row of the one cell holding it, though
    # "top-1" reads as an extreme asked and CC-SAM's own row names the paper
    cifar = table_with(tables["cvpr_mineru3.4.4"], "81.18")
    question = "In Table 1 of the CC-SAM paper (CIFAR-LT top-1 accuracy), which baseline scores 81.18 on CIFAR-10-LT?"
    assert table_cell(question, cifar.content).text.startswith("BBN [63] — ")
    table4 = table_with(tables["cvpr_mineru3.4.4"], "0.486").content
    open_lt = table_cell("CC-SAM论文表4里，Places-LT一栏F-measure为0.486的是哪种方法？", table4)
    assert (open_lt.label, open_lt.value) == ("IEM [65]", "0.486")
    # in a table whose rows open with a group ("ImageNet-LT | Decouple-τ-norm [20] | ResNet-50"), the row's label is
    # its word cells the question does not write out
    table3 = table_with(tables["cvpr_mineru3.4.4"], "Decouple-τ-norm").content
    tail = table_cell("Among the ImageNet-LT rows of Table 3 in the CC-SAM paper, which ResNet-50 method scores 27.4 "
                      "on the Few (tail) classes?", table3)
    assert (tail.label, tail.header, tail.value) == ("Decouple-τ-norm [20]", "Few", "27.4")
    # a whole number written with its unit apart ("721 W", "30 s"): the row holding most of those written (the SVOLT
    # datasheet's pulse table, 1.5.2); not a name's "196Ah", nor against a row the question names by its number
    pulse = ("电芯温度，℃ | 功率（20%SOC），W | 放电时间，s\n<-30 | 不允许No discharging | 不允许No discharging\n"
             "≥ -30 | 117 | 30\n≥0 | 566 | 30\n≥10 | 721 | 30\n≥25 | 1159 | 30")
    band = table_cell("按SVOLT 196Ah电芯规格书的脉冲放电功率表，允许放出721 W、持续30 s的是哪一个电芯温度档？", pulse)
    assert (band.label, band.value) == ("≥10", "721")
    main = ("No. | 参数Item | 产品规格 Specification | 条件Condition\n1.1.1 | 电芯容量Nominal Capacity | ≥192 Ah≥196 Ah | "
            "25℃,65.3A(1/3C)电流放电到2.0V\n1.1.7 | 出货容量Outgoing capacity | ≥196 Ah | 25℃,65.3A(1/3C)电流放电至2.0V")
    assert _cell_by_value("In the nominal capacity row (1.1.1), at which discharge current is the higher ≥196 Ah "
                          "figure measured?", main) is None
    # nor does one of a row the question names by its label: what it asks is another column of that row
    variance = table_with(tables["byd_2025q1_quarterly_report"], "52.87%").content
    reason = table_cell("BYD's taxes and surcharges (税金及附加) jumped 52.87% in January–March 2025. Which explanation "
                        "does the variance table offer?", variance)
    assert (reason.label, reason.header) == ("税金及附加", "变动原因")
    # nor one of a row whose label others share: the label tells nothing apart (the broker note's peers, all 优于大市)
    peers = ("公司投资名称评级 | 收盘价人民币 | EPS2023A | 2024E | 2025E | PE2023A | 2024E | 2025E\n"
             "优于大市 | 5.6 | 0.67 | 0.50 | 0.58 | 8.4 | 11.2 | 9.7\n优于大市 | 4.0 | 0.48 | 0.39 | 0.43 | 8.2 | 10.1 | 9.2\n"
             "优于大市 | 18.9 | 1.60 | 1.62 | 1.80 | 11.8 | 11.7 | 10.5")
    assert _cell_by_value("Which 2025 P/E does the note give the peer priced at 4.0 yuan?", peers) is None
    # a decimal two cells hold ("17.4") or none names no row
    assert _cell_by_value("Which method reaches 17.4 in Table 4?", table4) is None
    assert _cell_by_value("Which method reaches 99.99 on CIFAR-10-LT?", cifar.content) is None


def test_a_bound_written_out_names_its_row_by_its_sign(tables):
    # the SVOLT datasheet's BOL pulse tables: "at -10℃ or warmer" is the row "≥-10", not "≥-30" for the "30" of
    # "for 30 s"; "10℃ or above" is "≥10", not "≥-10"
    discharge = table_with(tables["svolt_mineru2.7.6"], "Power(20%SOC)")
    cell = table_cell("Per the BOL pulse discharge table of the SVOLT cell, how many watts at 20% SOC may be drawn for "
                      "30 s once the cell is at -10℃ or warmer?", discharge.content)
    assert (cell.label, cell.value) == ("≥-10", "330")
    charge = table_with(tables["svolt_mineru2.7.6"], "Current(80%SOC)")
    cell = table_cell("A SVOLT blade cell is at 10℃ or above. How many amperes of regenerative pulse charging at "
                      "80% SOC does the BOL table allow for 10 s?", charge.content)
    assert (cell.label, cell.value) == ("≥10", "272")


def test_a_number_asked_takes_the_named_column_holding_one():
    # docling's word_sample.docx: "食物表中" names the Food column as the glosses of "卡路里" name the calories' column;
    # "多少" asks a number, which only the second holds
    food = (" | Food | Calories per portion\nLeaves | Ash, Elm, Maple | 50\n"
            "Berries | Blueberry, Strawberry, Cranberry | 150\nGrain | Corn, Buckwheat, Barley | 200")
    question = "word_sample.docx的食物表中，谷物类（Grain）每一份含多少卡路里？"
    assert table_cell(question, food, glosses="food calories grain").text == "Grain — Calories per portion: 200"
    # a question asking no number keeps the column its words name best
    assert table_cell("word_sample.docx的食物表中，谷物类（Grain）有哪些食物？", food, glosses="food grain").value \
        == "Corn, Buckwheat, Barley"


def test_an_item_quoted_with_its_lists_opening_line_is_the_inner_item():
    # the PSR draft's Appendix B: outer item 7 opens a list of its own; its items are no seventh of anything
    assert item_number("7. 安全要素和评价专项，每个安全要素/评价专项应提供以下信息： 2. 现行安全标准和实践清单") == 2
    assert item_number("7. 安全要素和评价专项，每个安全要素/评价专项应提供以下信息：(三)评价范围") == 3
    assert item_number("7. 安全要素和评价专项") == 7 and item_number("(一) 熟悉 (三) 坚持") == 1


def test_a_question_asking_for_the_nth_item_takes_that_item():
    # the union rules' article: its conditions are numbered items of one sentence's list
    chunk = Chunk(content="第十四条 工会经费审查委员会委员名额一般为3—7人，设主任委员1人，候选人应符合以下条件: "
                          "(一) 熟悉工会财务和审计业务。(二) 熟悉国家财政政策及相关规定。(三) 坚持原则，作风正派。",
                  chunk_type=TEXT, source="rules.pdf", chunk_id="rules.pdf_0")
    ctx = build_context([Candidate(chunk.chunk_id, 0.9, chunk=chunk)], Settings())
    assert "熟悉国家财政政策" in extractive_answer("工会经费审查委员会委员候选人应符合的第二个条件是什么？", ctx, Settings()).text
    assert "坚持原则" in extractive_answer("What is the third condition candidates for the union funds audit "
                                       "committee (工会经费审查委员会) must meet?", ctx, Settings()).text
    # "第十四条" names an article, not an item
    assert asked_ordinal("第十四条规定的候选人条件是什么？") is None and asked_ordinal("第3项是什么？") == 3
    # a law's items past the tenth, asked as the constitution numbers them: "第（十七）项" is item "(十七)"
    assert asked_ordinal("宪法第六十七条列举全国人大常委会职权时，第（十七）项职权是什么？") == 17
    assert asked_ordinal("第二十个条件是什么？") == 20 and item_number("(十七)决定特赦；") == 17
    powers = Chunk(content="第六十七条 全国人民代表大会常务委员会行使下列职权:(一)解释宪法，监督宪法的实施；(十六)决定驻外全权代表的任免；"
                           "(十七)决定特赦；(十八)在全国人民代表大会闭会期间，如果遇到国家遭受武装侵犯的情况，决定战争状态的宣布；",
                   chunk_type=TEXT, source="constitution.pdf", chunk_id="constitution.pdf_29")
    ctx = build_context([Candidate(powers.chunk_id, 0.9, chunk=powers)], Settings())
    assert "(十七)决定特赦" in extractive_answer("宪法第六十七条列举全国人大常委会职权时，第（十七）项职权是什么？", ctx, Settings()).text


def test_numbered_lines_are_items_and_the_last_one_is_asked_too():
    # the numbered-headers test document's list: "1." items, then sub-items numbered from 1 again
    chunk = Chunk(content="Constraints we consider:\n1. Hardware Constraints\n2. Software Constraints\n"
                          "3. Network Constraints\n4. Environmental Constraints\n5. Resource Constraints\n"
                          "1. First sub-item at this level\n2. Second sub-item at this level",
                  chunk_type=TEXT, source="headers.docx", chunk_id="headers.docx_8")
    ctx = build_context([Candidate(chunk.chunk_id, 0.9, chunk=chunk)], Settings())
    fourth = extractive_answer("In the list of constraints, which constraint is listed fourth?", ctx, Settings())
    assert fourth.text.startswith("Constraints we consider: 4. Environmental Constraints")
    last = extractive_answer("Which constraint is listed last in the list of constraints?", ctx, Settings())
    assert "5. Resource Constraints" in last.text
    assert asked_ordinal("最后一项评价要点是什么？") == asked_ordinal("what is the last item?") == LAST
    assert asked_ordinal("What is the first task of the working body?") == 1
    assert asked_ordinal("What is the twentieth power listed?") == 20
    # past the tenth in English too (the Part 12 draft's clause 5.2.1, as the docs knowledge base holds it)
    ssc = Chunk(content="5.2.1 评价范围\n设计要素的评价范围为安全重要物项。压水堆核电厂常见的安全重要SSCs通常包括（不限于）：\n"
                        + "\n".join(f"{i}. {name}；" for i, name in enumerate(
                            ["反应堆及反应堆冷却剂系统", "一回路辅助系统", "专设安全设施", "辅助冷却水系统", "二回路相关系统",
                             "放射性废物处理与流出物排放系统", "消防系统", "核安全相关的堆芯、核燃料装卸贮存系统", "仪表和控制系统",
                             "电力系统", "通风系统", "反应堆厂房、核辅助厂房等构筑物"], 1)),
                chunk_type=TEXT, source="part12.docx", chunk_id="part12.docx_17")
    listed = build_context([Candidate(ssc.chunk_id, 0.9, chunk=ssc)], Settings())
    eleventh = extractive_answer("Which item is eleventh in the list of safety-important SSCs of a PWR plant in clause "
                                 "5.2.1?", listed, Settings())
    assert "11. 通风系统" in eleventh.text and "12." not in eleventh.text.split("[ref:")[0]
    assert asked_ordinal("How much did inventory grow at the end of the third quarter?") is None  # a period
    # an item named by its number: "item 15 in the list of plant documents", "revision point 4"
    assert asked_ordinal("What is item 15 in the list of plant documents and records?") == 15
    assert asked_ordinal("What is item (3) in the list of circumstances?") == 3  # a law's "（三）"
    assert asked_ordinal("Revision point 4 gives methods for determining which basis?") == 4
    # "second" says which item: the sub-list's "2. Second sub-item at this level" does not hold the asked word
    second = extractive_answer("Which constraint is listed second in the list of constraints?", ctx, Settings())
    assert "2. Software Constraints" in second.text.split("[ref:")[0]
    assert extractive_answer("Which is second?", ctx, Settings()) is None  # nothing asked but the ordinal
    # a section number is no item number
    assert item_number("2.1.6 Change Function Usage") is None and item_number("要点包括： 7. 安全审评承诺项评价") == 7
    # a sentence counting itself is an item (redp5110_sampled.pdf: "SM590000" is its bullet's glyph)
    assert item_number("SM590000 The second fundamental in securing data assets is the use of resource security.") == 2
    assert item_number("First, and most important, is the definition of a company's security policy.") == 1
    # the question names the first and asks the second
    assert asked_ordinal("The first fundamental step is defining a company's security policy; what is the second?") == 2


def test_a_reference_entry_is_one_unit(documents):
    # the MinerU docx demo's reference list (APA): asked for a paper's journal, the answer quotes its whole
    # entry, not the title sentence alone
    (refs,) = [c for c in documents["mineru_docx_demo"] if "Hover-Transit" in c.content]
    ctx = build_context([Candidate(refs.chunk_id, 0.9, chunk=refs)], Settings())
    ans = extractive_answer("In the reference list, in which journal was Chen & Dubois (2023) on motion sickness "
                            "in anti-gravity commuter networks published?", ctx, Settings())
    assert "Urban Hover-Transit Studies" in ans.text
    assert sentences("References. Two of them.\n1. Bennett, L. M. (2025). Copyright in dreams. Cybernetic Law "
                     "Review, 41(3), 45-67.\n2. Chen, X. (2023). Motion. Transit, 15(1), 22-38.") == \
        ["References.", "Two of them.", "1. Bennett, L. M. (2025). Copyright in dreams. Cybernetic Law Review, 41(3), 45-67.",
         "2. Chen, X. (2023). Motion. Transit, 15(1), 22-38."]
    # GB/T 7714 entries (ucasthesis_template_guide.pdf's list, one per line): the "[J]." closing the title ends
    # no sentence, and an entry's line is not the one before it wrapped
    bravo = ("BRAVO H, OLAVARRIA J. Comparative study of visual inter and intrahemispheric cortico-cortical "
             "connections in five native chilean rodents[J]. Anatomy and embryology, 1990, 181(1):67-73.")
    lamport = "LAMPORT L. Document preparation system[M]. Addison-Wesley Reading, MA, 1986."
    assert sentences(f"{bravo}\n{lamport}") == [bravo, lamport]
    assert sentences("陈晋镳, 张惠民. 蓟县震旦亚界研究[M]//中国震旦亚界. 天津: 天津科学技术出版社, 1980: 56-114.") == \
        ["陈晋镳, 张惠民. 蓟县震旦亚界研究[M]//中国震旦亚界. 天津: 天津科学技术出版社, 1980: 56-114."]


def test_a_row_named_only_by_the_documents_name_answers_only_with_a_column_named():
    # the CC-SAM paper's open long-tailed table as MinerU flash lost its header: the "CC-SAM" row is named
    # only by the words naming the paper, and no column by the question
    table = "Method | Many | F-measure\nOLTR [32] | 41.9 | 0.474\nCC-SAM | 61.4 | 0.552"
    assert table_cell("In the CC-SAM paper (CVPR 2023), what batch size was used on iNaturalist 2018?", table) is None
    assert table_cell("In the CC-SAM paper, what F-measure does CC-SAM reach?", table).value == "0.552"
    assert table_cell("In the CC-SAM paper, what F-measure does OLTR reach?", table).value == "0.474"


def test_a_quoted_title_beside_a_document_word_names_the_document():
    assert document_scope("In the draft NB/T standard 'Periodic safety review for nuclear power plants — Part 12: "
                          "Design', what is the seventh item?").startswith("Periodic safety review for nuclear")
    # a quoted term is no title
    assert document_scope("what is the third item in the 'don't forget' list?") == ""
    # a long way to name it, up to its comma
    assert document_scope("In the abbreviation list of the ucasthesis (UCAS thesis template) guide, what does "
                          "EOS stand for?") == "abbreviation list of the ucasthesis (UCAS thesis template) guide"
    # what a document is on names it, its part in brackets too; a verb's "report on" does not
    assert document_scope("In the draft NB/T standard on periodic safety review of nuclear power plants (Part 1: "
                          "General Requirements), when should the first PSR start?").startswith(
        "periodic safety review of nuclear power plants (Part 1: General Requirements)")
    assert document_scope("In the CC-SAM paper's Table 3, what does BGP report on iNaturalist 2018?") == "CC-SAM paper"
    # a way of naming it over 80 characters long, "under" it; a description in brackets after it names nothing
    assert document_scope("According to the draft Part 1 (General Requirements) of the NB/T nuclear power plant "
                          "periodic safety review standard, what methods must analysts master?").endswith("standard")
    assert document_scope("Under the PRC Civil Code, who may sublet?") == "PRC Civil Code"
    # the word for the document is part of its name ("standard" of "the titanium standard", a foreword's 标准)
    assert document_scope("What grades does the titanium standard list?") == "titanium standard"
    # "report" taking an object is a verb, not the word for a document
    assert document_scope("Under the PRC Constitution, to which body must provinces directly under the central "
                          "government report their local regulations for the record?") == "PRC Constitution"
    assert document_scope("In Table 2-1 of the DB2 for i RCAC Redpaper (the columns of the FUNCTION_USAGE view), what "
                          "does ALLOWED mean?") == "Table 2-1 of the DB2 for i RCAC Redpaper"


def test_a_unit_holding_only_the_words_naming_the_document_is_no_answer():
    # the draft standard's cover restates the title the question names it by, and nothing else
    cover = Chunk(content="NB/T XXXXX—XXXX核电厂定期安全评价第1部分：通用要求Preparation of periodic safety review for "
                          "nuclear power plants— Part 1: General Requirements点击此处添加与国际标准一致性程度的标识",
                  chunk_type=TABLE, source="part1.docx", chunk_id="part1.docx_2")
    intro = Chunk(content="This part follows HAF 103-2020, the regulation on commissioning and operation.",
                  chunk_type=TEXT, source="part1.docx", chunk_id="part1.docx_9")
    ctx = build_context([Candidate(cover.chunk_id, 0.9, chunk=cover), Candidate(intro.chunk_id, 0.8, chunk=intro)],
                        Settings())
    ans = extractive_answer("In the draft NB/T standard 'Periodic safety review for nuclear power plants — Part 1: "
                            "General Requirements', which HAF regulation is followed?", ctx, Settings())
    assert ans.text.startswith("This part follows HAF 103-2020")


def test_a_row_groups_rows_sharing_its_label_are_data_and_its_own_numbers_set_no_step(tables):
    # the SVOLT step-charge table: each temperature's rows repeat its label with an empty second cell
    # ("15°℃≤T<20℃ |  | 0.46C | 70%"): no header repeated after a page break
    steps = table_with(tables["svolt_mineru2.7.6"], "15°℃≤T<20℃ |  | 0.46C | 70%")
    to_70 = table_cell("For cell temperatures 15℃≤T<20℃, what charge current is used for the step that charges up "
                       "to 70% SOC?", steps.content)
    assert to_70.value == "0.46C"
    # the "20" of "T<20℃" names the row, not the step "20%"; "-10℃" holds no 10 ("up to 10% SOC")
    cold = table_with(tables["svolt_mineru2.7.6"], "-10C≤T<-5℃ | 0.20C | 10%")
    assert table_cell("What charge current is used for the first step (up to 10% SOC) when the cell temperature is "
                      "-10℃≤T<-5℃?", cold.content).value == "0.20C"
    # the -5℃≤T<0℃ group, which MinerU glued into one cell ("…0.1C 70%-5°℃≤T<0°℃0.06C 80%…") over rows left with
    # no label: they are that range's
    assert table_cell("SVOLT 196Ah刀片电芯阶梯充电表中，电芯温度在-5℃≤T<0℃时，充到50% SOC那一段的充电电流是多少？",
                      cold.content).text == "-5°℃≤T<0°℃ — 电流，ACurrent, A: 0.15C"
    assert table_cell("For the -5℃≤T<0℃ band, which SOC value does the step-charge table pair with the 0.04C current?",
                      cold.content).value == "60%"
    # the bounds of the range naming the row state no step: the "10" of "-10℃≤T<-5℃" is not the step "10%"
    assert table_cell("For the -10℃≤T<-5℃ band of the step-charge profile, what C-rate is specified for the closing "
                      "step that ends at 3.65V?", cold.content).value == "0.02C"


def test_a_description_cell_names_its_row_and_a_written_label_names_no_column():
    # REDP-5110's table of built-in global variables
    table = ("Global variable | Type | Description\n"
             "PACKAGE_NAME | VARCHAR(128) | Name of the currently running package\n"
             "ROUTINE_SCHEMA | VARCHAR(128) | Schema name of the currently running routine\n"
             "ROUTINE_SPECIFIC_NAME | VARCHAR(128) | Name of the currently running routine\n"
             "ROUTINE_TYPE | CHAR(1) | Type of the currently running routine")
    held = table_cell("Which variable holds the name of the currently running routine?", table)
    assert held.label.startswith("ROUTINE_SPECIFIC_NAME")
    # "type" writes the label ROUTINE_TYPE out: it does not name the column "Type"
    assert table_cell("What is the description of ROUTINE_TYPE?", table).text == \
        "ROUTINE_TYPE — Description: Type of the currently running routine"
    assert table_cell("What is the type of ROUTINE_SCHEMA?", table).value == "VARCHAR(128)"


def test_glosses_name_a_row_but_write_no_label_out(tables):
    # BYD's income statement: "shown under finance expenses" glosses as 财务费用, which names the row above
    # the one the question writes out (利息收入) but is not written in the question
    statement = table_with(tables["byd_2025q1_quarterly_report"], "其中:利息费用")
    question = "How much interest income (利息收入, shown under finance expenses) was recorded in the current period?"
    cell = table_cell(question, statement.content, glosses="利息收入 财务费用 本期")
    assert (cell.label, cell.value) == ("利息收入", "573,960,000.00")
    # the glosses name the row and the column of an English question that writes no Chinese
    english = table_cell("What were the finance expenses in the current period?", statement.content,
                         glosses="财务费用 本期")
    assert english.text == "财务费用 — 本期发生额: -1,908,346,000.00"


def test_a_tables_notes_answer_beside_its_cells():
    # GB/T 3620.1-2016 表1 as the OCR reads it: its note follows the rows, within the table's content, once
    # per page the table spans
    note = "TA7ELI牌号的杂质“Fe+O”的质量分数总和应不大于0.32％。"
    table = Chunk(content="表1工业纯钛、α型和近α型钛及钛合金牌号和化学成分\n牌号 | 名义化学成分 | Fe | O\n"
                          f"TA7 | Ti-5Al-2.5Sn | 0.50 | 0.20\nTA7ELI | Ti-5Al-2.5SnELI | 0.25 | 0.12\n注：TA0、TA1是工业纯钛牌号。\n{note}\n"
                          f"表1（续）\n牌号 | 名义化学成分 | Fe | O\nTA8 | Ti-0.05Pd | 0.30 | 0.25\n{note}",
                  chunk_type=TABLE, source="gbt3620.pdf", chunk_id="gbt3620.pdf_12")
    assert table_notes(table) == ["注：TA0、TA1是工业纯钛牌号。", note]  # no title, no repeat
    ctx = build_context([Candidate(table.chunk_id, 0.9, chunk=table)], Settings())
    ans = extractive_answer("TA7ELI牌号的杂质“Fe+O”质量分数总和应不大于多少？", ctx, Settings())
    assert ans.text.startswith(note)
    assert extractive_answer("TA7ELI的名义化学成分是什么？", ctx, Settings()).text.startswith(
        "TA7ELI — 名义化学成分: Ti-5Al-2.5SnELI")


def test_a_step_the_question_goes_to_beats_the_one_it_starts_from(tables):
    # the SVOLT step-charge table's 25℃≤T<45℃ group: "2.1C | 35%" then "1.80C | 55%"
    steps = table_with(tables["svolt_mineru2.7.6"], "25℃≤T<45℃ |  | 1.80C | 55%")
    assert table_cell("At 25℃≤T<45℃, which charge current applies for the segment from 35% up to 55% SOC?",
                      steps.content).value == "1.80C"
    assert table_cell("电芯温度25℃≤T<45℃时，SOC从35%充到55%这一段用多大的充电电流？", steps.content).value == "1.80C"


def test_an_outline_number_stays_with_its_heading():
    # docling's Markdown of the numbered-headers test document writes the numbers Word displays
    lines = sentences("2.3.2. Software Constraints\n2.3.3. Network Constraints\n2.3.8.1. First sub-item at this level")
    assert lines == ["2.3.2. Software Constraints", "2.3.3. Network Constraints",
                     "2.3.8.1. First sub-item at this level"]


def test_a_standard_asked_is_another_than_the_one_the_question_names():
    # GB/T 3620.1-2016's cover names the edition it replaces and its dates; Annex D lists the standards asked for
    cover = Chunk(content="中 华人 民共和 国 国家标准\nGB/T 3620.1—2016\n代替 GB/T 3620.1—2007\n钛及钛合金牌号和化学成分\n"
                          "Designation and composition of titanium and titanium alloys\n2016-12-30发布\n2017-11-01实施",
                  chunk_type=TEXT, source="gbt3620.pdf", chunk_id="gbt3620.pdf_2")
    annex = Chunk(content="GB/T 13810—2007 外科植入物用钛及钛合金加工材", chunk_type=TEXT, source="gbt3620.pdf",
                  chunk_id="gbt3620.pdf_28", section_path="附录 D > D.3")
    question = ("Among the reference standards listed in Annex D of the titanium standard GB/T 3620.1-2016, which "
                "standard covers wrought titanium and titanium alloy materials for surgical implants?")
    asked = answers_what_is_asked(question)
    assert not asked(cover.content) and asked(annex.content)
    ctx = build_context([Candidate(cover.chunk_id, 0.9, chunk=cover), Candidate(annex.chunk_id, 0.8, chunk=annex)],
                        Settings())
    assert "GB/T 13810—2007" in extractive_answer(question, ctx, Settings()).text


def test_the_item_right_after_a_named_one():
    chunk = Chunk(content="1. Hardware Constraints\n2. Software Constraints\n3. Regulatory Constraints\n"
                          "4. Budget Constraints\n5. Timeline Constraints",
                  chunk_type=TEXT, source="headers.docx", chunk_id="headers.docx_8")
    ctx = build_context([Candidate(chunk.chunk_id, 0.9, chunk=chunk)], Settings())
    ans = extractive_answer("Which constraint comes right after Regulatory Constraints?", ctx, Settings())
    assert ans.text.startswith("4. Budget Constraints")


def test_a_list_of_the_corpus_files_and_a_contents_line_are_no_answers():
    catalogue = Chunk(chunk_id="SOURCES.md_2", source="../SOURCES.md", chunk_type=TABLE,
                      content="local file | repo | bytes\nzh_pdf/prc_civil_code.pdf | zufang | 634,192\n"
                              "en/multi_page.pdf | docling | 61,002\nzh_pdf/prc_constitution.pdf | docs | 188,531")
    contents = Chunk(chunk_id="guide.pdf_3", source="guide.pdf", chunk_type=TEXT,
                     content="2.4 常见使用问题 ⋅ ⋅ ⋅ ⋅ ⋅ ⋅ ⋅ ⋅ ⋅ ⋅ 10\n附录 A 中国科学院大学学位论文撰写要求 ⋅ ⋅ ⋅ ⋅ ⋅ ⋅ 12")
    ctx = build_context([Candidate(catalogue.chunk_id, 0.9, chunk=catalogue),
                         Candidate(contents.chunk_id, 0.8, chunk=contents)], Settings())
    assert extractive_answer("Under the PRC Civil Code, after how many years is a right no longer protected?",
                             ctx, Settings()) is None
    assert extractive_answer("附录A的标题是什么？", ctx, Settings()) is None
    # asked about the files, the list answers
    assert "634,192" in extractive_answer("According to the SOURCES.md table, how many bytes is the PRC Civil Code "
                                          "file?", ctx, Settings()).text


def test_a_ranges_label_is_written_out_by_its_signed_numbers(tables):
    # the SVOLT step-charge table as OCR read it ("-15℃C≤T<-10℃"); the question writes "-15℃≤T<-10℃"
    cold = table_with(tables["svolt_mineru2.7.6"], "-15℃C≤T<-10℃ | 0.12C | 20%")
    cell = table_cell("电芯温度在-15℃≤T<-10℃时，第一段（充至20% SOC）的充电电流是多少？", cold.content)
    assert (cell.label, cell.value, cell.written) == ("-15℃C≤T<-10℃", "0.12C", True)
    # "-10C≤T<-5℃" holds -10 and -5, which "-15℃≤T<-10℃" does not write out
    other = table_cell("电芯温度在-10℃≤T<-5℃时，充至20% SOC那一段的充电电流是多少？", cold.content)
    assert (other.label, other.value, other.written) == ("-10C≤T<-5℃", "0.15C", True)


def test_a_list_opened_at_the_end_of_the_chunk_before_is_read_with_its_opening():
    # the union rules' article 17: its opening line ends one chunk, its items begin the next
    opening = Chunk(content="第十六条 职工代表大会是工会工作的重点。\n第十七条 职工代表大会工作机构的任务是:", chunk_type=TEXT,
                    source="rules.pdf", chunk_id="rules.pdf_1", chunk_index=1)
    items = Chunk(content="（一） 组织职工选举职工代表。\n（二） 负责筹备工作和会议期间的组织工作。\n（三） 征集、整理提案。",
                  chunk_type=TEXT, source="rules.pdf", chunk_id="rules.pdf_2", chunk_index=2)
    ctx = build_context([Candidate(opening.chunk_id, 0.9, chunk=opening), Candidate(items.chunk_id, 0.8, chunk=items)],
                        Settings())
    ans = extractive_answer("按那份工会制度第十七条，职工代表大会工作机构的第二项任务是什么？", ctx, Settings())
    assert "筹备工作和会议期间的组织工作" in ans.text.split("[ref:")[0]


def test_a_question_asking_what_something_means_takes_the_description_column():
    # REDP-5110's Table 2-1, the FUNCTION_USAGE view's columns
    table = ("Column name | Data type | Description\nUSAGE | VARCHAR(7) | Usage setting: ALLOWED: The user profile is "
             "allowed to use the function. DENIED: The user profile is not allowed to use the function.\n"
             "USER_TYPE | VARCHAR(5) | Type of user profile: USER: The user profile is a user. GROUP: The user profile "
             "is a group.")
    cell = table_cell("In Table 2-1, what does the USER_TYPE value GROUP mean?", table)
    assert (cell.label, cell.header) == ("USER_TYPE", "Description")
    assert table_cell("What is the data type of the USER_TYPE column?", table).value == "VARCHAR(5)"


def test_the_title_of_a_numbered_heading_is_its_line():
    # the numbered-headers test document as its Markdown lands: the heading lines open the chunks
    chunk = Chunk(content="2.2 Section 2.1\nParagraph 2.1.1\nParagraph 2.1.2\nAppendix A: Glossary\n1.1. Section A.1",
                  chunk_type=TEXT, source="headers.md", chunk_id="headers.md_7", section_path="2 Section 2 > 2.2 Section 2.1")
    ctx = build_context([Candidate(chunk.chunk_id, 0.9, chunk=chunk)], Settings())
    assert extractive_answer("What title does the heading numbered 2.2 carry?", ctx, Settings()).text.startswith(
        "2.2 Section 2.1")
    # its lines joined as a PDF's wrapped ones are, the heading is found within them
    assert "Appendix A: Glossary" in extractive_answer("What is the title of Appendix A?", ctx, Settings()).text
    assert heading_asked("What is the capital of the region?") is None
    # a standard's annex heading set letter-spaced (nbt_npp_periodic_safety_review_part12_design_draft.docx's contents)
    assert heading_asked("What is the title of the informative Appendix A of the draft?").search(
        "附\u3000录\u3000A  （资料性附录） 核电厂设计要素评价流程图\t8")


def test_the_number_of_a_quoted_heading_is_its_numbered_line():
    # the MinerU DOCX demo's sections as they land (a heading chunk, then a chart under it; "2.2" names a longer title)
    parts = [("2.2 Table/Figure/Chart with caption", "2.2\tTable/Figure/Chart with caption"),
             ("2.3.1 Chart with caption", "2.3.1\tChart with caption"),
             ("2.3.1 Chart with caption",
              "Chart 1: This is an easy line chart\n | Series 7 | Series 8\nCategory 1 | 2 | 3")]
    chunks = [Chunk(content=text, chunk_type=TEXT, source="demo.docx", chunk_id=f"demo.docx_{62 + i}",
                    chunk_index=62 + i, section_path=f"2 这是第二章标题 > {section}")
              for i, (section, text) in enumerate(parts)]
    ctx = build_context([Candidate(c.chunk_id, 0.9 - i / 10, chunk=c) for i, c in enumerate(chunks)], Settings())
    question = ("In the MinerU DOCX demo document ('MinerU supports DOCX document parsing now'), what section number "
                "does the 'Chart with caption' subsection carry?")
    assert extractive_answer(question, ctx, Settings()).text.startswith("2.3.1\tChart with caption")
    assert heading_asked("示例文档中，小节“公式示例”的编号是什么？").search("2.1.7 公式示例")
    assert heading_asked("What does the 'Chart with caption' subsection show?") is None  # no number asked


# the foreword of nbt_npp_periodic_safety_review_part12_design_draft.docx, as it lands
FOREWORD = ("前\u2003\u2003言\n《核电厂定期安全评价》分为15个部分：\n——第1部分：通用要求；\n——第11部分：设备合格鉴定；\n"
            "——第12部分：设计；\n——第13部分：应急计划；\n——第14部分：灾害分析；\n——第15部分：组织机构和行政管理。\n"
            "本部分为《核电厂定期安全评价》系列标准的第12部分。\n本部分由中国核电发展中心归口。")


def test_the_title_of_a_numbered_part_is_its_line_not_the_part_naming_the_document():
    chunk = Chunk(content=FOREWORD, chunk_type=TEXT, source="part12.docx", chunk_id="part12.docx_6", section_path="前言")
    ctx = build_context([Candidate(chunk.chunk_id, 0.9, chunk=chunk)], Settings())
    ask = lambda q: extractive_answer(q, ctx, Settings()).text  # noqa: E731
    assert ask("《核电厂定期安全评价 第12部分：设计》征求意见稿的前言中，系列标准第13部分的名称是什么？").startswith("——第13部分：应急计划")
    assert ask("According to the foreword of the draft NB/T standard 'Periodic safety review for nuclear power plants "
               "— Part 12: Design', what is Part 14 of the series titled?").startswith("——第14部分：灾害分析")
    # a part asked about in other words than "what is Part N": its line too
    assert ask("The foreword of the draft 'Periodic safety review for nuclear power plants — Part 12: Design' lists "
               "all 15 parts. Which safety topic is assigned to Part 11?").startswith("——第11部分：设备合格鉴定")
    part = heading_asked("What is Part 11 of the series?")
    assert part.search("——第11部分：设备合格鉴定；") and not part.search("——第1部分：通用要求；")
    assert heading_asked("What is Chapter 4 of the union rules titled?").search("第四章 工作职责")
    # an English contents line opens with the chapter; a sentence mentioning it is no title
    chapter = heading_asked("According to the table of contents of REDP-5110, what is the title of Chapter 2?")
    assert chapter.search("Chapter 2. Roles and separation of duties 7")
    assert not chapter.search("Chapter 3. Row and Column Access Control 13")
    assert not chapter.search("The roles are described in Chapter 2. They are")
    assert heading_asked("红皮书第二章的标题是什么？").search("Chapter 2. Roles and separation of duties 7")
    # a part the question gives the title of names the document: its title is not what is asked
    assert heading_asked("What English title is printed on the cover of the standard, Part 1 (General Requirements)?") \
        is None
    assert heading_asked("按那份工会制度第十七条，职代会工作机构要组织什么小组开展工作？") is None


def test_a_header_of_stop_words_is_named_when_the_question_capitalizes_it(tables):
    # CC-SAM's Table 3: "Many", "Medium", "Few" are its columns; "many" and "few" are stop words
    table = table_with(tables["cvpr_mineru3.4.4"], "iNaturalist 2018")
    cell = table_cell("CC-SAM论文大规模数据集结果表中，普通CE基线（ResNet-152）在Places-LT上Many（头部类别）的准确率是多少？",
                      table.content, frozenset({"cc", "sam"}))
    assert (cell.label, cell.header, cell.value) == ("Places-LT CE ResNet-152", "Many", "45.7")
    # lower-cased it is the question's word, not the column: "how many" names none
    assert table_cell("On Places-LT, how many does CE with ResNet-152 reach?", table.content).header == ""


def test_a_value_the_question_writes_out_names_its_row():
    # party_union_rules_1page_table.pdf, 表1: the question gives a duty and asks whose it is
    members = ("职位 | 人数 | 工作职责\n工会主席 | 1 | 全面负责工会工作\n工会副主席 | 1 | 主持工会日常工作\n"
               "经审委员 | 1 | 负责工会经费使用监督审查工作\n组织委员 | 1 | 负责工会组织工作")
    cell = table_cell("那份工会制度的工会委员成员分工表中，负责工会经费使用监督审查工作的是哪个职位？", members)
    assert (cell.label, cell.value) == ("经审委员", "负责工会经费使用监督审查工作")
    # a value every row holds names none of them ("1" of 人数 is no quote either)
    assert table_cell("工会主席有几人？", members).label == "工会主席"
    # an English question names the labels' column ("which position", glossed 职位) and describes a duty: the row
    # whose duty holds most of its glosses is named, though another's label holds one ("member": 委员)
    members += "\n女工委员 | 1 | 负责女工委全面工作"
    question = "In the union committee member table (表1) of the one-page union rules, which position is in overall " \
               "charge of the union's work?"
    for subject in (frozenset(), frozenset({"union", "rule", "page"})):
        assert table_cell(question, members, subject, "委员 职位 全面 工作").label == "工会主席"


def test_what_a_question_says_a_table_shows_names_no_column(tables):
    # CC-SAM's Table 1: "(… CIFAR-10-LT and CIFAR-100-LT)" describes the table; the ratio asked is CIFAR-100-LT's
    table = table_with(tables["cvpr_mineru3.4.4"], "Imbalance Ratio")
    cell = table_cell("In the CC-SAM paper's Table 1 (top-1 accuracy on CIFAR-10-LT and CIFAR-100-LT), what does "
                      "MiSLAS score on CIFAR-100-LT with an imbalance ratio of 100?", table.content,
                      frozenset({"cc", "sam"}))
    assert (cell.label, cell.header, cell.value) == ("MiSLAS [62]", "CIFAR-100-LT 100", "47.50")


# GB/T 3620.1-2016's Table 3 as OCR read it (rows of chunk 14 of the docs KB): "TC4" is "TCA"
TABLE_3_OCR = ('表3α-β型钛合金牌号及化学成分\n'
               '化学成分（质量分数）/%\n'
               '合金 |  |  |  |  |  |  |  |  |  | 主要成分 |  |  |  |  |  |  |  | '
               ' |  |  | 杂质，不大于 |  |  | \n'
               '牌号 | 名义化学成分 |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  '
               '|  |  |  |  |  |  | 其他元素\n'
               ' |  | Ti | A1 | Si | V | Cr | Mn | Fe | Cu | Zx | Nb | Mo | '
               'Ru | Pd | Sn | Ta | W | Fe | C | N | H | 0 |  | \n'
               ' |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  |  | '
               ' |  |  |  | 单一总和\n'
               'TC3 | Ti-5.A1-4V | 余量 | 4.5~6.0 |  | 3.5~4.5 |  | 一 |  | 一 |'
               ' 一 | 一 | 一 | 一 |  |  |  |  | 0.30 | 0.08 | 0.05 | 0.015 | 0.'
               '15 | 0.10 | 0.40\n'
               'TCA | Ti-6A1-4V | 余量 | 5.50~6.75 |  | 3.5~4.5 |  |  |  |  | '
               ' |  |  |  |  |  |  |  | 0.30 | 0.08 | 0.05 | 0.015 | 0.20 | '
               '0.10 | 0.40\n'
               'TC4ELI | Ti-6A14VELI | 余量 | 5.5~6.5 |  | 3.5~4.5 |  |  |  | '
               ' |  |  |  |  |  |  |  |  | 0.25 | 0.08 | 0.03 | 0.012 | 0.13'
               ' | 0.10 | 0.30\n'
               'TC6 | Ti-6A-1.5Cr-2.5 Mo-0.5Fe-0.3Si | 余量 | 5.5~7.0 | 0.15~0'
               '.40 |  | 0.8~2.3 |  | 0.2~0.7 | — | 一 |  | 2.0~3.0 | — |  | '
               ' |  |  |  | 0.08 | 0.05 | 0.015 | 0.18 | 0.10 | 0.40')


def test_a_label_the_question_writes_only_as_the_start_of_a_longer_one_is_not_written():
    # GB/T 3620.1-2016 表1 (OCR): "TA12" is in "TA12-1" but names another grade
    alloys = ("牌号 | 名义化学成分 | Mo | Sn\n"
              "TA12 | Ti-5. 5 A-4Sn-2Zr-1Mo-1 Nd-0 .2 5Si | 0.75~1.25 | 3.7~4.7\n"
              "TA12-1 | Ti-5.A1-4Sn-2Zr-1Mo- 1Nd-0.2 5Si | 1.0~2.0 | 3.7~4.7")
    question = "GB/T 3620.1—2016表1中，TA12-1钛合金（Ti-5Al-4Sn-2Zr-1Mo-1Nd-0.25Si）的钼（Mo）含量范围是多少（质量分数，%）？"
    assert table_cell(question, alloys).label == "TA12-1"
    # "表1" and "TA12" hold the numbers of "TA12-1": a grade is no range ("-15℃≤T<-10℃") written by its numbers
    assert table_cell("GB/T 3620.1—2016表1中，TA12钛合金的钼（Mo）含量范围是多少？", alloys).label == "TA12"
    # a label the question sets apart ("not TA24 itself") is no row written out; the composition it gives is
    # the one OCR read closer for TA24 ("Ti-3A1-2Mo-2Zr") than for TA24-1 ("Ti-3A-2Mo-2Zr")
    pair = ("牌号 | 名义化学成分 | Mo\nTA24 | Ti-3A1-2Mo-2Zr | 1.0~2.5\nTA24-1 | Ti-3A-2Mo-2Zr | 1.0~2.0")
    assert table_cell("Per Table 1 of GB/T 3620.1-2016, what molybdenum (Mo) content range is specified for grade "
                      "TA24-1 (Ti-3Al-2Mo-2Zr), the -1 variant rather than TA24 itself?", pair).value == "1.0~2.0"
    assert table_cell("GB/T 3620.1—2016表1（续）中，TA24-1（Ti-3Al-2Mo-2Zr，不是TA24本身）的钼（Mo）含量范围是多少？",
                      pair).value == "1.0~2.0"
    # a grade written out asks no other grade's row: "TA12-1" holds every term of "TA12" and the "1" of "Table 1"
    assert table_cell("What molybdenum (Mo) range, in mass %, does Table 1 of GB/T 3620.1-2016 set for the "
                      "neodymium-bearing near-alpha alloy TA12 (not TA12-1)?", alloys, frozenset({"2016", "alloy"})
                      ).value == "0.75~1.25"
    assert table_cell("TC6这个α-β牌号名义上只含0.5Fe，按GB/T 3620.1—2016表3主要成分栏，铁实际允许的区间是多少？",
                      TABLE_3_OCR).value == "0.2~0.7"
    # OCR read "TA7ELI" as "TA7E1I", "TC4" as "TCA"
    ocr = "牌号 | A1\nTA7 | 4.0~6.0\nTA7E1I | 4.50~5.75"
    assert table_cell("GB/T 3620.1—2016表1中，TA7ELI的铝（Al）含量范围是多少？", ocr).label == "TA7E1I"
    assert table_cell("Per Table 3 of GB/T 3620.1-2016, what aluminium (Al) content range, in mass %, is specified for "
                      "the alpha-beta grade TC4 (Ti-6Al-4V)?", TABLE_3_OCR).value == "5.50~6.75"


def test_a_grade_the_question_writes_whole_is_asked_not_a_shorter_one_it_starts_with():
    # GB/T 3620.1-2016 表1 as landed (OCR: "T A3"); spaces gone, "ta1g-1" holds "ta1" and "ta1g", "ta32contain" "ta3"
    pure = ("牌号 | 名义化学成分 | 杂质，不大于 H | Ta\nTA1 | 工业纯钛 | 0.015 | \nT A3 | 工业纯钛 | 0.015 | \n"
            "TA1G | 工业纯钛 | 0.015 | \nTA1G-1 | 工业纯钛 | 0.003 | \nTA31 | Ti-6.A1- 3Nb- 2Zr 1Mo | 0.015 | \n"
            "TA32 | Tr- 5.5A-3.5Sn-3Zr-1Mo-0.5Nb-0.7Ta-0.3Si | 0.012 5 | 0.2~0.7")
    assert table_cell("Commercially pure grade TA1G-1 has unusually tight interstitial limits in GB/T 3620.1-2016. "
                      "What is its maximum hydrogen content, in mass %?", pure).label == "TA1G-1"
    assert table_cell("Under GB/T 3620.1—2016, how much tantalum must grade TA32 contain?", pure).label == "TA32"
    # a grade written exactly is not read as a longer one by OCR's lookalikes ("ta3in" as "ta31n")
    assert table_cell("For grade TA3 in Table 1 of GB/T 3620.1-2016, what is the hydrogen ceiling?", pure).label \
        == "T A3"



def test_a_question_asking_an_e_mail_address_is_answered_by_the_clause_holding_one():
    asks = answers_what_is_asked("At what e-mail address can Hernando Bedoya be contacted?")
    assert asks("Send your comments in an email to hbedoya@us.ibm.com") and not asks("He teaches IBM classes.")
    assert answers_what_is_asked("作者的邮箱是什么？")("联系邮箱：zzp1994@mail.ustc.edu.cn")


def test_a_line_before_a_table_of_values_labels_its_rows(documents):
    # the SVOLT step-charge table: MinerU read "0°C≤T<5°C" as a line of its own and the table under it holds
    # values only ("0.40C | 10%"); the line labels each row, so the SOC a question states picks the row
    chunks = documents["svolt_mineru2.7.6"]
    (at,) = [i for i, c in enumerate(chunks) if c.chunk_type == TEXT and c.content.strip() == "0°C≤T<5°C"]
    label, steps = chunks[at], chunks[at + 1]
    assert steps.chunk_type == TABLE and "0.06C | 90%" in steps.content
    question = "SVOLT 196Ah刀片电芯阶梯充电表中，电芯温度0℃≤T<5℃时，充到90% SOC那一段的充电电流是多少？"
    assert table_cell(question, steps.content) is None  # no row names a label the question writes
    cell = table_cell(question, labelled_rows(steps.content, label.content.strip()))
    assert (cell.label, cell.value, cell.written) == ("0°C≤T<5°C", "0.06C", True)
    # a table whose rows have labels of their own keeps them; a line of cells labels nothing
    labelled = table_with(tables_of(chunks), "45℃≤T≤50℃").content
    assert labelled_rows(labelled, "0°C≤T<5°C") == labelled
    assert labelled_rows(steps.content, "a | b") == steps.content
    # the whole answer: the line and its table in the context beside another temperature's table
    other = table_with(tables_of(chunks), "-10C≤T<-5℃")
    ctx = build_context([Candidate(c.chunk_id, s, chunk=c) for c, s in ((other, 0.6), (label, 0.4), (steps, 0.4))],
                        Settings())
    assert "0.06C" in extractive_answer(question, ctx, Settings()).text


def test_the_one_value_beside_a_stated_condition_answers_though_its_header_is_unnamed(documents):
    # "15°℃≤T<20℃ |  | 0.14C | 95%": the Chinese question names no word of the header "Current, A", but it
    # states the row's 95%: the other value is what is asked, its column named by that
    steps = table_with(tables_of(documents["svolt_mineru2.7.6"]), "15°℃≤T<20℃")
    cell = table_cell("SVOLT 196Ah电芯阶梯充电表中，电芯温度15℃≤T<20℃时，充到95% SOC那一段的充电电流是多少？",
                      steps.content)
    assert (cell.value, cell.header, cell.written) == ("0.14C", "Current, A", True) and cell.column_score > 0


def test_a_row_asked_by_its_place_is_named_as_by_its_label(documents):
    # the MinerU DOCX demo's "Table with nested table": its rows are named by what they hold, so a question
    # names the row by its place ("the first-row cell under Column B")
    nested = table_with(tables_of(documents["mineru_docx_demo"]), "Simple cell upper left")
    cell = table_cell('In the "Table with nested table" example, what does the first-row cell under Column B say?',
                      nested.content)
    assert (cell.value, cell.written) == ("Simple cell with bold and italic text", True)
    assert asked_row("第二行数据的 Series 5 数值") == 2 and asked_row("最后一行（第四行）") == LAST
    # a row holding its label only ("This is a paragraph …" over an empty Column B): the label's own column asked
    rich = table_with(tables_of(documents["mineru_docx_demo"]), "This is a paragraph")
    cell = table_cell('In the "Table with rich cells", what is in the Column A cell of the last row?', rich.content)
    assert (cell.label, cell.header, cell.value) == ("#3", "Column A", "This is a paragraph This is another paragraph")
    assert asked_row("the row numbered 3") is None and asked_row("第三季度的收入") is None
    # a chart's data without category labels (a procurement contract's 图表 1): the place is the row's only name,
    # and among the columns the question lists, the one it asks about ("Series 5 数值") is answered
    chart = "图表 1\n | Series 4 | Series 5 | Series 8\n | 4.3 | 2.4 | 2\n | 2.5 | 4.4 | 2\n | 4.5 | 2.8 | 5"
    cell = table_cell("“图表 1”（Series 4、Series 5、Series 8）中，第二行数据的 Series 5 数值是多少？", chart)
    assert (cell.label, cell.header, cell.value) == ("#2", "Series 5", "4.4")
    assert table_cell("In chart 1, what is the Series 8 value in the last data row?", chart).value == "5"
    assert table_cell("图表 1 中 Series 5 的数值是多少？", chart) is None  # no row is named


def test_a_grid_cell_is_asked_by_its_rows_first_cell_and_its_columns_place_or_first_row(tables):
    # the MinerU DOCX demo's "Table with caption": a grid of no header ("1 | a | b | …" over "2 | u | …"), its rows
    # numbered 1 to 4; a question names a cell by the row's first cell and the column's place or first cell
    grid = table_with(tables["mineru_docx_demo"], "1 | a | b | v")
    asked = {"In the table, what is in the second column of the row that starts with 3?": "pp",
             "表格中，以4开头的那一行第二列的内容是什么？": "io",
             "In the table, which entry sits in the sixth column of the first row?": "er",
             "In the small grid, what entry is in the row numbered 2 under the column headed 'v'?": "9",
             "表格中，第一列为“3”的那一行，在首行为“a”的那一列里填的是什么？": "pp",
             "In the grid, what is in the last column of the row that starts with 3?": "q",
             # (the column's first cell unquoted, or quoted before "这一列", or a short token before "列")
             "小表格里，以 3 开头的那一行在首行为 f 的那一列填的是什么？": "q",
             "首行依次为1、a、b、v、d、er、f；以“4”开头的那一行在“er”这一列填的是什么？": "p",
             "首行是1、a、b、v、d、er、f；在以4开头的那一行中，a列下面写的是什么？": "io"}
    for question, value in asked.items():
        cell = table_cell(question, grid.content)
        assert (cell.value, cell.written) == (value, True), question
    assert asked_column("第二列的内容") == 2 and asked_column("the last column") == LAST
    assert asked_column("第一列为“3”的那一行") is None and asked_row("第一行为“a”的那一列") is None
    # under a header row ("No. | A | B"), the row starting with 2 is found the same way
    assert table_cell("What is in the second column of the row that starts with 2?", "No. | A | B\n1 | x | y\n2 | z | w"
                      ).value == "z"


def test_a_row_is_named_by_its_item_number_written_out():
    # the SVOLT datasheet's main performance table (MinerU 2.7.6 output, rows cut): "item 1.1.11" names its row,
    # though the discharge temperature row holds more of the question's words
    table = ("No. | 参数Item | 产品规格 Specification | 条件Condition\n"
             "1.1.1 | 电芯容量Nominal Capacity | ≥196 Ah | 25℃, 196 A(1C) DC to 2.0V\n"
             "1.1.9 | 工作温度(放电)Operating temperature-30~ 55℃(discharge) |  | 参考第1.4、1.5节Refer to 1.4, 1.5\n"
             "1.1.10 | 循环寿命Cycle life | ≥2000 | 25℃, Step charge/1C, 3-100%SOC，80%SOH\n"
             "1.1.11 | 室温放电功率dischargepower@25℃ | ≥2240W | 25±3℃,50%SOC, 10 s")
    question = ("For item 1.1.11 (room-temperature discharge power) of the SVOLT 196Ah cell's main performance table, "
                "how long is the discharge in the Condition column?")
    named = frozenset({"svolt", "196", "ah", "cell"})  # the words naming the document (the caller's subject)
    cell = table_cell(question, table, named)
    assert (cell.header, cell.value) == ("条件Condition", "25±3℃,50%SOC, 10 s")
    # "1.1.1" is not the start of "1.1.11"
    cell = table_cell("For item 1.1.1 of the SVOLT 196Ah cell's main performance table, what is the Condition?", table,
                      named)
    assert cell.value == "25℃, 196 A(1C) DC to 2.0V"


def test_a_file_path_written_out_names_its_row_of_a_file_list_whatever_document_it_names():
    # SOURCES.md's file list as landed (rows cut to their first columns): "PRC Constitution PDF" names a document of
    # the corpus (the caller's subject), yet "zh_pdf/prc_constitution.pdf" written out names its row
    files = ("local file | repo | path in repo | bytes\n"
             "zh_pdf/prc_constitution.pdf | bobo-xiaoming/zufang | 《中华人民共和国宪法》.pdf | 303,430\n"
             "en/groundtruth/multi_page.md | docling-project/docling | tests/data/groundtruth/docling_v2/multi_page.md "
             "| 8,394")
    question = "From which GitHub repository was the local PRC Constitution PDF (zh_pdf/prc_constitution.pdf) taken, " \
               "according to the repo column of SOURCES.md?"
    cell = table_cell(question, files, frozenset({"constitution", "github", "local", "pdf", "prc", "zh"}))
    assert (cell.value, cell.written) == ("bobo-xiaoming/zufang", True)
    # the file written out names its row however many words of another row's cells the question holds too (part
    # 12's title in its path of the repo, where part 1's path says 审查指南)
    drafts = ("local file | repo | path in repo | bytes\n"
              "zh_docx/nbt_npp_periodic_safety_review_part1_draft.docx | chatchat-space/Langchain-Chatchat (on master)"
              " | "
              "…/standard/content/核电厂定期安全审查指南 第1部分：通用要求（征求意见稿）.docx | 78,509\n"
              "zh_docx/nbt_npp_periodic_safety_review_part12_design_draft.docx | chatchat-space/Langchain-Chatchat | "
              "…/standard/content/核电厂定期安全评价 第12部分：设计（征求意见稿20230317）.docx | 110,575")
    question = "SOURCES.md清单的repo一栏里，核电厂定期安全评价第1部分征求意见稿（zh_docx/nbt_npp_periodic_safety_review_part1_draft.docx）" \
               "在仓库名后面用括号注明了取自哪个分支？"
    assert table_cell(question, drafts).label == "zh_docx/nbt_npp_periodic_safety_review_part1_draft.docx"
    # a short label of the document's own name writes no row out ("CC-SAM" in the CC-SAM paper)
    results = "Method | Many | Few\nCE | 65.9 | 8.2\nCC-SAM | 61.4 | 36.4"
    assert not table_cell("In the CC-SAM paper, what Few accuracy does CC-SAM reach?", results,
                          frozenset({"cc", "sam", "paper"})).written


def test_a_forecast_column_answers_only_a_question_asking_a_forecast():
    # a broker report's forecast table beside a quarterly report's balance sheet: "at 31 March 2025" asks what
    # was reported, which no "2025E" column holds
    forecast = "资产负债表（百万元） | 2023A | 2024E | 2025E\n流动资产合计 | 26,512 | 27,964 | 29,590"
    asked = "What were the total current assets (流动资产合计) at 31 March 2025?"
    cell = table_cell(asked, forecast)
    assert cell.column_score == 0 and cell.header == ""
    assert table_cell("What total current assets (流动资产合计) are forecast for 2025?", forecast).value == "29,590"
    assert table_cell("2025E的流动资产合计是多少？", forecast).value == "29,590"


def test_a_row_written_out_in_a_table_without_its_header_answers_with_all_its_values(tables):
    # BYD's top-10 shareholders: the table's header is on page 3 (an image), its rows go on on page 4 without it
    shareholders = table_with(tables["byd_2025q1_quarterly_report"], "夏佐全 |")
    cell = table_cell("比亚迪2025年一季报前10名股东持股情况表中，夏佐全持有的有限售条件股份数量是多少股？",
                      shareholders.content)
    assert cell.label == "夏佐全" and "61,976,705" in cell.value and cell.written and cell.column_score > 0


# broker_research_report_anonymized.pdf as landed (chunk 22): MinerU wrote each column group's name into its first
# year ("EPS2023A", "PE2023A") and labelled every peer by its rating alone
PEERS = ("公司投资名称评级 | 收盘价人民币 | EPS2023A | 2024E | 2025E | PE2023A | 2024E | 2025E | g2024-2025 | PEG2025\n"
         "优于大市 | 5.6 | 0.67 | 0.50 | 0.58 | 8.4 | 11.2 | 9.7 | 16.0% | 0.70\n"
         "优于大市 | 4.0 | 0.48 | 0.39 | 0.43 | 8.2 | 10.1 | 9.2 | 10.3% | 0.99\n"
         "优于大市 | 18.9 | 1.60 | 1.62 | 1.80 | 11.8 | 11.7 | 10.5 | 11.1% | 1.05")


def test_a_number_one_row_alone_holds_names_the_row_its_labels_cannot():
    cell = table_cell("服装企业研报可比公司估值表里，收盘价5.6元那一行对应的2024E市盈率（PE）是多少？", PEERS)
    assert (cell.header, cell.value) == ("PE 2024E", "11.2")  # the year under its group, not EPS's 2024E
    assert table_cell("收盘价为18.9元的那家公司，2025E的EPS预测是多少元？", PEERS).value == "1.80"
    # numbers held by three rows name none of them: no row is asked
    assert table_cell("哪一列的数值有4.0、5.6和18.9？", PEERS) is None


def test_a_row_label_named_is_not_outranked_by_a_number_another_row_holds(tables):
    # the SVOLT step-charge table's chunks: "20%" is a value of one 10℃≤T<15℃ row alone, in the chunk ranked
    # first; the row the question names by its label, in the next chunk, answers
    steps = tables["svolt_mineru2.7.6"]
    first, named = table_with(steps, "10°℃≤T<15℃ | 0.90C | 20%"), table_with(steps, "-20℃≤T<-15℃")
    ctx = build_context([Candidate(first.chunk_id, 0.9, chunk=first), Candidate(named.chunk_id, 0.8, chunk=named)],
                        Settings())
    question = "SVOLT 196Ah刀片电芯阶梯充电表中，电芯温度在-15℃≤T<-10℃时，第一段（充至20% SOC）的充电电流是多少？"
    assert extractive_answer(question, ctx, Settings()).text.startswith("-15℃C≤T<-10℃ — 电流，ACurrent, A: 0.12C")


def test_the_description_of_a_table_names_no_column(tables):
    # CC-SAM's Table 4 as landed: "(… on ImageNet-LT and Places-LT)" describes the table; "on Places-LT" asks the column
    table = table_with(tables["cvpr_mineru3.4.4"], "Lifted Loss")
    question = ("In Table 4 of the CC-SAM paper (open long-tailed recognition on ImageNet-LT and Places-LT), what "
                "Medium-class accuracy does Lifted Loss achieve on Places-LT?")
    assert table_cell(question, table.content).header == "Places-LT Medium"


def test_a_change_between_two_named_columns_is_the_change_column(tables):
    # BYD's balance-sheet changes as landed: both dates are named, the rate of change is asked, not a date's value or
    # the reason
    table = table_with(tables["byd_2025q1_quarterly_report"], "主要是票据背书和贴现增加所致")
    question = "In BYD's Q1 2025 report, by what rate did inventories (存货) change between 2024/12/31 and 2025/3/31?"
    assert (table_cell(question, table.content).header, table_cell(question, table.content).value) == ("变动率", "33.04%")
    assert table_cell("存货在2024/12/31到2025/3/31之间变动的主要原因是什么？", table.content).header == "变动原因"


def test_a_table_named_by_its_number_answers_before_another_ranked_first(tables):
    # CC-SAM's Tables 3 and 4 as landed: both have a CE row and Places-LT's Few column; Table 4, ranked first, is not
    # the table the question names
    third, fourth = (next(t for t in tables["cvpr_mineru3.4.4"] if t.caption.startswith(f"Table {n}.")) for n in (3, 4))
    ctx = build_context([Candidate(fourth.chunk_id, 0.9, chunk=fourth), Candidate(third.chunk_id, 0.6, chunk=third)],
                        Settings())
    question = "In Table 3 of the CC-SAM paper, what Few accuracy does CE reach on Places-LT?"
    assert extractive_answer(question, ctx, Settings()).citations == [third.chunk_id]


def test_a_method_named_beats_the_papers_own_row(tables):
    # CC-SAM's Table 3 as landed: "the CC-SAM paper" names the document; its own CC-SAM row under Places-LT is no
    # better named than the CE row the question asks
    third = next(t for t in tables["cvpr_mineru3.4.4"] if t.caption.startswith("Table 3."))
    cell = table_cell("In Table 3 of the CC-SAM paper, what Few accuracy does CE reach on Places-LT?", third.content)
    assert (cell.label, cell.value) == ("Places-LT CE", "8.2")


def test_a_citation_states_no_number(documents):
    # the CC-SAM paper as landed: "…first proposed by OLTR [32]." ties with the sentence giving 365 classes; a
    # question asking how many adds the best unit holding a number when the first holds none, and "[32]" is none
    (datasets,) = [c for c in documents["cvpr_mineru3.4.4"] if "first proposed by OLTR" in c.content]
    proposed, spanning = (next(s for s in sentences(datasets.content) if needle in s)
                          for needle in ("first proposed by OLTR", "365 classes"))
    asked = answers_what_is_asked("How many classes does Places-LT span?")
    assert "[32]" in proposed and not asked(proposed)
    assert asked(spanning)


def test_a_paper_named_before_zhong_is_the_scope_not_a_row(tables):
    # "CC-SAM论文中…": CC-SAM names the paper, not the row of Table 3 the question asks (CE, ResNet-152)
    results = table_with(tables["cvpr_mineru3.4.4"], "Places-LT | CE | ResNet-152")
    question = ("CC-SAM论文中Places-LT、ImageNet-LT、iNaturalist 2018的Top-1准确率对比表里，CE（ResNet-152）在Places-LT上的"
                "Few准确率是多少？")
    assert scope_only_terms(question) >= {"cc", "sam"}
    cell = table_cell(question, results.content)
    assert (cell.label, cell.header, cell.value) == ("Places-LT CE ResNet-152", "Few", "8.2")


def test_a_paper_named_right_before_its_table_is_the_scope_not_a_row(tables):
    # "CC-SAM论文表3的…": the plain CE baseline's row, not CC-SAM's
    results = table_with(tables["cvpr_mineru3.4.4"], "Places-LT | CE | ResNet-152")
    question = "CC-SAM论文表3的ImageNet-LT部分，普通交叉熵CE基线（ResNeXt-50骨干）在Many（头部类别）上的准确率是多少？"
    assert document_scope(question) == "CC-SAM论文"
    assert table_cell(question, results.content).text == "ImageNet-LT CE ResNeXt-50 — Many: 65.9"
    assert document_scope("CC-SAM论文的图2展示了什么？") == "CC-SAM论文"
    # past a bracketed aside of the paper's own name ("（CC-SAM，CVPR 2023）"): LADE's row, not CC-SAM's
    question = "类条件锐度感知最小化（CC-SAM，CVPR 2023）论文的表3中，在ImageNet-LT上使用ResNeXt-50骨干的LADE，其尾部类别（Few）准确率是多少？"
    assert document_scope(question) == "类条件锐度感知最小化（CC-SAM，CVPR 2023）论文"
    assert table_cell(question, results.content).text == "ImageNet-LT LADE [17] ResNeXt-50 — Few: 34.3"


def test_a_paper_cited_in_brackets_or_at_the_end_is_the_scope_not_a_row(tables):
    # the open long-tail table (Table 4): "CC-SAM" cited as the source, anywhere in the question, names no row
    results = table_with(tables["cvpr_mineru3.4.4"], "LUNA")
    for question in ("开放长尾设定下（CC-SAM论文Table 4），CE在ImageNet-LT的Many类别准确率是多少？",
                     "CE在ImageNet-LT开放长尾评测中Many类别的准确率是多少（依据CC-SAM论文表4）？",
                     "CE在ImageNet-LT开放长尾评测中Many类别的准确率是多少？请依据CC-SAM论文的表4。"):
        assert scope_only_terms(question) >= {"cc", "sam"}, question
        assert table_cell(question, results.content).text == "CE — ImageNet-LT Many: 40.1", question
    assert scope_parts("CC-SAM论文第2.2.1节从局部视角观察损失地形，发现了什么？") == ["CC-SAM论文"]
    # a bracket saying what a word means is no source ("多样本（Many）类别")
    assert scope_parts("CE的多样本（Many）准确率是多少？") == []


def test_an_english_scope_runs_past_a_companys_possessive_to_the_word_for_the_document():
    # "In BYD's 2025 first-quarter report, …": the report, not BYD alone, is named (its cover restates it)
    question = ("In BYD's 2025 first-quarter report, by what percentage did basic earnings per share change "
                "compared with the same period last year?")
    assert scope_parts(question) == ["BYD's 2025 first-quarter report"]
    assert scope_only_terms(question) >= {"byd", "2025", "first", "quarter", "report"}
    # a paper's own table keeps its possessive as the end: the paper is named, not its table
    assert scope_parts("In the CC-SAM paper's table, what does LDAM-DRW reach?") == ["CC-SAM paper"]
    # "Per …," opens a scope as "Under …," does ("Per cent" does not)
    assert scope_parts("Per Article 30 of the Constitution, into what are counties divided?") == \
        ["Article 30 of the Constitution"]
    assert scope_parts("Per cent of shares held by HKSCC, as listed?") == []



def test_a_standards_number_leading_the_scope_names_it_and_the_words_after_it_say_where():
    # "GB/T 3620.1—2016前言列出的主要起草人名单中": the foreword's list of drafters is where the answer is, its words
    # evidence ("主要起草人")
    assert scope_parts("GB/T 3620.1—2016前言列出的主要起草人名单中，排在最后的是谁？") == ["GB/T 3620.1—2016"]
    # a table's number goes with the standard's: it names no row ("TA1" of "表1")
    assert scope_parts("GB/T 3620.1—2016表1中，牌号TA9的名义化学成分是什么？") == ["GB/T 3620.1—2016表1"]


def test_a_title_whose_number_is_asked_is_the_entry_asked_when_the_document_is_named_otherwise():
    # GB/T 3620.1-2016's Annex D.3 lists standards by number and title: the 《title》 is the entry asked
    assert scope_parts("按GB/T 3620.1—2016附录D.3所列参考标准，《钛及钛合金锻造板坯》的标准编号是什么？") == [
        "GB/T 3620.1—2016附录D.3所列参考标准"]
    # a title naming the document alone still names it (its own number is asked)
    assert scope_parts("《核电厂定期安全审查指南 第1部分：通用要求》的标准编号是什么？") == ["核电厂定期安全审查指南 第1部分：通用要求"]


# SVOLT-196Ah-…-SpecificationDatasheet.pdf as the flash tier landed it (the docs corpus, chunks 35 and 93): table 1.1
# continues on a page starting with its row 1.1.13; the BMS requirements of 4.1.5 are numbered in their first column
SVOLT_CONTINUED = ("1.1.13 | 建议 SOC使用范围Recommended SOC range | 3% - 100% | \n"
                   "1.1.14 | 电池重量Cell weight | 3380±50 g | N.A.\n"
                   "1.1.15 | 电芯尺寸Cell dimension | 请参考本产品标准第8条Refer to 8 | N.A.")
SVOLT_BMS = ("No. | 参数Parameters | 产品规格Specification | 保护动作Protective Action\n"
             "4.1.5.9 | 过热保护Overheat protection | 参考第 1.2至1.6节Refer to 1.2~1.6 | 当温度超过本产品标准规定时，终止充电/放电"
             "Stop charge/discharge when the temperature exceeds the provisions of this specification.\n"
             "4.1.5.10 | 充电时间过长保护Charge time protection | 充电时间在 8小时内≤8h | 充电时间长于 8小时，则终止充电Charge time "
             "longer than 8 hours, then charge is stopped.")


def test_a_table_continued_from_the_page_before_has_no_header_and_its_numbers_are_asked():
    # the continued table's first row is data, not the header of the rows after it ("3% - 100%: 3380±50 g")
    weight = table_cell("SVOLT 196Ah电芯的电池重量是多少？", SVOLT_CONTINUED)
    assert (weight.header, weight.value) == ("", "3380±50 g")
    assert table_cell("SVOLT 196Ah电芯建议的SOC使用范围是多少？", SVOLT_CONTINUED).value == "3% - 100%"
    # a row's own number asked is its numbering cell, in either language
    number = table_cell("SVOLT 196Ah刀片电芯规格书1.1主要性能表里，“电池重量 Cell weight”这一行的编号（No.）是什么？",
                        SVOLT_CONTINUED)
    assert number.value == "1.1.14"
    item = table_cell("Which item number does the SVOLT 196Ah datasheet's BMS requirements table (section 4.1.5) "
                      "assign to charge time protection (充电时间过长保护)?", SVOLT_BMS)
    assert (item.header, item.value) == ("No.", "4.1.5.10")
    assert table_cell("SVOLT电芯规格书电池管理系统要求表里，“充电时间过长保护”对应的条目号是多少？", SVOLT_BMS).value == "4.1.5.10"


def test_a_value_the_question_writes_out_names_its_row_even_among_the_labels_cells():
    # REDP-5110 Table 3-2 (fresh76 aw02): "VARCHAR(64)" is read as part of PACKAGE_VERSION's label; the Chinese
    # question's "类型" glossed "type" must not make ROUTINE_TYPE the row asked
    content = ("Global variable | Type | Description\n"
               "PACKAGE_NAME | VARCHAR(128) | Name of the currently running package\n"
               "PACKAGE_VERSION | VARCHAR(64) | Version identifier of the currently running package\n"
               "ROUTINE_TYPE | CHAR(1) | Type of the currently running routine")
    question = "IBM红皮书REDP-5110表3-2列出的九个内置全局变量中，数据类型为VARCHAR(64)的是哪一个？"
    cell = table_cell(question, content, glosses="variable type")
    assert cell.label.startswith("PACKAGE_VERSION") and cell.written


def test_a_question_asking_which_row_holds_a_columns_extreme_gets_that_rows_label():
    # word_sample.docx's food table and CC-SAM Table 3's iNaturalist rows, as landed
    food = (" | Food | Calories per portion\nLeaves | Ash, Elm, Maple | 50\n"
            "Berries | Blueberry, Strawberry, Cranberry | 150\nGrain | Corn, Buckwheat, Barley | 200")
    cell = table_cell("Which foods make up the category with the most calories per portion?", food)
    assert cell.text == "Grain | Corn, Buckwheat, Barley — Calories per portion: 200"
    assert table_cell("Which category has the fewest calories per portion?", food).text.startswith("Leaves")
    results = ("Dataset | Method | Backbone | Overall\nImageNet-LT | GCL [26] | ResNet-50 | 54.9\n"
               "iNaturalist 2018 | MiSLAS [62] | ResNet-50 | 71.6\niNaturalist 2018 | GCL [26] | ResNet-50 | 72.0\n"
               "iNaturalist 2018 | CC-SAM | ResNet-50 | 70.9\nPlaces-LT | CC-SAM | ResNet-152 | 40.6")
    cell = table_cell("CC-SAM论文表3的iNaturalist 2018部分，哪个方法的Overall总体准确率最高？", results)
    assert "GCL [26]" in cell.text and cell.value == "72.0"
    # a row written out asks across its own columns, which this does not read; a question asking no row is as before
    chart = " | 系列 1 | 系列 2 | 系列 3\n类别 1 | 4.3 | 2.4 | 2\n类别 2 | 2.5 | 4.4 | 2\n类别 4 | 4.5 | 2.8 | 5"
    assert not table_cell("图表中类别 4 取值最大的系列是哪一个？", chart).text.startswith("类别 2")
    assert table_cell("How many calories per portion do berries have?", food).value == "150"


def test_the_extreme_row_asked_is_found_though_the_question_names_the_papers_own_row():
    # CC-SAM's Table 4 as landed: the paper's own name ("In CC-SAM's comparison", "above CC-SAM itself") writes no
    # row out, so the question asks the column's extreme
    table = (" | ImageNet-LT | ImageNet-LT | Places-LT | Places-LT\nMethod | Few | F-measure | Few | F-measure\n"
             "IEM [65] | 20.1 | 0.525 | 28.9 | 0.486\nLUNA [5] | 23.6 | 0.579 | 29.0 | 0.491\n"
             "CC-SAM | 37.1 | 0.552 | 36.4 | 0.510")
    question = ("In CC-SAM's comparison (Table 4), which method posts the highest ImageNet-LT F-measure, above CC-SAM "
                "itself?")
    assert table_cell(question, table, subject=frozenset({"cc", "sam"})).text == \
        "LUNA [5] — ImageNet-LT F-measure: 0.579"


def test_a_number_grouped_by_thousands_names_the_row_holding_it():
    # the corpus's SOURCES.md file list, as landed: "24,338" is one number, in the question and in its cell
    files = ("local file | repo | bytes | repo licence\nzh_pdf/prc_constitution.pdf | bobo-xiaoming/zufang | 303,430 | "
             "none stated\nzh_docx/nbt_npp_psr_part1_drafting_notes.docx | chatchat-space/Langchain-Chatchat | "
             "24,338 | Apache-2.0\nen/word_sample.docx | docling-project/docling | 102,450 | MIT")
    cell = table_cell("In the provenance table of SOURCES.md, which local file is listed with a size of 24,338 bytes?",
                      files)
    assert cell.value == "24,338" and "zh_docx/nbt_npp_psr_part1_drafting_notes.docx" in cell.label
    assert "prc_constitution" not in cell.label


def test_the_row_of_a_columns_extreme_is_named_by_its_range_label(tables):
    # the SVOLT pulse tables' rows are temperature ranges ("≥25 | 636 | 10"): such a label reads as a number, yet it
    # is the answer; and the "20" of "20% SOC" writes out no "≥-20" row (its sign differs)
    power = table_with(tables["svolt_mineru2.7.6"], "Power(20%SOC)").content
    cell = table_cell("Which cell temperature allows the highest pulse discharge power (20% SOC) in the SVOLT "
                      "datasheet?", power)
    assert (cell.label, cell.value) == ("≥45", "1190")
    current = table_with(tables["svolt_mineru2.7.6"], "Current(80%SOC)").content
    cell = table_cell("SVOLT电芯再生脉冲充电表（80%SOC）中，哪个电芯温度档允许的充电电流最小？", current)
    assert (cell.label, cell.value) == ("≥-20", "24")


def test_the_coldest_or_hottest_band_permitting_what_is_asked_is_the_row_asked(tables):
    # the SVOLT pulse tables as landed: "<-30" does not permit discharging ("不允许No discharging"), "≥-30" does
    power = table_with(tables["svolt_mineru2.7.6"], "Power(20%SOC)").content
    cell = table_cell("In the SVOLT cell's BOL pulse discharge table, what power (W, at 20% SOC) is allowed in the "
                      "coldest temperature band in which pulse discharge is still permitted?", power)
    assert (cell.label, cell.value) == ("≥-30", "117")
    assert table_cell("SVOLT电芯脉冲放电表中，温度最高的允许放电区间对应的功率（20%SOC）是多少瓦？", power).value == "1190"
    current = table_with(tables["svolt_mineru2.7.6"], "Current(80%SOC)").content
    cell = table_cell("What current in amperes (80% SOC, 10 s) does the regenerative pulse charge table allow in the "
                      "coldest temperature band where regenerative charging is permitted?", current)
    assert (cell.label, cell.value) == ("≥-20", "24")


def test_the_condition_columns_words_name_no_other_column():
    # the broker note's comparable-company table, as landed: "2023A" names the EPS column holding the condition
    # (0.48), not also the PE 2023A column; the closing price is what is asked
    peers = ("公司投资名称评级 | 收盘价人民币 | EPS2023A | 2024E | 2025E | PE2023A | 2024E | 2025E | g2024-2025 | PEG2025\n"
             "优于大市 | 5.6 | 0.67 | 0.50 | 0.58 | 8.4 | 11.2 | 9.7 | 16.0% | 0.70\n"
             "优于大市 | 4.0 | 0.48 | 0.39 | 0.43 | 8.2 | 10.1 | 9.2 | 10.3% | 0.99\n"
             "优于大市 | 18.9 | 1.60 | 1.62 | 1.80 | 11.8 | 11.7 | 10.5 | 11.1% | 1.05")
    cell = table_cell("可比公司估值表中，2023A每股收益为0.48元的那家公司收盘价是多少元？", peers)
    assert (cell.header, cell.value) == ("收盘价人民币", "4.0")
    # a year the question names for the column asked still names it
    assert table_cell("可比公司估值表中，收盘价为18.9元的那家公司2023A的PE是多少？", peers).value == "11.8"


def test_a_list_cell_holding_a_name_the_question_writes_is_the_rows_condition_not_its_answer():
    # word_sample.docx's food table, as landed: the group holding Strawberry is picked by it; its calories are asked
    food = (" | Food | Calories per portion\nLeaves | Ash, Elm, Maple | 50\nBerries | Blueberry, Strawberry, Cranberry"
            " | 150\nGrain | Corn, Buckwheat, Barley | 200")
    # (the Chinese question's words translate to "food" and "strawberry", none to the calories' header)
    for question, glosses in (("“Let’s eat”食物表中包含草莓（Strawberry）的那一类，每份热量是多少？", "food strawberry"),
                              ("In the food table, the group that lists Maple gives how many calories?", "")):
        cell = table_cell(question, food, glosses=glosses)
        assert (cell.header, cell.value) == ("Calories per portion", "150" if "Strawberry" in question else "50")
        assert cell.written  # the row named by its item as surely as by its label: the cell's bonus in full
    # an item written in the other language only is read by the question's glosses ("蓝莓、草莓" of "Blueberry, …")
    cell = table_cell("docling那份“Summer activities”小鸭子Word样例里，包含蓝莓、草莓和蔓越莓的那一类食物，每份热量是多少？", food,
                      glosses="duck blueberry strawberry food")
    assert (cell.label, cell.header, cell.value) == ("Berries", "Calories per portion", "150")
    # a cell of clauses is no list of names: "the copy carries a watermark" is said, not a condition
    assert not _lists_written("national standard (SAC copyright); the copy carries a watermark", "watermark")


def test_a_closing_sentence_saying_in_what_language_to_answer_is_not_what_is_asked():
    asked = "Which city does the PRC Constitution designate as the capital?"
    for form in ("Give the Chinese name.", "Quote the Chinese wording.", "Answer in Chinese.",
                 "Give it as written in the Chinese text.", "Give the English menu label."):
        assert without_answer_form(f"{asked} {form}") == asked
    # a sentence saying more than the language is kept, and so is a question that is only such a sentence
    kept = f"{asked} Give the age as written in the Chinese text."
    assert without_answer_form(kept) == kept
    assert without_answer_form("Answer in Chinese.") == "Answer in Chinese."
    assert without_answer_form("中文名称是什么？") == "中文名称是什么？"


def test_a_temperature_the_question_states_names_the_band_holding_it(tables):
    # the SVOLT tables as landed: rows by temperature bands, one-sided ("≥45" reaches up to "≥55") or two-sided
    power = table_with(tables["svolt_mineru2.7.6"], "Power(20%SOC)").content
    cell = table_cell("A SVOLT 196Ah blade cell is sitting at 48 °C. Going by the BOL pulse-discharge table, how many "
                      "watts may it deliver in a 30 s pulse at 20% SOC?", power)
    assert (cell.label, cell.value) == ("≥45", "1190")  # (nor does "30 s" name "≥-30")
    cell = table_cell("一块蜂巢能源196Ah刀片电芯此时温度约30℃、处于20%SOC，按规格书的BOL脉冲放电功率表，它在30秒脉冲内最多允许输出多少瓦？",
                      power)  # (a temperature "about" so much is stated too)
    assert (cell.label, cell.value) == ("≥25", "1159")
    current = table_with(tables["svolt_mineru2.7.6"], "Current(80%SOC)").content
    cell = table_cell("再生制动回充时，如果蜂巢能源196Ah电芯的温度是-15℃，规格书允许的10秒再生脉冲电流（80% SOC）为多少安？",
                      current)
    assert (cell.label, cell.value) == ("≥-20", "24")
    steps = table_with(tables["svolt_mineru2.7.6"], "1.60C").content
    cell = table_cell("一块蜂巢能源196Ah刀片电芯此刻温度为22℃，照规格书的阶梯充电制度，起始那一级（充到35% SOC为止）"
                      "该用多大倍率的电流？", steps)
    assert (cell.label, cell.value) == ("20°C≤T<25℃", "1.60C")
    # a bound is no temperature stated: "below -20℃" asks the "<-20" row by its words, not the band holding -20
    assert table_cell("In the regenerative pulse charge table (80% SOC), what entry is given for cell temperatures "
                      "below -20℃?", current).value != "24"


def test_a_value_written_with_its_thousands_or_unit_names_the_row_asked(tables):
    # BYD's Q1 2025 report as landed: the balance sheet, and the top shareholders' chunk holding two tables
    sheet = table_with(tables["byd_2025q1_quarterly_report"], "使用权资产").content
    cell = table_cell("比亚迪2025年3月31日的合并资产负债表里，哪个所有者权益项目的期末余额和期初余额都是7,374,087,000.00元？",
                      sheet)
    assert (cell.label, cell.value) == ("盈余公积", "7,374,087,000.00")  # (its "000.00" is no second number)
    holders = table_with(tables["byd_2025q1_quarterly_report"], "前10名无限售条件股东持股情况").content
    cell = table_cell("比亚迪2025年一季报前10名无限售条件股东中，持有59,807,155股人民币普通股的是谁？", holders)
    # who is asked as which is, and the header is the one of the row's own table, not of the chunk's first
    assert (cell.label, cell.header, cell.value) == ("吕向阳", "持有无限售条件股份数量", "59,807,155")
    # the broker note's income statement as landed (two rows of it): a whole number with its unit apart
    income = ("利润表（百万元） | 2022 | 2023 | 2024E\n营业利润 | 2806 | 3611 | 3101\n利润总额 | 2897 | 3624 | 3101\n"
              "所得税费用 | 835 | 705 | 620\n归属于母公司净利润 | 2155 | 2952 | 2397")
    assert table_cell("券商对某服装企业的利润表预测中，2022年金额为835百万元的是哪个科目？", income).label == "所得税费用"


def test_a_flattened_pseudocode_is_quoted_step_by_step(documents):
    # the CC-SAM paper's Algorithm 1 as MinerU's cloud API landed it: one code chunk on one line
    (listing,) = [c for c in documents["cvpr_mineru3.4.4"] if c.chunk_type == "code"]
    assert "\n" not in listing.content.strip()
    ctx = build_context([Candidate(listing.chunk_id, 0.9, chunk=listing)], Settings())
    answer = extractive_answer("In Algorithm 1 (Training Paradigm of CC-SAM), which equation is used in Stage 2 to "
                               "obtain the adversarial feature?", ctx, Settings())
    assert answer.text == f"Obtain the adversarial feature via Eqn 12[ref:{listing.chunk_id}]"
    answer = extractive_answer("CC-SAM论文算法1（Training Paradigm of CC-SAM）的第一阶段中，对每个batch计算经验损失后，要针对L_S估计"
                               "哪一个梯度集合G？请给出英文原文。", ctx, Settings())
    assert "class-specific gradient set" in answer.text and "Eqn 12" not in answer.text


def test_the_cash_flow_statement_named_names_no_row_by_its_words():
    # BYD's Q1 2025 consolidated cash flow statement as landed: "according to its consolidated cash flow statement"
    # names the table; the cash paid to employees is asked, not the net cash flow the statement's words name
    table = ("项目 | 本期发生额 | 上期发生额\n一、经营活动产生的现金流量: |  | \n"
             "购买商品、接受劳务支付的现金 | 135,218,162,000.00 | 85,416,879,000.00\n"
             "支付给职工以及为职工支付的现金 | 33,265,156,000.00 | 23,477,009,000.00\n"
             "经营活动产生的现金流量净额 | 8,580,961,000.00 | 10,227,984,000.00")
    question = ("How much cash did BYD pay to and on behalf of its employees during Q1 2025, according to the "
                "operating section of its consolidated cash flow statement?")
    glosses = " ".join(gloss_terms(question, frozenset(words(table))))
    assert "职工" in glosses  # "employees": the accounting standards' 职工, not CC-CEDICT's 雇员 alone
    assert table_cell(question, table, glosses=glosses).label == "支付给职工以及为职工支付的现金"
    # said beside the statement's name, the net cash flow is asked
    assert table_cell("What net cash flow from operating activities does BYD's cash flow statement show?", table,
                      glosses=" ".join(gloss_terms("net cash flow from operating activities", frozenset(words(table))))
                      ).label == "经营活动产生的现金流量净额"
