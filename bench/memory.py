"""Peak memory of a training step, with and without activation recomputation.

    python bench/memory.py [--preset=albert_xxlarge] [--batch=2] [--seq=512]

Each variant runs in its own process (peak resident memory is per process):
a classifier on the preset's configuration (random weights), trained for a
few steps under the default precision; prints peak RSS, the step time and
the analytical activation estimate of `albert_tf.accounting` for reference.
"""

import argparse
import resource
import sys

from common import emit, run_json, table, timed


def measure(preset, batch, seq, remat, steps):
    import numpy as np
    import tensorflow as tf

    from albert_tf.backbone import AlbertBackbone
    from albert_tf.config import AlbertConfig
    from albert_tf.models import AlbertClassifier
    from albert_tf.training.devices import make_strategy, resolve_precision
    from albert_tf.training.optimizers import create_optimizer

    policy, jit = resolve_precision("auto", "auto", make_strategy("one_device"))
    config = AlbertConfig.preset(preset)
    model = AlbertClassifier(AlbertBackbone(config, dtype=policy, remat=remat), 2)
    model.compile(optimizer=create_optimizer("adamw", 1e-5, 1000, 10), jit_compile=jit)
    tokens = np.random.default_rng(0).integers(5, 30000, (batch, seq)).astype("int32")
    x = {"token_ids": tokens, "segment_ids": 0 * tokens, "padding_mask": 1 + 0 * tokens}
    iterator = iter(tf.data.Dataset.from_tensors((x, {"label": np.zeros(batch, "int32")}))
                    .repeat())
    model.make_train_function()
    seconds = timed(lambda: model.train_function(iterator)["loss"].numpy(), steps, warmup=1)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    return {"remat": remat, "policy": policy, "peak_rss_gib": round(peak, 2),
            "step_seconds": round(seconds, 2)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="albert_xxlarge")
    # Batch 4 without recomputation needs more than 24 GiB (killed here).
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--variant", choices=["remat", "plain"])
    args = parser.parse_args()
    if args.variant:  # the child process
        emit(measure(args.preset, args.batch, args.seq, args.variant == "remat", args.steps))
        return
    common = [f"--preset={args.preset}", f"--batch={args.batch}", f"--seq={args.seq}",
              f"--steps={args.steps}"]
    rows = [run_json("memory.py", *common, f"--variant={v}", python=sys.executable)
            for v in ("plain", "remat")]
    from albert_tf import accounting
    from albert_tf.config import AlbertConfig

    cost = accounting.total(accounting.component_costs(AlbertConfig.preset(args.preset), args.seq))
    plain, remat = rows
    summary = {"preset": args.preset, "batch": args.batch, "seq": args.seq,
               "memory_ratio": round(plain["peak_rss_gib"] / remat["peak_rss_gib"], 2),
               "time_ratio": round(remat["step_seconds"] / plain["step_seconds"], 2),
               "activation_estimate_gib_bf16": round(
                   cost.activation_elements * 2 * args.batch / 2**30, 2)}
    print(table(rows, list(rows[0])))
    print(summary)
    emit({"memory": rows, **summary})


if __name__ == "__main__":
    main()
