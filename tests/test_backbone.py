import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import accounting
from albert_tf.backbone import AlbertBackbone
from albert_tf.layers import fused
from albert_tf.models.pretraining import AlbertPretrainingModel
from helpers import BATCH, SEQ, assert_close_at_scale, tiny_config, tiny_inputs


def test_output_shapes():
    model = AlbertBackbone(tiny_config())
    out = model(tiny_inputs())
    assert tuple(out["sequence_output"].shape) == (BATCH, SEQ, 6)
    assert tuple(out["pooled_output"].shape) == (BATCH, 6)


@pytest.mark.parametrize("sharing", ["all", "attention", "ffn", "none"])
@pytest.mark.parametrize("groups,inner", [(1, 1), (3, 1), (1, 2)])
def test_parameter_count_matches_accounting(sharing, groups, inner):
    if sharing == "none" and groups > 1:
        pytest.skip("groups do not apply without sharing")
    config = tiny_config(sharing=sharing, num_groups=groups, num_inner_repetitions=inner)
    model = AlbertBackbone(config)
    assert model.count_params() == accounting.backbone_params(config)


def test_all_sharing_parameter_count_independent_of_depth():
    counts = {AlbertBackbone(tiny_config(num_layers=n)).count_params() for n in (1, 3, 8)}
    assert len(counts) == 1
    # ... while without sharing it grows with every layer.
    unshared = [AlbertBackbone(tiny_config(num_layers=n, sharing="none")).count_params()
                for n in (1, 3)]
    assert unshared[1] > unshared[0]


def test_shared_block_is_one_object_called_each_layer():
    model = AlbertBackbone(tiny_config(num_layers=5))
    assert len(model.attention_blocks) == 1 and len(model.ffn_blocks) == 1
    deeper = AlbertBackbone(tiny_config(num_layers=5, sharing="none"))
    x = tiny_inputs()
    # Copying the one shared block into each of the five unshared layers gives
    # the same function: the shared block really is applied five times.
    shared = {v.path: v for v in model.weights}
    for v in deeper.weights:
        v.assign(shared[re.sub(r"^(attention|ffn)_\d+", r"\1_0", v.path)])
    np.testing.assert_allclose(model(x)["sequence_output"], deeper(x)["sequence_output"],
                               atol=1e-6)


def test_padding_does_not_leak():
    model = AlbertBackbone(tiny_config())
    x = tiny_inputs()
    y = {k: v.copy() for k, v in x.items()}
    y["token_ids"][1, SEQ - 2:] = (y["token_ids"][1, SEQ - 2:] + 5) % 11
    a, b = model(x), model(y)
    real = x["padding_mask"].astype(bool)
    np.testing.assert_allclose(a["sequence_output"].numpy()[real],
                               b["sequence_output"].numpy()[real], atol=1e-6)
    np.testing.assert_allclose(a["pooled_output"], b["pooled_output"], atol=1e-6)


def test_one_training_step_changes_every_variable():
    # Partial sharing and groups, so that shared and unshared modules are both checked.
    config = tiny_config(sharing="attention", num_groups=3, initializer_range=0.5)
    model = AlbertPretrainingModel(AlbertBackbone(config))
    x = tiny_inputs()
    x["mask_positions"] = np.array([[1, 2], [0, 4], [3, 5]], "int32")
    mlm_labels = np.array([[1, 2], [3, 4], [5, 6]])
    sop_labels = np.array([0, 1, 1])
    before = {v.path: v.numpy().copy() for v in model.trainable_variables}
    with tf.GradientTape() as tape:
        out = model(x, training=True)
        loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
            mlm_labels, out["mlm_logits"], from_logits=True)) + tf.reduce_mean(
            keras.losses.sparse_categorical_crossentropy(sop_labels, out["sop_logits"],
                                                         from_logits=True))
    grads = tape.gradient(loss, model.trainable_variables)
    keras.optimizers.Adam(0.01).apply_gradients(zip(grads, model.trainable_variables))
    unchanged = [v.path for v in model.trainable_variables
                 if np.array_equal(v.numpy(), before[v.path])]
    assert not unchanged
    assert len(before) == len(model.trainable_variables)


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_close_to_float32(policy):
    config = tiny_config()
    reference = AlbertPretrainingModel(AlbertBackbone(config))
    mixed = AlbertPretrainingModel(AlbertBackbone(config, dtype=policy))
    for v, w in zip(mixed.weights, reference.weights):
        v.assign(w)
    x = tiny_inputs()
    a, b = reference(x), mixed(x)
    assert mixed.backbone.embeddings.token_embedding.embeddings.dtype == "float32"
    assert b["sequence_output"].dtype == policy.split("_")[1]
    assert b["mlm_logits"].dtype == "float32"
    tol = 0.1 if policy == "mixed_bfloat16" else 0.01
    real = x["padding_mask"].astype(bool)
    np.testing.assert_allclose(np.asarray(b["sequence_output"], "float32")[real],
                               a["sequence_output"].numpy()[real], atol=tol)
    np.testing.assert_allclose(b["sop_logits"], a["sop_logits"], atol=tol)


