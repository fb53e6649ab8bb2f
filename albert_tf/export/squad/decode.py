"""In-graph SQuAD decoding: each question's best answer, as the host ranks it.

`tasks.squad.postprocess.decode_spans` ranks the valid spans of all windows
of a question by score and takes the first whose text, stripped of outer
whitespace, is not empty. Here the same rule picks one span per question with
TensorFlow ops:

- valid: both ends are context tokens of the window, end >= start, at most
  `max_answer_length` tokens, the window is the start token's max-context
  window, and the text between them is not only whitespace;
- score: start + end (logits for the span head, log-probabilities for
  ALBERT's v2 beam head), summed in float64 as the host sums them; ties go
  to the earlier window, then the earlier candidate, as the host's stable
  sort orders them;
- span head: every (start, end) pair of a window is a candidate (the host
  keeps each window's `n_best_size` best, which contain its best one);
  beam head: the model's `start_n_top` x `end_n_top` beam pairs;
- null odds (higher means "no answer"): span head, min over windows of
  start[0] + end[0], minus the best span's score; beam head, min over windows
  of `cls_logits`. Without a valid span the best score is `NO_SPAN_SCORE`.
"""

import dataclasses

import numpy as np
import tensorflow as tf

from albert_tf.tokenizer import graph_text
from albert_tf.tokenizer.packing import take
from albert_tf.tokenizer.normalization import whitespace_code_points
from albert_tf.tokenizer.sentencepiece import graph_ops

# tasks.squad.postprocess.NO_SPAN_SCORE: the reference's score of "no valid span".
NO_SPAN_SCORE = -2e6


@dataclasses.dataclass
class Contexts:
    """The batch's contexts as code points, with where their context tokens are."""

    chars: graph_ops.Chars  # invalid UTF-8 read as U+FFFD, as the tokenizer reads it
    solid: tf.Tensor        # bool (N,): not whitespace (Python's str.isspace)
    solid_count: tf.Tensor  # int32 (N + 1,): solid characters before each position
    token_begin: tf.Tensor  # int32 (T,): each context token's first character (flat)
    token_end: tf.Tensor    # int32 (T,): one past its last character (flat)

    @classmethod
    def build(cls, contexts, token_starts, token_ends):
        """contexts: string (B,); token_starts/ends: ragged (B, None) row-relative offsets."""
        chars = graph_ops.Chars.decode(contexts)
        spaces = tf.constant(np.array(whitespace_code_points(), np.int32))
        index = tf.minimum(tf.searchsorted(spaces, chars.cp), tf.size(spaces) - 1)
        solid = tf.gather(spaces, index) != chars.cp
        offset = tf.gather(chars.splits, tf.cast(token_starts.value_rowids(), tf.int32))
        return cls(chars=chars, solid=solid,
                   solid_count=tf.concat([[0], tf.math.cumsum(tf.cast(solid, tf.int32))], 0),
                   token_begin=tf.cast(token_starts.flat_values, tf.int32) + offset,
                   token_end=tf.cast(token_ends.flat_values, tf.int32) + offset)


def span_candidates(outputs, max_answer_length):
    """`(start, end, score)` (W, C) of the span head: every start, every length."""
    start_logits, end_logits = outputs["start_logits"], outputs["end_logits"]
    length = tf.shape(start_logits)[1]
    start = tf.repeat(tf.range(length), max_answer_length)  # (C,), C = length * max_answer_length
    end = start + tf.tile(tf.range(max_answer_length), [length])
    score = (tf.cast(tf.gather(start_logits, start, axis=1), tf.float64)
             + tf.cast(tf.gather(end_logits, tf.minimum(end, length - 1), axis=1), tf.float64))
    batch = tf.shape(start_logits)[:1]
    return (tf.broadcast_to(start, tf.concat([batch, tf.shape(start)], 0)),
            tf.broadcast_to(end, tf.concat([batch, tf.shape(end)], 0)), score)


def beam_candidates(outputs):
    """`(start, end, score)` (W, k * e) of the beam head: entry s * e + j is
    the j-th end of the s-th start."""
    per_start = tf.shape(outputs["end_top_index"])[1] // tf.shape(outputs["start_top_index"])[1]
    start = tf.repeat(outputs["start_top_index"], per_start, axis=1)
    score = (tf.cast(tf.repeat(outputs["start_top_log_probs"], per_start, axis=1), tf.float64)
             + tf.cast(outputs["end_top_log_probs"], tf.float64))
    return tf.cast(start, tf.int32), tf.cast(outputs["end_top_index"], tf.int32), score


