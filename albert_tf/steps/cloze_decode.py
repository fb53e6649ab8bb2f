"""Answering a cloze passage's blanks from their candidates' scores.

The blanks of a passage group share one list of candidates, and each candidate
fills one blank at most. `answer_blanks` gives each blank a candidate, either
as CLUE's baseline decodes CHID (`logits_matrix_to_array` in CLUEbenchmark/CLUE
`baselines/models_pytorch/mrc_pytorch/preprocess/CHID_preprocess.py`): the
(blank, candidate) pair of highest score first, then the best pair among the
blanks and candidates left, and so on; or each blank alone (its argmax). The
evaluation of a split (run eagerly over its groups) and the served graph run
this one function.
"""

import tensorflow as tf

NEG_INF = float("-inf")


def _greedy(scores):
    """(groups, blanks) int32: the global assignment, -1 for a blank left without
    a candidate. `scores` has at least one blank and one candidate."""
    shape = tf.shape(scores)
    blanks, candidates = shape[1], shape[2]
    # Candidate-major, as the baseline lists its (candidate, blank) pairs: of equal
    # scores, the lower candidate wins, then the lower blank (its stable sort).
    flat = tf.reshape(tf.transpose(scores, [0, 2, 1]), [shape[0], -1])
    slot = tf.range(candidates * blanks)

    def pick(step, flat, choice):
        best = tf.argmax(flat, axis=1, output_type=tf.int32)  # (groups,)
        found = tf.gather(flat, best, batch_dims=1) > NEG_INF
        candidate, blank = best // blanks, best % blanks
        choice = tf.where(found[:, None] & tf.equal(tf.range(blanks)[None, :], blank[:, None]),
                          candidate[:, None], choice)
        taken = tf.equal(slot[None, :] // blanks, candidate[:, None]) | \
            tf.equal(slot[None, :] % blanks, blank[:, None])
        return step + 1, tf.where(found[:, None] & taken, NEG_INF, flat), choice

    _, _, choice = tf.while_loop(
        lambda step, *_: step < tf.minimum(blanks, candidates), pick,
        (tf.constant(0), flat, tf.fill([shape[0], blanks], -1)))
    return choice


def answer_blanks(scores, greedy=True):
    """The candidate of every blank, int32 `(groups, blanks)`.

    scores: float `(groups, blanks, candidates)`, -inf where a group has no
        such blank or no such candidate.
    greedy: the global assignment (each candidate used once in a group);
        False: each blank's own best candidate.

    A blank without any candidate gets -1. With the global assignment, a group
    of more blanks than candidates answers the blanks left once every
    candidate is used with their own best (the baseline leaves them out).
    """
    scores = tf.cast(scores, tf.float32)
    columns, rows = tf.shape(scores)[2], tf.shape(scores)[1]
    # At least one blank and one candidate, so that the reductions have an axis.
    scores = tf.pad(scores, [[0, 0], [0, tf.maximum(1 - rows, 0)],
                             [0, tf.maximum(1 - columns, 0)]], constant_values=NEG_INF)
    has_candidate = tf.reduce_any(scores > NEG_INF, axis=2)
    own = tf.where(has_candidate, tf.argmax(scores, axis=2, output_type=tf.int32), -1)
    if greedy:
        assigned = _greedy(scores)
        own = tf.where(assigned >= 0, assigned, own)
    return own[:, :rows]
