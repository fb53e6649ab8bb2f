"""Packing token ids into ALBERT's fixed-length inputs: `SegmentPacker`, one Keras layer
that featurizes training data (mapped over `tf.data`, `albert_tf.data.mapped`) and runs
in the exported serving graph.

`[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`, then padding. Segment ids are 0
for `[CLS]`, `a` and its `[SEP]`, 1 for `b` and its `[SEP]` (BERT/ALBERT's
`token_type_ids`; google-research/albert `classifier_utils.py`).

Truncation follows the reference `_truncate_seq_pair` (google-research/albert
`classifier_utils.py`, same as BERT's): while the pair is too long, drop the
last token of the longer segment, and of `b` when they are equally long. Its
result in closed form, for a budget of `m` tokens and lengths `la + lb > m`:
`a` keeps `min(la, max(m - lb, ceil(m / 2)))` tokens and `b` the rest (once
both are trimmed they end equal, or `a` one longer when `m` is odd). A
single segment keeps its first `max_seq_length - 2` tokens.
"""

import keras
import numpy as np
import tensorflow as tf

from albert_tf.tokenizer.graph_layer import accept_raw_inputs


# Batches are padded to a multiple of this many tokens, as `albert_tf.data.padded_length`
# pads them in training and evaluation.
LENGTH_MULTIPLE = 8


def padded_length(real_lengths, max_seq_length, minimum=1):
    """Where to cut a batch padded to `max_seq_length`: its longest row rounded up to a
    multiple of 8, at least `minimum` and at most `max_seq_length` (a scalar int32)."""
    longest = tf.reduce_max(tf.concat([[minimum], real_lengths], 0))
    rounded = (longest + LENGTH_MULTIPLE - 1) // LENGTH_MULTIPLE * LENGTH_MULTIPLE
    return tf.minimum(tf.maximum(rounded, minimum), max_seq_length)


def _check_length(max_seq_length, pair):
    needed = 3 if pair else 2
    if isinstance(max_seq_length, bool) or not isinstance(max_seq_length, int) \
            or max_seq_length < needed:
        raise ValueError(f"max_seq_length must be an integer >= {needed} "
                         f"({'[CLS] a [SEP] b [SEP]' if pair else '[CLS] a [SEP]'}), "
                         f"got {max_seq_length!r}")


def _as_ragged(ids, name):
    """(ragged (batch, None) int32, was_single): from ragged, dense 1-D/2-D, or lists."""
    if isinstance(ids, (list, tuple)) and ids and isinstance(ids[0], (list, tuple, np.ndarray)):
        ids = tf.ragged.constant([list(row) for row in ids], dtype=tf.int32)
    if not isinstance(ids, tf.RaggedTensor):
        ids = tf.convert_to_tensor(ids)
        if ids.shape.rank not in (1, 2):
            raise ValueError(f"SegmentPacker: {name} must be ragged (batch, None), "
                             f"(batch, length) or one example (length,), got shape {ids.shape}")
        single = ids.shape.rank == 1
        ids = tf.RaggedTensor.from_tensor(ids[None] if single else ids)
        return tf.cast(ids, tf.int32), single
    ids = ids.with_row_splits_dtype(tf.int64)
    if ids.shape.rank != 2:
        raise ValueError(f"SegmentPacker: {name} must be ragged (batch, None), got rank "
                         f"{ids.shape.rank}")
    return tf.cast(ids, tf.int32), False


def take(values, index, valid, fill):
    """`values[index]` where `valid`, else `fill` (safe for empty `values`): the
    gather that places ids (and their offsets) in windows, and decoding reads back."""
    padded = tf.concat([values, tf.fill([1], tf.cast(fill, values.dtype))], 0)
    return tf.gather(padded, tf.where(valid, index, tf.size(values)))


def slice_rows(ids, first, count):
    """The ids of each ragged row r from position `first[r]`, at most `count[r]` of them.

    On the flat values with a handful of ops (no ragged broadcasting, whose
    eager form is slow), returned with its row ids cached for the packer.
    """
    splits = tf.cast(ids.row_splits, tf.int32)
    length = splits[1:] - splits[:-1]
    first = tf.minimum(first, length)
    count = tf.clip_by_value(count, 0, length - first)
    out_splits = tf.concat([[0], tf.cumsum(count)], 0)
    # Each kept id's row (tf.repeat: O(rows x the longest count), at most the
    # packed output's size; 0.7x the CPU time of a searchsorted).
    row = tf.repeat(tf.range(tf.shape(length)[0]), count)
    # Where each row's kept ids start in `ids`, less where they start in the output.
    shift = splits[:-1] + first - out_splits[:-1]
    source = tf.range(out_splits[-1]) + tf.gather(shift, row)
    return tf.RaggedTensor.from_value_rowids(  # int64 row partitions, as `from_tensor`'s
        tf.gather(ids.flat_values, source), tf.cast(row, tf.int64),
        nrows=tf.cast(tf.shape(length)[0], tf.int64), validate=False)


