"""The precisions an export's SavedModel computes in.

The SavedModel computes in float32, or in bfloat16 where that is faster.

bfloat16 is chosen the way training's `--precision=auto` chooses it
(`albert_tf.training.devices.resolve_precision`): on a GPU of compute
capability 8.0 or more, or a TPU; on a CPU only when a bfloat16 matrix
product, timed here, beats float32 by `BF16_MIN_SPEEDUP` (CPUs with the same
instruction flags ran bfloat16 at twice or at half the float32 speed). The
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
