"""English questions over Chinese text: CC-CEDICT read backwards gives an English question's words
in Chinese (tasks.qa.gloss), which BM25 and the offline answer match. The Chinese is the PRC Civil
Code's article 718 and its neighbour, as the docs corpus's PDF states them (statute text). Chinese
questions over English text: CC-CEDICT read forwards, for the offline answer."""
from __future__ import annotations

from schemas.chunk import TEXT, Chunk
from schemas.settings import Settings
from tasks.index.bm25 import BM25Index
from tasks.common.text import tokenize
from tasks.qa.answer import extractive_answer
from tasks.qa.context import build_context
from tasks.qa.gloss import chinese_numeral, english_glosses, gloss_terms, pinyin_names, translatable
from tasks.qa.types import Candidate

ARTICLE_716 = "第七百一十六条 承租人经出租人同意，可以将租赁物转租给第三人。承租人未经出租人同意转租的，出租人可以解除合同。"
ARTICLE_718 = "第七百一十八条 出租人知道或者应当知道承租人转租，但是在六个月内未提出异议的，视为出租人同意转租。"
SUBLET = ("Under the PRC Civil Code, if a lessor knows that the lessee has sublet the property but raises no "
          "objection within what period, is the lessor deemed to consent?")


def test_an_english_questions_words_in_the_chinese_the_corpus_uses():
    vocabulary = set(tokenize(ARTICLE_716 + ARTICLE_718))
    found = gloss_terms(SUBLET, vocabulary)
    assert {"转租", "异议", "同意"} <= set(found)
    assert set(found) <= vocabulary  # a sense the corpus never uses is no term
    assert gloss_terms(SUBLET, set()) == []


def test_a_phrase_is_looked_up_before_its_words():
    vocabulary = {"营运资金", "工作", "资本", "资金"}
    assert gloss_terms("What change in working capital does the forecast show?", vocabulary) == ["营运资金"]


def test_a_chinese_question_is_not_glossed():
    assert not translatable("出租人在多长时间内未提出异议视为同意转租？")
    assert gloss_terms("出租人在多长时间内未提出异议视为同意转租？", {"转租", "异议"}) == []
    assert translatable("In BYD's Q1 2025 cash flow statement, what were tax refunds (收到的税费返还)?")


def test_a_short_inflected_word_is_glossed_by_its_base_form():
    # prc_civil_code.pdf, Article 732: "dies" is "die" (死亡), which tells it from Article 734
    assert gloss_terms("if a tenant dies during the term of a house lease", {"死亡", "承租人", "房屋"}) == \
        ["承租人", "死亡", "房屋"]


def test_a_verb_is_glossed_by_the_senses_of_its_phrasal_verb():
    # NB/T PSR Part 1, 5.3.1: "项目可划分为准备和执行两个阶段": 划分 is CC-CEDICT's "to divide up"
    assert "划分" in gloss_terms("into which two phases can a PSR project be divided?", {"划分", "阶段", "项目"})
    assert "划分" not in gloss_terms("which phases are listed?", {"划分", "阶段"})  # "up" alone is no word asked


def test_an_agent_noun_is_glossed_by_its_verb_when_the_corpus_lacks_its_own_glosses():
    # nbt_npp_periodic_safety_review_part12_design_draft.docx's cover: "国家能源局  发布" names who issues it;
    # CC-CEDICT's "issuer" (发行人…) is no word of this corpus, its "issue" (发布) is
    vocabulary = {"发布", "国家能源局", "封面"}
    question = "Which government body is shown on the cover as the issuer of the standard?"
    assert "发布" in gloss_terms(question, vocabulary)
    # a word whose own gloss the corpus uses keeps it alone ("number" is no "numb")
    assert gloss_terms("What number is printed?", {"号码", "数字", "麻木"}) == ["号码", "数字"]


def test_a_noun_is_glossed_by_the_word_it_is_made_from_when_the_corpus_lacks_its_own_glosses():
    # prc_civil_code.pdf, Article 1179: "造成残疾的，还应当赔偿辅助器具费和残疾赔偿金". CC-CEDICT glosses "disability"
    # 损伤 / 病残 / 身心障碍, none of them words of the article; its "disabled" is 残疾, its "injure" 伤害
    article = "第一千一百七十九条 侵害他人造成人身损害的，应当赔偿医疗费。造成残疾的，还应当赔偿辅助器具费和残疾赔偿金；造成伤害的…"
    question = "When a personal injury causes disability, what must the tortfeasor additionally compensate?"
    found = gloss_terms(question, set(tokenize(article)))
    assert {"残疾", "伤害", "赔偿"} <= set(found)
    # "compensation" is made from "compensate" (赔偿); a word whose own gloss the corpus uses keeps it alone
    assert gloss_terms("What compensation is due?", {"赔偿"}) == ["赔偿"]
    assert gloss_terms("What compensation is due?", {"赔偿", "赔偿金"}) == ["赔偿金"]


