"""Where the execution probe's measurements are kept between processes.

The probe (`albert_tf.training.execution.measure`) takes half a minute to a
few minutes on a CPU, longer than many short runs train. Its results depend
on the host and the software, not on the run: they are kept in one JSON file,
`$ALBERT_TF_CACHE/execution_probes.json` (default ~/.cache/albert_tf, the
cache that downloaded checkpoints share), one entry per key of

    CPU model and instruction flags, TensorFlow version, device,
    the probe's model shape (`probe_config`), precision, candidates,
    the probe's batch shape

so that a second run on the same machine (fine-tuning, LoRA, distillation,
k-fold, pretraining alike) never measures again, and a new CPU, a TensorFlow
upgrade or another model shape measures anew. `ALBERT_TF_PROBES_FILE` names
another file instead (a search names one in its output folder).
"""

import dataclasses
import functools
import hashlib
import json
import os

from albert_tf.io_utils import atomic_file

PROBES_FILE_ENV = "ALBERT_TF_PROBES_FILE"
CACHE_FILE = "execution_probes.json"


def probes_file():
    """The file the measurements are kept in: `$ALBERT_TF_PROBES_FILE` if set,
    else `execution_probes.json` in `$ALBERT_TF_CACHE`."""
    from albert_tf.published import cache_dir

    return os.environ.get(PROBES_FILE_ENV) or os.path.join(cache_dir(), CACHE_FILE)


@functools.lru_cache(maxsize=None)
def host_key():
    """"<CPU model> | <sha1 of its flags> | TF <version>": what the probe's
    timings depend on besides the run's model and batch shape."""
    import tensorflow as tf

    model, flags = "unknown CPU", ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                name, _, value = line.partition(":")
                if name.strip() == "model name" and model == "unknown CPU":
                    model = value.strip()
                elif name.strip() in ("flags", "Features") and not flags:
                    flags = " ".join(sorted(value.split()))
    except OSError:
        pass
    digest = hashlib.sha1(flags.encode()).hexdigest()[:12]
    return f"{model} | flags {digest} | TF {tf.__version__}"


def probe_key(cut_config, policy, options, batch, length, device):
    """The JSON key of one probe on this host."""
    return json.dumps([host_key(), dataclasses.asdict(cut_config), policy,
                       [o.name for o in options], batch, length, device], sort_keys=True)


def read_probes(path):
    """The file's entries; {} when it is missing or unreadable (then measuring
    again is the remedy)."""
    try:
        with open(path, encoding="utf-8") as f:
            stored = json.load(f)
        return stored if isinstance(stored, dict) else {}
    except (OSError, ValueError):
        return {}


def store_probe(path, key, entry):
    """Adds `entry` under `key` (re-reading the file: another process may have
    added one meanwhile). A folder that cannot be written is not an error: the
    next run measures again."""
    stored = read_probes(path)
    stored[key] = entry
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with atomic_file(path, encoding="utf-8") as f:
            json.dump(stored, f, indent=1)
    except OSError:
        pass


# Building and tracing one of the probe's models (Keras' train function, XLA's
# compilation) costs seconds whatever its size: a fixed cost per call timed.
PROBE_SECONDS_PER_CALL = 8.0
# The share of a plain matrix product's speed that a training step reaches.
STEP_EFFICIENCY = 0.3


@functools.lru_cache(maxsize=None)
def host_gflops(device):
    """GFLOP/s of a float32 (512 x 768) @ (768 x 3072) product on `device`,
    best of five: the yardstick of `estimated_seconds` (about 0.1 s)."""
    import time

    import tensorflow as tf

    with tf.device(device):
        a = tf.random.stateless_normal((512, 768), (1, 2))
        b = tf.random.stateless_normal((768, 3072), (3, 4))
        best = float("inf")
        for i in range(7):
            start = time.perf_counter()
            tf.matmul(a, b).numpy()
            if i >= 2:  # the first calls pick and prepare kernels
                best = min(best, time.perf_counter() - start)
    return 2 * 512 * 768 * 3072 / best / 1e9


def estimated_seconds(train_gflop, probe_step_gflop, calls, probe_steps, gflops):
    """(training seconds, probe seconds), estimated: `train_gflop` of
    training steps, and `calls` probe calls of `probe_steps` steps each, at
    `STEP_EFFICIENCY` of `gflops`, plus `PROBE_SECONDS_PER_CALL` per call."""
    rate = gflops * STEP_EFFICIENCY
    return (train_gflop / rate,
            calls * (PROBE_SECONDS_PER_CALL + probe_steps * probe_step_gflop / rate))
