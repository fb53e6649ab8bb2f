"""The model card of a fine-tuning run's model folders (`albert_tf.model_card`).

`write(run, folder, results)` writes `folder/README.md` from what the run knows:
its task's pipeline tag, language and data files (hashed once per run), the
checkpoint, the settings, the results and attempts (`--collapse_restarts`).
`add_repeats` adds a set's mean +- sd to each of its runs' cards.
"""

import os

from albert_tf import model_card
from albert_tf.training.run_folder import MODEL_DIR


def facts(run, results=None, step=None):
    """The card's facts of `run` (`finetuning.Run`), with its `results` (None: none
    yet) and the update `step` of the weights when they are not the run's last."""
    s, task = run.settings, run.task
    if getattr(run, "_card_data", None) is None:  # every file read: hashed once a run
        run._card_data = model_card.file_hashes(task.data_files(s.data_dir, task.task_options))
    published = s.init_checkpoint and not os.path.exists(s.init_checkpoint)
    base = (f"the checkpoint `{s.init_checkpoint}`" if s.init_checkpoint else
            f"random weights (`--model={s.model or 'albert_base'}`)")
    results = results or {}
    return {"name": os.path.basename(os.path.normpath(s.output_dir)) or task.name,
            "task": task.name, "pipeline_tag": task.pipeline_tag, "language": task.language,
            "base": base, "base_model": s.init_checkpoint if published else None,
            "data": run._card_data, "settings": run.saved_settings().to_dict(),
            "results": {split: results[split] for split in task.eval_splits
                        if isinstance(results.get(split), dict)},
            "step": step, "collapsed": results.get("collapsed"),
            "attempts": results.get("attempts")}


def write(run, folder, results=None, step=None):
    if run.setup.chief:
        model_card.write(folder, facts(run, results, step))


def add_repeats(folder, names, summary, label):
    """Adds a set's `summary` (metric -> statistics) to the card of each run's model
    folder (`folder/<name>/model`), `label` ("seed", "fold") naming the runs."""
    for name in names:
        model_card.update(os.path.join(folder, name, MODEL_DIR), repeats={
            "count": len(names), "label": label, "this": name.split("-", 1)[1],
            "metrics": {m: {k: e[k] for k in ("mean", "sd", "min", "max")}
                        for m, e in summary.items()}})
