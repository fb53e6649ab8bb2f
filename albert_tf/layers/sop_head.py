"""The sentence-order-prediction head (Lan et al. 2020, Section 3.2)."""

import keras
from keras import ops

from albert_tf.layers.common import kernel_initializer


class SentenceOrderHead(keras.layers.Layer):
    """A 2-way classifier on the pooled `[CLS]` output.

    Label 0: the two segments are in their original order; 1: swapped.
    Google stores it as `cls/seq_relationship/output_weights` (2 x H, the
    transpose of our kernel) and `output_bias`.

    Call arguments:
        pooled: `(batch_size, hidden_dim)`.

    Returns:
        float32 logits `(batch_size, 2)`.
    """

    def __init__(self, hidden_dim, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_dim = hidden_dim
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            2, kernel_initializer=kernel_initializer(initializer_range),
            dtype=self.dtype_policy, name="dense")

    def build(self, pooled_shape):
        self.dense.build((None, self.hidden_dim))

    def call(self, pooled):
        return ops.cast(self.dense(pooled), "float32")

    def compute_output_shape(self, pooled_shape):
        return (pooled_shape[0], 2)

    def get_config(self):
        config = super().get_config()
        config.update({"hidden_dim": self.hidden_dim,
                       "initializer_range": self.initializer_range})
        return config
