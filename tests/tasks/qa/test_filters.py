"""Filters and selection on hand-made candidates: status/source/section/chapter filters, MMR over
Jaccard similarity of BM25 terms, and adaptive top-k on the rrf and rerank scales."""
from __future__ import annotations

import random

import numpy as np

from schemas.chunk import Chunk
from schemas.qa import RERANK, RRF
from schemas.settings import Settings
from tasks.qa.filters import (DocumentNames, adaptive_top_k, catalogues_last, chapter_markers, filter_candidates,
                              in_section, is_enum_query, jaccard_rows, mmr, mmr_order, named_documents_first,
                              term_id_sets)
from tasks.qa.types import Candidate


def cand(chunk_id, score=0.5, *, source="a.md", section="", tokens=(), chunk_type="text") -> Candidate:
    return Candidate(chunk_id, score=score, chunk=Chunk(content=chunk_id, chunk_type=chunk_type, source=source,
                                                        section_path=section, tokens=list(tokens), chunk_id=chunk_id))


def test_section_prefix_matches_whole_path_components():
    assert in_section("第一章 > 1.1", "第一章") and in_section("第一章", "第一章") and in_section("任何", "")
    assert not in_section("第一章节", "第一章") and not in_section("附录 > 第一章", "第一章")


def test_filters_status_source_section_and_chapters():
    cands = [cand("a", section="第一章 总则 > 第一节"), cand("b", section="第一章节外"), cand("c", source="b.md"),
             cand("d", section="第二章 > 第三条"), Candidate("unknown")]
    ids = lambda cs: [c.chunk_id for c in cs]  # noqa: E731
    assert ids(filter_candidates(cands)) == ["a", "b", "c", "d"]  # unknown to DuckDB: dropped
    assert ids(filter_candidates(cands, inactive={"a"})) == ["b", "c", "d"]
    assert ids(filter_candidates(cands, sources=["b.md"])) == ["c"]
    assert ids(filter_candidates(cands, section="第一章 总则")) == ["a"]
    assert chapter_markers("第二章第三条规定了什么？") == ["第二章", "第三条"]
    assert ids(filter_candidates(cands, chapters=["第三条"])) == ["d"]
    assert ids(filter_candidates(cands, chapters=["第九章"])) == ["a", "b", "c", "d"]  # no match: no narrowing


def test_a_part_of_a_multi_part_standard_keeps_its_whole_document():
    # nbt_npp_periodic_safety_review_part12_design_draft.docx: the title "核电厂定期安全评价 第12部分 设计" is a
    # level-1 heading of its own chunk; "1 范围", "2 规范性引用文件" are its siblings, not under it
    cands = [cand("p12_11", source="part12.docx", section="核电厂定期安全评价 第12部分 设计"),
             cand("p12_12", source="part12.docx", section="1 范围"),
             cand("p12_13", source="part12.docx", section="2 规范性引用文件"),
             cand("p1_12", source="part1.docx", section="核电厂定期安全评价 第1部分：通用要求 > 1.1 范围")]
    ids = lambda cs: [c.chunk_id for c in cs]  # noqa: E731
    assert chapter_markers("核电厂定期安全评价第12部分中，设计要素的评价范围是什么？") == ["第12部"]
    assert ids(filter_candidates(cands, chapters=["第12部"])) == ["p12_11", "p12_12", "p12_13"]
    assert ids(filter_candidates(cands, chapters=["第1部"])) == ["p1_12"]