def test_the_words_of_chinas_laws_are_glossed_as_their_english_translations_write_them():
    # prc_constitution.pdf, Article 123: "中华人民共和国人民法院是国家的审判机关。" CC-CEDICT's "organ" is 管风琴 (a pipe
    # organ) and its "liability" 负债 (a balance sheet's); the laws' words are 机关 and 责任
    article = "第一百二十三条 中华人民共和国人民法院是国家的审判机关。侵权人应当承担侵权责任。"
    found = gloss_terms("What kind of state organ are the people's courts? Who bears the tort liability?",
                        set(tokenize(article)))
    assert {"机关", "侵权", "责任"} <= set(found)


# prc_civil_code.pdf, Articles 188-189, 462 and 949, as its chunks hold them
LIMITATION = ("第一百八十八条 向人民法院请求保护民事权利的诉讼时效期间为三年。法律另有规定的，依照其规定。诉讼时效期间自权利人知道"
              "或者应当知道权利受到损害以及义务人之日起计算。法律另有规定的，依照其规定。但是，自权利受到损害之日起超过二十年的，"
              "人民法院不予保护，有特殊情况的，人民法院可以根据权利人的申请决定延长。第一百八十九条 当事人约定同一债务分期履行"
              "的，诉讼时效期间自最后一期履行期限届满之日起计算。")
POSSESSION = ("第四百六十二条 占有的不动产或者动产被侵占的，占有人有权请求返还原物；对妨害占有的行为，占有人有权请求排除妨害"
              "或者消除危险；因侵占或者妨害造成损害的，占有人有权依法请求损害赔偿。占有人返还原物的请求权，自侵占发生之日起一年"
              "内未行使的，该请求权消灭。")
PROPERTY_SERVICES = ("第九百四十九条 物业服务合同终止的，原物业服务人应当在约定期限或者合理期限内退出物业服务区域，将物业服务用房、相关"
                     "设施、物业服务所必需的相关资料等交还给业主委员会、决定自行管理的业主或者其指定的人，配合新物业服务人做好交接工作，"
                     "并如实告知物业的使用和管理状况。")


def test_the_civil_codes_terms_of_art_are_glossed_as_its_english_translation_writes_them(monkeypatch):
    # CC-CEDICT has "limitation" (限度) and "period" (周期) but not the phrase, and no "possessor" or "encroach": the
    # property-services article (物业, 交还 from "property", "return") outranked the possessor's one
    instalments = ("Under the PRC Civil Code, when the parties agree that the same debt is to be performed in "
                   "instalments, from when does the limitation period run?")
    encroached = ("Under the PRC Civil Code, a possessor's claim for return of the original property after it has "
                  "been encroached upon is extinguished if not exercised within what period from the encroachment?")
    articles = {"limitation": LIMITATION, "possession": POSSESSION, "property services": PROPERTY_SERVICES}
    index = BM25Index.build(list(articles), [tokenize(text) for text in articles.values()])
    vocabulary = set(index.vocab)

    def first(question: str) -> str:
        return index.search([tokenize(question) + gloss_terms(question, vocabulary)], 1)[0][0][0]

    assert {"诉讼时效", "分期"} <= set(gloss_terms(instalments, vocabulary))
    assert {"占有", "侵占", "消灭"} <= set(gloss_terms(encroached, vocabulary))
    assert first(encroached) == "possession"
    context = build_context([_chunk(42, LIMITATION), _chunk(105, POSSESSION)], Settings())
    assert "最后一期履行期限届满之日" in extractive_answer(instalments, context, Settings()).text
    assert "一年内未行使" in extractive_answer(encroached, context, Settings()).text
    monkeypatch.setattr("tasks.qa.gloss.LAW_TERMS", {})
    assert first(encroached) == "property services"


