"""SQuAD answer decoding: the one implementation of its rules, in TensorFlow ops.

The served model runs these functions in its graph; evaluation
(`tasks.squad.postprocess.decode_spans`) runs the same functions eagerly on
the cached feature arrays and the model's outputs, then lists the n-best
answers on the host. Both work from what each side has per window position
(`TokenChars`: the characters of the position's context token, whether the
window is that token's max-context window), each window's question, and the
contexts' characters (`Contexts`).

- candidates: span head, every (start, end) pair of a window with at most
  `max_answer_length` tokens; beam head, ALBERT's `start_n_top` x
  `end_n_top` beam pairs (google-research/albert `accumulate_predictions_v2`);
- valid: both ends are context tokens of the window, end >= start, at most
  `max_answer_length` tokens, the window is the start token's max-context
  window, and the text between them is not only whitespace
  (`normalization.whitespace_code_points`, Python's `str.isspace`);
- score: start + end (logits for the span head, log-probabilities for the
  beam head), summed in float64; ties go to the earlier window, then the
  earlier candidate (span head: by start, then end; beam head: in the
  beam's order);
- text: the span's characters stripped of outer whitespace, as the
  reference strips them;
- best answer: the highest-scoring valid candidate of all windows of a
  question (`window_top`, then `question_best`); without one, no answer and
  the score `NO_SPAN_SCORE`;
- null odds (higher means "no answer"): span head, min over windows of
  start[0] + end[0] ([CLS], BERT's `score_null`, summed in float32), minus
  the best score; beam head, min over windows of `cls_logits`.
"""

import dataclasses
from typing import NamedTuple

import numpy as np
import tensorflow as tf

from albert_tf.tokenizer import graph_text
from albert_tf.steps.packing import take
from albert_tf.tokenizer.normalization import whitespace_code_points
from albert_tf.tokenizer.sentencepiece import graph_ops

# The reference's score of "no valid span" (its nonce entry: -1e6 + -1e6), so
# that the null odds of such a question are huge.
NO_SPAN_SCORE = -2e6


@dataclasses.dataclass
class Contexts:
    """The contexts' characters (flat, N), with where their text is not whitespace."""

    chars: graph_ops.Chars  # code points, row splits, row ids
    next_solid: tf.Tensor   # int32 (N + 1,): first non-space at or after each position, in its row
    prev_solid: tf.Tensor   # int32 (N + 1,): last non-space at or before it, in its row

    @classmethod
    def build(cls, chars):
        """From the contexts' `graph_ops.Chars` (the served model decodes them
        from UTF-8; evaluation gives the code points of its strings)."""
        spaces = tf.constant(np.array(whitespace_code_points(), np.int32))
        index = tf.minimum(tf.searchsorted(spaces, chars.cp), tf.size(spaces) - 1)
        solid = tf.gather(spaces, index) != chars.cp
        # -1 where there is none; one entry more, as an empty token at the end
        # of the last context starts at N (and the gathers stay in range).
        after = graph_text.next_true(solid, chars.row_ids, inclusive=True)
        before = graph_text.prev_true(solid, chars.row_ids, inclusive=True)
        return cls(chars=chars, next_solid=tf.concat([after, [-1]], 0),
                   prev_solid=tf.concat([before, [-1]], 0))


@dataclasses.dataclass
class TokenChars:
    """What decoding needs of each window position, (W, L); W windows.

    begin, end: int32 (W, L) flat character range in `Contexts.chars` of the
        position's context token (begin -1 where the position is no context token).
    is_max_context: bool (W, L): the window is that token's max-context window.
    """

    begin: tf.Tensor
    end: tf.Tensor
    is_max_context: tf.Tensor

    @classmethod
    def from_windows(cls, windows, chars, token_starts, token_ends):
        """From `windows.make_windows`'s `Windows` and the contexts' token
        offsets (ragged (B, None), row-relative), `chars` their characters."""
        offset = tf.gather(chars.splits, tf.cast(token_starts.value_rowids(), tf.int32))
        is_context = windows.context_token >= 0
        begin = take(tf.cast(token_starts.flat_values, tf.int32) + offset, windows.context_token,
                     is_context, -1)
        end = take(tf.cast(token_ends.flat_values, tf.int32) + offset, windows.context_token,
                   is_context, -1)
        return cls(begin=begin, end=end, is_max_context=windows.is_max_context)


