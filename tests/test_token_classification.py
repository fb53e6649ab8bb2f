"""Token classification: reading CoNLL and JSON-lines files, the user's mistakes, features."""

import json
import logging
import os

import numpy as np
import pytest

from albert_tf import tasks
from albert_tf.tokenizer.loading import load_tokenizer
from albert_tf.models.token_classifier import IGNORED
from conftest import FIXTURES
from albert_tf.tasks.token_classification import data as token_data
from albert_tf.tasks.token_classification import features as token_features
from albert_tf.tasks.token_classification import tagging
from albert_tf.tasks.token_classification.options import TokenOptions
from token_reference import char_entities as reference_entities
from token_reference import word_starts as reference_word_starts

NER = os.path.join(FIXTURES, "ner")
SPM = os.path.join(FIXTURES, "spm", "albert_30k_clean.model")
WORDPIECE = os.path.join(FIXTURES, "wordpiece", "vocab.txt")
TASK = tasks.get("token_classification")


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def _options(train, eval_file="", **kwargs):
    return TokenOptions(train_file=train, eval_file=eval_file, **kwargs)


def test_conll_sentences_skip_docstart_and_keep_word_spans():
    examples = token_data.read_file(os.path.join(NER, "train.conll"))
    assert len(examples) == 5
    first = examples[0]
    assert first.text.startswith("EU rejects German call")
    assert [first.text[s:e] for s, e in first.words][:3] == ["EU", "rejects", "German"]
    assert first.tags[:3] == ("I-ORG", "O", "I-MISC")
    assert first.where.endswith("train.conll:3")


def test_conll_line_with_another_number_of_columns_is_named(tmp_path):
    path = _write(tmp_path / "bad.conll", "EU NNP B-ORG\nrejects VBZ O\n\ncall O\n")
    with pytest.raises(ValueError, match=r"bad.conll:4: 2 columns, expected 3"):
        token_data.read_file(path)
    path = _write(tmp_path / "tag.conll", "EU B-ORG\nrejects Q\n")
    with pytest.raises(ValueError, match=r"tag.conll:2: tag 'Q'"):
        token_data.read_file(path)


def test_json_spans_are_checked_and_overlaps_dropped(tmp_path, caplog):
    path = _write(tmp_path / "bad.json", json.dumps(
        {"text": "叶老桂博士", "label": {"name": {"叶老": [[0, 2]]}}}, ensure_ascii=False) + "\n")
    with pytest.raises(ValueError, match=r"bad.json:1: name '叶老' at \[0, 2\].*'叶老桂'"):
        token_data.read_file(path)
    rows = [{"text": "浙商银行企业", "label": {"company": {"浙商银行": [[0, 3]]},
                                              "name": {"银行企": [[2, 4]]}}}, {"text": ""}]
    path = _write(tmp_path / "overlap.json",
                  "\n".join(json.dumps(r, ensure_ascii=False) for r in rows))
    with caplog.at_level(logging.WARNING):
        examples = token_data.read_file(path)
    assert [e.type for e in examples[0].entities] == ["company"]
    assert "1 overlapping entities dropped (the first at" in caplog.text
    assert examples[1].text == "" and examples[1].entities == ()


def test_empty_training_file_is_an_error(tmp_path):
    path = _write(tmp_path / "empty.conll", "\n-DOCSTART- O\n\n")
    with pytest.raises(ValueError, match="empty.conll: no sentences"):
        TASK.read_examples("", "train", _options(path))


def test_eval_type_never_seen_in_training_names_it_and_the_line(tmp_path):
    dev = _write(tmp_path / "dev.conll", "Paris B-LOC\n\nIBM B-COMPANY\n")
    with pytest.raises(ValueError, match=r"dev.conll:3: type 'COMPANY' never occurs in "
                                         r"training \(its types: LOC, MISC, ORG, PER\)"):
        TASK.read_examples("", "dev", _options(os.path.join(NER, "train.conll"), dev))


def test_broken_sequences_are_reported_then_repaired_or_refused(tmp_path, caplog):
    train = _write(tmp_path / "train.conll", "Ann B-PER\nLee E-PER\n\nin O\nParis I-LOC\n\n"
                                             "Rome S-LOC\n")
    with caplog.at_level(logging.WARNING):
        examples = TASK.read_examples("", "train", _options(train))
    assert "1 tag sequence(s) break the file's scheme BIOES (the first at " \
           f"{train}:4)" in caplog.text
    # Read as conlleval reads it: "I-LOC" after O begins an entity.
    assert tagging.convert(list(examples[1].tags), "bioes") == ["O", "S-LOC"]
    assert TASK.tags(_options(train)) == tagging.tag_list(["LOC", "PER"], "bioes")
    with pytest.raises(ValueError, match=r"1 tag sequence\(s\) break"):
        TASK.read_examples("", "train", _options(train, scheme_errors="error"))


