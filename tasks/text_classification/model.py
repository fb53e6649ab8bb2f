"""`TextClassifier`: the head of the own-file text tasks, with its label set.

`AlbertClassifier`'s dense layer on the pooled `[CLS]` output (the same
weights, so a checkpoint's classifier head loads into it), with the loss of
each kind of task:

- multi-class: softmax cross-entropy, optionally weighted per class
  (`class_weights`, e.g. scikit-learn's "balanced"): the mean of
  `weight[label] * cross_entropy` over the batch, as Keras' `class_weight`;
- multi-label: a sigmoid per label, binary cross-entropy averaged over labels
  and examples;
- regression (`labels` None): squared error of the single output.

`head_loss` (focal, label smoothing: `albert_tf.models.losses`) changes the
classification losses: the softmax's, or each label's sigmoid.

`head_config()` holds the label set and the multi-label decision threshold,
so that both are stored in the fine-tuned model folder.
"""

import keras
from keras import ops

from albert_tf.models import AlbertClassifier
from albert_tf.models.losses import binary_loss, categorical_loss, replica_mean


class TextClassifier(AlbertClassifier):
    """Args:
        backbone: an `AlbertBackbone`.
        labels: label names in id order, or None for regression.
        multi_label: a sigmoid per label instead of one softmax.
        class_weights: one loss weight per label (multi-class), or None.
        threshold: multi-label: the probability from which a label is predicted.
        threshold_source: how it was chosen ("" while it is the default).
        dropout: before the dense layer.
        head_loss: the classification loss (`albert_tf.models.losses`), None for
            cross-entropy.

    Outputs: `{"logits": float32 (batch_size, num_labels)}` ((batch_size, 1) for
    regression). Labels (for `fit`): `{"label": ...}`: class ids (batch_size,),
    multi-hot float32 (batch_size, num_labels), or float32 scores (batch_size,).
    """

    def __init__(self, backbone, labels, multi_label=False, class_weights=None, threshold=0.5,
                 threshold_source="", dropout=0.1, head_loss=None, **kwargs):
        super().__init__(backbone, 1 if labels is None else len(labels), dropout=dropout,
                         head_loss=head_loss, **kwargs)
        self.labels = None if labels is None else tuple(labels)
        self.multi_label = bool(multi_label)
        self.class_weights = None if class_weights is None else tuple(
            float(w) for w in class_weights)
        self.threshold = float(threshold)
        self.threshold_source = threshold_source  # "" until a threshold is chosen

    @property
    def is_regression(self):
        return self.labels is None

    @property
    def distilled_outputs(self):
        if self.multi_label:
            return {"logits": "sigmoid"}
        return super().distilled_outputs

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        logits = y_pred["logits"]
        if self.is_regression:
            per_example = ops.square(logits[:, 0] - ops.cast(y["label"], "float32"))
        elif self.multi_label:
            targets = ops.cast(y["label"], "float32")  # (batch_size, num_labels)
            if self.head_loss is None:
                per_example = ops.mean(keras.losses.binary_crossentropy(
                    targets[..., None], logits[..., None], from_logits=True), axis=-1)
            else:
                per_example = ops.mean(binary_loss(targets, logits, self.head_loss), axis=-1)
        else:
            per_example = categorical_loss(y["label"], logits, self.head_loss)
            if self.class_weights is not None:
                weights = ops.convert_to_tensor(self.class_weights, "float32")
                per_example = per_example * ops.take(weights, ops.cast(y["label"], "int32"))
        return replica_mean(per_example)

    def head_arguments(self):
        return {"labels": None if self.labels is None else list(self.labels),
                "multi_label": self.multi_label,
                "class_weights": None if self.class_weights is None else
                list(self.class_weights), "threshold": self.threshold,
                "threshold_source": self.threshold_source, "dropout": self.dropout,
                "head_loss": self.head_loss}
