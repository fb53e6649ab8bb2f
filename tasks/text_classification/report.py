"""The reports of the own-file text tasks: metrics, the threshold, the picture.

Metrics follow scikit-learn's definitions (tests check them against
`sklearn.metrics`) with `zero_division=0`: a label never predicted has
precision 0, a label never present recall 0, and F1 is 0 when both are.
Macro averages run over every label of the training set, present in the
evaluated file or not (scikit-learn's `labels=` argument). This module
imports neither scikit-learn nor TensorFlow; the picture needs matplotlib.
"""

import os

import numpy as np

from albert_tf.tasks import metrics as glue_metrics


def _ratio(numerator, denominator):
    numerator, denominator = np.asarray(numerator, float), np.asarray(denominator, float)
    return np.divide(numerator, denominator, out=np.zeros_like(numerator),
                     where=denominator > 0)


def _scores(tp, fp, fn):
    """Precision, recall, F1 arrays from per-label counts."""
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    return precision, recall, _ratio(2 * tp, 2 * tp + fp + fn)


def _per_class(names, tp, fp, fn, support):
    precision, recall, f1 = _scores(tp, fp, fn)
    return {name: {"precision": float(p), "recall": float(r), "f1": float(f),
                   "support": int(s)}
            for name, p, r, f, s in zip(names, precision, recall, f1, support)}


def confusion_matrix(label_ids, predicted_ids, num_labels):
    """(num_labels, num_labels) counts: row = true label, column = predicted."""
    matrix = np.zeros((num_labels, num_labels), np.int64)
    np.add.at(matrix, (np.asarray(label_ids), np.asarray(predicted_ids)), 1)
    return matrix


def multi_class(label_ids, predicted_ids, names):
    """Accuracy, macro precision/recall/F1, per-class report and confusion matrix."""
    matrix = confusion_matrix(label_ids, predicted_ids, len(names))
    tp = np.diag(matrix)
    fp, fn = matrix.sum(0) - tp, matrix.sum(1) - tp
    precision, recall, f1 = _scores(tp, fp, fn)
    return {"accuracy": glue_metrics.accuracy(label_ids, predicted_ids),
            "macro_precision": float(precision.mean()), "macro_recall": float(recall.mean()),
            "macro_f1": float(f1.mean()),
            "per_class": _per_class(names, tp, fp, fn, matrix.sum(1)),
            "confusion_matrix": {"labels": list(names), "rows": "true label",
                                 "columns": "predicted label", "counts": matrix.tolist()}}


def multi_label(targets, predicted, names):
    """Micro and macro precision/recall/F1, the exact-match ratio, per-class report and
    each label's 2x2 confusion counts; targets, predicted: bool (examples, labels)."""
    targets, predicted = np.asarray(targets, bool), np.asarray(predicted, bool)
    tp = (targets & predicted).sum(0)
    fp, fn = (~targets & predicted).sum(0), (targets & ~predicted).sum(0)
    tn = len(targets) - tp - fp - fn
    precision, recall, f1 = _scores(tp, fp, fn)
    micro = _scores(tp.sum(), fp.sum(), fn.sum())
    return {"micro_precision": float(micro[0]), "micro_recall": float(micro[1]),
            "micro_f1": float(micro[2]), "macro_precision": float(precision.mean()),
            "macro_recall": float(recall.mean()), "macro_f1": float(f1.mean()),
            "exact_match": float(np.mean(np.all(targets == predicted, axis=1))),
            "per_class": _per_class(names, tp, fp, fn, targets.sum(0)),
            "confusion_matrix": {"labels": list(names), "columns": ["tp", "fp", "fn", "tn"],
                                 "counts": np.stack([tp, fp, fn, tn], 1).tolist()}}


