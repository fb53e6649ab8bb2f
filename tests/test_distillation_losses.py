"""Each distillation loss against a value computed by hand (numpy, written out)."""

import math

import numpy as np
import pytest

from albert_tf.distillation import losses


def _log_softmax(z):
    z = np.asarray(z, np.float64)
    m = z.max(axis=-1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=-1, keepdims=True))


def test_softmax_soft_targets_are_t_squared_kl():
    student = np.array([[1.0, -0.5, 2.0], [0.0, 0.3, -1.2]], np.float32)
    teacher = np.array([[2.0, 0.5, -1.0], [1.5, -0.2, 0.1]], np.float32)
    t = 2.0
    got = losses.soft_target_rows("softmax", student, teacher, t).numpy()
    # Row 0 by hand: p = softmax(teacher / 2), q = softmax(student / 2).
    p = np.exp([1.0, 0.25, -0.5]) / np.exp([1.0, 0.25, -0.5]).sum()
    q = np.exp([0.5, -0.25, 1.0]) / np.exp([0.5, -0.25, 1.0]).sum()
    row0 = 4.0 * sum(pi * math.log(pi / qi) for pi, qi in zip(p, q))
    assert got[0] == pytest.approx(row0, rel=1e-5)
    log_p, log_q = _log_softmax(teacher[1] / t), _log_softmax(student[1] / t)
    assert got[1] == pytest.approx(4.0 * np.sum(np.exp(log_p) * (log_p - log_q)), rel=1e-5)
    # Equal logits: nothing to learn.
    assert losses.soft_target_rows("softmax", teacher, teacher, t).numpy() == \
        pytest.approx([0.0, 0.0], abs=1e-6)


def test_masked_positions_add_nothing_and_stay_finite():
    # Answer positions a question masks (-1e30), choices a question lacks (-inf).
    student = np.array([[0.2, -1e30, 1.0, -np.inf]], np.float32)
    teacher = np.array([[1.0, -1e30, 0.0, -np.inf]], np.float32)
    got = losses.soft_target_rows("softmax", student, teacher, 1.0).numpy()
    p = np.exp([1.0, 0.0]) / np.exp([1.0, 0.0]).sum()
    q = np.exp([0.2, 1.0]) / np.exp([0.2, 1.0]).sum()
    assert got[0] == pytest.approx(float(np.sum(p * np.log(p / q))), rel=1e-5)


def test_sigmoid_and_regression_soft_targets():
    student = np.array([[0.5, -2.0]], np.float32)
    teacher = np.array([[1.0, 1.0]], np.float32)
    t = 2.0

    def bernoulli_kl(a, b):
        return a * math.log(a / b) + (1 - a) * math.log((1 - a) / (1 - b))

    sig = lambda z: 1 / (1 + math.exp(-z))  # noqa: E731
    want = 4.0 * (bernoulli_kl(sig(0.5), sig(0.25)) + bernoulli_kl(sig(0.5), sig(-1.0))) / 2
    assert losses.soft_target_rows("sigmoid", student, teacher, t).numpy()[0] == \
        pytest.approx(want, rel=1e-5)
    # Regression: squared error, no temperature.
    got = losses.soft_target_rows("regression", np.array([[3.0]]), np.array([[1.5]]), t)
    assert got.numpy()[0] == pytest.approx(2.25)
    with pytest.raises(ValueError, match="unknown distilled output kind 'hinge'"):
        losses.soft_target_rows("hinge", student, teacher, t)


def test_weighted_mean_reads_only_weighted_rows():
    values = np.array([[1.0, 2.0, 30.0], [4.0, 50.0, 60.0]], np.float32)
    weights = np.array([[1, 1, 0], [1, 0, 0]], np.float32)
    assert losses.weighted_mean(values, weights).numpy() == pytest.approx(7.0 / 3)
    assert losses.weighted_mean(values).numpy() == pytest.approx(147.0 / 6)


def test_hidden_state_loss_is_mse_over_real_tokens():
    student = np.zeros((1, 3, 2), np.float32)
    teacher = np.array([[[1.0, 3.0], [2.0, 0.0], [100.0, 100.0]]], np.float32)
    mask = np.array([[1, 1, 0]], np.int32)
    # Token 0: (1 + 9) / 2 = 5; token 1: (4 + 0) / 2 = 2; token 2 is padding.
    assert losses.hidden_state_loss(student, teacher, mask).numpy() == pytest.approx(3.5)


def test_attention_loss_is_kl_per_head_over_real_queries():
    # One example, two heads, three positions of which the last is padding.
    teacher = np.array([[[[0.5, 0.5, 0.0], [0.9, 0.1, 0.0], [1 / 3, 1 / 3, 1 / 3]],
                         [[1.0, 0.0, 0.0], [0.2, 0.8, 0.0], [0.5, 0.5, 0.0]]]], np.float32)
    student = np.array([[[[0.25, 0.75, 0.0], [0.5, 0.5, 0.0], [0.1, 0.1, 0.8]],
                         [[0.6, 0.4, 0.0], [0.2, 0.8, 0.0], [0.9, 0.1, 0.0]]]], np.float32)
    mask = np.array([[1, 1, 0]], np.int32)

    def kl(p, q):
        return sum(a * math.log(a / b) for a, b in zip(p, q) if a > 0)

    rows = [kl([0.5, 0.5], [0.25, 0.75]), kl([0.9, 0.1], [0.5, 0.5]),
            kl([1.0], [0.6]), kl([0.2, 0.8], [0.2, 0.8])]
    got = losses.attention_loss(student, teacher, mask).numpy()
    assert got == pytest.approx(sum(rows) / 4, rel=1e-5)


def test_layer_maps():
    assert losses.default_layer_map(4, 12) == ((0, 0), (1, 3), (2, 6), (3, 9), (4, 12))
    assert losses.default_layer_map(3, 3) == ((0, 0), (1, 1), (2, 2), (3, 3))
    assert losses.default_layer_map(6, 4)[-1] == (6, 4)
    assert losses.parse_layer_map(" 0:0, 2:12", 2, 12) == ((0, 0), (2, 12))
    assert losses.parse_layer_map("", 2, 4) == ((0, 0), (1, 2), (2, 4))
    with pytest.raises(ValueError, match=r"--layer_map: '3:1': the student has layers 0..2"):
        losses.parse_layer_map("3:1", 2, 12)
    with pytest.raises(ValueError, match=r"--layer_map: '1:13': the teacher has layers 0..12"):
        losses.parse_layer_map("1:13", 2, 12)
    with pytest.raises(ValueError, match=r"'1-4' is not student:teacher"):
        losses.parse_layer_map("1-4", 2, 12)
