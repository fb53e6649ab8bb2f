"""In-graph SQuAD windows: `tasks.squad.data.featurize` for a batch of raw texts.

The same windows `[CLS] question [SEP] context-window [SEP]`, p_mask, segment
ids and max-context flags as the host featurization (tested against it), with
TensorFlow ops over a whole batch: every question gets as many windows as its
context needs, all windows of the batch go through the model together.

- Windows: `tasks.squad.data.doc_windows` in closed form. With `m` context
  tokens per window (`max_seq_length - query_length - 3`) and a step of
  `min(m, doc_stride)`, window k starts at `k * step`, and a context of `n`
  tokens gets `1 + ceil(max(n - m, 0) / step)` windows (one, empty, when
  `n = 0`).
- Max context: `tasks.squad.data.max_context` (google-research/albert
  `_check_is_max_context`), scored in float64 exactly as numpy scores it
  there, so that ties break the same way (first window wins).
"""

import dataclasses

import numpy as np
import tensorflow as tf

from albert_tf.export.base import padded_length


@dataclasses.dataclass
class Windows:
    """The windows of a batch of questions; W windows of `length` tokens.

    inputs: model inputs, int32 (W, length): `token_ids`, `segment_ids`,
        `padding_mask`, `p_mask`.
    question: int32 (W,): the batch row each window belongs to (ascending).
    context_token: int32 (W, length): at each context position, the index of
        its token in the flat values of the batch's context tokens; -1 elsewhere.
    is_max_context: bool (W, length): this window is the token's max-context window.
    """

    inputs: dict
    question: tf.Tensor
    context_token: tf.Tensor
    is_max_context: tf.Tensor


def take(values, index, valid, fill):
    """`values[index]` where `valid`, else `fill` (safe for empty `values`)."""
    padded = tf.concat([values, tf.fill([1], tf.cast(fill, values.dtype))], 0)
    return tf.gather(padded, tf.where(valid, index, tf.size(values)))


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
    overflow = tf.maximum(num_context - max_tokens, 0)
    count = 1 + (overflow + step - 1) // step
    row = tf.repeat(tf.range(tf.size(count)), count)  # (W,)
    k = tf.range(tf.size(row)) - tf.gather(tf.math.cumsum(count, exclusive=True), row)
    start = k * tf.gather(step, row)
    length = tf.minimum(tf.gather(num_context, row) - start, tf.gather(max_tokens, row))
    return _Plan(max_tokens, step, count, row, k, start, length)


def _max_context_window(plan, num_context, splits, reach):
    """For each context token of the batch (flat, T): the k of its max-context window.

    `reach` (a Python int) bounds how many windows can hold one token.
    """
    total = splits[-1]
    token_row = tf.repeat(tf.range(tf.size(num_context)), num_context)  # (T,)
    position = (tf.range(total) - tf.gather(splits[:-1], token_row))[:, None]  # (T, 1)
    max_tokens, step, count, n = (tf.gather(x, token_row)[:, None] for x in (
        plan.max_tokens, plan.step, plan.count, num_context))
    # The windows holding a token are consecutive and end with the last one
    # starting at or before it: look back `reach` windows from there.
    k = tf.minimum(count - 1, position // step) - tf.range(reach)[None, :]  # (T, reach)
    start = k * step
    length = tf.minimum(n - start, max_tokens)
    left, right = position - start, start + length - 1 - position
    inside = (k >= 0) & (left >= 0) & (right >= 0)
    score = tf.where(inside, tf.cast(tf.minimum(left, right), tf.float64)
                     + 0.01 * tf.cast(length, tf.float64), -np.inf)
    best = tf.reduce_max(score, axis=1, keepdims=True)
    return tf.reduce_min(tf.where(inside & (score == best), k, tf.int32.max), axis=1)


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
    reach = max(1, -(-(max_seq_length - 3) // doc_stride))
    best_k = _max_context_window(plan, num_context, context_splits, reach)  # (T,)

    q = tf.gather(num_query, plan.row)[:, None]  # (W, 1)
    c0 = q + 2  # first context position
    c1 = c0 + plan.length[:, None]  # the final [SEP]
    length = padded_length(c1[:, 0] + 1, max_seq_length, min_length)
    p = tf.range(length)[None, :]  # (1, length)
    is_query = (p >= 1) & (p <= q)
    is_context = (p >= c0) & (p < c1)
    query_index = tf.gather(tf.cast(query.row_splits, tf.int32), plan.row)[:, None] + p - 1
    context_index = (tf.gather(context_splits, plan.row) + plan.start)[:, None] + p - c0
    token_ids = tf.where(is_query, take(query.flat_values, query_index, is_query, pad_id),
                         take(context.flat_values, context_index, is_context, pad_id))
    token_ids = tf.where(p == 0, cls_id, tf.where((p == c0 - 1) | (p == c1), sep_id, token_ids))
    inputs = {"token_ids": token_ids,
              "segment_ids": tf.cast((p >= c0) & (p <= c1), tf.int32),  # final [SEP] too
              "padding_mask": tf.cast(p <= c1, tf.int32),
              "p_mask": tf.cast(~((p == 0) | is_context), tf.int32)}  # [CLS]: no answer
    is_max = is_context & (take(best_k, context_index, is_context, -1) == plan.k[:, None])
    return Windows(inputs=inputs, question=plan.row,
                   context_token=tf.where(is_context, context_index, -1), is_max_context=is_max)
