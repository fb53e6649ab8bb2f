"""SQuAD's sliding windows `[CLS] question [SEP] context-window [SEP]`: the one
implementation, run eagerly over numpy by `tasks.squad.data.featurize` (training
and evaluation features) and inside the exported graph on a batch of raw texts.

With TensorFlow ops over a whole batch: every question gets as many windows as
its context needs (google-research/albert `squad_utils.py`
`convert_examples_to_features`), all windows of the batch are built together.

- Windows: `albert_tf.steps.windows.window_plan`. With `m` context tokens
  per window (`max_seq_length - query_length - 3`) and a step of
  `min(m, doc_stride)`, window k starts at `k * step`, and a context of `n`
  tokens gets `1 + ceil(max(n - m, 0) / step)` windows (one, empty, when
  `n = 0`, so that every question is predicted).
- Max context: the reference's `_check_is_max_context` (score min(left, right
  context) + 0.01 * window length; the first window wins a tie), scored in
  float64 as the reference's Python floats are, so that ties break the same way.

`tests/squad_reference.py` keeps the host forms (`doc_windows`, `max_context`
and the window-by-window assembly) only to check this one.
"""

import dataclasses

import numpy as np
import tensorflow as tf

from albert_tf.steps.packing import padded_length, take
from albert_tf.steps.windows import window_plan


@dataclasses.dataclass
class Windows:
    """The windows of a batch of questions; W windows of `length` tokens.

    inputs: model inputs, int32 (W, length): `token_ids`, `segment_ids`,
        `padding_mask`, `p_mask`.
    question: int32 (W,): the batch row each window belongs to (ascending).
    doc_start, doc_length: int32 (W,): the window's first context token and
        its number of context tokens.
    context_token: int32 (W, length): at each context position, the index of
        its token in the flat values of the batch's context tokens; -1 elsewhere.
    is_max_context: bool (W, length): this window is the token's max-context window.
    """

    inputs: dict
    question: tf.Tensor
    doc_start: tf.Tensor
    doc_length: tf.Tensor
    context_token: tf.Tensor
    is_max_context: tf.Tensor


@dataclasses.dataclass
class _Plan:
    """Per row (B,): max_tokens, step, count. Per window (W,): row, k, start, length."""

    max_tokens: tf.Tensor
    step: tf.Tensor
    count: tf.Tensor
    row: tf.Tensor
    k: tf.Tensor
    start: tf.Tensor
    length: tf.Tensor


def _plan(num_query, num_context, max_seq_length, doc_stride):
    max_tokens = max_seq_length - num_query - 3  # (B,) >= 1: the query is cut before
    step = tf.minimum(max_tokens, doc_stride)
    count, row, k, start, length = window_plan(num_context, max_tokens, step)
    return _Plan(max_tokens, step, count, row, k, start, length)


def count_windows(num_query, num_context, max_seq_length, doc_stride):
    """int32 (B,): how many windows `make_windows` gives each question, from the
    numbers of query and context tokens (B,)."""
    return _plan(tf.cast(num_query, tf.int32), tf.cast(num_context, tf.int32), max_seq_length,
                 doc_stride).count


def _score(position, start, length):
    """The reference's max-context score of a token in a window, in float64 as its
    Python floats; -inf where the window does not hold the token."""
    left, right = position - start, start + length - 1 - position
    return tf.where((left >= 0) & (right >= 0), tf.cast(tf.minimum(left, right), tf.float64)
                    + 0.01 * tf.cast(length, tf.float64), -np.inf)


def _token_rows(splits):
    """int32 (T,): the row of each flat value of a ragged batch with row `splits`:
    how many rows end at or before it (a cumulative count; cheaper than `tf.repeat`)."""
    total = splits[-1]
    return tf.math.cumsum(tf.math.bincount(splits[1:-1], minlength=total, maxlength=total,
                                           dtype=tf.int32))


