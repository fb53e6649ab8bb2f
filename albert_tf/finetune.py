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

from absl import app, flags

from albert_tf import cli
from albert_tf.io_utils import read_json
from albert_tf.training import repeats
from albert_tf.training import settings as settings_lib
from albert_tf.training.run_folder import RESULTS_FILE
from albert_tf.training.settings import FinetuneSettings
import tasks  # the registry: each task's options become flags (it imports no TensorFlow)

FLAGS = flags.FLAGS
cli.define_flags(FinetuneSettings, unset=settings_lib.RECIPE_FIELDS,
                 unset_help=" Default: the task's recipe.")
cli.define_flags(repeats.RepeatSettings)
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


def explicit_settings():
    """The settings the user set on the command line (task options under `task_options`)."""
    return cli.given_run_settings(FinetuneSettings, OPTION_CLASSES, FLAGS)


def resolve_settings(base=None, overrides=None):
    """Settings of this invocation: a new run, or the resumption of a saved one.

    `base`: settings between the recipe and the flags (those of `--demo`);
    `overrides`: settings set over the flags (a seed's or fold's folder, seed, files).
    """
    given = explicit_settings()
    for name, value in (overrides or {}).items():
        if name == "task_options":
            given["task_options"] = {**given.get("task_options", {}), **value}
        else:
            given[name] = value
    output_dir = given.get("output_dir", FLAGS.output_dir)
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
        return load_task(saved.task), saved.replace(
            **{k: v for k, v in given.items() if k in settings_lib.RESUMABLE})
    if not FLAGS.task:
        raise ValueError(f"--task is required (known tasks: {', '.join(tasks.names())})")
    task = tasks.declared(FLAGS.task)  # its recipe and options, its module not yet imported
    merged = dict(base or {})
    for pair in settings_lib.ALTERNATIVES:  # --demo's train_steps yields to --num_epochs
        for one, other in (pair, pair[::-1]):
            if one in given:
                merged.pop(other, None)
    options = {**merged.get("task_options", {}), **given.get("task_options", {})}
    merged.update(given)
    if options:
        merged["task_options"] = options
    settings = settings_lib.resolve(task, merged, FLAGS.config)
    return load_task(task.name), settings


def finished(settings):
    """Whether the run in `--output_dir` is complete and nothing new was asked of it;
    then says so and prints its results."""
    from albert_tf.training import finetuning

    if set(explicit_settings()) & set(finetuning.RUN_CONTROL):
        return False
    return finetuning.report_complete(settings.output_dir)


def run_once(task, settings):
    """Fine-tunes (unless the run is complete) and exports as asked; returns the results."""
    from albert_tf.training import finetuning
    from albert_tf.training.devices import is_chief

    if finished(settings):
        return read_json(os.path.join(settings.output_dir, RESULTS_FILE))
    results = finetuning.run(task, settings)
    finetuning.print_results(results)
    if settings.export and is_chief(settings.strategy):
        from tasks.finetuned import export_run

        print(f"export: {export_run(settings.output_dir)}")
    return results


def run_seeds(repeat):
    """`--seeds`: every seed's settings resolved (and checked) first, then run one by one."""
    if FLAGS["seed"].present:
        raise ValueError("give --seed (one run) or --seeds (one run per seed), not both")
    runs = {seed: resolve_settings(overrides={
        "seed": seed, "output_dir": os.path.join(FLAGS.output_dir, repeats.seed_folder(seed))})
        for seed in repeat.seed_list}
    task = next(iter(runs.values()))[0]
    summary, paths = repeats.run_seeds(FLAGS.output_dir, repeat.seed_list,
                                       lambda seed, path: run_once(*runs[seed]),
                                       task.eval_splits)
    print(repeats.markdown(summary, "seed"), end="")
    print(f"wrote {', '.join(paths)}")


def run_kfold(repeat):
    """`--kfold`: the folds written from --train_file, one run per fold, the summary and
    the out-of-fold predictions."""
    task, settings = resolve_settings()
    task = task.bind(settings)
    folds = task.kfold_files(task.task_options, settings.data_dir, repeat.kfold,
                             os.path.join(FLAGS.output_dir, repeats.KFOLD_DATA))
    runs = [resolve_settings(overrides={
        "output_dir": os.path.join(FLAGS.output_dir, repeats.fold_folder(fold.index)),
        "do_eval": True, "do_predict": True, "data_dir": None,
        "task_options": {"train_file": fold.train, "eval_file": fold.dev,
                         "predict_file": fold.dev}}) for fold in folds]
    summary, paths = repeats.run_folds(FLAGS.output_dir, folds,
                                       lambda index, path: run_once(*runs[index - 1]),
                                       task.eval_splits, task.test_splits[0])
    print(repeats.markdown(summary, "fold"), end="")
    print(f"wrote {', '.join(paths)}")


def main(argv):
    from albert_tf import demo

    cli.quiet_tensorflow(FLAGS)
    with cli.user_errors():
        cli.check_arguments(argv, FLAGS, required=("output_dir",))
        repeat = cli.settings_from_flags(repeats.RepeatSettings, FLAGS)
        if repeat.seeds:
            return run_seeds(repeat)
        if repeat.kfold:
            return run_kfold(repeat)
        base = None
        if FLAGS.demo:
            FLAGS.task = FLAGS.task or "squad"
            base = demo.prepare(FLAGS.task, FLAGS.output_dir)
        task, settings = resolve_settings(base)
        run_once(task, settings)
        if FLAGS.demo:
            from albert_tf.training.run_folder import MODEL_DIR
            from tasks.finetuned import build_serving_module

            module, _ = build_serving_module(os.path.join(settings.output_dir, MODEL_DIR))
            demo.finish(task, module)


if __name__ == "__main__":
    app.run(main)