# nbt_npp_periodic_safety_review_part1_draft.docx as landed: the step naming the review and two lines of other clauses
# on the safety baseline and the differences found
COMPLIANCE = "1. 对比安全基准，开展符合性审查，确定核电厂状态是否满足安全基准的要求，找出安全基准相关的差异项；"
DIFFERENCE = ("差异项 difference 电厂现状与安全基准、现行安全标准和实践之间存在的不一致，包含强项和弱项。强项是指高于现行安全标准"
              "或实践的差异项；弱项包括低于安全基准的差异项和满足安全基准但低于现行安全标准或实践的差异项。")
DESIGN_BASIS = "评价依据为国家核安全局批准的定期安全评价大纲确定的安全基准、现行安全标准和实践。"


def test_nuclear_safety_words_are_glossed_as_chinas_safety_standards_write_them(monkeypatch):
    # CC-CEDICT's "review" is 审稿 (of a manuscript) and its "safety" 安全性; a periodic safety review is 定期安全评价, its
    # safety baseline 安全基准, and the review against it a 符合性审查
    question = ("Under the draft NB/T standard 'Periodic safety review for nuclear power plants — Part 1: General "
                "Requirements', what kind of review is carried out against the safety baseline and against current "
                "safety standards and practices to identify difference items? Give the Chinese term.")
    lines = {"compliance": COMPLIANCE, "difference": DIFFERENCE, "basis": DESIGN_BASIS}
    index = BM25Index.build(list(lines), [tokenize(text) for text in lines.values()])
    vocabulary = set(index.vocab)
    assert {"定期安全评价", "安全基准", "安全", "审查"} <= set(gloss_terms(question, vocabulary))

    def ranked() -> list[tuple[str, float]]:
        return index.search([tokenize(question) + gloss_terms(question, vocabulary)], 3)[0]

    glossed = ranked()
    monkeypatch.setattr("tasks.qa.gloss.NUCLEAR_TERMS", {})
    assert glossed[0][0] == "compliance" and glossed[0][1] > 1.5 * dict(ranked())["compliance"]


# byd_2025q1_quarterly_report.pdf chunk 15 as landed: the notes under the top-10 shareholders table
SHAREHOLDER_NOTES = ("注2:此数不包括王传福先生持有的1,000,000股H股；注3:此数不包括夏佐全先生及其控股的海外公司SIGN INVESTMENTS "
                     "LIMITED分别持有的195,000股H股和305,000股H股。上述股东关联关系或一致行动的说明 | 1、吕向阳先生为王传福先生"
                     "之表兄，吕向阳先生及其配偶张长虹女士分别持有融捷投资控股集团有限公司89.5%和10.5%的股权")


def test_a_chinese_name_romanized_in_pinyin_is_glossed_by_the_characters_spelling_it():
    vocabulary = set(tokenize(SHAREHOLDER_NOTES))  # 王传福 and 夏佐全 are words; 吕向阳 is 吕 and 向阳
    question = "According to BYD's Q1 2025 report, how is Lü Xiangyang related to Wang Chuanfu?"
    assert pinyin_names(question, vocabulary) == ["向阳", "王传福"]
    assert {"向阳", "王传福"} <= set(gloss_terms(question, vocabulary))
    assert pinyin_names("How many H shares does Mr Xia Zuoquan hold?", vocabulary) == ["夏佐全"]  # "Mr" is no pinyin
    # capitalized English words are no name, nor is a single pinyin-like word
    assert pinyin_names("Under the PRC Civil Code, what may the State Council do in China?", vocabulary) == []


def test_each_sense_cc_cedict_separates_by_a_semicolon_is_glossed():
    # prc_civil_code.pdf, Article 1145: 放弃 is "to renounce; to abandon; to give up", one slash-sense of three
    vocabulary = set(tokenize("没有继承人或者继承人均放弃继承的，由被继承人生前住所地的民政部门或者村民委员会担任遗产管理人。"))
    assert "放弃" in gloss_terms("if all heirs have renounced the inheritance, who is the estate administrator?",
                                 vocabulary)
    assert "放弃" in gloss_terms("if all heirs give up the inheritance", vocabulary)
    # the retriever's query takes only the senses given in one wording: a paraphrased one is too loose for a query
    # over the whole corpus
    assert "放弃" not in gloss_terms("have all heirs renounced?", vocabulary, paraphrases=False)
    assert "继承人" in gloss_terms("have all heirs renounced?", vocabulary, paraphrases=False)  # "/heir/"


