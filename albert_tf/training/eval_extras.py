"""What an evaluation reports beside the task's metrics: the evaluation loss and
the user's own metrics.

- `split_loss`: the model's own training loss (`compute_loss`) on a split's
  outputs and labels, the mean over its examples: what Hugging Face's Trainer
  reports as `eval_loss`, here `loss` beside the task's metrics.
- `--metrics_fn=module:function` (in Python, `metrics_fn=` a function): called
  as `function(outputs, labels)` with the model's outputs on the split
  (`{name: array with one row per example}`, e.g. `logits`) and its labels
  (`{name: array}`, e.g. `label`), in example order; it returns
  `{metric name: number}`, added to the split's metrics, so they are in the
  history, TensorBoard, `eval_results.json`, `--best_metric` and a search's
  `--metric` like the task's own.
"""

import importlib
import math
import sys

import numpy as np

# Rows per call of `compute_loss`: the outputs of a split are on the host already.
LOSS_CHUNK = 512


def metrics_fn_name(fn):
    """The "module:function" that names `fn` (a function of a module, or of the
    running script or notebook); a `str` is returned as it is."""
    if isinstance(fn, str) or fn is None:
        return fn
    name = f"{getattr(fn, '__module__', '')}:{getattr(fn, '__qualname__', '')}"
    if "<" in name or not callable(fn) or load_metrics_fn(name) is not fn:
        raise ValueError(f"metrics_fn: {fn!r} is not a function its module can name; give a "
                         "function defined at a module's (or notebook's) top level")
    return name


def load_metrics_fn(name):
    """The function "module:function" names; ValueError naming --metrics_fn."""
    module_name, _, attribute = name.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"--metrics_fn={name}: expected module:function")
    try:
        target = sys.modules.get(module_name) or importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"--metrics_fn={name}: {e}") from None
    if not callable(target):
        raise ValueError(f"--metrics_fn={name}: not a function")
    return target


def user_metrics(fn, name, outputs, labels, taken):
    """`fn(outputs, labels)`, checked: `{str: number}` whose names are not in
    `taken` (the task's metrics)."""
    got = fn(dict(outputs), dict(labels))
    if not isinstance(got, dict):
        raise ValueError(f"--metrics_fn={name} returned {type(got).__name__}, expected a dict "
                         "of metric name -> number")
    clash = sorted(set(got) & set(taken))
    if clash:
        raise ValueError(f"--metrics_fn={name}: {', '.join(clash)} already reported by the "
                         "task; name the metric otherwise")
    values = {}
    for key, value in got.items():
        if not isinstance(key, str) or isinstance(value, bool) or \
                not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValueError(f"--metrics_fn={name}: {key!r}: {value!r} is not a number")
        values[key] = float(value)
    return values


def split_loss(model, labels, outputs):
    """The mean of `model.compute_loss` over a split's examples (chunks weighted
    by their size), or None for a model without its own loss or one that gives
    no finite number (outputs padded with -inf where the loss needs more)."""
    import tensorflow as tf

    compute = getattr(model, "compute_loss", None)
    rows = len(next(iter(outputs.values()))) if outputs else 0
    if compute is None or not labels or not rows:
        return None
    total = 0.0
    for start in range(0, rows, LOSS_CHUNK):
        end = min(rows, start + LOSS_CHUNK)
        y = {k: v[start:end] for k, v in labels.items()}
        y_pred = {k: v[start:end] for k, v in outputs.items()}
        try:
            value = float(np.asarray(compute(y=y, y_pred=y_pred, training=False)))
        except (TypeError, KeyError, ValueError, tf.errors.OpError):
            return None  # (a loss that needs the inputs too: none reported)
        total += value * (end - start)
    loss = total / rows
    return loss if math.isfinite(loss) else None
