"""The fused training GELU computes the same function and gradient as Keras' GELU."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.layers.common import activation_fn
from albert_tf.layers.feedforward import FeedForwardBlock


def _value_and_gradient(activation, x, dy):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = activation(x)
    return y, tape.gradient(y, x, output_gradients=dy)


@pytest.mark.parametrize("name", ["gelu_approximate", "gelu"])
@pytest.mark.parametrize("dtype,tolerance", [("float32", 1e-5), ("bfloat16", 2e-2)])
def test_fused_gelu_equals_keras_gelu(name, dtype, tolerance):
    rng = np.random.default_rng(0)
    # Past the tails (|x| = 6) too, where tanh saturates.
    x = tf.constant(np.concatenate([rng.normal(size=(3, 7)) * 2, [[-6.0] * 7, [6.0] * 7]]),
                    dtype)
    dy = tf.constant(rng.normal(size=x.shape), dtype)
    # The reference: Keras' GELU in float32.
    ref_y, ref_dx = _value_and_gradient(activation_fn(name), tf.cast(x, "float32"),
                                        tf.cast(dy, "float32"))
    y, dx = _value_and_gradient(activation_fn(name, fused=True), x, dy)
    assert y.dtype == dx.dtype == x.dtype
    scale = float(np.abs(ref_dx).max())
    np.testing.assert_allclose(tf.cast(y, "float32"), ref_y, atol=tolerance * 6)
    np.testing.assert_allclose(tf.cast(dx, "float32"), ref_dx, atol=tolerance * scale)


def test_feedforward_block_trains_with_the_fused_gelu_and_infers_with_the_plain_one():
    block = FeedForwardBlock(hidden_dim=4, intermediate_dim=8)
    block.build((None, None, 4))
    x = keras.random.normal((2, 3, 4), seed=1)
    # No dropout: training and inference compute the same function.
    np.testing.assert_allclose(block(x, training=True), block(x, training=False), atol=1e-5)
    assert block._training_activation is activation_fn("gelu_approximate", fused=True)
