"""Answering: prompt, citations limited to the context, extractive fallback, confidence, evidence
grades, and the LLM path against a local fake endpoint (success, 500 then success, timeout,
malformed JSON)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from schemas.chunk import Chunk
from schemas.qa import EXTRACTIVE, INSUFFICIENT, LLM, RERANK, RRF
from schemas.settings import Settings
from tasks.qa.answer import (_ASKED_AFTER, _ASKS_EXAMPLE, _HAN_BRACKETED, CELL_BONUS, CONFIDENCE_LOW, CONFIDENCE_MID,
                          LAST, NOT_FOUND, SYSTEM_PROMPT, Answerer, _enumerates, _heading_written, _label_named,
                          _line_at, _names_no_column, _says_name, _sections_written, _subject_terms, _table_unit,
                          asked_ordinal, build_messages, confidence, confidence_instruction, cosine_floor,
                          evidence_units, extractive_answer, grade_evidence, sentences, validate_citations)
from tasks.qa.context import ASKS_DOCUMENT_TITLE, Context, build_context
from tasks.qa.extract import answers_what_is_asked, document_scope, measure_asked, negated_terms, scope_parts, terms
from tasks.common.llm import ChatClient
from tasks.qa.types import Candidate, Retrieval
from tests.http_fakes import FakeServer, Reply, chat_reply, scripted

S = Settings()
QUESTION = "生命数耗完即算为什么？"


def context() -> Context:
    texts = {"game.md_0": "玩家以水枪泡封敌人。每次泡封会减少生命数，生命数耗完即算为踢爆。重生者在一定时间内无敌。",
             "other.md_0": "计算神经科学是使用数学分析和电脑模拟的方法研究神经系统的科学。"}
    cands = [Candidate(cid, score=s, chunk=Chunk(content=t, chunk_type="text", source=cid[:-2], chunk_id=cid))
             for (cid, t), s in zip(texts.items(), (0.9, 0.5))]
    return build_context(cands, S)


def retrieval(scores, scale=RRF, top_cosine=None, question=QUESTION) -> Retrieval:
    ranked = [Candidate(f"c{i}", score=s, rerank=s if scale == RERANK else None) for i, s in enumerate(scores)]
    return Retrieval(question, "hybrid", scale, ranked, len(ranked), top_cosine, [question])


def test_prompt_has_the_seed_system_prompt_refs_and_instruction():
    ctx = context()
    system, user = build_messages(QUESTION, ctx, CONFIDENCE_MID)
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert SYSTEM_PROMPT.startswith("你是一个严谨的知识库问答助手。\n你必须且只能根据用户提供的【参考资料】回答问题。")
    assert "[ref:game.md_0] 玩家以水枪" in user["content"] and CONFIDENCE_MID in user["content"]
    assert user["content"].endswith("【问题】" + QUESTION)


def test_confidence_and_its_instruction_per_scale():
    assert confidence(retrieval([0.9, 0.6, 0.3, 0.1])) == pytest.approx(0.6)
    assert confidence(retrieval([])) == 0.0
    assert confidence_instruction(0.10, RERANK, S) == CONFIDENCE_LOW
    assert confidence_instruction(0.20, RERANK, S) == CONFIDENCE_MID
    assert confidence_instruction(0.30, RERANK, S) == ""
    assert confidence_instruction(0.30, RRF, S) == CONFIDENCE_LOW  # rrf has its own scale
    assert confidence_instruction(0.95, RRF, S) == ""


def test_citations_only_to_context_chunks():
    ctx = context()
    text, cited, dropped = validate_citations(
        "答案是踢爆[ref:game.md_0][ref:invented.md_9]，另见[1][2][ref: other.md_0 , ghost_1]。", ctx)
    assert cited == ["game.md_0", "other.md_0"] and dropped == 2
    assert text == "答案是踢爆[ref:game.md_0]，另见[ref:other.md_0]。"
    # no citation at all: the context chunk the answer overlaps most is attached
    text, cited, _ = validate_citations("生命数耗完即算为踢爆。", ctx)
    assert cited == ["game.md_0"] and text.endswith("[ref:game.md_0]")
    assert validate_citations("天气不错。", ctx)[1] == []


def test_extractive_answer_quotes_the_best_sentence_with_its_ref():
    ans = extractive_answer(QUESTION, context(), S.replace(extractive_clauses=True))
    assert ans.mode == EXTRACTIVE and ans.citations == ["game.md_0"]
    assert ans.text.startswith("生命数耗完即算为踢爆。[ref:game.md_0]")  # the clause, not the sentence
    whole = extractive_answer(QUESTION, context(), S)  # the default: the whole sentence
    assert whole.text.startswith("每次泡封会减少生命数，生命数耗完即算为踢爆。[ref:game.md_0]")
    assert extractive_answer("完全不相干的提问内容", context(), S) is None


def test_grade_evidence_is_scale_aware():
    ctx = context()
    floor = cosine_floor(S, "multilingual-e5-small@0123")
    assert floor == 0.84 and cosine_floor(S, "some-other-model@1") is None
    assert cosine_floor(S.replace(crag_min_cosine=0.5), "x") == 0.5
    assert cosine_floor(S.replace(crag_min_cosine=-1), "multilingual-e5-small@0") is None
    assert grade_evidence(retrieval([0.9], top_cosine=0.9), ctx, S, floor)[0]
    ok, why = grade_evidence(retrieval([0.9], top_cosine=0.83), ctx, S, floor)
    assert not ok and "cosine 0.830 < 0.84" in why
    # an English question's floor is lower (e5 scores English pairs lower): 0.815 passes, 0.79 does not
    english = "What is the data type of CLIENT_PORT?"
    assert grade_evidence(retrieval([0.9], top_cosine=0.815, question=english), ctx, S, floor)[0]
    ok, why = grade_evidence(retrieval([0.9], top_cosine=0.79, question=english), ctx, S, floor)
    assert not ok and "cosine 0.790 < 0.8" in why
    assert not grade_evidence(retrieval([0.9], top_cosine=0.815, question="CLIENT_PORT 是什么类型？"), ctx, S,
                              floor)[0]  # a Chinese question: the model's own floor
    # a mostly English question is English, its Chinese in brackets aside
    assert grade_evidence(retrieval([0.9], top_cosine=0.815, question="Under Article 384, after how many demands "
                                                                       "(催告) may the owner terminate it?"), ctx, S,
                          floor)[0]
    # the best cosine's passage in the other language: lower floors (xquad, bench/cosine_floor.py)
    across = replace(retrieval([0.9], top_cosine=0.75, question="CLIENT_PORT 是什么类型？"), top_cosine_across=True)
    assert grade_evidence(across, ctx, S, floor)[0]
    ok, why = grade_evidence(replace(across, top_cosine=0.73), ctx, S, floor)
    assert not ok and "cosine 0.730 < 0.74" in why
    ok, why = grade_evidence(replace(across, question=english, top_cosine=0.71), ctx, S, floor)
    assert not ok and "cosine 0.710 < 0.72" in why
    assert grade_evidence(replace(across, question=english, top_cosine=0.725), ctx, S, floor)[0]
    assert grade_evidence(retrieval([0.9]), ctx, S, floor)[0]  # BM25 only: RRF says nothing absolute
    ok, why = grade_evidence(retrieval([0.9]), Context(ctx.chunks[:1], ""), S, floor)
    assert not ok and "1 evidence chunks" in why
    reranked = Context([replace(c, rerank=0.55) for c in ctx.chunks], ctx.text)
    assert not grade_evidence(retrieval([0.55], RERANK), reranked, S, None)[0]
    reranked.chunks[1].rerank = 0.7
    assert grade_evidence(retrieval([0.7], RERANK), reranked, S, None)[0]


def test_offline_answerer_is_extractive_and_refuses_without_evidence():
    answerer = Answerer(S)
    assert not answerer.uses_llm
    assert answerer.answer(QUESTION, context()).mode == EXTRACTIVE
    refused = answerer.answer(QUESTION, context(), insufficient=True)
    assert (refused.mode, refused.text, refused.citations) == (INSUFFICIENT, NOT_FOUND, [])
    assert answerer.answer(QUESTION, Context()).mode == INSUFFICIENT


def _llm(server: FakeServer, **kw) -> Answerer:
    client = ChatClient(server.url + "/v1", sleep=lambda s: None, **kw)
    return Answerer(S.replace(llm_model="qa-model"), client=client)


def test_llm_success_with_citations_checked():
    reply = chat_reply("生命数耗完即算为踢爆[ref:game.md_0]，见[ref:made_up.md_1]。")
    with FakeServer(lambda req: reply) as server:
        ans = _llm(server).answer(QUESTION, context(), CONFIDENCE_MID)
    assert (ans.mode, ans.citations, ans.dropped_citations) == (LLM, ["game.md_0"], 1)
    assert ans.text == "生命数耗完即算为踢爆[ref:game.md_0]，见。" and not ans.error
    body = server.requests[0].json()
    assert body["model"] == "qa-model" and body["messages"][0]["content"] == SYSTEM_PROMPT
    assert "[ref:game.md_0]" in body["messages"][1]["content"]


def test_llm_500_then_success_is_retried():
    with FakeServer(scripted(Reply(500, b"busy"), chat_reply("踢爆[ref:game.md_0]"))) as server:
        ans = _llm(server).answer(QUESTION, context())
    assert ans.mode == LLM and ans.citations == ["game.md_0"] and len(server.requests) == 2


def test_llm_timeout_falls_back_to_the_extractive_answer():
    with FakeServer(lambda req: Reply(200, b"{}", delay_s=1.0)) as server:
        ans = _llm(server, read_timeout_s=0.2, max_retries=1).answer(QUESTION, context())
    assert ans.mode == EXTRACTIVE and ans.citations == ["game.md_0"]
    assert ans.error.startswith("LLMUnavailableError") and "timed out" in ans.error
    assert len(server.requests) == 2


@pytest.mark.parametrize("body", [b"<html>gateway</html>", b'{"choices": []}', b'{"error": {"message": "x"}}'])
def test_llm_malformed_answer_falls_back(body):
    with FakeServer(lambda req: Reply(200, body, {"Content-Type": "application/json"})) as server:
        ans = _llm(server).answer(QUESTION, context())
    assert ans.mode == EXTRACTIVE and ans.error.startswith("LLMResponseError")


def test_answer_many_keeps_order_with_concurrent_calls():
    def handler(req):
        question = req.json()["messages"][1]["content"].rsplit("【问题】", 1)[1]
        return chat_reply(f"{question}[ref:game.md_0]")

    ctx = context()
    with FakeServer(handler) as server:
        answers = _llm(server).answer_many([(f"问题{i}", ctx, "", i == 3) for i in range(6)])
    assert [a.text for a in answers] == [f"问题{i}[ref:game.md_0]" if i != 3 else NOT_FOUND for i in range(6)]
    assert len(server.requests) == 5  # the insufficient one never reaches the LLM


def test_extractive_answer_quotes_a_table_row_with_its_header_not_a_restated_question():
    table = Chunk(content="行政区 | 2024年度指标 | 2025年度指标\n东湖区 | 21500 | 21000\n西岭区 | 16800 | 16500",
                  chunk_type="table", caption="表1 各区年度用水指标", source="p.docx", chunk_id="p.docx_4",
                  section_path="第二章 用水指标")
    faq = Chunk(content="问：西岭区2025年度用水指标是多少？\n第二章 用水指标\n答：请查阅表1。", chunk_type="text",
                source="faq.txt", chunk_id="faq.txt_0", section_path="第二章 用水指标")
    ctx = build_context([Candidate("faq.txt_0", 0.9, chunk=faq), Candidate("p.docx_4", 0.8, chunk=table)], S)
    ans = extractive_answer("西岭区2025年度用水指标是多少？", ctx, S.replace(extractive_max_sentences=1))
    assert ans.text == "西岭区 — 2025年度指标: 16500[ref:p.docx_4]"  # the row and the column asked for
    rows = extractive_answer("西岭区2025年度用水指标是多少？", ctx,
                             S.replace(extractive_max_sentences=1, extractive_table_cells=False))
    assert rows.text == "行政区 | 2024年度指标 | 2025年度指标：西岭区 | 16800 | 16500[ref:p.docx_4]"


def _chunk(cid: str, content: str, kind: str = "table", **kw) -> Chunk:
    source, index = cid.rsplit("_", 1)
    kw.setdefault("chunk_index", int(index) if index.isdigit() else 0)  # its place: the first ones are a cover
    return Chunk(content=content, chunk_type=kind, source=source, chunk_id=cid, **kw)


def test_a_table_row_of_the_document_the_question_names_beats_a_same_named_row_ranked_first():
    # the research report's cash-flow table has a row named like the whole question; the quarterly
    # report's balance sheet has the row and the column, and its text names the company
    report = _chunk("broker.pdf_27", "现金流量表（百万元） | 2023 | 2024E\n货币资金的期初余额 | 12505 | 11901")
    sheet = _chunk("byd.pdf_20", "项目 | 期末余额 | 期初余额\n货币资金 | 117,406,726,000.00 | 102,738,734,000.00")
    cover = _chunk("byd.pdf_0", "证券代码:002594 证券简称:比亚迪", "text")
    ctx = build_context([Candidate(c.chunk_id, s, chunk=c) for c, s in ((report, 0.83), (cover, 0.46), (sheet, 0.39))],
                        S)
    ans = extractive_answer("比亚迪货币资金的期初余额是多少？", ctx, S)
    assert ans.text == "货币资金 — 期初余额: 102,738,734,000.00[ref:byd.pdf_20]"
    # without the company's text in the context nothing says whose table it is: the first-ranked wins
    alone = build_context([Candidate(c.chunk_id, s, chunk=c) for c, s in ((report, 0.83), (sheet, 0.39))], S)
    assert extractive_answer("比亚迪货币资金的期初余额是多少？", alone, S).citations == ["broker.pdf_27"]


def test_words_of_one_table_are_not_credited_to_another_table_of_the_same_document():
    variables = _chunk("redp.pdf_63", "Global variable | Type | Description\nCLIENT_HOST | VARCHAR(255) | Host name\n"
                                      "CLIENT_PORT | INTEGER | Port used by the current client")
    usage = _chunk("redp.pdf_41", "Column name | Data type | Description\nUSER_TYPE | VARCHAR(5) | Type of user profile")
    text = _chunk("redp.pdf_62", "IBM DB2 for i supports nine built-in global variables such as CLIENT_PORT.", "text")
    other = _chunk("paper.pdf_84", "References about the data type of long-tailed recognition.", "text")
    ctx = build_context([Candidate(c.chunk_id, s, chunk=c)
                         for c, s in ((variables, 0.97), (text, 0.97), (usage, 0.28), (other, 0.27))], S)
    assert extractive_answer("What is the data type of CLIENT_PORT?", ctx, S).text == \
        "CLIENT_PORT — Type: INTEGER[ref:redp.pdf_63]"


def test_words_of_one_passage_do_not_name_the_document_for_its_tables():
    # redp5110_sampled.md: MinerU read an SQL statement as a table (chunk 34); only the sentence of chunk 51
    # says "added", "group", "verify" — they are not what the document is about, and its cells hold none
    bio = _chunk("redp.md_12", "Hernando Bedoya is a Senior IT Specialist at STG Lab Services and Training in "
                               "Rochester, Minnesota. He teaches IBM classes worldwide in all areas of DB2 for i.",
                 "text")
    sql = _chunk("redp.md_34", "SELECT | function_id, user_name, usage, user_type\n"
                               "FROM ORDER | function_usage function_id='QIBM_DB_SECADM' user_name;\nWHERE | ")
    added = _chunk("redp.md_51", "3.3 VERIFY_GROUP_FOR_USER function\nThe VERIFY_GROUP_FOR_USER function was added "
                                 "in IBM i 7.2. Although it is primarily intended for use with RCAC permissions and "
                                 "masks, it can be used in other SQL statements.", "text")
    other = _chunk("paper.pdf_84", "References about the release of long-tailed recognition datasets.", "text")
    answer = extractive_answer("The VERIFY_GROUP_FOR_USER function was added in which IBM i release?",
                               _context((bio, 0.18), (sql, 0.23), (added, 0.91), (other, 0.2)), S)
    assert answer.citations == ["redp.md_51"] and "IBM i 7.2" in answer.text


def test_a_captioned_table_is_named_by_its_caption_not_the_section_it_landed_in():
    # the CC-SAM paper (MinerU 3.4.4): Table 3 landed under "4.3. Open Long-Tailed Recognition", whose
    # results are Table 4's, in section 4.4
    top1 = _chunk("ccsam.md_74", "Dataset | Method | Backbone | Many | Medium | Few\n"
                                 "Places-LT | CE | ResNet-152 | 45.7 | 27.3 | 8.2\n"
                                 "Places-LT | CC-SAM | ResNet-152 | 41.2 | 42.1 | 36.4",
                  caption="Table 3. Top-1 Accuracy on Places-LT, ImageNet-LT and iNaturalist 2018.",
                  section_path="4. Evaluation > 4.3. Open Long-Tailed Recognition")
    open_lt = _chunk("ccsam.md_77", " | Places-LT | Places-LT | Places-LT\nMethod | Many | Medium | Few\n"
                                    "OLTR [32] | 44.6 | 36.8 | 25.2\nLUNA [5] | 48.1 | 41.6 | 29.0",
                     caption="Table 4. Open long-tail performance of top-1 accuracy on ImageNet-LT and Places-LT.",
                     section_path="4. Evaluation > 4.4. Ablation Study")
    answer = extractive_answer("In the CC-SAM paper's open long-tailed recognition table, what accuracy on the Medium "
                               "classes does LUNA reach on Places-LT?", _context((top1, 0.8), (open_lt, 0.7)), S)
    assert answer.text == "LUNA [5] — Places-LT Medium: 41.6[ref:ccsam.md_77]"


def test_a_chart_named_by_its_number_is_told_from_a_chart_or_table_of_another_number():
    # procurement_contract_headings_table_images.docx as landed (chunks 5, 9) beside the MinerU DOCX demo's copy of
    # its chart (chunk 67): "图表 2" is the procurement's chart 2, whose cells the demo's "Chart 1" repeats; "表格 1"
    # is a table, numbered apart from the charts
    rows = "\n".join(f"Category {n} | {a} | {b} | {c}" for n, a, b, c in ((5, 4.3, 2.4, 2), (6, 2.5, 4.4, 2)))
    grid = _chunk("procurement.docx_5", "1 | a | b | v\n2 | u |  | 9", caption="表格 1")
    second = _chunk("procurement.docx_9", f"图表 2\n | Series 7 | Series 5 | Series 6\n{rows}", "chart", caption="图表 2")
    copy = _chunk("demo.docx_67", f"Chart 1: This is an easy line chart\n | Series 7 | Series 5 | Series 6\n{rows}",
                  "chart", caption="Chart 1: This is an easy line chart")
    ctx = _context((copy, 0.9), (grid, 0.6), (second, 0.3))
    answer = extractive_answer("那份政府采购合同示例文档里的“图表 2”中，Category 6 对应的 Series 5 数值是多少？", ctx, S)
    assert answer.text.startswith("Category 6 — Series 5: 4.4") and answer.citations == ["procurement.docx_9"]


def test_a_unit_holding_the_asked_number_is_added_when_the_best_one_has_none():
    intro = _chunk("spec.md_0", "电芯的放电能量与温度有关，放电能量的测试方法见附录。", "text")
    value = _chunk("spec.md_1", "在25℃下电芯的放电能量不低于625 Wh。", "text")
    ctx = build_context([Candidate("spec.md_0", 0.9, chunk=intro), Candidate("spec.md_1", 0.8, chunk=value)], S)
    ans = extractive_answer("电芯的放电能量是多少？", ctx, S)
    assert ans.citations == ["spec.md_0", "spec.md_1"] and "625 Wh" in ans.text
    # a question that asks no number keeps the single best unit
    assert extractive_answer("电芯的放电能量与什么有关？", ctx, S).citations == ["spec.md_0"]


def test_a_table_of_contents_line_is_not_an_answer():
    toc = _chunk("spec.md_0", "1.4.4 最大脉冲放电电流(短脉冲) Maximum pulse discharge current（10s）.............. 10", "text")
    body = _chunk("spec.md_9", "正常工作的单体电芯在50%SOC状态下，短脉冲最大脉冲放电电流1000A。", "text")
    ctx = build_context([Candidate("spec.md_0", 0.9, chunk=toc), Candidate("spec.md_9", 0.5, chunk=body)], S)
    assert extractive_answer("10s短脉冲的最大脉冲放电电流是多少？", ctx, S).citations == ["spec.md_9"]


def _context(*scored: tuple[Chunk, float]) -> Context:
    """A context of these chunks with these fused scores."""
    return build_context([Candidate(c.chunk_id, score, chunk=c) for c, score in scored], S)


def test_a_cell_whose_row_and_column_are_named_answers_a_question_quoting_a_long_composition():
    # the question writes TA33's whole nominal composition: its row and column are named, yet the cell's
    # label holds few of the question's many terms; the ASTM comparison table names none of them
    alloys = _chunk("gbt3620.pdf_12", "牌号 | 名义化学成分 | Ti | Zr | Ta\nTA33 | Ti-5.8A1-4Sn-3,5Zr0.7Mo-0,5Nb-1.1Ta- | 余量 "
                    "| 2.5 ~4.0 | 0.7~1.5\nTA34 | Ti-2A1-3.8Zr-1Mo | 余量 | 3.0 ~4.5 | ")
    astm = _chunk("gbt3620.pdf_19", "本标准牌号 | ASTM标准\nTA3G | Grade 3(UNS Number R50550)")
    question = "按GB/T 3620.1—2016表1，TA33钛合金（Ti-5.8Al-4Sn-3.5Zr-0.7Mo-0.5Nb-1.1Ta-0.4Si-0.06C）中钽（Ta）的含量范围是多少？"
    answer = extractive_answer(question, _context((astm, 0.6), (alloys, 0.5)), S)
    assert answer.text.startswith("TA33 — Ta: 0.7~1.5") and answer.citations[0] == "gbt3620.pdf_12"


# ucasthesis_template_guide.pdf's symbol list as MinerU reads it: math italics, lines PDF unwrapping would join
SYMBOLS = ("𝑅 the gas constant m2 ⋅ s−2 ⋅ K−1\n𝐶𝑣 specific heat capacity at constant volume m2 ⋅ s−2 ⋅ K−1\n"
           "𝐸 specific total energy m2 ⋅ s−2\n𝑒 specific internal energy m2 ⋅ s−2\n𝐼𝑖𝑗 identity tensor 1")


def test_a_symbol_lists_line_answers_what_the_symbol_asked_stands_for():
    symbols = _chunk("ucasthesis.pdf_10", SYMBOLS, "index", section_path="目 录")
    thanks = _chunk("ucasthesis.pdf_66", "ucasthesis 国科大学位论文 LATEX 模板的最终成型离不开国科大学位办公室老师们制定的官方指导"
                    "文件，在此对他们的认真付出表示感谢。", "text")
    ask = lambda q: extractive_answer(q, _context((thanks, 0.6), (symbols, 0.5)), S).text  # noqa: E731
    assert ask("ucasthesis模板使用说明的符号列表中，符号R表示的物理量（Description）是什么？").startswith("𝑅 the gas constant")
    assert ask("ucasthesis模板使用说明的符号列表中，符号I_ij对应的描述是什么？").startswith("𝐼𝑖𝑗 identity tensor")
    # a symbol's case is its meaning
    assert ask("In the symbol list of the ucasthesis guide, what is the symbol e?").startswith("𝑒 specific internal")
    assert ask("In the symbol list of the ucasthesis guide, what is the symbol E?").startswith("𝐸 specific total")


def test_the_cover_restating_an_english_title_is_no_answer_unless_its_title_is_asked():
    # nbt_npp_periodic_safety_review_part1_draft.docx: its cover (chunk 2, before any heading) prints the
    # English title a question quotes; the clause it asks about says it in Chinese only
    cover = _chunk("part1.docx_2", "NB/T XXXXX—XXXX\n核电厂定期安全评价\n第1部分：通用要求\nPreparation of periodic safety "
                   "review for nuclear power plants—\nPart 1: General Requirements\n点击此处添加与国际标准一致性程度的标识", "text")
    mode = _chunk("part1.docx_24", "5.3.1 PSR一般工作模式\n核电厂PSR通常每10年左右开展一次，每次持续4年左右时间，项目可划分为"
                  "准备和执行两个阶段。", "text", section_path="核电厂定期安全评价 第1部分：通用要求 > 1.5.3 确定工作模式")
    scope = _chunk("part1.docx_12", "本部分规定了核电厂定期安全评价的策划准备、评价执行等各阶段的工作内容和方法。", "text",
                   section_path="核电厂定期安全评价 第1部分：通用要求 > 1.1 范围")
    ctx = _context((cover, 0.6), (scope, 0.5), (mode, 0.45))
    title = "the draft NB/T standard 'Periodic safety review for nuclear power plants — Part 1: General Requirements'"
    assert extractive_answer(f"According to {title}, into which two phases can a PSR project be divided?", ctx,
                             S).citations == ["part1.docx_24"]
    asked_title = extractive_answer("What English title is printed on the cover of the draft energy-industry standard "
                                    "on periodic safety review of nuclear power plants, Part 1?", ctx, S)
    assert asked_title.citations == ["part1.docx_2"]


def test_a_closing_sentence_asking_the_chinese_wording_is_no_evidence():
    # ucasthesis_template_guide.pdf as landed (its font list shortened): "Give the Chinese wording." holds the
    # "Chinese" of the English abstract's "University of Chinese Academy of Sciences", which then outscored the
    # research background's answer
    source = "../zh_pdf/ucasthesis_template_guide.pdf"
    abstract = _chunk(f"{source}_5", "This paper is a help documentation for the LATEX class ucasthesis, which is a "
                      "thesis template for the University of Chinese Academy of Sciences. The main content is about "
                      "how to use the ucasthesis, as well as how to write thesis efficiently by using LATEX.\n"
                      "Keywords: University of Chinese Academy of Sciences (UCAS), Thesis, LATEX Template", "text",
                      section_path="摘 要")
    fonts = _chunk(f"{source}_55", "7. 文档内字体切换方法:\n" + "".join(
        f"• {font}:国科大论文模板 ucasthesis 或国科大论文模板 ucasthesis\n" for font in ("宋体", "黑体", "仿宋", "楷体"))
        + "附录 A 中国科学院大学学位论文撰写要求", "text", section_path="2.4 常见使用问题")
    background = _chunk(f"{source}_14", "ucasthesis 的目标在于简化学位论文的撰写，利用 LATEX 格式与内容分离的特征，模板将格式"
                        "设计好后，作者可只需关注论文内容。同时，ucasthesis 有着整洁一致的代码结构和扼要的注解，对文档的仔细阅读可为初学者"
                        "提供一个学习 LATEX 的窗口。此外，模板的架构十分注重通用性，事实上，ucasthesis 不仅是国科大学位论文模板，同时，"
                        "通过少量修改即可成为使用 LATEX 撰写中英文文章或书籍的通用模板，并为使用者的个性化设定提供了接口。",
                        "text", section_path="1.1 研究背景")
    ctx = _context((abstract, 1.0), (fonts, 0.34), (background, 0.32))
    question = ("According to the research background section of the ucasthesis guide, what can ucasthesis become "
                "with only a few modifications, beyond being the UCAS thesis template?")
    for asked in (question, f"{question} Give the Chinese wording.", f"{question} Answer in Chinese."):
        answer = extractive_answer(asked, ctx, S)
        assert answer.citations == [f"{source}_14"] and "通用模板" in answer.text, asked


def test_a_chunk_going_on_with_the_article_its_previous_chunk_ends_in_is_said_in_that_article():
    # prc_constitution.pdf as landed: Article 45 begins at the end of chunk 18 and goes on in chunk 19, whose first
    # sentence answers; only chunk 18's sentences held the 第四十五条 the question names
    source = "../zh_pdf/prc_constitution.pdf"
    before = _chunk(f"{source}_18", "第四十四条 国家依照法律规定实行企业事业组织的职工和国家机关工作人员的退休制度。退休人员的生活受到"
                    "国家和社会的保障。\n第四十五条 中华人民共和国公民在年老、疾病或者丧失劳动能力的情况下，有从国家和社会获得"
                    "物质帮助的权利。国家发展为公民享受这些权利所需要的社会保险、社会救济和医疗卫生事业。", "text")
    going_on = _chunk(f"{source}_19", "国家和社会保障残废军人的生活，抚恤烈士家属，优待军人家属。国家和社会帮助安排盲、聋、哑和其他有"
                      "残疾的公民的劳动、生活和教育。第四十六条 中华人民共和国公民有受教育的权利和义务。", "text")
    ctx = _context((before, 0.6), (going_on, 0.5))
    answer = extractive_answer("宪法第四十五条规定，国家和社会保障哪类人员的生活？", ctx, S)
    assert answer.citations == [f"{source}_19"] and "残废军人" in answer.text


def test_a_title_a_reference_list_cites_is_the_entry_asked_not_the_document():
    # the CC-SAM paper's references (MinerU's zip) and the ucasthesis guide's as landed: the 《…》 after "参考文献中"
    # is the cited work's title; read as the question's document, its words were no evidence of the entry holding it
    ccsam = "../../mineru_samples/mineru3.4.4_cloud_api_zip_cvpr2023_ccsam/zip_contents"
    entry = _chunk(f"{ccsam}_101", "2017. 1\n[65] Linchao Zhu and Yi Yang. Inflated episodic memory with region "
                   "self-attention for long-tailed visual recognition. In Proceedings of the IEEE/CVF Conference on "
                   "Computer Vision and Pattern Recognition, pages 4344–4353, 2020. 1, 6, 8", "list",
                   section_path="5. Related Work and Discussion > References")
    thesis = _chunk("../zh_pdf/ucasthesis_template_guide.pdf_64", "作者简历及攻读学位期间发表的学术论文与研究成果本科生无需此部分。\n"
                    "作者简历\ncasthesis 作者吴凌云，福建省屏南县人，中国科学院数学与系统科学研究院博士研究生。", "text",
                    section_path="参考文献")
    question = ("CC-SAM论文参考文献中，《Inflated episodic memory with region self-attention for long-tailed visual "
                "recognition》的作者是谁？")
    assert scope_parts(question) == ["CC-SAM论文参考文献"]
    answer = extractive_answer(question, _context((entry, 0.94), (thesis, 0.9)), S)
    assert answer.citations == [f"{ccsam}_101"] and "Linchao Zhu and Yi Yang" in answer.text
    # a title the question reads its answer in stays its document's name
    assert "The Evolution of the Word Processor" in scope_parts("《The Evolution of the Word Processor》一文中，许多律所依赖什么？")


def test_the_words_describing_the_document_before_its_title_name_it():
    # nbt_npp_periodic_safety_review_part12_design_draft.docx as landed: its cover's ICS line (chunk 0), the
    # cover restating its title, its issuer's line; "NB/T" of "the draft NB/T energy-industry standard" names the
    # document, as the quoted title does, so the cover restating "NB/T …" has no more of what is asked
    ics = _chunk("part12.docx_0", "ICS\u200227.120.99\nF65", "text")
    cover = _chunk("part12.docx_2", "NB\n中华人民共和国能源行业标准\nNB/T xxxxx—xxxx\n代替XX/TXXXXX-XXXX\n核电厂定期安全评价\n"
                   "第12部分：设计\nPeriodic safety review for nuclear power plants—\nPart 12: Design\n"
                   "点击此处添加与国际标准一致性程度的标识", "text")
    issuer = _chunk("part12.docx_4", "20xx - xx - xx发布\n20xx - xx - xx实施\n国家能源局\u2002\u2002\u2002发布", "text")
    question = ("What ICS number is printed on the cover of the draft NB/T energy-industry standard "
                "'Periodic safety review for nuclear power plants — Part 12: Design'?")
    assert "draft NB/T energy-industry" in document_scope(question)
    answer = extractive_answer(question, _context((ics, 0.9), (cover, 0.9), (issuer, 0.9)), S)
    assert answer.text.startswith("ICS\u200227.120.99") and answer.citations == ["part12.docx_0"]
    # the foreword's sentences hold the title's Chinese and "标准" ("standard"): the ICS line, bilingual, holds the
    # title's Chinese as each unit of the document does, as terms and as words alike
    foreword = _chunk("part12.docx_6", "本部分为《核电厂定期安全评价》系列标准的第12部分。本部分由能源行业核电标准化技术委员会提出。",
                      "text", section_path="前言")
    answer = extractive_answer(question, _context((ics, 0.9), (cover, 0.9), (issuer, 0.9), (foreword, 0.9)), S)
    assert answer.text.startswith("ICS\u200227.120.99") and answer.citations == ["part12.docx_0"]


def test_the_words_naming_the_document_are_no_evidence_in_a_passage_writing_them_out():
    # nbt_npp_periodic_safety_review_part1_draft.docx as landed: the line opening the list of safety factors
    # writes out "核电厂定期安全评价", which the question names the draft by; the item asked holds only "SF13"
    factors = _chunk("part1.docx_16", "1.5 定期安全评价的策划和准备\n1.5.1 确定评价范围和内容\n5.1.1 一般而言，核电厂定期"
                     "安全评价的范围应包括以下14个安全要素：\n1. 核电厂设计（SF1）\n2. 构筑物、系统和部件的实际状态（SF2）\n"
                     "12. 人因（SF12）\n13. 应急预案（SF13）\n14. 辐射环境影响（SF14）", "text",
                     section_path="核电厂定期安全评价 第1部分：通用要求 > 1.5 定期安全评价的策划和准备 > 1.5.1 确定评价范围和内容")
    answer = extractive_answer("《核电厂定期安全评价 第1部分：通用要求》征求意见稿列出的14个安全要素中，SF13是什么？",
                               _context((factors, 0.8)), S)
    assert answer.text.startswith("13. 应急预案（SF13）")


def test_the_contents_answer_by_their_entries_when_asked_about():
    # redp5110_sampled.md's contents as MinerU landed them: a table of dotted leaders and page numbers
    contents = _chunk("redp5110.md_3", "3.2.2 Built-in global variables . . . . . . . . . . . . . . . . . . . | 19\n"
                      "3.3 VERIFY_GROUP_FOR_USER function. . . . . . . . . . . . . . . . . . . | 20\n"
                      "3.4 Establishing and controlling accessibility by using the RCAC rule text. . . . . . . . | 21\n"
                      "3.5 SELECT, INSERT, and UPDATE behavior with RCAC . . . . . . . . . . . . . . . . . . . | 22",
                      section_path="Contents")
    prose = _chunk("redp5110.md_64", "This IBM Redpaper publication provides information about the IBM i 7.2 feature "
                   "of IBM DB2 for i Row and Column Access Control (RCAC).", "text")
    ctx = _context((prose, 0.79), (contents, 0.78))
    asked = "In the table of contents of the IBM Redpaper REDP-5110, what is the title of section 3.5?"
    answer = extractive_answer(asked, ctx, S)
    assert answer.text.startswith("3.5 SELECT, INSERT, and UPDATE behavior with RCAC 22")
    assert answer.citations == ["redp5110.md_3"]
    # not asked about, the contents answer nothing
    assert "redp5110.md_3" not in extractive_answer("What is section 3.5 of the IBM Redpaper about?", ctx, S).citations


def test_a_line_opening_a_list_answers_with_the_item_asked():
    # redp5110_sampled.pdf: the line opening the list ends chunk 37, the list is chunk 38
    opener = _chunk("redp5110.pdf_37", "2.1.6 Change Function Usage CL command\nThe following CL commands can be "
                    "used to work with, display, or change function usage IDs:", "text",
                    section_path="2.1.6 Change Function Usage")
    commands = _chunk("redp5110.pdf_38", "Work Function Usage (WRKFCNUSG)\nChange Function Usage (CHGFCNUSG)\n"
                      "Display Function Usage (DSPFCNUSG)", "list", section_path="2.1.6 Change Function Usage")
    answer = extractive_answer("Which CL command is used to work with function usage IDs?",
                               _context((opener, 0.7), (commands, 0.6)), S)
    assert answer.citations == ["redp5110.pdf_37", "redp5110.pdf_38"] and "WRKFCNUSG" in answer.text
    assert "CHGFCNUSG" not in answer.text


def test_a_contents_entry_answers_only_a_question_about_the_contents():
    contents = _chunk("part1.docx_6", "前言\n1 范围\n2 规范性引用文件\n3 术语和定义\n5 定期安全评价的策划和准备", "index")
    drafting = _chunk("part1.docx_7", "本部分按照GB/T 1.1—2020《标准化工作导则 第1部分：标准化文件的结构和起草规则》的规定"
                      "起草。", "text", section_path="前言")
    ctx = _context((contents, 0.6), (drafting, 0.5))
    assert extractive_answer("该标准中规范性引用文件的起草规则依据哪项标准？", ctx, S).citations == ["part1.docx_7"]
    assert extractive_answer("该标准目次中第2章是规范性引用文件还是术语和定义？", ctx, S).citations == ["part1.docx_6"]


def test_a_semicolon_between_letters_ends_no_clause():
    # ucasthesis_template_guide.pdf as landed (chunk 51): WinEdt's wrapping modes are a list of values joined by ";",
    # quoted whole; a ";" ending a clause (before a space or Chinese) still cuts the sentence
    text = ("应在其 Options -> Preferences -> wrapping 选项卡下将两种 Wrapping Modes 中的内容:TeX;HTML;ANSI;ASCII|DTX..."
            "修改为:TeX;UTF-8|ACP;HTML;ANSI;ASCII|DTX...同时，取消 Options -> Preferences -> Unicode 中的 Enable ANSI "
            "Format。the repository licence covers the repo; it does not cover documents;第二句")
    assert sentences(text) == [
        "应在其 Options -> Preferences -> wrapping 选项卡下将两种 Wrapping Modes 中的内容:TeX;HTML;ANSI;ASCII|DTX..."
        "修改为:TeX;UTF-8|ACP;HTML;ANSI;ASCII|DTX...同时，取消 Options -> Preferences -> Unicode 中的 Enable ANSI Format。",
        "the repository licence covers the repo;", "it does not cover documents;", "第二句"]


def test_lines_a_pdf_wrapped_are_one_sentence_and_items_stay_apart():
    # the Civil Code's text layer (prc_civil_code.pdf, chunk 142): the line ends where the page did
    text = ("第五百八十六条 当事人可以约定一方向对方给付定金作为\n债权的担保。定金的数额由当事人约定；但是，不得超过主合同标的额的\n"
            "百分之二十，超过部分不产生定金的效力。\n第二章 结婚\n第一千零四十七条 结婚年龄，男不得早于二十二周岁，女\n不得早于二十周岁。\n"
            "It featured early examples of modern features like cut,\ncopy, and paste.\n1. one item of a list\n2. another item")
    assert sentences(text) == [
        "第五百八十六条 当事人可以约定一方向对方给付定金作为债权的担保。", "定金的数额由当事人约定；",
        "但是，不得超过主合同标的额的百分之二十，超过部分不产生定金的效力。", "第二章 结婚",
        "第一千零四十七条 结婚年龄，男不得早于二十二周岁，女不得早于二十周岁。",
        "It featured early examples of modern features like cut, copy, and paste.",
        "1. one item of a list", "2. another item"]


def test_a_line_ending_with_a_date_ends_its_entry():
    # broker_research_report_anonymized.pdf, chunk 7: each related report is a line ending with its date
    text = ("相关研究报告\n《某服装企业（600398.SH）-上半年收入增长 1.5%，中期分红率 67.5%》 ——2024-08-21\n"
            "《某服装企业（600398.SH）-第一季度净利润增长 10%，电商表现 亮眼》 ——2024-05-04\n"
            "风险提示:线下消费持续疲软、品牌形象受损、渠道拓展不及预期。")
    assert sentences(text) == ["相关研究报告", "《某服装企业（600398.SH）-上半年收入增长 1.5%，中期分红率 67.5%》 ——2024-08-21",
                               "《某服装企业（600398.SH）-第一季度净利润增长 10%，电商表现 亮眼》 ——2024-05-04",
                               "风险提示:线下消费持续疲软、品牌形象受损、渠道拓展不及预期。"]


# gbt3620.1-2016_titanium_alloy_standard.pdf as landed (chunk 28): Annex D.3's list of standards, its line breaks lost
STANDARDS = ("D.3 参考标准\nGB/T 2965—2007 钛及钛合金棒材GB/T 3621—2007 钛及钛合金板材GB/T 3622—2012 钛及钛合金带、箔材"
             "GB/T 3623—2007 钛及钛合金丝GB/T 3624—2010 钛及钛合金无缝管GB/T 3625—2007 换热器及冷凝器用钛及钛合金管"
             "GB/T 12769—2007 钛铜复合棒GB/T 13810—2007 外科植入物用钛及钛合金加工材GB/T 14845—2007 板式换热器用钛板"
             "GB/T 16598—2013 钛及钛合金饼和环GB/T 26057—2010 钛及钛合金焊接管GB/T 26058—2010 钛及钛合金挤压管"
             "GB/T 26059—2010 钛及钛合金网板GB/T 26723—2011 冷轧钛带卷GJB 2218A—2008 航空用钛及钛合金棒材和锻坯"
             "GJB 2505A—2008 航空用钛及钛合金板材和带材规范YS/T 658—2007 焊管用钛带YS/T 750—2011 热轧钛带卷\n"
             "YS/T 794—2012 钛种板YS/T 795—2012 高尔夫球头用钛及钛合金板材YS/T 885—2013 钛及钛合金锻造板坯")


def test_a_list_of_standards_glued_together_is_read_entry_by_entry():
    assert sentences(STANDARDS)[:3] == ["D.3 参考标准", "GB/T 2965—2007 钛及钛合金棒材", "GB/T 3621—2007 钛及钛合金板材"]
    assert "GJB 2218A—2008 航空用钛及钛合金棒材和锻坯" in sentences(STANDARDS)
    # the normative references (chunk 6) name standards without their year
    assert sentences("GB/T 3620.2 钛及钛合金加工产品化学成分允许偏差GB/T 4698(所有部分) 海绵钛、钛及钛合金化学分析方法"
                     "GB/T 8170 数值修约规则与极限数值的表示和判定") == [
        "GB/T 3620.2 钛及钛合金加工产品化学成分允许偏差", "GB/T 4698(所有部分) 海绵钛、钛及钛合金化学分析方法",
        "GB/T 8170 数值修约规则与极限数值的表示和判定"]
    # a sentence citing standards (Annex A's note, chunk 16) is no list of them
    note = "注：TB1、TC5为GB/T3620.1—1983年制定国标时删除的牌号，TA8、TC7为GB/T3620.1—1994年国标修订时删除的牌号。"
    assert sentences(note) == [note]
    chunk = _chunk("gbt3620.pdf_28", STANDARDS, "text")
    question = ("In the reference standards of Annex D (D.3) of GB/T 3620.1-2016, which standard number is given for "
                "titanium strip for welded pipe (焊管用钛带)?")
    answer = extractive_answer(question, _context((chunk, 0.9)), S)
    assert answer.text == "YS/T 658—2007 焊管用钛带[ref:gbt3620.pdf_28]"
    # the entry asked by its title in 《》 (not the document's name: the question names that otherwise)
    question = "按GB/T 3620.1—2016附录D.3所列参考标准，《钛及钛合金锻造板坯》的标准编号是什么？"
    answer = extractive_answer(question, _context((chunk, 0.9)), S)
    assert answer.text == "YS/T 885—2013 钛及钛合金锻造板坯[ref:gbt3620.pdf_28]"


# redp5110_sampled.pdf, chunk 9: the CoE solution brief's list, its bullets a symbol font's "r", its line breaks lost
COE_TOPICS = ("Who we are, some of what we do\nGlobal CoE engagements cover topics including:\n"
              "r Database performance and scalability r Advanced SQL knowledge and skills transfer r Business "
              "intelligence and analytics r DB2 Web Query r Query/400 modernization for better reporting and analysis "
              "capabilities r Database modernization and re-engineering r Data-centric architecture and design "
              "r Extremely large database and overcoming limits to growth r ISV education and enablement")


def test_the_words_after_a_standards_number_are_evidence_of_where_the_answer_is():
    # gbt3620.1-2016_titanium_alloy_standard.pdf, chunk 4: the foreword's drafting units, then its drafters
    foreword = _chunk("gbt3620.pdf_4", "本标准参加起草单位:北京航空材料研究院、西部金属材料股份有限公司、航天材料及工艺研究所、"
                      "中国船舶重工集团公司第七二五研究所、中铝沈阳有色金属加工有限公司、北京有色金属研究总院、湖南金天钛业科技有限公司。\n"
                      "本标准主要起草人:冯军宁、乔璐、马忠贤、胡志杰、陈峰、王俭、李献军、刘东升、张宇玮、庆达嘎、王洋、王丽、彭晖、魏衍广。\n"
                      "本标准所代替标准的历次版本发布情况为: ———GB/T 3620—1983、GB/T 3620.1—1994、GB/T 3620.1—2007。", "text")
    answer = extractive_answer("GB/T 3620.1—2016前言列出的主要起草人名单中，排在最后的是谁？", _context((foreword, 0.9)), S)
    assert answer is not None and answer.text.startswith("本标准主要起草人:") and "魏衍广" in answer.text


def test_the_chinese_an_english_question_writes_out_names_what_is_asked():
    # prc_constitution.pdf, chunks 18 and 19: Article 45 on material assistance, continued on the next chunk
    article = _chunk("prc_constitution.pdf_18", "国家对就业前的公民进行必要的劳动就业训练。第四十三条 中华人民共和国劳动者有休息的权利。"
                     "国家发展劳动者休息和休养的设施，规定职工的工作时间和休假制度。第四十四条 国家依照法律规定实行企业事业组织的职工和"
                     "国家机关工作人员的退休制度。退休人员的生活受到国家和社会的保障。\n第四十五条 中华人民共和国公民在年老、疾病或者"
                     "丧失劳动能力的情况下，有从国家和社会获得物质帮助的权利。国家发展为公民享受这些权利所需要的社会保险、社会救济和"
                     "医疗卫生事业。", "text")
    rest = _chunk("prc_constitution.pdf_19", "国家和社会保障残废军人的生活，抚恤烈士家属，优待军人家属。国家和社会帮助安排盲、聋、哑"
                  "和其他有残疾的公民的劳动、生活和教育。第四十六条 中华人民共和国公民有受教育的权利和义务。", "text")
    question = ("Under the PRC Constitution's article on material assistance, the state and society pay compensation "
                "(抚恤) to whose families?")
    answer = extractive_answer(question, _context((article, 0.9), (rest, 0.85)), S)
    assert answer.text == "国家和社会保障残废军人的生活，抚恤烈士家属，优待军人家属。[ref:prc_constitution.pdf_19]"
    # a Chinese question about an English title writes no Chinese out: its own words weigh as they always do (the
    # CC-SAM paper's reference [50], not the thesis guide's sentence on 论文 and 参考文献)
    reference = _chunk("ccsam.pdf_118", "[50] Jianfeng Wang, Thomas Lukasiewicz, Xiaolin Hu, Jianfei Cai, and "
                       "Zhenghua Xu. Rsg: A simple but effective module for learning imbalanced datasets. In "
                       "Proceedings of the IEEE/CVF Conference on Computer Vision and Pattern Recognition, pages "
                       "3784–3793, 2021. 1, 6, 7, 8", "text")
    guide = _chunk("ucasthesis.pdf_3", "根据《科学技术报告、学位论文和学术论文的编写格式》（GB/T 7713-1987）、《学位论文编写规则》"
                   "（GB/T 7713.1-2006）和《文后参考文献著录规则》（GB7714—87）等国家有关标准，结合中国科学院大学的实际情况，"
                   "特制订本规定。", "text")
    question = ("CC-SAM论文参考文献[50]（RSG: A simple but effective module for learning imbalanced datasets）在CVPR 2021"
                "论文集中的页码范围是多少？")
    answer = extractive_answer(question, _context((reference, 0.9), (guide, 0.85)), S)
    assert "3784–3793" in answer.text


def test_the_sentence_after_the_best_holding_far_more_of_what_is_asked_is_quoted_with_it():
    # the SVOLT datasheet as MinerU 2.7.6 read it (chunk 44): the capacity at -20°C, then the conditions it holds under
    capacity = _chunk("svolt_output_44", "1.7.3 -20°C 的容量 Capacity at $\\mathbf { \\nabla } _ { - 2 0 } \\circ "
                      "\\mathbf { C }$\n放电容量 ≥137.2Ah 。新电池状态， 25°C 标准充电， -20°C 标准放电(无风环境)。", "text")
    question = "SVOLT 196Ah电芯规格书1.7.3条规定-20°C放电容量时，标准放电是在什么环境条件下进行的？"
    answer = extractive_answer(question, _context((capacity, 0.9)), S)
    assert answer.text.endswith("新电池状态， 25°C 标准充电， -20°C 标准放电(无风环境)。[ref:svolt_output_44]")
    # the best one holding it already is quoted alone
    answer = extractive_answer("SVOLT 196Ah电芯规格书1.7.3条规定-20°C的放电容量是多少？", _context((capacity, 0.9)), S)
    assert "无风环境" not in answer.text and "137.2Ah" in answer.text


# the CC-SAM paper's references as the MinerU cloud API read them (zip_contents, chunk 91): one entry a line, each
# ending with the pages citing it ("1, 5, 8"), no sentence end
CCSAM_REFERENCES = (
    "[27] Shuang Li, Kaixiong Gong, Chi Harold Liu, Yulin Wang, Feng Qiao, and Xinjing Cheng. Metasaug: Meta semantic "
    "augmentation for long-tailed visual recognition. In Proceedings of the IEEE/CVF conference on computer vision and "
    "pattern recognition, pages 5212–5221, 2021. 1\n"
    "[28] Tsung-Yi Lin, Priya Goyal, Ross Girshick, Kaiming He, and Piotr Dollár. Focal loss for dense object "
    "detection. In Proceedings of the IEEE international conference on computer vision, pages 2980–2988, 2017. "
    "1, 5, 8\n"
    "[29] Tsung-Yi Lin, Michael Maire, Serge Belongie, James Hays, Pietro Perona, Deva Ramanan, Piotr Dollár, and C "
    "Lawrence Zitnick. Microsoft coco: Common objects in context. In European conference on computer vision, pages "
    "740–755, 2014. 6")


def test_a_numbered_reference_entry_is_one_unit_and_a_question_citing_its_number_takes_it():
    entries = sentences(CCSAM_REFERENCES)
    assert len(entries) == 3 and entries[1].startswith("[28] Tsung-Yi Lin") and entries[1].endswith("2017. 1, 5, 8")
    chunk = _chunk("ccsam_zip_91", CCSAM_REFERENCES, "text")
    question = "CC-SAM论文参考文献[28]（Lin等人的Focal loss for dense object detection）在ICCV论文集中的页码范围是多少？"
    answer = extractive_answer(question, _context((chunk, 0.9)), S)
    assert answer.text.startswith("[28] Tsung-Yi Lin") and "2980–2988" in answer.text
    # the PDF's copy (Zhou_…_paper.pdf, chunk 90): the parser lost the line break between two entries
    glued = ("[22] Jaehyung Kim, Jongheon Jeong, and Jinwoo Shin. M2m: Imbalanced classification via major-to-minor "
             "translation. In Proceedings of the IEEE/CVF conference on computer vision and pattern recognition, pages "
             "13896–13905, 2020. 1 [23] Pang Wei Koh, Shiori Sagawa, Henrik Marklund, Sang Michael Xie, Marvin Zhang, "
             "Akshay Balsubramani, Weihua Hu, Michihiro Yasunaga, Richard Lanas Phillips, Irena Gao, et al. Wilds: A "
             "benchmark of in-thewild distribution shifts. In International Conference on Machine Learning, pages "
             "5637–5664. PMLR, 2021. 1")
    first, second = sentences(glued)
    assert first.endswith("2020. 1") and second.startswith("[23] Pang Wei Koh") and second.endswith("2021. 1")
    answer = extractive_answer("CC-SAM论文参考文献[23]（Koh等人，ICML）提出的野外分布偏移基准叫什么名字？",
                               _context((_chunk("ccsam_pdf_90", glued, "text"), 0.9)), S)
    assert answer.text.startswith("[23] Pang Wei Koh") and "Wilds" in answer.text
    # a list of standards numbered "[n]" (the PSR drafting notes' references) is no list of author-first entries
    notes = "[1]  GB/T 1.1-2020 标准化工作导则 第1部分：标准化文件的结构和起草规则\n[2]  HAF 103-2020 核动力厂调试和运行安全规定"
    assert len(sentences(notes)) == 1


def test_a_page_asked_of_the_contents_is_answered_by_its_entry():
    # redp5110_sampled.pdf, chunk 4 (the contents, dotted leaders) and a body sentence of section 2.2
    leaders = " " + ". " * 12
    contents = _chunk("redp5110_sampled.pdf_4", f"2.1.6 Change Function Usage CL command.{leaders}10\n"
                      f"2.1.7 Verifying function usage IDs for RCAC with the FUNCTION_USAGE view{leaders}10\n"
                      f"2.2 Separation of duties{leaders}10\nChapter 3. Row and Column Access Control{leaders}13",
                      "index")
    body = _chunk("redp5110_sampled.md_35", "2.2  Separation of duties\nSeparation of duties helps businesses comply "
                  "with industry regulations or organizational requirements and simplifies the management of "
                  "authorities.", "text")
    question = ("In the contents listing of IBM Redpaper REDP-5110 (Row and Column Access Control Support in IBM DB2 "
                "for i), what page number is given for section 2.2, Separation of duties?")
    answer = extractive_answer(question, _context((body, 0.9), (contents, 0.8)), S)
    assert answer.text == "2.2 Separation of duties 10[ref:redp5110_sampled.pdf_4]"


def test_a_contents_entry_holding_little_but_its_title_answers_the_page_asked():
    # redp5110_sampled.md, chunks 3 (the contents as a Markdown table) and 10 (the preface, which writes out more of
    # the question's words than the entry "Preface xi" does)
    leaders = " " + ". " * 20
    contents = _chunk("redp5110_sampled.md_3", f"Notices{leaders}| . vii\nTrademarks{leaders}| viii\n"
                      f"Preface{leaders}| . xi\nAuthors.{leaders}| . xi", "table")
    preface = _chunk("redp5110_sampled.md_10", "Preface\nThis IBM® Redpaper™ publication provides information about "
                     "the IBM i 7.2 feature of IBM DB2® for i Row and Column Access Control (RCAC).", "text")
    question = ("In docling's expected Markdown of the RCAC Redpaper, which roman-numeral page does the contents table "
                "give for the Preface?")
    assert extractive_answer(question, _context((preface, 0.55), (contents, 0.17)), S).text \
        == "Preface xi[ref:redp5110_sampled.md_3]"


def test_a_contents_line_holding_the_next_entry_gives_its_page_to_that_entry():
    # redp5110_sampled.md as landed (chunk 3): docling glued 3.6.7 to 3.6.6, whose page was lost
    leaders = " " + ". " * 20
    contents = _chunk("redp5110_sampled.md_3", f"3.6.5 Defining and creating column{leaders}| 28\n"
                      f"3.6.6 Activating RCAC{leaders}3.6.7 Demonstrating data access with RCAC{leaders}| 29\n"
                      f"1.3 DB2 for i security controls{leaders}| . 3", "table")
    question = ("In the contents pages of IBM's Redpaper 'Row and Column Access Control Support in IBM DB2 for i', on "
                "which page does subsection 3.6.7, Demonstrating data access with RCAC, start?")
    assert extractive_answer(question, _context((contents, 0.8)), S).text.startswith(
        "3.6.7 Demonstrating data access with RCAC 29")


def test_a_contents_entry_titled_as_the_question_writes_it_answers_however_short():
    # ucasthesis_template_guide.pdf as landed (chunk 7, the contents): "致谢 19" is shorter than any sentence, and
    # "参考文献 15" shares its title with "2.3.6 参考文献引用 7", which the question does not write whole
    leaders = " " + "⋅ " * 20
    contents = _chunk("ucasthesis_template_guide.pdf_7", f"2.3.5 算法{leaders}7\n2.3.6 参考文献引用{leaders}7\n"
                      f"参考文献{leaders}15\n作者简历及攻读学位期间发表的学术论文与研究成果{leaders}17\n致谢{leaders}19",
                      "index")
    thanks = _chunk("ucasthesis_template_guide.pdf_54", "致谢等所有条目都是通过最为通用的\\chapter{item name}来显式实现的，"
                    "从而可以随意添加，放置，和修改，如同一般章节。", "text")
    answer = extractive_answer("ucasthesis使用说明的目录里，“致谢”排在第几页？", _context((thanks, 0.8), (contents, 0.8)), S)
    assert answer.text == "致谢 19[ref:ucasthesis_template_guide.pdf_7]"
    question = "In the table of contents of the ucasthesis guide, on which page does the 参考文献 (references) section " \
               "begin?"
    assert extractive_answer(question, _context((contents, 0.8)), S).text == \
        "参考文献 15[ref:ucasthesis_template_guide.pdf_7]"


def test_a_row_of_the_passages_topic_is_no_cell_asked_when_no_column_is_named():
    # the CC-SAM paper as landed: its own row of Table 4 (no header row landed) against its implementation details
    table = _chunk("ccsam_65", "CE | 40.1 | 10.4 | 0.295\nLUNA [5] | 48.2 | 44.7 | 0.579\nCC-SAM | 61.4 | 49.5 | 0.552",
                   "table")
    details = _chunk("ccsam_60", "We implement CC-SAM in PyTorch. All the experiments are run on Tesla V100 GPUs.",
                     "text")
    intro = _chunk("ccsam_11", "We introduce CC-SAM, a novel algorithm tailored for long-tailed recognition.", "text")
    context = _context((table, 0.9), (details, 0.6), (intro, 0.5))
    answer = extractive_answer("On which GPU were the experiments of CC-SAM run?", context, S)
    assert answer.text == "All the experiments are run on Tesla V100 GPUs.[ref:ccsam_60]"
    # (the Chinese question, no gloss given here, finds no English sentence: nor does it take the row for one)
    assert extractive_answer("CC-SAM论文的实验是在哪种型号的GPU上完成的？", context, S) is None
    # where a data row was read as the header ("CE |  | 10.4 | 0.4 | 0.366", the PDF's own parse), its "0.366" names no
    # column either; a year does
    assert _names_no_column("0.366") and _names_no_column("") and not _names_no_column("2023")
    # a name inside another is not said ("USAGE" of "FUNCTION_USAGE", redp5110_sampled.md): no topic of the passage
    assert not _says_name("The FUNCTION_USAGE view contains function usage configuration details.", "USAGE")
    assert _says_name("The USAGE column holds ALLOWED or DENIED.", "USAGE") and _says_name("我们提出CC-SAM。", "CC-SAM")


def test_a_file_name_written_whole_names_its_document_not_the_rows_sharing_its_suffix():
    # the corpus's SOURCES.md as landed: "md" of "SOURCES.md" names no row "en/groundtruth/multi_page.md"
    files = _chunk("../SOURCES.md_2", "local file | repo | git blob | bytes\n"
                   "en/multi_page.pdf | docling-project/docling | 7d9eb1818d61fa4d3e80d1c8a41e705c6fa7bc9d | 128,322\n"
                   "en/groundtruth/multi_page.md | docling-project/docling | "
                   "0f9d4220544a4731d7881ae8ac07aa02a03d1d5c | 9,392", "table")
    note = _chunk("../SOURCES.md_0", "Every binary file is a byte-for-byte copy of a git blob from a public GitHub "
                  "repository (fetched snapshot); the git-blob column lets anyone re-check it.", "text")
    question = "How does the corpus SOURCES.md describe each binary file relative to the git blob it was taken from?"
    answer = extractive_answer(question, _context((note, 0.6), (files, 0.6)), S)
    assert answer.text.startswith("Every binary file is a byte-for-byte copy of a git blob")


def test_a_listings_line_the_question_writes_out_answers_with_its_comment():
    # ucasthesis_template_guide.pdf as landed: the EUCLID algorithm (a code chunk) beside the prose after it, which
    # says "第一行" as the question does
    listing = _chunk("ucasthesis_template_guide.pdf_44", "1: procedure EUCLID(𝑎, 𝑏)        ▷ The g.c.d. of a and b\n"
                     "2:    𝑟 ← 𝑎 mod 𝑏\n3:    while 𝑟 ≠ 0 do         ▷ We have the answer if r is 0\n"
                     "4:        𝑎 ← 𝑏\n8:    return 𝑏          ▷ The gcd is b\n9: end procedure", "code")
    prose = _chunk("ucasthesis_template_guide.pdf_45", "2）索引第一行 @article{lamport1986document,中 lamport1986document "
                   "即为此文献的 label (中文文献也必须使用英文 label，一般遵照:姓氏拼音 + 年份 +标题第一字拼音的格式)，想要在论文中"
                   "索引此文献，有两种索引类型:", "text")
    question = "ucasthesis说明文档的示例算法（欧几里得算法）中，while 𝑟 ≠ 0 do 这一行右侧的英文注释是什么？"
    answer = extractive_answer(question, _context((listing, 0.9), (prose, 0.9)), S)
    assert answer.text == "3: while 𝑟 ≠ 0 do ▷ We have the answer if r is 0[ref:ucasthesis_template_guide.pdf_44]"


def test_a_row_picked_by_an_item_of_its_list_answers_a_question_in_the_other_language():
    # word_sample.docx.md as landed (chunk 3): "Maple" picks the Leaves row; the Chinese question shares few terms with
    # the English cell, which its written item must carry past the share of terms a unit needs
    food = _chunk("word_sample.docx.md_3", " | Food | Calories per portion\nLeaves | Ash, Elm, Maple | 50\n"
                  "Berries | Blueberry, Strawberry, Cranberry | 150\nGrain | Corn, Buckwheat, Barley | 200", "table")
    answer = extractive_answer("docling的鸭子Word示例里，Food一栏含有Maple（枫树）的那一类食物，每份的热量是多少卡路里？",
                               _context((food, 0.9)), S)
    assert answer.text == "Leaves — Calories per portion: 50[ref:word_sample.docx.md_3]"


def test_a_code_the_prose_of_several_chunks_says_names_the_document_not_the_line_asked():
    # redp5110_sampled.md as landed: "DB2" of the question names the Redpaper, which says it everywhere
    leaders = " " + ". " * 20
    contents = _chunk("redp5110_sampled.md_3", f"1.3 DB2 for i security controls{leaders}| . 3\n"
                      f"2.1.2 Toolbox application server access: QIBM_DB_ZDA{leaders}| . 8", "table")
    brief = _chunk("redp5110_sampled.md_4", "DB2 for i Center of Excellence\nSolution Brief IBM Systems Lab Services.",
                   "text")
    preface = _chunk("redp5110_sampled.md_10", "This IBM Redpaper publication provides information about the IBM i 7.2 "
                     "feature of IBM DB2 for i Row and Column Access Control (RCAC).", "text")
    question = "我在查IBM关于DB2 for i行列访问控制的红皮书PDF目录：介绍Toolbox应用服务器访问（QIBM_DB_ZDA）的那一小节排在第几页？"
    answer = extractive_answer(question, _context((contents, 0.8), (brief, 0.8), (preface, 0.5)), S)
    assert answer.text.startswith("2.1.2 Toolbox application server access: QIBM_DB_ZDA 8")


def test_a_list_whose_bullets_a_symbol_font_wrote_as_letters_is_read_item_by_item():
    items = sentences(COE_TOPICS)[1:]
    assert len(items) == 9 and items[0] == "r Database performance and scalability"
    assert items[-1] == "r ISV education and enablement"
    # a sentence merely holding a lone letter is no such list
    assert sentences("r is the radius and q the charge of a particle r") == [
        "r is the radius and q the charge of a particle r"]
    chunk = _chunk("redp5110_sampled.pdf_9", COE_TOPICS, "text")
    question = ("IBM DB2 for i 行列访问控制（RCAC）红皮书介绍DB2 for i卓越中心（CoE）的全球服务主题时，"
                "提到要对哪个旧查询工具进行现代化以获得更好的报表和分析能力？")
    answer = extractive_answer(question, _context((chunk, 0.9)), S)
    assert answer.text == (
        "r Query/400 modernization for better reporting and analysis capabilities[ref:redp5110_sampled.pdf_9]")


def test_a_question_asking_a_columns_header_is_answered_by_the_header():
    # the SVOLT datasheet's pulse tables (1.5.2, 1.6.2): the condition a column's values hold at is in its header
    discharge = _chunk("svolt.pdf_61", "电芯温度，℃ | 功率（20%SOC），W | 放电时间，s\nCell Temperature, ℃ | "
                       "Power(20%SOC), W | Discharge time, s\n<-30 | 不允许No discharging | 不允许No discharging\n"
                       "≥ -30 | 117 | 30\n≥ -20 | 204 | 30\n≥ -10 | 330 | 30\n≥0 | 566 | 30\n≥10 | 721 | 30")
    charge = _chunk("svolt.pdf_67", "电芯温度，℃ | 电流（80%SOC），A | 充电时间，s\nCell Temperature, ℃ | "
                    "Current(80%SOC), A | Charge time, s\n<-20 | 不允许No Charging | 不允许No Charging\n"
                    "≥ -20 | 24 | 10\n≥ -10 | 51 | 10\n≥0 | 127 | 10\n≥10 | 272 | 10")
    # and its glossary, whose definitions hold any word a question says
    terms_table = _chunk("svolt.pdf_6", "术语 Terms | 定义 Definitions\nSOC | 荷电状态，电芯的剩余电量与额定容量之比；"
                         "充电电流、放电功率在给定荷电状态下测得 State of charge")
    context = _context((charge, 0.9), (discharge, 0.85), (terms_table, 0.8))
    answer = extractive_answer("SVOLT 196Ah电芯规格书1.6.2节的再生脉冲充电表中，允许的充电电流一栏是在什么荷电状态下给出的？",
                               context, S)
    assert answer.text == "电流（80%SOC），A Current(80%SOC), A[ref:svolt.pdf_67]"
    answer = extractive_answer("SVOLT 196Ah电芯规格书的脉冲放电表（1.5.2）中，放电功率一栏是在什么荷电状态（SOC）下给出的？",
                               context, S)
    assert answer.text == "功率（20%SOC），W Power(20%SOC), W[ref:svolt.pdf_61]"
    # word_sample.docx's food table: a column told by the cells the question quotes or writes in brackets
    food = _chunk("word_sample.md_3", " | Food | Calories per portion\nLeaves | Ash, Elm, Maple | 50\n"
                  "Berries | Blueberry, Strawberry, Cranberry | 150\nGrain | Corn, Buckwheat, Barley | 200")
    context = _context((food, 0.9))
    asked = "In the 'Summer activities' Word sample, what is the header of the food table's column that {}?"
    assert extractive_answer(asked.format("lists items such as 'Ash, Elm, Maple'"), context, S).text == \
        "Food[ref:word_sample.md_3]"
    assert extractive_answer(asked.format("holds the numeric values (50, 150, 200)"), context, S).text == \
        "Calories per portion[ref:word_sample.md_3]"


def test_a_question_asking_a_standard_is_answered_by_the_sentence_naming_it_after_the_best_one():
    # gbt3620.1-2016_titanium_alloy_standard.pdf, chunk 10: the rule, then the standard its digits are rounded by
    rules = _chunk("gbt3620.pdf_10", "4 化学成分分析和分析报告\n4.1 钛及钛合金产品化学成分仲裁分析按 GB/T 4698进行,"
                   "常规检验可按ICP 或认可的其他方法进行。4.3 钛及钛合金产品的化学成分允许做第二次分析,"
                   "并以第二次的分析结果为最终判定依据。\n4.4 化学成分分析报告中的分析数值,"
                   "其有效位数应与本标准中对应牌号的相应界限数值的有效位数一致。"
                   "有效位数后面的数字应按 GB/T 8170规定的规则进行修约。", "text")
    cover = _chunk("gbt3620.pdf_2", "中华人民共和国国家标准GB/T 3620.1—2016代替 GB/T 3620.1—2007钛及钛合金牌号和化学成分",
                   "text")
    question = ("Under GB/T 3620.1-2016, the digits beyond the significant figures in a chemical analysis report "
                "must be rounded according to which standard?")
    assert answers_what_is_asked(question) is not None and answers_what_is_asked("按哪个标准修约？") is not None
    answer = extractive_answer(question, _context((rules, 0.9), (cover, 0.8)), S)
    assert "GB/T 8170" in answer.text and "GB/T 4698" not in answer.text and answer.citations == ["gbt3620.pdf_10"]
    assert answers_what_is_asked("What standard charge current does the SVOLT datasheet give?") is None
    assert answers_what_is_asked("该标准由哪个标准化技术委员会归口？") is None


def test_the_other_clause_of_the_best_ones_sentence_is_quoted_with_it_when_it_nearly_ties():
    # prc_civil_code.pdf as landed (chunk 264): the clause after the answer holds as many of the question's words
    article = _chunk("civil_code.pdf_264", "第一千二百零六条 产品投入流通后发现存在缺陷的，生产者、销售者应当及时采取停止销售、警示、"
                     "召回等补救措施；未及时采取补救措施或者补救措施不力造成损害扩大的，对扩大的损害也应当承担侵权责任。\n"
                     "依据前款规定采取召回措施的，生产者、销售者应当负担被侵权人因此支出的必要费用。", "text")
    question = "民法典产品责任一章规定，产品投入流通后发现存在缺陷的，生产者、销售者应当及时采取哪些补救措施？"
    answer = extractive_answer(question, _context((article, 0.9)), S)
    assert answer.text == ("第一千二百零六条 产品投入流通后发现存在缺陷的，生产者、销售者应当及时采取停止销售、警示、召回等补救措施；"
                           "[ref:civil_code.pdf_264]未及时采取补救措施或者补救措施不力造成损害扩大的，对扩大的损害也应当承担侵权"
                           "责任。[ref:civil_code.pdf_264]")
    # two sentences are not one: the best is quoted alone
    apart = _chunk("civil_code.pdf_264", article.content.replace("补救措施；", "补救措施。"), "text")
    assert extractive_answer(question, _context((apart, 0.9)), S).text.count("[ref:") == 1


def test_a_unit_another_quoted_unit_holds_is_said_once():
    # nbt_npp_periodic_safety_review_part12_design_draft.docx as landed (chunk 24): the line opening the list is
    # quoted with its first item, which is also the clause after it
    chunk = _chunk("part12.docx_24", "6.3.2 要点评价\n6.3.2.1.1 设计文件评价\n设计文件评价方法如下：\n1. 评价核电厂构筑物、系统和"
                   "设备设计文件管理体系，评价设计文件管理体系的适当性；\n2. 评价SSCs设计文件与安全基准的符合性，SSCs设计文件包括："
                   "最终安全分析报告（FSAR）、系统安全准则、系统设计文件等；同时评价不同设计文件之间的一致性；\n"
                   "3. 整理设计文件相关的差异项。", "text")
    question = "按《核电厂定期安全评价 第12部分：设计》征求意见稿，设计文件评价方法的第一步要评价核电厂构筑物、系统和设备的什么体系？"
    answer = extractive_answer(question, _context((chunk, 0.9)), S)
    assert "设计文件管理体系" in answer.text and answer.text.count("1. 评价核电厂构筑物") == 1


def test_a_laws_sentence_is_said_in_its_article():
    # prc_constitution.pdf: the article's number opens its first sentence only
    law = _chunk("prc_constitution.pdf_13", "第十八条 中华人民共和国允许外国的企业和其他经济组织或者个人依照中华人民共和国法律的规定在中国投资。\n"
                 "第十九条 国家发展社会主义的教育事业，提高全国人民的科学文化水平。\n"
                 "国家举办各种学校，普及初等义务教育，发展中等教育、职业教育和高等教育，并且发展学前教育。\n"
                 "第二十条 国家发展自然科学和社会科学事业，普及科学和技术知识。", "text")
    answer = extractive_answer("根据宪法第十九条，国家普及什么教育？", _context((law, 0.9)), S)
    assert answer.text.startswith("国家举办各种学校，普及初等义务教育")


def test_the_question_words_decide_where_bigrams_tie():
    # both articles share 16 bigrams with the question; only one is about 死亡 (prc_civil_code.pdf chunk 17)
    law = _chunk("civil.pdf_17", "第四十条 自然人下落不明满二年的，利害关系人可以向人民法院申请宣告该自然人为失踪人。\n"
                 "第四十六条 自然人有下列情形之一的，利害关系人可以向人民法院申请宣告该自然人死亡:（一）下落不明满四年；", "text")
    ctx = _context((law, 0.9))
    assert "下落不明满四年" in extractive_answer("自然人下落不明满几年，利害关系人可以申请宣告其死亡？", ctx, S).text


def test_a_sentence_about_non_x_does_not_answer_about_x():
    # prc_civil_code.pdf chunk 83: "非住宅…期限届满后" holds more of the question's words than "住宅…期限届满的"
    law = _chunk("civil.pdf_83", "第三百五十九条 住宅建设用地使用权期限届满的，自动续期。续期费用的缴纳或者减免，依照法律、"
                 "行政法规的规定办理。\n非住宅建设用地使用权期限届满后的续期，依照法律规定办理。", "text")
    ctx = _context((law, 0.9))
    assert "自动续期" in extractive_answer("住宅建设用地使用权期限届满后怎么处理？", ctx, S).text
    assert extractive_answer("非住宅建设用地使用权期限届满后怎么处理？", ctx, S).text.startswith("非住宅")
    assert negated_terms("非住宅建设用地使用权", terms("住宅建设用地")) == {"住宅"}
    assert negated_terms("住宅与非住宅", terms("住宅建设用地")) == frozenset()  # also said without 非


def test_an_item_of_a_list_of_conditions_is_quoted_with_the_sentence_opening_the_list():
    # prc_civil_code.pdf chunk 253: only "…下列条件:" says whose conditions "（五）年满三十周岁" are
    law = _chunk("civil.pdf_253", "第一千零九十八条 收养人应当同时具备下列条件:（一）无子女或者只有一名子女；（二）有抚养、教育和"
                 "保护被收养人的能力；（五）年满三十周岁。第一千一百零二条 无配偶者收养异性子女的，收养人与被收养人的年龄应当相差"
                 "四十周岁以上。", "text")
    units = evidence_units(law)
    assert "第一千零九十八条 收养人应当同时具备下列条件:（五）年满三十周岁。" in units
    assert units[-1].startswith("第一千一百零二条")  # the next article is no item of the list
    assert "年满三十周岁" in extractive_answer("依照民法典，收养人需要年满多少周岁？", _context((law, 0.9)), S).text


def test_a_question_asking_the_heading_of_the_section_that_covers_something_gets_that_heading():
    # multi_page.pdf as landed: the 1980s software is listed under "The Rise of Personal Computers (1980s)"
    rise = _chunk("multi_page.pdf_9", "• Microsoft Word (1983): Microsoft launched Word for MS-DOS in 1983, "
                  "introducing a graphical user interface (GUI) and mouse support.", "text",
                  section_path="The Rise of Personal Computers (1980s)")
    tools = _chunk("multi_page.pdf_19", "• Screenwriting Software: For screenwriters, tools like Final Draft and "
                   "Celtx are specialized to handle scripts for film and television.", "text",
                   section_path="Specialized Word Processing Tools")
    ctx = _context((rise, 0.9), (tools, 0.8))
    answer = extractive_answer("What is the heading of the section of the essay that covers the 1980s, when Microsoft "
                               "Word for MS-DOS appeared?", ctx, S)
    assert answer.text.startswith("The Rise of Personal Computers (1980s)[ref:multi_page.pdf_9]• Microsoft Word")
    answer = extractive_answer("那篇文章中，介绍Final Draft和Celtx等编剧工具的那一节，标题是什么？", ctx, S)
    assert answer.text.startswith("Specialized Word Processing Tools[ref:multi_page.pdf_19]")
    # what it covers may be a long list of names in Latin letters (this one runs 66 characters)
    covered = "Final Draft、Celtx等编剧工具、为film and television处理scripts的specialized软件"
    assert len(covered) > 60
    answer = extractive_answer(f"那篇文章中，讲{covered}的那一节，标题是什么？", ctx, S)
    assert answer.text.startswith("Specialized Word Processing Tools[ref:multi_page.pdf_19]")
    # what the section says, asked, is answered by what it says alone
    assert extractive_answer("When did Microsoft launch Word for MS-DOS?", ctx, S).text.startswith("• Microsoft Word")


def test_a_question_asking_the_row_after_a_named_one_gets_the_next_row_of_the_table():
    # party_union_rules_1page_table.pdf, chunk 3 as landed; the rules' text names the same posts
    table = _chunk("party.pdf_3", "职位 | 人数 | 工作职责\n工会主席 | 1 | 全面负责工会工作\n工会副主席 | 1 | 主持工会日常工作\n"
                   "女工委员 | 1 | 负责女工委全面工作\n经审委员 | 1 | 负责工会经费使用监督审查工作\n组织委员 | 1 | 负责工会组织工作")
    rules = _chunk("party.pdf_0", "第十五条 工会女职工委员会委员候选人应符合以下条件:（二）热心女职工工作。", "text")
    ctx = _context((rules, 0.9), (table, 0.8))
    answer = extractive_answer("那份工会制度表1的工会委员分工中，紧接在工会副主席之后列出的是哪个职位？", ctx, S)
    assert answer.text == "职位 | 人数 | 工作职责：女工委员 | 1 | 负责女工委全面工作[ref:party.pdf_3]"
    answer = extractive_answer("表1列出的工会委员中，排在“经审委员”之后的是哪个职位？", ctx, S)
    assert "组织委员" in answer.text
    answer = extractive_answer("表1中紧挨在工会主席下一行的那个职位，人数是多少？", ctx, S)  # (the row below it)
    assert answer.text == "职位 | 人数 | 工作职责：工会副主席 | 1 | 主持工会日常工作[ref:party.pdf_3]"
    answer = extractive_answer("分工表（表1）中，女工委员下一行列出的是哪个职位？", ctx, S)
    assert answer.text == "职位 | 人数 | 工作职责：经审委员 | 1 | 负责工会经费使用监督审查工作[ref:party.pdf_3]"
    # the last row is followed by none; a question naming no row of a table is answered as before
    assert "组织委员 | 1" not in extractive_answer("紧接在组织委员之后列出的是哪个职位？", ctx, S).text


def test_a_question_asking_what_follows_a_quoted_item_gets_the_next_item():
    # mineru_docx_demo_zh_en_headings_tables_images.docx, chunk 4 as landed: the quoted item holds the question's words
    demo = _chunk("demo.docx_4", "1 有序列表构成的章节标题\n1.1 显式空白字符表示\n1. 和文本在一起的带下划线的空格\n"
                  "2. 单独的带下划线的空格\n3. 单独的带删除线的空格\n4. 带删除线和下划线的空格", "text",
                  section_path="1 有序列表构成的章节标题 > 1.1 显式空白字符表示")
    ctx = _context((demo, 0.9))
    answer = extractive_answer("在MinerU的DOCX演示文档中，“和文本在一起的带下划线的空格”之后列出的下一种空白字符是什么？", ctx, S)
    assert answer.text.startswith("2. 单独的带下划线的空格")
    answer = extractive_answer("Which item of the demo's whitespace list follows '单独的带删除线的空格'?", ctx, S)
    assert answer.text.startswith("4. 带删除线和下划线的空格")


def test_a_question_asking_what_precedes_or_sits_between_items_gets_that_item():
    # unit_test_headers_numbered.docx as landed (chunk 8): the question holds the words of the item it names
    constraints = _chunk("headers.docx_8", "1. Hardware Constraints – Egde Case\n2. Software Constraints\n"
                         "3. Network Constraints\n4. Environmental Constraints\n5. Regulatory Constraints\n"
                         "6. Budget Constraints\n7. Timeline Constraints", "list")
    ctx = _context((constraints, 0.9))
    answer = extractive_answer("In docling's numbered-headers test file, which constraint is listed immediately before "
                               "Budget Constraints?", ctx, S)
    assert answer.text.startswith("5. Regulatory Constraints")
    between = "Which constraint sits between Environmental Constraints and Budget Constraints?"
    assert extractive_answer(between, ctx, S).text.startswith("5. Regulatory Constraints")
    assert extractive_answer("约束清单中紧挨在Network Constraints之前的是哪一项？", ctx, S).text.startswith("2. Software")
    # a range is no pair of items ("between -10℃ and -5℃", a row of the SVOLT step-charge table)
    assert _ASKED_AFTER.search("What charge current is used when the cell is between -10℃ and -5℃?") is None


def test_a_sentence_not_naming_the_table_row_the_question_writes_out_yields_to_that_row():
    # byd_2025q1_quarterly_report.pdf as landed: the top-ten table's header is in the picture of page 3 (its text a
    # run of column names); page 4 goes on with the rows alone. The question names the column as the header does
    picture = _chunk("byd.pdf_14", "前 10 名股东持股情况（不含通过转融通出借股份）\n质押、标记或冻结情况\n"
                     "股东名称      股东性质  持股比例   持股数量   持有有限售条\n件的股份数量\n股份状态   数量\n"
                     "HKSCC NOMINEES LIMITED  境外法人      40.38%   1,227,261,708\n0   不适用        0", "image")
    rows = _chunk("byd.pdf_15", "融捷投资控股集团有限公司 | 境内非国有法人 | 5.11% | 155,149,602 | 0 | 质押 | 13,570,000\n"
                  "夏佐全 | 境内自然人 | 2.72% | 82,635,607（注3） | 61,976,705 | 质押 | 2,715,000\n"
                  "李柯 | 境内自然人 | 0.36% | 10,861,400 | 8,146,050 | 不适用 | 0\n"
                  "注3:此数不包括夏佐全先生及其控股的海外公司SIGN INVESTMENTS LIMITED分别持有的195,000股H股和305,000股H股；")
    ctx = _context((picture, 0.8), (rows, 0.8))
    for name, value in (("Li Ke (李柯)", "8,146,050"), ("Xia Zuoquan (夏佐全)", "61,976,705")):
        answer = extractive_answer(f"BYD's Q1 2025 report lists {name} among its top ten shareholders. How many of "
                                   "the shares carry selling restrictions (持有有限售条件的股份数量)?", ctx, S)
        assert value in answer.text and answer.citations == ["byd.pdf_15"]
    # a sentence naming the row still answers what it says of it
    answer = extractive_answer("注3说明夏佐全的持股数不包括哪家海外公司持有的H股？", ctx, S)
    assert "SIGN INVESTMENTS LIMITED" in answer.text


def test_a_question_asking_a_numbered_figures_title_gets_its_caption_not_a_sentence_citing_it():
    # redp5110_sampled.md as landed: the sentence citing Figure 4-68 ranks first, its caption line is further down
    cites = _chunk("redp.md_61", "Figure 4-68 shows the Visual Explain of the same SQL statement, but with RCAC "
                   "enabled.\nFigure 4-68   Visual Explain with RCAC enabled\n<!-- image -->\n"
                   "Figure 4-69   Index advice", "text")
    # broker_research_report_anonymized.pdf: a figure's caption, and a passage citing the figure before it
    figure = _chunk("broker.pdf_14", "图5:公司营运资金周转（天）", "image", caption="图5:公司营运资金周转（天）")
    before = _chunk("broker.pdf_13", "如图5所示，公司存货周转天数上升。\n图5显示，存货周转天数上升。\n图50的数据另见附表。", "text")
    ctx = _context((cites, 0.9), (before, 0.8), (figure, 0.7))
    answer = extractive_answer("What is the title of Figure 4-68 in the Redpaper?", ctx, S)
    assert answer.text == "Figure 4-68   Visual Explain with RCAC enabled[ref:redp.md_61]"
    assert extractive_answer("那份研报的图5展示的是什么？请给出图题。", ctx, S).text == "图5:公司营运资金周转（天）[ref:broker.pdf_14]"
    # a Chinese question names the English document's figure by 图 ("图4-69，图题是什么？")
    assert extractive_answer("IBM红皮书REDP-5110中的图4-69，图题是什么？", ctx, S).text == \
        "Figure 4-69   Index advice[ref:redp.md_61]"
    # a figure the context holds no caption of is answered from the evidence as before
    other = extractive_answer("那份研报的图6的标题是什么？", ctx, S)
    assert other is None or not other.text.startswith("图5")


def test_an_items_second_clause_leaves_its_list_open_for_the_items_after_it():
    # prc_constitution.pdf chunk 25: item (五) goes on after its "；", then (六)… on the next line are still Art. 62's
    law = _chunk("constitution.pdf_25", "第六十二条 全国人民代表大会行使下列职权:(一)修改宪法；(五)根据中华人民共和国主席的提名，"
                 "决定国务院总理的人选；根据国务院总理的提名，决定国务院副总理的人选；\n(六)选举中央军事委员会主席；"
                 "(十二)批准省、自治区和直辖市的建置；", "text")
    units = evidence_units(law)
    assert "第六十二条 全国人民代表大会行使下列职权: (十二)批准省、自治区和直辖市的建置；" in units
    question = "What is item (12) in the list of powers of the National People's Congress in Article 62?"
    assert "(十二)批准" in extractive_answer(question, _context((law, 0.9)), S).text
    # a sentence after one that ends the list with "。" is no item of it
    closed = _chunk("constitution.pdf_26", "第六十二条 全国人民代表大会行使下列职权:(一)修改宪法。法律由全国人民代表大会通过；"
                    "(二)另一个列表的项。", "text")
    assert "(二)另一个列表的项。" in evidence_units(closed)


def test_a_part_after_a_semicolon_is_said_in_the_setting_of_its_sentences_first_part():
    # broker_research_report_anonymized.pdf chunk 2: "第三季度" is said once, before the first "；"
    report = _chunk("broker.pdf_2", "2024 年以来服装零售整体承压、三季度消费需求愈加疲软，第三季度收入同比-11.0%至38.9 亿元；"
                    "毛利率同比-1.1 百分点至42.8%；除销售费用率外其他费用率较为稳定。在毛利率下滑、销售费用率大幅提升影响下，"
                    "净利润下滑明显，第三季度归母净利润同比64.9%至 2.7 亿元。", "text")
    ctx = _context((report, 0.9))
    # the part itself is quoted, without its setting
    assert extractive_answer("研报里某服装企业第三季度的毛利率是多少？", ctx, S).text.startswith("毛利率同比-1.1 百分点至42.8%")


def test_what_the_question_asks_about_outweighs_its_setting():
    # as many of the question's words each; the words before "是多少" name what is asked
    setting = _chunk("report.pdf_1", "三季度末公司销售承压。", "text")
    asked = _chunk("report.pdf_2", "存货周转天数为346天。", "text")
    ctx = _context((setting, 0.9), (asked, 0.9))
    assert extractive_answer("三季度末公司的存货周转天数是多少天？", ctx, S).citations == ["report.pdf_2"]


def test_a_sentence_opening_with_a_pronoun_is_quoted_with_the_one_naming_its_subject():
    doc = _chunk("multi_page.pdf_8", "WordStar was released in 1978. It featured early examples of modern features like "
                 "cut, copy, and paste. Later editors copied them.", "text")
    ctx = _context((doc, 0.9))
    answer = extractive_answer("Which word processor featured early examples of cut, copy, and paste?", ctx, S)
    assert answer.text.startswith("WordStar was released in 1978. It featured early examples")


def test_a_sentence_with_no_subject_is_quoted_with_the_one_before():
    # ucasthesis_template_guide.pdf, chunk 28
    guide = _chunk("guide.pdf_28", "2.2.7 Biblio 文件夹\n1. ref.bib:参考文献信息库。\n2. gbt7714-xxx.bst:文献样式定义文件。"
                   "由 zepinglee 开发，在最新国标的基础上对 ucas 进行了定制。", "text")
    ctx = _context((guide, 0.9))
    assert "zepinglee" in extractive_answer("ucasthesis模板中gbt7714文献样式文件是由谁开发的？", ctx, S).text


def test_a_condition_after_a_semicolon_is_quoted_with_the_clause_it_continues():
    # prc_civil_code.pdf, chunk 95: "未行使的，" (if not exercised) has its subject, and the period asked, before the ；
    code = _chunk("civil.pdf_95", "第四百一十八条 以集体所有土地的使用权依法抵押的，实现抵押权后，未经法定程序，不得改变土地所有权的"
                  "性质和土地用途。\n第四百一十九条 抵押权人应当在主债权诉讼时效期间行使抵押权；未行使的，人民法院不予保护。", "text")
    answer = extractive_answer("依照民法典，抵押权人应当在什么期间内行使抵押权，否则人民法院不予保护？", _context((code, 0.9)), S)
    assert answer.text.startswith("第四百一十九条 抵押权人应当在主债权诉讼时效期间行使抵押权；未行使的，人民法院不予保护。")


def test_a_line_giving_the_asked_about_label_its_value_answers():
    # byd_2025q1_quarterly_report.pdf: the declaration names the role; the statements' footer gives the person
    declaration = _chunk("byd.pdf_1", "2.公司负责人、主管会计工作负责人及会计机构负责人(会计主管人员)声明:保证季度报告中财务信息的真实、"
                         "准确、完整。", "text")
    footer = _chunk("byd.pdf_21", "法定代表人:王传福 主管会计工作负责人:周亚琳\n会计机构负责人:刘惠\n2、合并利润表", "text")
    ctx = _context((declaration, 0.9), (footer, 0.6))
    assert extractive_answer("比亚迪2025年一季报中的主管会计工作负责人是谁？", ctx, S).citations == ["byd.pdf_21"]
    assert "王传福" in extractive_answer("比亚迪的法定代表人是谁？", ctx, S).text
    # a quoted term asked about is defined by the line "X指…" (nbt_npp_periodic_safety_review_part12_design_draft.docx)
    steps = _chunk("part12.docx_23", "资料收集\n1. 收集核电厂设计资料。\n2. 收集最新安全实践。", "text")
    term = _chunk("part12.docx_24", "最新安全实践指反映当前同类机组最新安全水平的实践或方法；", "text")
    answer = extractive_answer("《核电厂定期安全评价 第12部分：设计》征求意见稿的资料收集环节中，“最新安全实践”指的是什么？",
                               _context((steps, 0.9), (term, 0.6)), S)
    assert answer.text.startswith("最新安全实践指反映当前同类机组")


def test_a_spaced_dot_leader_is_a_table_of_contents_line_and_an_ellipsis_is_not():
    # redp5110_sampled.md: the contents list "2.1.6 Change Function Usage CL command. . . . . . . . 10"
    toc = _chunk("redp.md_3", "2.1.6 Change Function Usage CL command. . . . . . . . . . . . . . . . . . . . . . 10", "text")
    body = _chunk("redp.md_40", "The CHGFCNUSG CL command changes the usage of a function usage ID.", "text")
    ctx = _context((toc, 0.9), (body, 0.5))
    assert extractive_answer("Which CL command changes a function usage ID?", ctx, S).citations == ["redp.md_40"]
    said = _chunk("a.md_0", "他说……这件事要从1990年的那场大雨说起......后来就没有了。", "text")
    ctx = _context((said, 0.9))
    assert "1990" in extractive_answer("这件事要从哪一年的大雨说起？", ctx, S).text


def test_a_contents_table_gives_no_cell():
    # redp5110_sampled.md renders its contents as a table: "2.1.6 Change … CL command. . . . | 10"
    toc = _chunk("redp.md_3", "Contents | \n2.1.5 Function usage. . . . . . . . . . . . . . | 9\n"
                 "2.1.6 Change Function Usage CL command. . . . . . . . . . . . . . . . | 10")
    body = _chunk("redp.md_40", "The CHGFCNUSG CL command changes the usage of a function usage ID.", "text")
    ctx = _context((toc, 0.9), (body, 0.5))
    assert extractive_answer("Which CL command changes a function usage ID?", ctx, S).citations == ["redp.md_40"]


def test_a_sentence_ending_with_a_colon_is_quoted_with_the_line_it_introduces():
    # party_union_rules_1page_table.pdf: the article introduces its conditions with a colon
    rules = _chunk("rules.pdf_0", "第十五条 工会女职工委员会委员候选人应符合以下条件:\n（一）由女性工会主席或副主席担任主任；\n"
                   "（二）热爱工会工作。", "text")
    ctx = _context((rules, 0.9))
    assert "女性工会主席或副主席" in extractive_answer("工会女职工委员会委员候选人应符合什么条件？", ctx, S).text


def test_a_sentence_restating_the_document_the_question_names_does_not_answer_it():
    # nbt_npp_periodic_safety_review_part12_design_draft.docx: the question names the standard by its title,
    # which one sentence of the foreword restates; every chunk of the standard is about it
    restating = _chunk("part12.docx_10", "《核电厂定期安全评价 第12部分：设计》为上述15项标准之一，可为核电厂定期安全审查中"
                       "设计要素的审查工作提供指导。", "text")
    foreword = _chunk("part12.docx_6", "前  言\n《核电厂定期安全评价》分为15个部分：\n——第11部分：设备合格鉴定；\n——第12部分：设计；\n"
                      "本部分为《核电厂定期安全评价》系列标准的第12部分。\n本部分由能源行业核电标准化技术委员会提出。\n"
                      "本部分由中国核电发展中心归口。", "text")
    ctx = _context((restating, 0.9), (foreword, 0.8))
    answer = extractive_answer("《核电厂定期安全评价 第12部分：设计》由哪个单位归口？", ctx, S)
    assert "中国核电发展中心" in answer.text and answer.citations == ["part12.docx_6"]
    # a question that names no document scores the title's words as any others
    assert "第12部分" in extractive_answer("核电厂定期安全评价第12部分的设计要素审查工作", ctx, S).text


def test_the_words_naming_the_document_are_its_scope():
    assert document_scope("《核电厂定期安全评价 第12部分：设计》由哪个单位归口？") == "核电厂定期安全评价 第12部分：设计"
    assert document_scope("比亚迪2025年一季报财务报表上的会计机构负责人是谁？") == "比亚迪2025年一季报财务报表"
    assert document_scope("钛及钛合金牌号和化学成分这项国家标准由哪个标准化技术委员会归口？") == "钛及钛合金牌号和化学成分"
    assert document_scope("In the CC-SAM paper's CIFAR-LT table, what does MiSLAS reach?") == "CC-SAM paper"
    assert document_scope("How many training images does ImageNet-LT have?") == ""
    assert document_scope("我国公民年满多少周岁才有选举权和被选举权？") == ""
    # "这份X…": to its first word for a document, not the fact asked ("一式四份")
    assert document_scope("这份政府采购合同要求合同双方加盖什么章？") == "政府采购合同"
    assert document_scope("这份政府采购合同一式四份，除甲方、乙方外，还有一份给谁？") == "政府采购合同"
    assert document_scope("这份合同的总价是多少？") == "合同"
    # "X指出，…": X says what is asked
    assert document_scope("IBM DB2 for i 行列访问控制（RCAC）红皮书指出，用SQL视图限制数据访问存在挑战，第一个挑战是什么？") == \
        "IBM DB2 for i 行列访问控制（RCAC）红皮书"
    assert document_scope("核电厂定期安全评价第1部分编制说明提到，原标准对要素报告有什么要求？") == "核电厂定期安全评价第1部分编制说明"
    # "X中/里/上，" stops at the first comma: "…之上的" late in the question is what is asked, not where
    assert document_scope("CC-SAM论文相关工作指出，GBP[49]是建立在哪两者之间高度相关这一观察之上的？") == "CC-SAM论文相关工作"
    # an official document's number names it wherever the question writes it
    assert "党委【2017】010号" in scope_parts("Which article of the union rules (党委【2017】010号) lists its duties?")
    assert scope_parts("Which article lists the union's duties?") == []


def test_a_cell_whose_row_the_question_writes_out_gets_a_bonus_as_a_named_column_does():
    # BYD: "支付的各项税费" (cash flow statement; "上年同期" names its "上期发生额") against "筹资活动产生的现金流量
    # 净额" of the changes table, whose "2024年1-3月" column the question names too, its row only in part
    changes = _chunk("byd.pdf_12", "科目名称 | 2025年1-3月 | 2024年1-3月 | 变动率\n"
                     "筹资活动产生的现金流量净额 | 38,000,266,000.00 | -5,183,543,000.00 | 833.09%")
    flows = _chunk("byd.pdf_24", "项目 | 本期发生额 | 上期发生额\n支付给职工以及为职工支付的现金 | 16,523,000.00 | 12,918,000.00\n"
                   "支付的各项税费 | 13,560,344,000.00 | 7,927,455,000.00")
    question = "比亚迪现金流量表中，上年同期（2024年1-3月）支付的各项税费是多少？"
    assert _table_unit(question, flows)[1:4] == ("支付的各项税费 — 上期发生额: 7,927,455,000.00", 2 * CELL_BONUS,
                                                "支付的各项税费")
    # (the words of the statement the question names, "现金流量表", name no row of it: the changes table's
    # "筹资活动产生的现金流量净额" is not asked)
    assert _table_unit(question, changes) is None
    assert _table_unit("比亚迪2024年1-3月的筹资活动现金流量净额是多少？", changes)[1:4] == (
        "筹资活动产生的现金流量净额 — 2024年1-3月: -5,183,543,000.00", CELL_BONUS, "")


def test_a_document_whose_heading_is_the_name_the_question_gives_holds_all_of_that_name():
    # nbt_npp_periodic_safety_review_part1_draft.docx: the part's title is a heading of one chunk; the answer
    # ("每10年左右") never repeats "第1部分：通用要求", the foreword's sentence restating it does
    foreword = _chunk("part1.docx_11", "《核电厂定期安全评价 第1部分：通用要求》为上述15项标准之一，可为核电厂定期安全评价"
                      "策划与准备、评价执行等各阶段的工作提供指导。", "text")
    scope = _chunk("part1.docx_12", "核电厂定期安全评价 第1部分：通用要求\n1.1 范围\n本部分规定了核电厂定期安全评价的策划准备、"
                   "评价执行和报告编制等要求。", "text")
    mode = _chunk("part1.docx_24", "5.3.1 PSR一般工作模式\n核电厂PSR通常每10年左右开展一次，每次持续4年左右时间。", "text")
    team = _chunk("part1.docx_26", "5.4.1 核电厂定期安全评价的责任主体为核电厂营运单位。", "text")
    management = _chunk("part1.docx_29", "5.5.1 定期安全评价是一项涉及核电厂诸多方面的综合性工作。", "text")
    ctx = _context((mode, 0.65), (team, 0.54), (management, 0.44), (scope, 0.34), (foreword, 0.33))
    question = "按《核电厂定期安全评价 第1部分：通用要求》征求意见稿，核电厂PSR通常多久开展一次？"
    assert _subject_terms(question, ctx)["part1.docx"] == terms("核电厂定期安全评价 第1部分：通用要求")
    assert extractive_answer(question, ctx, S).citations == ["part1.docx_24"]
    # without the heading, the words a fifth of its prose holds name it ("第1部分" is in 1 of 4 chunks, not
    # in 1 of 6)
    ctx = _context((mode, 0.65), (team, 0.54), (management, 0.44), (foreword, 0.33))
    subject = _subject_terms(question, ctx)["part1.docx"]
    assert terms("定期安全评价") | terms("第1部分：通用要求") <= subject
    plan = _chunk("part1.docx_30", "5.6.1 核电厂定期安全评价项目应制定总体计划。", "text")
    report = _chunk("part1.docx_40", "6.1 核电厂定期安全评价报告应包括各安全要素的评价结果。", "text")
    ctx = _context((mode, 0.65), (team, 0.54), (management, 0.44), (plan, 0.4), (report, 0.35), (foreword, 0.33))
    subject = _subject_terms(question, ctx)["part1.docx"]
    assert terms("定期安全评价") <= subject and not terms("部分通用要求") & subject
    # a 《title》 only cited in running text names what is asked, not the document: it still picks the sentence
    cited = _chunk("byd.pdf_18", "详见公司于2025年3月12日披露的《关于完成配售H股的公告》（公告编号:2025-011）。", "text")
    cover = _chunk("byd.pdf_0", "证券代码:002594\n证券简称:比亚迪\n公告编号:2025-035", "text")
    ctx = _context((cover, 0.8), (cited, 0.7))
    assert "2025-011" in extractive_answer("比亚迪《关于完成配售H股的公告》的公告编号是多少？", ctx, S).text


def test_the_words_naming_the_document_pick_no_passage_of_it_that_one_of_its_passages_holds():
    # the Redpaper's preface restates "IBM DB2 for i … (RCAC)" and "Redpaper": the words the question names
    # the paper by; one of its two passages holding them is enough to make them the paper's, not the preface's
    masks = _chunk("redp5110.md_44", "A column mask is a database object that manifests a column value access "
                   "control rule for a specific column in a specific table. It uses a CASE expression that "
                   "describes what you see when you access the column. For example, a teller can see only the "
                   "last four digits of a tax identification number.", "text")
    preface = _chunk("redp5110.md_64", "Protect columns by defining column masks\nThis IBM Redpaper publication "
                     "provides information about the IBM i 7.2 feature of IBM DB2 for i Row and Column Access "
                     "Control (RCAC).", "text")
    question = ("In the DB2 for i RCAC Redpaper's explanation of column masks, what example is given of what a "
                "teller can see?")
    answer = extractive_answer(question, _context((masks, 0.8), (preface, 0.7)), S)
    assert answer.text.startswith("For example, a teller can see only the last four digits")


def test_the_paragraph_asked_by_its_place_under_a_heading_the_question_writes_out():
    # unit_test_headers_numbered.docx (its MinerU Markdown): a heading's paragraphs are one chunk's lines
    title = _chunk("headers.md_0", "Test Document", "heading", section_path="Test Document")
    first = _chunk("headers.md_1", "1 Section 1\nParagraph 1.1\nParagraph 1.2", "text", section_path="1 Section 1")
    refs = _chunk("headers.md_8", "REFERENCES\nThis is the first reference.\nThis is the second reference.", "text",
                  section_path="2 Section 2 > REFERENCES")
    ctx = _context((refs, 0.8), (title, 0.7), (first, 0.6))
    answer = extractive_answer("In the numbered-headers unit test document, what does the second entry under "
                               "REFERENCES say?", ctx, S)
    assert answer.text.startswith("This is the second reference.")
    answer = extractive_answer("在那份带编号标题的单元测试文档（Test Document）中，标题“1 Section 1”下的第二段文字是什么？", ctx, S)
    assert answer.text.startswith("Paragraph 1.2")
    # the document's title is a heading with no lines under it; "the last" is the last line
    assert _heading_written("What is the first paragraph of the Test Document?", ctx) == ""
    assert _line_at(refs, LAST) == "This is the second reference." and _line_at(refs, 3) == ""


def test_an_item_asked_by_its_place_in_a_clause_listing_it_is_answered_by_that_sentence():
    # nbt_npp_psr_part1_drafting_notes.docx: the plants surveyed are one clause's "、" list; part 12's list of
    # systems, one numbered line each, holds the "7." the ordinal would otherwise pick
    notes = _chunk("notes.docx_6", "三、调研和分析工作的情况\n在项目申报期间和讨论稿编写过程中，调研了大亚湾核电厂、阳江核电厂、"
                   "红沿河核电厂、宁德核电厂、防城港核电厂、福清核电厂、秦山核电厂、田湾核电厂等单位的PSR执行情况，了解了原标准在"
                   "执行中遇到的问题，以及各单位在PSR开展过程中摸索出来的良好实践。具体如下：\n标准执行中遇到的问题：\n"
                   "- 标准内容过于简单，指导性不够；", "text", section_path="三、调研和分析工作的情况")
    systems = _chunk("part12.docx_17", "5.2.1 评价范围\n设计要素的评价范围为安全重要物项。压水堆核电厂常见的安全重要SSCs通常"
                     "包括（不限于）：\n1. 反应堆及反应堆冷却剂系统；\n2. 一回路辅助系统；\n3. 专设安全设施；\n4. 辅助冷却水系统；\n"
                     "5. 二回路相关系统；\n6. 放射性废物处理与流出物排放系统；\n7. 消防系统；\n8. 核安全相关的堆芯、核燃料装卸贮存"
                     "系统；", "text", section_path="5 总则 > 5.2 评价内容 > 5.2.1 评价范围")
    ctx = _context((systems, 0.7), (notes, 0.6))
    for ordinal, plant in (("seventh", "秦山核电厂"), ("second", "阳江核电厂"), ("last", "田湾核电厂")):
        answer = extractive_answer(f"In the drafting notes (编制说明) for Part 1 of the NB/T nuclear power plant periodic "
                                   f"safety review standard, which nuclear power plant is listed {ordinal} among the "
                                   "plants whose PSR practice was surveyed?", ctx, S)
        assert plant in answer.text and answer.citations == ["notes.docx_6"]
    # "the first periodic safety review" is the first of a kind: a clause listing three drafters holds nothing asked
    drafters = "本部分起草单位：大亚湾核电运营管理有限责任公司、苏州热工研究院有限公司、生态环境部核与辐射安全中心"
    assert not _enumerates(drafters, 1) and _enumerates(drafters, 3) and not _enumerates(drafters, 4)


def test_a_word_naming_a_document_is_the_document_holding_it_most_and_an_article_is_no_name():
    # "根据宪法第四十九条": 宪法 names the Constitution, whose every passage says it, not the Civil Code, one of whose
    # passages cites it; the article named is where the answer is, so it still picks the sentence
    constitution = [_chunk(f"constitution.pdf_{i}", text, "text", section_path="第二章 公民的基本权利和义务")
                    for i, text in enumerate((
        "第四十八条 中华人民共和国妇女在政治的、经济的、文化的、社会的和家庭的生活等各方面享有同男子平等的权利。宪法规定的权利受保护。",
        "第四十九条 婚姻、家庭、母亲和儿童受国家的保护。父母有抚养教育未成年子女的义务，成年子女有赡养扶助父母的义务。"
        "本条依照宪法。"), 20)]
    code = [_chunk(f"civil_code.pdf_{i}", text, "text", section_path="第一编 总则") for i, text in enumerate((
        "第一条 为了保护民事主体的合法权益，调整民事关系，维护社会和经济秩序，适应中国特色社会主义发展要求，弘扬社会主义"
        "核心价值观，根据宪法，制定本法。",
        "第二十六条 父母对未成年子女负有抚养、教育和保护的义务。\n成年子女对父母负有赡养、扶助和保护的义务。",
        "第二十七条 父母是未成年子女的监护人。未成年人的父母已经死亡或者没有监护能力的，由下列有监护能力的人按顺序担任监护人。",
        "第二十八条 无民事行为能力或者限制民事行为能力的成年人，由下列有监护能力的人按顺序担任监护人。"), 10)]
    ctx = _context(*((c, 0.5) for c in code + constitution))
    question = "根据宪法第四十九条，成年子女对父母负有什么义务？"
    subjects = _subject_terms(question, ctx)
    assert "宪法" in subjects["constitution.pdf"] and "宪法" not in subjects["civil_code.pdf"]
    assert not terms("第四十九条") & subjects["constitution.pdf"]
    assert "赡养扶助父母" in extractive_answer(question, ctx, S).text


def test_a_question_asking_the_documents_own_title_is_answered_by_its_cover():
    # word_sample.docx: a first line under no heading is its title; a Word heading 1 the sections are under is
    # another document's (unit_test_headers_numbered.docx: "Test Document")
    title = _chunk("word_sample.docx_0", "Summer activities", "text")
    lake = _chunk("word_sample.docx_1", "Swimming in the lake\nDuck", "text", section_path="Swimming in the lake")
    eat = _chunk("word_sample.docx_4", "Let’s eat\nAfter we had a good day of swimming in the lake, it’s important "
                 "to eat something nice", "text", section_path="Swimming in the lake > Let’s eat")
    ctx = build_context([Candidate(c.chunk_id, s, chunk=c) for c, s in ((eat, 0.8), (lake, 0.8), (title, 0.8))], S)
    question = "What is the overall title of the duck-themed Word sample document about swimming in the lake?"
    assert extractive_answer(question, ctx, S).text == "Summer activities[ref:word_sample.docx_0]"
    assert extractive_answer("那份鸭子Word示例文档最上方的标题是什么？", ctx, S).citations == ["word_sample.docx_0"]
    headed = [_chunk("unit_test.docx_1", "1 Section 1\nParagraph 1.1\nParagraph 1.2", "text",
                     section_path="Test Document > 1 Section 1")]
    ctx = build_context([Candidate(c.chunk_id, 0.7, chunk=c) for c in headed], S)
    assert extractive_answer("What is the top-level title of the unit test document?", ctx, S).text == \
        "Test Document[ref:unit_test.docx_1]"
    # a section's title, a chapter's, is no document's
    assert not any(ASKS_DOCUMENT_TITLE.search(q) for q in ("What is the title of section 1 of the unit test document?",
                                                           "What is the title of the first section heading?",
                                                           "目录中第3.6节的标题是什么？"))


def test_a_question_asking_a_charts_caption_is_answered_by_the_caption_of_the_chart_its_cells_name():
    # procurement_contract_headings_table_images.docx: two charts, captioned "图表 1" and "图表 2"; a demo document's
    # copy of the second is captioned in English, its caption holding the word "chart" the question asks with
    rows = "\n".join(f"Category {n} | {a} | {b} | {c}" for n, a, b, c in ((5, 4.3, 2.4, 2), (6, 2.5, 4.4, 2)))
    first = _chunk("procurement.docx_8", "图表 1\n | Series 4 | Series 5 | Series 8\n | 4.3 | 2.4 | 2", "chart",
                   caption="图表 1")
    second = _chunk("procurement.docx_9", f"图表 2\n | Series 7 | Series 5 | Series 6\n{rows}", "chart", caption="图表 2")
    copy = _chunk("demo.docx_67", f"Chart 1: This is an easy line chart\n | Series 7 | Series 5 | Series 6\n{rows}",
                  "chart", caption="Chart 1: This is an easy line chart")
    ctx = _context((copy, 0.9), (first, 0.8), (second, 0.8))
    question = ("In the government procurement contract sample document, what is the caption of the chart that plots "
                "Series 7, Series 5 and Series 6 against Category 5 to Category 8?")
    assert extractive_answer(question, ctx, S).text == "图表 2[ref:procurement.docx_9]"
    # a question not asking the caption is answered by a cell
    assert "4.3" in extractive_answer("In the procurement contract document's chart, what is Category 5's value for "
                                      "Series 7?", ctx, S).text
    # nor is one quoting a section named by the word ("section 2.2.2 'Table with caption'", "“Table with caption”")
    grid = _chunk("demo.docx_65", "1 | a | b | v | d | er | f\n2 | u |  | 9 |  |  | \n3 | pp | 8 |  | k |  | q",
                  caption="Table 1: This is an easy table", section_path="2.2 Table/Figure/Chart with caption > "
                  "2.2.2\tTable with caption")
    for question in ("In the MinerU DOCX demo's section 2.2.2 'Table with caption', what is in the second column of "
                     "the row that starts with 3?", "MinerU DOCX演示文档2.2.2节“Table with caption”表格中，以3开头的那一行"
                     "第二列的内容是什么？"):
        assert extractive_answer(question, _context((grid, 0.8)), S).text.startswith("3 — pp"), question


def test_a_chinese_question_about_what_a_tables_caption_says_is_answered_by_the_caption():
    # the CC-SAM paper (MinerU 3.4.4), Table 4's caption as landed; "表4的标题说明" asks it as "the caption of Table 4"
    caption = ("Table 4. Open long-tail performance of top-1 accuracy on ImageNet-LT and Places-LT. F-measure is a "
               "balanced treatment of precision and recall. The backbone of CC-SAM is ResNet-50 for ImageNet-LT, while "
               "other compared methods are equipped with ResNet-10.")
    table = _chunk("ccsam.md_77", " | ImageNet-LT | ImageNet-LT\nMethod | Many | F-measure\nOLTR [32] | 41.9 | 0.474\n"
                   "CC-SAM | 61.4 | 0.552", caption=caption)
    answer = extractive_answer("CC-SAM论文表4的标题说明中，F-measure被描述为对哪两个指标的平衡处理？", _context((table, 0.9)), S)
    assert "precision and recall" in answer.text and answer.citations == ["ccsam.md_77"]


def test_an_item_labelled_by_part_of_what_is_asked_answers_it():
    # the Civil Code's article 1127: "第二顺序:" labels the heirs of "第二顺序继承人包括哪些人"
    article = _chunk("civil.pdf_248", "第一千一百二十七条 遗产按照下列顺序继承:（一）第一顺序:配偶、子女、父母；（二）第二顺序:兄弟姐妹、"
                     "祖父母、外祖父母。继承开始后，由第一顺序继承人继承，第二顺序继承人不继承；没有第一顺序继承人继承的，由第二顺序继承人继承。",
                     "text")
    answer = extractive_answer("依照民法典，法定继承中的第二顺序继承人包括哪些人？", _context((article, 0.9)), S)
    assert "兄弟姐妹、祖父母、外祖父母" in answer.text


def test_a_sentence_stating_only_what_the_question_sets_aside_is_not_its_answer():
    # the Constitution's article 33, as the docs corpus's PDF states it
    article = _chunk("constitution.pdf_16", "第三十三条 凡具有中华人民共和国国籍的人都是中华人民共和国公民。中华人民共和国公民在法律面前"
                     "一律平等。国家尊重和保障人权。任何公民享有宪法和法律规定的权利，同时必须履行宪法和法律规定的义务。", "text")
    ctx = _context((article, 0.9))
    question = ("Under Article 33 of the PRC Constitution, besides declaring all citizens equal before the law, what "
                "does the state respect and safeguard?")
    assert extractive_answer(question, ctx, S).text == "国家尊重和保障人权。[ref:constitution.pdf_16]"
    assert "一律平等" in extractive_answer("宪法第三十三条规定公民在法律面前怎样？", ctx, S).text


def test_the_chinese_term_an_english_question_gives_in_brackets_names_its_unit(tmp_path):
    # the PSR Part 1 draft's first chunks as MinerU lands them: the naming phrase's glosses (定期 安全 评价 核电厂)
    # match sentence after sentence; the asker's own word, 人因, is what the question is about
    from schemas.settings import load_settings
    from tests.test_golden import chunks_of

    chunks = chunks_of("nbt_npp_psr_part1_custom_headings", load_settings(tmp_path))[:20]
    question = ("In the draft NB/T standard 'Periodic safety review for nuclear power plants — Part 1: General "
                "Requirements', which safety-factor code is assigned to human factors (人因)?")
    answer = extractive_answer(question, _context(*[(c, 0.9 - 0.01 * i) for i, c in enumerate(chunks)]), S)
    assert "人因" in answer.text


def test_what_follows_the_sentence_set_aside_answers():
    # the Constitution's article 125 states the rule set aside, then the right asked
    trials = _chunk("prc_constitution.pdf_47", "第一百二十五条 人民法院审理案件，除法律规定的特别情况外，一律公开进行。"
                    "被告人有权获得辩护。", "text")
    question = ("Under Article 125 of the PRC Constitution, besides the rule that trials are held in public, what "
                "right does the accused have? Give the Chinese wording.")
    answer = extractive_answer(question, _context((trials, 0.9)), S)
    assert answer.text.startswith("第一百二十五条 人民法院审理案件") and "被告人有权获得辩护。" in answer.text


def test_a_best_sentence_the_question_restates_is_quoted_with_the_sentence_after_it():
    # the Civil Code's article 368: the question builds on its second sentence and asks what the third says
    article = _chunk("civil.pdf_83", "第三百六十八条 居住权无偿设立，但是当事人另有约定的除外。设立居住权的，应当向登记机构申请"
                     "居住权登记。居住权自登记时设立。", "text")
    ctx = _context((article, 0.9))
    answer = extractive_answer("民法典规定，设立居住权应当向登记机构申请居住权登记，居住权自什么时候设立？", ctx, S)
    assert answer.text.endswith("居住权自登记时设立。[ref:civil.pdf_83]")
    # the article's number is no word beside the question's (the Constitution's article 109)
    audit = _chunk("constitution.pdf_42", "第一百零九条 县级以上的地方各级人民政府设立审计机关。地方各级审计机关依照法律规定独立行使"
                   "审计监督权，对本级人民政府和上一级审计机关负责。", "text")
    answer = extractive_answer("县级以上地方各级人民政府设立的审计机关对谁负责？", _context((audit, 0.9)), S)
    assert "对本级人民政府和上一级审计机关负责" in answer.text
    # a best sentence saying more than the question is its answer alone
    terms_ = _chunk("constitution.pdf_36", "第八十七条 总理、副总理、国务委员连续任职不得超过两届。第八十八条 总理领导国务院的工作。",
                    "text")
    answer = extractive_answer("宪法规定总理连续任职不得超过几届？", _context((terms_, 0.9)), S)
    assert "两届" in answer.text and "第八十八条" not in answer.text


def test_the_sentence_after_the_best_holding_question_terms_it_lacks_is_quoted_with_it():
    # the Civil Code's article 245 as the PDF reads: the first sentence states the question's premise (the taking), the
    # second what is done after use, which the question asks by the words 使用后 and 应当
    article = _chunk("civil.pdf_56", "第二百四十五条 因抢险救灾、疫情防控等紧急需要，依照法律规定的权限和程序可以征用组织、个人的"
                     "不动产或者动产。被征用的不动产或者动产使用后，应当返还被征用人。组织、个人的不动产或者动产被征用或者征用后"
                     "毁损、灭失的，应当给予补偿。", "text")
    question = "民法典规定，因抢险救灾、疫情防控等紧急需要征用的不动产或者动产，使用后应当怎么处理？"
    answer = extractive_answer(question, _context((article, 0.9)), S)
    assert "应当返还被征用人。[ref:civil.pdf_56]" in answer.text
    # a next sentence opening another article says something else, whatever question terms it holds (赠与, 撤销)
    gift = _chunk("civil.pdf_147", "第六百六十四条 因受赠人的违法行为致使赠与人死亡或者丧失民事行为能力的，赠与人的继承人或者法定"
                  "代理人可以撤销赠与。赠与人的继承人或者法定代理人的撤销权，自知道或者应当知道撤销事由之日起六个月内行使。"
                  "第六百六十五条 撤销权人撤销赠与的，可以向受赠人请求返还赠与的财产。", "text")
    question = ("根据民法典，因受赠人的违法行为致使赠与人死亡的，赠与人的继承人撤销赠与的权利应自知道或者应当知道撤销事由之日起"
                "多长时间内行使？")
    answer = extractive_answer(question, _context((gift, 0.9)), S)
    assert "六个月内行使" in answer.text and "第六百六十五条" not in answer.text


def test_a_numbered_item_after_a_semicolon_is_not_said_in_the_item_before_it():
    # nbt_npp_periodic_safety_review_part1_draft.docx, chunk 30: the items of "PSR项目管理文件…具体内容为：", each
    # ending "；" — the second no more holds the first one's 人员培训 than the first holds the second one's 文件
    items = _chunk("nbt_part1.docx_30", "1. 人员管理程序对人员培训、授权、现场检查管理、绩效考核等作出规定；\n"
                   "2. 文件和记录控制程序对PSR文件和记录的种类、编码、内容、格式、编审批控制等作出规定；\n"
                   "3. 进度控制程序对PSR进度计划的编制、执行和跟踪作出规定；\n"
                   "4. 会议制度对PSR实施期间各类会议的内容、组织、会议行动、会后跟踪等作出规定。", "text")
    answer = extractive_answer("哪个程序对PSR人员的培训、授权和绩效考核作出规定？", _context((items, 0.9)), S)
    assert answer.text.startswith("1. 人员管理程序")


def test_a_sentence_opening_with_the_paragraph_before_it_is_quoted_with_that_paragraph():
    # the Civil Code's article 430 as the PDF reads: "前款" is the sentence before, which names whose fruits they are
    article = _chunk("civil.pdf_99", "第四百三十条 质权人有权收取质押财产的孳息，但是合同另有约定的除外。\n前款规定的孳息应当先充抵收取"
                     "孳息的费用。\n第四百三十一条 质权人在质权存续期间，未经出质人同意，擅自使用、处分质押财产，造成出质人损失的，"
                     "应当承担赔偿责任。", "text")
    units = evidence_units(article)
    assert "第四百三十条 质权人有权收取质押财产的孳息，但是合同另有约定的除外。前款规定的孳息应当先充抵收取孳息的费用。" in units
    answer = extractive_answer("质权人收取的质押财产孳息应当先用于充抵什么？", _context((article, 0.9)), S)
    assert "先充抵收取孳息的费用" in answer.text


def test_a_line_item_glossed_whole_names_its_row_over_one_holding_its_words_apart():
    # the broker report's forecast balance sheet: "balance sheet" glosses to 资产负债表, whose 资产 the current-assets
    # row holds beside 流动 and 合计; the current-liabilities row holds 流动负债 as "current liabilities" glosses it
    sheet = _chunk("broker.pdf_24", "资产负债表（百万元） | 2022 | 2023\n流动资产合计 | 24563 | 27013\n"
                   "流动负债合计 | 14186 | 15622\n负债合计 | 14562 | 16008")
    ctx = _context((sheet, 0.8))
    answer = extractive_answer("What total current liabilities does the forecast balance sheet show for 2022?", ctx, S)
    assert answer.text == "流动负债合计 — 2022: 14186[ref:broker.pdf_24]"


def test_a_chinese_unit_is_also_read_by_what_its_words_say_in_english():
    # prc_constitution.pdf as landed: the question's glosses of "responsibility" (职责, 责任) are the other article's;
    # 负责 (of 负责制) is "responsible; responsibility" in CC-CEDICT, read forwards
    duty = _chunk("constitution.pdf_9", "全国各族人民、一切国家机关和武装力量、各政党和各社会团体、各企业事业组织，都必须以宪法为根本的"
                  "活动准则，并且负有维护宪法尊严、保证宪法实施的职责。", "text")
    heads = _chunk("constitution.pdf_42", "第一百零五条 地方各级人民政府是地方各级国家权力机关的执行机关，是地方各级国家行政机关。"
                   "地方各级人民政府实行省长、市长、县长、区长、乡长、镇长负责制。", "text")
    question = ("Under the PRC Constitution, what responsibility system do local people's governments at all levels "
                "practise?")
    answer = extractive_answer(question, _context((duty, 0.9), (heads, 0.8)), S)
    assert answer.text.startswith("地方各级人民政府实行省长") and answer.citations == ["constitution.pdf_42"]


def test_an_english_unit_is_also_read_by_what_its_words_say_in_chinese():
    # redp5110_sampled.md as landed: the abstract (ranked first, naming the document) and the breach study's
    # sentence, whose words the question's words translate to (平均 "average", 记录 "record", 敏感 "sensitive") and
    # which CC-CEDICT read backwards translates to the question's words again: a translation both ways
    abstract = _chunk("redp.md_1", "This IBM Redpaper publication provides information about the IBM i 7.2 feature of "
                      "IBM DB2 for i Row and Column Access Control (RCAC).", "text")
    study = _chunk("redp.md_13", "The average cost that is incurred for each lost record containing sensitive "
                   "information increased more than 9% to $145 per record.", "text")
    question = "IBM关于DB2 for i行列访问控制（RCAC）的红皮书提到，每条含敏感信息的丢失记录所产生的平均成本上升了多少？"
    answer = extractive_answer(question, _context((abstract, 0.9), (study, 0.6)), S)
    assert answer.citations[0] == "redp.md_13" and "more than 9%" in answer.text


def test_an_item_is_quoted_with_the_line_opening_its_list_chunks_before():
    # prc_constitution.pdf as landed: chunk 27 opens the Standing Committee's powers, chunk 28 goes on with the
    # rest of item (五), chunk 30's "(二十)" names no body: the opening line, three chunks back, does
    opener = _chunk("constitution.pdf_27", "委员长、副委员长连续任职不得超过两届。第六十七条 全国人民代表大会常务委员会行使下列职权:"
                    "(一)解释宪法，监督宪法的实施；(五)审查和批准国民经济和社会发展计划、", "text")
    rest = _chunk("constitution.pdf_28", "国家预算在执行过程中所必须作的部分调整方案；(六)监督国务院的工作；", "text")
    more = _chunk("constitution.pdf_29", "(十三)决定驻外全权代表的任免；", "text")
    item = _chunk("constitution.pdf_30", "(十九)决定全国总动员或者局部动员；(二十)决定全国或者个别省、自治区、直辖市进入紧急状态；",
                  "text")
    council = _chunk("constitution.pdf_38", "第八十九条 国务院行使下列职权:(十六)依照法律规定决定省、自治区、直辖市的范围内部分地区"
                     "进入紧急状态；", "text")
    question = "根据宪法，决定全国或者个别省、自治区、直辖市进入紧急状态的是哪个机关？"
    ctx = _context((council, 0.9), (opener, 0.5), (rest, 0.6), (more, 0.3), (item, 0.5))
    assert extractive_answer(question, ctx, S).text.startswith("第六十七条 全国人民代表大会常务委员会行使下列职权: (二十)决定全国")
    # with a chunk of the list missing from the context, nothing says whose the item is
    gap = _context((council, 0.9), (opener, 0.5), (rest, 0.6), (item, 0.5))
    assert extractive_answer(question, gap, S).text.startswith("(二十)决定全国")


def test_a_sentence_in_the_other_language_is_also_read_by_its_embeddings_cosine(tmp_path_factory):
    # prc_civil_code.pdf as landed: CC-CEDICT reads "no children" into 无子女 of article 1098's first condition
    # as much as into article 1100; the model reads 1100 whole as the question's meaning (e5, the default model)
    from tests.tasks.index.test_e5_convert import shared_embedder

    adoption = _chunk("civil_code.pdf_240", "第一千零九十八条 收养人应当同时具备下列条件:（一）无子女或者只有一名子女；（二）有抚养、"
                      "教育和保护被收养人的能力；（五）年满三十周岁。第一千一百条 无子女的收养人可以收养两名子女；有子女的收养人只能收养一名子女。",
                      "text")
    ctx = _context((adoption, 0.9))
    question = "Under the PRC Civil Code, how many children may an adopter who has no children adopt?"
    embedder = shared_embedder(tmp_path_factory)
    answered = Answerer(S, encoder=lambda: embedder).answer(question, ctx)
    assert answered.text.startswith("第一千一百条 无子女的收养人可以收养两名子女") and answered.mode == EXTRACTIVE
    # the same scorer without the model (or with its weight 0) quotes the first condition
    assert "两名子女" not in extractive_answer(question, ctx, S).text
    off = replace(S, answer=replace(S.answer, extractive_similarity_weight=0.0))
    assert "两名子女" not in Answerer(off, encoder=lambda: embedder).answer(question, ctx).text


def test_an_answer_is_scored_by_its_words_when_the_embedding_model_cannot_load(caplog):
    def no_model():
        raise FileNotFoundError("no model here")

    answerer = Answerer(S, encoder=no_model)
    question = "Under the PRC Civil Code, how many children may an adopter who has no children adopt?"
    ctx = _context((_chunk("civil_code.pdf_240", "第一千一百条 无子女的收养人可以收养两名子女；有子女的收养人只能收养一名子女。", "text"), 0.9))
    with caplog.at_level("WARNING", logger="kbflow.qa"):
        first, second = answerer.answer(question, ctx), answerer.answer(question, ctx)
    assert first.text.startswith("第一千一百条") and first.text == second.text
    assert [r.message for r in caplog.records].count(
        "offline answers scored without sentence embeddings: FileNotFoundError: no model here") == 1


def test_only_the_sentences_near_the_best_are_encoded():
    # a sentence scoring RELATED_SPAN below the best unit cannot become the answer whatever its cosine: never encoded
    asked = []

    def similarity(question, texts):
        asked.extend(texts)
        return np.ones(len(texts), dtype=np.float32)

    code = _chunk("civil_code.pdf_240", "第一千一百条 无子女的收养人可以收养两名子女；有子女的收养人只能收养一名子女。\n"
                  "第一千一百零五条 收养应当向县级以上人民政府民政部门登记。\n收养关系自登记之日起成立。", "text")
    question = "Under the PRC Civil Code, how many children may an adopter who has no children adopt?"
    answer = extractive_answer(question, _context((code, 0.9)), S, similarity)
    # scores 0.413 (the first two), 0.335, 0.302: the last is more than RELATED_SPAN behind
    assert answer.text.startswith("第一千一百条 无子女的收养人可以收养两名子女")
    assert "第一千一百条 无子女的收养人可以收养两名子女；" in asked and "收养关系自登记之日起成立。" not in asked


# prc_civil_code.pdf as landed: chunk 53 (ranked first) holds 第二百三十四条, whose number holds 二百三十 too
CODE_52 = ("第三节 其他规定\n第二百二十九条 因人民法院、仲裁机构的法律文书或者人民政府的征收决定等，导致物权设立、变更、转让或者消灭的，"
           "自法律文书或者征收决定等生效时发生效力。\n第二百三十条 因继承取得物权的，自继承开始时发生效力。第二百三十一条 因合法建造、"
           "拆除房屋等事实行为设立或者消灭物权的，自事实行为成就时发生效力。")
CODE_53 = ("第三章 物权的保护\n第二百三十三条 物权受到侵害的，权利人可以通过和解、\n调解、仲裁、诉讼等途径解决。第二百三十四条 因物权的"
           "归属、内容发生争议的，利害关系人可以请求确认权利。第二百三十五条 无权占有不动产或者动产的，权利人可以请求返还原物。")


@pytest.mark.parametrize("share, expected", [(None, "第二百三十条"), (1.0, "第二百三十四条")])
def test_a_sentence_of_another_article_than_the_one_named_is_a_weaker_answer(monkeypatch, share, expected):
    if share is not None:  # without the rule the neighbouring article wins
        monkeypatch.setattr("tasks.qa.answer.OTHER_ARTICLE_SHARE", share)
    # the dictionary's glosses alone: the law's "real right" (物权) and "inheritance" (继承) lead article 230 without it
    monkeypatch.setattr("tasks.qa.gloss.LAW_TERMS", {})
    ctx = _context((_chunk("prc_civil_code.pdf_53", CODE_53, "text"), 0.9),
                   (_chunk("prc_civil_code.pdf_52", CODE_52, "text"), 0.3))
    question = "Under Article 230 of the PRC Civil Code, from when does a real right acquired through inheritance " \
               "take effect?"
    assert extractive_answer(question, ctx, S.replace(extractive_max_sentences=1)).text.startswith(expected)


@pytest.mark.parametrize("share, expected", [(None, "Table 2.1 This is a sample table."), (1.0, "表 2.1 这是一个样表。")])
def test_a_name_asked_in_english_is_answered_by_the_english_line(monkeypatch, share, expected):
    if share is not None:  # without the rule the Chinese line restating the question wins
        monkeypatch.setattr("tasks.qa.answer.OTHER_SCRIPT_SHARE", share)
    # ucasthesis_template_guide.pdf as landed (chunk 31): the bilingual caption of Table 2.1
    guide = _chunk("ucasthesis.pdf_31", "2.3.3 表格请见表 2.1。\n表 2.1 这是一个样表。\nTable 2.1 This is a sample table.\n行号\n"
                   "跨多列的标题\nRow 1 1 2 3 4 5 6 7 8", "text")
    answer = extractive_answer("ucasthesis模板使用说明中的表2.1（这是一个样表）英文标题是什么？", _context((guide, 0.7)),
                               S.replace(extractive_max_sentences=1))
    assert answer.text.startswith(expected)


def test_a_bullet_list_opened_with_its_first_item_answers_with_the_item_asked():
    # ucasthesis_template_guide.pdf as landed (chunk 26): the line opening the list is quoted with its first
    # item and holds most of the question's words; the item asked follows
    tex = _chunk("ucasthesis.pdf_26", "2.2.5 Tex 文件夹\n文件夹内为论文的所有实体内容，注:所有文件都必须采用 UTF-8 编码，"
                 "详细分类介绍如下:\n• Frontinfo.tex:为论文中英文封面信息。论文封面会根据英文学位名称自动切换为相应的格式。\n"
                 "• Frontmatter.tex:为论文前言内容如中英文摘要等。\n• Appendix.tex:为附录内容。\n"
                 "• Backmatter.tex:为发表文章信息和致谢部分等。", "text", section_path="2.2.5 Tex 文件夹")
    answer = extractive_answer("按ucasthesis使用说明，Tex文件夹里存放附录内容的是哪个文件？", _context((tex, 0.7)), S)
    assert answer.text.startswith("文件夹内为论文的所有实体内容") and "• Appendix.tex:为附录内容。" in answer.text


@pytest.mark.parametrize("bonus, written", [(None, True), (0.0, False)])
def test_a_short_line_writing_out_the_code_asked_labels_it(monkeypatch, bonus, written):
    if bonus is not None:  # without the rule the item with more of the question's words, "SF5", is quoted
        monkeypatch.setattr("tasks.qa.answer.CODE_BONUS", bonus)
    # nbt_npp_periodic_safety_review_part1_draft.docx as landed (chunk 16): "SF14" is no "SF4"; the opening line is
    # quoted with its first item and adds the item asked
    factors = _chunk("psr_part1.docx_16", "5.1.1 一般而言，核电厂定期安全评价的范围应包括以下14个安全要素：\n1. 核电厂设计（SF1）\n"
                     "2. 构筑物、系统和部件的实际状态（SF2）\n3. 设备合格鉴定（SF3）\n4. 老化（SF4）\n5. 确定论安全分析（SF5）\n"
                     "14. 辐射环境影响（SF14）", "text", section_path="1.5 定期安全评价的策划和准备 > 1.5.1 确定评价范围和内容")
    question = "Among the 14 safety factors of the periodic safety review, which factor carries the code SF4?"
    answer = extractive_answer(question, _context((factors, 0.8)), S.replace(extractive_max_sentences=1))
    assert answer.text.startswith("5.1.1 一般而言") and ("4. 老化（SF4）" in answer.text) is written


def test_a_clause_after_a_semicolon_is_read_in_its_first_clauses_setting_in_the_other_language_too():
    # prc_civil_code.pdf as landed (chunk 277): "unless it can prove" is said by the clause after "；", whose setting
    # (the zoo, its animals, tort liability) the English question's words mean too
    zoo = _chunk("prc_civil_code.pdf_277", "第一千二百四十七条 禁止饲养的烈性犬等危险动物造成他人损害的，动物饲养人或者管理人应当承担侵权责任。\n"
                 "第一千二百四十八条 动物园的动物造成他人损害的，动物园应当承担侵权责任；但是，能够证明尽到管理职责的，不承担侵权责任。\n"
                 "第一千二百四十九条 遗弃、逃逸的动物在遗弃、逃逸期间造成他人损害的，由动物原饲养人或者管理人承担侵权责任。", "text")
    question = "Under the PRC Civil Code, a zoo bears tort liability when its animals injure someone, unless it can " \
               "prove what?"
    assert extractive_answer(question, _context((zoo, 0.8)), S).text.startswith("但是，能够证明尽到管理职责的")


def test_a_bullet_asked_by_its_place_is_counted_in_its_list():
    # mineru_docx_demo_zh_en_headings_tables_images.docx as landed (chunk 6): a list whose bullets number nothing
    bullets = _chunk("demo.docx_6", "1.3 多级列表\n- Italic bullet 1\n- Bold bullet 2\n- Underline bullet 3\n"
                     "- Strikethrough bullet 4\n- Some italic bold underline strikethrough\n- Nested italic bold",
                     "text", section_path="1 有序列表构成的章节标题 > 1.3 多级列表")
    # (the fifth holds one of the question's words: its list says what it is)
    for place, expected in (("fourth", "- Strikethrough bullet 4"), ("fifth", "- Some italic bold underline")):
        question = f"In the MinerU DOCX demo, what is the {place} bullet of the multi-level list with italic text?"
        answer = extractive_answer(question, _context((bullets, 0.8)), S.replace(extractive_max_sentences=1))
        assert answer.text.startswith(expected)
    # an item asked by its place is kept below the floor of the question's terms a unit must hold
    strict = S.replace(extractive_max_sentences=1, extractive_min_overlap=0.5)
    question = "In the MinerU DOCX demo, what is the fifth bullet of the multi-level list with italic text?"
    assert extractive_answer(question, _context((bullets, 0.8)), strict).text.startswith("- Some italic bold underline")



def test_an_item_asked_by_its_place_is_said_under_its_sections_heading():
    # mineru_docx_demo_zh_en_headings_tables_images.docx as landed (chunks 4 and 6): the items hold none of the
    # question's words; the heading of their section does, in the other language too ("explicit whitespace")
    numbered = _chunk("demo.docx_4", "1 有序列表构成的章节标题\n1.1 显式空白字符表示\n1. 和文本在一起的带下划线的空格\n"
                      "2. 单独的带下划线的空格\n3. 单独的带删除线的空格\n4. 带删除线和下划线的空格", "text",
                      section_path="1 有序列表构成的章节标题 > 1.1 显式空白字符表示")
    bullets = _chunk("demo.docx_6", "1.3 多级列表\n- Italic bullet 1\n- Bold bullet 2\n- Underline bullet 3", "text",
                     section_path="1 有序列表构成的章节标题 > 1.3 多级列表")
    other = _chunk("unit_test.docx_7", "1. First sub-item at this level\n2. Second sub-item at this level\n"
                   "3. Third sub-item at this level\n4. Environmental Constraints", "text", section_path="Section 1.1")
    ctx = _context((other, 0.9), (numbered, 0.8), (bullets, 0.8))
    one = S.replace(extractive_max_sentences=1)
    question = "In section 1.1 of the MinerU DOCX demo (explicit whitespace characters), what is the fourth numbered " \
               "list item?"
    assert "4. 带删除线和下划线的空格" in extractive_answer(question, ctx, one).text
    question = "MinerU DOCX演示文档1.3节“多级列表”中，第一个项目符号的文字是什么？"
    answer = extractive_answer(question, _context((numbered, 0.8), (bullets, 0.8)), one)
    assert answer.text.startswith("- Italic bullet 1")


def test_a_sentence_in_the_other_language_holds_the_terms_it_says_of_the_question():
    # multi_page.md as landed (chunk 14): a Chinese question's own terms the English sentence says ("律师事务所",
    # "依赖", "排版": law firms, rely, formatting) count toward the share of its terms a unit must hold
    tools = _chunk("multi_page.md_14", "Legal Document Processors : Word processors tailored for legal professionals, "
                   "like WordPerfect, offered features such as redlining (early version tracking) and document "
                   "comparison. Even today, many law firms rely on these tools due to their robust formatting options "
                   "for contracts and legal briefs.", "text", section_path="Specialized Word Processing Tools")
    question = "《The Evolution of the Word Processor》一文提到，很多律师事务所至今仍依赖WordPerfect这类法律文书处理工具，" \
               "是因为它们对哪些文书有强大的排版功能？"
    answer = extractive_answer(question, _context((tools, 0.8)), S)
    assert answer is not None and "contracts and legal briefs" in answer.text


def test_a_picture_asked_by_its_place_is_counted_among_its_sections_pictures():
    # mineru_docx_demo_zh_en_headings_tables_images.docx as landed (chunks 15-17): two pictures under "1.1.2 Ungrouped
    # images", each described by its alt text; their disclaimer ("AI 生成的内容…") is no description
    section = "1 这是第一章标题 > 1.1 Some images > 1.1.2 Ungrouped images"
    heading = _chunk("demo.docx_15", "1.1.2 Ungrouped images\nThere are 2 pictures ungrouped", "text",
                     section_path=section)
    pictures = [_chunk(f"demo.docx_{n}", f"{alt}\n\nAI 生成的内容可能不正确。", "image", section_path=section,
                       semantic_content=f"图片：位于「{section}」，第3页\n前文：There are 2 pictures ungrouped\n内容：{alt}\n\n"
                       "AI 生成的内容可能不正确。") for n, alt in ((16, "卡通人物"), (17, "图标"))]
    ctx = _context((pictures[1], 0.9), (heading, 0.8), (pictures[0], 0.7))
    for place, alt in (("first", "卡通人物"), ("second", "图标"), ("last", "图标")):
        question = f"In section 1.1.2 (Ungrouped images) of the MinerU DOCX demo, what alt text does the {place} of " \
                   "the two ungrouped pictures carry?"
        assert extractive_answer(question, ctx, S.replace(extractive_max_sentences=1)).text.split("[ref:")[0] \
            .endswith(f"内容：{alt}"), place


def test_a_figure_descriptions_field_labels_are_no_evidence():
    # mineru_docx_demo_zh_en_headings_tables_images.docx as landed (chunks 7, 16): "…的内容是什么" asks what the item
    # says; the picture's description only labels its alt text "内容：" (tasks.ingest.enrich.image_description)
    section = "1 这是第一章标题 > 1.1 Some images > 1.1.2 Ungrouped images"
    picture = _chunk("demo.docx_16", "卡通人物", "image", section_path=section,
                     semantic_content=f"图片：位于「{section}」，第3页\n前文：There are 2 pictures ungrouped\n内容：卡通人物")
    items = _chunk("demo.docx_7", "1.4 无序列表\n- 无序列表项1：bold 粗体文本\n- 无序列表项2：underline下划线文本\n"
                   "- 无序列表项3：hyperlink超链接文本\n- 无序列表项4：italic 斜体文本", "text",
                   section_path="1 有序列表构成的章节标题 > 1.4 无序列表")
    cover = _chunk("demo.docx_2", "MinerU支持docx解析了\nMinerU Team\n2026 年03月04日", "text",
                   section_path="MinerU supports DOCX document parsing now")
    ctx = _context((picture, 0.9), (cover, 0.8), (items, 0.4))
    answer = extractive_answer("MinerU的DOCX演示文档“1.4 无序列表”一节中，无序列表项4的内容是什么？", ctx,
                               S.replace(extractive_max_sentences=1))
    assert answer.text.startswith("- 无序列表项4：italic 斜体文本")


def test_the_item_placed_after_the_one_named_answers_however_short():
    # nbt_npp_periodic_safety_review_part1_draft.docx as landed (chunk 53, Appendix B): the item after
    # "1. 目标和范围" is four characters; the first item is quoted with the line opening its list, and alone
    outline = _chunk("psr_part1.docx_53", "6. 向国家核安全局提交PSR大纲、要素/专项评价报告、总体评价报告的计划\n"
                     "7. 安全要素和评价专项，每个安全要素/评价专项应提供以下信息：\n1. 目标和范围\n2. 专题设置\n3. 评价输入\n"
                     "4. 评价流程\n8. 总体评价\n1. 总体评价方法", "text", section_path="附录B 核电厂PSR大纲的一般内容")
    question = "按PSR大纲的一般内容，每个安全要素/评价专项要提供的信息中，排在“目标和范围”之后的是哪一项？"
    assert "2. 专题设置" in extractive_answer(question, _context((outline, 0.8)), S).text


# nbt_npp_periodic_safety_review_part1_draft.docx as landed: the foreword lists the series' parts by number (chunk 7),
# section 5.1.1 the 14 safety factors by code (chunk 16)
PSR_PARTS = ("前  言\n《核电厂定期安全评价》分为15个部分：\n——第1部分：通用要求；\n——第2部分：安全性能；\n——第3部分：程序；\n"
             "——第10部分：人因；\n——第11部分：设备合格鉴定；\n——第12部分：设计；\n本部分为《核电厂定期安全评价》系列标准的第1部分。")
PSR_FACTORS = ("1.5.1 确定评价范围和内容\n5.1.1 一般而言，核电厂定期安全评价的范围应包括以下14个安全要素：\n1. 核电厂设计（SF1）\n"
               "2. 构筑物、系统和部件的实际状态（SF2）\n3. 设备合格鉴定（SF3）\n4. 老化（SF4）\n12. 人因（SF12）")


def test_a_question_asking_a_code_adds_the_unit_writing_one():
    parts = _chunk("psr_part1_draft.docx_7", PSR_PARTS, "text", section_path="前  言")
    factors = _chunk("psr_part1_draft.docx_16", PSR_FACTORS, "text",
                     section_path="核电厂定期安全评价 第1部分：通用要求 > 1.5 定期安全评价的策划和准备 > 1.5.1 确定评价范围和内容")
    question = ("In the draft NB/T standard 'Periodic safety review for nuclear power plants — Part 1: General "
                "Requirements', which safety-factor code is assigned to equipment qualification (设备合格鉴定)?")
    answer = extractive_answer(question, _context((parts, 0.9), (factors, 0.8)), S.replace(extractive_max_sentences=1))
    assert "SF3" in answer.text
    # "第11部分" is no code; "Civil Code" asks none; a notice's number is one
    assert not answers_what_is_asked(question)("——第11部分：设备合格鉴定；")
    assert answers_what_is_asked("Under the PRC Civil Code, within how long may he not sue?")("终止妊娠后六个月内")
    assert answers_what_is_asked("比亚迪2025年第一季度报告的公告编号是多少？")("公告编号：2025-035")


def test_a_numbered_item_whose_label_the_question_names_answers_it():
    # the broker report's forecast revision as landed: the sentence on net profit says 预测, 前值, 亿元 and 收入
    # as well, but the item labelled with what is asked ("1、收入:") answers
    note = _chunk("broker.pdf_16", "盈利预测调整说明\n预计 2024-2026 年归母净利润分别为 24.0/27.6/30.0 亿元（前值为 "
                  "28.5/32.7/36.2亿元），同比-18.8%/+15.3%/+8.6%，盈利预测下调的主要原因说明:1）收入端受今年宏观消费环境疲软"
                  "影响，线下客流量减少。具体调整细节如下:\n1、收入: 预计 2024-2026 年收入分别为 210.2/227.8/246.0 亿元 （前值"
                  "为220.2/247.7/275.3 亿元），同比-2.4%/+8.3%/+8.0%。", kind="text")
    answer = extractive_answer("服装企业研报下调盈利预测前，对2024-2026年收入的前值预测分别是多少亿元？",
                               _context((note, 0.9)), S).text
    assert "220.2/247.7/275.3" in answer, answer
    # not an item lacking the year asked (2022 of a 2024–2026 forecast; 2025 it holds), nor one labelled by the
    # words naming the document or by a file's name
    item = "1、收入: 预计 2024-2026 年收入分别为 210.2/227.8/246.0 亿元"
    asked = terms("服装企业研报对收入的预测是多少亿元？")
    assert _label_named(item, asked, frozenset(), ["2025"]) and not _label_named(item, asked, frozenset(), ["2022"])
    assert not _label_named(item, asked, frozenset({"收入"}), [])
    assert not _label_named("3. artratex.sty: 常用宏包及文档设定", terms("修改artratex.sty中哪个计数器"), frozenset(), [])


def test_a_unit_opening_with_the_section_number_asked_is_that_sections_entry():
    # the Redpaper's contents (as landed: an index chunk) name each function usage ID by its section; the sentence on
    # the RCAC administrator shares "Administrator", "function", "usage" and "ID" with the question too
    dots = " ." * 20
    contents = _chunk("redp5110.pdf_4", "\n".join(f"{line}{dots} {page}" for line, page in (
        ("2.1 Roles", 8), ("2.1.1 DDM and DRDA application server access: QIBM_DB_DDMDRDA", 8),
        ("2.1.2 Toolbox application server access: QIBM_DB_ZDA", 8),
        ("2.1.3 Database Administrator function: QIBM_DB_SQLADM", 9),
        ("2.1.4 Database Information function: QIBM_DB_SYSMON", 9),
        ("2.1.5 Security Administrator function: QIBM_DB_SECADM", 9))), kind="index")
    prose = _chunk("redp5110.pdf_40", "A preferred practice is that the RCAC administrator has the QIBM_DB_SECADM "
                   "function usage ID, but absolutely no other data privileges.", kind="text")
    ctx = _context((prose, 0.9), (contents, 0.8))
    question = ("According to the table of contents of IBM Redpaper REDP-5110, which function usage ID goes with the "
                "Database Administrator function (section 2.1.3)?")
    assert "QIBM_DB_SQLADM" in extractive_answer(question, ctx, S).text
    # a longer number ("2.1.35") is another section's
    assert _sections_written("see section 2.1.3").match("2.1.3 Database") is not None
    assert _sections_written("see section 2.1.3").match("2.1.35 Other") is None
    assert _sections_written("Which function usage ID goes with Database Administrator?") is None
    # a two-level number is a clause's when the question calls it one; "1.5 times" is no clause
    assert _sections_written("第5.1条禁止做什么？").match("5.1 禁止将电池浸入水中。") is not None
    assert _sections_written("What does safety precaution 5.4 prohibit?").match("5.4 Connect the cell") is not None
    assert _sections_written("What is 1.5 times the rated current?") is None


def test_a_clause_the_question_names_by_its_number_is_quoted_whole_when_its_first_sentence_is_the_best():
    # the SVOLT datasheet's safety precautions as MinerU 2.7.6 read them (chunk 76): clause 5.4's first sentence only
    # sets the scene, its second says what is prohibited; clause 5.5 is another
    precautions = _chunk("svolt_output_76", "5.4 Connect the positive and negative of the cell in strict accordance "
                         "with the label and instructions. Reverse charging is prohibited. \n5.5 禁止电池过充，否则，可能引起"
                         "电池过热和火灾事故的发生。", "text")
    answer = extractive_answer("Which kind of charging does safety precaution 5.4 of the SVOLT datasheet prohibit?",
                               _context((precautions, 0.9)), S)
    assert "Reverse charging is prohibited." in answer.text and "5.5" not in answer.text
    # a first sentence holding the number asked is quoted alone (`test_the_sentence_after_the_best_holding_far_more…`)
    capacity = _chunk("svolt_output_44", "1.7.3 -20°C 的容量 Capacity at -20°C\n放电容量 ≥137.2Ah 。新电池状态， 25°C 标准充电，"
                      " -20°C 标准放电(无风环境)。", "text")
    answer = extractive_answer("SVOLT 196Ah电芯规格书1.7.3条规定-20°C的放电容量是多少？", _context((capacity, 0.9)), S)
    assert "无风环境" not in answer.text


def test_a_sentence_holding_a_number_of_the_measure_asked_answers_how_many_of_it():
    # two sentences sharing the question's words alike: the one holding days answers "增加了多少天", in Chinese
    # numerals too (broker_research_report_anonymized.pdf writes "存货周转天数同比+71天" after a longer sentence on
    # the inventory's amount, which its words favour)
    turnover = _chunk("broker.pdf_4", "公司存货周转天数同比增加两成。公司存货周转天数同比增加七十一天。", "text")
    answer = extractive_answer("三季度末公司存货周转天数同比增加了多少天？", _context((turnover, 0.9)), S)
    assert answer.text.startswith("公司存货周转天数同比增加七十一天")
    assert measure_asked("连续任职不得超过几届？").search("连续任职不得超过两届") is not None
    assert measure_asked("How many days is it stored?").search("储存 30 天") is not None
    assert measure_asked("存货周转天数同比增加了多少天？").search("存货周转天数同比+71天至 346 天。") is not None
    # a calendar year is no number of years; a stake (股权) is no number of shares
    assert measure_asked("原始设计寿命为多少年？").search("2025年报告") is None
    assert measure_asked("公司持有它多少股权？") is None


def test_a_compound_ordinal_asks_no_list_item():
    # byd_2025q1_quarterly_report.pdf: "first-quarter" names the report, not item "1." of its page-1 declaration
    declaration = _chunk("byd.pdf_1", "重要内容提示:1.董事会、监事会及董事、监事、高级管理人员保证季度报告的真实、准确、完整，不存在虚假"
                         "记载、误导性陈述或重大遗漏，并承担个别和连带的法律责任。", "text")
    cash = _chunk("byd.pdf_24", "项目 | 本期发生额 | 上期发生额\n销售商品、提供劳务收到的现金 | 186,993,954,000.00 | "
                  "124,156,838,000.00\n收到的税费返还 | 5,022,700,000.00 | 3,605,599,000.00")
    ctx = _context((declaration, 0.4), (cash, 0.3))
    question = ("How much cash did BYD collect from selling goods and providing services in January–March 2025, "
                "according to the current-period column of the cash flow statement in its first-quarter report?")
    assert asked_ordinal(question) is None
    assert "186,993,954,000.00" in extractive_answer(question, ctx, S).text
    assert asked_ordinal("what does the first-row cell under Column B say?") == 1


def test_a_rate_does_not_state_the_amount_asked():
    # the broker report (600398.SH) as landed: its forecast's "销售费用率" item, and the income statement's row;
    # "selling expense" (销售费用) is asked, not its rate, which the item's label and words hold
    forecast = _chunk("broker.pdf_18", "3、销售费用率:预计 2024-2026 年销售费用率分别为 22.6%/21.5%/21.5%（前值为"
                      "21.5%/21.2%/21.6%）。", "text")
    statement = _chunk("broker.pdf_26", "利润表（百万元） | 2023 | 2024E | 2025E | 2026E\n营业收入 | 22,550 | 22,066 | "
                       "23,916 | 25,761\n销售费用 | (4,312) | (4,987) | (5,142) | 5289", caption="利润表")
    ctx = _context((forecast, 0.9), (statement, 0.6))
    for question in ("In the forecast income statement of the sell-side note on 600398.SH, what selling expense is "
                     "projected for 2026E, in RMB million?", "600398.SH研报预计2026年销售费用为多少百万元？"):
        assert "5289" in extractive_answer(question, ctx, S).text
    assert "21.5%/21.5%" in extractive_answer("600398.SH研报预计2026年销售费用率为多少？", ctx, S).text


def test_a_sentence_opening_with_the_condition_the_question_puts_answers_it():
    # the Civil Code's articles 1188-1189 as landed: the question puts a case ("如果监护人已经尽到监护职责"); the
    # sentence whose condition states it answers, not the article restating the premise, nor the negated case
    code = _chunk("prc_civil_code.pdf_260", "第一千一百八十八条 无民事行为能力人、限制民事行为能力人造成他人损害的，由监护人"
                  "承担侵权责任。监护人尽到监护职责的，可以减轻其侵权责任。\n第一千一百八十九条 无民事行为能力人、限制民事"
                  "行为能力人造成他人损害，监护人将监护职责委托给他人的，监护人应当承担侵权责任；受托人有过错的，承担相应的责任。",
                  "text")
    other = _chunk("prc_civil_code.pdf_255", "该无民事行为能力人、限制民事行为能力人的监护人未尽到监护职责的，应当承担相应的"
                   "责任。", "text")
    question = "无民事行为能力人、限制民事行为能力人造成他人损害的，如果监护人已经尽到监护职责，民法典规定可以怎样处理监护人的责任？"
    answer = extractive_answer(question, _context((code, 0.8), (other, 0.7)), S).text
    assert answer.startswith("监护人尽到监护职责的，可以减轻其侵权责任。")


def test_chinese_an_english_question_writes_out_unbracketed_quotes_its_document():
    # the Chinese an English question writes among its words ("starting with 审查目的") quotes its document as surely as
    # the Chinese it brackets ("compensation (抚恤)"): those words name what is asked
    def written(question: str) -> list[str]:
        return [w for m in _HAN_BRACKETED.finditer(question) for w in m.groups() if w]

    assert written("The drafting notes list the sections needing revision, starting with 审查目的. Which one closes "
                   "that list?") == ["审查目的"]
    assert written("What compensation (抚恤) does the state give?") == ["抚恤"]
    assert written("Which term, 审查要点 or 审查方法, comes first?") == ["审查要点", "审查方法"]
    # not the Chinese of a Chinese question, nor a word glued to Latin letters ("NB/T中")
    assert written("核电厂定期安全评价第1部分中，审查目的是什么？") == []
    assert written("In the NB/T中 draft, what is asked?") == []


def test_a_question_asking_the_example_a_passage_gives_is_answered_by_the_sentence_giving_it():
    # NB/T PSR Part 1 draft as landed: the reviews' focus, told by an example ("例如，对于原始设计寿命为四十年的核电机组，…")
    focus = _chunk("part1_draft.docx_19", "例如，对于原始设计寿命为四十年的核电机组，第一次定期安全评价的重点为发现并消除机组在"
                   "设计、建造过程中存在的缺陷，提高安全性；第二次定期安全评价的重点为根据现行标准和实践，进一步提高机组的安全性能；"
                   "对于第三次和第四次定期安全评价，在确定评价重点时，除关注安全性能提升之外，还可考虑机组的长寿期运行需求。", "text")
    question = ("When the Part 1 draft of the nuclear PSR standard explains how the focus shifts between the first, "
                "second, third and fourth reviews, it uses units with what original design life as its example?")
    assert "四十年" in extractive_answer(question, _context((focus, 0.8)), S).text
    # an example the question gives in passing ("for example by waiving a claim") asks none
    assert _ASKS_EXAMPLE.search("If a debtor disposes of its rights (for example by waiving a claim), what may the "
                                "creditor do?") is None
