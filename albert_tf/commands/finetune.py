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

import os

from absl import flags

from albert_tf.commands import cli
from albert_tf.io_utils import read_json
from albert_tf.training import seeds_folds
from albert_tf.training import settings as settings_lib
from albert_tf.training.run_folder import RESULTS_FILE
from albert_tf.training.settings import FinetuneSettings
from albert_tf import tasks  # the registry (no TensorFlow): each task's options become flags

FLAGS = flags.FLAGS
cli.define_flags(FinetuneSettings, unset=FinetuneSettings.fields_with("recipe"),
                 unset_help=" Default: the task's recipe.")
cli.define_flags(seeds_folds.RepeatSettings)
if "spm_model" not in FLAGS:  # (pretrain's, where albert_tf.api imported both)
    flags.DEFINE_alias("spm_model", "vocab_file")
flags.DEFINE_string("config", None, "A JSON file of settings (between recipe and flags).")
flags.DEFINE_boolean("demo", False, "Run offline on generated data with a small model.")
OPTION_CLASSES = tasks.option_classes()
for _options in OPTION_CLASSES:
    cli.define_flags(_options, unset=_options.field_names(),
                     unset_help=" Default: the task's own.")


def load_task(name):
    """The registered task `name`. Its module imports TensorFlow, started here with
    its start-up noise filtered, once the settings were checked."""
    cli.load_tensorflow()
    return tasks.get(name)


# The command's flags that are not settings of a run.
CONTROL_FLAGS = ("config", "demo")
ALIASES = {"spm_model": "vocab_file"}


def flag_names():
    """Every flag of the command (the keyword arguments of `albert_tf.api.finetune`)."""
    names = [*cli.flag_names(FinetuneSettings), *cli.flag_names(seeds_folds.RepeatSettings),
             *CONTROL_FLAGS, *ALIASES]
    for options in OPTION_CLASSES:
        names.extend(cli.flag_names(options))
    return tuple(dict.fromkeys(names))


def split_flags(values, command="finetune"):
    """The command's flags as given (`{name: value}`, only those given) ->
    `(given, repeat, config, demo)`: the fine-tuning settings given (the task's
    options under `task_options`), the `RepeatSettings`, `--config`, `--demo`.
    An unknown flag or a bad repeat setting raises `ValueError` naming it."""
    cli.check_flag_names(values, flag_names(), command)
    values = cli.without_aliases(values, ALIASES)
    given = {k: v for k, v in values.items() if k in cli.flag_names(FinetuneSettings)}
    options = {k: v for k, v in values.items() if k not in given and k in
               {name for options in OPTION_CLASSES for name in cli.flag_names(options)}}
    if options:
        given["task_options"] = options
    cli.missing_required(given, ("output_dir",))
    repeat = seeds_folds.RepeatSettings.from_dict(
        {k: v for k, v in values.items() if k in cli.flag_names(seeds_folds.RepeatSettings)})
    return given, repeat, values.get("config"), bool(values.get("demo", False))


def resolve_settings(given, config=None, base=None, overrides=None):
    """Settings of this invocation: a new run, or the resumption of a saved one.

    `given`: the settings given explicitly (the flags set; task options under
    `task_options`); `config`: a JSON file of settings (between recipe and
    `given`); `base`: settings between the recipe and the flags (those of
    `--demo`); `overrides`: settings set over the flags (a seed's or fold's
    folder, seed, files).
    """
    given = dict(given)
    for name, value in (overrides or {}).items():
        if name == "task_options":
            given["task_options"] = {**given.get("task_options", {}), **value}
        else:
            given[name] = value
    output_dir = given["output_dir"]
    # A run that stopped before its first checkpoint holds nothing: start it as now given.
    saved = (settings_lib.load_saved(FinetuneSettings, output_dir)
             if settings_lib.has_progress(output_dir) else None)
    if saved is not None:
        conflicts = settings_lib.resume_conflicts(saved, given)
        if conflicts:
            raise ValueError(
                f"--output_dir={output_dir} holds a run with other settings ("
                + ", ".join(f"{k}: saved {a!r}, given {b!r}" for k, (a, b) in conflicts.items())
                + "); pass only --output_dir to resume it, or use a new --output_dir")
        resumable = saved.fields_with("resumable")
        return load_task(saved.task), saved.replace(
            **{k: v for k, v in given.items() if k in resumable})
    if not given.get("task"):
        raise ValueError(f"--task is required (known tasks: {', '.join(tasks.names())})")
    task = tasks.declared(given["task"])  # its recipe and options, its module not yet imported
    merged = dict(base or {})
    for pair in settings_lib.ALTERNATIVES:  # --demo's train_steps yields to --num_epochs
        for one, other in (pair, pair[::-1]):
            if one in given:
                merged.pop(other, None)
    options = {**merged.get("task_options", {}), **given.get("task_options", {})}
    merged.update(given)
    if options:
        merged["task_options"] = options
    settings = settings_lib.resolve(task, merged, config)
    return load_task(task.name), settings


