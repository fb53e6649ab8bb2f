"""The fused kernels compute what the plain ops (exports') compute, values
and gradients, and the blocks train and infer with them."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.layers import fused
from albert_tf.layers.attention import SelfAttentionBlock
from albert_tf.layers.common import (DenseWeights, LayerNormWeights, activation_fn,
                                     dense_residual_layer_norm)
from albert_tf.layers.feedforward import FeedForwardBlock
from helpers import assert_close_at_scale


@pytest.fixture(autouse=True)
def kernels_at_any_width(monkeypatch):
    # These tiny blocks take the kernels, as blocks from 128 wide do.
    monkeypatch.setattr(fused, "MIN_HIDDEN_DIM", 0)


# (dtype, tolerance relative to the largest reference value)
DTYPES = [("float32", 1e-5), ("bfloat16", 2e-2)]


def _values_and_gradients(fn, inputs, dy):
    """fn(*inputs) and the gradients of <fn(*inputs), dy> for every input."""
    with tf.GradientTape() as tape:
        tape.watch(inputs)
        y = fn(*inputs)
    return [y, *tape.gradient(y, inputs, output_gradients=dy)]


def _compare(fused_fn, reference_fn, arrays, dy, dtype, tolerance, names):
    """fused_fn in `dtype` against reference_fn in float32, values and gradients."""
    inputs = [tf.constant(a, dtype) for a in arrays]
    got = _values_and_gradients(fused_fn, inputs, tf.constant(dy, dtype))
    expected = _values_and_gradients(reference_fn, [tf.constant(a, "float32") for a in arrays],
                                     tf.constant(dy, "float32"))
    for g, e, name in zip(got, expected, ["value", *names]):
        assert g.dtype == dtype, name
        assert g.shape == e.shape, name
        assert_close_at_scale(tf.cast(g, "float32"), e, tolerance, name=name)


@pytest.mark.parametrize("name", ["gelu_approximate", "gelu"])
@pytest.mark.parametrize("dtype,tolerance", DTYPES)
def test_bias_activation_equals_the_plain_activation_of_the_biased_input(name, dtype, tolerance):
    rng = np.random.default_rng(0)
    # Past the tails (|x| = 6) too, where tanh saturates.
    h = np.concatenate([rng.normal(size=(5, 7)) * 2, [[-6.0] * 7, [6.0] * 7]])
    bias = rng.normal(size=7)
    _compare(fused.bias_activation(name), lambda h, b: activation_fn(name)(h + b), [h, bias],
             rng.normal(size=h.shape), dtype, tolerance, ["dh", "dbias"])


def test_activations_without_a_fused_form_have_none():
    assert fused.bias_activation("relu") is None
    assert fused.bias_activation("gelu") is fused.bias_activation("gelu")  # built once


def _keras_layer_norm(epsilon):
    def norm(x, gamma, beta):
        return keras.ops.layer_normalization(x, gamma, beta, axis=-1, epsilon=epsilon)

    return norm


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("dtype,tolerance", DTYPES)
def test_residual_layer_norm_equals_keras_layer_norm_of_the_sum(with_bias, dtype, tolerance):
    rng = np.random.default_rng(1)
    rows, dim, epsilon = 9, 12, 1e-12
    out, residual = rng.normal(size=(rows, dim)) * 3, rng.normal(size=(rows, dim)) + 1
    gamma, beta, bias = rng.normal(size=dim), rng.normal(size=dim), rng.normal(size=dim)
    norm = _keras_layer_norm(epsilon)
    if with_bias:
        def fn(o, r, b, g, be):
            return fused.residual_layer_norm(o, r, g, be, epsilon, bias=b)

        arrays, names = [out, residual, bias, gamma, beta], ["dout", "dres", "dbias", "dg", "db"]
        reference = lambda o, r, b, g, be: norm(o + b + r, g, be)  # noqa: E731
    else:
        def fn(o, r, g, be):
            return fused.residual_layer_norm(o, r, g, be, epsilon)

        arrays, names = [out, residual, gamma, beta], ["dout", "dres", "dgamma", "dbeta"]
        reference = lambda o, r, g, be: norm(o + r, g, be)  # noqa: E731
    _compare(fn, reference, arrays, rng.normal(size=(rows, dim)), dtype, tolerance, names)


@pytest.mark.parametrize("dtype,tolerance", DTYPES)
def test_masked_softmax_equals_the_softmax_of_the_biased_scores(dtype, tolerance):
    rng = np.random.default_rng(2)
    scores = rng.normal(size=(2, 3, 5, 5)) * 4
    attention_bias = -1e9 * (rng.random((2, 1, 1, 5)) < 0.4)
    attention_bias[:, ..., 0] = 0.0  # every row attends to something
    bias = tf.constant(attention_bias, "float32")
    probs = fused.masked_softmax(tf.constant(scores, dtype), bias)
    assert probs.dtype == dtype
    masked = np.broadcast_to(attention_bias < 0, probs.shape)
    np.testing.assert_array_equal(tf.cast(probs, "float32").numpy()[masked], 0.0)
    _compare(lambda s: fused.masked_softmax(s, bias),
             lambda s: tf.nn.softmax(s + bias, axis=-1), [scores],
             rng.normal(size=scores.shape), dtype, tolerance, ["dscores"])


def test_kernels_traced_with_unknown_lengths_equal_the_eager_call():
    # A training graph traces variable-length batches with unknown dimensions:
    # the kernels' row sums (products with a column of ones) take the length
    # from the tensor at run time.
    rng = np.random.default_rng(4)
    scores = tf.constant(rng.normal(size=(2, 3, 7, 7)) * 4, "float32")
    attention_bias = tf.constant(-1e9 * (rng.random((2, 1, 1, 7)) < 0.3), "float32")
    out, residual = (tf.constant(rng.normal(size=(6, 10)), "float32") for _ in range(2))
    gamma, beta = tf.ones(10), tf.zeros(10)

    @tf.function(input_signature=[tf.TensorSpec((None, 3, None, None)),
                                  tf.TensorSpec((None, 1, 1, None))])
    def softmax_and_gradient(s, bias):
        return _values_and_gradients(lambda s: fused.masked_softmax(s, bias), [s], s)

    @tf.function(input_signature=[tf.TensorSpec((None, None))] * 2)
    def norm_and_gradients(o, r):
        return _values_and_gradients(
            lambda o, r: fused.residual_layer_norm(o, r, gamma, beta, 1e-12), [o, r], o)

    for got, expected in [
            (softmax_and_gradient(scores, attention_bias),
             _values_and_gradients(lambda s: fused.masked_softmax(s, attention_bias), [scores],
                                   scores)),
            (norm_and_gradients(out, residual),
             _values_and_gradients(lambda o, r: fused.residual_layer_norm(
                 o, r, gamma, beta, 1e-12), [out, residual], out))]:
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-5, atol=1e-6)


def test_dense_residual_layer_norm_masks_the_biased_product():
    rng = np.random.default_rng(3)
    x, residual = tf.constant(rng.normal(size=(6, 4)), "float32"), \
        tf.constant(rng.normal(size=(2, 3, 5)), "float32")
    weights = DenseWeights(tf.constant(rng.normal(size=(4, 5)), "float32"),
                           tf.constant(rng.normal(size=5), "float32"))
    norm = LayerNormWeights(tf.constant(rng.normal(size=5), "float32"),
                            tf.constant(rng.normal(size=5), "float32"))
    mask = tf.constant(rng.random((6, 5)) < 0.5, "float32") * 2.0

    def dropout(t, training):
        assert training
        return t * mask

    got = dense_residual_layer_norm(x, weights, residual, norm, 1e-12, dropout)
    product = tf.reshape((x @ weights.kernel + weights.bias) * mask, (2, 3, 5))
    expected = _keras_layer_norm(1e-12)(residual + product, norm.gamma, norm.beta)
    assert got.shape == (2, 3, 5)
    np.testing.assert_allclose(got, expected, atol=1e-5)


def _block_outputs_and_gradients(block, args, training):
    x = args[0]
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = block(*args, training=training)
        weight = tf.reshape(tf.sin(tf.range(tf.size(y), dtype=y.dtype) * 0.37), y.shape)
        loss = tf.reduce_sum(y * weight)
    return [y, *tape.gradient(loss, [x, *block.trainable_variables])]


@pytest.mark.parametrize("normalize_first", [False, True])
@pytest.mark.parametrize("make_block", [
    lambda nf: SelfAttentionBlock(hidden_dim=8, num_heads=2, normalize_first=nf,
                                  initializer_range=0.3),
    lambda nf: FeedForwardBlock(hidden_dim=8, intermediate_dim=12, normalize_first=nf,
                                initializer_range=0.3),
    lambda nf: FeedForwardBlock(hidden_dim=8, intermediate_dim=12, activation="gelu",
                                normalize_first=nf, initializer_range=0.3),
], ids=["attention", "ffn", "ffn_exact_gelu"])
def test_blocks_with_the_fused_kernels_equal_the_plain_ops(make_block, normalize_first):
    block = make_block(normalize_first)
    block.build((None, None, 8))
    rng = np.random.default_rng(4)
    x = tf.constant(rng.normal(size=(2, 5, 8)), "float32")
    args = [x]
    if isinstance(block, SelfAttentionBlock):
        args.append(tf.constant(-1e9 * (np.arange(5) >= 4)[None, None, None], "float32"))
    names = ["output", "dx", *(v.path for v in block.trainable_variables)]
    # No dropout: training and inference compute the same function.
    with fused.plain_ops():
        expected = _block_outputs_and_gradients(block, args, training=False)
    for training in (True, False):
        got = _block_outputs_and_gradients(block, args, training=training)
        for g, e, name in zip(got, expected, names):
            assert_close_at_scale(g, e, 1e-5, name=f"{name} (training={training})")


def _kernels(concrete_function):
    """The names of the XLA-compiled functions a traced function calls."""
    return [f.signature.name for f in concrete_function.graph.as_graph_def().library.function
            if f.attr["_XlaMustCompile"].b]


@pytest.mark.parametrize("jit_compile", [False, True])
def test_a_step_that_xla_compiles_as_a_whole_traces_the_plain_ops(jit_compile):
    # XLA fuses the plain ops itself; inside a compiled step the kernels only cost.
    block = FeedForwardBlock(hidden_dim=8, intermediate_dim=12, initializer_range=0.3)
    block.build((None, None, 8))
    x = tf.constant(np.random.default_rng(5).normal(size=(2, 5, 8)), "float32")

    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(block(x, training=True) ** 2)
        return tape.gradient(loss, block.trainable_variables)

    kernels = _kernels(tf.function(step, jit_compile=jit_compile).get_concrete_function(x))
    assert bool(kernels) != jit_compile, kernels
    with fused.plain_ops():
        expected = step(x)
    for got, want, variable in zip(tf.function(step, jit_compile=jit_compile)(x), expected,
                                   block.trainable_variables):
        assert_close_at_scale(got, want, 1e-5, name=variable.path)


def test_blocks_narrower_than_the_threshold_take_the_plain_ops(monkeypatch):
    monkeypatch.setattr(fused, "MIN_HIDDEN_DIM", 16)
    for width, expected in ((8, False), (16, True)):
        block = FeedForwardBlock(hidden_dim=width, intermediate_dim=12)
        block.build((None, None, width))
        kernels = _kernels(tf.function(lambda x: block(x, training=True)).get_concrete_function(
            tf.zeros((2, 5, width))))
        assert bool(kernels) == expected, width
