r"""Exports a fine-tuned model for TF Serving (and optionally TFLite).

    python -m albert_tf.export --model_dir=runs/rte --export_dir=exports/rte \
        [--version=N] [--tflite] [--quantize] [--null_threshold=X]

Writes `<export_dir>/<version>/` (default version: one more than the highest
there) and prints its path. See SERVING.md for the signatures.
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


def main(argv):
    with cli.user_errors():
        cli.check_arguments(argv, FLAGS, required=("model_dir", "export_dir"))
        cli.load_tensorflow()  # after the checks
        from tasks.finetuned import export_model

        path = export_model(FLAGS.model_dir, FLAGS.export_dir, FLAGS.version, FLAGS.tflite,
                            FLAGS.quantize, null_threshold=FLAGS.null_threshold)
    print(path)


if __name__ == "__main__":
    app.run(main)
