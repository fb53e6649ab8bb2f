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

from albert_tf.commands import cli  # noqa: E402
from albert_tf.commands.program import Flags, Program  # noqa: E402
from albert_tf.pretraining.train_settings import PretrainSettings  # noqa: E402


def run(settings):
    """Pretrains (or resumes); prints the summary; returns the results."""
    cli.load_tensorflow()  # after the checks
    from albert_tf.pretraining.trainer import run_pretraining

    results = run_pretraining(settings)
    train = results["train"]
    print(f"train: {train['step']} steps, {train.get('train_examples_per_second', 0):.1f} "
          "sequences/s")
    for scores, label in (("eval_init_checkpoint", "eval before training"), ("eval", "eval")):
        for name, value in results.get(scores, {}).items():
            print(f"{label} {name}: {_shown(value)}")
    return results


def _shown(value):
    """A score as printed: floats (also in an interval's list) to 4 decimals."""
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return str(value)


PROGRAM = Program("pretrain", run, Flags(PretrainSettings))
