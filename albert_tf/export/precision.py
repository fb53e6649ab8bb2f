"""The precisions an export's SavedModel computes in.

The SavedModel computes in float32, or in bfloat16 where that is faster.

With `auto`, on hardware with bfloat16 instructions (a GPU of compute
capability 8.0 or more; a CPU with AMX or AVX512-BF16), both candidates of
the export itself are timed: the `serving_default` function of the float32
and of the bfloat16 module (the graphs the SavedModel holds), on texts of the
model's length at batch 1 and 8, interleaved, best of `TIMED_CALLS`; bfloat16
is kept only when it beats float32 by `BF16_MIN_SPEEDUP` at both. (A single
bfloat16 matrix product, training's yardstick, ran 1.95x float32's on a CPU
whose bfloat16 SavedModel then answered slower than its float32 one: the
tokenizer, the casts and small batches are part of an export's time.) The
machine that exports is taken to be the serving hardware; where it is not,
ask for `fp32` or `bf16` explicitly. Weights stay float32 in the SavedModel
(Keras' mixed policy casts them as each layer runs); the task heads cast
their outputs to float32, so the signatures keep their dtypes.
"""

import contextlib

# Names only at the top: the export's settings are checked against them
# before TensorFlow starts. (The TFLite variants are export formats:
# `albert_tf.export.formats`.)
PRECISIONS = ("auto", "fp32", "bf16")
POLICY = {"fp32": "float32", "bf16": "mixed_bfloat16"}


def check(requested):
    """Rejects an unknown precision name (a one-line `ValueError`)."""
    if requested not in PRECISIONS:
        raise ValueError(f"--precision: unknown precision {requested!r}; choose one of "
                         f"{', '.join(PRECISIONS)}")


def choose(requested="auto"):
    """The export's compute precision and why: a JSON-able dict.

    `{"compute": "fp32"|"bf16", "requested": requested, "reason": ...}`, and
    on a CPU, `"cpu_bf16_speedup"`: float32 time / bfloat16 time of the
    product training's choice times (0.0: no bfloat16 instructions).
    """
    import tensorflow as tf

    from albert_tf.training import devices

    check(requested)
    if requested != "auto":
        return {"compute": requested, "requested": requested, "reason": "requested"}
    # Training's own rule; float16 (its choice on older GPUs) is not offered for
    # serving: without loss scaling it is not needed, and it overflows where bf16 does not.
    policy, _ = devices.resolve_precision("auto", "off", strategy=None)
    compute = "bf16" if policy == devices.POLICY["bf16"] else "fp32"
    record = {"compute": compute, "requested": requested}
    if not tf.config.list_physical_devices("GPU"):  # the CPU rule: a measurement
        speedup = devices.cpu_bf16_speedup()
        record["cpu_bf16_speedup"] = round(speedup, 3)
        record["reason"] = (f"CPU bfloat16 product {speedup:.2f}x float32's (bf16 needs >= "
                            f"{devices.BF16_MIN_SPEEDUP}x)" if speedup else
                            "CPU without bfloat16 matrix instructions")
    else:
        record["reason"] = "GPU " + ("with" if compute == "bf16" else "without") + \
            " fast bfloat16 (compute capability >= 8.0)"
    return record


TIMED_CALLS = 5
TIMED_BATCHES = (1, 8)
# What the texts of a timing call are made of (repeated to the model's length).
SAMPLE_WORDS = "the quick brown fox jumps over the lazy dog while it rains in Paris"


def needs_timing(record):
    """Whether `choose`'s `auto` record leaves the choice to timing the export:
    the hardware has bfloat16 instructions (else float32 without measuring)."""
    return record["requested"] == "auto" and (
        record["compute"] == "bf16" or record.get("cpu_bf16_speedup", 0.0) > 0.0)


def sample_inputs(function, max_seq_length, batch):
    """Texts for each input of a `serving_default` tf.function (its
    input_signature), `batch` rows of about `max_seq_length` words."""
    import tensorflow as tf

    text = " ".join([SAMPLE_WORDS] * max(1, max_seq_length // 12))
    return [tf.constant([text] * batch if spec.shape.rank == 1 else [[text, text]] * batch)
            for spec in function.input_signature]


def time_calls(calls, repeats=TIMED_CALLS):
    """`{name: best seconds}` of zero-argument `calls`, each called once first
    (tracing), then `repeats` rounds, the candidates interleaved (a busy
    machine slows them alike)."""
    import time

    for call in calls.values():
        call()
    best = {name: float("inf") for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def timed_choice(record, modules, max_seq_length):
    """`record` (`choose`'s) decided by timing `modules` ({"fp32": module,
    "bf16": module}, their `serving_default` functions)."""
    from albert_tf.training import devices

    timings = {}
    for batch in TIMED_BATCHES:
        calls = {}
        for compute, module in modules.items():
            function = module._functions["serving_default"]
            inputs = sample_inputs(function, max_seq_length, batch)
            calls[compute] = (lambda f, x: lambda: [v.numpy() for v in f(*x).values()])(
                function, inputs)
        timings[batch] = time_calls(calls)
    faster = all(t["fp32"] / t["bf16"] >= devices.BF16_MIN_SPEEDUP for t in timings.values())
    shown = "; ".join(f"batch {b}: fp32 {t['fp32'] * 1e3:.1f} ms, bf16 {t['bf16'] * 1e3:.1f} ms"
                      for b, t in timings.items())
    return {**record, "compute": "bf16" if faster else "fp32",
            "timings_ms": {str(b): {k: round(v * 1e3, 2) for k, v in t.items()}
                           for b, t in timings.items()},
            "reason": f"timed the export's serving_default ({shown}); bf16 needs >= "
                      f"{devices.BF16_MIN_SPEEDUP}x at every batch"}


@contextlib.contextmanager
def compute_in(compute):
    """Models built inside compute in `compute` ("fp32" or "bf16"): sets
    Keras' global dtype policy, which the backbone and heads take when
    built without their own, and puts the previous one back."""
    import keras

    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(POLICY[compute])
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)
