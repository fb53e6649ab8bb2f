"""A fine-tuning run's evaluations around training: the `Evaluator` of
--eval_every, the best step written to `best/` and loaded back (--keep_best),
and the final evaluation's scalars (TensorBoard, MLflow: the run's `report`).

Functions of a `finetuning.Run` (its task, settings, model and setup); the
history, the best step and early stopping themselves are `eval_history`'s.
"""

import os

from albert_tf import checkpoints
from albert_tf.checkpoints.weights import CheckpointError
from albert_tf.training import eval_history, run_card
from albert_tf.training.collapse import first_check_step
from albert_tf.training.callbacks import update_step
from albert_tf.training.run_folder import BEST_DIR, HISTORY_FILE
from albert_tf.training.run_model import save_finetuned


def selection(run):
    """The `eval_history.Selection` of --best_metric (default: the task's primary
    metric, in the direction the task declares) and early stopping."""
    s, task = run.settings, run.task
    metric = s.best_metric or task.primary_metric_for(task.task_options)
    key = eval_history.history_key(metric, task.eval_splits)
    return eval_history.Selection(key, task.greater_is_better(key),
                                s.early_stopping_patience, s.early_stopping_min_delta)


def evaluator(run, train_examples):
    """The `eval_history.Evaluator` of --eval_every that scores `run.evaluate`
    while training on `train_examples`, or None."""
    s, task = run.settings, run.task
    steps = eval_history.evaluation_steps(s.eval_every, s.train_steps, s.batch_size,
                                        train_examples)
    if not steps:
        return None
    chosen = selection(run)
    primary = eval_history.history_key(task.primary_metric_for(task.task_options),
                                     task.eval_splits)
    run.watch.check_step = first_check_step(steps, s.warmup_steps)
    return eval_history.Evaluator(
        run.evaluate, steps, task.eval_splits,
        lambda step: step * s.batch_size / train_examples, chosen,
        os.path.join(s.output_dir, HISTORY_FILE),
        save_best=(lambda entry: save_best(run, entry)) if s.keep_best else None,
        chief=run.setup.chief, check_metric=chosen.key != primary,
        report=run.report.evaluation, watch=run.watch.after_evaluation)


def write_final(run, results):
    """The final evaluation's scalars (`run.report`), at the trained step, unless
    an evaluation while training already wrote that step (the same model)."""
    step = update_step(run.trainee)
    history = eval_history.read_history(os.path.join(run.output_dir, HISTORY_FILE))
    if run.setup.chief and not any(e["step"] == step for e in history):
        run.report.evaluation(step, results)


def save_best(run, entry):
    """Writes the model as it is now (the best step so far, history `entry`) to `best/`."""
    if run.setup.chief:
        folder = os.path.join(run.output_dir, BEST_DIR)
        save_finetuned(run.model, run.task, run.saved_settings(), folder, run.tokenizer,
                       extra={"step": entry["step"]})
        run_card.write(run, folder, {split: {k: v for k, v in entry.items()
                                             if k not in ("step", "epoch")}
                                     for split in run.task.eval_splits[:1]}, entry["step"])


def restore_best(run):
    """Loads the weights of the best evaluated step (`best/`) into the run's model;
    returns `{"metric", "step", "epoch", "value"}`."""
    chosen = selection(run)
    history = eval_history.read_history(os.path.join(run.output_dir, HISTORY_FILE))
    best = chosen.best(history)
    folder = os.path.join(run.output_dir, BEST_DIR)
    saved = (checkpoints.native.read_metadata(folder).get("step")
             if checkpoints.native.is_native_dir(folder) else None)
    if best is None or saved != best["step"]:
        raise CheckpointError(f"{folder} holds step {saved}, but the best step of "
                              f"{HISTORY_FILE} is {best and best['step']}; the weights "
                              "of that step are gone (a folder copied in part?)")
    checkpoints.load_task_weights(run.model, checkpoints.read_checkpoint(folder))
    run.model_changed()
    return {"metric": chosen.key, "step": best["step"], "epoch": best["epoch"],
            "value": chosen.value(best)}
