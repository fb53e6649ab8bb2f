"""Loss helpers shared by the task models."""

import keras
import tensorflow as tf
from keras import ops


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
