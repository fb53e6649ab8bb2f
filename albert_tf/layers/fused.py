"""The elementwise work around a block's products, each pass one fused kernel.

Left to TensorFlow's graph (no XLA), what a transformer block does between
its matrix products is dozens of small ops over its activations, each a
pass over memory and several slow in bfloat16: a GELU and its gradient are
`Pow`, `Mul`, `Tanh`, `TanhGrad`, ...; a LayerNorm and its gradient are
`Mean`, `SquaredDifference`, `Rsqrt`, `Mul`, `Sum`, `Tile`, ... in float32
with casts on either side; a bias's gradient is a `BiasAddGrad` over every
row. Measured on albert-base-shaped models (bf16, 2-core Xeon), the GELU
was about 30% of a training step's op time and a LayerNorm's forward and
backward pass cost twice an XLA-fused one.

Here each of them, forward and backward, is one small XLA-compiled
function (XLA fuses its elementwise ops and row reductions into a few
loops), computed in float32 whatever the inputs' dtype, with the bias
added inside it (so the product before it runs without one, and the bias's
gradient is a reduction the backward kernel does anyway):

- `bias_activation`: `act(h + bias)`, the feed-forward block's first
  product's epilogue, in training (in inference TensorFlow's remapper
  fuses MatMul + BiasAdd + GELU into one oneDNN call, which is as fast);
- `residual_layer_norm`: `LayerNorm(out [+ bias] + residual)`, a
  post-LayerNorm block's output, in training and inference;
- `masked_softmax`: `softmax(scores + attention_bias)`, the attention
  distributions, returned in the scores' dtype, in training and inference.

Backward passes recompute cheap values (the GELU's `tanh`, the normalized
input) from the saved inputs instead of keeping the forward's intermediates.

Exports trace the blocks inside `plain_ops()` (`albert_tf.export.base`):
an exported model holds standard TensorFlow ops only, which TF Serving,
the TFLite converter and the web bundle run. A function compiled with XLA
as a whole (`jit_compile=True`: `--xla=on`) traces the plain ops too: XLA
fuses them itself, and measured there the kernels' fixed float32
boundaries made the step slower, not faster.
"""

import contextlib
import functools
import math
import threading

import tensorflow as tf
from tensorflow.python.framework import ops as tf_ops
from tensorflow.python.ops import control_flow_util

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_CUBIC = 0.044715  # the tanh form's coefficient (Hendrycks & Gimpel)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


_state = threading.local()  # `plain`: inside `plain_ops()` (tracing is per thread)


# Narrower blocks take the plain ops: their kernels' compilations (one per
# new batch shape) cost more than they save (toy and test models; the
# smallest released ALBERT, albert_tiny_zh, is 312 wide).
MIN_HIDDEN_DIM = 128


def enabled(hidden_dim):
    """Whether a block of width `hidden_dim` traced now takes these kernels:
    at least `MIN_HIDDEN_DIM` wide, outside `plain_ops()` and outside a
    function that XLA compiles as a whole."""
    return (hidden_dim >= MIN_HIDDEN_DIM and not getattr(_state, "plain", False)
            and not in_compiled_function())


def in_compiled_function():
    """Whether the function being traced is compiled by XLA as a whole: a
    `tf.function(jit_compile=True)`, or called inside one. (TensorFlow's own
    test, which `tf.function` uses to not nest XLA compilations.)"""
    return control_flow_util.GraphOrParentsInXlaContext(tf_ops.get_default_graph())


@contextlib.contextmanager
def plain_ops():
    """Within it, blocks are traced with standard TensorFlow ops only: what an
    exported model holds (`albert_tf.export`), and what the tests compare the
    kernels with."""
    previous, _state.plain = getattr(_state, "plain", False), True
    try:
        yield
    finally:
        _state.plain = previous


def _xla(fn):
    return tf.function(fn, jit_compile=True, autograph=False)


def _f32(x):
    return tf.cast(x, tf.float32)


# XLA's CPU backend runs a reduction over the last axis on one thread (a
# LayerNorm kernel took the same time with one and two threads), and a
# product with a constant column as a threaded matmul: the kernels below
# take their row sums and means as products with a column of ones or of
# 1/dim (float32 accumulation either way; the softmax's row maximum stays a
# reduction). Measured on albert-base's shapes in bfloat16 (2-core Zen 4,
# chained forward + backward calls, interleaved): LayerNorm 1.34-1.40x and
# the attention softmax 1.47x as fast; a training step 1.03x. (Sums over the
# rows, axis 0, stay reductions: as products they were slower.)

def _row_sum(x, scale=1.0):
    """`scale` times the sum over the last axis of a float32 `(..., dim)` tensor,
    kept as `(..., 1)`."""
    dim = tf.shape(x)[-1]
    column = tf.fill(tf.stack([dim, 1]), tf.cast(scale, tf.float32))
    total = tf.matmul(tf.reshape(x, tf.stack([-1, dim])), column)
    return tf.reshape(total, tf.concat([tf.shape(x)[:-1], [1]], 0))


