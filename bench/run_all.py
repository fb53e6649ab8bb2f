"""Every benchmark of albert_tf against its peers, in one run, as a table of ratios.

    make bench        # sets up .venv-bench (requirements + bench/requirements-bench.txt)
    python bench/run_all.py [--glue_dir=../shared/data/glue] [--skip=glue,memory]
        [--rounds=3] [--size=small] [--impls=albert_tf,keras_hub_xla,albert_tf_xla_loop]

Each measurement runs in its own process, one after the other, on the
same machine in the same session: the ratios compare like with like. Each
training row reports its model arithmetic (GFLOP/s, from
`albert_tf.accounting`) as a fraction of the matmul benchmark and of the
host's FMA peak (`common.fma_peak`, its assumptions printed), each in the
row's precision (bfloat16 rows against the bfloat16 figures).
"""

import argparse
import json
import os

from albert_tf import accounting
from albert_tf.config import AlbertConfig
from common import ROOT, SIZES, fma_peak, machine, run_json, table

TRAIN_IMPLS = ("albert_tf", "albert_tf_fp32", "keras_hub", "keras_hub_xla", "keras_hub_bf16",
               "keras_hub_bf16_xla", "torch_fp32", "torch_bf16")
# albert_tf with each execution fixed (--impls=...), to see what `auto` chose between.
ALBERT_TF_VARIANTS = {
    "albert_tf_loop": ["--impl=albert_tf", "--xla=off", "--layer_execution=loop"],
    "albert_tf_unrolled": ["--impl=albert_tf", "--xla=off", "--layer_execution=unrolled"],
    "albert_tf_xla_loop": ["--impl=albert_tf", "--xla=on", "--layer_execution=loop"],
    "albert_tf_xla_unrolled": ["--impl=albert_tf", "--xla=on", "--layer_execution=unrolled"],
}