def test_a_document_naming_no_part_stays_and_one_whose_cover_names_another_part_goes():
    # nbt_npp_psr_part1_drafting_notes.docx: part 1's drafting notes, sections "二、 编制过程", its part named
    # only on its cover (its first chunk, a table); a file list names no part at all
    def chunk(chunk_id, source, section, index, content=""):
        c = cand(chunk_id, source=source, section=section)
        c.chunk.chunk_index, c.chunk.content = index, content or chunk_id
        return c

    cands = [chunk("p12_11", "part12.docx", "核电厂定期安全评价 第12部分 设计", 11),
             chunk("p1_12", "part1.docx", "核电厂定期安全评价 第1部分：通用要求 > 1.1 范围", 12),
             chunk("notes_0", "notes.docx", "", 0, "NB/T XXXX－20YY 核电厂定期安全评价 第1部分：通用要求 编制说明"),
             chunk("notes_10", "notes.docx", "四、主要技术内容的说明", 10),
             chunk("list_2", "SOURCES.md", "", 2)]
    ids = lambda cs: [c.chunk_id for c in cs]  # noqa: E731
    assert ids(filter_candidates(cands, chapters=["第1部"])) == ["p1_12", "notes_0", "notes_10", "list_2"]
    assert ids(filter_candidates(cands, chapters=["第12部"])) == ["p12_11", "list_2"]
    # a part and a chapter no section holds ("第1部分的编制说明列出的主要修订点中，第6条…": the notes' sixth
    # revision point is "6. …"): the part narrows alone
    assert chapter_markers("核电厂定期安全评价第1部分的编制说明列出的主要修订点中，第6条增加的是哪一条内容？") == ["第1部", "第6条"]
    assert ids(filter_candidates(cands, chapters=["第1部", "第6条"])) == ["p1_12", "notes_0", "notes_10", "list_2"]
    # the cover counts only as the document's first chunk: a later chunk citing part 1 names no part
    cands[2].chunk.chunk_index = 5
    assert ids(filter_candidates(cands, chapters=["第12部"])) == ["p12_11", "notes_0", "notes_10", "list_2"]


def test_mmr_drops_near_duplicates_and_keeps_fused_order():
    sim = jaccard_rows([["甲", "乙", "丙"], ["甲", "乙", "丙"], ["丁", "戊"], []])
    assert sim(0)[1] == 1.0 and sim(0)[2] == 0.0 and sim(3)[3] == 0.0
    assert mmr_order([1.0, 0.95, 0.6, 0.1], sim, 2, 0.5) == [0, 2]
    assert mmr_order([1.0, 0.95, 0.6], lambda i: sim(i)[:3], 2, 1.0) == [0, 1]  # lambda 1 = relevance only
    cands = [cand("a", 1.0, tokens="甲乙丙"), cand("b", 0.95, tokens="甲乙丙"), cand("c", 0.9, tokens="丁戊"),
             cand("d", 0.5, tokens="己")]
    assert [c.chunk_id for c in mmr(cands, 3, 0.5)] == ["a", "c", "d"]
    assert [c.chunk_id for c in mmr(cands, 4, 0.5)] == ["a", "b", "c", "d"]  # nothing to cut
    assert is_enum_query("安全检查包括哪些方面？") and not is_enum_query("清川市的水价是多少？")


def test_mmr_keeps_the_table_or_chart_the_question_names_by_number():
    # the procurement contract's 图表 1 and 图表 2 share their series and numbers: MMR read the one the question
    # names as the other's duplicate and dropped it, whatever its rank
    series = "series 4 5 8 2.4 2.5 4.3".split()
    cands = [cand("chart2", 1.0, tokens=series, chunk_type="chart"),
             cand("chart1", 0.9, tokens=series, chunk_type="chart"),
             cand("text", 0.5, tokens=["甲"]), cand("other", 0.4, tokens=["乙"])]
    cands[0].chunk.caption, cands[1].chunk.caption = "图表 2", "图表 1"
    question = "In the procurement contract, chart 1 (图表 1) plots Series 4, 5 and 8; what is its Series 4 value?"
    assert [c.chunk_id for c in mmr(cands, 3, 0.5)] == ["chart2", "text", "other"]
    assert [c.chunk_id for c in mmr(cands, 3, 0.5, question=question)] == ["chart1", "text", "other"]
    # a table numbered alike is no chart ("表格 1" of "图表 1"), and a question naming none changes nothing
    assert [c.chunk_id for c in mmr(cands, 3, 0.5, question="表格 1 的 Series 4 是多少？")] == ["chart2", "text", "other"]
    assert mmr(cands, 3, 0.5, question="Series 4 是多少？") == mmr(cands, 3, 0.5)


def test_jaccard_rows_from_tokens_and_from_kept_term_ids_are_set_jaccard():
    rng = random.Random(3)
    words = [f"w{i}" for i in range(40)]
    lists = [[rng.choice(words) for _ in range(rng.randint(0, 25))] for _ in range(30)]
    vocab: dict[str, int] = {}
    later = term_id_sets(lists[10:], vocab)  # ids from an earlier question's vocabulary, in another order
    kept = term_id_sets(lists[:10], vocab) + later
    by_tokens, by_ids = jaccard_rows(lists), jaccard_rows(term_ids=kept)
    for i, a in enumerate(map(set, lists)):
        expected = [len(a & set(b)) / len(a | set(b)) if a | set(b) else 0.0 for b in lists]
        assert np.allclose(by_tokens(i), expected) and np.array_equal(by_tokens(i), by_ids(i))
    assert jaccard_rows(term_ids=term_id_sets([[], []]))(1).tolist() == [0.0, 0.0]
    cands = [cand(f"c{i}", 1.0 - i / 40, tokens=t) for i, t in enumerate(lists)]
    ids = {c.chunk_id: t for c, t in zip(cands, kept)}
    assert mmr(cands, 8, 0.5) == mmr(cands, 8, 0.5, term_ids=lambda cs: [ids[c.chunk_id] for c in cs])


