"""Peak memory of a training step, with and without activation recomputation.

    python bench/memory.py [--preset=albert_xxlarge] [--batches=1,2,3] [--seq=512]
        [--precision=auto|fp32|bf16|fp16]

Each variant runs in its own process (peak resident memory is per process):
a classifier on the preset's configuration (random weights), trained for a
step after a warm-up step under `--precision` (`finetune`'s choices; auto:
what a run would pick here), with and without recomputation, at each batch
size; prints peak RSS and step time, their ratios, and the analytical
activation estimate of `albert_tf.accounting`.
A child killed by the out-of-memory killer is reported as such.
"""

import argparse
import resource
import sys

from albert_tf.training.settings import PRECISIONS
from common import emit, run_json, table, timed


def measure(preset, batch, seq, recompute, steps, precision):
    import numpy as np
    import tensorflow as tf

    from albert_tf.backbone import AlbertBackbone
    from albert_tf.config import AlbertConfig
    from albert_tf.models import AlbertClassifier
    from albert_tf.training.devices import make_strategy, resolve_precision
    from albert_tf.training.optimizers import create_optimizer

    policy, jit = resolve_precision(precision, "auto", make_strategy("one_device"))
    config = AlbertConfig.preset(preset)
    model = AlbertClassifier(AlbertBackbone(config, dtype=policy, recompute=recompute), 2)
    model.compile(optimizer=create_optimizer("adamw", 1e-5, 1000, 10), jit_compile=jit)
    tokens = np.random.default_rng(0).integers(5, 30000, (batch, seq)).astype("int32")
    x = {"token_ids": tokens, "segment_ids": 0 * tokens, "padding_mask": 1 + 0 * tokens}
    iterator = iter(tf.data.Dataset.from_tensors((x, {"label": np.zeros(batch, "int32")}))
                    .repeat())
    model.make_train_function()
    seconds = timed(lambda: model.train_function(iterator)["loss"].numpy(), steps, warmup=1)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    return {"recompute": recompute, "policy": policy, "peak_rss_gib": round(peak, 2),
            "step_seconds": round(seconds, 2)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="albert_xxlarge")
    # Batch 4 without recomputation needs more than this 24 GiB machine has.
    parser.add_argument("--batches", default="1,2,3", help="comma-separated batch sizes")
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--precision", default="auto", choices=PRECISIONS)
    parser.add_argument("--variant", choices=["recompute", "plain"])
    args = parser.parse_args()
    if args.variant:  # the child process
        emit({"batch": int(args.batches),
              **measure(args.preset, int(args.batches), args.seq, args.variant == "recompute",
                        args.steps, args.precision)})
        return
    rows, ratios = [], []
    for batch in [int(b) for b in args.batches.split(",")]:
        pair = [child(args, batch, variant) for variant in ("plain", "recompute")]
        rows += pair
        plain, recomputed = (r["peak_rss_gib"] for r in pair)
        if isinstance(plain, float) and isinstance(recomputed, float):
            ratios.append({"batch": batch, "memory_ratio": round(plain / recomputed, 2),
                           "time_ratio": round(pair[1]["step_seconds"] / pair[0]["step_seconds"],
                                               2)})
    from albert_tf import accounting
    from albert_tf.config import AlbertConfig

    cost = accounting.total(accounting.component_costs(AlbertConfig.preset(args.preset), args.seq))
    print(table(rows, list(rows[0])))
    print(table(ratios, ["batch", "memory_ratio", "time_ratio"]))
    emit({"memory": rows, "ratios": ratios, "preset": args.preset, "seq": args.seq,
          "activation_estimate_gib_bf16_per_example": round(
              cost.activation_elements * 2 / 2**30, 2)})


def child(args, batch, variant):
    """One variant's row; a child killed for memory is a row that says so."""
    try:
        return run_json("memory.py", f"--preset={args.preset}", f"--batches={batch}",
                        f"--seq={args.seq}", f"--steps={args.steps}",
                        f"--precision={args.precision}", f"--variant={variant}",
                        python=sys.executable)
    except RuntimeError as error:
        if "signal 9" not in str(error):
            raise
        return {"batch": batch, "recompute": variant == "recompute",
                "peak_rss_gib": "killed (OOM)",
                "step_seconds": ""}


if __name__ == "__main__":
    main()
