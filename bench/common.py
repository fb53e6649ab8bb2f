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


def timed(function, steps, warmup=2, cpu=None):
    """Seconds per call of `function()` over `steps` calls after `warmup` calls.

    cpu: a list to which this process's CPU seconds per call are appended (on
    a shared machine wall time depends on the neighbours' load, CPU time less).
    """
    for _ in range(warmup):
        function()
    start, start_cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        function()
    if cpu is not None:
        cpu.append((time.process_time() - start_cpu) / steps)
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


# albert-base's shape, and a smaller one (a quarter of the FLOPs per token) for
# quick side-by-side comparisons on a busy machine.
SIZES = {
    "base": dict(vocabulary_size=30000, num_layers=12, num_heads=12, hidden_dim=768,
                 intermediate_dim=3072, embedding_dim=128, max_sequence_length=512),
    "small": dict(vocabulary_size=30000, num_layers=12, num_heads=6, hidden_dim=384,
                  intermediate_dim=1536, embedding_dim=128, max_sequence_length=512),
}


def keras_hub_albert_base_classifier(num_classes=2, size="base"):
    """keras-hub's `AlbertTextClassifier` on an albert-base-sized backbone (or
    `SIZES[size]`; random weights, no preprocessor), the peer model of the benchmarks."""
    import keras_hub as kh

    backbone = kh.models.AlbertBackbone(num_groups=1, num_inner_repetitions=1, **SIZES[size])
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


def fma_peak():
    """This host's vector FMA peaks from the CPU's own description, and the
    assumptions they rest on: cores x FMA pipes x lanes x 2 FLOPs x clock.

    cores: the physical cores this process may run on (its CPUs over the
    threads per core that /proc/cpuinfo lists); lanes: float32 lanes of the
    widest vector FMA in the CPU flags (16 with avx512f, 8 with avx2 and fma,
    4 else), capped by ONEDNN_MAX_CPU_ISA when that limits the kernels to
    AVX2; AMD's Zen 4 (family 25) runs AVX-512 on 256-bit pipes, counted as
    8 lanes, Zen 5 (family 26 and later) on 512-bit ones; pipes: 2 (Intel's
    server cores and AMD Zen have two FMA pipes); clock: the highest of
    cpufreq's maximum and /proc/cpuinfo's "cpu MHz" (turbo above it is not
    counted). bfloat16: twice the float32 peak where the CPU has avx512_bf16
    (its dot product does two bfloat16 products per float32 lane), else the
    float32 peak (bfloat16 is converted to float32). Matrix units (AMX) are
    not counted: their peak is far above these.

    Returns {"fma_peak_gflops": float32 peak, "bf16_peak_gflops": ...,
    "assumptions": "..."}.
    """
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if ":" in line:
                    key, value = (p.strip() for p in line.split(":", 1))
                    info.setdefault(key, value)
    except OSError:
        pass
    flags = set(info.get("flags", "").split())
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    siblings, cores_per_socket = int(info.get("siblings", 1)), int(info.get("cpu cores", 1))
    threads_per_core = max(1, siblings // max(1, cores_per_socket))
    cores = max(1, cpus // threads_per_core)
    amd = "AMD" in info.get("vendor_id", "") + info.get("model name", "")
    family = int(info.get("cpu family", 0) or 0)
    isa_cap = os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper()
    capped = isa_cap.startswith("AVX2")
    if "avx512f" in flags and not capped and not (amd and family < 26):
        lanes, isa = 16, "avx512f"
    elif "avx2" in flags and "fma" in flags:
        lanes, isa = 8, "avx2+fma" + (f" (ONEDNN_MAX_CPU_ISA={isa_cap})" if isa_cap else "")
    else:
        lanes, isa = 4, "sse"
    mhz = float(info.get("cpu MHz", 0) or 0)
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq") as f:
            mhz = max(mhz, int(f.read()) / 1000)
    except (OSError, ValueError):
        pass
    pipes = 2
    gflops = cores * pipes * lanes * 2 * mhz / 1000
    bf16_dot = "avx512_bf16" in flags and not capped
    return {"fma_peak_gflops": round(gflops, 1),
            "bf16_peak_gflops": round(gflops * (2 if bf16_dot else 1), 1),
            "assumptions": f"{cores} cores x {pipes} FMA pipes (assumed) x {lanes} float32 "
                           f"lanes ({isa}{f', AMD family {family}' if amd else ''}) x 2 FLOPs "
                           f"x {mhz / 1000:.2f} GHz (cpu MHz/cpufreq; no turbo); bfloat16 "
                           f"{'2x (avx512_bf16)' if bf16_dot else '1x'}; AMX not counted"}