class Candidates(NamedTuple):
    """A head's candidates: token positions, which the head allows, float64 scores.

    Span head: the same positions in every window (`shared`), laid out as
    (start, length): start (L, 1), end and allowed (L, M), start_score
    (W, L, 1), end_score (W, L, M); M = max_answer_length. Beam head: all
    (W, C). allowed: inside the window, end >= start, at most
    `max_answer_length` tokens.
    """

    start: tf.Tensor
    end: tf.Tensor
    allowed: tf.Tensor
    start_score: tf.Tensor
    end_score: tf.Tensor
    shared: bool


def _at(values, index, shared):
    """`values` (W, L) at positions `index`: the same in every window, or one row each."""
    return tf.gather(values, index, axis=1) if shared else tf.gather(values, index, batch_dims=1)


def span_candidates(outputs, max_answer_length):
    """The span head's candidates: every start, every length up to `max_answer_length`."""
    start_logits = tf.cast(outputs["start_logits"], tf.float64)
    end_logits = tf.cast(outputs["end_logits"], tf.float64)
    length = tf.shape(start_logits)[1]
    start = tf.range(length)[:, None]  # (L, 1)
    end = start + tf.range(max_answer_length)[None, :]  # (L, M)
    allowed, end = end < length, tf.minimum(end, length - 1)
    return Candidates(start, end, allowed, _at(start_logits, start, True),
                      _at(end_logits, end, True), shared=True)


def beam_candidates(outputs, max_answer_length, length):
    """The beam head's candidates (C = k * e) in windows of `length`
    positions: entry s * e + j is the j-th end of the s-th start."""
    k = tf.shape(outputs["start_top_index"])[1]
    of_start = tf.range(tf.shape(outputs["end_top_index"])[1]) // (
        tf.shape(outputs["end_top_index"])[1] // k)  # (C,): the start of each entry
    start = tf.gather(tf.cast(outputs["start_top_index"], tf.int32), of_start, axis=1)
    end = tf.cast(outputs["end_top_index"], tf.int32)
    allowed = ((start >= 0) & (start < length) & (end >= start) & (end < length)
               & (end - start < max_answer_length))
    return Candidates(tf.clip_by_value(start, 0, length - 1), tf.clip_by_value(end, 0, length - 1),
                      allowed,
                      tf.gather(tf.cast(outputs["start_top_log_probs"], tf.float64), of_start,
                                axis=1),
                      tf.cast(outputs["end_top_log_probs"], tf.float64), shared=False)


class Top(NamedTuple):
    """Each window's best candidates, (W, k), best first.

    valid: bool; score: float64 start + end; start_score, end_score: float64;
    begin, end_char: int32 flat character range of the text, stripped of
    outer whitespace (0 where not valid).
    """

    valid: tf.Tensor
    score: tf.Tensor
    start_score: tf.Tensor
    end_score: tf.Tensor
    begin: tf.Tensor
    end_char: tf.Tensor


