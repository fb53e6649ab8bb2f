"""Held-out sentence-task scores against scipy's and scikit-learn's."""

import numpy as np
import pytest
from scipy.stats import binomtest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score

from albert_tf.pretraining import sentence_scores


def test_scores_equal_the_references_on_unbalanced_labels():
    rng = np.random.default_rng(3)
    labels = (rng.random(211) < 0.63).astype(int)
    predictions = np.where(rng.random(211) < 0.7, labels, 1 - labels)
    scores = sentence_scores.binary_scores(labels, predictions)
    hits = int((labels == predictions).sum())
    assert scores["accuracy"] == hits / 211 and scores["examples"] == 211
    assert scores["baseline"] == pytest.approx(max(labels.mean(), 1 - labels.mean()))
    assert scores["balanced_accuracy"] == pytest.approx(
        balanced_accuracy_score(labels, predictions))
    reference = binomtest(hits, 211).proportion_ci(0.95, method="wilson")
    assert scores["ci95"] == pytest.approx([reference.low, reference.high], abs=1e-9)


def test_always_the_majority_scores_its_baseline_and_half_balanced():
    labels = np.array([1] * 61 + [0] * 39)
    scores = sentence_scores.binary_scores(labels, np.ones(100, int))
    assert scores["accuracy"] == scores["baseline"] == 0.61
    assert scores["balanced_accuracy"] == 0.5


def test_a_dozen_pairs_is_too_few_and_a_thousand_is_not():
    few = sentence_scores.binary_scores([0, 1] * 6, [0, 1] * 6)
    many = sentence_scores.binary_scores([0, 1] * 600, [0, 0] * 600)
    assert sentence_scores.too_small(few) and not sentence_scores.too_small(many)


def test_enough_examples_is_where_an_even_split_stops_being_flagged():
    # scipy's Wilson interval of an even split: within +-0.05 from 381 pairs on.
    from scipy.stats import binomtest

    n = sentence_scores.ENOUGH_EXAMPLES
    assert n == 381
    for pairs, flagged in ((n, False), (n + 1, False), (n - 2, True)):
        low, high = binomtest(pairs // 2, pairs).proportion_ci(method="wilson")
        assert bool((high - low) / 2 > sentence_scores.MAX_HALF_WIDTH) is flagged


def test_the_linear_probe_predicts_as_scikit_learns_logistic_regression():
    rng = np.random.default_rng(5)
    features = rng.normal(size=(400, 7)) * [1, 2, 3, 4, 5, 6, 7] + 3
    labels = (features @ rng.normal(size=7) + rng.normal(size=400) > 3).astype(int)
    predict = sentence_scores.fit_linear_probe(features, labels, l2=1e-2)
    mean, scale = features.mean(0), features.std(0) + 1e-6
    # The same objective: C = 1 / (l2 * n) on the standardised features.
    reference = LogisticRegression(C=1 / (1e-2 * 400), tol=1e-10, max_iter=10_000).fit(
        (features - mean) / scale, labels)
    fresh = rng.normal(size=(300, 7)) * [1, 2, 3, 4, 5, 6, 7] + 3
    agree = np.mean(predict(fresh) == reference.predict((fresh - mean) / scale))
    assert agree >= 0.99
    assert np.mean(predict(features) == labels) > 0.8


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="3 labels but 2 predictions"):
        sentence_scores.binary_scores([0, 1, 1], [0, 1])
