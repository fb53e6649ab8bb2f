"""Weight initialisation, activations and the dense product shared by the layers."""

import keras
import tensorflow as tf


def kernel_initializer(stddev):
    """Truncated normal, as in the reference `create_initializer`."""
    return keras.initializers.TruncatedNormal(stddev=stddev)


def activation_fn(name):
    """The activation named in `AlbertConfig.activation`.

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


def dense_2d(x, kernel, bias, activation=None):
    """`activation(x @ kernel + bias)` for a 2-D `x` (rows, in).

    Written as a plain 2-D `MatMul` + `BiasAdd` (+ activation) so that
    TensorFlow's graph optimizer can fuse them into one oneDNN/cuBLAS call
    (a 3-D input would become a slower batched product, and `x + b` an
    unfused add). Measured on this project's CPU: bias and GELU fused into
    the product cost ~5% of it instead of ~30%.
    """
    y = tf.nn.bias_add(tf.matmul(x, kernel), bias)
    return activation(y) if activation is not None else y


def layer_norm_weights(layer, dtype):
    """`(gamma, beta)` of a `keras.layers.LayerNormalization`, cast to `dtype`."""
    return tf.cast(layer.gamma, dtype), tf.cast(layer.beta, dtype)


def layer_norm(layer, x, gamma, beta):
    """What `layer(x)` computes, with its weights given as tensors.

    The blocks take every weight as an argument (see `AlbertEncoder`): a
    recomputed block inside the encoder's loop may not read variables.
    """
    y = keras.ops.layer_normalization(x, gamma, beta, axis=layer.axis, epsilon=layer.epsilon)
    return keras.ops.cast(y, layer.compute_dtype)
