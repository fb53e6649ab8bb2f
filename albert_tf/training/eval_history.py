"""Evaluation while training: at which steps, the history file, the best step, early stopping.

With `--eval_every=N` (or `epoch`) a fine-tuning run scores its dev split(s)
with the task's own `evaluate` at every N-th update (or at the end of each
epoch) and at the last one. Each evaluation is one line of
`<output_dir>/eval_history.jsonl`:

    {"step": 40, "epoch": 0.4362, "accuracy": 0.7108, "f1": 0.8146, "examples": 408}

the numbers of the task's results; for a task of several dev splits (MNLI)
each key is `SPLIT/METRIC` (`dev_matched/accuracy`). The file is rewritten
whole (atomically) for each new line, so a killed run leaves it complete up
to some evaluation; a resumed run drops the lines of the steps after its
checkpoint and scores them again when it gets there (a resumed run trains
exactly as an uninterrupted one), so no line is lost or written twice.

The best step and early stopping are functions of the history alone
(`Selection`), so they survive an interrupt as the history does.
"""

import dataclasses
import json
import math
import os

import keras
import numpy as np

from albert_tf.io_utils import atomic_file, json_objects, numbered_lines
from albert_tf.training.callbacks import update_step, write_scalars


def evaluation_steps(eval_every, train_steps, batch_size, train_examples):
    """The updates after which a run evaluates: every `eval_every`-th, or with
    "epoch" the update that completes each epoch (ceil(k x examples / batch));
    and the last. Empty when `eval_every` is None."""
    if eval_every is None:
        return ()
    if eval_every == "epoch":
        epochs = math.ceil(train_steps * batch_size / train_examples)
        steps = {math.ceil(k * train_examples / batch_size) for k in range(1, epochs + 1)}
    else:
        steps = set(range(eval_every, train_steps + 1, eval_every))
    return tuple(sorted(s for s in steps | {train_steps} if s <= train_steps))


def history_entry(step, epoch, results, splits):
    """One history line: `step`, `epoch` (unless None) and the numbers of each
    split's results (`results`: split -> the task's metrics), keyed `SPLIT/METRIC` when there are
    several splits; tables (per-class scores) and texts are left out."""
    entry = {"step": int(step)}
    if epoch is not None:  # None: the epochs are not known (pretraining records)
        entry["epoch"] = round(float(epoch), 4)
    for split in splits:
        for name, value in results[split].items():
            if isinstance(value, (bool, np.bool_)) or \
                    not isinstance(value, (int, float, np.integer, np.floating)):
                continue
            key = name if len(splits) == 1 else f"{split}/{name}"
            entry[key] = value.item() if isinstance(value, np.generic) else value
    return entry


def scalars(results, prefix=""):
    """The numbers of a task's results flattened to `name/sub` keys (per-class
    scores too; tables and texts left out): what TensorBoard shows of them."""
    found = {}
    for name, value in results.items():
        if isinstance(value, dict):
            found.update(scalars(value, f"{prefix}{name}/"))
        elif isinstance(value, (int, float, np.integer, np.floating)) and \
                not isinstance(value, (bool, np.bool_)):
            found[f"{prefix}{name}"] = float(value)
    return found


def write_evaluation(summary_dir, step, results):
    """Writes each split's results (`split -> metrics`) as TensorBoard scalars
    under `eval_<split>/` at `step`: the one place evaluations reach TensorBoard
    (evaluations while training and the run's final one)."""
    for split, metrics in results.items():
        write_scalars(summary_dir, step, scalars(metrics), f"eval_{split}")


def history_key(metric, splits):
    """The history key of a metric named as `--best_metric` takes it: a metric of
    the first dev split, or `SPLIT/METRIC`."""
    return metric if len(splits) == 1 or "/" in metric else f"{splits[0]}/{metric}"


def read_history(path):
    """The entries of a history file (none if it does not exist)."""
    if not os.path.isfile(path):
        return []
    return [entry for _, entry in json_objects(numbered_lines(path), path)]


