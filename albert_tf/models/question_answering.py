"""Extractive question answering heads: the plain span head and ALBERT's v2 head.

Inputs (besides the backbone's): `p_mask` (batch, seq) int, 1 where a token
cannot be part of an answer (question, [SEP], padding) and 0 for context
tokens and for [CLS], the no-answer position. Masked logits are pushed to
-1e30, as in google-research/albert `squad_utils.py`.

Labels (`y`, for `fit` and `compute_loss`): `start_positions` and
`end_positions` (batch,) int, and for the v2 head `is_impossible` (batch,);
the losses read all of them from `y`.
"""

import keras
from keras import ops

from albert_tf.layers.common import kernel_initializer
from albert_tf.models.base import TaskModel
from albert_tf.models.losses import replica_mean

_NEG = -1e30


def _masked(logits, p_mask):
    p_mask = ops.cast(p_mask, "float32")
    return logits * (1.0 - p_mask) + _NEG * p_mask


def _freeze_pooler(backbone):
    # Question answering reads token outputs only; the pooler gets no
    # gradient, so it is not trained (nor given optimizer slots).
    backbone.pooler.trainable = False


def _position_loss(log_probs, positions):
    """Per-example negative log-likelihood of `positions` (batch,)."""
    picked = ops.take_along_axis(log_probs, ops.cast(positions, "int32")[:, None], axis=-1)
    return -picked[:, 0]


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertSpanQA(TaskModel):
    """Start and end logits from one dense layer on every token (BERT-style).

    Stored as Google's `cls/squad/output_weights` (2 x H) / `output_bias` and
    Hugging Face's `qa_outputs`. For SQuAD v2 the no-answer score is
    `start[0] + end[0]` (the [CLS] span), the "[CLS]-null" variant.

    Outputs: `start_logits`, `end_logits`, float32 (batch, seq).
    Labels: `start_positions`, `end_positions` (batch,).
    """

    token_outputs = ("start_logits", "end_logits")
    head_kind = "span"
    head_labels = {"head": "span"}
    distilled_outputs = {"start_logits": "softmax", "end_logits": "softmax"}

    def __init__(self, backbone, **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone
        _freeze_pooler(backbone)
        self.qa_outputs = keras.layers.Dense(
            2, kernel_initializer=kernel_initializer(backbone.config.initializer_range),
            dtype=backbone.dtype_policy, name="qa_outputs")
        self.qa_outputs.build((None, None, backbone.config.hidden_dim))

    def call(self, inputs, training=None):
        sequence = self.backbone(inputs, training=training)["sequence_output"]
        logits = ops.cast(self.qa_outputs(sequence), "float32")  # (batch, seq, 2)
        return {"start_logits": _masked(logits[..., 0], inputs["p_mask"]),
                "end_logits": _masked(logits[..., 1], inputs["p_mask"])}

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        start = _position_loss(ops.log_softmax(y_pred["start_logits"]), y["start_positions"])
        end = _position_loss(ops.log_softmax(y_pred["end_logits"]), y["end_positions"])
        return replica_mean((start + end) / 2.0)


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertBeamQA(TaskModel):
    """ALBERT's own SQuAD v2 head (google-research/albert `create_v2_model`).

    - start logits: a dense layer on each token (`start_logits/dense`);
    - end logits conditioned on the start: `[h_i; h_start]` -> dense + tanh
      (`end_logits/dense_0`) -> LayerNorm -> dense (`end_logits/dense_1`);
      in training `h_start` is the gold start, at inference the
      `start_n_top` best starts are each expanded to `end_n_top` ends (beam);
    - answerability: `[sum_i p_start(i) h_i; h_[CLS]]` -> dense + tanh
      (`answer_class/dense_0`) -> dropout -> dense without bias
      (`answer_class/dense_1`), a logit that the question has no answer.

    Loss (training): mean of start and end NLL + 0.5 x sigmoid cross-entropy
    of the answerability logit.

    Teacher forcing: called with `training=True`, the model reads the gold
    start from `inputs["start_positions"]` (as the reference reads it from
    its features). `fit` takes it from the labels: `train_step` copies
    `y["start_positions"]` into the inputs, so the data give it once, as a
    label; the loss reads both positions from the labels.

    Inference outputs: `start_top_log_probs`, `start_top_index` (batch, k),
    `end_top_log_probs`, `end_top_index` (batch, k * e) where entry `s*e + j`
    is the j-th end for the s-th start, and `cls_logits` (batch,).
    """

    head_kind = "beam"
    head_labels = {"head": "beam"}

    def __init__(self, backbone, start_n_top=5, end_n_top=5, dropout=0.1, **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone
        _freeze_pooler(backbone)
        self.start_n_top = start_n_top
        self.end_n_top = end_n_top
        self.dropout = dropout
        config, policy = backbone.config, backbone.dtype_policy
        h, init = config.hidden_dim, kernel_initializer(config.initializer_range)

        def dense(units, name, activation=None, use_bias=True):
            layer = keras.layers.Dense(units, activation=activation, use_bias=use_bias,
                                       kernel_initializer=init, dtype=policy, name=name)
            return layer

        self.start_dense = dense(1, "start_dense")
        self.end_dense_0 = dense(h, "end_dense_0", activation="tanh")
        self.end_layer_norm = keras.layers.LayerNormalization(
            epsilon=config.layer_norm_epsilon, dtype=policy, name="end_layer_norm")
        self.end_dense_1 = dense(1, "end_dense_1")
        self.answer_dense_0 = dense(h, "answer_dense_0", activation="tanh")
        self.answer_dropout = keras.layers.Dropout(dropout, dtype=policy)
        self.answer_dense_1 = dense(1, "answer_dense_1", use_bias=False)
        for layer, width in ((self.start_dense, h), (self.end_dense_0, 2 * h),
                             (self.end_layer_norm, h), (self.end_dense_1, h),
                             (self.answer_dense_0, 2 * h), (self.answer_dense_1, h)):
            layer.build((None, width))

    def _end_log_probs(self, sequence, start_features, p_mask):
        """Log-probs of the end given start features.

        sequence: (batch, seq, H); start_features: (batch, k, H).
        Returns (batch, k, seq).

        `dense_0([h_i; h_s])` is computed as `W_tok h_i + W_start h_s + b`:
        the same numbers as the reference's concatenation, without repeating
        the token half of the product for each of the k starts.
        """
        h = self.config.hidden_dim
        kernel = ops.cast(self.end_dense_0.kernel, sequence.dtype)  # (2H, H)
        bias = ops.cast(self.end_dense_0.bias, sequence.dtype)
        token_part = ops.matmul(sequence, kernel[:h])  # (batch, seq, H)
        start_part = ops.matmul(start_features, kernel[h:]) + bias  # (batch, k, H)
        hidden = ops.tanh(token_part[:, None] + start_part[:, :, None])  # (batch, k, seq, H)
        logits = ops.cast(self.end_dense_1(self.end_layer_norm(hidden))[..., 0], "float32")
        return ops.log_softmax(_masked(logits, p_mask[:, None]), axis=-1)

    def call(self, inputs, training=None):
        sequence = self.backbone(inputs, training=training)["sequence_output"]
        p_mask = inputs["p_mask"]
        start_logits = _masked(ops.cast(self.start_dense(sequence)[..., 0], "float32"), p_mask)
        start_log_probs = ops.log_softmax(start_logits, axis=-1)  # (batch, seq)
        outputs = {"cls_logits": self._answer_logit(sequence, start_logits, training)}
        if training:
            start_features = ops.take_along_axis(
                sequence, ops.cast(inputs["start_positions"], "int32")[:, None, None], axis=1)
            outputs["start_log_probs"] = start_log_probs
            outputs["end_log_probs"] = self._end_log_probs(sequence, start_features, p_mask)[:, 0]
            return outputs
        top_log_probs, top_index = ops.top_k(start_log_probs, k=self.start_n_top)
        start_features = ops.take_along_axis(sequence, top_index[:, :, None], axis=1)
        end_log_probs = self._end_log_probs(sequence, start_features, p_mask)  # (batch, k, seq)
        end_top_log_probs, end_top_index = ops.top_k(end_log_probs, k=self.end_n_top)
        batch = ops.shape(sequence)[0]
        outputs.update({
            "start_top_log_probs": top_log_probs, "start_top_index": top_index,
            "end_top_log_probs": ops.reshape(end_top_log_probs, (batch, -1)),
            "end_top_index": ops.reshape(end_top_index, (batch, -1)),
        })
        return outputs

    def _answer_logit(self, sequence, start_logits, training):
        """(batch,) logit that the question is unanswerable."""
        start_p = ops.cast(ops.softmax(start_logits, axis=-1), sequence.dtype)
        start_feature = ops.einsum("bl,blh->bh", start_p, sequence)
        feature = ops.concatenate([start_feature, sequence[:, 0]], axis=-1)
        hidden = self.answer_dropout(self.answer_dense_0(feature), training=training)
        return ops.cast(self.answer_dense_1(hidden)[:, 0], "float32")

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        start = _position_loss(y_pred["start_log_probs"], y["start_positions"])
        end = _position_loss(y_pred["end_log_probs"], y["end_positions"])
        answerable = keras.losses.binary_crossentropy(
            ops.cast(y["is_impossible"], "float32")[:, None], y_pred["cls_logits"][:, None],
            from_logits=True)
        return replica_mean((start + end) / 2.0 + 0.5 * answerable)

    def train_step(self, data):
        return super().train_step(_with_gold_start(data))

    def head_arguments(self):
        return {"start_n_top": self.start_n_top, "end_n_top": self.end_n_top,
                "dropout": self.dropout}


def _with_gold_start(data):
    """`(x, y, sample_weight)` with the labels' `start_positions` in `x` (teacher forcing)."""
    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    x = {**x, "start_positions": y["start_positions"]}
    return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)
