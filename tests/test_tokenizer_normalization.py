"""The per-character normalization equals the reference `preprocess_text`, host and in-graph."""

import json
import os
import random
import unicodedata

import pytest
import tensorflow as tf

from albert_tf.tokenizer import normalization
from albert_tf.tokenizer.sentencepiece import graph_ops
from albert_tf.tokenizer.normalization import (aligned_emissions, preprocess_text,
                                               preprocess_text_fast, to_text)
from conftest import FIXTURES

REFERENCE = os.path.join(FIXTURES, "spm", "tokenization_reference.jsonl")

# Characters that exercise every rule: whitespace of all kinds, quote runs,
# combining marks (before/after), compatibility forms, Hangul, capital sigma
# and its lookalikes in every context, case-ignorable and cased oddities.
TRICKY = list("ab AZ.,1`'\"\t\n\r\x0b\x0c\x1c\x85\u00a0\u2003\u3000\u2028") + [
    "\u0301", "\u0308", "\u0345", "\u02b0", "\u00a8", "\u00b4", "\ufb01", "\u00bd", "\u2460",
    "\uff21", "\u1e9e", "\u0130", "\u01c5", "\u03a3", "\u03a3", "\u03f9", "\U0001d6ba", "\u03c3",
    "\u0391", "\u1f08", "\ud55c", "\u3131", "\u00aa", "\u2126", "\u212b", "\u1fef", "\ufdfa",
    "\u0f73", "\uff9e", "\u200b", "\ufeff", "\x00", "\ufffd", "\u00df", "\u0149"]


# ASCII whitespace and quotes, and non-ASCII characters that normalize to
# themselves: rows made of these take `graph_ops.normalize`'s regex path.
PLAIN = list("aZ 0,.`'\t\n\x0b\x0c\r\x1c\x1f\x00\x7f") + ["\u201c", "\u2014", "\u2019"]


def _random_strings(seed, count, max_len=14, pool=None):
    rng = random.Random(seed)
    pool = pool or TRICKY + [chr(rng.randrange(0x20, 0x3000)) for _ in range(60)]
    pool = [c for c in pool if ord(c) not in normalization.SURROGATES]
    return ["".join(rng.choice(pool) for _ in range(rng.randrange(max_len + 1)))
            for _ in range(count)]


def _reference_texts():
    with open(REFERENCE, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


@pytest.mark.parametrize("lowercase", [True, False])
def test_host_emissions_join_to_preprocess_text(lowercase):
    texts = _reference_texts() + _random_strings(0, 3000)
    for text in texts:
        expected = preprocess_text(text, lowercase)
        emissions = aligned_emissions(text, lowercase)
        assert len(emissions) == len(text)
        assert "".join(emissions) == expected, repr(text)
        assert preprocess_text_fast(text, lowercase) == expected, repr(text)


@pytest.mark.parametrize("lowercase", [True, False])
def test_graph_normalization_equals_preprocess_text(lowercase):
    texts = (_reference_texts()[:40] + _random_strings(1, 1500) + ["", "  ", "ΟΔΟΣ ΟΔΟΣ."]
             + _random_strings(4, 1500, pool=PLAIN))
    tables = graph_ops.GraphTables.build(lowercase, vocab_size=1, rules={})
    emitted = graph_ops.emit(graph_ops.Chars.decode(tf.constant(texts)), tables, lowercase)
    normalized = graph_ops.normalize(tf.constant(texts), tables, lowercase)
    for text, full, fast in zip(texts, emitted.text.numpy(), normalized.numpy()):
        expected = preprocess_text(text, lowercase).encode("utf-8")
        assert full == expected and fast == expected, repr(text)


def test_reference_steps_are_the_documented_ones():
    assert preprocess_text("  A\u00a0\u00a0b\t``c''  ", lowercase=False) == 'A b "c"'
    assert preprocess_text("Café ÖSTERREICH", lowercase=True) == "cafe osterreich"
    assert preprocess_text("ﬁ ½", lowercase=False) == "fi 1\u20442"
    # str.lower's final sigma depends on the neighbours, across emissions.
    assert preprocess_text("ΟΔΟΣ ΟΔΟΣ.", lowercase=True) == "οδος οδος."
    assert preprocess_text("ΣΑ Σ", lowercase=True) == "σα σ"
    assert aligned_emissions("x ``y", lowercase=False) == ["x", " ", '"', "", "y"]


def test_whitespace_table_matches_str_split():
    spaces = set(normalization.whitespace_code_points())
    for cp in range(normalization.MAX_CODE_POINT):
        if cp in normalization.SURROGATES:
            continue
        assert (len(("a" + chr(cp) + "b").split()) == 2) == (cp in spaces), hex(cp)


def test_case_classes_reproduce_final_sigma_rule():
    rng = random.Random(2)
    for _ in range(3000):
        c = chr(rng.randrange(0x20, 0x20000))
        if ord(c) in normalization.SURROGATES:
            continue
        cls = normalization.case_class(ord(c))
        assert ((c + "Σ").lower()[-1] == "ς") == (cls == normalization.CASED)
        assert (("A" + c + "Σ").lower()[-1] == "ς") == (cls != normalization.OTHER)


def test_mapping_table_drops_exactly_the_combining_characters():
    table = dict(zip(normalization.mapping_table(False).keys,
                     normalization.mapping_table(False).emissions))
    for cp in (0x0301, 0x0345, 0x05B0, 0x1D165):
        assert unicodedata.combining(chr(cp)) and table[cp] == ""
    assert 0x0903 not in table  # a spacing mark with combining class 0 stays


@pytest.mark.parametrize("raw", [b"a\xffb", b"\xe2\x82", b"\xf0\x9f\x98", b"\xed\xa0\x80",
                                 b"\xc0\xaf", b"\xf4\x90\x80\x80", b"ab\xe2\x82xy\xe2", b"\x80"])
def test_invalid_utf8_replaced_like_python(raw):
    chars = graph_ops.Chars.decode(tf.constant([raw]))
    assert chars.cp.numpy().tolist() == [ord(c) for c in to_text(raw)]


def test_random_bytes_decode_like_python():
    rng = random.Random(3)
    blobs = [bytes(rng.randrange(256) for _ in range(rng.randrange(12))) for _ in range(300)]
    chars = graph_ops.Chars.decode(tf.constant(blobs))
    splits = chars.splits.numpy()
    cps = chars.cp.numpy().tolist()
    for i, blob in enumerate(blobs):
        assert cps[splits[i]:splits[i + 1]] == [ord(c) for c in to_text(blob)], blob


def test_to_text_rejects_non_strings_and_replaces_surrogates():
    assert to_text("a\ud800b") == "a\ufffdb"
    with pytest.raises(TypeError, match="expected str or bytes, got int"):
        to_text(3)
