"""The feed-forward sub-layer of a (post- or pre-LayerNorm) transformer block."""

from typing import NamedTuple

import keras
from keras import ops

from albert_tf.layers import fused
from albert_tf.layers.common import (DenseWeights, LayerNormWeights, activation_fn, dense_2d,
                                     dense_residual_layer_norm, dense_weights, kernel_initializer,
                                     layer_norm, layer_norm_weights)


class FeedForwardWeights(NamedTuple):
    """`FeedForwardBlock`'s weights in the compute dtype, from `compute_weights`."""

    intermediate: DenseWeights  # kernel (H, I)
    output: DenseWeights  # kernel (I, H)
    layer_norm: LayerNormWeights


class FeedForwardBlock(keras.layers.Layer):
    """`LayerNorm(x + Dropout(Dense_H(act(Dense_I(x)))))`; with `normalize_first`
    (pre-LayerNorm), `x + Dropout(Dense_H(act(Dense_I(LayerNorm(x)))))`.

    Google's names: `ffn_1/intermediate/dense`, `ffn_1/intermediate/output/dense`
    and `LayerNorm_1`.

    Call arguments:
        x: `(batch_size, seq_length, hidden_dim)`.

    Returns:
        `(batch_size, seq_length, hidden_dim)`.
    """

    def __init__(self, hidden_dim, intermediate_dim, activation="gelu_approximate",
                 dropout=0.0, layer_norm_epsilon=1e-12, initializer_range=0.02,
                 normalize_first=False, **kwargs):
        super().__init__(**kwargs)
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.activation = activation
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.normalize_first = normalize_first

        init = kernel_initializer(initializer_range)
        self._activation = activation_fn(activation)
        # act(h + bias), one fused kernel each way, for training (None: no fused form).
        self._training_activation = fused.bias_activation(activation)
        # The Dense layers own the weights (and their names); `call` uses
        # them through `dense_2d`.
        self.intermediate = keras.layers.Dense(
            intermediate_dim, kernel_initializer=init, dtype=self.dtype_policy,
            name="intermediate")
        self.output_dense = keras.layers.Dense(
            hidden_dim, kernel_initializer=init, dtype=self.dtype_policy, name="output")
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm")
        self.output_dropout = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    def build(self, x_shape):
        self.intermediate.build((None, None, self.hidden_dim))
        self.output_dense.build((None, None, self.intermediate_dim))
        self.layer_norm.build((None, None, self.hidden_dim))

    def compute_weights(self):
        """The block's `FeedForwardWeights` in the compute dtype, for `call_with`."""
        dtype = self.compute_dtype
        return FeedForwardWeights(intermediate=dense_weights((self.intermediate,), dtype),
                                  output=dense_weights((self.output_dense,), dtype),
                                  layer_norm=layer_norm_weights(self.layer_norm, dtype))

    def call(self, x, training=None):
        return self.call_with(self.compute_weights(), x, training)

    def call_with(self, weights, x, training=None):
        """The block with `weights` (`FeedForwardWeights`, cast once, used by many layers)."""
        inputs = layer_norm(self.layer_norm, x, weights.layer_norm) if self.normalize_first else x
        flat = ops.reshape(inputs, (-1, self.hidden_dim))  # (batch * seq, H)
        if training and fused.enabled(self.hidden_dim) and self._training_activation is not None:
            # The bias and GELU one fused kernel each way (`albert_tf.layers.fused`).
            h = self._training_activation(ops.matmul(flat, weights.intermediate.kernel),
                                          weights.intermediate.bias)
        else:  # plain ops, fused into the product by TensorFlow in inference
            h = dense_2d(flat, weights.intermediate, self._activation)  # (batch * seq, I)
        if fused.enabled(self.hidden_dim) and not self.normalize_first:
            return dense_residual_layer_norm(h, weights.output, x, weights.layer_norm,
                                             self.layer_norm_epsilon,
                                             self.output_dropout if training and self.dropout
                                             else None)
        out = dense_2d(h, weights.output)
        out = self.output_dropout(ops.reshape(out, ops.shape(x)), training=training)
        if self.normalize_first:
            return x + out
        return layer_norm(self.layer_norm, x + out, weights.layer_norm)

    def compute_output_shape(self, x_shape):
        return x_shape

    def get_config(self):
        config = super().get_config()
        config.update({
            "hidden_dim": self.hidden_dim,
            "intermediate_dim": self.intermediate_dim,
            "activation": self.activation,
            "dropout": self.dropout,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "initializer_range": self.initializer_range,
            "normalize_first": self.normalize_first,
        })
        return config
