"""Distribution strategies, and precision/XLA defaults chosen per device.

Defaults come from measurements (bench/, README). CPUs differ: on some with
bfloat16 instructions (AMX, or AVX512-BF16 with fast oneDNN kernels) mixed
bfloat16 trained ALBERT about 2x faster than float32; on others with the same
instruction flags bfloat16 products ran at half the float32 speed. So on a CPU
the choice is measured: one bfloat16 and one float32 product of a feed-forward
shape, timed at startup (about 0.1 s). XLA made CPU training slower. On GPUs
with bfloat16 (compute capability >= 8.0) mixed bfloat16 with XLA is the usual
fastest setting, float16 with loss scaling on older GPUs.
"""

import functools
import os
import time

import tensorflow as tf

from albert_tf.training.settings import PRECISIONS, STRATEGIES, XLA_CHOICES

POLICY = {"fp32": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}


def precision_name(policy):
    """The `--precision` name of a Keras dtype policy name ("mixed_bfloat16" -> "bf16")."""
    return {v: k for k, v in POLICY.items()}[policy]


def make_strategy(name, tpu_address=""):
    """A `tf.distribute.Strategy` by name.

    auto: a TPU if `tpu_address` is given, all local GPUs (mirrored) if there
    are several, else the one GPU or the CPU. multi_worker reads the cluster
    from the `TF_CONFIG` environment variable.
    """
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r}; choose one of {STRATEGIES}")
    if name == "tpu" or (name == "auto" and tpu_address):
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu_address)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    if name == "multi_worker":
        if "TF_CONFIG" not in os.environ:
            raise ValueError("--strategy=multi_worker needs the TF_CONFIG environment variable "
                             "(cluster and task of this worker)")
        return tf.distribute.MultiWorkerMirroredStrategy()
    gpus = tf.config.list_logical_devices("GPU")
    if name == "mirrored" or (name == "auto" and len(gpus) > 1):
        devices = [d.name for d in gpus] or [d.name for d in tf.config.list_logical_devices("CPU")]
        return tf.distribute.MirroredStrategy(devices)
    return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")


# bfloat16 must beat float32 by this much to be chosen: it also rounds.
BF16_MIN_SPEEDUP = 1.25


def cpu_has_bf16():
    """Whether this CPU has bfloat16 matrix instructions (x86 AMX or AVX512-BF16)
    that oneDNN may use: `ONEDNN_MAX_CPU_ISA` (or `DNNL_MAX_CPU_ISA`) set to an
    instruction set without them (AVX2, AVX512_CORE, ...) leaves none."""
    if not onednn_allows_bf16():
        return False
    flags = _cpu_flags()
    return "amx_bf16" in flags or "avx512_bf16" in flags


def onednn_allows_bf16():
    """Whether oneDNN's ISA cap (`ONEDNN_MAX_CPU_ISA`, `DNNL_MAX_CPU_ISA`), if
    set, leaves bfloat16 instructions; under a lower one (AVX2, ...) oneDNN
    refuses bfloat16 products."""
    cap = (os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or
           "ALL").upper()
    return any(name in cap for name in ("ALL", "DEFAULT", "BF16", "FP16", "AMX", "AVX10"))


def _cpu_flags():
    """/proc/cpuinfo's text ("" where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


@functools.lru_cache(maxsize=None)
def cpu_bf16_speedup():
    """float32 time / bfloat16 time of a (1024 x 768) @ (768 x 3072) product on
    the CPU (ALBERT-base's feed-forward layer at batch 8, length 128), best of
    seven each, the two precisions interleaved (a neighbour's burst of load
    slows both, not one: timed one after the other, a burst once made this
    host's 2x read under 1.25x); 0.0 without bfloat16 instructions. Measured
    once per process, in about half a second."""
    if not cpu_has_bf16():
        return 0.0
    products = []
    with tf.device("/cpu:0"):
        for dtype in (tf.float32, tf.bfloat16):
            a = tf.cast(tf.random.stateless_normal((1024, 768), (1, 2)), dtype)
            b = tf.cast(tf.random.stateless_normal((768, 3072), (3, 4)), dtype)
            products.append((a, b))
        best = [float("inf")] * 2
        for i in range(9):
            for j, (a, b) in enumerate(products):
                start = time.perf_counter()
                tf.matmul(a, b).numpy()
                if i >= 2:  # the first calls pick and prepare kernels
                    best[j] = min(best[j], time.perf_counter() - start)
    return best[0] / best[1]


def _gpu_compute_capability():
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return None
    details = tf.config.experimental.get_device_details(gpus[0])
    return details.get("compute_capability", (0, 0))


def resolve_precision(precision, xla, strategy, measure=True):
    """(Keras dtype policy name, jit_compile) for the requested settings.

    precision: one of PRECISIONS; xla: "auto", "on" or "off".
    measure: whether `auto` may time bfloat16 on a CPU (else float32: a choice
        that no timing can change, for a deterministic run).
    """
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {PRECISIONS}")
    if xla not in XLA_CHOICES:
        raise ValueError(f"xla must be auto, on or off, got {xla!r}")
    on_tpu = isinstance(strategy, tf.distribute.TPUStrategy)
    capability = _gpu_compute_capability()
    if precision == "auto":
        if on_tpu or (capability and capability >= (8, 0)):
            precision = "bf16"
        elif capability:
            precision = "fp16"
        else:
            precision = ("bf16" if measure and cpu_bf16_speedup() >= BF16_MIN_SPEEDUP
                         else "fp32")
    if xla == "auto":
        # TPUs always compile; GPUs gain from fusion; on CPUs XLA slowed training.
        jit = on_tpu or capability is not None
    else:
        jit = xla == "on"
    return POLICY[precision], jit


def worker_index(strategy):
    """None for the chief (or a single-machine run), else this worker's index."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type or resolver.task_type == "chief":
        return None
    if resolver.task_type == "worker" and resolver.task_id == 0 and \
            "chief" not in resolver.cluster_spec().as_dict():
        return None
    return resolver.task_id


def is_chief(strategy_name):
    """Whether this process is the chief of a run with strategy `strategy_name`,
    without building the strategy: only a multi-worker run has other workers,
    told apart from the TF_CONFIG cluster that MultiWorkerMirroredStrategy reads."""
    if strategy_name != "multi_worker":
        return True
    import types

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    return worker_index(types.SimpleNamespace(cluster_resolver=resolver)) is None
