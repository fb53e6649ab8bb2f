"""tasks/metrics.py against scikit-learn and scipy, and on hand-computed values.

scikit-learn is a test-only reference here; the library must not import it.
"""

import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as sk

from albert_tf.tasks import metrics

# 7 examples, both classes, not all correct: every count in the confusion matrix differs.
LABELS = [1, 0, 1, 1, 0, 0, 1]
PREDS = [1, 0, 0, 1, 1, 0, 1]


def test_accuracy_matches_sklearn_and_hand_value():
    assert metrics.accuracy(LABELS, PREDS) == pytest.approx(5 / 7)
    assert metrics.accuracy(LABELS, PREDS) == pytest.approx(sk.accuracy_score(LABELS, PREDS))
    assert metrics.accuracy(np.array(["a", "b"]), np.array(["a", "a"])) == 0.5


def test_f1_binary_matches_sklearn():
    # TP=3, FP=1, FN=1: F1 = 2*3 / (2*3 + 1 + 1) = 0.75.
    assert metrics.f1_binary(LABELS, PREDS) == pytest.approx(0.75)
    assert metrics.f1_binary(LABELS, PREDS) == pytest.approx(sk.f1_score(LABELS, PREDS))
    # The positive class is a parameter: F1 of class 0 is another number.
    assert metrics.f1_binary(LABELS, PREDS, positive=0) == pytest.approx(
        sk.f1_score(LABELS, PREDS, pos_label=0))
    assert metrics.f1_binary(LABELS, PREDS, positive=0) != pytest.approx(0.75)


def test_f1_without_positives_is_zero_like_sklearn():
    labels, preds = [0, 0, 0], [0, 0, 0]
    assert metrics.f1_binary(labels, preds) == 0.0
    assert sk.f1_score(labels, preds, zero_division=0) == 0.0
    assert metrics.f1_binary([1, 1, 0], [0, 0, 0]) == 0.0


def test_mcc_matches_sklearn_binary_and_multiclass():
    # TP=1, FN=1, TN=2, FP=0: (1*2 - 0*1) / sqrt(1*2*2*3) = 1/sqrt(3).
    assert metrics.matthews_corrcoef([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(1 / math.sqrt(3))
    assert metrics.matthews_corrcoef(LABELS, PREDS) == pytest.approx(
        sk.matthews_corrcoef(LABELS, PREDS))
    labels3 = [0, 1, 2, 2, 1, 0, 2, 1, 0]
    preds3 = [0, 2, 2, 1, 1, 0, 2, 0, 0]
    assert metrics.matthews_corrcoef(labels3, preds3) == pytest.approx(
        sk.matthews_corrcoef(labels3, preds3))
    assert metrics.matthews_corrcoef([0, 1, 0], [1, 0, 1]) == pytest.approx(-1.0)


def test_mcc_of_constant_predictions_is_zero_like_sklearn():
    constant = [1] * len(LABELS)
    assert metrics.matthews_corrcoef(LABELS, constant) == 0.0
    assert sk.matthews_corrcoef(LABELS, constant) == 0.0
    assert metrics.matthews_corrcoef([1, 1, 1], [1, 1, 1]) == 0.0


SCORES = [0.0, 1.2, 2.5, 2.5, 3.8, 4.0, 5.0]
GUESSES = [0.4, 1.0, 3.1, 2.2, 3.0, 4.9, 4.1]


def test_pearson_and_spearman_match_scipy():
    assert metrics.pearson(SCORES, GUESSES) == pytest.approx(stats.pearsonr(SCORES, GUESSES)[0])
    # The tie at 2.5 tests averaged ranks.
    assert metrics.spearman(SCORES, GUESSES) == pytest.approx(
        stats.spearmanr(SCORES, GUESSES)[0])
    assert metrics.pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert metrics.pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # Monotone but not linear: Spearman is 1, Pearson is not.
    assert metrics.spearman([1, 2, 3, 4], [1, 4, 9, 100]) == pytest.approx(1.0)
    assert metrics.pearson([1, 2, 3, 4], [1, 4, 9, 100]) < 0.9


def test_correlations_of_a_constant_are_nan_like_scipy():
    assert math.isnan(metrics.pearson(SCORES, [2.0] * len(SCORES)))
    assert math.isnan(metrics.spearman([2.0] * len(SCORES), GUESSES))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns about the constant input
        assert math.isnan(stats.pearsonr(SCORES, [2.0] * len(SCORES))[0])


@pytest.mark.parametrize("fn", [metrics.accuracy, metrics.f1_binary, metrics.matthews_corrcoef,
                                metrics.pearson, metrics.spearman])
def test_bad_inputs_are_rejected(fn):
    with pytest.raises(ValueError, match="3 labels but 2 predictions"):
        fn([1, 0, 1], [1, 0])
    with pytest.raises(ValueError, match="no labels"):
        fn([], [])
    with pytest.raises(ValueError, match="must be 1-D"):
        fn([[1, 0]], [[1, 0]])


def test_correlation_needs_two_pairs():
    with pytest.raises(ValueError, match="at least 2 pairs"):
        metrics.pearson([1.0], [1.0])


def test_results_are_python_floats():
    for fn in (metrics.accuracy, metrics.f1_binary, metrics.matthews_corrcoef, metrics.pearson):
        assert type(fn(LABELS, PREDS)) is float


def test_library_does_not_import_sklearn_or_tensorflow():
    code = ("import sys, albert_tf.tasks.metrics, albert_tf.tasks.sentence_prediction.glue; "
            "print(sorted(m for m in ('sklearn', 'tensorflow', 'keras') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=__file__.rsplit("/tests/", 1)[0])
    assert out.stdout.strip() == "[]"