def _max_context_window(plan, num_context, splits):
    """For each context token of the batch (flat, T): the k of its max-context window.

    Closed form: every window but the last holds `m = max_tokens` tokens, so
    among those full windows the score is highest where the window's centre is
    nearest the token (the earlier of two as near, as the reference's strict
    ">"); only that window and a shorter last one compete.
    """
    token_row = _token_rows(splits)  # (T,)
    position = tf.range(splits[-1]) - tf.gather(splits[:-1], token_row)
    m, step, count, n = (tf.gather(x, token_row) for x in (
        plan.max_tokens, plan.step, plan.count, num_context))
    last = count - 1
    short = n - last * step  # the last window's length
    full = tf.where(short >= m, count, last)  # windows of m tokens
    nearest = tf.clip_by_value((2 * position - m + step) // (2 * step), 0,
                               tf.maximum(full - 1, 0))
    in_full = tf.where(full > 0, _score(position, nearest * step, m), -np.inf)
    in_last = tf.where(full < count, _score(position, last * step, short), -np.inf)
    return tf.where(in_last > in_full, last, nearest)


def make_windows(query, context, max_seq_length, doc_stride, specials, min_length=1):
    """Windows of a batch.

    Args:
        query: int32 ragged (B, None) question ids, already cut to max_query_length.
        context: int32 ragged (B, None) context ids.
        max_seq_length, doc_stride: as in fine-tuning (Python ints).
        specials: `(cls_id, sep_id, pad_id)`.
        min_length: the windows are at least this long (e.g. for a top-k).

    Returns:
        `Windows`, cut to the longest window rounded up to a multiple of 8.
    """
    cls_id, sep_id, pad_id = specials
    num_query = tf.cast(query.row_lengths(), tf.int32)
    num_context = tf.cast(context.row_lengths(), tf.int32)
    context_splits = tf.cast(context.row_splits, tf.int32)
    plan = _plan(num_query, num_context, max_seq_length, doc_stride)
    best_k = _max_context_window(plan, num_context, context_splits)  # (T,)

    q = tf.gather(num_query, plan.row)[:, None]  # (W, 1)
    c0 = q + 2  # first context position
    c1 = c0 + plan.length[:, None]  # the final [SEP]
    length = padded_length(c1[:, 0] + 1, max_seq_length, min_length)
    p = tf.range(length)[None, :]  # (1, length)
    in_sequence = p <= c1
    padding_mask = tf.cast(in_sequence, tf.int32)
    is_cls = tf.cast(p == 0, tf.int32)
    is_context = (p >= c0) & (p < c1)
    # Every id from one table, [context ids, query ids, [CLS], [SEP], pad]: a
    # context, query or special position's index there, then one gather.
    table = tf.concat([context.flat_values, query.flat_values, [cls_id, sep_id, pad_id]], 0)
    context_index = (tf.gather(context_splits, plan.row) + plan.start)[:, None] - c0 + p
    query_index = (tf.size(context.flat_values) - 1
                   + tf.gather(tf.cast(query.row_splits, tf.int32), plan.row))[:, None] + p
    special = tf.size(table) - 1 - is_cls - padding_mask  # [CLS], [SEP], pad
    token_ids = tf.gather(table, tf.where(is_context, context_index, tf.where(
        (p >= 1) & (p <= q), query_index, special)))
    inputs = {"token_ids": token_ids,
              "segment_ids": tf.cast((p >= c0) & in_sequence, tf.int32),  # final [SEP] too
              "padding_mask": padding_mask,
              "p_mask": 1 - is_cls - tf.cast(is_context, tf.int32)}  # [CLS]: no answer
    is_max = take(best_k, context_index, is_context, -1) == plan.k[:, None]
    return Windows(inputs=inputs, question=plan.row, doc_start=plan.start,
                   doc_length=plan.length,
                   context_token=tf.where(is_context, context_index, -1), is_max_context=is_max)
