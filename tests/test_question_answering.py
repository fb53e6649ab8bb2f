import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.backbone import AlbertBackbone
from albert_tf.models import AlbertSpanQA, AlbertBeamQA
from helpers import BATCH, SEQ, tiny_config, tiny_inputs


def _qa_inputs():
    x = tiny_inputs()
    p_mask = np.ones((BATCH, SEQ), "int32")
    p_mask[:, 0] = 0  # [CLS]
    p_mask[:, 3:6] = 0  # the context
    x["p_mask"] = p_mask
    x["start_positions"] = np.array([3, 0, 4], "int32")
    return x


def _v2(**kwargs):
    keras.utils.set_random_seed(3)
    return AlbertBeamQA(AlbertBackbone(tiny_config(initializer_range=0.5)), **kwargs)


def test_span_head_shapes_and_masking():
    model = AlbertSpanQA(AlbertBackbone(tiny_config()))
    out = model(_qa_inputs())
    assert out["start_logits"].shape == (BATCH, SEQ)
    masked = _qa_inputs()["p_mask"].astype(bool)
    assert np.all(out["start_logits"].numpy()[masked] < -1e29)
    assert np.all(out["end_logits"].numpy()[~masked] > -1e29)


def test_v2_inference_shapes():
    out = _v2(start_n_top=3, end_n_top=2)(_qa_inputs(), training=False)
    assert out["start_top_index"].shape == (BATCH, 3)
    assert out["end_top_index"].shape == (BATCH, 6)
    assert out["end_top_log_probs"].shape == (BATCH, 6)
    assert out["cls_logits"].shape == (BATCH,)


def test_v2_beam_search_matches_brute_force():
    model = _v2(start_n_top=3, end_n_top=2)
    x = _qa_inputs()
    beam = {k: v.numpy() for k, v in model(x, training=False).items()}
    # Brute force: the training path gives the end distribution for a given
    # start; run it for every start and rank all (start, end) pairs the beam saw.
    start_log_probs = model({**x, "start_positions": np.zeros(BATCH, "int32")},
                            training=True)["start_log_probs"].numpy()
    for b in range(BATCH):
        best_starts = np.argsort(-start_log_probs[b], kind="stable")[:3]
        np.testing.assert_array_equal(np.sort(beam["start_top_index"][b]), np.sort(best_starts))
        for s_rank, s in enumerate(beam["start_top_index"][b]):
            forced = {**x, "start_positions": np.full(BATCH, s, "int32")}
            ends = model(forced, training=True)["end_log_probs"].numpy()[b]
            top_ends = np.argsort(-ends, kind="stable")[:2]
            got = beam["end_top_index"][b, s_rank * 2:(s_rank + 1) * 2]
            np.testing.assert_array_equal(got, top_ends)
            np.testing.assert_allclose(beam["end_top_log_probs"][b, s_rank * 2:(s_rank + 1) * 2],
                                       ends[top_ends], atol=1e-5)


def test_v2_end_head_equals_the_reference_concatenation():
    model = _v2()
    x = _qa_inputs()
    sequence = model.backbone({k: x[k] for k in ("token_ids", "segment_ids", "padding_mask")}
                              )["sequence_output"].numpy()
    starts = x["start_positions"]
    ours = model(x, training=True)["end_log_probs"].numpy()
    # The reference: dense_0 on [h_i; h_start] (concatenated), LayerNorm, dense_1.
    start_feat = sequence[np.arange(BATCH), starts][:, None].repeat(SEQ, 1)
    hidden = np.tanh(np.concatenate([sequence, start_feat], -1) @ model.end_dense_0.kernel.numpy()
                     + model.end_dense_0.bias.numpy())
    hidden = model.end_layer_norm(hidden).numpy()
    logits = (hidden @ model.end_dense_1.kernel.numpy() + model.end_dense_1.bias.numpy())[..., 0]
    p = x["p_mask"]
    logits = logits * (1 - p) - 1e30 * p
    expected = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1,
                                                                                    keepdims=True)) \
        - logits.max(-1, keepdims=True)
    real = p == 0
    np.testing.assert_allclose(ours[real], expected[real], atol=1e-4)


