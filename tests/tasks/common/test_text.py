"""The text helpers: the jieba tokenizer that makes BM25 terms (stop words, punctuation, case and
width, the user dictionary) and the character bigrams the rescues and the answerer compare by."""
from __future__ import annotations

import jieba
import pytest

from tasks.common import text as text_mod
from tasks.common.text import (STOP_WORDS, bigram_hit_rate, bigrams, clean_text, plain_quantities,
                               subscripted_symbols, tokenize, tokenize_many)


# --- tokenization ---------------------------------------------------------------------------------

def test_stop_words_dropped_content_and_numbers_kept():
    terms = tokenize("我们的数据是在2023年采集的，电压为3.2V，版本v1.2.3，共1000台")
    assert not set(terms) & {"我们", "的", "是", "在", "为"}
    assert {"数据", "采集", "电压", "2023", "3.2", "1.2.3", "1000"} <= set(terms)
    assert not set(terms) & STOP_WORDS


def test_punctuation_and_whitespace_dropped():
    terms = tokenize("电池，容量！（测试）……\n\t  “引号” —— 《书名》 ; ... !? 50%")
    assert terms and all(any(ch.isalnum() for ch in t) for t in terms)
    assert {"电池", "容量", "测试", "引号", "书名"} <= set(terms)


def test_lower_case_and_english_stop_words():
    assert tokenize("The Quick Brown FOX is in the Box") == ["quick", "brown", "fox", "box"]


def test_full_width_is_half_width():
    assert tokenize("ＧＰＴ４模型，ＡＢＣ公司２０２３年") == tokenize("GPT4模型,ABC公司2023年")
    assert {"gpt4", "abc", "2023"} <= set(tokenize("ＧＰＴ４模型，ＡＢＣ公司２０２３年"))


def test_a_symbol_written_with_its_subscript_is_the_term_a_pdfs_symbol_list_indexes():
    # ucasthesis_template_guide.pdf's symbol list as landed: math italics run the subscript into its symbol
    line = tokenize("ℎ𝑇 specific total enthalpy m2 ⋅ s−2")
    assert "ht" in line and "ht" not in tokenize("what quantity does the symbol h_T denote?")
    assert subscripted_symbols("what does the symbol h_T denote? 符号I_{ij}对应什么") == ["ht", "iij"]
    assert subscripted_symbols("VERIFY_GROUP_FOR_USER, file_name.txt") == []  # identifiers are no symbols


def test_a_letter_spaced_word_is_one_term():
    # a standard's headings are set letter-spaced with em or ideographic spaces ("前\u2003\u2003言", "附　录"); a question
    # asks for the word
    assert tokenize("前\u2003\u2003言") == tokenize("前言") == ["前言"]
    assert tokenize("附\u3000录\u3000B") == ["附录", "b"] and tokenize("目  次") == tokenize("目次")
    # words apart stay apart, and a lone character between Latin letters joins nothing
    assert tokenize("中国 人民 银行") == ["中国", "人民", "银行"]
    assert tokenize("年 月 日发布")[:3] == ["年", "月", "日"] and tokenize("A 和 B") == ["b"]


def test_empty_and_many():
    assert tokenize("") == [] and tokenize("  ，。！") == [] and tokenize("的了吗") == []
    assert tokenize_many(["电池容量", ""]) == [tokenize("电池容量"), []]


def test_user_dictionary_makes_a_made_up_word_one_term(tmp_path):
    text = "新品量子猫粮今日上市"
    user_dict = tmp_path / "kb_words.txt"
    user_dict.write_text("量子猫粮 10 n\n", encoding="utf-8")
    assert "量子猫粮" not in tokenize(text)
    assert "量子猫粮" in tokenize(text, user_dict=str(user_dict))
    # loaded once per process per path, into a private tokenizer: nothing else changes
    assert text_mod._jieba(user_dict) is text_mod._jieba(str(user_dict))
    assert "量子猫粮" not in tokenize(text)
    assert "量子猫粮" not in jieba.lcut(text)
    assert tokenize(text, user_dict="") == tokenize(text)  # settings.index.bm25_user_dict defaults to ""


def test_missing_user_dictionary_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="user dictionary"):
        tokenize("文本", user_dict=tmp_path / "missing.txt")


# --- bigrams --------------------------------------------------------------------------------------

def test_bigrams_ignore_markdown_punctuation_and_space():
    assert clean_text("**安全检查**，应包括 哪些？") == "安全检查应包括哪些"
    assert bigrams("安全检查") == {"安全", "全检", "检查"}
    assert bigram_hit_rate(bigrams("安全检查"), "开展安全 检查工作") == 1.0
    assert bigram_hit_rate(set(), "x") == 0.0


def test_a_quantity_mineru_wrote_as_inline_math_is_written_plainly():
    # SVOLT datasheet (MinerU 2.7.6 pipeline): units are inline LaTeX with a space between every character
    text = ("正常工作的单体电池 $2 5 { \\pm } 3 ~ ^ { \\circ } \\mathrm { C }$ ， $50 \\%$ SOC状态下，最大脉冲放电电流852A，"
            "最长放电时间为 $3 0 \\mathrm { s }$ 。容量 $\\geq 1 9 6 ~ \\mathrm { A h }$，温度 $0 \\ ^ { \\circ } \\mathrm { C } { \\le } "
            "\\mathrm { T } { < } 5 \\ ^ { \\circ } \\mathrm { C }$")
    assert plain_quantities(text) == ("正常工作的单体电池 25±3°C ， 50% SOC状态下，最大脉冲放电电流852A，最长放电时间为 30s 。"
                                      "容量 ≥196Ah，温度 0°C≤T<5°C")
    assert {"30s", "196ah"} <= set(tokenize(plain_quantities(text)))  # as a question "30s长脉冲" is


def test_formulas_and_dollar_amounts_are_left_alone():
    for kept in ("$a^{2}+b^{2}=c^{2}$", "$x=\\frac{-b\\pm \\sqrt{b^{2}-4ac}}{2a}$", "$p _ { s } ( y )$",
                 "costs $5 and $10 a day", "echo $HOME $PATH", "$ 9.4 million per attack. The average cost rose to $",
                 "$n _ { i } < n _ { j } { \\mathrm { ~ i f ~ } } i < j ,$"):
        assert plain_quantities(kept) == kept