def test_iob1_training_file_gives_an_iob2_model():
    tags = TASK.tags(_options(os.path.join(NER, "train.conll")))
    assert tags == ["O", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "B-ORG", "I-ORG", "B-PER",
                    "I-PER"]
    assert TASK.tags(_options("x", entity_tags="O,B-X,I-X")) == ["O", "B-X", "I-X"]


def test_labels_go_on_first_sub_tokens_and_windows_merge_back():
    tokenizer = load_tokenizer(SPM, host=True)
    examples = token_data.read_file(os.path.join(NER, "train.conll"))
    tags = TASK.tags(_options(os.path.join(NER, "train.conll")))
    features = token_features.featurize(examples, tokenizer, 10, tags, labelled=True)
    labels, words = features.arrays["label"], features.arrays["word_index"]
    assert len(features) > len(examples)  # the long sentences take several windows
    assert ((labels != IGNORED) == (words >= 0)).all()
    # One label per word, on its first piece, though words take several pieces.
    ids, _, _ = tokenizer.encode_with_offsets("Zwingmann")
    assert len(ids) > 1
    assert (labels != IGNORED).sum() == sum(len(e.words) for e in examples)
    assert sum(features.lengths - 2) > sum(len(e.words) for e in examples)
    # Gold ids put back through the windows give every word's tag.
    gold = token_features.word_tags(features, np.maximum(labels, 0),
                                    [len(e.words) for e in examples], tags)
    assert gold == [tagging.convert(list(e.tags), "iob2") for e in examples]


def test_character_entities_become_chinese_word_tags():
    tokenizer = load_tokenizer(WORDPIECE, host=True)
    example = token_data.read_file(os.path.join(NER, "cluener_train.json"))[0]
    encoded, = token_features.encode_all([example], tokenizer, "iob2")
    words = [example.text[s:e] for s, e in encoded.spans]
    assert words[:4] == ["浙", "商", "银", "行"]
    assert encoded.tags[:4] == ["B-company", "I-company", "I-company", "I-company"]
    assert encoded.tags[9:12] == ["B-name", "I-name", "I-name"]
    found, = token_features.char_entities([example.text], [encoded.spans], [encoded.tags],
                                          tagging.tag_list(["company", "name"], "iob2"))
    assert {(e["type"], e["text"]) for e in found} == {("company", "浙商银行"),
                                                       ("name", "叶老桂")}


def test_an_empty_text_is_one_window_with_nothing_to_tag():
    tokenizer = load_tokenizer(WORDPIECE, host=True)
    example = token_data.TaggedExample("e", "", "x:1", entities=())
    features = token_features.featurize([example], tokenizer, 8, ["O", "B-X", "I-X"], True)
    assert features.lengths.tolist() == [2] and (features.arrays["label"] == IGNORED).all()
    assert token_features.word_tags(features, np.zeros((1, 8), np.int32), [0], ["O"]) == [[]]


REFERENCE_TEXTS = ["浙商银行企业信贷部叶老桂博士则从另一个角度对五道门槛进行了解读。", "", "   ",
                   "，。！？", "iPhone6s在2014年发布，售价5288元。" * 6, "U.S.-born (John) Smith's",
                   "caf\u00e9 \ufffd ok\u3000再见!", "Anna met Bob in Rome " * 12]


@pytest.mark.parametrize("vocabulary", [SPM, WORDPIECE], ids=["sentencepiece", "wordpiece"])
def test_words_and_entities_equal_the_host_reference(vocabulary, monkeypatch):
    monkeypatch.setattr(token_features, "BATCH_TEXTS", 3)  # several batches
    tokenizer = load_tokenizer(vocabulary, host=True)
    examples = [token_data.TaggedExample(str(i), t, f"t:{i}")
                for i, t in enumerate(REFERENCE_TEXTS)]
    encoded = token_features.encode_all(examples, tokenizer, "bioes")
    for text, enc in zip(REFERENCE_TEXTS, encoded):
        _, starts, ends = tokenizer.encode_with_offsets(text)
        begins = reference_word_starts(text, starts, ends)
        word = np.cumsum(begins) - 1
        assert enc.token_word == [int(w) if b else -1 for w, b in zip(word, begins)]
        assert enc.spans == [(starts[i], max(ends[j] for j in range(len(starts)) if word[j] == w))
                             for w, i in enumerate(np.flatnonzero(begins))]
    assert max(len(e.ids) for e in encoded) > 60 and encoded[1].spans == []
    tags = tagging.tag_list(["LOC", "PER"], "bioes")
    rng = np.random.default_rng(7)
    predicted = [[tags[k] for k in rng.integers(0, len(tags), len(e.spans))] for e in encoded]
    found = token_features.char_entities(REFERENCE_TEXTS, [e.spans for e in encoded],
                                         predicted, tags)
    assert found == [reference_entities(p, e.spans, t)
                     for p, e, t in zip(predicted, encoded, REFERENCE_TEXTS)]
    assert sum(map(len, found)) > 10