def write_history(path, entries):
    """Writes the whole history, atomically: the old file or the new one, never half."""
    with atomic_file(path, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(json.dumps(entry) + "\n" for entry in entries)


@dataclasses.dataclass(frozen=True)
class Selection:
    """How evaluated steps are compared: by `key` (a history key), higher better
    when `greater`; early stopping after `patience` evaluations (None: never)
    without an improvement of at least `min_delta` (Keras' `EarlyStopping`:
    improving means better than the best so far by more than nothing and by at
    least `min_delta`)."""

    key: str
    greater: bool
    patience: int | None = None
    min_delta: float = 0.0

    def value(self, entry):
        if self.key not in entry:
            known = ", ".join(k for k in entry if k not in ("step", "epoch"))
            raise ValueError(f"best_metric {self.key!r} is not a result of this task's "
                             f"evaluation; it reports {known}")
        return float(entry[self.key])

    def _gain(self, value, reference):
        return value - reference if self.greater else reference - value

    def best(self, history):
        """The best entry (the earliest of equals), or None for an empty history."""
        best = None
        for entry in history:
            if best is None or self._gain(self.value(entry), self.value(best)) > 0:
                best = entry
        return best

    def stop(self, history):
        """`(entry, reference)`: the evaluation at which early stopping stops the run
        and the best entry it waited to beat; None while it goes on."""
        if self.patience is None:
            return None
        reference, waited = None, 0
        for entry in history:
            gain = None if reference is None else self._gain(self.value(entry),
                                                             self.value(reference))
            if gain is None or (gain > 0 and gain >= self.min_delta):
                reference, waited = entry, 0
                continue
            waited += 1
            if waited >= self.patience:
                return entry, reference
        return None

    def stop_reason(self, history):
        """The early stop as results record it (a dict with a sentence), or None."""
        stopped = self.stop(history)
        if stopped is None:
            return None
        entry, reference = stopped
        return {"step": entry["step"], "best_step": reference["step"], "reason": (
            f"early stopping at step {entry['step']}: {self.key} has not improved by at "
            f"least {self.min_delta:g} in {self.patience} evaluation(s) since step "
            f"{reference['step']} ({self.value(reference):.4f})")}


class Evaluator(keras.callbacks.Callback):
    """Evaluates at `steps`, writes the history, saves the best step, stops early.

    evaluate: function of no arguments -> split -> the task's metrics of the model now.
    splits: the evaluated splits (the history's keys); epoch_of: step -> epochs done
        (or None, not known).
    save_best: function of the history entry whose weights (the model's now) are the
        best so far, or None (no --keep_best).
    summary_dir: TensorBoard's folder, or None; report: a function `(step, results)`
        that gets each evaluation too (a tracker's), or None.
    watch: a function of the step, called after each evaluation (and for the
        restored step's, on resuming): `collapse.CollapseWatch.after_evaluation`.
    chief: whether this process writes files (the history, the best model, summaries);
        every worker of a multi-worker run evaluates (prediction is collective).
    check_metric: whether a new run first evaluates once, unrecorded, to find out
        whether the task reports `selection.key` (a --best_metric of the user's)
        before any training, rather than at the first evaluation.
    shown: the history keys the progress line shows of the latest evaluation
        (default: `selection.key`).

    The history line of a step is written after its checkpoint, so a resumed run
    (`resume`) finds either both or a checkpoint whose line it writes itself.
    """

    def __init__(self, evaluate, steps, splits, epoch_of, selection, history_path,
                 save_best=None, summary_dir=None, chief=True, check_metric=False, report=None,
                 watch=None, shown=None):
        super().__init__()
        self.evaluate, self.steps, self.splits = evaluate, frozenset(steps), tuple(splits)
        self.epoch_of, self.selection, self.path = epoch_of, selection, history_path
        self.save_best, self.summary_dir, self.chief = save_best, summary_dir, chief
        self.check_metric = check_metric
        self.report, self.watch = report, watch
        self.shown = tuple(shown or (selection.key,))
        self.history = []
        self.latest = (None, None)  # (step, results) of the newest evaluation made here
        self.stopped = None  # the early stop, once decided (`Selection.stop_reason`)
        self.saver = self.guard = self.progress = None

    def attach(self, saver, guard, progress):
        """The run's checkpoint saver, divergence guard and progress logger."""
        self.saver, self.guard, self.progress = saver, guard, progress

    def resume(self, step):
        """Takes up the history at `step` (the restored checkpoint's update): drops the
        lines of later steps, scores `step` if its line is missing. Returns the early
        stop when the history already holds one (the run is over), else None."""
        if step == 0 and self.check_metric:
            self.selection.value(history_entry(0, 0.0, self.evaluate(), self.splits))
        written = read_history(self.path)
        history = [e for e in written if e["step"] <= step]
        if self.chief and len(history) != len(written):
            write_history(self.path, history)
        self.history = history
        if step in self.steps and not any(e["step"] == step for e in history):
            self._record(step)
        if step in self.steps and self.watch is not None:
            self.watch(step)  # (a run killed after its line and before its judgement)
        self.stopped = self._early_stop()
        self._show()
        return self.stopped

    def on_train_batch_end(self, batch, logs=None):
        step = update_step(self.model)
        if step not in self.steps or (self.guard and self.guard.diverged is not None):
            return
        if self.saver is not None:
            self.saver.save()  # the line of a step is never ahead of its checkpoint
        self._record(step)
        self._show()
        if self.watch is not None:
            self.watch(step)
        self.stopped = self._early_stop()
        if self.stopped is not None:
            self.model.stop_training = True

    def _early_stop(self):
        """The early stop of the history, or None; none at the planned last
        evaluation: the run ends there anyway, nothing was stopped early."""
        stopped = self.selection.stop_reason(self.history)
        if stopped is not None and self.steps and stopped["step"] >= max(self.steps):
            return None
        return stopped

    def _record(self, step):
        results = self.evaluate()
        self.latest = (step, results)
        entry = history_entry(step, self.epoch_of(step), results, self.splits)
        history = self.history + [entry]
        self.selection.value(entry)  # a --best_metric the task does not report: say so now
        if self.save_best is not None and self.selection.best(history) is entry:
            self.save_best(entry)
        if self.chief:
            write_history(self.path, history)
            if self.summary_dir:
                write_evaluation(self.summary_dir, step, results)
            if self.report is not None:
                self.report(step, results)
        self.history = history

    def _show(self):
        if self.progress is not None and self.history:
            latest = self.history[-1]
            self.progress.last_eval = {
                key if len(self.splits) > 1 else f"{self.splits[0]}_{key}": latest[key]
                for key in self.shown if key in latest}