def finished(settings, given):
    """Whether the run in `--output_dir` is complete and nothing new was asked of it
    (`given`: the settings given); then says so and prints its results."""
    from albert_tf.training import results

    if set(given) & set(settings.fields_with("run_control")):
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


def run_seeds(given, repeat, config):
    """`--seeds`: every seed's settings resolved (and checked) first, then run one by one."""
    if "seed" in given:
        raise ValueError("give --seed (one run) or --seeds (one run per seed), not both")
    root = given["output_dir"]
    runs = {seed: resolve_settings(given, config, overrides={
        "seed": seed, "output_dir": os.path.join(root, seeds_folds.seed_folder(seed))})
        for seed in repeat.seed_list}
    task = next(iter(runs.values()))[0]
    summary, paths = seeds_folds.run_seeds(root, repeat.seed_list,
                                       lambda seed, path: run_once(*runs[seed], given),
                                       task.eval_splits)
    print(seeds_folds.markdown(summary, "seed"), end="")
    print(f"wrote {', '.join(paths)}")
    return summary


def run_kfold(given, repeat, config):
    """`--kfold`: the folds written from --train_file, one run per fold, the summary and
    the out-of-fold predictions."""
    root = given["output_dir"]
    task, settings = resolve_settings(given, config)
    task = task.bind(settings)
    folds = task.kfold_files(task.task_options, settings.data_dir, repeat.kfold,
                             os.path.join(root, seeds_folds.KFOLD_DATA))
    runs = [resolve_settings(given, config, overrides={
        "output_dir": os.path.join(root, seeds_folds.fold_folder(fold.index)),
        "do_eval": True, "do_predict": True, "data_dir": None,
        "task_options": {"train_file": fold.train, "eval_file": fold.dev,
                         "predict_file": fold.dev}}) for fold in folds]
    summary, paths = seeds_folds.run_folds(root, folds,
                                       lambda index, path: run_once(*runs[index - 1], given),
                                       task.eval_splits, task.test_splits[0])
    print(seeds_folds.markdown(summary, "fold"), end="")
    print(f"wrote {', '.join(paths)}")
    return summary


def run_command(values, command="finetune"):
    """The command, from its flags as given (`{name: value}`): what `main` runs and
    `albert_tf.api.finetune` calls. Prints what the command prints; returns the
    results (a run's `eval_results.json`, or the summary of `--seeds`/`--kfold`)."""
    from albert_tf import demo as demo_lib

    given, repeat, config, demo = split_flags(values, command)
    if repeat.seeds:
        return run_seeds(given, repeat, config)
    if repeat.kfold:
        return run_kfold(given, repeat, config)
    base = None
    if demo:
        given["task"] = given.get("task") or "squad"
        base = demo_lib.prepare(given["task"], given["output_dir"])
    task, settings = resolve_settings(given, config, base)
    make_run = None
    if demo:
        from albert_tf.demo.run import DemoRun, describe

        print(describe(task.name, settings), flush=True)
        make_run = DemoRun
    results = run_once(task, settings, given, make_run)
    if demo:
        from albert_tf.training.run_folder import MODEL_DIR
        from albert_tf.tasks.finetuned import build_serving_module

        module, _ = build_serving_module(os.path.join(settings.output_dir, MODEL_DIR))
        demo_lib.finish(task, module)
    return results


def main(argv):
    cli.quiet_tensorflow(FLAGS)
    with cli.user_errors():
        cli.check_arguments(argv, FLAGS, required=("output_dir",))
        # (an alias sets its flag too)
        run_command(cli.given_flags([n for n in flag_names() if n not in ALIASES], FLAGS))
