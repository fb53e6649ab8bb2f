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

import tensorflow as tf

from albert_tf.export.base import WEB_ASSETS, ServingModule
from albert_tf.layers.fused import plain_ops
from albert_tf.steps import text_limit
from albert_tf.steps.choices import ChoicePacker, qa_texts
from albert_tf.steps.packing import padded_length

INPUTS = ("context", "question", "choices")


class ChoiceScoring(ServingModule):
    """What serving an `AlbertMultipleChoice` shares: each packed sequence scored
    on its own (`run_model`, what `encoded` runs), and the scores of a batch's
    (question, choice) rows (`choice_scores`)."""

    def __init__(self, model, tokenizer, max_seq_length, name):
        super().__init__(model, tokenizer, max_seq_length, name=name)
        self._score = functools.partial(model.score, training=False)  # not tracked

    def run_model(self, inputs):
        """One score per packed sequence: `{"logits": (rows,)}`, in standard ops
        (as `ServingModule.run_model`)."""
        with plain_ops():
            return {"logits": self._score(inputs)}

    def choice_scores(self, packed, present):
        """float32 scores shaped as `present` (bool, a packed row of `packed` for
        each entry, in row-major order), -inf where `present` is False; the rows
        cut to the longest present one."""
        real = tf.reshape(present, [-1])
        lengths = tf.boolean_mask(tf.reduce_sum(packed["padding_mask"], axis=1), real)
        length = padded_length(lengths, self.max_seq_length)
        # A chunk of rows at a time: a request of many choices holds the activations of
        # one chunk, not of all its (question, choice) rows at once.
        scores = tf.reshape(self.run_model_in_chunks({k: v[:, :length]
                                                      for k, v in packed.items()})["logits"],
                            tf.shape(present))
        return tf.where(present, scores, tf.constant(-float("inf")))


class MultipleChoiceServing(ChoiceScoring):
    """Raw-text signatures of an `AlbertMultipleChoice`.

    Args:
        model: the fine-tuned `AlbertMultipleChoice` (float32).
        tokenizer: its in-graph tokenizer.
        max_seq_length, max_qa_length: the fine-tuning run's.
        fill_blank: fill a question's "_" with the choice (RACE).
    """

    web_decoder = WEB_ASSETS / "decoder_multiple_choice.js"

    def __init__(self, model, tokenizer, max_seq_length, max_qa_length, fill_blank):
        super().__init__(model, tokenizer, max_seq_length, name="albert_multiple_choice_serving")
        self.packer = ChoicePacker(max_seq_length, max_qa_length, tokenizer.cls_id,
                                   tokenizer.sep_id, tokenizer.pad_id)
        self.max_qa_length = max_qa_length
        self.fill_blank = fill_blank
        self.define_signatures(self._serve, INPUTS, ranks=(1, 1, 2))

    def decoding_settings(self):
        return {"kind": "multiple_choice", "inputs": list(INPUTS),
                "max_qa_length": int(self.max_qa_length), "fill_blank": bool(self.fill_blank)}

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
        columns = tf.shape(choices)[1]
        # No column at all: one empty choice, so that the reductions have a column
        # (its answer is "no choice"); the outputs are cut back to `columns`.
        choices = tf.pad(choices, [[0, 0], [0, tf.maximum(1 - columns, 0)]], constant_values="")
        present = tf.strings.length(choices) > 0  # (batch, choices)
        logits = self.choice_scores(self.pack(context, question, choices), present)
        answered = tf.reduce_any(present, axis=1)  # (batch,)
        probabilities = tf.where(answered[:, None], tf.nn.softmax(logits, axis=-1),
                                 tf.zeros_like(logits))
        best = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"probabilities": probabilities[:, :columns],
                "choice_index": tf.where(answered, best, -1),
                "choice": tf.where(answered, tf.gather(choices, best, batch_dims=1), "")}
