"""Loss helpers shared by the task models.

The classification heads take an optional loss (their `head_loss` constructor
argument, a dict as `tasks.losses.LossOptions.head_loss` makes it):

    {"kind": "cross_entropy" | "focal", "label_smoothing": s, "gamma": g}

- label smoothing (Szegedy et al. 2016, "Rethinking the Inception
  Architecture", section 7): the target is `(1 - s)` on the label plus `s / K`
  on each of the `K` classes, as Keras' `CategoricalCrossentropy(label_smoothing=s)`;
- focal loss (Lin et al. 2017, "Focal Loss for Dense Object Detection"): each
  class's term `-target * log p` weighted by `(1 - p) ** gamma`, as Keras'
  `CategoricalFocalCrossentropy(alpha=1, gamma=g)` (and its binary form for
  multi-label heads, `BinaryFocalCrossentropy`); `alpha` is left at 1: a
  constant factor on every class, which Adam's step size does not see.

`tests/test_losses.py` checks both against those Keras losses. None keeps the
plain cross-entropy (`sparse_cross_entropy`).
"""

import keras
import tensorflow as tf
from keras import ops

LOSS_KINDS = ("cross_entropy", "focal")


def replica_mean(per_example):
    """Mean over this replica's examples, scaled for cross-replica summing.

    Under `tf.distribute` gradients are summed over replicas, so each replica
    contributes `mean / num_replicas`: with equal per-replica batches the sum
    is the mean over the global batch (what Keras' own losses do).
    """
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    return ops.mean(per_example) / replicas


def sparse_cross_entropy(labels, logits):
    """Per-example cross-entropy of float32 logits `(batch, classes)`."""
    return keras.losses.sparse_categorical_crossentropy(
        ops.cast(labels, "int32"), ops.cast(logits, "float32"), from_logits=True)


def check_loss(loss):
    """`loss` (a head's `head_loss` argument) if it is None or a valid dict, else ValueError."""
    if loss is None:
        return None
    unknown = sorted(set(loss) - {"kind", "label_smoothing", "gamma"})
    if unknown or loss.get("kind") not in LOSS_KINDS:
        raise ValueError(f"loss must be None or {{'kind': one of {', '.join(LOSS_KINDS)}, "
                         f"'label_smoothing', 'gamma'}}, got {loss!r}")
    if not 0 <= loss.get("label_smoothing", 0.0) < 1 or loss.get("gamma", 0.0) < 0:
        raise ValueError(f"loss: label_smoothing must be in [0, 1) and gamma >= 0, got {loss!r}")
    return dict(loss)


def _terms(loss):
    """`(label_smoothing, gamma)` of a loss dict (gamma 0 for cross-entropy)."""
    gamma = loss.get("gamma", 2.0) if loss["kind"] == "focal" else 0.0
    return float(loss.get("label_smoothing", 0.0)), float(gamma)


def categorical_loss(labels, logits, loss=None):
    """Per-example loss of float32 `logits` `(..., classes)` against class ids
    `labels` `(...)`, as `loss` says (None: `sparse_cross_entropy`).

    A class whose logit is -inf in a row (a multiple-choice question's padded
    choice slot) is not one of that row's classes: it takes no smoothed target
    and adds nothing, and `K` counts the row's other classes.
    """
    if loss is None:
        return sparse_cross_entropy(labels, logits)
    smoothing, gamma = _terms(loss)
    logits = tf.cast(logits, tf.float32)
    real = tf.math.is_finite(logits)  # (..., classes)
    log_p = tf.nn.log_softmax(tf.where(real, logits, tf.fill(tf.shape(logits), -1e30)))
    classes = tf.reduce_sum(tf.cast(real, tf.float32), axis=-1, keepdims=True)
    one_hot = tf.one_hot(tf.cast(labels, tf.int32), tf.shape(logits)[-1])
    target = (one_hot * (1.0 - smoothing) + smoothing / classes) * tf.cast(real, tf.float32)
    terms = -target * log_p  # (..., classes)
    if gamma:
        terms *= tf.pow(1.0 - tf.exp(log_p), gamma)
    return tf.reduce_sum(tf.where(real, terms, tf.zeros_like(terms)), axis=-1)


def binary_loss(targets, logits, loss=None):
    """Per-unit loss of float32 `logits` against 0/1 `targets` of the same shape
    (a sigmoid per label), as `loss` says (None: binary cross-entropy). Label
    smoothing moves the targets to `t (1 - s) + s / 2`; focal weights each unit's
    cross-entropy by `(1 - p_t) ** gamma`, `p_t` the probability of its smoothed
    target, as Keras' `BinaryFocalCrossentropy` does."""
    targets, logits = tf.cast(targets, tf.float32), tf.cast(logits, tf.float32)
    smoothing, gamma = _terms(loss) if loss is not None else (0.0, 0.0)
    targets = targets * (1.0 - smoothing) + 0.5 * smoothing
    per_unit = tf.nn.sigmoid_cross_entropy_with_logits(labels=targets, logits=logits)
    if gamma:
        p = tf.sigmoid(logits)
        p_t = targets * p + (1.0 - targets) * (1.0 - p)
        per_unit *= tf.pow(1.0 - p_t, gamma)
    return per_unit