def test_a_company_is_glossed_by_its_name_alone():
    # CC-CEDICT's 比亚迪 is "BYD Company (company name)": the question says "BYD's"
    vocabulary = set(tokenize("比亚迪股份有限公司 2025 年第一季度报告"))
    assert "比亚迪" in gloss_terms("What were BYD's selling expenses in Q1 2025?", vocabulary, paraphrases=False)


def test_a_phrase_opening_with_an_article_leaves_its_noun_to_the_phrase_after_it():
    # BYD's key accounting data: "the same period last year" is 上年同期; "the same" (同一) would take "same"
    vocabulary = set(tokenize("本报告期比上年同期增减 同一"))
    glossed = gloss_terms("How did it change compared with the same period last year?", vocabulary)
    assert "上年同期" in glossed and "同一" not in glossed


def test_a_phrase_of_function_words_is_not_glossed():
    # "According to the PRC Constitution": 根据 would pick "(十一)根据最高人民法院院长的提请…" over Article 127
    vocabulary = {"根据", "依照", "最高人民法院", "宪法"}
    assert gloss_terms("According to the PRC Constitution, what kind of organ is the Supreme People's Court?",
                       vocabulary) == ["最高人民法院", "宪法"]


def test_a_question_is_in_the_language_it_asks_in_whatever_its_titles_are():
    # fresh28 i15: the English title and name outweigh the Chinese it asks in, letter for letter
    question = "《The Evolution of the Word Processor》一文中，Wang Laboratories是在哪个年代推出专用文字处理机的？"
    assert not translatable(question)
    assert english_glosses(question, {"dedicated", "decade", "introduced"}) == ["decade", "dedicated"]
    assert translatable("What does the 'Summer activities' sample say about 枫树?")
    assert not translatable("《民法典》") and translatable("《Summer activities》")


def _chunk(index: int, content: str) -> Candidate:
    chunk = Chunk(content=content, chunk_type=TEXT, source="zh_pdf/prc_civil_code.pdf", chunk_index=index,
                  chunk_id=f"prc_civil_code.pdf_{index}")
    return Candidate(chunk.chunk_id, 0.5, chunk=chunk)


def test_the_offline_answer_quotes_the_chinese_sentence_an_english_question_asks_for():
    context = build_context([_chunk(1, ARTICLE_716), _chunk(2, ARTICLE_718)], Settings())
    answer = extractive_answer(SUBLET, context, Settings())
    assert answer is not None and "六个月内" in answer.text and answer.citations == ["prc_civil_code.pdf_2"]
    # without the Chinese the question's words translate to, only the words naming the document ("Under the PRC
    # Civil Code") match, which every unit holds: no unit answers
    assert extractive_answer(SUBLET, context, Settings().replace(gloss_enabled=False)) is None


ESSAY = [  # the first chunks of the docs corpus's word-processor essay (multi_page.pdf, its MinerU Markdown)
    "The Evolution of the Word Processor\nThe concept of the word processor predates modern computers and has "
    "evolved through several technological milestones.",
    "Pre-Digital Era (19th - Early 20th Century)\nThe origins of word processing can be traced back to the invention "
    "of the typewriter in the mid-19th century. Patented in 1868 by Christopher Latham Sholes, the typewriter "
    "revolutionized written communication by enabling people to produce legible, professional documents more "
    "efficiently than handwriting.",
    "During this period, the term \"word processing\" didn't exist, but the typewriter laid the groundwork for future "
    "developments. Over time, advancements such as carbon paper (for copies) and the electric typewriter (introduced "
    "by IBM in 1935) improved the speed and convenience of document creation.",
]
# a thesis template's copyright statement: it holds dictionary translations of "copies" (副本, 复制) only
STATEMENT = ("本人完全了解并同意遵守中国科学院大学有关保存和使用学位论文的规定，即中国科学院大学有权保留送交学位论文的副本，允许该"
             "论文被查阅，可以按照学术研究公开原则和保护知识产权的原则公布该论文的全部或部分内容，可以采用影印、缩印或其他复制"
             "手段保存、汇编本学位论文。")


