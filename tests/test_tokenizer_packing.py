"""SegmentPacker against the reference truncation and the host reference `pack_host`."""

import random

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.steps import SegmentPacker
from packing_reference import pack_host, truncated_lengths

CLS, SEP, PAD = 101, 102, 7  # all different from each other and from the ids used


def truncate_seq_pair(tokens_a, tokens_b, max_length):
    """google-research/albert `classifier_utils._truncate_seq_pair`, as a loop."""
    tokens_a, tokens_b = list(tokens_a), list(tokens_b)
    while len(tokens_a) + len(tokens_b) > max_length:
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()
    return tokens_a, tokens_b


def test_closed_form_equals_the_reference_loop():
    for len_a in range(0, 14):
        for len_b in range(0, 14):
            for budget in range(0, 20):
                a, b = truncate_seq_pair(range(len_a), range(len_b), budget)
                assert truncated_lengths(len_a, len_b, budget) == (len(a), len(b)), \
                    (len_a, len_b, budget)


def test_pack_host_layout():
    out = pack_host([11, 12, 13], [21, 22], 9, CLS, SEP, PAD)
    assert out["token_ids"].tolist() == [CLS, 11, 12, 13, SEP, 21, 22, SEP, PAD]
    assert out["segment_ids"].tolist() == [0, 0, 0, 0, 0, 1, 1, 1, 0]
    assert out["padding_mask"].tolist() == [1, 1, 1, 1, 1, 1, 1, 1, 0]
    assert all(v.dtype == np.int32 for v in out.values())
    single = pack_host([11, 12, 13, 14, 15], None, 5, CLS, SEP, PAD)
    assert single["token_ids"].tolist() == [CLS, 11, 12, 13, SEP]
    # Ties drop from b: 4 + 4 tokens into a budget of 5 keeps 3 of a, 2 of b.
    tie = pack_host([11, 12, 13, 14], [21, 22, 23, 24], 8, CLS, SEP, PAD)
    assert tie["token_ids"].tolist() == [CLS, 11, 12, 13, SEP, 21, 22, SEP]


def _random_batch(rng, batch, max_len):
    return [[rng.randrange(200, 300) for _ in range(rng.randrange(max_len + 1))]
            for _ in range(batch)]


@pytest.mark.parametrize("seq_length", [3, 4, 5, 11, 23])
def test_graph_equals_host_on_random_pairs(seq_length):
    rng = random.Random(seq_length)
    a, b = _random_batch(rng, 13, 17), _random_batch(rng, 13, 9)
    packer = SegmentPacker(seq_length, cls_id=CLS, sep_id=SEP, pad_id=PAD)
    call = tf.function(packer) if seq_length == 11 else packer  # traced and eager
    got = call(tf.ragged.constant(a, tf.int32), tf.ragged.constant(b, tf.int32))
    for i in range(len(a)):
        expected = pack_host(a[i], b[i], seq_length, CLS, SEP, PAD)
        ta, tb = truncate_seq_pair(a[i], b[i], seq_length - 3)
        assert expected["token_ids"][:len(ta) + len(tb) + 3].tolist() == \
            [CLS] + ta + [SEP] + tb + [SEP]
        for k, v in expected.items():
            assert got[k].shape == (13, seq_length) and got[k].dtype == tf.int32
            np.testing.assert_array_equal(got[k][i].numpy(), v, err_msg=f"{k} row {i}")


@pytest.mark.parametrize("seq_length", [2, 6, 20])
def test_graph_equals_host_on_random_singles(seq_length):
    rng = random.Random(seq_length)
    a = _random_batch(rng, 5, 25)
    got = SegmentPacker(seq_length, cls_id=CLS, sep_id=SEP, pad_id=PAD)(
        tf.ragged.constant(a, tf.int32))
    for i in range(len(a)):
        for k, v in pack_host(a[i], None, seq_length, CLS, SEP, PAD).items():
            np.testing.assert_array_equal(got[k][i].numpy(), v, err_msg=f"{k} row {i}")


def test_single_example_and_dense_inputs():
    packer = SegmentPacker(7, cls_id=CLS, sep_id=SEP, pad_id=PAD)
    one = packer(tf.constant([11, 12]), tf.constant([21, 22, 23, 24, 25]))
    assert one["token_ids"].numpy().tolist() == [CLS, 11, 12, SEP, 21, 22, SEP]
    dense = packer(np.array([[11, 12, 13], [14, 15, 16]], np.int64))
    assert dense["token_ids"].numpy().tolist() == [[CLS, 11, 12, 13, SEP, PAD, PAD],
                                                   [CLS, 14, 15, 16, SEP, PAD, PAD]]
    empty = packer(tf.ragged.constant([[]], tf.int32), tf.ragged.constant([[]], tf.int32))
    assert empty["token_ids"].numpy().tolist() == [[CLS, SEP, SEP, PAD, PAD, PAD, PAD]]
    assert empty["segment_ids"].numpy().tolist() == [[0, 0, 1, 0, 0, 0, 0]]


@pytest.mark.parametrize("length,pair,message", [
    (1, False, "max_seq_length must be an integer >= 2"),
    (2, True, r"max_seq_length must be an integer >= 3 \(\[CLS\] a \[SEP\] b \[SEP\]\), got 2"),
    (True, False, "got True"),
])
def test_bad_lengths_are_named(length, pair, message):
    with pytest.raises(ValueError, match=message):
        pack_host([1], [2] if pair else None, length, CLS, SEP, PAD)
    with pytest.raises(ValueError, match=message):
        packer = SegmentPacker(length, cls_id=CLS, sep_id=SEP, pad_id=PAD)
        packer(tf.constant([1]), tf.constant([2]) if pair else None)


def test_bad_rank_is_named():
    packer = SegmentPacker(5, cls_id=CLS, sep_id=SEP, pad_id=PAD)
    with pytest.raises(ValueError, match=r"ids_a must be ragged .* got shape \(1, 1, 1\)"):
        packer(tf.zeros([1, 1, 1], tf.int32))
