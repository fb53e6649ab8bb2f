"""The token classification serving graph equals the host pipeline: the same words, windows,
tags and entities with character offsets, for SentencePiece (English) and WordPiece (Chinese)."""

import os

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.tokenizer.loading import load_tokenizer
from albert_tf.export.token_classification import TokenClassifierServing
from albert_tf.steps.words import graph_word_starts
from conftest import FIXTURES
from export_helpers import SPM, assert_refuses_other_shapes, token_model
from albert_tf.tasks.token_classification import features as token_features
from albert_tf.tasks.token_classification import tagging
from albert_tf.tasks.token_classification.data import TaggedExample
from token_reference import char_entities, word_starts

WORDPIECE = os.path.join(FIXTURES, "wordpiece", "vocab.txt")
ENGLISH = ["John Smith lives in New York, near the U.S. border.", "", "!!!", "   ",
           "Anna met Bob and Carl in Paris and Rome " * 3, b"caf\xc3\xa9 \xff ok".decode(
               "utf-8", "replace"), "x" * 30]
CHINESE = ["浙商银行企业信贷部叶老桂博士则从另一个角度对五道门槛进行了解读。", "", "，。！？",
           "生生不息CSOL生化狂潮让你填弹狂扫", "iPhone6s在2014年发布，售价5288元。" * 2]
# Raw bytes the serving graph gets for the texts above (invalid UTF-8 read as U+FFFD).
RAW = {ENGLISH[5]: b"caf\xc3\xa9 \xff ok"}


def _host(model, tokenizer, texts, tags, max_seq_length):
    """Entities and per-token tags of the task's evaluation path, its entities
    read by the host reference."""
    examples = [TaggedExample(str(i), t, f"t:{i}") for i, t in enumerate(texts)]
    features = token_features.featurize(examples, tokenizer, max_seq_length, tags, False)
    arrays = features.arrays
    mask = (np.arange(max_seq_length)[None] < features.lengths[:, None]).astype(np.int32)
    logits = model({"token_ids": arrays["token_ids"], "segment_ids": arrays["segment_ids"],
                    "padding_mask": mask}, training=False)["logits"]
    ids = model.decode(logits, arrays["word_index"] >= 0).numpy()
    scheme = "bioes" if any(t[0] == "S" for t in tags) else "iob2"
    encoded = token_features.encode_all(examples, tokenizer, scheme)
    words = token_features.word_tags(features, ids, [len(e.spans) for e in encoded], tags)
    out = []
    for text, enc, word_tag_list in zip(texts, encoded, words):
        entities = [(e["type"], e["start"], e["end"], e["text"])
                    for e in char_entities(word_tag_list, enc.spans, text)]
        # Served tokens are those that spell a character; a word's tag goes on the
        # first of them (a lone "▁" first token passes its word's tag on).
        _, starts, ends = tokenizer.encode_with_offsets(text)
        token_tags, pending = [], None
        for w, start, end in zip(enc.token_word, starts, ends):
            pending = word_tag_list[w] if w >= 0 else pending
            if end > start:
                token_tags.append(pending or "")
                pending = None
        out.append((entities, token_tags))
    return out


def _served(module, texts):
    raw = [RAW.get(t, t.encode("utf-8")) for t in texts]
    outputs = {k: v.numpy() for k, v in module.serving_default(text=tf.constant(raw)).items()}
    out = []
    for i in range(len(texts)):
        n, m = outputs["num_entities"][i], outputs["num_tokens"][i]
        entities = [(outputs["entity_type"][i, j].decode(), int(outputs["entity_start"][i, j]),
                     int(outputs["entity_end"][i, j]), outputs["entity_text"][i, j].decode())
                    for j in range(n)]
        out.append((entities, [t.decode() for t in outputs["token_tag"][i, :m]]))
    return out


@pytest.mark.parametrize("vocabulary, texts, scheme, crf, seed", [
    (SPM, ENGLISH, "iob2", False, 3), (WORDPIECE, CHINESE, "bioes", True, 6)],
    ids=["sentencepiece-softmax", "wordpiece-crf"])
def test_serving_graph_equals_host_pipeline(vocabulary, texts, scheme, crf, seed):
    host_tokenizer = load_tokenizer(vocabulary, host=True)
    tags = tagging.tag_list(["LOC", "PER", "ORG"], scheme)
    model = token_model(host_tokenizer.vocabulary_size, tags, crf, seed)
    max_seq_length = 9  # windows of 7 tokens: the long texts take several
    module = TokenClassifierServing(model, load_tokenizer(vocabulary, host=False),
                                    max_seq_length, tags)
    expected = _host(model, host_tokenizer, texts, tags, max_seq_length)
    got = _served(module, texts)
    assert got == expected
    assert any(entities for entities, _ in got), "random weights found no entity: weak test"
    for text, (entities, _) in zip(texts, got):
        for _, start, end, surface in entities:
            assert text[start:end] == surface


def test_word_rule_is_the_same_on_the_host_and_in_the_graph():
    for vocabulary, texts in ((SPM, ENGLISH), (WORDPIECE, CHINESE)):
        host = load_tokenizer(vocabulary, host=True)
        spans = [host.encode_with_offsets(t)[1:] for t in texts]
        expected = [word_starts(t, s, e) for t, (s, e) in zip(texts, spans)]
        starts = tf.ragged.constant([s for s, _ in spans], dtype=tf.int32, ragged_rank=1)
        ends = tf.ragged.constant([e for _, e in spans], dtype=tf.int32, ragged_rank=1)
        chars = tf.strings.unicode_decode(tf.constant(texts), "UTF-8")
        assert graph_word_starts(chars, starts, ends).to_list() == expected
    # Chinese characters and punctuation are words of their own; "##" pieces are not.
    text = "叶老桂认为，unbelievable"
    s, e = load_tokenizer(WORDPIECE, host=True).encode_with_offsets(text)[1:]
    words = [text[a:b] for a, b, first in zip(s, e, word_starts(text, s, e)) if first]
    assert words[:5] == ["叶", "老", "桂", "认", "为"] and words[5] == "，"


def test_no_word_and_no_entity_has_an_empty_span():
    # SentencePiece writes a lone "▁" (no character) before a text's first Chinese
    # character: it is one word with the token after it, for both decoders.
    host_tokenizer = load_tokenizer(SPM, host=True)
    texts = ["叶老桂认为，浙商银行在杭州。", "<unk>"] + CHINESE
    for text in texts:
        _, s, e = host_tokenizer.encode_with_offsets(text)
        words = [a for a, first in zip(range(len(s)), word_starts(text, s, e)) if first]
        assert all(max(e[w:(words + [len(s)])[k + 1]]) > s[w] for k, w in enumerate(words))
    tags = tagging.tag_list(["LOC", "PER", "ORG"], "bioes")
    model = token_model(host_tokenizer.vocabulary_size, tags, True, 6)
    module = TokenClassifierServing(model, load_tokenizer(SPM, host=False), 9, tags)
    got = _served(module, texts)
    assert any(entities for entities, _ in got), "random weights found no entity: weak test"
    for text, (entities, _) in zip(texts, got):
        assert all(end > start and surface for _, start, end, surface in entities), text
    raw = module.serving_default(text=tf.constant(texts))
    for i in range(len(texts)):
        m = int(raw["num_tokens"][i])
        assert np.all(raw["token_end"][i, :m] > raw["token_start"][i, :m]), texts[i]
    assert got == _host(model, host_tokenizer, texts, tags, 9)
    assert_refuses_other_shapes(module.signatures()["serving_default"], text=texts[:3])
