import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.training.optimizers import (AdamWeightDecay, Lamb, WarmupLinearDecay,
                                           create_optimizer)


def _numpy_reference(w, grads, lr, wd, decay, lamb, b1=0.9, b2=0.999, eps=1e-6):
    """The reference update rule (no bias correction), step by step in numpy."""
    m, v = np.zeros_like(w), np.zeros_like(w)
    for g in grads:
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        u = m / (np.sqrt(v) + eps) + (wd * w if decay else 0)
        if lamb and decay:
            wn, un = np.linalg.norm(w), np.linalg.norm(u)
            u = u * (wn / un if wn > 0 and un > 0 else 1.0)
        w = w - lr * u
    return w


class _Holder(keras.layers.Layer):
    def __init__(self, values, **kwargs):
        super().__init__(**kwargs)
        self.kernel = self.add_weight(name="kernel", shape=values.shape,
                                      initializer=keras.initializers.Constant(values))
        self.bias = self.add_weight(name="bias", shape=values.shape,
                                    initializer=keras.initializers.Constant(values))


@pytest.mark.parametrize("cls,lamb", [(AdamWeightDecay, False), (Lamb, True)])
def test_matches_reference_update_rule(cls, lamb):
    rng = np.random.default_rng(0)
    w0 = rng.normal(size=(3, 4)).astype("float32")
    grads = [rng.normal(size=(3, 4)).astype("float32") for _ in range(3)]
    holder = _Holder(w0, name="dense")
    opt = cls(learning_rate=0.01, weight_decay=0.1)
    for g in grads:
        opt.apply_gradients([(tf.constant(g), holder.kernel), (tf.constant(g), holder.bias)])
    # float32 order of operations differs (the fused kernel): 1e-6 absolute.
    np.testing.assert_allclose(holder.kernel.numpy(),
                               _numpy_reference(w0, grads, 0.01, 0.1, True, lamb), rtol=1e-5,
                               atol=1e-6)
    # "bias" is excluded from weight decay (and from LAMB's trust ratio).
    np.testing.assert_allclose(holder.bias.numpy(),
                               _numpy_reference(w0, grads, 0.01, 0.1, False, lamb), rtol=1e-5,
                               atol=1e-6)


def test_exclusions_follow_the_reference_patterns():
    opt = AdamWeightDecay(0.1)
    paths = {"attention_0/layer_norm/gamma": True, "ffn_0/output/bias": True,
             "mlm_head/output_bias": True, "attention_0/query/kernel": False,
             "embeddings/position_embeddings": False}

    class Named:
        def __init__(self, path):
            self.path = path

    assert {p: opt.excluded(Named(p)) for p in paths} == paths


def test_schedule_warmup_then_decay_from_step_zero():
    s = WarmupLinearDecay(1.0, total_steps=10, warmup_steps=4)
    values = [float(s(i)) for i in range(11)]
    np.testing.assert_allclose(values[:4], [0, 0.25, 0.5, 0.75])
    # After warmup: 1 - step/total, as the reference's polynomial_decay from step 0.
    np.testing.assert_allclose(values[4:], [0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0], atol=1e-6)
    with pytest.raises(ValueError, match="warmup_steps"):
        WarmupLinearDecay(1.0, total_steps=3, warmup_steps=4)


def test_accumulation_equals_one_big_batch():
    rng = np.random.default_rng(1)
    w0 = rng.normal(size=(5,)).astype("float32")
    g1, g2 = rng.normal(size=(2, 5)).astype("float32")
    big = keras.Variable(w0, name="w")
    create_optimizer("adamw", 0.1, 10, 0).apply_gradients([(tf.constant((g1 + g2) / 2), big)])
    small = keras.Variable(w0, name="w")
    opt = create_optimizer("adamw", 0.1, 10, 0, accumulation_steps=2)
    opt.apply_gradients([(tf.constant(g1), small)])
    np.testing.assert_array_equal(small.numpy(), w0)  # nothing applied yet
    opt.apply_gradients([(tf.constant(g2), small)])
    np.testing.assert_allclose(small.numpy(), big.numpy(), rtol=1e-6)
    assert int(opt.iterations.numpy()) == 1


def test_global_norm_clipping():
    w = keras.Variable(np.zeros(2, "float32"), name="w")
    opt = create_optimizer("adamw", 1.0, 10, 0, weight_decay=0.0, clip_norm=1.0)
    opt.apply_gradients([(tf.constant([300.0, 400.0]), w)])
    # Clipped to norm 1: g = (0.6, 0.8); first step m = 0.1g, v = 0.001g^2.
    expected = -(0.1 * np.array([0.6, 0.8])) / (np.sqrt(0.001) * np.array([0.6, 0.8]) + 1e-6)
    np.testing.assert_allclose(w.numpy(), expected, rtol=1e-4)  # lr at step 0 = 1.0


def test_unknown_optimizer_named():
    with pytest.raises(ValueError, match="unknown optimizer 'sgd'"):
        create_optimizer("sgd", 0.1, 10, 0)
