"""What `--deterministic` costs in training speed: the training step with and without
TensorFlow's op determinism.

    python bench/deterministic_cost.py [--model=tiny|base] [--batch=8] [--seq=128]
                                       [--rounds=3] [--steps=10]

Op determinism cannot be turned off in a process once on, so each measurement
is a process of its own (`--worker=on|off`: one classifier, random weights,
float32, XLA off, the layer loop: what `--deterministic` resolves `auto` to on a
CPU), the two kinds alternating `--rounds` times; each process times `--steps`
steps after two of warm-up, in wall and CPU time. Prints one JSON line: the
medians and their ratio.
"""

import argparse
import statistics
import sys

from common import emit, run_json, timed

CONFIGS = {
    "base": dict(vocabulary_size=30000, num_layers=12, num_heads=12, hidden_dim=768,
                 intermediate_dim=3072, embedding_dim=128, max_sequence_length=512),
    "tiny": dict(vocabulary_size=30000, num_layers=4, num_heads=4, hidden_dim=128,
                 intermediate_dim=256, embedding_dim=64, max_sequence_length=512),
}


def worker(args):
    import keras
    import numpy as np
    import tensorflow as tf

    from albert_tf.backbone import AlbertBackbone
    from albert_tf.config import AlbertConfig
    from albert_tf.models import AlbertClassifier
    from albert_tf.training.optimizers import create_optimizer

    if args.worker == "on":
        tf.config.experimental.enable_op_determinism()
    keras.utils.set_random_seed(0)
    config = AlbertConfig(**CONFIGS[args.model], dropout=0.1, attention_dropout=0.1)
    model = AlbertClassifier(AlbertBackbone(config), 2, dropout=0.1)
    model.compile(optimizer=create_optimizer("adamw", 1e-5, 10_000, 100), jit_compile=False)
    tokens = np.random.default_rng(0).integers(5, 30000, (args.batch, args.seq)).astype("int32")
    x = {"token_ids": tokens, "segment_ids": 0 * tokens, "padding_mask": 1 + 0 * tokens}
    y = {"label": np.arange(args.batch, dtype="int32") % 2}
    iterator = iter(tf.data.Dataset.from_tensors((x, y)).repeat())
    model.make_train_function()
    step = lambda: model.train_function(iterator)["loss"].numpy()  # noqa: E731
    cpu = []
    wall = timed(step, args.steps, warmup=2, cpu=cpu)
    emit({"determinism": args.worker, "wall": wall, "cpu": cpu[0]})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="tiny", choices=sorted(CONFIGS))
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--worker", choices=("on", "off"))
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    shape = [f"--model={args.model}", f"--batch={args.batch}", f"--seq={args.seq}",
             f"--steps={args.steps}"]
    runs = {"off": [], "on": []}
    for _ in range(args.rounds):
        for mode in runs:
            runs[mode].append(run_json("deterministic_cost.py", *shape, f"--worker={mode}"))
    median = {mode: {kind: statistics.median(r[kind] for r in results)
                     for kind in ("wall", "cpu")} for mode, results in runs.items()}
    emit({"model": args.model, "batch": args.batch, "seq": args.seq, "rounds": args.rounds,
          "step_seconds": median,
          "on_over_off": {kind: median["on"][kind] / median["off"][kind]
                          for kind in ("wall", "cpu")},
          "runs": runs})


if __name__ == "__main__":
    sys.exit(main())
