"""What a sentence-task accuracy (NSP or SOP) means on a held-out set.

Held-out sentence labels are rarely balanced (the reference's sampling turns a
one-sentence chunk into a "random next" pair, label 1, in SOP mode too), so
a model that always answers the more frequent label already scores above
0.5. Every accuracy therefore comes with:

- `baseline`: the more frequent label's share (what that model scores);
- `balanced_accuracy`: the mean of the two labels' recalls (0.5 for any
  model that ignores its input, whatever the label shares);
- `ci95`: the 95% Wilson score interval of the accuracy, so that a figure
  from a few dozen pairs is seen for what it is.

`fit_linear_probe` scores a model that has no trained sentence head (the
paper's "None" row of Table 5): a logistic regression on the pooled output,
fit on training pairs and scored on held-out ones.
"""

import math

import numpy as np

# A held-out figure whose 95% interval is wider than this either side is flagged.
MAX_HALF_WIDTH = 0.05
_Z95 = 1.959963984540054


def wilson_interval(hits, total, z=_Z95):
    """The Wilson score interval `(low, high)` of `hits` successes out of `total`."""
    if total <= 0:
        return 0.0, 1.0
    p = hits / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = (z / (1 + z * z / total)) * math.sqrt(p * (1 - p) / total + z * z / (4 * total**2))
    return max(0.0, centre - half), min(1.0, centre + half)


def binary_scores(labels, predictions):
    """Accuracy, majority baseline, balanced accuracy and 95% interval of 0/1
    `predictions` against 0/1 `labels` (equal-length sequences)."""
    labels = np.asarray(labels, dtype=np.int64).reshape(-1)
    predictions = np.asarray(predictions, dtype=np.int64).reshape(-1)
    if labels.shape != predictions.shape:
        raise ValueError(f"{len(labels)} labels but {len(predictions)} predictions")
    total = len(labels)
    hits = int((labels == predictions).sum())
    share = float(labels.mean()) if total else 0.0
    recalls = [float((predictions[labels == k] == k).mean()) for k in (0, 1)
               if (labels == k).any()]
    return {"accuracy": hits / total if total else 0.0,
            "baseline": max(share, 1 - share) if total else 0.0,
            "balanced_accuracy": float(np.mean(recalls)) if recalls else 0.0,
            "ci95": list(wilson_interval(hits, total)),
            "examples": total}


def too_small(scores):
    """True when the accuracy's 95% interval (`scores["ci95"]`) is wider than
    `MAX_HALF_WIDTH` either side."""
    low, high = scores["ci95"]
    return (high - low) / 2 > MAX_HALF_WIDTH


def _enough_examples():
    """The fewest held-out pairs whose accuracy `too_small` passes whatever it is
    (the Wilson interval is widest at 0.5)."""
    n = 1
    while too_small({"ci95": wilson_interval(n / 2, n)}):
        n += 1
    return n


# Fewer held-out pairs than this are flagged before any training (381).
ENOUGH_EXAMPLES = _enough_examples()


def fit_linear_probe(features, labels, l2=1e-2):
    """A logistic regression of 0/1 `labels` on `features` (n, d), L2-penalised,
    fit by scipy's L-BFGS on standardised features; returns `predict(features)`
    giving 0/1 labels."""
    from scipy.optimize import minimize
    from scipy.special import expit, log_expit

    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    mean, scale = x.mean(0), x.std(0) + 1e-6
    x = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])  # the last weight: the bias

    def loss_and_grad(w):
        z = x @ w
        loss = -np.mean(y * log_expit(z) + (1 - y) * log_expit(-z)) + l2 / 2 * w[:-1] @ w[:-1]
        grad = x.T @ (expit(z) - y) / len(y)
        grad[:-1] += l2 * w[:-1]
        return loss, grad

    weights = minimize(loss_and_grad, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B").x

    def predict(new_features):
        new = (np.asarray(new_features, dtype=np.float64) - mean) / scale
        return (new @ weights[:-1] + weights[-1] > 0).astype(np.int64)

    return predict
