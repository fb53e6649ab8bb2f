r"""Pretrains ALBERT with n-gram MLM and sentence-order prediction.

    python -m albert_tf.create_pretraining_data --input=corpus/*.txt \
        --vocab_file=spm.model --output=data/train
    python -m albert_tf.pretrain --input_files='data/train-*' \
        --vocab_file=spm.model --model=albert_base --output_dir=runs/pretrain

Running the same command again resumes from the newest checkpoint. The
result, `<output_dir>/model`, is what `albert_tf.finetune --init_checkpoint`
reads.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # noqa: E402

from albert_tf.commands import cli  # noqa: E402
from albert_tf.pretraining.train_settings import PretrainSettings  # noqa: E402

FLAGS = flags.FLAGS
cli.define_flags(PretrainSettings)
if "spm_model" not in FLAGS:  # (finetune's, where albert_tf.api imported both)
    flags.DEFINE_alias("spm_model", "vocab_file")


ALIASES = {"spm_model": "vocab_file"}


def run_command(values, command="pretrain"):
    """The command, from its flags as given (`{name: value}`): what `main` runs and
    `albert_tf.api.pretrain` calls. Prints the summary; returns the results."""
    cli.check_flag_names(values, (*cli.flag_names(PretrainSettings), *ALIASES), command)
    values = cli.without_aliases(values, ALIASES)
    cli.missing_required(values, ("input_files", "output_dir"))
    settings = PretrainSettings.from_dict(values)
    cli.load_tensorflow()  # after the checks
    from albert_tf.pretraining.trainer import run_pretraining

    results = run_pretraining(settings)
    train = results["train"]
    print(f"train: {train['step']} steps, {train.get('train_examples_per_second', 0):.1f} "
          "sequences/s")
    for name, value in results.get("eval", {}).items():
        print(f"eval {name}: {value:.4f}" if isinstance(value, float) else f"eval {name}: {value}")
    return results


def main(argv):
    cli.quiet_tensorflow(FLAGS)
    with cli.user_errors():
        cli.check_arguments(argv, FLAGS, required=("input_files", "output_dir"))
        # An alias sets its flag.
        run_command(cli.given_flags(cli.flag_names(PretrainSettings), FLAGS))
