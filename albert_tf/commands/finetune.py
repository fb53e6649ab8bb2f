r"""Fine-tunes ALBERT on a task and reports the task's official metric.

    python -m albert_tf.finetune --task=rte --data_dir=glue/RTE \
        --init_checkpoint=albert_base_v2 --output_dir=runs/rte

Settings come from the task's recipe (configs/finetune_recipes.json), then
`--config` (a JSON file), then the flags you give. A killed run resumes with
`--output_dir` alone. `--seeds=1,2,3` runs the same settings once per seed
(OUTPUT_DIR/seed-N/, seeds_summary.md); `--kfold=K` once per fold of
--train_file (OUTPUT_DIR/fold-N/, kfold_summary.md, oof_predictions.jsonl).
`--demo` runs the whole pipeline offline on data the project generates, in a
few minutes on a laptop CPU.
"""

import dataclasses
import os

from albert_tf import tasks  # the registry (no TensorFlow): each task's options become flags
from albert_tf.commands import cli
from albert_tf.commands.program import Flags, Program
from albert_tf.io_utils import read_json
from albert_tf.settings import Settings, merged, setting
from albert_tf.training import seeds_folds, tracking
from albert_tf.training import settings as settings_lib
from albert_tf.training.run_folder import RESULTS_FILE
from albert_tf.training.settings import FinetuneSettings

# The settings of a fine-tuning run, resolved against the task's recipe (also `search`'s).
RUN_SETTINGS = Flags(FinetuneSettings, default_from="the task's recipe",
                     unset=FinetuneSettings.fields_with("recipe"))
# The options of every task, under the run's `task_options` (checked by its task).
TASK_OPTIONS = Flags(tasks.option_classes, under="task_options", default_from="the task's own")


@dataclasses.dataclass(frozen=True, kw_only=True)
class DemoSettings(Settings):
    """`--demo` (a flag of the command, not a setting of the run)."""

    demo: bool = setting(False, "Run offline on generated data with a small model.")


def load_task(name):
    """The registered task `name`. Its module imports TensorFlow, started here with
    its start-up noise filtered, once the settings were checked."""
    cli.load_tensorflow()
    return tasks.get(name)


def resolve_settings(given, base=None, overrides=None):
    """Settings of this invocation: a new run, or the resumption of a saved one.

    `given`: the fine-tuning settings given (`program.Given`: the flags set,
    task options under `task_options`, and `--config`'s, between the recipe
    and the flags); `base`: settings between `--config` and the flags (those of
    `--demo`); `overrides`: settings set over the flags (a seed's or fold's
    folder, seed, files).
    """
    given = given.over(overrides or {})
    flags = given.flags
    output_dir = flags["output_dir"]
    # A run that stopped before its first checkpoint holds nothing: start it as now given.
    saved = (settings_lib.load_saved(FinetuneSettings, output_dir)
             if settings_lib.has_progress(output_dir) else None)
    if saved is not None:
        settings = settings_lib.resumed(saved, flags)
        tracking.require(settings)  # a missing extra: one line, before any work
        return load_task(saved.task), settings
    given.check_required()
    # Its recipe and options, its module not yet imported.
    task = tasks.declared({**given.config, **flags}["task"])
    values = dict(base or {})
    for pair in settings_lib.ALTERNATIVES:  # --demo's train_steps yields to --num_epochs
        for one, other in (pair, pair[::-1]):
            if one in flags:
                values.pop(other, None)
    settings = settings_lib.resolve(task, merged(values, flags), given.config, given.source)
    tracking.require(settings)
    return load_task(task.name), settings


def finished(settings, given):
    """Whether the run in `--output_dir` is complete and nothing new was asked of it
    (`given`: the settings given); then says so and prints its results."""
    from albert_tf.training import results

    if set(given.flags) & set(settings.fields_with("run_control")):
        return False
    return results.report_complete(settings.output_dir)


def run_once(task, settings, given, make_run=None):
    """Fine-tunes (unless the run is complete) and exports as asked; returns the results.

    make_run: the `finetuning.Run` (sub)class of the run (default: `Run`)."""
    from albert_tf.training import finetuning
    from albert_tf.training.devices import is_chief
    from albert_tf.training.results import print_results

    if finished(settings, given):
        return read_json(os.path.join(settings.output_dir, RESULTS_FILE))
    results = finetuning.run(task, settings, make_run=make_run or finetuning.Run)
    print_results(results)
    if settings.export and is_chief(settings.strategy):
        from albert_tf.tasks.finetuned import export_run

        print(f"export: {export_run(settings.output_dir)}")
    return results


