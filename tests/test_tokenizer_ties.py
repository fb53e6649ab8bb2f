"""Viterbi ties: the in-graph tokenizer decides them as the host `sentencepiece` does.

The reference (`sentencepiece` 0.2.x, `HostTokenizer`) and tensorflow-text's
bundled SentencePiece break ties between equal-score segmentations by the
rounding of different arithmetic (see `albert_tf.tokenizer.sentencepiece.graph_ties`);
`AlbertTokenizer` re-decides them. Every expectation here is the host's.
"""

import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.tokenizer import HostTokenizer, preprocess_text
from albert_tf.tokenizer.sentencepiece import graph_ties
from conftest import FIXTURES

MODEL = os.path.join(FIXTURES, "spm", "albert_30k_clean.model")

# Where the bundled op and the reference disagree (found on corpus paragraphs
# with numbers and repeated letters put in): the same pieces in another order.
DISAGREEING = [
    "an estimated 2.666 million residents",
    "about 12.22222 million",
    "eee eee hahaha",
    ".. hahaha eee",  # the same word as above, decided the other way
    "£2.22 or €666",  # user-defined pieces of 2 and 3 bytes before the tie
    '"_18 september._ 25099 512942470 xxxxx 26 162',  # <unk> runs before the tie
    "Naïve 2.666 café",
]
# Ties where the two happen to agree: they must stay as the reference has them.
AGREEING = ["2.666, 3.666 and 4.666", "zzzz zzz", "hmmm, 1111 and 2222",
            "it cost €666 at the door", "하 2.666 haha eee", "ﬁ 2.666"]


@pytest.fixture(scope="module")
def graph_tok(spm_tokenizer):
    return spm_tokenizer


@pytest.fixture(scope="module")
def host_tok():
    return HostTokenizer(MODEL)


_TRACED = {}


def _traced(tok):
    """`tok` on a batch, in a tf.function traced once for the file (tracing takes seconds)."""
    if "call" not in _TRACED:
        _TRACED["call"] = tf.function(tok, input_signature=[tf.TensorSpec([None], tf.string)])
    return _TRACED["call"]


def _chained(units):
    """One row with many ties, each decided from the running score the previous ones left."""
    rng = np.random.default_rng(3)
    return "".join(f"an estimated {rng.integers(10)}.{rng.choice(['666', '222', '5555'])} "
                   f"million, eee hahaha. " for _ in range(units))


def test_2666_million(graph_tok, host_tok):
    text = "an estimated 2.666 million residents"
    expected = [40, 2744, 172, 9, 379, 3526, 507, 2175]  # ▁an ▁estimated ▁2 . 6 66 ...
    assert [host_tok.id_to_piece(i) for i in expected[2:6]] == ["\u25812", ".", "6", "66"]
    assert host_tok.encode(text) == expected
    assert _traced(graph_tok)(tf.constant([text]))[0].numpy().tolist() == expected
    ids, starts, ends = graph_tok.tokenize_with_offsets(text)
    assert ids.numpy().tolist() == expected
    assert [text[s:e] for s, e in zip(starts.numpy(), ends.numpy())] == [
        "an", "estimated", "2", ".", "6", "66", "million", "residents"]


def test_bundled_op_decides_these_ties_otherwise(host_tok):
    raw = tf_text.SentencepieceTokenizer(model=host_tok.vocab.proto, out_type=tf.int32)
    for text in DISAGREEING:
        got = raw.tokenize(preprocess_text(text, True)).numpy().tolist()
        expected = host_tok.vocab.sp.encode(preprocess_text(text, True))
        assert got != expected and sorted(got) == sorted(expected), text


@pytest.mark.parametrize("text", DISAGREEING + AGREEING)
def test_ties_match_host(graph_tok, host_tok, text):
    assert graph_tok(text).numpy().tolist() == host_tok.encode(text)
    ids, starts, ends = graph_tok.tokenize_with_offsets(text)
    got = (ids.numpy().tolist(), starts.numpy().tolist(), ends.numpy().tolist())
    assert got == host_tok.encode_with_offsets(text)


