"""`AlbertClassifier`: sentence (pair) classification and regression."""

import keras
from keras import ops

from albert_tf.layers.common import kernel_initializer
from albert_tf.models.base import TaskModel
from albert_tf.models.losses import categorical_loss, check_loss, replica_mean


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertClassifier(TaskModel):
    """A dense layer on the dropped-out pooled `[CLS]` output.

    As in the reference `run_classifier.py` (`output_weights`/`output_bias`)
    and Hugging Face's `AlbertForSequenceClassification` (`classifier`).
    `num_classes=1` is regression (STS-B) with a squared-error loss.
    `head_loss`: a classification head's loss (`albert_tf.models.losses`: focal,
    label smoothing), None for cross-entropy.

    Inputs: the backbone's dict. Outputs: `{"logits": float32 (batch, num_classes)}`.
    Labels (for `fit`): `{"label": (batch,)}`, class ids or float targets.
    """

    head_kind = "classifier"

    def __init__(self, backbone, num_classes, dropout=0.1, head_loss=None, **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone
        self.num_classes = num_classes
        self.dropout = dropout
        self.head_loss = check_loss(head_loss)
        if self.head_loss is not None and num_classes == 1:
            raise ValueError("a regression head (num_classes=1) takes no classification "
                             f"loss, got head_loss={head_loss!r}")
        self.head_dropout = keras.layers.Dropout(dropout, dtype=backbone.dtype_policy)
        self.classifier = keras.layers.Dense(
            num_classes, kernel_initializer=kernel_initializer(backbone.config.initializer_range),
            dtype=backbone.dtype_policy, name="classifier")
        self.classifier.build((None, backbone.config.hidden_dim))

    @property
    def is_regression(self):
        return self.num_classes == 1

    @property
    def distilled_outputs(self):
        return {"logits": "regression" if self.is_regression else "softmax"}

    def call(self, inputs, training=None):
        pooled = self.backbone.pooled_output(inputs, training=training)
        logits = self.classifier(self.head_dropout(pooled, training=training))
        return {"logits": ops.cast(logits, "float32")}

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        logits = y_pred["logits"]
        if self.is_regression:
            per_example = ops.square(logits[:, 0] - ops.cast(y["label"], "float32"))
        else:
            per_example = categorical_loss(y["label"], logits, self.head_loss)
        return replica_mean(per_example)

    def head_arguments(self):
        return {"num_classes": self.num_classes, "dropout": self.dropout,
                "head_loss": self.head_loss}