def tracked(root, name, resolve):
    """`(parent, runs)`: a set's MLflow run in `root` (None without MLflow), and
    `resolve(extra)` (the settings of its runs, with `extra` over the flags) with
    each run made its child."""
    first = resolve({})
    parent = tracking.open_parent(next(iter(first.values()))[1], root, name)
    return parent, (resolve(parent.child_settings()) if parent else first)


def report_set(parent, run_set):
    """Runs `run_set()` (`(summary, paths)`), its MLflow run `parent` ended as it
    ends, with the summary when it is done."""
    try:
        summary, paths = run_set()
    except BaseException as e:
        tracking.ended(parent, e)
        raise
    if parent is not None:
        parent.summary(summary, paths)
        tracking.ended(parent)
    return summary, paths


def run_seeds(given, repeat):
    """`--seeds`: every seed's settings resolved (and checked) first, then run one by one."""
    if "seed" in given.flags:
        raise ValueError("give --seed (one run) or --seeds (one run per seed), not both")
    root = given.flags["output_dir"]
    parent, runs = tracked(root, f"seeds {','.join(map(str, repeat.seed_list))}", lambda extra: {
        seed: resolve_settings(given, overrides={
            "seed": seed, "output_dir": os.path.join(root, seeds_folds.seed_folder(seed)),
            **extra}) for seed in repeat.seed_list})
    task = next(iter(runs.values()))[0]
    summary, paths = report_set(parent, lambda: seeds_folds.run_seeds(
        root, repeat.seed_list, lambda seed, path: run_once(*runs[seed], given),
        task.eval_splits))
    print(seeds_folds.markdown(summary, "seed"), end="")
    print(f"wrote {', '.join(paths)}")
    return summary


def run_kfold(given, repeat):
    """`--kfold`: the folds written from --train_file, one run per fold, the summary and
    the out-of-fold predictions."""
    root = given.flags["output_dir"]
    task, settings = resolve_settings(given)
    task = task.bind(settings)
    folds = task.kfold_files(task.task_options, settings.data_dir, repeat.kfold,
                             os.path.join(root, seeds_folds.KFOLD_DATA))
    parent, runs = tracked(root, f"kfold {len(folds)}", lambda extra: {
        fold.index: resolve_settings(given, overrides={
            "output_dir": os.path.join(root, seeds_folds.fold_folder(fold.index)),
            "do_eval": True, "do_predict": True, "data_dir": None,
            "task_options": {"train_file": fold.train, "eval_file": fold.dev,
                             "predict_file": fold.dev}, **extra}) for fold in folds})
    summary, paths = report_set(parent, lambda: seeds_folds.run_folds(
        root, folds, lambda index, path: run_once(*runs[index], given), task.eval_splits,
        task.test_splits[0]))
    print(seeds_folds.markdown(summary, "fold"), end="")
    print(f"wrote {', '.join(paths)}")
    return summary


def run(given, repeat, demo):
    """The command: prints what it prints; returns the results (a run's
    `eval_results.json`, or the summary of `--seeds`/`--kfold`)."""
    from albert_tf import demo as demo_lib

    if repeat.seeds:
        return run_seeds(given, repeat)
    if repeat.kfold:
        return run_kfold(given, repeat)
    base = None
    if demo.demo:
        given = given.over({"task": given.flags.get("task") or "squad"})
        base = demo_lib.prepare(given.flags["task"], given.flags["output_dir"])
    task, settings = resolve_settings(given, base)
    make_run = None
    if demo.demo:
        from albert_tf.demo.run import DemoRun, describe

        print(describe(task.name, settings), flush=True)
        make_run = DemoRun
    results = run_once(task, settings, given, make_run)
    if demo.demo:
        from albert_tf.training.run_folder import MODEL_DIR
        from albert_tf.tasks.finetuned import build_serving_module

        module, _ = build_serving_module(os.path.join(settings.output_dir, MODEL_DIR))
        demo_lib.finish(task, module)
    return results


PROGRAM = Program("finetune", run, RUN_SETTINGS, Flags(seeds_folds.RepeatSettings),
                  Flags(DemoSettings), TASK_OPTIONS, resumes="output_dir")
