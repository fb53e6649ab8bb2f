"""Multiple choice's text steps: the question-choice text and the packing.

Featurization (`tasks/choice`) runs them eagerly on batches of a split's
questions, the multiple-choice serving graph (`albert_tf.export.multiple_choice`)
in its graph. Each choice is packed as `[CLS] context [SEP] question choice [SEP]`:
the question and the choice joined by a space, or with `fill_blank` (RACE) every
"_" of a question that has one replaced by the choice (`qa_texts`); the
question-choice keeps its last `max_qa_length` tokens and the context what still
fits (`ChoicePacker`), as google-research/albert's `run_race.py`.
"""

import tensorflow as tf

from albert_tf.steps.packing import SegmentPacker, slice_rows


def _filled(question, choices):
    """(batch, choices) strings: each "_" of the question replaced by the choice."""
    parts = tf.strings.split(question, sep="_")  # ragged (batch, pieces)
    pieces = parts.to_tensor("")  # (batch, pieces)
    count = tf.cast(parts.row_lengths(), tf.int32)[:, None]  # (batch, 1)
    position = tf.range(tf.shape(pieces)[1])[None, :]
    # A choice follows every piece but the last (as str.replace joins them).
    joins = (position < count - 1)[:, None, :]  # (batch, 1, pieces)
    shape = tf.concat([tf.shape(choices), tf.shape(pieces)[1:]], 0)  # [batch, choices, pieces]
    filler = tf.where(joins, tf.broadcast_to(choices[:, :, None], shape),
                      tf.broadcast_to(tf.constant(""), shape))
    return tf.strings.reduce_join(tf.broadcast_to(pieces[:, None, :], shape) + filler,
                                  axis=-1)


def qa_texts(question, choices, fill_blank):
    """The second segment of every choice, (batch, choices) strings."""
    joined = question[:, None] + " " + choices
    if not fill_blank:
        return joined
    has_blank = tf.strings.regex_full_match(question, "(?s).*_.*")[:, None]
    return tf.where(has_blank, _filled(question, choices), joined)


class ChoicePacker:
    """Packs `[CLS] context [SEP] question-choice [SEP]` rows as
    google-research/albert's `race_utils.convert_single_example` does: the
    question-choice ids keep their last `max_qa_length` (at most
    `max_seq_length - 3`), the context its first ids that still fit.

    Args:
        max_seq_length: output length (>= 3).
        max_qa_length: the most question-choice ids kept.
        cls_id, sep_id, pad_id: special token ids.

    Call arguments:
        context_ids, qa_ids: int32 ragged `(rows, None)`, no special tokens.

    Returns:
        `SegmentPacker`'s dict of int32 `(rows, max_seq_length)`: `token_ids`,
        `segment_ids` (1 from the question-choice on), `padding_mask`.
    """

    def __init__(self, max_seq_length, max_qa_length, cls_id, sep_id, pad_id):
        self.packer = SegmentPacker(max_seq_length, cls_id, sep_id, pad_id)
        self.max_seq_length = max_seq_length
        self.max_qa_length = max_qa_length

    def __call__(self, context_ids, qa_ids):
        budget = self.max_seq_length - 3
        qa_length = tf.cast(qa_ids.row_lengths(), tf.int32)
        keep_qa = tf.minimum(qa_length, min(self.max_qa_length, budget))
        qa_ids = slice_rows(qa_ids, qa_length - keep_qa, keep_qa)  # the last ids
        context_ids = slice_rows(context_ids, tf.zeros_like(keep_qa), budget - keep_qa)
        return self.packer(context_ids, qa_ids)  # nothing left to truncate
