"""GLUE's evaluation metrics, in numpy and scipy.

Each function takes two equal-length sequences (lists or numpy arrays) and
returns a Python float. They follow scikit-learn's and scipy's definitions
(the tests check them against `sklearn.metrics` and `scipy.stats`), which the
GLUE leaderboard uses, but this module imports neither scikit-learn nor
TensorFlow.

Degenerate cases, chosen to match the references:
- `f1_binary` is 0.0 when there is no positive label and no positive
  prediction (scikit-learn's `zero_division` default).
- `matthews_corrcoef` is 0.0 when either side is constant (scikit-learn).
- `pearson` and `spearman` are nan when either side is constant: the
  correlation is undefined and scipy returns nan too. Callers that select
  models on these must treat nan as "worst" (nan compares False to anything).
"""

import numpy as np
from scipy import stats


def _pair(labels, predictions, dtype=None):
    """Both sequences as 1-D arrays of the same, non-zero length."""
    labels = np.asarray(labels, dtype=dtype)
    predictions = np.asarray(predictions, dtype=dtype)
    if labels.ndim != 1 or predictions.ndim != 1:
        raise ValueError(f"labels and predictions must be 1-D, got shapes "
                         f"{labels.shape} and {predictions.shape}")
    if len(labels) != len(predictions):
        raise ValueError(f"{len(labels)} labels but {len(predictions)} predictions")
    if len(labels) == 0:
        raise ValueError("no labels: a metric of an empty set is undefined")
    return labels, predictions


def accuracy(labels, predictions):
    """The fraction of predictions equal to their label."""
    labels, predictions = _pair(labels, predictions)
    return float(np.mean(labels == predictions))


def f1_binary(labels, predictions, positive=1):
    """F1 score of the class `positive` (GLUE's F1 for MRPC and QQP).

    The harmonic mean of precision and recall of `positive`; 0.0 when there
    are no true positives (which covers "no positives anywhere").
    """
    labels, predictions = _pair(labels, predictions)
    true_pos = np.sum((labels == positive) & (predictions == positive))
    false_pos = np.sum((labels != positive) & (predictions == positive))
    false_neg = np.sum((labels == positive) & (predictions != positive))
    if true_pos == 0:
        return 0.0
    # 2PR / (P + R) simplifies to 2TP / (2TP + FP + FN).
    return float(2 * true_pos / (2 * true_pos + false_pos + false_neg))


def matthews_corrcoef(labels, predictions):
    """Matthews correlation coefficient (CoLA's metric), any number of classes.

    Uses the multi-class form (Gorodkin 2004) that scikit-learn uses, written
    with the per-class counts of labels (t_k) and predictions (p_k):
    (c*n - sum t_k p_k) / sqrt((n^2 - sum p_k^2) (n^2 - sum t_k^2)),
    with c the number of correct predictions and n the number of examples.
    Returns 0.0 when the denominator is 0, i.e. either side is constant.
    """
    labels, predictions = _pair(labels, predictions)
    classes = np.union1d(labels, predictions)
    true_counts = np.array([np.sum(labels == k) for k in classes], dtype=np.float64)
    pred_counts = np.array([np.sum(predictions == k) for k in classes], dtype=np.float64)
    n = float(len(labels))
    correct = float(np.sum(labels == predictions))
    numerator = correct * n - np.dot(true_counts, pred_counts)
    denominator = np.sqrt((n * n - np.dot(pred_counts, pred_counts))
                          * (n * n - np.dot(true_counts, true_counts)))
    if denominator == 0.0:
        return 0.0
    return float(numerator / denominator)


def pearson(labels, predictions):
    """Pearson correlation (STS-B); nan when either side is constant."""
    labels, predictions = _pair(labels, predictions, dtype=np.float64)
    if len(labels) < 2:
        raise ValueError("a correlation needs at least 2 pairs, got 1")
    x = labels - labels.mean()
    y = predictions - predictions.mean()
    scale = np.sqrt(np.dot(x, x) * np.dot(y, y))
    if scale == 0.0:
        return float("nan")
    # Rounding can push |r| a hair past 1 for (anti-)collinear inputs.
    return float(np.clip(np.dot(x, y) / scale, -1.0, 1.0))


def spearman(labels, predictions):
    """Spearman rank correlation (STS-B): Pearson of the ranks, ties averaged."""
    labels, predictions = _pair(labels, predictions, dtype=np.float64)
    return pearson(stats.rankdata(labels), stats.rankdata(predictions))


# -- Trivial baselines: what a model that learnt nothing scores ------------------


def majority(values):
    """The most frequent value (the smallest among ties)."""
    found, counts = np.unique(np.asarray(values), return_counts=True)
    return found[int(np.argmax(counts))]


def majority_predictions(labels):
    """Every example predicted as the labels' majority class (an array like `labels`)."""
    labels = np.asarray(labels)
    return np.full(labels.shape, majority(labels), labels.dtype)


def mean_predictor_mse(labels, train_labels=None):
    """The squared error of predicting the mean (of `train_labels` if given)."""
    labels = np.asarray(labels, np.float64)
    mean = np.mean(train_labels if train_labels is not None and len(train_labels) else labels)
    return float(np.mean((labels - mean) ** 2))


def one_class(predictions, names=None):
    """`(what, count)` when every prediction is the same class (`names`: the class
    names by id, else the values themselves), else None: a collapsed classifier.
    A single prediction is no collapse (any model predicts one class there)."""
    predictions = np.asarray(predictions)
    if len(predictions) < 2 or np.any(predictions != predictions[0]):
        return None
    value = predictions[0].item() if hasattr(predictions[0], "item") else predictions[0]
    shown = names[int(value)] if names is not None else value
    return f"every one of the {len(predictions)} predictions is {shown!r}", len(predictions)


def constant(predictions, labels, share=0.01):
    """The finding when regression `predictions` hardly vary: their sd under `share`
    of the labels' (a model that predicts one number), else None."""
    predictions, labels = np.asarray(predictions, np.float64), np.asarray(labels, np.float64)
    spread, wanted = float(np.std(predictions)), float(np.std(labels))
    if len(predictions) < 2 or wanted == 0 or spread >= share * wanted:
        return None
    return (f"every one of the {len(predictions)} predictions is about "
            f"{float(np.mean(predictions)):.4g} (sd {spread:.2g} against the labels' "
            f"{wanted:.2g})")

