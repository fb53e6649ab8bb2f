"""Every evaluation reports its trivial baseline beside the metric."""

import types

import numpy as np
import pytest

from albert_tf import tasks
from albert_tf.tasks.base import Scoring, SplitData
from albert_tf.tasks.multiple_choice.task import choice_metrics
from albert_tf.tasks.token_classification.task import tag_baseline


def _scoring(labels, logits):
    """What a run hands `evaluate`: a split's labels and outputs."""
    features = types.SimpleNamespace(arrays={"label": np.asarray(labels)})
    split = SplitData("dev", None, features, {"logits": np.asarray(logits)})
    return Scoring(split, {}, {}, "unused")


@pytest.mark.parametrize("name", ["mrpc", "rte", "cola", "sst2"])
def test_glue_classification_reports_the_majority_class(name):
    task = tasks.get(name)
    labels = np.array([1, 1, 0, 1, 0, 1, 1], np.int32)
    logits = np.eye(2)[[0, 0, 0, 1, 1, 1, 0]]
    results = task.evaluate(_scoring(labels, logits))
    assert results["baseline_label"] == task.spec.labels[1]
    if "accuracy" in results:
        assert results["baseline_accuracy"] == pytest.approx(5 / 7)
    assert {f"baseline_{m}" for m in task.spec.metrics} <= set(results)


def test_stsb_reports_the_mean_predictor():
    labels = np.array([0.0, 1.0, 4.0, 5.0], np.float32)
    results = tasks.get("stsb").evaluate(_scoring(labels, [[1.0], [1.0], [3.0], [5.0]]))
    assert results["baseline_mse"] == pytest.approx(np.var(labels))
    assert results["mse"] == pytest.approx((1 + 0 + 1 + 0) / 4)


def test_clue_classification_reports_the_majority_class():
    labels = np.array([0, 0, 0, 1], np.int32)
    results = tasks.get("afqmc").evaluate(_scoring(labels, np.eye(2)[[1, 1, 0, 1]]))
    assert results["baseline_label"] == "0" and results["baseline_accuracy"] == 0.75
    assert results["accuracy"] == 0.5


def test_token_classification_reports_the_most_frequent_tag():
    gold = [["B-PER", "O", "O"], ["O", "B-LOC", "I-LOC", "O"]]
    base = tag_baseline(gold)
    assert base == {"baseline_tag": "O", "baseline_accuracy": pytest.approx(4 / 7),
                    "baseline_f1": 0.0}


def test_multiple_choice_reports_chance_and_the_majority_position():
    examples = [types.SimpleNamespace(label=label, choices=["x"] * n, group="")
                for label, n in ((2, 3), (2, 3), (0, 2), (1, 4))]
    results = choice_metrics(examples, np.array([0, 0, 0, 0]))
    assert results["majority_position"] == 2
    assert results["majority_position_accuracy"] == 0.5
    assert results["chance_accuracy"] == pytest.approx(np.mean([1 / 3, 1 / 3, 1 / 2, 1 / 4]))
