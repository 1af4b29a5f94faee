"""Context: section-PREFIX expansion from DuckDB (seed defect 000 §13.3 item 2), min-score order
with the table/figure protections, and the character budget grouped by source + section."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from schemas.arrow import to_table
from schemas.chunk import Chunk
from schemas.qa import RERANK, RRF
from schemas.settings import Settings
from tasks.qa.context import (articles_asked, build_context, contexts_for, continues_list, expand_batch,
                              order_for_prompt, sections_asked)
from tasks.qa.filters import in_section
from tasks.qa.types import Candidate, Retrieval
from warehouse import db
from warehouse.chunks import HeadingAsk, fetch_chunks, headed_chunks, heading_key

PARENT = "三、做好货源投放前的基础工作"
DOC = [  # (section_path, chunk_type, content)
    ("二、前言", "text", "前言正文。"),
    (PARENT, "heading", PARENT),
    (f"{PARENT} > （一）货源投放要求", "text", "1.紧俏品规按周投放。"),
    (f"{PARENT} > （一）货源投放要求", "text", "2.常销品规按月投放。"),
    (f"{PARENT} > （二）数据准备", "table", "| 品规 | 数量 |\n| 甲 | 120 |"),
    (f"{PARENT}附表", "text", "名字以父节开头、却不在其下的章节。"),  # a prefix of characters, not of the path
    ("四、相关的指标与分类", "text", "四的正文。"),
]


def _document(source: str, parts) -> list[Chunk]:
    """The chunks of one document, in order, from its (section_path, chunk_type, content) parts."""
    return [Chunk(content=text, chunk_type=kind, section_path=section, source=source, kb="kb", doc_md5=source,
                  chunk_index=i, chunk_id=f"{source}_{i}") for i, (section, kind, text) in enumerate(parts)]


def _land(tmp_path, chunks) -> Path:
    """A warehouse under tmp_path holding these chunks."""
    path = tmp_path / "kbflow.duckdb"
    with db.connect(path) as con:
        con.register("rows", to_table(chunks, Chunk))
        con.execute("INSERT INTO chunks BY NAME SELECT * FROM rows")
    return path


@pytest.fixture
def warehouse(tmp_path):
    chunks = [Chunk(content=text, chunk_type=kind, section_path=section, source="guide.docx", kb="kb", doc_md5="m",
                    chunk_index=i, chunk_id=f"guide.docx_{i}", text_level=1 if kind == "heading" else 0)
              for i, (section, kind, text) in enumerate(DOC)]
    chunks.append(Chunk(content="另一份文件。", chunk_type="text", section_path=PARENT, source="other.docx", kb="kb",
                        doc_md5="o", chunk_index=3, chunk_id="other.docx_3"))
    return _land(tmp_path, chunks)


def _settings(home: Path) -> Settings:
    """Settings reading no small document whole: these documents are all small (that is tested on its own)."""
    return Settings(home=home).replace(context_small_document_chars=0)


def retrieval(records, ids_scores, scale=RRF, kept=None) -> Retrieval:
    ranked = [Candidate(i, score=s, rerank=s if scale == RERANK else None, chunk=records[i]) for i, s in ids_scores]
    return Retrieval("q", "hybrid", scale, ranked, len(ranked) if kept is None else kept, None, ["q"])


def test_in_section_matches_whole_path_components():
    assert in_section(f"{PARENT} > （一）货源投放要求", PARENT) and in_section(PARENT, PARENT)
    assert not in_section(f"{PARENT}附表", PARENT) and in_section("anything", "")


def test_a_parent_heading_pulls_its_subsections(warehouse):
    s = _settings(warehouse.parent)
    records = fetch_chunks(warehouse, "kb", [f"guide.docx_{i}" for i in range(len(DOC))] + ["other.docx_3"])
    assert len(records) == len(DOC) + 1
    (extra,) = expand_batch(warehouse, "kb", [retrieval(records, [("guide.docx_1", 0.9)])], s)
    # children by prefix, nearest first; not "二、前言" before it, not "…附表", not another document
    assert [(c.chunk_id, c.expanded_from, c.score) for c in extra] == [
        ("guide.docx_2", "guide.docx_1", 0.9), ("guide.docx_3", "guide.docx_1", 0.9),
        ("guide.docx_4", "guide.docx_1", 0.9)]
    # a child seed pulls its siblings of the same sub-section, not the parent heading before it
    (extra,) = expand_batch(warehouse, "kb", [retrieval(records, [("guide.docx_3", 0.9)])], s)
    assert [c.chunk_id for c in extra] == ["guide.docx_2"]
    # capped per question; already-ranked chunks are not added twice
    capped = s.replace(context_expansion_max_chunks=2)
    (extra,) = expand_batch(warehouse, "kb", [retrieval(records, [("guide.docx_1", 0.9), ("guide.docx_2", 0.5)])],
                            capped)
    assert [c.chunk_id for c in extra] == ["guide.docx_3", "guide.docx_4"]
    assert expand_batch(warehouse, "kb", [retrieval(records, [("guide.docx_1", 0.9)])],
                        s.replace(context_expansion_enabled=False)) == [[]]


def test_a_question_asking_the_cover_reads_the_first_chunks_of_the_best_hits_document(warehouse):
    s = _settings(warehouse.parent)
    records = fetch_chunks(warehouse, "kb", ["guide.docx_6", "other.docx_3"])
    hits = [("guide.docx_6", 0.9), ("other.docx_3", 0.5)]
    asked = replace(retrieval(records, hits), question="封面上印的标题是什么？")
    (extra,) = expand_batch(warehouse, "kb", [asked], s)
    # the best hit's document's first chunks (its cover), whatever their section, carrying the hit's score;
    # not the first chunks of a document ranked lower
    assert [(c.chunk_id, c.expanded_from, c.score) for c in extra[:3]] == [
        ("guide.docx_0", "guide.docx_6", 0.9), ("guide.docx_1", "guide.docx_6", 0.9),
        ("guide.docx_2", "guide.docx_6", 0.9)]
    # nor does one asking the document's own title, which its cover carries
    (extra,) = expand_batch(warehouse, "kb", [replace(retrieval(records, hits), question="文档最上方的总标题是什么？")], s)
    assert [c.chunk_id for c in extra[:3]] == ["guide.docx_0", "guide.docx_1", "guide.docx_2"]
    # a question not about the cover reads no cover; "recovery" is not "cover"
    for question in ("四的正文是什么？", "What is the capacity recovery?"):
        (extra,) = expand_batch(warehouse, "kb", [replace(retrieval(records, hits), question=question)], s)
        assert not {"guide.docx_0", "guide.docx_1"} & {c.chunk_id for c in extra}


def test_a_question_asking_the_contents_reads_the_best_hits_documents_contents(tmp_path):
    parts = [("", "text", "Row and Column Access Control Support in IBM DB2 for i"),
             ("Contents", "table", "Notices . . . . . . . | vii\n3.5 SELECT, INSERT, and UPDATE behavior . . . | 22"),
             ("Contents", "table", "Chapter 4. Implementing RCAC . . . . . . . | 41"),
             ("Chapter 3", "text", "3.5 SELECT, INSERT, and UPDATE behavior with RCAC"),
             ("Chapter 3 > 3.5", "text", "A SELECT statement returns the rows a row permission lets the user see.")]
    path = _land(tmp_path, _document("redp.md", parts))
    records = fetch_chunks(path, "kb", ["redp.md_4"])
    asked = Retrieval("In the table of contents, what is the title of section 3.5?", "hybrid", RRF,
                      [Candidate("redp.md_4", score=0.8, chunk=records["redp.md_4"])], 1, None, ["q"])
    (extra,) = expand_batch(path, "kb", [asked], _settings(tmp_path))
    assert [c.chunk_id for c in extra[:2]] == ["redp.md_1", "redp.md_2"] and extra[0].asked and extra[1].asked
    # asked for, the contents get into the context before the passage ranked first, which the budget then leaves out
    tight = _settings(tmp_path).replace(context_max_chars=build_context(extra[:2], _settings(tmp_path)).chars + 2)
    assert build_context([*asked.ranked, *extra[:2]], tight).chunk_ids == ["redp.md_1", "redp.md_2"]
    unasked = replace(asked, question="What does section 3.5 say?")
    (extra,) = expand_batch(path, "kb", [unasked], _settings(tmp_path))
    assert not {"redp.md_1", "redp.md_2"} & {c.chunk_id for c in extra}


def test_a_question_asking_the_foreword_reads_the_best_hits_documents_foreword(tmp_path):
    # nbt_npp_periodic_safety_review_part12_design_draft.docx: its foreword lists the parts of the series under a
    # letter-spaced heading set with em spaces, far from the cover an English question ranks first
    parts = [("", "text", "核电厂定期安全评价\n第12部分：设计\nPeriodic safety review for nuclear power plants— Part 12"),
             ("目\u2003\u2003次", "text", "前言\n引言\n1 范围"),
             ("前\u2003\u2003言", "text", "《核电厂定期安全评价》分为15个部分：\n——第11部分：设备合格鉴定；"),
             ("引\u2003\u2003言", "text", "我国核安全监管部门在2004年发布的《核动力厂运行安全规定》。"),
             ("1 范围", "text", "本部分规定了核电厂定期安全评价中设计要素评价的内容和方法。")]
    path = _land(tmp_path, _document("part12.docx", parts))
    records = fetch_chunks(path, "kb", ["part12.docx_0"])
    asked = Retrieval("According to the foreword of the draft standard 'Part 12: Design', what is Part 11 of the "
                      "series?", "hybrid", RRF, [Candidate("part12.docx_0", score=0.9, chunk=records["part12.docx_0"])],
                      1, None, ["q"])
    (extra,) = expand_batch(path, "kb", [asked], _settings(tmp_path))
    assert extra[0].chunk_id == "part12.docx_2" and extra[0].asked
    # in Chinese too ("前言列出的起草单位"); a question not about the foreword reads none, nor the introduction
    for question, reads in (("征求意见稿前言列出的起草单位中，排在最后的是哪家？", True), ("What does the scope section say?", False)):
        (extra,) = expand_batch(path, "kb", [replace(asked, question=question)], _settings(tmp_path))
        assert ("part12.docx_2" in {c.chunk_id for c in extra if c.asked}) is reads
        assert "part12.docx_3" not in {c.chunk_id for c in extra if c.asked}


def test_a_question_asking_a_numbered_figures_title_reads_its_caption_chunk(tmp_path):
    # redp5110_sampled.pdf: the passage citing Figure 4-68 ranks first, the figure with its caption is chunks later
    parts = [("4.3 Query plan", "text", "Figure 4-68 shows the Visual Explain of the same SQL statement, but with RCAC "
              "enabled."),
             ("4.3 Query plan", "text", "The implementation is more complex because the row permission rule becomes "
              "part of the WHERE clause."),
             ("4.3 Query plan", "text", "See Figure 4-6 for the plan of an earlier statement."),
             ("4.4 Index advice", "image", "图片：Figure 4-68，Visual Explain with RCAC enabled"),
             ("4.4 Index advice", "image", "图片：Figure 4-69，Index advice with no RCAC")]
    chunks = _document("redp.pdf", parts)
    chunks[3].caption, chunks[4].caption = "Figure 4-68 Visual Explain with RCAC enabled", "Figure 4-69 Index advice"
    path = _land(tmp_path, chunks)
    records = fetch_chunks(path, "kb", ["redp.pdf_0"])
    asked = Retrieval("IBM红皮书REDP-5110中，图4-68的标题是什么？", "hybrid", RRF,
                      [Candidate("redp.pdf_0", score=0.9, chunk=records["redp.pdf_0"])], 1, None, ["q"])
    (extra,) = expand_batch(path, "kb", [asked], _settings(tmp_path))
    assert [c.chunk_id for c in extra if c.asked] == ["redp.pdf_3"]  # not "Figure 4-6 …", nor 4-69's
    # a question citing the figure without asking its title reads no caption
    (extra,) = expand_batch(path, "kb", [replace(asked, question="图4-68说明了什么？")], _settings(tmp_path))
    assert not [c for c in extra if c.asked]


def test_a_small_document_a_seed_is_from_is_read_whole_after_the_seeds_sections(tmp_path):
    # party_union_rules_1page_table.pdf: the member table two sections after the article ranked first
    parts = [("第四章 工会委员会", "text", "第十四条 工会经费审查委员会委员名额一般为3—7人。"),
             ("第四章 工会委员会", "text", "第十五条 工会女职工委员会委员候选人应符合以下条件。"),
             ("第五章 职工代表大会", "text", "第十七条 职工代表大会工作机构的任务是:（一）组织职工选举职工代表。"),
             ("表1 工会委员会成员", "table", "职位 | 人数 | 工作职责\n组织委员 | 1 | 负责工会组织工作")]
    big = [("Chapter 1", "text", "A long passage. " * 300)] * 3
    path = _land(tmp_path, _document("union.pdf", parts) + _document("big.pdf", big))
    records = fetch_chunks(path, "kb", ["union.pdf_0", "big.pdf_1"])
    s = Settings(home=tmp_path).replace(context_expansion_before=0, context_expansion_after=1)
    (extra,) = expand_batch(path, "kb", [retrieval(records, [("union.pdf_0", 0.9), ("big.pdf_1", 0.5)])], s)
    # its own section's neighbour first, then the rest of the small document; the big one only by its section
    assert [(c.chunk_id, c.expanded_from) for c in extra] == [
        ("union.pdf_1", "union.pdf_0"), ("big.pdf_2", "big.pdf_1"), ("union.pdf_2", "union.pdf_0"),
        ("union.pdf_3", "union.pdf_0")]
    (extra,) = expand_batch(path, "kb", [retrieval(records, [("union.pdf_0", 0.9)])],
                            s.replace(context_small_document_chars=0))
    assert [c.chunk_id for c in extra] == ["union.pdf_1"]


def test_expansion_seeds_by_scale(warehouse):
    s = _settings(warehouse.parent)
    records = fetch_chunks(warehouse, "kb", ["guide.docx_1", "guide.docx_6"])
    weak = retrieval(records, [("guide.docx_1", 0.2)], scale=RERANK)  # rerank < 0.3: not a seed
    strong = retrieval(records, [("guide.docx_1", 0.7)], scale=RERANK)
    rescued_only = retrieval(records, [("guide.docx_1", 0.9)], kept=0)  # rescued chunks are not seeds
    out = expand_batch(warehouse, "kb", [weak, strong, rescued_only], s)
    assert [len(x) for x in out] == [0, 3, 0]


def test_order_for_prompt_min_score_with_table_and_figure_protection(warehouse):
    s = Settings()
    records = fetch_chunks(warehouse, "kb", [f"guide.docx_{i}" for i in range(len(DOC))])
    fig = replace(records["guide.docx_6"], chunk_type="image", chunk_id="fig")
    records["fig"] = fig
    cands = [Candidate("guide.docx_2", 0.5, chunk=records["guide.docx_2"]),
             Candidate("guide.docx_3", 0.01, chunk=records["guide.docx_3"]),  # under 0.05: dropped
             Candidate("guide.docx_4", 0.02, chunk=replace(records["guide.docx_4"],  # table beside a passing chunk
                                                           section_path=records["guide.docx_2"].section_path)),
             Candidate("guide.docx_5", 0.02, chunk=replace(records["guide.docx_5"], chunk_type="table")),  # alone
             Candidate("fig", 0.03, chunk=fig)]  # figures need min × 0.5
    kept = [c.chunk_id for c in order_for_prompt(cands, RERANK, s)]
    assert kept == ["guide.docx_2", "guide.docx_4", "fig"]
    assert order_for_prompt(cands, RRF, s) == cands  # rrf scores mean nothing absolute: no filter


def test_budget_groups_by_section_in_chunk_order(warehouse):
    records = fetch_chunks(warehouse, "kb", [f"guide.docx_{i}" for i in range(len(DOC))] + ["other.docx_3"])
    cands = [Candidate("guide.docx_3", 0.9, chunk=records["guide.docx_3"]),
             Candidate("other.docx_3", 0.8, chunk=records["other.docx_3"]),
             Candidate("guide.docx_2", 0.3, chunk=records["guide.docx_2"]),
             Candidate("guide.docx_0", 0.1, chunk=records["guide.docx_0"])]
    ctx = build_context(cands, Settings())
    # the (一) group first (best score), its chunks in document order; then other.docx; then 二、前言
    assert ctx.chunk_ids == ["guide.docx_2", "guide.docx_3", "other.docx_3", "guide.docx_0"]
    assert ctx.text.splitlines()[:3] == [f"━ guide.docx · {PARENT} > （一）货源投放要求 ━",
                                         "[ref:guide.docx_2] 1.紧俏品规按周投放。", "[ref:guide.docx_3] 2.常销品规按月投放。"]
    # the hard limit holds; past the soft limit only groups nearly as strong as the best get in
    small = Settings.of(context_max_chars=120, context_soft_limit=60)
    ctx = build_context(cands, small)
    assert ctx.chars <= 120 and ctx.chunk_ids == ["guide.docx_2", "guide.docx_3"]
    assert build_context(cands, Settings.of(max_context_chunks=1)).chunk_ids == ["guide.docx_3"]


def test_a_table_is_never_cut(warehouse):
    records = fetch_chunks(warehouse, "kb", ["guide.docx_4", "guide.docx_2"])
    big = replace(records["guide.docx_4"], content="| 表 |\n" + "| 行 |\n" * 100)
    cands = [Candidate("guide.docx_4", 0.9, chunk=big), Candidate("guide.docx_2", 0.8, chunk=records["guide.docx_2"])]
    ctx = build_context(cands, Settings.of(context_max_chars=200, context_soft_limit=150))
    assert ctx.chunk_ids[0] == "guide.docx_4" and big.content.strip() in ctx.text


def test_a_table_past_the_budget_is_admitted_after_the_groups_that_fit():
    # GB/T 3620.1 as landed: its 8,839-character composition table (chunk 12), ranked 12th in the top hit's section
    # "5 其他", was admitted before the hit (tables first, never cut) and left no room for it nor for D.3 ranked 2nd
    source = "../zh_pdf/gbt3620.1-2016_titanium_alloy_standard.pdf"

    def chunk(index: int, content: str, kind: str, section: str) -> Chunk:
        return Chunk(content=content, chunk_type=kind, source=source, chunk_id=f"{source}_{index}", kb="kb",
                     chunk_index=index, section_path=section)

    hit = chunk(11, "5 其他\n5.1 附录 A 为历次 GB/T 3620.1修订时删除的钛及钛合金牌号和化学成分。", "text", "5 其他")
    standards = chunk(28, "D.3 参考标准\nGB/T 2965—2007 钛及钛合金棒材GB/T 26059—2010 钛及钛合金网板", "text", "D.3 参考标准")
    table = chunk(12, "牌号 | 名义化学成分 | Ti | Al\n" + "TA1 | 工业纯钛 | 余量 | —\n" * 400, "table", "5 其他")
    ranked = [Candidate(c.chunk_id, score, chunk=c) for c, score in ((hit, 0.94), (standards, 0.85), (table, 0.30))]
    ctx = build_context(ranked, Settings())
    assert ctx.chunk_ids == [hit.chunk_id, table.chunk_id, standards.chunk_id]  # in chunk order within a section
    assert "GB/T 26059—2010" in ctx.text and table.content.strip() in ctx.text  # the table still whole


def test_a_table_ranked_far_below_its_sections_hit_waits_for_the_other_groups():
    # REDP-5110's Markdown, all under "Contents" before its headings were read: the 4,605-character contents table,
    # ranked 11th in the top hit's section, came in first (tables first) with the section's other passages and left no
    # room for "need-to-know basis" ranked 2nd in another document
    def chunk(source: str, index: int, content: str, kind: str = "text") -> Chunk:
        return Chunk(content=content, chunk_type=kind, source=source, chunk_id=f"{source}_{index}", kb="kb",
                     chunk_index=index, section_path="Contents")

    md, pdf = "groundtruth/redp5110_sampled.md", "redp5110_sampled.pdf"
    passages = [chunk(md, 8 + i, f"This IBM Redpaper publication, part {i}. " + "RCAC " * 150) for i in range(4)]
    contents = chunk(md, 3, "Notices . . . . | vii\n" * 230, "table")
    basis = chunk(pdf, 32, "Many businesses are trying to limit data access to a need-to-know basis. " * 8)
    ranked = [Candidate(passages[0].chunk_id, 0.60, chunk=passages[0]), Candidate(basis.chunk_id, 0.58, chunk=basis)] \
        + [Candidate(p.chunk_id, 0.2, chunk=p) for p in passages[1:]] \
        + [Candidate(contents.chunk_id, 0.12, chunk=contents)]
    ctx = build_context(ranked, Settings())
    assert basis.chunk_id in ctx.chunk_ids and contents.chunk_id in ctx.chunk_ids  # the table still comes, whole
    assert contents.content.strip() in ctx.text


def test_a_list_of_the_corpus_files_takes_no_budget_from_a_question_about_content():
    # the docs corpus's SOURCES.md table (5,787 characters) ranked 2nd for "…the one-page union rules…" and, a
    # table being never cut, left no room for the rules' own passage ranked 3rd
    listing = "local file | repo | bytes\n" + "".join(f"zh_pdf/doc{i}.pdf | opendatalab/MinerU | {i}\n" for i in range(90))
    catalogue = Chunk(content=listing, chunk_type="table", source="../SOURCES.md", chunk_id="../SOURCES.md_2", kb="kb")
    manual = Chunk(content="QIBM_DB_SECADM also is responsible for administering RCAC.", chunk_type="text",
                   source="redp5110.md", chunk_id="redp5110.md_39", kb="kb")
    rules = Chunk(content="第十六条 组织委员负责工会的组织工作。", chunk_type="text", source="union_rules.pdf",
                  chunk_id="union_rules.pdf_0", kb="kb")
    ranked = [Candidate(c.chunk_id, score=s, chunk=c) for c, s in ((manual, 0.51), (catalogue, 0.5), (rules, 0.36))]
    s = Settings.of(context_max_chars=1500, context_soft_limit=1200)
    question = "Which position is responsible for the union's organisational work?"
    (ctx,) = contexts_for([Retrieval(question, "hybrid", RRF, ranked, 3, None, [question])], [[]], s)
    assert ctx.chunk_ids == ["redp5110.md_39", "union_rules.pdf_0"]
    # a question about the files reads the list
    question = "Which repository is zh_pdf/doc7.pdf from?"
    (ctx,) = contexts_for([Retrieval(question, "hybrid", RRF, ranked, 3, None, [question])], [[]], s)
    assert "../SOURCES.md_2" in ctx.chunk_ids


def test_ranked_chunks_get_in_before_the_expanded_neighbours_of_the_first(warehouse):
    records = fetch_chunks(warehouse, "kb", ["guide.docx_2", "guide.docx_3", "guide.docx_6", "other.docx_3"])
    first = Candidate("guide.docx_2", 0.9, chunk=records["guide.docx_2"])
    later = Candidate("guide.docx_6", 0.3, chunk=records["guide.docx_6"])
    neighbours = [Candidate("guide.docx_3", 0.9, expanded_from="guide.docx_2", chunk=records["guide.docx_3"]),
                  Candidate("other.docx_3", 0.9, expanded_from="guide.docx_2", chunk=records["other.docx_3"])]
    # room for three chunks: the two ranked ones and one neighbour, not the first's two neighbours
    small = Settings.of(max_context_chunks=3)
    assert build_context([first, later, *neighbours], small).chunk_ids == ["guide.docx_2", "guide.docx_3",
                                                                           "guide.docx_6"]
    assert build_context([first, later, *neighbours], Settings()).chunk_ids == [
        "guide.docx_2", "guide.docx_3", "other.docx_3", "guide.docx_6"]


def test_kept_chunks_get_in_before_the_rescued_ones_of_the_first_hits_section(warehouse):
    # the CC-SAM case: the first hit's section brought back many cut chunks (rescues), and a chunk kept
    # third, in another section, lost its place to them
    records = fetch_chunks(warehouse, "kb", ["guide.docx_2", "guide.docx_3", "guide.docx_6", "other.docx_3"])
    first = Candidate("guide.docx_2", 0.9, chunk=records["guide.docx_2"])
    kept = Candidate("guide.docx_6", 0.5, chunk=records["guide.docx_6"])
    rescued = [Candidate("guide.docx_3", 0.2, rescued="cluster", chunk=records["guide.docx_3"]),
               Candidate("other.docx_3", 0.2, rescued="bm25_divergence", chunk=records["other.docx_3"])]
    small = Settings.of(max_context_chunks=2)  # room for two: the kept ones
    assert build_context([first, kept, *rescued], small).chunk_ids == ["guide.docx_2", "guide.docx_6"]
    assert build_context([first, kept, *rescued], Settings()).chunk_ids == [
        "guide.docx_2", "guide.docx_3", "guide.docx_6", "other.docx_3"]


def test_the_line_labelling_a_tables_rows_joins_the_table_in_the_context(tmp_path):
    # the SVOLT step-charge tables: "5 ℃≤T<10 ℃" is a line of its own before a table of values only
    parts = [("text", "阶梯充电 Step Charge：按电芯温度分段充电，各段电流如下。"), ("text", "5 ℃≤T<10 ℃"),
             ("table", "电流，ACurrent, A | SOC\n0.60C | 20%\n0.40C | 50%"), ("text", "第 7 页 共 20 页")]
    path = _land(tmp_path, _document("svolt.pdf", [("1.3.1 阶梯充电", kind, text) for kind, text in parts]))
    records = fetch_chunks(path, "kb", ["svolt.pdf_0", "svolt.pdf_2"])
    # the table is kept but is no seed (one seed only): the line before it still joins, with the table's score
    s = _settings(tmp_path).replace(context_expansion_max_seeds=1, context_expansion_after=0)
    asked = Retrieval("5℃≤T<10℃时充到50% SOC的电流？", "hybrid", RRF,
                      [Candidate("svolt.pdf_0", score=0.9, chunk=records["svolt.pdf_0"]),
                       Candidate("svolt.pdf_2", score=0.5, chunk=records["svolt.pdf_2"])], 2, None, ["q"])
    (extra,) = expand_batch(path, "kb", [asked], s)
    assert [(c.chunk_id, c.expanded_from, c.score) for c in extra] == [("svolt.pdf_1", "svolt.pdf_2", 0.5)]
    # in the budget it rides with its table: kept when no text chunk may be added any more
    ctx = build_context([*asked.ranked, *extra], s.replace(max_context_chunks=1))
    assert ctx.chunk_ids == ["svolt.pdf_0", "svolt.pdf_1", "svolt.pdf_2"]


def test_a_heading_the_question_quotes_is_read_in_the_hits_documents(tmp_path):
    # unit_test_headers_numbered.docx: "标题“2 Section 2”下的第二段" asks a section no hit is in
    parts = [("Test Document", "heading", "Test Document"),
             ("Test Document > 1 Section 1", "text", "1 Section 1\nParagraph 1.1\nParagraph 1.2"),
             ("Test Document > 2 Section 2", "text", "2 Section 2\nParagraph 2.1\nParagraph 2.2"),
             ("Test Document > 2 Section 2 > 2.2 Section 2.1", "text", "2.2 Section 2.1\nParagraph 2.1.1"),
             ("Test Document > Let’s eat", "text", "Let’s eat\nLeaves, berries, grain")]
    path = _land(tmp_path, _document("unit.docx", parts)
                 + _document("other.docx", [("2 Section 2", "text", "2 Section 2\nAnother document's section.")]))
    records = fetch_chunks(path, "kb", ["unit.docx_3", "other.docx_0"])
    s = _settings(tmp_path).replace(context_expansion_before=0, context_expansion_after=0)
    asked = Retrieval("在单元测试文档中，标题“2 Section 2”下的第二段文字是什么？", "hybrid", RRF,
                      [Candidate("unit.docx_3", score=1.0, chunk=records["unit.docx_3"]),
                       Candidate("other.docx_0", score=0.9, rescued="bm25", chunk=records["other.docx_0"])],
                      1, None, ["q"])
    (extra,) = expand_batch(path, "kb", [asked], s)
    # its own section's chunk, not the one under it nor another document's (only hits are seeds)
    assert [(c.chunk_id, c.expanded_from, c.asked) for c in extra] == [("unit.docx_2", "unit.docx_3", True)]
    # asked for, it is admitted as a kept chunk is, before a rescued one, which the budget then leaves out;
    # a plain neighbour comes after the rescued chunk and is left out instead
    alone = [build_context([c], s).chars + 2 for c in (asked.ranked[0], extra[0])]
    tight = s.replace(context_max_chars=sum(alone))
    assert build_context([*asked.ranked, *extra], tight).chunk_ids == ["unit.docx_3", "unit.docx_2"]
    plain = replace(extra[0], asked=False)
    assert build_context([*asked.ranked, plain], tight).chunk_ids == ["unit.docx_3", "other.docx_0"]
    # ranked low, it is admitted as asked too, with its own score, and once
    low = fetch_chunks(path, "kb", ["unit.docx_2"])["unit.docx_2"]
    ranked_low = replace(asked, ranked=[*asked.ranked, Candidate("unit.docx_2", score=0.1, rescued="bm25", chunk=low)])
    (extra,) = expand_batch(path, "kb", [ranked_low], s)
    assert [(c.chunk_id, c.asked) for c in extra] == [("unit.docx_2", True)]
    (ctx,) = contexts_for([ranked_low], [extra], tight.replace(context_soft_limit=1))
    assert ctx.chunk_ids == ["unit.docx_3", "unit.docx_2"] and ctx.chunks[1].score == 0.1 and ctx.chunks[1].asked
    # quoted with a straight apostrophe, the heading is the document's typographic one; "Let's" opens no quote
    eat = replace(asked, question="What is listed under the heading 'Let's eat' in the unit test document?")
    assert [c.chunk_id for c in expand_batch(path, "kb", [eat], s)[0]] == ["unit.docx_4"]
    # quoted without its number ("Chart with caption" of "2.3.1 Chart with caption"), the heading is still found
    bare = replace(asked, question="What is the first paragraph under the heading 'Section 2.1' in the unit test "
                                   "document?")
    assert [(c.chunk_id, c.asked) for c in expand_batch(path, "kb", [bare], s)[0]] == [("unit.docx_3", True)]
    # two headings quoted in one document: each brings its own first chunks
    both = headed_chunks(path, "kb", [HeadingAsk(0, "unit.docx_3", "unit.docx", heading_key(h))
                                      for h in ("2 Section 2", "Let's eat")], 1)
    assert sorted(n.chunk.chunk_id for n in both) == ["unit.docx_2", "unit.docx_4"]
    unquoted = replace(asked, question="在单元测试文档中，第二节下的第二段文字是什么？")
    assert expand_batch(path, "kb", [unquoted], s) == [[]]


def test_an_article_the_question_names_is_read_in_the_hits_documents(tmp_path):
    # prc_constitution.pdf: "Article 60" ranked only the chunk of 第六十一条; 第六十条 opens mid-chunk, after "。"
    parts = [("第三章 国家机构", "text", "第五十九条 全国人民代表大会由省、自治区、直辖市的人民代表大会选出的代表组成。"
              "第六十条 全国人民代表大会每届任期五年。"),
             ("第三章 国家机构", "text", "第六十一条 全国人民代表大会会议每年举行一次。依照本法第六十条的规定……"),
             ("第三章 国家机构", "text", "第六十二条 全国人民代表大会行使下列职权。")]
    code = [("第一编 总则", "text", "第六十条 法人以其全部财产独立承担民事责任。")]
    path = _land(tmp_path, _document("constitution.pdf", parts) + _document("code.pdf", code))
    records = fetch_chunks(path, "kb", ["constitution.pdf_2"])
    s = _settings(tmp_path).replace(context_expansion_before=0, context_expansion_after=0)
    asked = Retrieval("Under Article 60 of the PRC Constitution, how long is each term of the NPC?", "hybrid", RRF,
                      [Candidate("constitution.pdf_2", score=1.0, chunk=records["constitution.pdf_2"])], 1, None, ["q"])
    # the chunk the article begins in (not the one citing it), in the hits' documents only, asked for
    (extra,) = expand_batch(path, "kb", [asked], s)
    assert [(c.chunk_id, c.expanded_from, c.asked) for c in extra] == [
        ("constitution.pdf_0", "constitution.pdf_2", True)]
    chinese = replace(asked, question="宪法第60条规定全国人大每届任期几年？")
    assert [c.chunk_id for c in expand_batch(path, "kb", [chinese], s)[0]] == ["constitution.pdf_0"]
    missing = replace(asked, question="Under Article 63 of the PRC Constitution, who may be removed from office?")
    assert expand_batch(path, "kb", [missing], s) == [[]]
    # the document the question names is where its article is read, though every hit is another's
    code_hit = fetch_chunks(path, "kb", ["code.pdf_0"])["code.pdf_0"]
    named = replace(asked, question="根据宪法第六十条，全国人大每届任期几年？", named_documents=frozenset({"constitution.pdf"}),
                    ranked=[Candidate("code.pdf_0", score=1.0, chunk=code_hit)])
    assert [(c.chunk_id, c.expanded_from) for c in expand_batch(path, "kb", [named], s)[0]] == [
        ("constitution.pdf_0", "code.pdf_0")]
    assert articles_asked("Articles 5 and Article 1260; 第十六条, 第 3 条") == ["第一千二百六十条", "第十六条", "第三条"]
    assert articles_asked("the Constitution (Art. 126) says no one may interfere") == ["第一百二十六条"]


def test_a_section_the_question_names_by_its_number_is_read_where_it_begins(tmp_path):
    # SVOLT's datasheet: "4.1.5.5" is listed in the contents (not read) and heads its own section further on
    parts = [("目录", "index", "4.1.5.5 一级过放保护 14\n4.2 避免电池到达过放状态 15"),
             ("4 注意事项 > 4.1.5.4 过充保护", "text", "当电芯电压达到3.75 V时，停止充电。"),
             ("4 注意事项 > 4.1.5.5 一级过放保护", "text", "当电芯电压达到2.0 V时，切断放电。"),
             ("4 注意事项 > 4.1.5.5 一级过放保护", "text", "保护动作后，需充电唤醒。"),
             ("4 注意事项 > 4.1.5.50 其他", "text", "其他保护。")]
    path = _land(tmp_path, _document("svolt.pdf", parts))
    records = fetch_chunks(path, "kb", ["svolt.pdf_1"])
    s = _settings(tmp_path).replace(context_expansion_before=0, context_expansion_after=0)
    asked = Retrieval("Under item 4.1.5.5 of the SVOLT datasheet, at what voltage is discharging cut off?", "hybrid",
                      RRF, [Candidate("svolt.pdf_1", score=1.0, chunk=records["svolt.pdf_1"])], 1, None, ["q"])
    (extra,) = expand_batch(path, "kb", [asked], s)
    assert [(c.chunk_id, c.asked) for c in extra] == [("svolt.pdf_2", True)]
    assert sections_asked("按第5.1条和6.3.2.1.7，以及 precaution 5.4（不是1.5）") == ["6.3.2.1.7", "5.1", "5.4"]


def test_the_chunks_back_to_the_line_opening_a_list_a_hit_is_inside_are_read(tmp_path):
    # prc_constitution.pdf as landed: "（二十）决定…进入紧急状态" (chunk 30) is an item of the list chunk 27 opens
    parts = [("第三章 > 第一节", "text", "委员长、副委员长连续任职不得超过两届。第六十七条 全国人民代表大会常务委员会行使下列职权:"
              "(一)解释宪法，监督宪法的实施；(二)制定和修改法律；(三)审查和批准国民经济和社会发展计划、"),
             ("第三章 > 第一节", "text", "国家预算在执行过程中所必须作的部分调整方案；(四)监督国务院的工作；"),
             ("第三章 > 第一节", "text", "(五)决定驻外全权代表的任免；(六)决定全国或者个别省、自治区、直辖市进入紧急状态；"),
             ("第三章 > 第一节", "text", "第六十八条 委员长主持全国人民代表大会常务委员会的工作。")]
    path = _land(tmp_path, _document("constitution.pdf", parts))
    records = fetch_chunks(path, "kb", ["constitution.pdf_2", "constitution.pdf_3"])
    s = _settings(tmp_path).replace(context_expansion_before=0, context_expansion_after=0)
    (extra,) = expand_batch(path, "kb", [retrieval(records, [("constitution.pdf_2", 0.9)])], s)
    # nearest first, back to the chunk opening the list, admitted as asked chunks are
    assert [(c.chunk_id, c.expanded_from, c.asked) for c in extra] == [
        ("constitution.pdf_1", "constitution.pdf_2", True), ("constitution.pdf_0", "constitution.pdf_2", True)]
    # a hit that is no list's item reads none
    assert expand_batch(path, "kb", [retrieval(records, [("constitution.pdf_3", 0.9)])], s) == [[]]
    assert continues_list("(十九)决定全国总动员；") and not continues_list("第六十七条 …行使下列职权:(一)解释宪法；(二)…")
    assert not continues_list("as shown in (2) and (3)")  # an English text's numbers in brackets are no items