def test_chinese_text_naming_files_in_english_is_read_by_the_glosses():
    # ucasthesis_template_guide.pdf, 2.2.4: Chinese lines naming their files; the English question names none of them
    style = ("2.2.4 Style 文件夹 包含 ucasthesis 文档类的定义文件和配置文件，通过对它们的修改可以实现特定的模版设定。\n"
             "1. ucasthesis.cls:文档类定义文件，论文的最核心的格式即通过它来定义的。\n"
             "2. ucasthesis.cfg:文档类配置文件，设定如目录显示为“目 录”而非“目录”。\n"
             "3. artratex.sty: 常用宏包及文档设定，如参考文献样式、文献引用样式、页眉页脚设定等。")
    chunk = Chunk(content=style, chunk_type=TEXT, source="zh_pdf/ucasthesis_template_guide.pdf", chunk_index=25,
                  chunk_id="ucasthesis_template_guide.pdf_25")
    ctx = build_context([Candidate(chunk.chunk_id, 0.9, chunk=chunk)], Settings())
    question = ("According to the ucasthesis guide, which file in the Style folder is the document class definition "
                "file that defines the thesis's core format?")
    answer = extractive_answer(question, ctx, Settings())
    assert answer is not None and answer.text.startswith("1. ucasthesis.cls")


def test_a_translation_weighs_less_than_the_questions_own_words(monkeypatch):
    import tasks.qa.answer

    chunks = [Chunk(content=text, chunk_type=TEXT, source="multi_page.md", chunk_id=f"multi_page.md_{i}")
              for i, text in enumerate(ESSAY)]
    chunks.append(Chunk(content=STATEMENT, chunk_type=TEXT, source="thesis_guide.pdf", chunk_id="thesis_guide.pdf_3"))
    scores = [0.6, 0.7, 0.9, 0.5]  # as retrieval ranked them: the carbon paper sentence first
    context = build_context([Candidate(c.chunk_id, s, chunk=c) for c, s in zip(chunks, scores)], Settings())
    question = "Which pre-digital advancement made it possible to produce copies of typed documents?"
    assert "carbon paper" in extractive_answer(question, context, Settings()).text
    named = f"According to the essay on the evolution of the word processor, w{question[1:]}"
    assert "carbon paper" in extractive_answer(named, context, Settings()).text
    # were a translation as good as the words themselves, the statement's many glosses would win (the words
    # naming the essay, which its passages hold, would outweigh them)
    monkeypatch.setattr(tasks.qa.answer, "GLOSS_WEIGHT", 1.0)
    assert extractive_answer(question, context, Settings()).citations == ["thesis_guide.pdf_3"]


def test_a_consumer_companys_operations_are_glossed_as_broker_reports_write_them():
    # broker_research_report_anonymized.pdf: "主品牌三季度直营、加盟门店分别净+65/-101家"; CC-CEDICT has no
    # 直营 or 加盟, and its "store" is 商店
    vocabulary = set(tokenize("主品牌三季度直营、加盟门店分别净+65/-101家 存货金额同比+53.5%、环比+29.1%"))
    glossed = gloss_terms("What was the net change in the main brand's directly-operated and franchised stores?",
                          vocabulary)
    assert {"直营", "加盟", "门店"} <= set(glossed)
    assert {"同比", "环比"} <= set(gloss_terms("By how much did inventory grow year on year and quarter on quarter?",
                                             vocabulary))


def test_accounting_words_cc_cedict_lacks_are_glossed_as_the_statements_line_items():
    # the BYD cash flow statement's rows, as BM25 indexes them
    vocabulary = set(tokenize("取得借款收到的现金 处置固定资产、无形资产和其他长期资产收回的现金净额 流动资产合计 每股收益"))
    assert {"借款", "收到", "现金"} <= set(gloss_terms("How much cash was received from borrowings?", vocabulary))
    assert {"处置", "固定资产"} <= set(gloss_terms("net cash from disposal of fixed assets", vocabulary))
    assert {"流动资产", "合计"} <= set(gloss_terms("What are total current assets?", vocabulary))
    # a line item the index holds only as its words is glossed as them, when they cover it all
    assert "每股收益" not in vocabulary
    assert {"每股", "收益"} <= set(gloss_terms("What earnings per share is forecast?", vocabulary))
    # and as itself, whose bigram across its words ("股收") no row holding the words apart has
    assert "每股收益" in gloss_terms("What earnings per share is forecast?", vocabulary)
    assert gloss_terms("What is the dividend yield?", vocabulary) == []
    # a line item named whole, as the balance sheet writes it: "deferred tax liabilities" is 递延所得税负债, whose "税负"
    # the assets' row 递延所得税资产 lacks (BYD's balance sheet has both)
    sheet = set(tokenize("递延所得税资产 递延所得税负债 递延收益"))
    assert "递延所得税负债" in gloss_terms("What deferred tax liabilities did BYD carry?", sheet)
    assert "递延所得税资产" in gloss_terms("What deferred tax assets did BYD carry?", sheet)
    assert "递延收益" in gloss_terms("What is the deferred income?", sheet)
    # the income statement's "以摊余成本计量的金融资产终止确认收益"
    statement = set(tokenize("以摊余成本计量的金融资产终止确认收益 将重分类进损益的其他综合收益"))
    assert {"终止", "确认", "损益"} <= set(gloss_terms("What gain or loss on derecognition, reported in profit or loss?",
                                                   statement))


