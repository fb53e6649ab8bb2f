r"""Pretrains ALBERT with n-gram MLM and sentence-order prediction.

    python -m albert_tf.create_pretraining_data --input=corpus/*.txt \
        --spm_model=spm.model --output=data/train
    python -m albert_tf.pretrain --input_files='data/train-*' \
        --spm_model=spm.model --model=albert_base --output_dir=runs/pretrain

Running the same command again resumes from the newest checkpoint. The
result, `<output_dir>/model`, is what `albert_tf.finetune --init_checkpoint`
reads.
"""

import dataclasses
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags  # noqa: E402

from albert_tf import cli  # noqa: E402

FLAGS = flags.FLAGS


def _define_flags():
    # One flag per setting, with the dataclass defaults, so that the two
    # cannot drift apart.
    from albert_tf.pretraining.train_settings import PretrainSettings

    helps = {
        "input_files": "TFRecord files (comma-separated globs) from create_pretraining_data.",
        "output_dir": "Checkpoints, TensorBoard, results and the final model.",
        "model": "Model preset (albert_base, ...) or an albert_tf config JSON.",
        "init_checkpoint": "Start from this checkpoint (any format load_pretrained reads).",
        "init_from_group0": "Initialise every layer group from group 0 of --init_checkpoint.",
        "spm_model": "SentencePiece model: sets the vocabulary size, shipped with the model.",
        "eval_files": "TFRecords for MLM/SOP accuracy after training.",
        "recompute": "Recompute each encoder layer in the backward pass instead of keeping "
                     "its activations: less memory, about 1.3x the step time (needs dropout 0).",
    }
    for field in dataclasses.fields(PretrainSettings):
        default = None if field.default is dataclasses.MISSING else field.default
        help_text = helps.get(field.name, f"{field.name.replace('_', ' ')}.")
        define = {bool: flags.DEFINE_boolean, int: flags.DEFINE_integer,
                  float: flags.DEFINE_float}.get(type(default), flags.DEFINE_string)
        define(field.name, default, help_text)


_define_flags()


def main(argv):
    from albert_tf.checkpoints import CheckpointError
    from albert_tf.pretraining.train_settings import PretrainSettings
    from albert_tf.pretraining.trainer import run_pretraining
    from albert_tf.training.callbacks import TrainingDiverged

    cli.quiet_tensorflow(FLAGS)
    with cli.user_errors(CheckpointError, TrainingDiverged):
        cli.check_arguments(argv, FLAGS, required=("input_files", "output_dir"))
        settings = PretrainSettings(**{f.name: FLAGS[f.name].value
                                       for f in dataclasses.fields(PretrainSettings)})
        results = run_pretraining(settings)
    train = results["train"]
    print(f"train: {train['step']} steps, {train.get('train_examples_per_second', 0):.1f} "
          "sequences/s")
    for name, value in results.get("eval", {}).items():
        print(f"eval {name}: {value:.4f}" if isinstance(value, float) else f"eval {name}: {value}")


if __name__ == "__main__":
    app.run(main)