def _valid(windows, contexts, start, end, max_answer_length):
    """bool (W, C): which candidates may be answers; and their character ranges."""
    length = tf.shape(windows.context_token)[1]
    inside = (start >= 0) & (start < length) & (end >= start) & (end < length) & (
        end - start < max_answer_length)
    first = tf.gather(windows.context_token, tf.clip_by_value(start, 0, length - 1), batch_dims=1)
    last = tf.gather(windows.context_token, tf.clip_by_value(end, 0, length - 1), batch_dims=1)
    is_max = tf.gather(windows.is_max_context, tf.clip_by_value(start, 0, length - 1),
                       batch_dims=1)
    ok = inside & (first >= 0) & (last >= 0) & is_max
    begin = take(contexts.token_begin, first, ok, 0)
    stop = take(contexts.token_end, last, ok, 0)
    solid = tf.gather(contexts.solid_count, stop) - tf.gather(contexts.solid_count, begin)
    return ok & (solid > 0), begin, stop


def best_spans(windows, contexts, candidates, max_answer_length, num_questions):
    """Each question's best valid candidate.

    Returns:
        `(found, score, begin, stop)`, (B,): whether a valid span exists, its
        float64 score (`NO_SPAN_SCORE` if none) and its flat character range
        (not yet stripped of whitespace).
    """
    start, end, score = candidates
    valid, begin, stop = _valid(windows, contexts, start, end, max_answer_length)
    score = tf.where(valid, score, -np.inf)  # (W, C)
    window_best = tf.reduce_max(score, axis=1)  # (W,)
    columns, question = tf.shape(score)[1], windows.question
    # The first candidate reaching the window's best, the first window reaching the question's.
    pick = tf.reduce_min(tf.where(score == window_best[:, None], tf.range(columns), columns),
                         axis=1)  # (W,)
    best = tf.math.unsorted_segment_max(window_best, question, num_questions)  # (B,)
    winner = tf.math.unsorted_segment_min(
        tf.where(window_best == tf.gather(best, question), tf.range(tf.size(question)),
                 tf.size(question)), question, num_questions)
    # Not `best > -inf`: an empty max starts from the lowest finite float, not -inf.
    found = tf.math.unsorted_segment_max(
        tf.cast(tf.reduce_any(valid, axis=1), tf.int32), question, num_questions) > 0
    winner = tf.where(found, winner, 0)  # any valid index where there is no span (masked)
    at = tf.stack([winner, tf.gather(pick, winner)], axis=1)  # (B, 2)
    return (found, tf.where(found, best, NO_SPAN_SCORE),
            tf.where(found, tf.gather_nd(begin, at), 0), tf.where(found, tf.gather_nd(stop, at), 0))


def null_odds(outputs, head, question, num_questions, best_score):
    """(B,) float64: the host's null odds of each question."""
    if head == "span":
        window_null = outputs["start_logits"][:, 0] + outputs["end_logits"][:, 0]
    else:
        window_null = outputs["cls_logits"]
    null = tf.math.unsorted_segment_min(tf.cast(window_null, tf.float64), question,
                                        num_questions)
    return null - best_score if head == "span" else null


def answer_spans(contexts, found, begin, stop):
    """`(answer, start, end)`: the span stripped of outer whitespace, as text
    (string (B,)) and row-relative character offsets (int32; -1 without answer)."""
    chars = contexts.chars
    next_solid = graph_text.next_true(contexts.solid, chars.row_ids, inclusive=True)
    prev_solid = graph_text.prev_true(contexts.solid, chars.row_ids, inclusive=True)
    first = take(next_solid, begin, found, 0)
    last = take(prev_solid, stop - 1, found, -1)
    row_start = chars.splits[:-1]
    start = tf.where(found, first - row_start, -1)
    end = tf.where(found, last + 1 - row_start, -1)
    ranges = tf.ragged.range(tf.where(found, first, 0), tf.where(found, last + 1, 0))
    text = tf.strings.unicode_encode(ranges.with_flat_values(
        tf.gather(chars.cp, ranges.flat_values)), "UTF-8")
    return text, start, end
