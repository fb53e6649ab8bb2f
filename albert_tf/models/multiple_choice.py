"""`AlbertMultipleChoice`: one scorer for every choice, a softmax over a question's choices."""

import keras
import tensorflow as tf
from keras import ops

from albert_tf.layers.common import kernel_initializer
from albert_tf.models.base import TaskModel
from albert_tf.models.losses import categorical_loss, check_loss, replica_mean


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertMultipleChoice(TaskModel):
    """A question with its choices, each choice scored on its own sequence.

    Each choice is one sequence `[CLS] context [SEP] question choice [SEP]`;
    a dense layer with one output on its dropped-out pooled `[CLS]` gives the
    choice's score, and a softmax over the question's choices its
    probability. As google-research/albert `race_utils.create_model`
    (`output_weights` `[1, hidden]`, `output_bias` `[1]`) and Hugging Face's
    `AlbertForMultipleChoice` (`classifier`, `Linear(hidden, 1)`): the head is
    the one-output "classifier" head, so those fine-tuned checkpoints load.

    A question has any number of choices: a batch is padded to its largest
    number of choices, and padded choice slots (`choice_lengths` 0) get a
    logit of -inf, so they take no probability and no loss (nor, with
    `head_loss`'s label smoothing, any of the smoothed target).

    Inputs (a dict):
        token_ids, segment_ids: int32 `(batch, num_choices, seq_length)`.
        choice_lengths: int32 `(batch, num_choices)`, the real tokens of each
            choice's sequence; 0 for a padded choice slot. (A `padding_mask`
            input, if any, is not read: each choice has its own length.)
    Outputs: `{"logits": float32 (batch, num_choices)}`.
    Labels (for `fit`): `{"label": (batch,)}`, the index of the right choice.

    `score(rows)` scores sequences one by one: `token_ids`, `segment_ids`,
    `padding_mask` int32 `(rows, seq_length)` -> float32 `(rows,)` (what the
    serving export's `encoded` signature and TFLite run).
    """

    head_kind = "classifier"

    def __init__(self, backbone, dropout=0.1, head_loss=None, **kwargs):
        super().__init__(**kwargs)
        # === Layers ===
        self.backbone = backbone
        self.dropout = dropout
        self.head_loss = check_loss(head_loss)  # None: cross-entropy (models/losses.py)
        self.head_dropout = keras.layers.Dropout(dropout, dtype=backbone.dtype_policy)
        self.classifier = keras.layers.Dense(
            1, kernel_initializer=kernel_initializer(backbone.config.initializer_range),
            dtype=backbone.dtype_policy, name="classifier")
        self.classifier.build((None, backbone.config.hidden_dim))

    def score(self, rows, training=None):
        """float32 `(rows,)`: the score of each packed sequence."""
        pooled = self.backbone.pooled_output(rows, training=training)  # (rows, hidden)
        logits = self.classifier(self.head_dropout(pooled, training=training))  # (rows, 1)
        return ops.cast(logits[:, 0], "float32")

    def call(self, inputs, training=None):
        token_ids = inputs["token_ids"]
        lengths = tf.cast(inputs["choice_lengths"], tf.int32)  # (batch, choices)
        shape = tf.shape(token_ids)  # [batch, choices, length]
        positions = tf.range(shape[2])
        mask = tf.cast(positions[None, None, :] < lengths[:, :, None], tf.int32)
        flat = {"token_ids": tf.reshape(token_ids, [-1, shape[2]]),
                "segment_ids": tf.reshape(inputs["segment_ids"], [-1, shape[2]]),
                "padding_mask": tf.reshape(mask, [-1, shape[2]])}  # (batch * choices, length)
        scores = tf.reshape(self.score(flat, training=training), shape[:2])  # (batch, choices)
        return {"logits": tf.where(lengths > 0, scores, tf.constant(-float("inf")))}

    distilled_outputs = {"logits": "softmax"}

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        return replica_mean(categorical_loss(y["label"], y_pred["logits"], self.head_loss))

    def head_arguments(self):
        return {"dropout": self.dropout, "head_loss": self.head_loss}
