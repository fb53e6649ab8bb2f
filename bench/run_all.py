"""Every benchmark of albert_tf against its peers, in one run, as a table of ratios.

    make bench        # sets up .venv-bench (requirements + bench/requirements-bench.txt)
    python bench/run_all.py [--glue_dir=../shared/data/glue] [--skip=glue,memory]

Each measurement runs in its own process, one after the other, on the
same machine in the same session: the ratios compare like with like.
"""

import argparse
import os

from albert_tf import accounting
from albert_tf.config import AlbertConfig
from common import ROOT, machine, run_json, table

TRAIN_IMPLS = ("albert_tf", "albert_tf_fp32", "keras_hub", "keras_hub_xla", "keras_hub_bf16",
               "keras_hub_bf16_xla", "torch_fp32", "torch_bf16")


def train_speed(args):
    rows = [run_json("train_speed.py", f"--impl={impl}", f"--steps={args.steps}")
            for impl in TRAIN_IMPLS]
    by = {r["impl"]: r for r in rows}
    peak = run_json("matmul_peak.py")
    flops = 3 * accounting.total(accounting.component_costs(
        AlbertConfig.preset("albert_base"), 128)).flops_per_token * 128
    best_peer = max((r for r in rows if not r["impl"].startswith("albert_tf")),
                    key=lambda r: r["train"])
    for r in rows:
        bf16 = "bf16" in r["policy"]
        r["train_vs_keras_hub"] = round(r["train"] / by["keras_hub"]["train"], 2)
        r["train_vs_best_peer"] = round(r["train"] / best_peer["train"], 2)
        r["peak_fraction"] = round(r["train"] * flops / 1e9 / peak[
            "bfloat16_gflops" if bf16 else "float32_gflops"], 2)
        r["train"], r["forward"] = round(r["train"], 2), round(r["forward"], 2)
    print(f"matmul peak (GFLOP/s): {peak}; best peer: {best_peer['impl']}")
    print(table(rows, ["impl", "policy", "xla", "train", "forward", "train_vs_keras_hub",
                       "train_vs_best_peer", "peak_fraction"]))
    return {"train_speed": rows, "matmul_peak": peak, "best_peer": best_peer["impl"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--glue_dir", default=os.path.join(ROOT, "..", "shared", "data", "glue"))
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--skip", default="", help="comma-separated: train,glue,serving,memory")
    args = parser.parse_args()
    skip = set(args.skip.split(","))
    print(machine())
    results = {}
    if "train" not in skip:
        results.update(train_speed(args))
    if "glue" not in skip and os.path.isdir(os.path.join(args.glue_dir, "MRPC")):
        results["glue_epoch"] = run_json("glue_epoch.py",
                                         f"--data_dir={os.path.join(args.glue_dir, 'MRPC')}")
        print(table(results["glue_epoch"]["glue_epoch"],
                    list(results["glue_epoch"]["glue_epoch"][0])))
    if "serving" not in skip:
        mrpc = os.path.join(args.glue_dir, "MRPC")
        data = [f"--data_dir={mrpc}"] if os.path.isdir(mrpc) else []
        results["serving"] = run_json("serving_latency.py", *data)
        print(table(results["serving"]["serving"], list(results["serving"]["serving"][0])))
    if "memory" not in skip:
        results["memory"] = run_json("memory.py")
        print(table(results["memory"]["memory"], list(results["memory"]["memory"][0])))
        print(table(results["memory"]["ratios"], ["batch", "memory_ratio", "time_ratio"]))
    return results


if __name__ == "__main__":
    main()