def _median_row(rows):
    rows = sorted(rows, key=lambda r: r["train"])
    row = dict(rows[len(rows) // 2])
    row["forward"] = sorted(r["forward"] for r in rows)[len(rows) // 2]
    row["train_range"] = f"{rows[0]['train']:.2f}-{rows[-1]['train']:.2f}"
    return row


def _is_bf16(row):
    return "bf16" in row["policy"] or "bfloat16" in row["policy"]


def _matmul_gflops(row, peak):
    """The matmul benchmark's GFLOP/s in `row`'s precision (bfloat16 rows: the bfloat16 figure)."""
    return peak["bfloat16_gflops" if _is_bf16(row) else "float32_gflops"]


def _ceiling(albert_tf, best_peer, peak, flops):
    """A line: albert_tf's training examples/s if its whole step ran at the
    matmul benchmark's rate (`flops` per example, in its row's precision), as
    a ratio to the best peer: the most its row can show against that peer
    unless a step outruns TensorFlow's own best single product."""
    gflops = _matmul_gflops(albert_tf, peak)
    if not gflops:
        return "ceiling: no matmul benchmark figure"
    examples = gflops * 1e9 / flops
    return (f"ceiling: albert_tf's step at the matmul benchmark's {gflops} GFLOP/s would "
            f"train {examples:.2f} examples/s, {examples / best_peer['train']:.2f}x "
            f"{best_peer['impl']} (measured: {albert_tf['train'] / best_peer['train']:.2f}x)")


def train_speed(args):
    impls = args.impls.split(",") if args.impls else list(TRAIN_IMPLS)
    shape = [f"--steps={args.steps}", f"--size={args.size}", f"--batch={args.batch}",
             f"--seq={args.seq}"]
    runs = {impl: ALBERT_TF_VARIANTS.get(impl, [f"--impl={impl}"]) for impl in impls}
    # Rounds of every implementation in turn (A B C A B C ...): a busy machine's
    # load drifts, and each implementation meets all of it; the median round counts.
    measured = {impl: [] for impl in impls}
    for _ in range(args.rounds):
        for impl, extra in runs.items():
            measured[impl].append(run_json("train_speed.py", *extra, f"--label={impl}", *shape))
            print(json.dumps(measured[impl][-1]), flush=True)
    rows = [_median_row(measured[impl]) for impl in impls]
    by = {r["impl"]: r for r in rows}
    peak = run_json("matmul_peak.py")
    fma = fma_peak()
    config = AlbertConfig(**SIZES[args.size])
    flops = 3 * accounting.total(accounting.component_costs(
        config, args.seq)).flops_per_token * args.seq
    # albert_tf's classifier computes its last layer at [CLS] only: fewer FLOPs.
    albert_tf_flops = flops - 3 * accounting.first_only_saving(config, args.seq) * args.seq
    peers = [r for r in rows if not r["impl"].startswith("albert_tf")]
    best_peer = max(peers, key=lambda r: r["train"]) if peers else None
    best_forward = max(peers, key=lambda r: r["forward"]) if peers else None
    for r in rows:
        gflops = r["train"] * (albert_tf_flops if r["impl"].startswith("albert_tf") else flops) / 1e9
        if "keras_hub" in by:
            r["train_vs_keras_hub"] = round(r["train"] / by["keras_hub"]["train"], 2)
        if best_peer:
            r["train_vs_best_peer"] = round(r["train"] / best_peer["train"], 2)
            r["forward_vs_best_peer"] = round(r["forward"] / best_forward["forward"], 2)
        r["train_gflops"] = round(gflops, 1)
        matmul = _matmul_gflops(r, peak)
        r["matmul_fraction"] = round(gflops / matmul, 2) if matmul else ""
        r["fma_peak_fraction"] = round(
            gflops / fma["bf16_peak_gflops" if _is_bf16(r) else "fma_peak_gflops"], 2)
        r["train"], r["forward"] = round(r["train"], 2), round(r["forward"], 2)
    print(f"shape: size={args.size}, batch {args.batch}, length {args.seq}, {args.steps} steps, "
          f"median of {args.rounds} interleaved round(s); {flops / 1e9:.1f} GFLOP per training "
          f"example ({albert_tf_flops / 1e9:.1f} for albert_tf, whose classifier computes the last "
          "layer at [CLS] only; train_gflops counts each row's own)")
    print(f"matmul benchmark (GFLOP/s): {peak}")
    print(f"FMA peak: {fma['fma_peak_gflops']} GFLOP/s float32, {fma['bf16_peak_gflops']} "
          f"bfloat16 = {fma['assumptions']}")
    if any(r["fma_peak_fraction"] > 1 for r in rows):
        print("  (a fma_peak_fraction above 1: the cores ran faster than the clock listed, "
              "e.g. a virtual machine's nominal clock under turbo; the matmul fraction holds)")
    if best_peer:
        print(f"best peer: {best_peer['impl']} (training), {best_forward['impl']} (forward)")
    if best_peer and "albert_tf" in by:
        print(_ceiling(by["albert_tf"], best_peer, peak, albert_tf_flops))
    for r in rows:
        r.setdefault("forward_xla", r["xla"])  # peers compile both alike
    print(table(rows, ["impl", "policy", "xla", "layers", "train", "train_range", "forward_xla",
                       "forward", "train_vs_keras_hub", "train_vs_best_peer", "forward_vs_best_peer",
                       "train_gflops", "matmul_fraction", "fma_peak_fraction"]))
    return {"train_speed": rows, "matmul_peak": peak, "fma_peak": fma,
            "best_peer": best_peer and best_peer["impl"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--glue_dir", default=os.path.join(ROOT, "..", "shared", "data", "glue"))
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=1,
                        help="interleaved rounds of the training benchmark (median reported)")
    parser.add_argument("--impls", default="",
                        help=f"comma-separated training rows (default: {','.join(TRAIN_IMPLS)}; "
                        f"also {','.join(ALBERT_TF_VARIANTS)})")
    parser.add_argument("--size", default="base", choices=sorted(SIZES))
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
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
