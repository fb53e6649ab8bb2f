"""Whole-word masking of Chinese pretraining data: jieba's words, as brightmart/albert_zh
marks them (`get_new_segment`), masked whole, n-grams counting words."""

import json
import os

import numpy as np
import pytest

from albert_tf.pretraining.documents import tokenize_document
from albert_tf.pretraining.masking import WORD_MARK, VocabularyTables, mask_sequence, word_spans
from albert_tf.pretraining.options import DataOptions
from albert_tf.tokenizer.loading import load_tokenizer
from albert_tf.tokenizer.wordpiece.whole_words import word_marks
from conftest import FIXTURES, SHARED

WORDPIECE = os.path.join(FIXTURES, "wordpiece", "vocab.txt")
SPM = os.path.join(FIXTURES, "spm", "albert_30k_clean.model")
pytestmark = pytest.mark.skipif(
    __import__("importlib").util.find_spec("jieba") is None, reason="jieba (albert-tf[zh])")


def _contexts(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)["data"]
    return [p["context"] for d in data for p in d["paragraphs"]]


def _sentences():
    """Real Chinese text: CMRC 2018's contexts, cut at the full stop."""
    texts = _contexts(os.path.join(FIXTURES, "clue", "cmrc2018", "train.json"))
    return [s + "。" for t in texts for s in t.split("。") if s.strip()]


def _pieces_and_marks(tokenizer, marks, sentence):
    document = tokenize_document(tokenizer, [sentence], marks)
    tokens = document.tokens
    return ([tokenizer.id_to_piece(t & ~WORD_MARK) for t in tokens],
            [bool(t & WORD_MARK) for t in tokens])


def test_the_marks_are_brightmarts_on_its_own_example():
    tokenizer = load_tokenizer(WORDPIECE, host=True)
    marks = DataOptions().word_marks(tokenizer)  # auto: a Chinese WordPiece vocabulary
    pieces, marked = _pieces_and_marks(tokenizer, marks, "悬灸技术培训专家教你艾灸降血糖，为爸妈收好了！")
    # get_new_segment's docstring: 悬 ##灸 技 术 培 训 专 ##家 教 你 艾 ##灸 降 ##血 ##糖 ，
    # 为 爸 ##妈 收 ##好 了 ！ (技术培训, four characters, is longer than its longest word).
    assert ["##" * m + p for p, m in zip(pieces, marked)] == [
        "悬", "##灸", "技", "术", "培", "训", "专", "##家", "教", "你", "艾", "##灸", "降", "##血",
        "##糖", "，", "为", "爸", "##妈", "收", "##好", "了", "！"]


def test_the_rule_on_pieces_matches_a_plain_reading_of_it():
    # English pieces are left to WordPiece's own "##"; a word is matched at most 3 long.
    assert word_marks(["中", "华", "人", "民", "abc", "##d", "国"],
                      ["中华人民", "中华", "人民", "abc##d", "国"]) == [
        False, True, False, True, False, False, False]
    assert word_marks(["一", "二", "三", "四"], ["一二三四", "二三四"]) == [
        False, False, True, True]


def test_every_word_is_masked_whole_or_not_at_all_and_ngrams_count_words():
    tokenizer = load_tokenizer(WORDPIECE, host=True)
    marks = DataOptions().word_marks(tokenizer)
    tables = VocabularyTables.from_tokenizer(tokenizer)
    rng = np.random.default_rng(0)
    multi, whole = 0, 0
    for sentence in _sentences()[:60]:
        tokens = tokenize_document(tokenizer, [sentence], marks).tokens[:60]
        sequence = np.concatenate([[tables.cls_id], tokens, [tables.sep_id]])
        starts, ends, _ = word_spans(sequence, tables)
        masked = mask_sequence(sequence, tables, rng, 0.15, 20, 3)
        assert not (masked.token_ids & WORD_MARK).any()  # no mark reaches a record
        chosen = np.zeros(len(sequence), bool)
        chosen[masked.positions] = True
        for start, end in zip(starts, ends):
            assert chosen[start:end].all() or not chosen[start:end].any()
            if end - start > 1:
                multi += 1
                whole += int(chosen[start:end].all())
    assert multi > 100 and whole > 0  # words of several characters exist and get masked


def test_on_off_and_the_users_dictionary(tmp_path):
    tokenizer = load_tokenizer(WORDPIECE, host=True)
    assert DataOptions(whole_word_masking="off").word_marks(tokenizer) is None
    english = load_tokenizer(SPM, host=True)
    assert DataOptions().word_marks(english) is None  # auto: no segmenter needed
    with pytest.raises(ValueError, match="whole_word_masking=on: the sentencepiece vocabulary "
                                         "needs no segmenter"):
        DataOptions(whole_word_masking="on").word_marks(english)
    with pytest.raises(ValueError, match="jieba_dict is for whole-word masking"):
        DataOptions(whole_word_masking="off", jieba_dict="x.txt")
    with pytest.raises(FileNotFoundError, match="--jieba_dict: no such file"):
        DataOptions(jieba_dict=str(tmp_path / "none.txt")).word_marks(tokenizer)
    sentence = "袋鼠岛繁殖"
    default = _pieces_and_marks(tokenizer, DataOptions().word_marks(tokenizer), sentence)[1]
    (tmp_path / "words.txt").write_text("鼠岛 100000\n", encoding="utf-8")
    own = _pieces_and_marks(tokenizer, DataOptions(jieba_dict=str(tmp_path / "words.txt"))
                            .word_marks(tokenizer), sentence)[1]
    # 袋鼠 | 岛 | 繁殖 by jieba's own dictionary; 袋 | 鼠岛 | 繁殖 with the user's.
    assert default == [False, True, False, False, True]
    assert own == [False, False, True, False, True]


@pytest.mark.shared
def test_every_word_of_the_shared_clue_text_is_masked_whole_or_not_at_all(tmp_path):
    """The shared CMRC 2018 trial set, through the whole pipeline: the records' masked
    positions never split a word the marks make."""
    from albert_tf.pretraining.pipeline import create_pretraining_data

    tokenizer = load_tokenizer(WORDPIECE, host=True)
    corpus = tmp_path / "corpus.txt"
    texts = _contexts(os.path.join(SHARED, "data", "clue", "cmrc2018", "trial.json"))[:200]
    corpus.write_text("\n\n".join("\n".join(s + "。" for s in t.split("。") if s.strip())
                                  for t in texts) + "\n", encoding="utf-8")
    summary = create_pretraining_data([str(corpus)], tokenizer, str(tmp_path / "out"),
                                      DataOptions(max_seq_length=128, dupe_factor=1,
                                                  max_predictions_per_seq=20))
    assert summary.whole_words and "words: jieba's" in summary.format()
    assert summary.instances > 50
