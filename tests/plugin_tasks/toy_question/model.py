"""`QuestionHead`: one logit on the pooled `[CLS]` output, a sigmoid's worth."""

import keras
from keras import ops

from albert_tf.models.base import TaskModel
from albert_tf.models.losses import replica_mean


class QuestionHead(TaskModel):
    """Outputs `{"logit": float32 (batch,)}`; labels `{"label": (batch,)}` 0 or 1."""

    head_kind = "toy_question"

    def __init__(self, backbone, dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone
        self.dropout = dropout
        self.head_dropout = keras.layers.Dropout(dropout)
        self.question = keras.layers.Dense(1, name="question")
        self.question.build((None, backbone.config.hidden_dim))

    def call(self, inputs, training=None):
        pooled = self.backbone.pooled_output(inputs, training=training)
        logit = self.question(self.head_dropout(pooled, training=training))[:, 0]
        return {"logit": ops.cast(logit, "float32")}

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        return replica_mean(keras.losses.binary_crossentropy(
            ops.cast(y["label"], "float32")[:, None], y_pred["logit"][:, None],
            from_logits=True))

    def head_arguments(self):
        return {"dropout": self.dropout}
