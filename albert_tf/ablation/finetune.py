"""Fine-tuning every variant on the grid's downstream tasks.

Each task is fine-tuned with the library's run (`training.finetuning.run`)
from the variant's pretrained model, with the same settings for every
variant; a finished task run (its `eval_results.json`) is read back, an
interrupted one resumes from its checkpoint. The tasks come from the caller
(a function from a task name to its `tasks.base.Task`): the library knows no
task registry.
"""

import json
import os

from albert_tf.training.run_folder import RESULTS_FILE
from albert_tf.training.settings import resolve

FINETUNE_DIR = "finetune"


def task_data_dir(parent, name):
    """The folder under `parent` named like task `name`, in any case (glue/RTE for rte)."""
    if not os.path.isdir(parent):
        raise FileNotFoundError(f"--finetune_data_dir: no such folder {parent}")
    matches = sorted(d for d in os.listdir(parent)
                     if d.lower() == name.lower() and os.path.isdir(os.path.join(parent, d)))
    if not matches:
        raise FileNotFoundError(f"--finetune_data_dir: {parent} has no folder for task "
                                f"{name!r} (expected {parent}/{name.upper()} or similar)")
    return os.path.join(parent, matches[0])


def finetune_settings(task, settings, model_dir, output_dir, seed):
    """The `FinetuneSettings` of one task run (the task's recipe, then the grid's)."""
    return resolve(task, {
        "init_checkpoint": model_dir, "output_dir": output_dir,
        "data_dir": task_data_dir(settings.finetune_data_dir, task.name),
        "train_steps": settings.finetune_steps, "batch_size": settings.finetune_batch_size,
        "learning_rate": settings.finetune_learning_rate,
        "max_seq_length": settings.finetune_max_seq_length, "precision": settings.precision,
        "xla": "off", "layer_execution": "loop", "strategy": "one_device", "seed": seed,
        "checkpoint_every": settings.finetune_steps,
        "log_every": max(1, settings.finetune_steps // 10)})


def check_tasks(settings, get_task):
    """Reads every split the fine-tuning runs will read, before any work; raises
    ValueError naming the task and what is wrong."""
    for name in settings.finetune_tasks:
        run = finetune_settings(get_task(name), settings, "unused", "unused", settings.seed)
        task = get_task(name).bind(run)
        for split in (task.train_split, *task.eval_splits):
            try:
                examples = task.read(run.data_dir, split, task.task_options)
            except (OSError, ValueError) as e:
                raise ValueError(f"--finetune={name}: {e}") from None
            if not examples:
                raise ValueError(f"--finetune={name}: the {split} split in {run.data_dir} has "
                                 "no examples")


def metric_columns(task, results):
    """`{column: value}` of a task run's numeric metrics: `rte_accuracy`, or
    `mnli_dev_matched_accuracy` for a task with several eval splits."""
    columns = {}
    for split in task.eval_splits:
        prefix = task.name if len(task.eval_splits) == 1 else f"{task.name}_{split}"
        for metric, value in results.get(split, {}).items():
            if metric != "examples" and isinstance(value, (int, float)):
                columns[f"{prefix}_{metric}"] = float(value)
    return columns


def finetune_variant(settings, variant, model_dir, folder, get_task, verbose=True):
    """Fine-tunes the variant's model on every task; returns `{column: value}`."""
    from albert_tf.training import finetuning

    columns = {}
    for name in settings.finetune_tasks:
        task = get_task(name)
        output_dir = os.path.join(folder, FINETUNE_DIR, task.name)
        done = os.path.join(output_dir, RESULTS_FILE)
        if os.path.isfile(done):
            with open(done, encoding="utf-8") as f:
                results = json.load(f)
        else:
            run = finetune_settings(task, settings, model_dir, output_dir, variant.seed)
            results = finetuning.run(task, run, verbose)
        columns.update(metric_columns(task, results))
    return columns