def test_adaptive_top_k_works_on_both_scales():
    s = Settings.of(top_k=15, adaptive_topk_min=5, adaptive_topk_max=30)
    assert adaptive_top_k([0.98] + [0.5] * 40, RRF, s) == 5  # channels agree on the top chunk
    assert adaptive_top_k([0.7] + [0.5] * 40, RRF, s) == 15
    assert adaptive_top_k([0.45] * 40, RRF, s) == 30
    # after a rerank (seed defect 000 §6.3: the seed skipped this step) and never under min_score
    assert adaptive_top_k([0.9] + [0.5] * 20, RERANK, s) == 5
    assert adaptive_top_k([0.6] * 10 + [0.01] * 10, RERANK, s) == 10
    assert adaptive_top_k([0.2] * 10 + [0.04] * 30, RERANK, s) == 10
    assert adaptive_top_k([0.98] * 40, RRF, s.replace(adaptive_topk_enabled=False)) == 15
    assert adaptive_top_k([], RRF, s) == 0


def test_a_catalogue_of_the_corpus_goes_below_the_documents_it_names():
    # the docs corpus's SOURCES.md lists every file: a question naming a document matches it best
    catalogue = Chunk(chunk_id="SOURCES.md_2", source="../SOURCES.md", chunk_type="table",
                      content="local file | repo | licence\nen/unit_test_headers_numbered.docx | docling | MIT\n"
                              "zh_pdf/prc_civil_code.pdf | zufang | none stated\nen/multi_page.pdf | docling | MIT")
    docs = [Chunk(chunk_id=f"{name}_{i}", source=f"en/{name}", content=text, chunk_type="text") for i, (name, text) in enumerate(
        [("unit_test_headers_numbered.docx", "1. Hardware Constraints – Egde Case\n2. Software Constraints"),
         ("prc_civil_code.pdf", "第七百一十八条 出租人知道或者应当知道承租人转租…"),
         ("multi_page.pdf", "The Evolution of the Word Processor")])]
    cands = [Candidate(catalogue.chunk_id, 0.9, chunk=catalogue)] + [
        Candidate(c.chunk_id, score, chunk=c) for c, score in zip(docs, (0.6, 0.5, 0.4))]
    question = "In the numbered-headers unit test document, which constraint is listed first?"
    ranked = catalogues_last(question, cands)
    assert [(c.chunk_id, c.score) for c in ranked] == [("unit_test_headers_numbered.docx_0", 0.6),
                                                       ("prc_civil_code.pdf_1", 0.5), ("SOURCES.md_2", 0.45),
                                                       ("multi_page.pdf_2", 0.4)]
    # a question about the files themselves, or naming the catalogue, keeps it first; "file for divorce"
    # and "report" ask about content; a chunk naming two documents is no catalogue
    assert catalogues_last("Which licence does the unit test document have?", cands)[0].chunk_id == "SOURCES.md_2"
    assert catalogues_last("Per the SOURCES.md table, where is the essay from?", cands)[0].chunk_id == "SOURCES.md_2"
    assert catalogues_last("In the Civil Code report, when may a man file for divorce?", cands)[0].chunk_id \
        == "unit_test_headers_numbered.docx_0"
    assert catalogues_last(question, cands[:3])[0].chunk_id == "SOURCES.md_2"


