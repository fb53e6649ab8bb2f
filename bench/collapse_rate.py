"""How often fine-tuning runs collapse (every prediction one class), with and without
`--collapse_restarts`.

    python bench/collapse_rate.py --data_dir=../shared/data/glue/RTE --output=runs/collapse \\
        [--task=rte] [--seeds=8] [--restarts=2] [-- extra finetune flags]

Runs `albert-tf finetune --task=TASK --seeds=1..N` twice into OUTPUT/plain and
OUTPUT/rescued (the second with `--collapse_restarts`), from random weights
(`--model=albert_tiny`, the test SentencePiece vocabulary) unless the extra flags
give `--init_checkpoint` (a pretrained model, e.g. `bash bench/gutenberg_pretraining.sh`'s),
and prints one JSON line: per condition, the seeds whose run ended collapsed, the
restarts taken and the dev accuracy of each seed. A stopped measurement resumes
(`--seeds` resumes).
"""

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPM = os.path.join(ROOT, "tests", "fixtures", "spm", "albert_30k_clean.model")
DEFAULTS = ["--model=albert_tiny", f"--vocab_file={SPM}", "--max_seq_length=128",
            "--batch_size=32", "--train_steps=150", "--warmup_steps=15", "--eval_every=50",
            "--precision=fp32", "--xla=off", "--layer_execution=loop"]


def defaults(extra):
    """DEFAULTS less the flags `extra` gives, and less the random model's flags when
    `extra` gives a checkpoint."""
    given = {e.split("=", 1)[0] for e in extra}
    if "--init_checkpoint" in given:
        given |= {"--model", "--vocab_file"}
    return [d for d in DEFAULTS if d.split("=", 1)[0] not in given]


def run(output, task, data_dir, seeds, extra):
    args = [sys.executable, "-m", "albert_tf.finetune", f"--task={task}",
            f"--data_dir={data_dir}", f"--output_dir={output}", f"--seeds={seeds}",
            *defaults(extra), *extra]
    subprocess.run(args, check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
                   env=dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3"))
    with open(os.path.join(output, "seeds_summary.json")) as f:
        summary = json.load(f)
    accuracy = summary["metrics"]["accuracy"]
    return {"collapsed": sorted(summary.get("collapsed", {}), key=int),
            "restarts": summary.get("restarts", {}),
            "accuracy": accuracy["values"], "mean": accuracy["mean"], "sd": accuracy["sd"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data_dir", required=True)
    parser.add_argument("--task", default="rte")
    parser.add_argument("--output", required=True)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--restarts", type=int, default=2)
    args, extra = parser.parse_known_args()
    extra = [e for e in extra if e != "--"]
    found = {"plain": run(os.path.join(args.output, "plain"), args.task, args.data_dir,
                          args.seeds, extra),
             "rescued": run(os.path.join(args.output, "rescued"), args.task, args.data_dir,
                            args.seeds, [*extra, f"--collapse_restarts={args.restarts}"])}
    print(json.dumps({"task": args.task, "seeds": args.seeds, "restarts": args.restarts,
                      "flags": defaults(extra) + extra, **found}))


if __name__ == "__main__":
    main()
