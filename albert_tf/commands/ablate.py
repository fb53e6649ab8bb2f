r"""Runs the ALBERT paper's ablations on your corpus and budget.

    python -m albert_tf.ablate --corpus='corpus/*.txt' --vocab_file=spm.model \
        --model=configs/small.json --output_dir=runs/ablation \
        --grid='sharing=all,attention,ffn,none | sentence_task=nsp,none | seed=2' \
        --budget_steps=300 [--finetune=rte,mrpc --finetune_data_dir=glue]

Makes the pretraining data once per tokenizer and sentence task, pretrains
every variant with the same budget, data and seed, scores each on held-out
text (MLM accuracy, and both NSP and SOP accuracy, as in the paper's Table
5), fine-tunes each on the --finetune tasks, and writes results.md / .csv /
.json (parameters, FLOPs, activation memory, measured throughput, scores,
wall time) and PNG plots into --output_dir. Running the same command again
continues a grid that was stopped, without redoing finished variants.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from albert_tf import extras  # noqa: E402
from albert_tf.ablation.settings import AblationSettings  # noqa: E402
from albert_tf.commands import cli  # noqa: E402
from albert_tf.commands.program import Flags, Program  # noqa: E402


def run(settings):
    extras.require("plots", "ablate (its loss and score plots)")
    cli.load_tensorflow()  # after the checks
    from albert_tf import tasks  # the task registry, for --finetune
    from albert_tf.ablation.runner import run_grid

    rows, paths = run_grid(settings, get_task=tasks.get)
    print(f"{len(rows)} variant(s) done; wrote {', '.join(paths)}")


PROGRAM = Program("ablate", run, Flags(AblationSettings))
