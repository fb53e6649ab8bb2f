"""Helpers shared by the benchmarks: timing, subprocess runs, result tables.

Benchmarks run each measured program in its own subprocess (one framework
per process, nothing else running in it) and compare them within one
invocation, so that the ratios they print are measured side by side.
"""

import json
import os
import platform
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH_PYTHON = os.environ.get("ALBERT_TF_BENCH_PYTHON", sys.executable)


def timed(function, steps, warmup=2):
    """Seconds per call of `function()` over `steps` calls after `warmup` calls."""
    for _ in range(warmup):
        function()
    start = time.perf_counter()
    for _ in range(steps):
        function()
    return (time.perf_counter() - start) / steps


def run_json(script, *args, python=None, timeout=3600):
    """Runs `python bench/<script> args...` and returns the JSON it prints last."""
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([python or BENCH_PYTHON, os.path.join(ROOT, "bench", script), *args],
                            capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    lines = [l for l in result.stdout.splitlines() if l.startswith("{")]
    if result.returncode != 0 or not lines:
        killed = " (killed by signal 9: out of memory?)" if result.returncode == -9 else ""
        raise RuntimeError(f"{script} {' '.join(args)} failed{killed}:\n"
                           f"{result.stderr[-3000:]}")
    return json.loads(lines[-1])


def keras_hub_albert_base_classifier(num_classes=2):
    """keras-hub's `AlbertTextClassifier` on an albert-base-sized backbone (random
    weights, no preprocessor), the peer model of the benchmarks."""
    import keras_hub as kh

    backbone = kh.models.AlbertBackbone(
        vocabulary_size=30000, num_layers=12, num_heads=12, num_groups=1,
        num_inner_repetitions=1, embedding_dim=128, hidden_dim=768, intermediate_dim=3072,
        max_sequence_length=512)
    return kh.models.AlbertTextClassifier(backbone=backbone, num_classes=num_classes,
                                          preprocessor=None)


def emit(values):
    """Prints the result line `run_json` reads."""
    print(json.dumps(values), flush=True)


def machine():
    """A one-line description of this machine and the versions measured."""
    import importlib.metadata as md

    versions = []
    for name in ("tensorflow", "keras", "keras-hub", "torch", "transformers"):
        try:
            versions.append(f"{name} {md.version(name)}")
        except md.PackageNotFoundError:
            pass
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} CPUs; Python {platform.python_version()}; " + \
        ", ".join(versions)


def table(rows, columns):
    """Text table of dict rows."""
    widths = [max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, widths))
    out = [line, "-" * len(line)]
    for r in rows:
        out.append("  ".join(str(r.get(c, "")).ljust(w) for c, w in zip(columns, widths)))
    return "\n".join(out)