def test_a_standards_element_names_are_glossed_as_gb_t_1_1_writes_them():
    # nbt_npp_periodic_safety_review_part1_draft.docx: "前\u2003\u2003言" lists the drafting units, "引\u2003\u2003言"
    # opens the text; CC-CEDICT's "foreword" is 引言 (and 序文), the standard's Introduction
    vocabulary = set(tokenize("前\u2003\u2003言\n本部分起草单位：大亚湾核电运营管理有限责任公司\n引\u2003\u2003言\n序文"))
    assert {"前言", "引言"} <= vocabulary
    found = gloss_terms("Which organisation is named first among the drafting units in the foreword?", vocabulary)
    assert "前言" in found and "起草" in found and not {"引言", "序文"} & set(found)
    assert "引言" in gloss_terms("What does the introduction say?", vocabulary)


def test_statement_periods_and_other_activities_are_glossed():
    vocabulary = set(tokenize("期初余额 期末余额 支付其他与投资活动有关的现金"))  # "was paid": no phrase "cash paid"
    assert "期初" in gloss_terms("What was the balance at the beginning of the period?", vocabulary)
    assert {"支付", "其他", "投资", "活动", "有关"} <= set(gloss_terms("How much cash was paid relating to other investing "
                                                   "activities?", vocabulary))
    # the other word order: "other cash … relating to investing activities" (收到其他与投资活动有关的现金)
    assert "其他" in gloss_terms("How much other cash related to investing activities was received?", vocabulary)


def test_a_four_word_period_and_a_line_item_joined_by_ji_are_glossed():
    # BYD's balance sheet and income-statement change table, as BM25 indexes them
    vocabulary = set(tokenize("期初余额 期末余额 研究及开发费用"))
    assert "期末" in gloss_terms("What were total current liabilities at the end of the period?", vocabulary)
    # "研究及开发费用" is indexed as 研究, 开发, 费用: 及 is no index term, and the words cover the rest
    assert {"研究", "开发", "费用"} <= set(gloss_terms("How much did research and development expenses rise?",
                                                  vocabulary))
    # the balance sheet's last line is "负债和股东权益总计", not "负债合计" (total liabilities)
    sheet = set(tokenize("负债合计 股东权益 负债和股东权益总计"))
    glossed = gloss_terms("What total liabilities and shareholders' equity does the balance sheet show?", sheet)
    assert {"负债", "股东权益", "总计"} <= set(glossed) and "负债合计" not in glossed


def test_a_numbered_article_is_glossed_as_the_chinese_laws_numbering():
    assert [chinese_numeral(n) for n in (9, 16, 20, 109, 718, 1005)] == ["九", "十六", "二十", "一百零九", "七百一十八",
                                                                        "一千零五"]
    vocabulary = set(tokenize(ARTICLE_716 + ARTICLE_718 + " 第十六条 职工代表大会是工会工作的重点"))
    assert "第十六条" in gloss_terms("According to Article 16 of the union rules, what is the focus?", vocabulary)
    # jieba splits the longer number: its indexed parts stand in for it
    assert "十八条" in gloss_terms("What does Article 718 of the PRC Civil Code say?", vocabulary)


def test_a_possessive_and_a_hyphen_are_read_as_the_dictionary_writes_them():
    vocabulary = {"全国人民代表大会", "逮捕"}
    assert gloss_terms("While the National People's Congress is in session, may a deputy be arrested?",
                       vocabulary) == ["全国人民代表大会", "逮捕"]
    # CC-CEDICT's "long-term" sense of 长远 is found by the question's "long-term" too
    assert "长远" in gloss_terms("What is the long-term plan?", {"长期", "长远"})


