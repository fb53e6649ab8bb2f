"""One training epoch on real GLUE data: length-aware batching vs fixed padding.

    python bench/glue_epoch.py --data_dir=../shared/data/glue/MRPC [--task=mrpc]
        [--init_checkpoint=PATH | --model=albert_base] [--batch_size=32]

Three runs of `albert_tf.finetune` with the same model, seed and recipe:
  fixed_128:     random batches, every batch padded to 128 (as fixed-shape pipelines do);
  dynamic:       the same random batches, each padded to its own longest example
                 (the same numbers as fixed_128: padding is masked out);
  length_aware:  batches of similar lengths (albert_tf's default), each padded to its longest.
Prints one JSON line per run (epoch seconds, examples/s, dev metrics) and the speed-ups.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

from common import ROOT, emit, table

VARIANTS = {
    "fixed_128": ["--nolength_aware_batching", "--fixed_padding"],
    "dynamic": ["--nolength_aware_batching", "--nofixed_padding"],
    "length_aware": ["--length_aware_batching", "--nofixed_padding"],
}
TRAIN_SIZES = {"mrpc": 3668, "rte": 2490}


def run_variant(name, args, workdir):
    steps = math.ceil(TRAIN_SIZES[args.task] / args.batch_size)
    model = [f"--init_checkpoint={args.init_checkpoint}"] if args.init_checkpoint else [
        f"--model={args.model}", f"--vocab_file={args.spm_model}"]
    out = os.path.join(workdir, name)
    command = [sys.executable, "-m", "albert_tf.finetune", f"--task={args.task}",
               f"--data_dir={args.data_dir}", f"--output_dir={out}", *model,
               f"--train_steps={steps}", f"--warmup_steps={steps // 10}",
               f"--batch_size={args.batch_size}", "--max_seq_length=128",
               f"--learning_rate={args.learning_rate}", "--checkpoint_every=100000",
               f"--seed={args.seed}", *VARIANTS[name]]
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=ROOT))
    if result.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{result.stderr[-3000:]}")
    with open(os.path.join(out, "eval_results.json")) as f:
        results = json.load(f)
    train = results["train"]
    return {"variant": name, "train_examples": train["examples"],
            "examples_per_second": round(train["train_examples_per_second"], 2),
            "epoch_seconds": round(steps * args.batch_size / train["train_examples_per_second"],
                                   1),
            "wall_seconds": round(time.perf_counter() - start, 1),
            **{k: round(v, 4) for k, v in results["dev"].items() if isinstance(v, float)}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data_dir", required=True)
    parser.add_argument("--task", default="mrpc", choices=sorted(TRAIN_SIZES))
    parser.add_argument("--init_checkpoint")
    parser.add_argument("--model", default="albert_base")
    parser.add_argument("--spm_model", default=os.path.join(
        ROOT, "tests", "fixtures", "spm", "albert_30k_clean.model"))
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=2e-5)
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for name in args.variants.split(","):
            rows.append(run_variant(name, args, workdir))
            emit(rows[-1])
    base = {r["variant"]: r for r in rows}.get("fixed_128")
    if base:
        for r in rows:
            r["speedup_vs_fixed_128"] = round(base["epoch_seconds"] / r["epoch_seconds"], 2)
    print(table(rows, list(rows[0])))
    emit({"glue_epoch": rows})


if __name__ == "__main__":
    main()
