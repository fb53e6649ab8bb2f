r"""Searches fine-tuning hyperparameters with Optuna.

    python -m albert_tf.search --task=mrpc --data_dir=glue/MRPC \
        --init_checkpoint=albert_base_v2 --output_dir=runs/search \
        --space='learning_rate=1e-5:5e-5:log | batch_size=16,32 | train_steps=300,600' \
        --trials=12 [--seeds_per_trial=3] [--sampler=tpe|random|grid]

Every fine-tuning flag (and the task's options) is the same as `finetune`'s and
holds for every trial; `--space` names the settings searched. Each trial runs
its seeds as `python -m albert_tf.finetune` processes in OUTPUT_DIR/trial-N/;
with `--eval_every`, the pruner reads their eval_history.jsonl and stops a
hopeless trial early. The study is stored in OUTPUT_DIR/study.db: the same
command continues a stopped search without running finished trials again.
Writes trials.md / .csv / .json (sorted by the dev metric, mean +- sd over a
trial's seeds) and metric_vs_params.png, and names the best trial's folder.
`auto`'s measurements of how to run the training step (precision aside, which
each process times in half a second) are taken by the first run that needs
them and kept in OUTPUT_DIR/execution_probes.json for the others, so every
trial runs its step alike.
"""

import json
import math
import os
import signal
import sys

from albert_tf import extras, tasks
from albert_tf.commands import cli
from albert_tf.commands.finetune import RUN_SETTINGS, TASK_OPTIONS
from albert_tf.commands.program import Flags, Program
from albert_tf.settings import merged
from albert_tf.training import settings as settings_lib
from albert_tf.training import tracking
from albert_tf.training.settings import FinetuneSettings
from albert_tf.tuning.settings import PROBES_FILE, SETTINGS_FILE, SearchSettings

# What the trials' runs do not take from the search's flags.
NOT_SHARED = ("output_dir", "task", "seed")


def check(task, base, parameters, output_dir):
    """Resolves the settings at every bound of every parameter (before any work):
    a value a run would refuse is one line naming it. Returns the settings of the
    search's own flags."""
    resolved = settings_lib.resolve(task, {**base, "output_dir": output_dir})
    for parameter in parameters:
        for value in parameter.extremes():
            try:
                settings_lib.resolve(task, {**base, parameter.name: value,
                                            "output_dir": output_dir})
            except ValueError as e:
                raise ValueError(f"--space: {parameter.name}={value}: {e}") from None
    return resolved


# The settings that say what a run reads (its files, its model): a space that
# varies one is checked at each of its bounds.
INPUT_SETTINGS = ("init_checkpoint", "model", "vocab_file", "max_seq_length", "do_eval",
                  "do_predict")


def check_inputs(task, base, parameters, output_dir):
    """What the trials read (checkpoint, vocabulary, model, data files) checked as
    each run checks it, before the study starts: a trial that could not start is
    one line naming the flag (or the `--space` value) at once, nothing written."""
    from albert_tf.training.run_checks import check_inputs as check_run_inputs

    changes = [{}] + [{p.name: value} for p in parameters if p.name in INPUT_SETTINGS
                      for value in p.extremes()]
    for change in changes:
        settings = settings_lib.resolve(task, {**base, **change, "output_dir": output_dir})
        try:
            check_run_inputs(task, settings)
        except (OSError, ValueError) as e:
            if not change:
                raise
            (name, value), = change.items()
            raise ValueError(f"--space: {name}={value}: {e}") from None


def trial_config(task, base, output_dir):
    """`(params, seed) -> the --config dict of one run`: the shared settings, the
    trial's and the seed, checked by resolving them as the run will."""
    def make_config(params, seed):
        config = {**base, **params, "seed": seed}
        resolved = settings_lib.resolve(task, {**config, "output_dir": output_dir})
        if "train_steps" in config and "warmup_steps" not in config:
            # The run reads a --config before its recipe's warmup share is kept: say it.
            config["warmup_steps"] = resolved.warmup_steps
        return config
    return make_config


