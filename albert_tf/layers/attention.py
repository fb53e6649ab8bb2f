"""The self-attention sub-layer of a (post- or pre-LayerNorm) transformer block."""

import math
from typing import NamedTuple

import keras
import tensorflow as tf
from keras import ops

from albert_tf.layers import fused
from albert_tf.layers.common import (DenseWeights, LayerNormWeights, dense_2d,
                                     dense_residual_layer_norm, dense_weights, kernel_initializer,
                                     layer_norm, layer_norm_weights)


class AttentionWeights(NamedTuple):
    """`SelfAttentionBlock`'s weights in the compute dtype, from `compute_weights`."""

    qkv: DenseWeights  # kernel (H, 3H): query, key and value side by side
    output: DenseWeights  # kernel (H, H)
    layer_norm: LayerNormWeights


class SelfAttentionBlock(keras.layers.Layer):
    """Multi-head self-attention, output projection, residual, LayerNorm.

    `LayerNorm(x + Dropout(Dense(Attention(x))))`, as in Google's
    `attention_ffn_block` (post-LayerNorm, like BERT); with `normalize_first`,
    `x + Dropout(Dense(Attention(LayerNorm(x))))` (pre-LayerNorm, Xiong et al.
    2020, as brightmart/albert_zh's `prelln_transformer_model`). The
    attention softmax is computed in float32 under mixed precision.

    Call arguments:
        x: `(batch_size, seq_length, hidden_dim)`.
        attention_bias: float `(batch_size, 1, 1, seq_length)`, 0 where a key
            may be attended to and a large negative number where it is padding.

    Returns:
        `(batch_size, seq_length, hidden_dim)`.
    """

    def __init__(self, hidden_dim, num_heads, dropout=0.0, attention_dropout=0.0,
                 layer_norm_epsilon=1e-12, initializer_range=0.02, normalize_first=False,
                 **kwargs):
        super().__init__(**kwargs)
        if hidden_dim % num_heads:
            raise ValueError(f"hidden_dim={hidden_dim} must be divisible by num_heads={num_heads}")
        self.hidden_dim = hidden_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.normalize_first = normalize_first
        self.head_dim = hidden_dim // num_heads

        def dense(name):
            return keras.layers.Dense(
                hidden_dim, kernel_initializer=kernel_initializer(initializer_range),
                dtype=self.dtype_policy, name=name)

        self.query = dense("query")
        self.key = dense("key")
        self.value = dense("value")
        self.output_dense = dense("output")
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm")
        self.probs_dropout = keras.layers.Dropout(attention_dropout, dtype=self.dtype_policy)
        self.output_dropout = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    def build(self, x_shape, attention_bias_shape=None):
        for layer in (self.query, self.key, self.value, self.output_dense):
            layer.build((None, None, self.hidden_dim))
        self.layer_norm.build((None, None, self.hidden_dim))

    def compute_weights(self):
        """The block's `AttentionWeights` in the compute dtype, for `call_with`.

        Query, key and value side by side: one (H, 3H) product instead of
        three (H, H) ones, the same numbers in a larger (faster) multiply.
        The query's kernel and bias come multiplied by 1/sqrt(head_dim), so
        that the scores come scaled out of the product: a multiply of the
        (H, H) weights once per encoder call instead of one over every
        layer's (batch, heads, seq, seq) scores and their gradient (8% of a
        bf16 training step's op time). With head_dim 64 (albert-base to
        xxlarge) the factor is 1/8, so scaling is exact in any precision.
        """
        dtype = self.compute_dtype
        return AttentionWeights(
            qkv=dense_weights((self.query, self.key, self.value), dtype,
                              scales=(1.0 / math.sqrt(self.head_dim), 1.0, 1.0)),
            output=dense_weights((self.output_dense,), dtype),
            layer_norm=layer_norm_weights(self.layer_norm, dtype))

    def call(self, x, attention_bias, training=None):
        return self.call_with(self.compute_weights(), x, attention_bias, training)

    def call_with(self, weights, x, attention_bias, training=None, return_probs=False,
                  first_only=False):
        """The block with `weights` (`AttentionWeights`, cast once, used by many layers).

        return_probs: also return the attention distributions, float32
        `(batch_size, num_heads, queries, seq_length)` (before dropout).
        first_only: compute the output at the first position (`[CLS]`) only,
            `(batch_size, 1, hidden_dim)`: its query attends to every key, as
            in the full block, and the other positions' queries, outputs and
            residuals are not computed (what a head that reads `[CLS]` alone
            needs of the last layer).
        """
        batch, seq = ops.shape(x)[0], ops.shape(x)[1]
        inputs = layer_norm(self.layer_norm, x, weights.layer_norm) if self.normalize_first else x
        flat = ops.reshape(inputs, (-1, self.hidden_dim))  # (batch * seq, H)
        if first_only:
            # split, not slices: the gradient of a slice is a full-size scatter
            # of zeros (StridedSliceGrad, 6 ms of a bf16 albert-base step), of
            # a split one concatenation.
            parts = [self.hidden_dim, 2 * self.hidden_dim]
            q_weights, kv_weights = (DenseWeights(*w) for w in zip(
                tf.split(weights.qkv.kernel, parts, axis=1), tf.split(weights.qkv.bias, parts)))
            q = dense_2d(inputs[:, 0], q_weights)  # (batch, H)
            (q,) = self._heads(q, batch, 1, 1)
            kv = dense_2d(flat, kv_weights)  # (batch * seq, 2H)
            k, v = self._heads(kv, batch, seq, 2)
            x = x[:, :1]  # the residual: the first position's
        else:
            q, k, v = self._heads(dense_2d(flat, weights.qkv), batch, seq, 3)
        # Scaled by 1/sqrt(head_dim) already: the query's weights carry the
        # factor (`compute_weights`). (Scaling q here, inside the recomputing
        # encoder loop, met a graph-optimizer bug: the backward pass's input
        # gradient came out empty.)
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2)))  # (batch, heads, queries, seq)
        if fused.enabled(self.hidden_dim):  # one fused kernel each way (`albert_tf.layers.fused`)
            probs = fused.masked_softmax(scores, attention_bias)
            distributions = ops.cast(probs, "float32")
        else:
            scores = ops.cast(scores, "float32") + ops.cast(attention_bias, "float32")
            distributions = ops.softmax(scores, axis=-1)
            probs = ops.cast(distributions, self.compute_dtype)
        probs = self.probs_dropout(probs, training=training)
        context = ops.matmul(probs, v)  # (batch, heads, queries, head_dim)
        context = ops.reshape(ops.transpose(context, (0, 2, 1, 3)), (-1, self.hidden_dim))
        if fused.enabled(self.hidden_dim) and not self.normalize_first:
            out = dense_residual_layer_norm(
                context, weights.output, x, weights.layer_norm, self.layer_norm_epsilon,
                self.output_dropout if training and self.dropout else None)
            return (out, distributions) if return_probs else out
        out = ops.reshape(dense_2d(context, weights.output), ops.shape(x))  # (batch, queries, H)
        out = self.output_dropout(out, training=training)
        out = x + out if self.normalize_first else layer_norm(self.layer_norm, x + out,
                                                               weights.layer_norm)
        return (out, distributions) if return_probs else out

    def _heads(self, projected, batch, seq, parts):
        """`parts` tensors `(batch, heads, seq, head_dim)` from the projections
        `(batch * seq, parts * H)` side by side."""
        projected = ops.reshape(projected, (batch, seq, parts, self.num_heads, self.head_dim))
        projected = ops.transpose(projected, (2, 0, 3, 1, 4))  # (parts, batch, heads, seq, hd)
        # unstack, not projected[i]: the gradient of slices would be full-size
        # scatters (StridedSliceGrad was 11% of a training step).
        return ops.unstack(projected, parts, axis=0)

    def compute_output_shape(self, x_shape, attention_bias_shape=None):
        return x_shape

    def get_config(self):
        config = super().get_config()
        config.update({
            "hidden_dim": self.hidden_dim,
            "num_heads": self.num_heads,
            "dropout": self.dropout,
            "attention_dropout": self.attention_dropout,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "initializer_range": self.initializer_range,
            "normalize_first": self.normalize_first,
        })
        return config
