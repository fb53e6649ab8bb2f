r"""Exports a fine-tuned model for TF Serving (and optionally TFLite).

    python -m albert_tf.export --model_dir=runs/rte --export_dir=exports/rte \
        [--version=N] [--tflite] [--quantize] [--null_threshold=X] [--threshold=P] \
        [--precision=auto|fp32|bf16] [--tflite_variants=float16,dynamic_int8,int8] \
        [--eval_data=glue/RTE [--eval_split=dev] [--calibration_examples=N]]

Writes `<export_dir>/<version>/` (default version: one more than the highest
there) and prints its path. With `--eval_data`, each variant's task metric
and batch-1 latency are recorded beside the float model's in the export's
`assets.extra/albert_tf_export.json` (and printed). See SERVING.md.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags  # noqa: E402

from albert_tf import cli  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "A fine-tuned model/ folder, or the run's output folder.")
flags.DEFINE_string("export_dir", None, "The export root; the version folder goes inside.")
flags.DEFINE_integer("version", None, "Version number (default: 1 + the highest existing).")
flags.DEFINE_boolean("tflite", False, "Also write model.tflite (token ids in).")
flags.DEFINE_boolean("quantize", False,
                     "TFLite with dynamic-range int8 weights (implies --tflite).")
flags.DEFINE_float("null_threshold", None,
                   "SQuAD v2.0: answer \"\" above these null odds (default: the run's held-out "
                   "threshold from eval_results.json, else 0).")
flags.DEFINE_float("threshold", None,
                   "Multi-label text_classification: predict a label at this probability "
                   "(default: the threshold chosen on held-out training rows).")
flags.DEFINE_string("precision", "auto",
                    "What the SavedModel computes in: fp32, bf16, or auto (bf16 where this "
                    "machine runs it faster, measured as training's --precision=auto; recorded "
                    "in the export).")
flags.DEFINE_list("tflite_variants", [],
                  "More TFLite files, model_<variant>.tflite: float32, float16, dynamic_int8, "
                  "int8 (full-integer, calibrated on --eval_data's --calibration_split).")
flags.DEFINE_string("eval_data", None,
                    "The task's data folder (as finetune --data_dir): each variant's metric on "
                    "--eval_split is recorded beside the float model's.")
flags.DEFINE_string("eval_split", None, "The labelled split to score (default: the task's "
                                        "first evaluation split).")
flags.DEFINE_integer("eval_examples", None, "Score at most this many examples (default: all).")
flags.DEFINE_string("calibration_split", None,
                    "Where the int8 variant's calibration examples come from (default: the "
                    "task's training split).")
flags.DEFINE_integer("calibration_examples", 128, "How many calibration examples (int8).")
flags.DEFINE_boolean("web", False,
                     "Also write web/: the page, albert.js, the tokenizer, the TFLite model "
                     "(--web_variant) and the LiteRT.js runtime, served as static files.")
flags.DEFINE_string("web_variant", "dynamic_int8",
                    "The TFLite variant of web/: float32, float16 or dynamic_int8.")


def main(argv):
    cli.quiet_tensorflow(FLAGS)  # (its INFO lines: signature renames, saver sharding, assets)
    with cli.user_errors():
        cli.check_arguments(argv, FLAGS, required=("model_dir", "export_dir"))
        _check_flags()
        cli.load_tensorflow()  # after the checks
        path, evaluation = _export()
    if evaluation:
        print(_describe(evaluation))
    print(path)


def _check_flags():
    """The reduced-export flags, checked before any work."""
    from albert_tf.export import precision

    precision.check(FLAGS.precision)
    for variant in FLAGS.tflite_variants:
        if variant not in precision.TFLITE_VARIANTS:
            raise ValueError(f"--tflite_variants: unknown variant {variant!r}; choose from "
                             f"{', '.join(precision.TFLITE_VARIANTS)}")
    if "int8" in FLAGS.tflite_variants and not FLAGS.eval_data:
        raise ValueError("--tflite_variants=int8 (full-integer) calibrates on the task's data: "
                         "give --eval_data=the task's data folder")
    if FLAGS.web:
        from albert_tf.export import web

        if FLAGS.web_variant not in web.VARIANTS:
            raise ValueError(f"--web_variant: unknown variant {FLAGS.web_variant!r}; choose "
                             f"from {', '.join(web.VARIANTS)}")
        web.check_runtime()
    if FLAGS.eval_data and not os.path.isdir(FLAGS.eval_data):
        raise FileNotFoundError(f"--eval_data: no such folder {FLAGS.eval_data}")
    for name in ("eval_examples", "calibration_examples"):
        if FLAGS[name].value is not None and FLAGS[name].value < 1:
            raise ValueError(f"--{name} must be at least 1, got {FLAGS[name].value}")


def _export():
    """Writes the export; returns (its folder, its evaluation or None)."""
    from albert_tf.export import exporter, precision
    from tasks import export_data, finetuned

    version, target = exporter.check_version(FLAGS.export_dir, FLAGS.version)
    model_dir = exporter.resolve_model_dir(FLAGS.model_dir)
    data = export_data.TaskData(
        model_dir, FLAGS.eval_data, FLAGS.eval_split, FLAGS.eval_examples,
        calibration=("int8" in FLAGS.tflite_variants), calibration_split=FLAGS.calibration_split,
        calibration_examples=FLAGS.calibration_examples) if FLAGS.eval_data else None
    # (reading the data first: its mistakes before any work)
    chosen = precision.choose(FLAGS.precision)
    task_options = {"null_threshold": FLAGS.null_threshold, "threshold": FLAGS.threshold}
    module, info = finetuned.build_serving_module(model_dir, **task_options)
    saved_module = None
    if chosen["compute"] != "fp32":
        with precision.compute_in(chosen["compute"]):
            saved_module, _ = finetuned.build_serving_module(model_dir, **task_options)
    info.update(version=version, precision=chosen)
    web_bundle = _web_bundle(module, model_dir) if FLAGS.web else None
    target = exporter.write_export(
        module, info, target, FLAGS.tflite, FLAGS.quantize, saved_module=saved_module,
        tflite_variants=tuple(dict.fromkeys(FLAGS.tflite_variants)),
        representative=data and data.calibration(module.input_names),
        evaluate=data and data.evaluate(module.input_names), web=web_bundle,
        renumber=FLAGS.version is None)
    return target, info.get("evaluation")


def _web_bundle(module, model_dir):
    """The function writing web/ (its task checked now, before any long work)."""
    from albert_tf.checkpoints import load_tokenizer
    from albert_tf.export import web

    web.head_settings(module)
    host = load_tokenizer(model_dir, host=True)
    return lambda folder: web.write(module, host, folder, FLAGS.web_variant)


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


if __name__ == "__main__":
    app.run(main)
