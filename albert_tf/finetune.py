r"""Fine-tunes ALBERT on a task and reports the task's official metric.

    python -m albert_tf.finetune --task=rte --data_dir=glue/RTE \
        --init_checkpoint=albert_base_v2 --output_dir=runs/rte

Settings come from the task's recipe (configs/finetune_recipes.json), then
`--config` (a JSON file), then the flags you give. A killed run resumes with
`--output_dir` alone. `--demo` runs the whole pipeline offline on data the
project generates, in a few minutes on a laptop CPU.
"""

import os

from absl import app, flags

from albert_tf import cli

cli.load_tensorflow()  # the task registry imports it: without its start-up noise
import tasks  # noqa: E402 - the registry: each task's options become flags
from albert_tf.training import finetuning  # noqa: E402
from albert_tf.training import settings as settings_lib  # noqa: E402
from albert_tf.training.settings import FinetuneSettings  # noqa: E402

FLAGS = flags.FLAGS
cli.define_flags(FinetuneSettings, unset=settings_lib.RECIPE_FIELDS,
                 unset_help=" Default: the task's recipe.")
flags.DEFINE_alias("spm_model", "vocab_file")
flags.DEFINE_string("config", None, "A JSON file of settings (between recipe and flags).")
flags.DEFINE_boolean("demo", False, "Run offline on generated data with a small model.")
OPTION_CLASSES = tasks.option_classes()
for _options in OPTION_CLASSES:
    cli.define_flags(_options, unset=_options.field_names(),
                     unset_help=" Default: the task's own.")


def explicit_settings():
    """The settings the user set on the command line (task options under `task_options`)."""
    given = cli.given_settings(FinetuneSettings, FLAGS)
    options = {}
    for options_class in OPTION_CLASSES:
        options.update(cli.given_settings(options_class, FLAGS))
    if options:
        given["task_options"] = options
    return given


def resolve_settings(base=None):
    """Settings of this invocation: a new run, or the resumption of a saved one.

    `base`: settings between the recipe and the flags (those of `--demo`).
    """
    given = explicit_settings()
    # A run that stopped before its first checkpoint holds nothing: start it as now given.
    saved = (settings_lib.load_saved(FinetuneSettings, FLAGS.output_dir)
             if settings_lib.has_progress(FLAGS.output_dir) else None)
    if saved is not None:
        conflicts = settings_lib.resume_conflicts(saved, given)
        if conflicts:
            raise ValueError(
                f"--output_dir={FLAGS.output_dir} holds a run with other settings ("
                + ", ".join(f"{k}: saved {a!r}, given {b!r}" for k, (a, b) in conflicts.items())
                + "); pass only --output_dir to resume it, or use a new --output_dir")
        return tasks.get(saved.task), saved.replace(
            **{k: v for k, v in given.items() if k in settings_lib.RESUMABLE})
    if not FLAGS.task:
        raise ValueError(f"--task is required (known tasks: {', '.join(tasks.names())})")
    task = tasks.get(FLAGS.task)
    merged = dict(base or {})
    for pair in settings_lib.ALTERNATIVES:  # --demo's train_steps yields to --num_epochs
        for one, other in (pair, pair[::-1]):
            if one in given:
                merged.pop(other, None)
    options = {**merged.get("task_options", {}), **given.get("task_options", {})}
    merged.update(given)
    if options:
        merged["task_options"] = options
    return task, settings_lib.resolve(task, merged, FLAGS.config)


def finished(settings):
    """Whether the run in `--output_dir` is complete and nothing new was asked of it;
    then says so and prints its results."""
    if set(explicit_settings()) & set(finetuning.RUN_CONTROL):
        return False
    return finetuning.report_complete(settings.output_dir)


def main(argv):
    from albert_tf import demo
    from albert_tf.training.devices import is_chief

    cli.quiet_tensorflow(FLAGS)
    with cli.user_errors():
        cli.check_arguments(argv, FLAGS, required=("output_dir",))
        base = None
        if FLAGS.demo:
            FLAGS.task = FLAGS.task or "squad"
            base = demo.prepare(FLAGS.task, FLAGS.output_dir)
        task, settings = resolve_settings(base)
        if not finished(settings):
            finetuning.print_results(finetuning.run(task, settings))
            if settings.export and is_chief(settings.strategy):
                from tasks.finetuned import export_run

                print(f"export: {export_run(settings.output_dir)}")
        if FLAGS.demo:
            from albert_tf.training.run_folder import MODEL_DIR
            from tasks.finetuned import build_serving_module

            module, _ = build_serving_module(os.path.join(settings.output_dir, MODEL_DIR))
            demo.finish(task, module)


if __name__ == "__main__":
    app.run(main)
