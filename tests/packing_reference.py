"""The host form of `SegmentPacker`, kept only to check the layer against it.

`truncated_lengths` is the closed form of the reference `_truncate_seq_pair`
(google-research/albert `classifier_utils.py`); `pack_host` packs one example
with it in plain Python.
"""

import numpy as np

from albert_tf.steps.packing import _check_length


def truncated_lengths(len_a, len_b, budget):
    """How many tokens of `a` and `b` the reference truncation keeps (host ints)."""
    if len_a + len_b <= budget:
        return len_a, len_b
    keep_a = min(len_a, max(budget - len_b, (budget + 1) // 2))
    return keep_a, budget - keep_a


def pack_host(ids_a, ids_b, max_seq_length, cls_id, sep_id, pad_id):
    """One example packed on the host, as `SegmentPacker` packs it in-graph.

    Args:
        ids_a: sequence of ints, the first segment.
        ids_b: sequence of ints, the second segment, or None.
        max_seq_length: the output length.
        cls_id, sep_id, pad_id: special token ids.

    Returns:
        dict of int32 numpy arrays `(max_seq_length,)`: `token_ids`,
        `segment_ids`, `padding_mask`.
    """
    _check_length(max_seq_length, ids_b is not None)
    ids_a = [int(i) for i in ids_a]
    if ids_b is None:
        tokens = [cls_id] + ids_a[:max_seq_length - 2] + [sep_id]
        segments = [0] * len(tokens)
    else:
        ids_b = [int(i) for i in ids_b]
        keep_a, keep_b = truncated_lengths(len(ids_a), len(ids_b), max_seq_length - 3)
        first = [cls_id] + ids_a[:keep_a] + [sep_id]
        second = ids_b[:keep_b] + [sep_id]
        tokens, segments = first + second, [0] * len(first) + [1] * len(second)
    padding = max_seq_length - len(tokens)
    return {"token_ids": np.array(tokens + [pad_id] * padding, np.int32),
            "segment_ids": np.array(segments + [0] * padding, np.int32),
            "padding_mask": np.array([1] * len(tokens) + [0] * padding, np.int32)}
