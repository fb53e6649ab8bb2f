r"""Exports a fine-tuned model for TF Serving (and optionally TFLite, a web page).

    python -m albert_tf.export --model_dir=runs/rte --export_dir=exports/rte \
        [--version=N] [--formats=tflite,float16,dynamic_int8,int8,web] \
        [--precision=auto|fp32|bf16] [--null_threshold=X] [--threshold=P] \
        [--eval_data=glue/RTE [--eval_split=dev] [--calibration_examples=N]]

The flags are `albert_tf.export.settings.ExportSettings`'s, and the export
options of the tasks (`Task.export_options_class`); `--tflite`, `--quantize`,
`--web` and `--tflite_variants` are the older spellings of `--formats`
entries. Writes `<export_dir>/<version>/` (default version: one more than the
highest there) and prints its path. With `--eval_data`, each variant's task metric
and batch-1 latency are recorded beside the float model's in the export's
`assets.extra/albert_tf_export.json` (and printed). See SERVING.md.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # noqa: E402

from albert_tf.commands import cli  # noqa: E402
from albert_tf.export.settings import ExportSettings  # noqa: E402

from albert_tf import tasks  # noqa: E402 - the registry (no TensorFlow): export options as flags

FLAGS = flags.FLAGS
cli.define_flags(ExportSettings)
flags.DEFINE_alias("tflite_variants", "formats")
OPTION_CLASSES = tasks.export_option_classes()
for _options in OPTION_CLASSES:
    cli.define_flags(_options, unset=_options.field_names(),
                     unset_help=" Default: the task's own.")


ALIASES = {"tflite_variants": "formats"}


def flag_names():
    """Every flag of the command (the keyword arguments of `albert_tf.api.export`)."""
    names = [*cli.flag_names(ExportSettings), *ALIASES]
    for options in OPTION_CLASSES:
        names.extend(cli.flag_names(options))
    return tuple(dict.fromkeys(names))


def settings_from(values, command="export"):
    """The `ExportSettings` of the command's flags as given (`{name: value}`; a list
    of formats may be a Python list), the task options under `task_options`."""
    cli.check_flag_names(values, flag_names(), command)
    values = cli.without_aliases(values, ALIASES)
    if isinstance(values.get("formats"), (list, tuple)):
        values["formats"] = ",".join(values["formats"])
    cli.missing_required(values, ("model_dir", "export_dir"))
    own = cli.flag_names(ExportSettings)
    options = {k: v for k, v in values.items() if k not in own}
    return ExportSettings.from_dict({**{k: v for k, v in values.items() if k in own},
                                     "task_options": options})


def run_command(values, command="export"):
    """The command, from its flags as given (`{name: value}`): what `main` runs and
    `albert_tf.api.export` calls. Prints the evaluation (with --eval_data) and the
    version folder; returns `{"export_dir": ..., "evaluation": ... or None}`."""
    settings = settings_from(values, command)
    cli.load_tensorflow()  # the task's module imports it: without its start-up noise
    from albert_tf.tasks import finetuned

    result = finetuned.run_export(settings)  # its checks first, then the work
    if result["evaluation"]:
        print(_describe(result["evaluation"]))
    print(result["export_dir"])
    return result


def main(argv):
    cli.quiet_tensorflow(FLAGS)  # (its INFO lines: signature renames, saver sharding, assets)
    with cli.user_errors():
        cli.check_arguments(argv, FLAGS, required=("model_dir", "export_dir"))
        # (an alias sets its flag too)
        run_command(cli.given_flags([n for n in flag_names() if n not in ALIASES], FLAGS))


def _describe(evaluation):
    """The evaluation as a table, one line per variant."""
    variants = evaluation["variants"]
    names = [k for k in next(iter(variants.values())) if k != "examples"]
    lines = [f"{evaluation['split']} ({evaluation['examples']} examples): "
             + "  ".join(f"{k:>13}" for k in names)]
    for variant, metrics in variants.items():
        lines.append(f"{variant:>24}: " + "  ".join(
            f"{metrics[k]:>13.4f}" if isinstance(metrics[k], float) else f"{metrics[k]!s:>13}"
            for k in names))
    return "\n".join(lines)
