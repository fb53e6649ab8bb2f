"""The own-file text tasks' metrics against scikit-learn and scipy on many generated
cases, the threshold search against a brute-force one, and the label order and class
weights. Imports no TensorFlow."""

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as sk
from sklearn.utils.class_weight import compute_class_weight

from albert_tf.tasks.text_classification import data
from albert_tf.tasks.text_classification import report

CASES = range(25)


def _multi_class_case(seed):
    rng = np.random.default_rng(seed)
    num_labels = int(rng.integers(2, 7))
    n = int(rng.integers(1, 40))
    labels = rng.integers(0, num_labels, n)
    # Some cases with a good predictor, some random, some constant.
    mode = seed % 3
    predicted = np.where(rng.random(n) < 0.7, labels, rng.integers(0, num_labels, n)) \
        if mode == 0 else rng.integers(0, num_labels, n) if mode == 1 else np.full(n, 1)
    return labels, predicted, [f"l{i}" for i in range(num_labels)]


@pytest.mark.parametrize("seed", CASES)
def test_multi_class_equals_scikit_learn(seed):
    labels, predicted, names = _multi_class_case(seed)
    ids = list(range(len(names)))
    got = report.multi_class(labels, predicted, names)
    assert got["accuracy"] == pytest.approx(sk.accuracy_score(labels, predicted))
    for average in ("precision", "recall", "f1"):
        want = {"precision": sk.precision_score, "recall": sk.recall_score,
                "f1": sk.f1_score}[average](labels, predicted, labels=ids, average="macro",
                                             zero_division=0)
        assert got[f"macro_{average}"] == pytest.approx(want), average
    precision, recall, f1, support = sk.precision_recall_fscore_support(
        labels, predicted, labels=ids, zero_division=0)
    for i, name in enumerate(names):
        assert got["per_class"][name] == pytest.approx(
            {"precision": precision[i], "recall": recall[i], "f1": f1[i],
             "support": support[i]})
    assert got["confusion_matrix"]["counts"] == sk.confusion_matrix(
        labels, predicted, labels=ids).tolist()


@pytest.mark.parametrize("seed", CASES)
def test_multi_label_equals_scikit_learn(seed):
    rng = np.random.default_rng(1000 + seed)
    # Two labels at least: scikit-learn reads a single column as a binary task.
    n, num_labels = int(rng.integers(1, 30)), int(rng.integers(2, 6))
    targets = rng.random((n, num_labels)) < rng.random()
    predicted = np.where(rng.random((n, num_labels)) < 0.6, targets,
                         rng.random((n, num_labels)) < 0.3)
    names = [f"t{i}" for i in range(num_labels)]
    got = report.multi_label(targets, predicted, names)
    for average in ("micro", "macro"):
        for name, score in (("precision", sk.precision_score), ("recall", sk.recall_score),
                            ("f1", sk.f1_score)):
            assert got[f"{average}_{name}"] == pytest.approx(
                score(targets, predicted, average=average, zero_division=0)), (average, name)
    assert got["exact_match"] == pytest.approx(sk.accuracy_score(targets, predicted))
    precision, recall, f1, support = sk.precision_recall_fscore_support(
        targets, predicted, zero_division=0)
    assert [got["per_class"][n]["f1"] for n in names] == pytest.approx(f1)
    assert [got["per_class"][n]["support"] for n in names] == support.tolist()
    # scikit-learn's per-label [[tn, fp], [fn, tp]] against our tp, fp, fn, tn columns.
    matrices = sk.multilabel_confusion_matrix(targets, predicted)
    assert got["confusion_matrix"]["counts"] == [[m[1][1], m[0][1], m[1][0], m[0][0]]
                                                 for m in matrices.tolist()]


@pytest.mark.parametrize("seed", CASES[:20])
def test_regression_equals_scipy_and_scikit_learn(seed):
    rng = np.random.default_rng(2000 + seed)
    n = int(rng.integers(2, 50))
    targets = rng.integers(0, 6, n).astype(float)  # ties, as in STS-B scores
    scores = targets + rng.normal(0, 1 + seed % 4, n)
    got = report.regression(targets, scores)
    if np.std(targets) == 0:
        assert np.isnan(got["pearson"])
    else:
        assert got["pearson"] == pytest.approx(stats.pearsonr(targets, scores)[0], abs=1e-12)
        assert got["spearman"] == pytest.approx(stats.spearmanr(targets, scores)[0],
                                                abs=1e-12)
    assert got["mse"] == pytest.approx(sk.mean_squared_error(targets, scores))


