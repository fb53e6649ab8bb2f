"""How long the training commands take to say a settings error and to print
their help: the CPU time and wall time of each case, measured interleaved,
for this tree and, with --baseline_tree, another checkout side by side.

    python bench/start_time.py [--baseline_tree=../main] [--repeats=3]

Each case runs `python -m albert_tf.<command> ...` in a fresh process with
the tree first on PYTHONPATH. CPU time (user + system, of the child) is the
figure to compare on a shared machine; wall time is what a user waits.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

CASES = {
    "finetune error": ("albert_tf.finetune", "--task=rte", "--learning_rate=-1",
                       "--output_dir=/tmp/albert_tf_start_time"),
    "finetune --help": ("albert_tf.finetune", "--help"),
    "distill --help": ("albert_tf.distill", "--help"),
    "search --help": ("albert_tf.search", "--help"),
}


def measure(tree, args):
    """(cpu seconds, wall seconds) of one run of `args` with `tree` on PYTHONPATH."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree), TF_CPP_MIN_LOG_LEVEL="2")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", *args], cwd=tree, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", default=os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    parser.add_argument("--baseline_tree", default=None)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    trees = {"this": args.tree, **({"baseline": args.baseline_tree}
                                   if args.baseline_tree else {})}
    times = {(tree, case): [] for tree in trees for case in CASES}
    for _ in range(args.repeats):
        for case, command in CASES.items():  # interleaved: every tree in each round
            for tree, path in trees.items():
                times[tree, case].append(measure(path, command))
    print(f"{'case':<18} {'tree':<9} {'cpu s (median)':>15} {'wall s (median)':>16}")
    for case in CASES:
        for tree in trees:
            cpu = statistics.median(c for c, _ in times[tree, case])
            wall = statistics.median(w for _, w in times[tree, case])
            print(f"{case:<18} {tree:<9} {cpu:>15.2f} {wall:>16.2f}")
        if "baseline" in trees:
            ratio = (statistics.median(c for c, _ in times["baseline", case])
                     / max(statistics.median(c for c, _ in times["this", case]), 1e-9))
            print(f"{'':<18} baseline / this CPU: {ratio:.1f}x")


if __name__ == "__main__":
    main()