def test_serialization_round_trip(tmp_path):
    model = AlbertBackbone(tiny_config(sharing="ffn"))
    path = str(tmp_path / "m.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.config == model.config
    x = tiny_inputs()
    np.testing.assert_allclose(loaded(x)["pooled_output"], model(x)["pooled_output"])


def test_mixed_policy_and_recomputation_survive_a_keras_round_trip(tmp_path):
    model = AlbertBackbone(tiny_config(sharing="attention", num_groups=3),
                           dtype="mixed_bfloat16", recompute=True)
    path = str(tmp_path / "mixed.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert model.dtype_policy.name == "mixed_bfloat16"
    assert loaded.dtype_policy.name == "mixed_bfloat16"
    assert loaded.encoder.attention_blocks[0].compute_dtype == "bfloat16"
    assert loaded.recompute and loaded.encoder.recompute
    x = tiny_inputs()
    expected, got = model(x), loaded(x)
    for name in ("sequence_output", "pooled_output"):
        assert got[name].dtype == "bfloat16"
        np.testing.assert_array_equal(np.asarray(got[name], "float32"),
                                      np.asarray(expected[name], "float32"))


def test_extra_input_keys_are_ignored_and_missing_ones_named():
    model = AlbertBackbone(tiny_config())
    x = tiny_inputs()
    extra = {**x, "aaa": np.zeros((BATCH, SEQ), "int32"), "p_mask": np.ones((BATCH, SEQ))}
    np.testing.assert_array_equal(model(extra)["pooled_output"], model(x)["pooled_output"])
    with pytest.raises(ValueError, match='Missing data for input "padding_mask"'):
        model({"token_ids": x["token_ids"]})


def unrolled_encoder(encoder, x, attention_bias):
    """The encoder as a plain Python loop of block calls, each with its own
    cast of the weights, in standard ops: what the encoder's `tf.while_loop`
    (with the fused kernels) must equal."""
    with fused.plain_ops():
        for a, f in zip(encoder.plan.attention, encoder.plan.ffn):
            x = encoder.ffn_blocks[f](encoder.attention_blocks[a](x, attention_bias))
    return x


SHARINGS = ({}, {"num_groups": 2}, {"num_groups": 2, "num_inner_repetitions": 2},
            {"sharing": "attention"}, {"sharing": "none"})


@pytest.mark.parametrize("sharing, execution", [
    *((s, {}) for s in SHARINGS), *((s, {"recompute": True}) for s in SHARINGS),
    ({}, {"unroll": True}), ({"num_groups": 2, "num_inner_repetitions": 2}, {"unroll": True})])
def test_encoder_loop_equals_unrolled_layers(sharing, execution, monkeypatch):
    monkeypatch.setattr(fused, "MIN_HIDDEN_DIM", 0)  # the kernels inside the loop too
    config = tiny_config(num_layers=4, initializer_range=0.3, **sharing)
    encoder = AlbertBackbone(config, **execution).encoder
    rng = np.random.default_rng(1)
    x = tf.constant(rng.normal(size=(BATCH, SEQ, 6)), "float32")
    bias = tf.constant(-1e4 * (rng.random((BATCH, 1, 1, SEQ)) < 0.3), "float32")
    weight = tf.constant(rng.normal(size=(BATCH, SEQ, 6)), "float32")

    def outputs_and_gradients(call):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = call(x, bias)
            loss = tf.reduce_sum(y * weight)
        return [y, *tape.gradient(loss, [x, *encoder.trainable_variables])]

    expected = outputs_and_gradients(lambda x, b: unrolled_encoder(encoder, x, b))
    for call in (outputs_and_gradients, tf.function(outputs_and_gradients)):
        got = call(lambda x, b: encoder(x, b, training=True))
        names = ["output", "input gradient"] + [v.path for v in encoder.trainable_variables]
        for a, b, name in zip(expected, got, names):
            assert_close_at_scale(b, a, name=name)


@pytest.mark.parametrize("sharing, execution", [
    *((s, {}) for s in SHARINGS), ({}, {"recompute": True}), ({}, {"unroll": True}),
    ({"num_groups": 2, "num_inner_repetitions": 2}, {"recompute": True}),
    ({"normalize_first": True}, {})])
def test_pooled_output_alone_equals_the_full_models(sharing, execution):
    # `pooled_output` computes the last layer at [CLS] only: same values and gradients.
    model = AlbertBackbone(tiny_config(num_layers=4, initializer_range=0.3, **sharing),
                           **execution)
    x = tiny_inputs()
    x["padding_mask"][1, 3:] = 0
    weight = tf.constant(np.random.default_rng(2).normal(size=(BATCH, 6)), "float32")

    def outputs_and_gradients(pooled):
        with tf.GradientTape() as tape:
            y = pooled(x)
            loss = tf.reduce_sum(y * weight)
        return [y, *(tf.convert_to_tensor(g) for g in tape.gradient(loss,
                                                                    model.trainable_variables))]

    expected = outputs_and_gradients(lambda x: model(x, training=True)["pooled_output"])
    got = outputs_and_gradients(lambda x: model.pooled_output(x, training=True))
    for a, b, name in zip(expected, got, ["pooled"] + [v.path for v in model.trainable_variables]):
        assert_close_at_scale(b, a, 1e-5, name=name)
    np.testing.assert_allclose(model.pooled_output(x), model(x)["pooled_output"], atol=1e-6)


def test_each_layer_of_the_loop_draws_its_own_dropout_masks():
    def seed_steps(num_layers):
        encoder = AlbertBackbone(tiny_config(num_layers=num_layers, dropout=0.5)).encoder
        state = encoder.ffn_blocks[0].output_dropout.seed_generator.state
        before = state.numpy()
        tf.function(encoder)(tf.ones((BATCH, SEQ, 6)), tf.zeros((BATCH, 1, 1, SEQ)),
                             training=True)
        return state.numpy() - before

    np.testing.assert_array_equal(seed_steps(3), 3 * seed_steps(1))
    assert seed_steps(1).any()


@pytest.mark.parametrize("sharing", [{}, {"sharing": "attention", "num_groups": 2}])
def test_recomputation_gives_the_same_gradients(sharing):
    config = tiny_config(num_layers=4, initializer_range=0.3, **sharing)
    plain = AlbertPretrainingModel(AlbertBackbone(config))
    recomputed = AlbertPretrainingModel(AlbertBackbone(config, recompute=True))
    for v, w in zip(recomputed.weights, plain.weights):
        v.assign(w)
    x = tiny_inputs()

    def gradients(model):
        with tf.GradientTape() as tape:
            out = model(x, training=True)
            loss = tf.reduce_sum(out["mlm_logits"] ** 2) + tf.reduce_sum(out["sop_logits"] ** 2)
        return tape.gradient(loss, model.trainable_variables)

    expected = gradients(plain)
    # eagerly, and in a graph as training runs it
    for grads in (gradients(recomputed), tf.function(gradients)(recomputed)):
        for a, b, v in zip(expected, grads, plain.trainable_variables):
            assert_close_at_scale(tf.convert_to_tensor(b), tf.convert_to_tensor(a), name=v.path)
    with pytest.raises(ValueError,
                       match=r"recomputation \(recompute=True, --recompute\) needs dropout=0"):
        AlbertBackbone(tiny_config(dropout=0.1), recompute=True)
    with pytest.raises(ValueError, match=r"recomputation .* cannot be unrolled"):
        AlbertBackbone(tiny_config(), recompute=True, unroll=True)


def test_unrolled_layers_survive_a_keras_round_trip(tmp_path):
    model = AlbertBackbone(tiny_config(num_layers=3), unroll=True)
    path = str(tmp_path / "unrolled.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.unroll and loaded.encoder.unroll
    x = tiny_inputs()
    np.testing.assert_allclose(loaded(x)["pooled_output"], model(x)["pooled_output"], atol=1e-6)