def check_saved(search, base, task_name, output_dir):
    """The search in --output_dir, if any, was started with these settings
    (`--trials` may change); saves them."""
    from albert_tf.io_utils import atomic_file, read_json

    path = os.path.join(output_dir, SETTINGS_FILE)
    now = {"search": {k: v for k, v in search.to_dict().items() if k != "trials"},
           "task": task_name, "settings": base}
    if os.path.isfile(path):
        saved = read_json(path)
        flat = lambda values: {**values["search"], **values["settings"],  # noqa: E731
                               "task": values["task"]}
        old, new = flat(saved), flat(now)
        differ = [f"{k}: saved {old.get(k)!r}, given {new.get(k)!r}"
                  for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
        if differ:
            raise ValueError(f"--output_dir={output_dir} holds a search with other "
                             f"settings ({'; '.join(differ)}); give the same flags to "
                             "continue it, or use a new --output_dir")
        return
    os.makedirs(output_dir, exist_ok=True)
    with atomic_file(path, encoding="utf-8") as f:
        json.dump(now, f, indent=2, sort_keys=True)


def run(search, given):
    """The command: prints the trials' table and the best trial; returns
    `{"trials": [a row per trial], "best": the best row or None, "files": [what it
    wrote]}`. `given`: the fine-tuning settings given (`program.Given`), for every
    trial but its own folder, task and seeds."""
    from albert_tf.tuning import report, space, study, watch

    extras.require("search", "albert-tf search")
    values = merged(given.config, given.flags)
    output_dir = values["output_dir"]
    parameters = space.parse_space(search.space, FinetuneSettings)
    base = {k: v for k, v in values.items() if k not in NOT_SHARED}
    resolved = check(tasks.declared(values["task"]), base, parameters, output_dir)
    tracking.require(resolved)
    cli.load_tensorflow()  # the task's module imports it: without its start-up noise
    task = tasks.get(values["task"])
    check_inputs(task, base, parameters, output_dir)
    metric = search.metric or task.primary_metric_for(task.bind(resolved).task_options)
    maximize = task.greater_is_better(metric)
    trials = search.trials
    if search.sampler == "grid":
        trials = min(trials, math.prod(len(v) for v in space.grid(parameters).values()))
    check_saved(search, base, task.name, output_dir)
    seed = values.get("seed", FinetuneSettings.__dataclass_fields__["seed"].default)
    seeds = tuple(range(seed, seed + search.seeds_per_trial))
    found = study.open_study(output_dir, "maximize" if maximize else "minimize",
                             search.sampler, parameters, seed, search.prune)
    # The search's MLflow run (--report_to=mlflow): a trial is its child, a trial's seeds
    # the trial's children.
    parent = tracking.open_parent(resolved, output_dir, "search")
    if parent is not None and parent.fresh:
        parent.params({"search": search.to_dict()})
    try:
        with watch.stop_on_sigterm():
            records = study.run_search(
            output_dir, found, parameters, trials,
                study.finetune_trials(task.name, trial_config(task, base, output_dir), seeds,
                                      metric, task.eval_splits[0],
                                      probes_file=os.path.join(output_dir, PROBES_FILE),
                                      tracker=parent))
        table = report.rows(records, parameters, metric, maximize, output_dir)
        paths = report.write_table(table, parameters, metric, output_dir)
        paths.append(report.write_plot(table, parameters, metric, output_dir))
    except watch.Terminated as e:
        tracking.ended(parent, e)
        print(f"error: stopped by SIGTERM; the running trial's runs saved their step. Run "
              f"the same command again to continue: finished trials are not run again "
              f"({output_dir})", file=sys.stderr, flush=True)
        sys.exit(128 + signal.SIGTERM)
    except BaseException as e:
        tracking.ended(parent, e)
        raise
    with open(paths[0], encoding="utf-8") as f:
        print(f.read(), end="")
    best = table[0] if table and table[0][metric] is not None else None
    if best is not None:
        sd = "" if best[f"{metric}_sd"] is None else f" +- {best[f'{metric}_sd']:.4f}"
        print(f"best: trial {best['trial']} ({metric} {best[metric]:.4f}{sd}): {best['folder']}")
    print(f"wrote {', '.join(paths)}")
    if parent is not None:
        if best is not None:
            parent.metrics({f"best/{metric}": best[metric]})
            parent.tags({"best_trial": best["trial"]})
        for path in paths:
            parent.artifacts(path)
        tracking.ended(parent)
    return {"trials": table, "best": best, "files": paths}


PROGRAM = Program("search", run, Flags(SearchSettings), RUN_SETTINGS, TASK_OPTIONS)