def _brute_force_threshold(targets, probabilities):
    """Micro-F1 at every distinct probability (as threshold) and 1 above them all."""
    best = (0.0, 1.0)
    for t in sorted(set(probabilities.ravel().tolist()), reverse=True):
        kept = probabilities.ravel() >= t
        tp = np.sum(kept & targets.ravel())
        f1 = 2 * tp / (kept.sum() + targets.sum()) if tp else 0.0
        if f1 > best[0] + 1e-12:
            best = (f1, t)
    return best


@pytest.mark.parametrize("seed", CASES[:40])
def test_best_threshold_equals_a_brute_force_search(seed):
    rng = np.random.default_rng(3000 + seed)
    n, num_labels = int(rng.integers(1, 20)), int(rng.integers(1, 5))
    targets = rng.random((n, num_labels)) < 0.4
    probabilities = np.clip(targets * rng.random() + rng.normal(0.3, 0.25, targets.shape), 0, 1)
    if seed % 4 == 0:
        probabilities = np.round(probabilities, 1)  # ties
    threshold, f1 = report.best_threshold(targets, probabilities)
    want_f1, _ = _brute_force_threshold(targets, probabilities)
    assert f1 == pytest.approx(want_f1)
    achieved = sk.f1_score(targets.ravel(), probabilities.ravel() >= threshold,
                           zero_division=0)
    assert achieved == pytest.approx(want_f1)
    if not targets.any():
        assert (threshold, f1) == (1.0, 0.0)


def test_tensorboard_scalars_flatten_numbers_only():
    from albert_tf.training.eval_history import scalars as tensorboard_scalars

    results = report.multi_class([0, 1, 1], [0, 1, 0], ["a", "b"])
    scalars = tensorboard_scalars({**results, "examples": 3, "label": "a"})
    assert scalars["accuracy"] == pytest.approx(2 / 3) and scalars["examples"] == 3.0
    assert scalars["per_class/b/recall"] == 0.5 and "label" not in scalars
    assert not any(k.startswith("confusion_matrix") for k in scalars)


def test_confusion_matrix_picture_is_a_png(tmp_path):
    results = report.multi_class([0, 1, 2, 2], [0, 2, 2, 1], ["neg", "neu", "pos"])
    path = report.write_confusion_png(results["confusion_matrix"], str(tmp_path / "c.png"), "t")
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    labelled = report.multi_label([[1, 0]], [[1, 1]], ["x", "y"])
    path = report.write_confusion_png(labelled["confusion_matrix"], str(tmp_path / "m.png"), "t")
    assert open(path, "rb").read(4) == b"\x89PNG"


def test_label_order_is_numeric_for_integers_else_by_string():
    assert data.sort_labels(["10", "2", "1", "2"]) == ("1", "2", "10")
    assert data.sort_labels(["b", "a", "B", "10", "9"]) == ("10", "9", "B", "a", "b")
    assert data.sort_labels(["-1", "0", "1"]) == ("-1", "0", "1")


@pytest.mark.parametrize("seed", range(10))
def test_balanced_weights_equal_scikit_learn(seed):
    rng = np.random.default_rng(4000 + seed)
    labels = rng.choice(["a", "b", "c", "d"][: 2 + seed % 3], size=int(rng.integers(5, 80)))
    names = data.sort_labels(labels.tolist())
    stats_ = data.LabelStats(names, tuple(int(np.sum(labels == n)) for n in names), len(labels))
    want = compute_class_weight("balanced", classes=np.array(names), y=labels)
    np.testing.assert_allclose(data.balanced_weights(stats_), want)


def test_a_prediction_file_row_gives_probabilities_as_predict_does():
    """A list in the labels' order, as `predict` and the server answer (not a dict)."""
    row = report.prediction("r1", np.array([0.0, np.log(3.0)]), ["neg", "pos"])
    assert row["id"] == "r1" and row["label"] == "pos"
    np.testing.assert_allclose(row["probabilities"], [0.25, 0.75])
    assert isinstance(row["probabilities"], list)
    multi = report.prediction("r2", np.array([0.0, 2.0, -2.0]), ["a", "b", "c"], threshold=0.5)
    assert multi["labels"] == ["a", "b"] and isinstance(multi["probabilities"], list)