def regression(targets, scores):
    """Pearson, Spearman and the mean squared error."""
    targets, scores = np.asarray(targets, np.float64), np.asarray(scores, np.float64)
    return {"pearson": glue_metrics.pearson(targets, scores),
            "spearman": glue_metrics.spearman(targets, scores),
            "mse": float(np.mean((targets - scores) ** 2))}


def best_threshold(targets, probabilities):
    """The threshold that maximises micro-F1 of `probabilities >= threshold`.

    Predicting the k most probable (example, label) pairs gives
    F1 = 2 TP_k / (k + positives); only cuts between distinct probabilities
    are candidates. The threshold returned is halfway between the last
    probability kept and the next one (1 when nothing is best kept).
    Returns `(threshold, micro_f1)`.
    """
    targets = np.asarray(targets, bool).ravel()
    probabilities = np.asarray(probabilities, np.float64).ravel()
    order = np.argsort(-probabilities, kind="stable")
    p, t = probabilities[order], targets[order]
    positives = t.sum()
    true_pos = np.cumsum(t)
    kept = np.arange(1, len(p) + 1)
    cut = np.append(p[1:] < p[:-1], True)  # k kept is a cut only where the value changes
    f1 = np.where(cut, _ratio(2 * true_pos, kept + positives), -1.0)
    best = int(np.argmax(f1))
    if positives == 0 or f1[best] <= 0:
        return 1.0, 0.0
    following = p[best + 1] if best + 1 < len(p) else 0.0
    return float((p[best] + following) / 2), float(f1[best])


def sigmoid(logits):
    return 1.0 / (1.0 + np.exp(-np.asarray(logits, np.float64)))


def softmax(logits):
    logits = np.asarray(logits, np.float64)
    shifted = np.exp(logits - np.max(logits, axis=-1, keepdims=True))
    return shifted / shifted.sum(-1, keepdims=True)


def prediction(guid, logits, names, threshold=None):
    """One row's prediction (JSON-able) from its logits `(num_labels,)`: `label` and
    `probabilities` (a list in the order of `names`); multi-label (a `threshold`): `labels`; regression (`names` None):
    `score`."""
    out = {"id": guid}
    if names is None:
        out["score"] = float(logits[0])
        return out
    probabilities = softmax(logits) if threshold is None else sigmoid(logits)
    if threshold is None:
        out["label"] = names[int(np.argmax(logits))]
    else:
        out["labels"] = [n for n, p in zip(names, probabilities) if p >= threshold]
    # A list in the labels' order, as `predict` and the server give it.
    out["probabilities"] = [float(p) for p in probabilities]
    return out


def write_confusion_png(confusion, path, title):
    """Draws a confusion matrix (`multi_class`'s or `multi_label`'s) into a PNG file."""
    import matplotlib

    matplotlib.use("Agg")  # no display: write files only
    from matplotlib import pyplot

    counts = np.asarray(confusion["counts"])
    names = confusion["labels"]
    columns = confusion.get("columns")
    columns = names if columns == "predicted label" else columns
    size = min(max(4.5, 2 + 0.45 * max(counts.shape)), 30)  # room for the title
    figure, axes = pyplot.subplots(figsize=(size + 1, size))
    image = axes.imshow(counts, cmap="Blues")
    figure.colorbar(image, ax=axes)
    axes.set_xticks(range(counts.shape[1]), [str(c) for c in columns], rotation=90)
    axes.set_yticks(range(counts.shape[0]), [str(n) for n in names])
    axes.set_xlabel("predicted label" if columns is names else "count")
    axes.set_ylabel("true label" if columns is names else "label")
    axes.set_title(title)
    if counts.size <= 900:  # numbers in the cells while they stay readable
        middle = counts.max() / 2 if counts.size else 0
        for (row, column), value in np.ndenumerate(counts):
            axes.text(column, row, str(value), ha="center", va="center", fontsize=8,
                      color="white" if value > middle else "black")
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    figure.savefig(path, dpi=100)
    pyplot.close(figure)
    return path
