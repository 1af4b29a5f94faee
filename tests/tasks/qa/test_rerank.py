"""The cross-encoder stage with a tiny model built here (no hub access): probabilities, order."""
from __future__ import annotations

import numpy as np
import pytest

from schemas.chunk import Chunk
from tasks.qa.rerank import Reranker, rerank
from tasks.qa.types import Candidate


def build_tiny_cross_encoder(path, texts):
    """A 1-layer BERT sequence classifier with random weights and a character WordPiece tokenizer
    built from `texts` with the `tokenizers` library: a real CrossEncoder folder, no hub access."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])}
    for ch in sorted({ch for text in texts for ch in text.lower() if not ch.isspace()}):
        vocab.setdefault(ch, len(vocab))
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=200))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True, handle_chinese_chars=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                            sep_token="[SEP]", mask_token="[MASK]", model_max_length=512).save_pretrained(path)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(path)
    return path


def test_tiny_cross_encoder_scores_are_probabilities(tmp_path):
    texts = ["生命数耗完即算为什么？", "生命数耗完即算为踢爆。", "计算神经科学"]
    reranker = Reranker(build_tiny_cross_encoder(tmp_path / "ce", texts))
    scores = reranker.score([(texts[0], texts[1]), (texts[0], texts[2]), (texts[0], texts[1])])
    assert scores.shape == (3,) and np.all((scores > 0) & (scores < 1))
    assert scores[0] == pytest.approx(scores[2]) and scores[0] != pytest.approx(scores[1])
    assert reranker.score([]).shape == (0,)
    with pytest.raises(FileNotFoundError, match="not a local model folder"):
        Reranker(tmp_path / "missing")


def test_rerank_puts_probabilities_on_the_candidates_best_first():
    cands = [Candidate("a", score=0.9, chunk=Chunk(content="甲", chunk_type="text", chunk_id="a")),
             Candidate("b", score=0.1), Candidate("c", score=0.5)]
    out = rerank(cands, [0.2, 0.7, 0.2])
    assert [(c.chunk_id, c.score, c.rerank) for c in out] == [("b", 0.7, 0.7), ("a", 0.2, 0.2), ("c", 0.2, 0.2)]
    assert out[1].chunk is cands[0].chunk and cands[0].score == 0.9  # new candidates; the inputs are untouched
    assert rerank([], []) == []