def test_batch_equals_host_row_by_row(graph_tok, host_tok):
    texts = ["", DISAGREEING[0], "   ", _chained(3)] + DISAGREEING[1:]
    ids = _traced(graph_tok)(tf.constant(texts)).to_list()
    assert ids == [host_tok.encode(t) for t in texts]
    ids, starts, ends = graph_tok.tokenize_with_offsets(texts)
    assert list(zip(ids.to_list(), starts.to_list(), ends.to_list())) == [
        tuple(host_tok.encode_with_offsets(t)) for t in texts]


def test_chained_ties_in_one_long_row(graph_tok, host_tok):
    text = _chained(150)
    assert graph_tok(text).numpy().tolist() == host_tok.encode(text)
    ids, starts, ends = graph_tok.tokenize_with_offsets(text)
    assert (ids.numpy().tolist(), starts.numpy().tolist(), ends.numpy().tolist()) == (
        host_tok.encode_with_offsets(text))


def test_running_scores_add_in_order(graph_tok):
    """Float32 sums must be sequential, as the reference's are (not pairwise)."""
    rng = np.random.default_rng(5)
    lengths = [0, 1, 2500, 7]
    ids = rng.integers(5, graph_tok.vocabulary_size, sum(lengths)).astype(np.int32)
    units = np.where(rng.random(ids.size) < 0.01, 3, 1).astype(np.int32)
    ids[units == 3] = graph_tok.unk_id
    rows = np.repeat(np.arange(len(lengths), dtype=np.int32), lengths)
    path = graph_ties._Path(ids, rows, np.zeros_like(ids), np.zeros_like(ids), units)
    got = graph_ties._running_scores(path, graph_tok._ties, len(lengths)).numpy()
    scores = graph_tok.vocab.viterbi_pieces().scores.copy()
    scores[graph_tok.unk_id] = graph_tok.vocab.viterbi_pieces().unk_score
    expected, total, row = [], np.float32(0), -1
    for index, r, n in zip(ids, rows, units):
        total = np.float32(0) if r != row else total
        row = r
        expected.append(total)
        for _ in range(n):
            total = np.float32(total + scores[index])
    assert got.tobytes() == np.array(expected, np.float32).tobytes()


def test_reference_viterbi_scores(graph_tok):
    pieces = graph_tok.vocab.viterbi_pieces()
    user_defined = {t: pieces.scores[graph_tok.piece_to_id(t)] for t in (".", "£", "€")}
    assert user_defined == {".": np.float32(0), "£": np.float32(0.1), "€": np.float32(0.2)}
    normal = [s for s, t in zip(pieces.scores, pieces.texts) if t and s < 0]
    assert pieces.unk_score == np.float32(min(normal) - np.float32(10))
    assert pieces.margins[graph_tok.piece_to_id("6")] == np.inf
    assert pieces.texts[graph_tok.cls_id] == "" and pieces.texts[graph_tok.unk_id] == ""


def test_ties_in_tf_data_and_saved_model(graph_tok, host_tok, tmp_path):
    expected = [host_tok.encode(t) for t in DISAGREEING]
    data = tf.data.Dataset.from_tensor_slices(DISAGREEING).batch(3).map(graph_tok)
    assert [row for batch in data for row in batch.to_list()] == expected

    module = tf.Module()
    module.tokenizer = graph_tok
    module.encode = tf.function(lambda texts: graph_tok(texts).to_tensor(-1),
                                input_signature=[tf.TensorSpec([None], tf.string)])
    tf.saved_model.save(module, str(tmp_path))
    padded = tf.saved_model.load(str(tmp_path)).encode(tf.constant(DISAGREEING)).numpy()
    assert [[i for i in row if i >= 0] for row in padded.tolist()] == expected