def window_top(tokens, contexts, outputs, head, max_answer_length, k=None):
    """`Top`: each window's `k` best candidates (all of them if None), valid ones first.

    Args:
        tokens: `TokenChars` of the W windows; contexts: `Contexts`.
        outputs: the model's outputs on the windows: head "span", `start_logits`
            and `end_logits` (W, L); head "beam", `start_top_index` and
            `start_top_log_probs` (W, k), `end_top_index` and
            `end_top_log_probs` (W, k * e).
        k: a Python int, or None.
    """
    is_context = tokens.begin >= 0
    # Per position, as a start: the first non-space character from its token on
    # (int32 max where no answer may start); as an end: one past its token (-1
    # where none may end). A candidate has some text if the first is before the end.
    first = tf.gather(contexts.next_solid, tf.maximum(tokens.begin, 0))
    first = tf.where(is_context & tokens.is_max_context & (first >= 0), first, tf.int32.max)
    stop = tf.where(is_context, tokens.end, -1)
    if head == "span":
        found = span_candidates(outputs, max_answer_length)
    else:
        found = beam_candidates(outputs, max_answer_length, tf.shape(tokens.begin)[1])
    valid = found.allowed & (_at(first, found.start, found.shared)
                             < _at(stop, found.end, found.shared))
    score = found.start_score + found.end_score  # (W, L, M) or (W, C)
    shape = tf.shape(score)

    def flat(x):
        return tf.reshape(tf.broadcast_to(x, shape), [shape[0], -1])  # (W, C)

    valid, score = flat(valid), flat(score)
    columns = tf.shape(score)[1]
    k = columns if k is None else tf.minimum(k, columns)
    _, pick = tf.math.top_k(tf.where(valid, score, -np.inf), k)  # ties: the lower index first
    if found.shared:
        start, end = (tf.gather(tf.reshape(tf.broadcast_to(x, shape[1:]), [-1]), pick)
                      for x in (found.start, found.end))
    else:
        start, end = (tf.gather(x, pick, batch_dims=1) for x in (found.start, found.end))
    valid = tf.gather(valid, pick, batch_dims=1)
    text_end = tf.gather(contexts.prev_solid,
                         tf.where(valid, tf.gather(stop, end, batch_dims=1) - 1, 0)) + 1
    return Top(valid, *(tf.gather(x, pick, batch_dims=1) for x in (
        score, flat(found.start_score), flat(found.end_score))),
               tf.where(valid, tf.gather(first, start, batch_dims=1), 0),
               tf.where(valid, text_end, 0))


def question_best(top, question, num_questions):
    """Each question's best answer from its windows' `Top`s.

    Returns:
        `(found, window, score)` (B,): whether a valid candidate exists, the
        window holding the best (first column of its `Top`; 0 if none) and its
        float64 score (`NO_SPAN_SCORE` if none).
    """
    valid, score = top.valid[:, 0], tf.where(top.valid[:, 0], top.score[:, 0], -np.inf)
    best = tf.math.unsorted_segment_max(score, question, num_questions)  # (B,)
    windows = tf.range(tf.size(question))
    winner = tf.math.unsorted_segment_min(
        tf.where(valid & (score == tf.gather(best, question)), windows, tf.size(question)),
        question, num_questions)
    found = tf.math.unsorted_segment_max(tf.cast(valid, tf.int32), question, num_questions) > 0
    return found, tf.where(found, winner, 0), tf.where(found, best, NO_SPAN_SCORE)


def null_odds(outputs, head, question, num_questions, best_score):
    """(B,) float64: how much more the model believes in "no answer" than in the best span."""
    if head == "span":  # summed in the outputs' float32, as decode.js sums it too
        window_null = outputs["start_logits"][:, 0] + outputs["end_logits"][:, 0]
    else:
        window_null = outputs["cls_logits"]
    null = tf.math.unsorted_segment_min(tf.cast(window_null, tf.float64), question,
                                        num_questions)
    return null - best_score if head == "span" else null


def answer_text(contexts, found, begin, end_char):
    """`(answer, start, end)`: string (B,) texts of the flat ranges `[begin,
    end_char)` and their row-relative offsets (int32; -1 where not `found`)."""
    chars = contexts.chars
    row_start = chars.splits[:-1]
    first, last = tf.where(found, begin, 0), tf.where(found, end_char, 0)
    ranges = tf.ragged.range(first, last)
    text = tf.strings.unicode_encode(ranges.with_flat_values(
        tf.gather(chars.cp, ranges.flat_values)), "UTF-8")
    return text, tf.where(found, first - row_start, -1), tf.where(found, last - row_start, -1)
