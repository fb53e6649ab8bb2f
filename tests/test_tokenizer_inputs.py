"""Bad and unusual input: a defined result (the reference's on the decoded text) or an error."""

import os

import pytest
import sentencepiece as spm
import tensorflow as tf

from albert_tf.tokenizer import AlbertTokenizer, HostTokenizer, preprocess_text
from albert_tf.tokenizer.normalization import to_text
from conftest import FIXTURES

MODEL = os.path.join(FIXTURES, "spm", "albert_30k_clean.model")

# The documented results: "" and whitespace give no tokens; control characters
# go to SentencePiece's normalizer; invalid UTF-8 becomes U+FFFD (-> <unk>).
ODD_INPUTS = [
    "",
    " \t\n\r\u3000\u00a0\u2028 ",
    "\x00\x01abc\x7f\u200b\ufeffdef\x1b[0m\x85x",
    b"caf\xc3 \xff\xfe ok \xe2\x82",
    b"\xed\xa0\x80 surrogate bytes",
    "\ufffd replacement",
    "````''''' ` '",
    "a\u0301\u0301\u0301 \u0301 lone accent",
]


@pytest.fixture(scope="module")
def graph_tok(spm_tokenizer):
    return spm_tokenizer


@pytest.fixture(scope="module")
def host_tok():
    return HostTokenizer(MODEL)


@pytest.fixture(scope="module")
def sp():
    return spm.SentencePieceProcessor(model_file=MODEL)


def reference_ids(sp, text):
    """The reference on the decoded text (no digit-comma pieces occur in these inputs)."""
    return sp.encode(preprocess_text(to_text(text), lowercase=True))


@pytest.mark.parametrize("text", ODD_INPUTS)
def test_odd_input_host_graph_and_reference_agree(graph_tok, host_tok, sp, text):
    expected = reference_ids(sp, text)
    assert host_tok.encode(text) == expected
    assert graph_tok(text).numpy().tolist() == expected
    ids, starts, ends = graph_tok.tokenize_with_offsets(text)
    host = host_tok.encode_with_offsets(text)
    assert (ids.numpy().tolist(), starts.numpy().tolist(), ends.numpy().tolist()) == host
    assert host[0] == expected
    length = len(to_text(text))
    assert all(0 <= s <= e <= length for s, e in zip(host[1], host[2]))


def test_empty_and_whitespace_give_no_tokens(graph_tok, host_tok):
    assert host_tok.encode("") == [] and host_tok.encode(" \t\n") == []
    ids = graph_tok(["", "  ", "a", "\u3000"])
    assert ids.to_list() == [[], [], [host_tok.encode("a")[0]], []]
    assert graph_tok("").shape == (0,)


def test_invalid_utf8_is_replacement_characters(graph_tok, host_tok):
    raw = b"ab\xffcd"
    assert host_tok.encode(raw) == host_tok.encode("ab\ufffdcd")
    assert graph_tok(raw).numpy().tolist() == host_tok.encode("ab\ufffdcd")
    ids, starts, ends = graph_tok.tokenize_with_offsets(raw)
    text = "ab\ufffdcd"  # offsets index the decoded text
    pieces = [text[s:e] for s, e in zip(starts.numpy(), ends.numpy())]
    assert "".join(pieces) == text


def test_batch_of_odd_inputs_equals_one_by_one(graph_tok, host_tok):
    ids, starts, ends = graph_tok.tokenize_with_offsets(tf.constant(
        [t.encode("utf-8") if isinstance(t, str) else t for t in ODD_INPUTS]))
    for i, text in enumerate(ODD_INPUTS):
        got = (ids[i].numpy().tolist(), starts[i].numpy().tolist(), ends[i].numpy().tolist())
        assert got == host_tok.encode_with_offsets(text)


def test_one_megabyte_text(graph_tok, host_tok):
    unit = "Naïve Σίσυφος, in 1990, said ``hi''\t\u00a0 — ok. "
    text = unit * (1_000_000 // len(unit)) + "The end."
    assert len(text.encode("utf-8")) > 1_000_000
    expected = host_tok.encode(text)
    assert len(expected) > 300_000
    assert graph_tok(text).numpy().tolist() == expected
    ids, starts, ends = graph_tok.tokenize_with_offsets(text.encode("utf-8"))
    got = (ids.numpy().tolist(), starts.numpy().tolist(), ends.numpy().tolist())
    assert got == host_tok.encode_with_offsets(text)
    assert [text[s:e] for s, e in zip(got[1][-3:], got[2][-3:])] == ["The", "end", "."]


@pytest.mark.parametrize("bad,message", [
    (tf.constant([1, 2]), "AlbertTokenizer expects strings, got dtype int32"),
    (tf.constant([["a"]]), r"expects a scalar or a 1-D batch of strings, got shape \(1, 1\)"),
])
def test_wrong_input_is_a_clear_error(graph_tok, bad, message):
    with pytest.raises(ValueError, match=message):
        graph_tok(bad)


def test_bad_model_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="SentencePiece model file not found: .*nope"):
        HostTokenizer(str(tmp_path / "nope.model"))
    with pytest.raises(ValueError, match="<SentencePiece model bytes>: not a SentencePiece model"):
        AlbertTokenizer(b"not a model")
    with pytest.raises(TypeError, match="proto must be a path or bytes, got int"):
        HostTokenizer(3)