@pytest.mark.parametrize("cls", [AlbertSpanQA, AlbertBeamQA])
def test_training_step_changes_every_variable(cls):
    keras.utils.set_random_seed(1)
    model = cls(AlbertBackbone(tiny_config(initializer_range=0.5)))
    x = _qa_inputs()
    y = {"start_positions": x["start_positions"], "end_positions": np.array([5, 0, 4], "int32"),
         "is_impossible": np.array([0, 1, 0])}
    before = {v.path: v.numpy().copy() for v in model.trainable_variables}
    with tf.GradientTape() as tape:
        loss = model.compute_loss(x, y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    keras.optimizers.Adam(0.01).apply_gradients(zip(grads, model.trainable_variables))
    # A bias added to every position's logit before the softmax over positions
    # has a gradient of zero (up to rounding): its step is noise, not learning.
    shift_invariant = {"start_dense/bias", "end_dense_1/bias", "qa_outputs/bias"}
    unchanged = [v.path for v in model.trainable_variables
                 if np.array_equal(v.numpy(), before[v.path])
                 and v.path not in shift_invariant]
    assert not unchanged
    assert all(np.abs(g.numpy()).max() < 1e-5 for g, v in zip(grads, model.trainable_variables)
               if v.path in shift_invariant)
    # Question answering reads the token outputs; the unused pooler is frozen.
    assert "pooler/kernel" not in before
    assert float(loss) > 0


def test_v2_end_layer_norm_takes_the_backbone_epsilon():
    model = AlbertBeamQA(AlbertBackbone(tiny_config(layer_norm_epsilon=1e-5)))
    assert model.end_layer_norm.epsilon == 1e-5


def _deterministic(cls):
    """A QA model without dropout, so that two calls give the same loss."""
    backbone = AlbertBackbone(tiny_config(initializer_range=0.5))
    return AlbertBeamQA(backbone, dropout=0.0) if cls is AlbertBeamQA else cls(backbone)


@pytest.mark.parametrize("cls", [AlbertSpanQA, AlbertBeamQA])
def test_losses_read_both_positions_from_the_labels(cls):
    keras.utils.set_random_seed(2)
    model = _deterministic(cls)
    x = _qa_inputs()
    y = {"start_positions": np.array([4, 0, 5], "int32"),
         "end_positions": np.array([5, 0, 5], "int32"), "is_impossible": np.array([0, 1, 0])}
    forward = {**x, "start_positions": y["start_positions"]}  # the v2 head's gold start
    loss = float(model.compute_loss(x, y, model(forward, training=True)))
    # A start position left in the inputs does not change the loss ...
    misleading = {**x, "start_positions": np.array([3, 3, 3], "int32")}
    assert float(model.compute_loss(misleading, y, model(forward, training=True))) == loss
    # ... one in the labels does.
    other = {**y, "start_positions": np.array([3, 3, 3], "int32")}
    assert float(model.compute_loss(x, other, model(forward, training=True))) != loss


@pytest.mark.parametrize("cls", [AlbertSpanQA, AlbertBeamQA])
def test_fit_takes_the_positions_from_the_labels_only(cls):
    keras.utils.set_random_seed(4)
    model = _deterministic(cls)
    x = {k: v for k, v in _qa_inputs().items() if k != "start_positions"}
    y = {"start_positions": np.array([4, 0, 5], "int32"),
         "end_positions": np.array([5, 0, 5], "int32"), "is_impossible": np.array([0, 1, 0])}
    # The loss of fit's first step (before the update) is compute_loss with
    # the gold start given to the forward pass (v2's teacher forcing).
    expected = float(model.compute_loss(
        x, y, model({**x, "start_positions": y["start_positions"]}, training=True)))
    model.compile(optimizer=keras.optimizers.SGD(0.0))
    history = model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    np.testing.assert_allclose(history.history["loss"][0], expected, rtol=1e-5)
