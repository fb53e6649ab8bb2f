"""Serving a multiple-choice model from raw text.

`serving_default` takes `context` and `question`, string `(batch_size,)`, and
`choices`, string `(batch_size, num_choices)`: a question with fewer choices
fills its row with "" (an empty string is no choice). Each choice is packed
as `[CLS] context [SEP] question choice [SEP]`: the question and the choice
joined by a space, or with `fill_blank` (RACE) every "_" of a question that
has one replaced by the choice (`qa_texts`); the question-choice keeps its
last `max_qa_length` tokens and the context what still fits (`ChoicePacker`).
Featurization (`tasks.multiple_choice.encode_choices`) runs the same two
eagerly on batches of a split's questions. Outputs:

- `probabilities` float32 `(batch_size, num_choices)`: a softmax over the
  question's choices, 0 at empty slots;
- `choice_index` int32 `(batch_size,)`: the most probable choice, -1 when a
  question has no choice at all;
- `choice` string `(batch_size,)`: its text ("" when none).

`encoded` (and TFLite) score sequences one by one: `token_ids`,
`segment_ids`, `padding_mask` int32 `(rows, seq_length)`, one row per
(question, choice), -> `logits` float32 `(rows,)`; the caller takes the
softmax over each question's rows.
"""

import functools
import types

import tensorflow as tf

from albert_tf.export import text_limit
from albert_tf.export.base import ServingModule, checked_inputs, padded_length, token_specs
from albert_tf.layers.fused import plain_ops
from albert_tf.tokenizer import SegmentPacker
from albert_tf.tokenizer.packing import slice_rows

INPUTS = ("context", "question", "choices")


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


class MultipleChoiceServing(ServingModule):
    """Raw-text signatures of an `AlbertMultipleChoice`.

    Args:
        model: the fine-tuned `AlbertMultipleChoice` (float32).
        tokenizer: its in-graph tokenizer.
        max_seq_length, max_qa_length: the fine-tuning run's.
        fill_blank: fill a question's "_" with the choice (RACE).
    """

    def __init__(self, model, tokenizer, max_seq_length, max_qa_length, fill_blank):
        super().__init__(model, tokenizer, max_seq_length, name="albert_multiple_choice_serving")
        self._score = functools.partial(model.score, training=False)  # not tracked
        self.packer = ChoicePacker(max_seq_length, max_qa_length, tokenizer.cls_id,
                                   tokenizer.sep_id, tokenizer.pad_id)
        self.max_qa_length = max_qa_length
        self.fill_blank = fill_blank
        text_specs = [tf.TensorSpec([None], tf.string, name="context"),
                      tf.TensorSpec([None], tf.string, name="question"),
                      tf.TensorSpec([None, None], tf.string, name="choices")]
        # As `ServingModule.define_signatures`, with `choices` of rank 2.
        self._functions = types.MappingProxyType({
            "serving_default": tf.function(self._serve, input_signature=text_specs,
                                           autograph=False),
            "encoded": tf.function(self._encoded, input_signature=token_specs(self.input_names),
                                   autograph=False)})

    def decoding_settings(self):
        return {"kind": "multiple_choice", "inputs": list(INPUTS),
                "max_qa_length": int(self.max_qa_length), "fill_blank": bool(self.fill_blank)}

    def run_model(self, inputs):
        """One score per packed sequence: `{"logits": (rows,)}`, in standard ops
        (as `ServingModule.run_model`)."""
        with plain_ops():
            return {"logits": self._score(inputs)}

    def pack(self, context, question, choices):
        """Packed rows `(batch * choices, max_seq_length)`, row `b * C + c` for choice c."""
        num_choices = tf.shape(choices)[1]
        tok = self.tokenizer
        # The question-choice keeps its last tokens, the context its first.
        qa = tf.reshape(qa_texts(question, choices, self.fill_blank), [-1])
        qa_ids = tok(text_limit.cut(qa, tok, self.max_qa_length, keep="last"))
        context = text_limit.cut(context, tok, self.max_seq_length)
        context_ids = tf.gather(tok(context),
                                tf.repeat(tf.range(tf.shape(context)[0]), num_choices))
        return self.packer(context_ids, qa_ids)

    def _serve(self, context, question, choices):
        context, question, choices = checked_inputs(
            {"context": context, "question": question, "choices": choices}, ranks=[1, 1, 2])
        columns = tf.shape(choices)[1]
        # No column at all: one empty choice, so that the reductions have a column
        # (its answer is "no choice"); the outputs are cut back to `columns`.
        choices = tf.pad(choices, [[0, 0], [0, tf.maximum(1 - columns, 0)]], constant_values="")
        shape = tf.shape(choices)  # [batch, choices]
        present = tf.strings.length(choices) > 0  # (batch, choices)
        packed = self.pack(context, question, choices)
        real = tf.reshape(present, [-1])
        lengths = tf.boolean_mask(tf.reduce_sum(packed["padding_mask"], axis=1), real)
        length = padded_length(lengths, self.max_seq_length)
        scores = tf.reshape(self.run_model({k: v[:, :length] for k, v in packed.items()})
                            ["logits"], shape)
        logits = tf.where(present, scores, tf.constant(-float("inf")))
        answered = tf.reduce_any(present, axis=1)  # (batch,)
        probabilities = tf.where(answered[:, None], tf.nn.softmax(logits, axis=-1),
                                 tf.zeros_like(logits))
        best = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"probabilities": probabilities[:, :columns],
                "choice_index": tf.where(answered, best, -1),
                "choice": tf.where(answered, tf.gather(choices, best, batch_dims=1), "")}
