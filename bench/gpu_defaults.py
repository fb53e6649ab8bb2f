"""On a GPU (e.g. Colab): are albert_tf's default precision and XLA the fastest there?

    python bench/gpu_defaults.py [--batch=32] [--seq=128]

Measures albert-base training and forward throughput for every precision x
XLA combination, each in its own process, and marks the one `--precision=auto
--xla=auto` picks on this device. The defaults are right when that row is the
fastest (or within noise of it).
"""

import argparse

from common import emit, run_json, table


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    common = [f"--batch={args.batch}", f"--seq={args.seq}", f"--steps={args.steps}"]
    chosen = run_json("train_speed.py", "--impl=albert_tf", *common)
    rows = []
    for precision in ("fp32", "bf16", "fp16"):
        for xla in ("off", "on"):
            row = run_json("train_speed.py", "--impl=albert_tf", f"--precision={precision}",
                           f"--xla={xla}", *common)
            row["default"] = "<- auto" if (row["policy"], row["xla"]) == (
                chosen["policy"], chosen["xla"]) else ""
            rows.append({k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()})
    print(table(rows, ["policy", "xla", "train", "forward", "default"]))
    fastest = max(rows, key=lambda r: r["train"])
    emit({"gpu_defaults": rows, "auto": [chosen["policy"], chosen["xla"]],
          "fastest_train": [fastest["policy"], fastest["xla"]]})


if __name__ == "__main__":
    main()
