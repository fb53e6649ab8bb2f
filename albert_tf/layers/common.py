"""What the layers share: the kernel initializer, the activations, and dense
products and LayerNorm computed from weights given as tensors."""

from typing import NamedTuple

import keras
import tensorflow as tf

from albert_tf.layers import fused


def kernel_initializer(stddev):
    """Truncated normal, as in the reference `create_initializer`."""
    return keras.initializers.TruncatedNormal(stddev=stddev)


def activation_fn(name):
    """The activation named in `AlbertConfig.activation`, as plain ops (which
    TensorFlow fuses into the preceding product in inference; training takes
    `albert_tf.layers.fused.bias_activation` where there is one).

    `gelu_approximate` is the tanh form, 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))),
    which Google's ALBERT calls "gelu" and Hugging Face calls "gelu_new".
    """
    if name == "gelu_approximate":
        return lambda x: keras.activations.gelu(x, approximate=True)
    if name == "gelu":
        return lambda x: keras.activations.gelu(x, approximate=False)
    if name == "relu":
        return keras.activations.relu
    raise ValueError(f"unknown activation {name!r}")


class DenseWeights(NamedTuple):
    """A dense layer's weights as tensors (a NamedTuple: `tf.nest` flattens it)."""

    kernel: tf.Tensor  # (in_dim, out_dim)
    bias: tf.Tensor  # (out_dim,)


class LayerNormWeights(NamedTuple):
    """A LayerNorm's scale and offset as tensors, each `(dim,)`."""

    gamma: tf.Tensor
    beta: tf.Tensor


def dense_weights(layers, dtype, scales=None):
    """`DenseWeights` of `keras.layers.Dense` layers side by side, cast to `dtype`.

    Kernels are concatenated on the output axis: `(in_dim, sum of out_dims)`.
    scales: a factor per layer (or None) that its kernel and bias are
    multiplied by before the cast, so that the product's outputs come scaled.
    """
    scales = scales or (1.0,) * len(layers)

    def scaled(weight, factor):
        return tf.cast(weight if factor == 1.0 else weight * factor, dtype)

    return DenseWeights(
        kernel=tf.concat([scaled(l.kernel, f) for l, f in zip(layers, scales)], 1),
        bias=tf.concat([scaled(l.bias, f) for l, f in zip(layers, scales)], 0))


def dense_2d(x, weights, activation=None):
    """`activation(x @ kernel + bias)` for a 2-D `x` (rows, in_dim), `weights` a `DenseWeights`.

    Written as a plain 2-D `MatMul` + `BiasAdd` (+ activation) so that
    TensorFlow's graph optimizer can fuse them into one oneDNN/cuBLAS call
    (a 3-D input would become a slower batched product, and `x + b` an
    unfused add). Measured on this project's CPU: bias and GELU fused into
    the product cost ~5% of it instead of ~30%.
    """
    y = tf.nn.bias_add(tf.matmul(x, weights.kernel), weights.bias)
    return activation(y) if activation is not None else y


def dense_residual_layer_norm(x, weights, residual, norm, epsilon, dropout=None):
    """`LayerNorm(residual + dropout(x @ kernel + bias))`, a post-LayerNorm
    block's output, with the fused kernel.

    x: `(rows, in_dim)`; weights: `DenseWeights`; residual: `(..., out_dim)`
    with `rows` positions; norm: `LayerNormWeights`; dropout: a Keras
    `Dropout` layer, or None for none. The product runs without its bias:
    bias, residual and LayerNorm are one fused kernel each way
    (`albert_tf.layers.fused.residual_layer_norm`), unless dropout must mask
    the biased product first. Returns `residual`'s shape, `x`'s dtype.
    """
    out, bias = tf.matmul(x, weights.kernel), weights.bias
    if dropout is not None:
        out, bias = dropout(tf.nn.bias_add(out, bias), training=True), None
    flat = tf.reshape(residual, (-1, residual.shape[-1]))
    y = fused.residual_layer_norm(out, flat, norm.gamma, norm.beta, epsilon, bias)
    return tf.reshape(y, tf.shape(residual))


def layer_norm_weights(layer, dtype):
    """`LayerNormWeights` of a `keras.layers.LayerNormalization`, cast to `dtype`."""
    return LayerNormWeights(gamma=tf.cast(layer.gamma, dtype), beta=tf.cast(layer.beta, dtype))


def layer_norm(layer, x, weights):
    """What `layer(x)` computes, with its weights given as `LayerNormWeights`.

    The blocks take every weight as an argument (see `AlbertEncoder`): a
    recomputed block inside the encoder's loop may not read variables.
    """
    y = keras.ops.layer_normalization(x, weights.gamma, weights.beta, axis=layer.axis,
                                      epsilon=layer.epsilon)
    return keras.ops.cast(y, layer.compute_dtype)
