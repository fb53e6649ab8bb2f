"""TensorFlow ops on the flat characters of a batch, shared by the in-graph tokenizers.

Characters are flat arrays (`n` = characters in the batch) with `row_ids`
giving each one's row. "The nearest position with property X before/after
me in my row" is a cumulative sum and a gather (`prev_true`, `next_true`)
instead of a loop; `final_sigma` is Python's `str.lower` Final_Sigma rule
on those arrays (the host form is `normalization.final_sigma`).
"""

import tensorflow as tf

from albert_tf.tokenizer.normalization import CASED, TRANSPARENT


def prev_true(mask, row_ids, inclusive):
    """For each position, the index of the last True before it (or at it, if
    `inclusive`) in the same row; -1 if none. mask: bool (n,); row_ids: (n,)."""
    count = tf.math.cumsum(tf.cast(mask, tf.int32), exclusive=not inclusive)
    found = tf.gather(tf.concat([[-1], tf.cast(tf.where(mask)[:, 0], tf.int32)], 0), count)
    same_row = tf.gather(row_ids, tf.maximum(found, 0)) == row_ids
    return tf.where((found >= 0) & same_row, found, -1)


def next_true(mask, row_ids, inclusive):
    """For each position, the index of the first True after it (or at it, if
    `inclusive`) in the same row; -1 if none. mask: bool (n,); row_ids: (n,)."""
    n = tf.size(mask)
    count = tf.math.cumsum(tf.cast(mask, tf.int32), exclusive=inclusive)
    found = tf.gather(tf.concat([tf.cast(tf.where(mask)[:, 0], tf.int32), [n]], 0), count)
    same_row = tf.gather(row_ids, tf.clip_by_value(found, 0, tf.maximum(n - 1, 0))) == row_ids
    return tf.where((found < n) & same_row, found, -1)


def final_sigma(sigma, left, right, row_ids):
    """Where a capital sigma becomes final sigma under Python's `str.lower`
    (Unicode 3.13, Final_Sigma): a cased character before it and none after,
    skipping case-ignorable ones, within the row.

    Args:
        sigma: bool (n,), the positions holding a capital sigma.
        left, right: int32 (n,) case classes (`normalization.CASED`,
            `TRANSPARENT` for case-ignorable, `OTHER`) of the first and last
            character each position contributes (the same for a single one).
        row_ids: int32 (n,).

    Returns:
        bool (n,).
    """
    before = prev_true(right != TRANSPARENT, row_ids, inclusive=False)
    after = next_true(left != TRANSPARENT, row_ids, inclusive=False)
    cased_before = (before >= 0) & (tf.gather(right, tf.maximum(before, 0)) == CASED)
    cased_after = (after >= 0) & (tf.gather(left, tf.maximum(after, 0)) == CASED)
    return sigma & cased_before & ~cased_after
