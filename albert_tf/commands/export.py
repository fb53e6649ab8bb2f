r"""Exports a fine-tuned model for TF Serving (and optionally TFLite, a web page).

    python -m albert_tf.export --model_dir=runs/rte --export_dir=exports/rte \
        [--version=N] [--formats=tflite,tflite:float16,tflite:int8,web] \
        [--precision=auto|fp32|bf16] [--null_threshold=X] [--threshold=P] \
        [--eval_data=glue/RTE [--eval_split=dev] [--calibration_examples=N]]

The flags are `albert_tf.export.settings.ExportSettings`'s, the export options
of the tasks (`Task.export_options_class`) and the formats' own options
(`Format.options_class`); `--tflite`, `--quantize`, `--web`, `--web_variant`
and `--tflite_variants` are the former spellings of `--formats` entries. Writes `<export_dir>/<version>/` (default version: one more than the
highest there) and prints its path. With `--eval_data`, each variant's task metric
and batch-1 latency are recorded beside the float model's in the export's
`assets.extra/albert_tf_export.json` (and printed). See SERVING.md.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from albert_tf import tasks  # noqa: E402 - the registry (no TensorFlow): export options as flags
from albert_tf.commands import cli  # noqa: E402
from albert_tf.commands.program import Flags, Program  # noqa: E402
from albert_tf.export import formats  # noqa: E402
from albert_tf.export.settings import ExportSettings  # noqa: E402


def run(settings):
    """Exports; prints the evaluation (with --eval_data) and the version folder;
    returns `{"export_dir": ..., "evaluation": ... or None}`."""
    cli.load_tensorflow()  # the task's module imports it: without its start-up noise
    from albert_tf.tasks import finetuned

    result = finetuned.run_export(settings)  # its checks first, then the work
    if result["evaluation"]:
        print(_describe(result["evaluation"]))
    print(result["export_dir"])
    return result


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


# (its INFO lines quieted: signature renames, saver sharding, assets)
PROGRAM = Program("export", run, Flags(ExportSettings),
                  Flags(tasks.export_option_classes, under="task_options",
                        default_from="the task's own"),
                  Flags(formats.option_classes, under="format_options",
                        default_from="the format's own"))