def _first(ids, keep):
    """The first `keep[r]` ids of each row r of ragged `ids` (`keep[r]` <= its length).
    Run eagerly (featurization), rows that all fit are returned as they are."""
    splits = tf.cast(ids.row_splits, tf.int32)
    if tf.executing_eagerly() and bool(tf.reduce_all(keep == splits[1:] - splits[:-1])):
        return ids
    return slice_rows(ids, tf.zeros_like(keep), keep)


class Packer(keras.layers.Layer):
    """What `SegmentPacker` and `windows.WindowPacker` share: an output length,
    the special ids, ragged (or dense) int inputs and int32 outputs.

    Args:
        max_seq_length: output length (>= 2, >= 3 for pairs).
        cls_id, sep_id, pad_id: special token ids (e.g. from `AlbertTokenizer`).
    """

    def __init__(self, max_seq_length, cls_id, sep_id, pad_id, **kwargs):
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        _check_length(max_seq_length, pair=False)
        accept_raw_inputs(self)
        self.max_seq_length = max_seq_length
        self.cls_id = cls_id
        self.sep_id = sep_id
        self.pad_id = pad_id

    def get_config(self):
        config = super().get_config()
        config.update({"max_seq_length": self.max_seq_length, "cls_id": self.cls_id,
                       "sep_id": self.sep_id, "pad_id": self.pad_id})
        return config


@keras.saving.register_keras_serializable(package="albert_tf")
class SegmentPacker(Packer):
    """Packs one or two segments of ids into ALBERT's model inputs.

    Args:
        max_seq_length: output length (>= 2, >= 3 for pairs).
        cls_id, sep_id, pad_id: special token ids (e.g. from `AlbertTokenizer`).

    Call arguments:
        ids_a: int ids `(batch_size, None)` ragged (or dense, or one example
            `(length,)`), without special tokens.
        ids_b: optional second segment, same batch size.

    Returns:
        dict of int32 `(batch_size, max_seq_length)` tensors (`(max_seq_length,)`
        for one example): `token_ids`, `segment_ids`, `padding_mask`.
    """

    def call(self, ids_a, ids_b=None):
        m = self.max_seq_length
        a, single = _as_ragged(ids_a, "ids_a")
        batch = a.nrows(out_type=tf.int32)
        len_a = tf.cast(a.row_lengths(), tf.int32)
        if ids_b is None:
            keep_a = tf.minimum(len_a, m - 2)
            segments, total = [_first(a, keep_a)], keep_a + 2
        else:
            _check_length(m, pair=True)
            b, _ = _as_ragged(ids_b, "ids_b")
            len_b = tf.cast(b.row_lengths(), tf.int32)
            budget = m - 3  # closed form of the reference loop (module docstring)
            keep_a = tf.minimum(len_a, tf.maximum(budget - len_b, (budget + 1) // 2))
            keep_a = tf.where(len_a + len_b <= budget, len_a, keep_a)
            keep_b = tf.minimum(len_b, budget - keep_a)
            segments, total = [_first(a, keep_a), _first(b, keep_b)], keep_a + keep_b + 3
        # [CLS] a [SEP] (b [SEP]) joined per row, then padded: eagerly on 16,384
        # random pairs, 0.45-0.65x the CPU time of scattering the ids into a
        # padded tensor (128 and 512 tokens, pairs and single segments). The
        # segment ids and the mask follow from the lengths alone.
        special = tf.ones([batch, 1], tf.int32)
        cls, sep = (tf.RaggedTensor.from_tensor(special * i) for i in (self.cls_id, self.sep_id))
        pieces = [cls] + [p for segment in segments for p in (segment, sep)]
        position = tf.range(m)[None, :]
        inside = position < total[:, None]
        if ids_b is None:
            segment_ids = tf.zeros([batch, m], tf.int32)
        else:  # 1 from b on: after [CLS] a [SEP]
            segment_ids = tf.cast((position >= keep_a[:, None] + 2) & inside, tf.int32)
        out = {"token_ids": tf.concat(pieces, axis=1).to_tensor(self.pad_id, shape=[batch, m]),
               "segment_ids": segment_ids, "padding_mask": tf.cast(inside, tf.int32)}
        return {k: v[0] for k, v in out.items()} if single else out