# Chinese questions over English text: CC-CEDICT read forwards gives a Chinese question's words in the
# English the passage writes. The passages are IBM Redpaper REDP-5110's (the docs corpus's redp5110_sampled.pdf)
BREACH = ("Recent news headlines are filled with reports of data breaches and cyber-attacks impacting global "
          "businesses of all sizes. The financial cost of these data breaches is skyrocketing. Studies from the "
          "Ponemon Institute revealed that the average cost of a data breach increased in 2013 by 15% globally and "
          "resulted in a brand equity loss of $9.4 million per attack.")
BIO = ("Hernando Bedoya is a Senior IT Specialist at STG Lab Services and Training in Rochester, Minnesota. Before "
       "joining STG Lab Services, he worked in the ITSO for nine years writing multiple IBM Redbooks publications. He "
       "also worked for IBM Colombia as an IBM AS/400 IT Specialist doing presales support for the Andean countries.")
PONEMON = "IBM关于DB2 for i行列访问控制（RCAC）的红皮书引用Ponemon Institute的研究称，2013年全球数据泄露的平均成本上升了多少？"


def test_a_chinese_questions_words_in_the_english_the_passage_writes():
    found = english_glosses(PONEMON, set(tokenize(BREACH + BIO)))
    assert {"global", "average", "studies"} <= set(found)  # 全球, 平均, 研究 as the passage writes them
    assert set(found) <= set(tokenize(BREACH + BIO))
    assert english_glosses("王安实验室在哪个年代推出了专用文字处理机？", {"dedicated", "processing"}) == ["dedicated",
                                                                                         "processing"]
    assert english_glosses(SUBLET, {"sublet", "objection"}) == []  # an English question is glossed the other way
    # multi_page.pdf: CC-CEDICT's 集成 is "integrated" and 无缝 "seamless"; the passage writes its verb and adverb
    integration = set(tokenize("Microsoft Word integrates seamlessly with OneDrive and Teams."))
    assert {"integrates", "seamlessly"} <= set(english_glosses("Microsoft Word可以与哪两个产品无缝集成？", integration))


def test_the_offline_answer_quotes_the_english_sentence_a_chinese_question_asks_for():
    chunks = [Chunk(content=text, chunk_type=TEXT, source="redp5110_sampled.pdf", chunk_index=i,
                    chunk_id=f"redp5110_sampled.pdf_{i}") for i, text in ((16, BIO), (21, BREACH))]
    context = build_context([Candidate(c.chunk_id, 0.5, chunk=c) for c in chunks], Settings())
    answer = extractive_answer(PONEMON, context, Settings())
    assert "by 15% globally" in answer.text and answer.citations == ["redp5110_sampled.pdf_21"]
    # the question's own words (Ponemon Institute, 2013) are too few of its terms: no sentence holds enough
    assert extractive_answer(PONEMON, context, Settings().replace(gloss_enabled=False)) is None
    asked = "IBM DB2 for i 红皮书的作者介绍中，Hernando Bedoya在IBM哥伦比亚做售前支持时服务的是哪些国家？"
    assert "the Andean countries" in extractive_answer(asked, context, Settings()).text


def test_a_non_current_line_item_keeps_its_negation():
    # BYD's balance sheet: BM25 indexes "非流动负债合计" as 流动 / 负债 / 合计, as it does "流动负债合计"
    sheet = ("项目 | 期末余额 | 期初余额\n流动负债合计 | 387,259,123,000.00 | 374,551,339,000.00\n"
             "非流动负债合计 | 88,568,505,000.00 | 88,682,470,000.00")
    question = "In BYD's Q1 2025 consolidated balance sheet, what were total non-current liabilities at 31 March 2025?"
    found = gloss_terms(question, set(tokenize(sheet)))
    assert "非流动负债" in found and {"流动", "负债"} <= set(found)
    assert "非流动负债" not in gloss_terms("What were total current liabilities?", set(tokenize(sheet)))
    chunk = Chunk(content=sheet, chunk_type="table", source="byd.pdf", chunk_index=20, chunk_id="byd.pdf_20")
    context = build_context([Candidate(chunk.chunk_id, 0.5, chunk=chunk)], Settings())
    assert extractive_answer(question, context, Settings()).text.startswith("非流动负债合计 — 期末余额: 88,568,505,000.00")
