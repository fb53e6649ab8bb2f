"""A fine-tuning run's results: the lines printed, the results file written,
and a complete run recognised when its command is run again."""

import json
import os

import numpy as np

from albert_tf.io_utils import atomic_file, read_json
from albert_tf.training.run_folder import RESULTS_FILE


def _metric_line(name, values):
    shown = ", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                      for k, v in values.items() if not isinstance(v, (dict, list)))
    return f"{name}: {shown}"


def precision_note(policy):
    """Why a run's scores (computed in its training precision, `policy`) may differ
    from `predict`'s on the same model (float32), or None when they do not."""
    if policy == "float32":
        return None
    return (f"evaluated in {policy}, the precision the run trained in; predict, serve and "
            "exports compute in float32 (export --precision to choose), so their scores "
            "on the same data may differ in the last digits")


def print_results(results):
    """The metrics of each evaluated split, one line each (the numbers; tables
    such as per-class scores and confusion matrices are in the results file),
    and a reference model's (`Run.reference_results`, e.g. a teacher's)."""
    for split, values in results.items():
        if split in ("train", "predictions", "best") or not isinstance(values, dict):
            continue
        if values and all(isinstance(v, dict) for v in values.values()):  # a reference's splits
            for inner, metrics in values.items():
                print(_metric_line(f"{split} {inner}", metrics))
        else:
            print(_metric_line(split, values))
            for metric, note in (values.get("metric_notes") or {}).items():
                print(f"  {metric}: {note}")
    if "best" in results:
        best = results["best"]
        print(f"best: step {best['step']} (epoch {best['epoch']}), {best['metric']}="
              f"{best['value']:.4f}; its weights are the model's (--keep_best)")
    if results.get("precision_note"):
        print(results["precision_note"])
    if "train" in results:
        train = results["train"]
        if "early_stopped" in train:
            print(train["early_stopped"]["reason"])
        print(f"train: {train['step']} steps, {train.get('examples', 0)} examples "
              f"({train.get('epochs', 0)} epochs of {train.get('train_set_examples', 0)}), "
              f"{train.get('train_examples_per_second', 0):.1f} examples/s")


def report_complete(output_dir):
    """Whether the run in `output_dir` is complete (its results are written);
    then says so and prints them."""
    path = os.path.join(output_dir, RESULTS_FILE)
    if not os.path.isfile(path):
        return False
    print(f"{output_dir}: this run is complete; its results ({path}):")
    print_results(read_json(path))
    print("(--do_eval, --do_predict or --export run those steps again; a new --output_dir "
          "starts a new run)")
    return True


def write_results(path, values):
    """Writes `values` (numbers, NumPy scalars among them) as a JSON file, atomically."""
    with atomic_file(path) as f:
        json.dump(values, f, indent=2, sort_keys=True, default=_json_default)


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")