def _row_mean(x):
    """The mean over the last axis of a float32 `(..., dim)` tensor, kept as `(..., 1)`."""
    return _row_sum(x, 1.0 / tf.cast(tf.shape(x)[-1], tf.float32))


def _gelu_approximate(u):
    """(GELU(u), GELU'(u)) of the tanh form, u float32."""
    u2 = u * u
    t = tf.tanh(_SQRT_2_OVER_PI * u * (1.0 + _CUBIC * u2))
    slope = 0.5 * (1.0 + t) + 0.5 * u * (1.0 - t * t) * _SQRT_2_OVER_PI * (1.0 + 3.0 * _CUBIC * u2)
    return 0.5 * u * (1.0 + t), slope


def _gelu_exact(u):
    """(GELU(u), GELU'(u)) of the erf form, u float32."""
    cdf = 0.5 * (1.0 + tf.math.erf(u * _INV_SQRT_2))
    return u * cdf, cdf + u * _INV_SQRT_2PI * tf.exp(-0.5 * u * u)


_GELUS = {"gelu_approximate": _gelu_approximate, "gelu": _gelu_exact}


@functools.lru_cache(maxsize=None)
def bias_activation(name):
    """`f(h, bias) = act(h + bias)` for activation `name`, fused, or None when
    `name` has no fused form (then `dense_2d`'s plain ops apply).

    h: `(rows, dim)`; bias: `(dim,)`; the result has `h`'s dtype.
    """
    gelu = _GELUS.get(name)
    if gelu is None:
        return None

    @_xla
    def forward(h, bias):
        return tf.cast(gelu(_f32(h) + _f32(bias))[0], h.dtype)

    @_xla
    def backward(h, bias, dy):
        dh = _f32(dy) * gelu(_f32(h) + _f32(bias))[1]
        return tf.cast(dh, h.dtype), tf.cast(tf.reduce_sum(dh, 0), bias.dtype)

    @tf.custom_gradient
    def fused(h, bias):
        return forward(h, bias), lambda dy: backward(h, bias, dy)

    return fused


@functools.lru_cache(maxsize=None)
def _layer_norm_kernels(epsilon, with_bias):
    def total(out, residual, bias):
        s = _f32(out) + _f32(residual)
        return s + _f32(bias) if with_bias else s

    @_xla
    def forward(out, residual, bias, gamma, beta):
        s = total(out, residual, bias)
        mean = _row_mean(s)
        centred = s - mean
        rstd = tf.math.rsqrt(_row_mean(centred * centred) + epsilon)
        y = centred * rstd * _f32(gamma) + _f32(beta)
        return tf.cast(y, out.dtype), mean, rstd

    @_xla
    def backward(out, residual, bias, gamma, mean, rstd, dy):
        normalized = (total(out, residual, bias) - mean) * rstd
        g = _f32(dy)
        dn = g * _f32(gamma)
        ds = rstd * (dn - _row_mean(dn) - normalized * _row_mean(dn * normalized))
        d_bias = tf.cast(tf.reduce_sum(ds, 0), bias.dtype) if with_bias else tf.zeros_like(bias)
        return (tf.cast(ds, out.dtype), tf.cast(ds, residual.dtype), d_bias,
                tf.cast(tf.reduce_sum(g * normalized, 0), gamma.dtype),
                tf.cast(tf.reduce_sum(g, 0), gamma.dtype))

    @tf.custom_gradient
    def fused(out, residual, bias, gamma, beta):
        y, mean, rstd = forward(out, residual, bias, gamma, beta)
        return y, lambda dy: backward(out, residual, bias, gamma, mean, rstd, dy)

    return fused


def residual_layer_norm(out, residual, gamma, beta, epsilon, bias=None):
    """`LayerNorm(out + bias + residual)` over the last axis, fused.

    out, residual: `(rows, dim)`; bias (or None), gamma, beta: `(dim,)`. The
    statistics are float32 (as Keras' LayerNormalization computes them); the
    result has `out`'s dtype.
    """
    kernels = _layer_norm_kernels(float(epsilon), bias is not None)
    if bias is None:
        bias = tf.zeros((), out.dtype)  # a placeholder the kernels ignore
    return kernels(out, residual, bias, gamma, beta)


@_xla
def _softmax_forward(scores, attention_bias):
    z = _f32(scores) + _f32(attention_bias)
    e = tf.exp(z - tf.reduce_max(z, -1, keepdims=True))
    return tf.cast(e / _row_sum(e), scores.dtype)


@_xla
def _softmax_backward(probs, dp):
    p, g = _f32(probs), _f32(dp)
    return tf.cast(p * (g - _row_sum(g * p)), probs.dtype)


@tf.custom_gradient
def masked_softmax(scores, attention_bias):
    """`softmax(scores + attention_bias)` over the last axis, computed in
    float32 and returned in `scores`' dtype; `attention_bias` (broadcast to
    `scores`) gets no gradient. The backward pass reads the returned
    distributions, the tensor the next product keeps anyway."""
    probs = _softmax_forward(scores, attention_bias)
    return probs, lambda dp: (_softmax_backward(probs, dp), None)