# the openings (section path, text) of documents as the docs knowledge base holds them (../shared/data/docs)
COVERS = {
    "zh_pdf/prc_civil_code.pdf": [("中华人民共和国民法典", "中华人民共和国民法典"),
                                  ("（2020 年 5 月 28 日第十三届全国人民代表大会第三次会议通过）", "…")],
    "zh_pdf/prc_constitution.pdf": [("中华人民共和国宪法", "中华人民共和国宪法\n（1982 年 12 月 4 日第五届全国人民代表大会…")],
    "zh_pdf/byd_2025q1_quarterly_report.pdf": [("", "证券代码:002594\n证券简称:比亚迪\n公告编号:2025-035"),
                                               ("比亚迪股份有限公司 2025 年第一季度报告", "比亚迪股份有限公司 2025 年第一季度报告")],
    "zh_docx/nbt_npp_periodic_safety_review_part1_draft.docx": [
        ("", "ICS 27.120.99\nF69"), ("", "备案号："),
        ("", "NB\n中华人民共和国能源行业标准\n核电厂定期安全评价\n第1部分：通用要求\nPart 1: General Requirements")],
    "zh_docx/nbt_npp_psr_part1_drafting_notes.docx": [
        ("", "NB/T XXXX－20YY 核电厂定期安全评价 第1部分：通用要求\n编制说明\n（征求意见稿）\n（2023年3月）")],
    "en/unit_test_headers_numbered.docx": [("Test Document", "Test Document"), ("1 Section 1", "1 Section 1")],
    "zh_docx/procurement_contract_headings_table_images.docx": [("这是标题 > 1.1.1.1 其他", "这是标题\n1.1.1.1 其他")],
    "en/word_sample.docx": [("", "Summer activities"), ("Swimming in the lake", "Swimming in the lake\nDuck")],
    "rgb_zh_refine_dev/rgbzh-1972.txt": [("", "1972年的一则新闻")],
}


def test_the_document_a_question_names_by_its_file_name_or_title():
    names = DocumentNames(COVERS)
    named = lambda q: {s.rsplit("/", 1)[-1] for s in names.named(q)}  # noqa: E731
    # "PRC" names both laws, "Civil Code" one
    assert named("Under the PRC Civil Code, after how many years does the right lapse?") == {"prc_civil_code.pdf"}
    assert named("According to the PRC Constitution, who elects the President?") == {"prc_constitution.pdf"}
    assert named("根据民法典，诉讼时效期间是几年？") == {"prc_civil_code.pdf"}
    assert named("比亚迪2025年一季报中，货币资金是多少？") == {"byd_2025q1_quarterly_report.pdf"}
    # a cover's title: the notes say "编制说明" only there; the draft's title stands on its cover past two chunks
    assert named("核电厂定期安全评价第1部分的编制说明列出的主要修订点中，第6条增加的是哪一条内容？") == {
        "nbt_npp_psr_part1_drafting_notes.docx"}
    assert named("In the drafting notes for Part 1 of the PSR standard, when was the draft finished?") == {
        "nbt_npp_psr_part1_drafting_notes.docx"}
    # a field's label names nothing (BYD's "公告编号:"), nor do the words for a document or its parts ("这是标题")
    assert named("在那份带编号标题的文档中，约束列表里的第三项是什么？") == set()
    assert named("In the numbered-headers unit test document, what is the third constraint?") == {
        "unit_test_headers_numbered.docx"}
    # words a name holds too few of name a subject, not a document; a number alone names none
    assert named("在民事活动的历史中，什么最重要？") == set()
    assert named("In a 1972 report, what did the critic praise?") == set()
    assert named("In the document's second table, what is listed first?") == set()
    assert named("What is the outgoing voltage of the cell?") == set()  # no words naming a document
    # the article named with its law is a part of it, no word of its name ("宪法第十条": 宪法); "第1部分" names a document
    assert named("根据宪法第十条，土地的使用权可以怎样处置？") == {"prc_constitution.pdf"}
    assert named("根据民法典第一千零六条，捐献应当采用什么形式？") == {"prc_civil_code.pdf"}
    # a file name written whole names its document, whatever words describe it beside
    assert named("docling的编号标题单元测试Word文档（unit_test_headers_numbered.docx）中，约束清单的第6项是什么？") == {
        "unit_test_headers_numbered.docx"}
    assert named("单元测试文档 unit_test_headers_numbered.docx 的约束清单中，排在第6项的是哪一种约束？") == {
        "unit_test_headers_numbered.docx"}


def test_the_named_documents_chunks_go_first():
    cands = [cand("other1", 0.7, source="a.pdf"), cand("named1", 0.6, source="b.pdf"),
             cand("other2", 0.4, source="a.pdf"), cand("named2", 0.35, source="b.pdf")]
    assert [c.chunk_id for c in named_documents_first(frozenset({"b.pdf"}), cands)] == [
        "named1", "other1", "named2", "other2"]
    assert named_documents_first(frozenset({"c.pdf"}), cands) == cands  # none of the candidates is from it
    assert named_documents_first(frozenset(), cands) == cands
