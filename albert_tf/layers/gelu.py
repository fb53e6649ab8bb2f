"""GELU for training: forward and backward each one fused elementwise kernel.

Left to TensorFlow's graph (no XLA), a GELU and its gradient are a dozen
elementwise ops over the feed-forward block's `(batch * seq, intermediate_dim)`
activations (`Pow`, `Mul`, `Tanh`, `TanhGrad`, ...), each a pass over memory,
and slow in bfloat16: measured on albert-base-shaped models (bf16, 2-core
Xeon), about 30% of a training step's op time. Here the forward and the
backward pass are each one small XLA-compiled function (XLA fuses the
elementwise ops into one loop), computed in float32 whatever the input's
dtype, and the backward pass recomputes `tanh` from the saved input instead
of keeping the forward's intermediates.

Inference keeps the plain ops (`albert_tf.layers.common.activation_fn`):
there TensorFlow's remapper fuses MatMul + BiasAdd + GELU into one oneDNN
call, which an XLA call in between would prevent.
"""

import math

import tensorflow as tf

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_CUBIC = 0.044715  # the tanh form's coefficient (Hendrycks & Gimpel)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _tanh_parts(x):
    """(tanh(u), du/dx) of u = sqrt(2/pi) (x + 0.044715 x^3), x float32."""
    x2 = x * x
    t = tf.tanh(_SQRT_2_OVER_PI * x * (1.0 + _CUBIC * x2))
    return t, _SQRT_2_OVER_PI * (1.0 + 3.0 * _CUBIC * x2)


@tf.function(jit_compile=True, autograph=False)
def _approximate_forward(x):
    x32 = tf.cast(x, tf.float32)
    t, _ = _tanh_parts(x32)
    return tf.cast(0.5 * x32 * (1.0 + t), x.dtype)


@tf.function(jit_compile=True, autograph=False)
def _approximate_backward(x, dy):
    x32 = tf.cast(x, tf.float32)
    t, du = _tanh_parts(x32)
    slope = 0.5 * (1.0 + t) + 0.5 * x32 * (1.0 - t * t) * du
    return tf.cast(tf.cast(dy, tf.float32) * slope, x.dtype)


@tf.function(jit_compile=True, autograph=False)
def _exact_forward(x):
    x32 = tf.cast(x, tf.float32)
    return tf.cast(0.5 * x32 * (1.0 + tf.math.erf(x32 * _INV_SQRT_2)), x.dtype)


@tf.function(jit_compile=True, autograph=False)
def _exact_backward(x, dy):
    x32 = tf.cast(x, tf.float32)
    slope = (0.5 * (1.0 + tf.math.erf(x32 * _INV_SQRT_2))
             + x32 * _INV_SQRT_2PI * tf.exp(-0.5 * x32 * x32))
    return tf.cast(tf.cast(dy, tf.float32) * slope, x.dtype)


def _fused(forward, backward):
    @tf.custom_gradient
    def gelu(x):
        return forward(x), lambda dy: backward(x, dy)

    return gelu


# `approximate` (the tanh form) -> the fused GELU.
FUSED_GELU = {True: _fused(_approximate_forward, _approximate_backward),
              False: _fused(_exact_forward, _exact_backward)}
