"""Measured time of a forward pass and of a training step, per sharing mode.

The resource report (`albert_tf.accounting`) counts FLOPs, which sharing does
not change; what a step costs on a given machine may still differ between
sharing modes: a shared block runs in a `tf.while_loop` (see
`albert_tf.layers.layer_loop`), unshared layers as straight-line code, and the
optimizer updates as many weights as are stored. So each mode is timed here,
at the same shapes, on this machine.

Method: every mode's backbone is built, its forward pass and its training
step compiled as `tf.function`s and run `warmup` times untimed (tracing,
compilation, memory pools); then `repeats` rounds time one call of each
mode in turn (interleaved, so that a machine's changing load is shared
fairly), each up to a scalar read back from the device (so the time covers
the whole computation). Reported: medians and the interquartile range.
The training step is the backbone's forward pass, the gradient of the mean
square error of both outputs to random targets (every weight gets one) and
an Adam update; pretraining heads are not timed. Inputs are random ids, no
padding. All modes are in memory at once: for the largest models, measure
one mode at a time (`--sharing`).
"""

import dataclasses
import gc
import os
import platform
import time

import numpy as np


@dataclasses.dataclass(frozen=True)
class Timing:
    """Seconds per call of one model's forward pass and training step."""

    sharing: str
    forward: tuple
    train: tuple

    @staticmethod
    def median(times):
        return float(np.median(times))

    @staticmethod
    def spread(times):
        """Interquartile range relative to the median."""
        p25, p50, p75 = np.percentile(times, [25, 50, 75])
        return float((p75 - p25) / p50)


def time_interleaved(steps, warmup, repeats):
    """Seconds of each of `repeats` calls of every step in `steps`, after `warmup`
    untimed ones: one call of each step in turn, so that a change in the
    machine's load while they run (other processes, clock speed) reaches every
    step alike instead of whichever ran at the time."""
    for step in steps:
        for _ in range(warmup):
            step()
    times = [[] for _ in steps]
    for _ in range(repeats):
        for step, out in zip(steps, times):
            start = time.perf_counter()
            step()
            out.append(time.perf_counter() - start)
    return [tuple(t) for t in times]


def random_inputs(config, batch_size, seq_length, seed=0):
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(0, config.vocabulary_size, (batch_size, seq_length), np.int32)
    segment_ids = (np.arange(seq_length)[None] >= seq_length // 2).astype(np.int32)
    return {"token_ids": token_ids,
            "segment_ids": np.repeat(segment_ids, batch_size, axis=0),
            "padding_mask": np.ones((batch_size, seq_length), np.int32)}


def resolve_jit(xla):
    """Whether to compile with XLA: "on", "off", or "auto" (on where there is a GPU,
    as training's `--xla=auto` does)."""
    import tensorflow as tf

    if xla == "auto":
        return bool(tf.config.list_physical_devices("GPU"))
    return xla == "on"


def _steps(model, inputs, jit_compile):
    """(forward, train): functions running one step and returning a float."""
    import keras
    import tensorflow as tf

    variables = model.trainable_variables
    optimizer = keras.optimizers.Adam(learning_rate=1e-6)
    optimizer.build(variables)

    # Random targets: the square of a LayerNorm output alone would be nearly
    # constant, with gradients of rounding noise.
    batch, seq = inputs["token_ids"].shape
    rng = np.random.default_rng(1)
    targets = {"sequence_output": rng.normal(size=(batch, seq, model.config.hidden_dim)),
               "pooled_output": rng.normal(size=(batch, model.config.hidden_dim))}
    targets = {k: tf.constant(v, tf.float32) for k, v in targets.items()}

    def loss_of(outputs):
        return sum(tf.reduce_mean(tf.square(tf.cast(outputs[k], tf.float32) - targets[k]))
                   for k in targets)

    @tf.function(jit_compile=jit_compile)
    def forward():
        return loss_of(model(inputs, training=False))

    @tf.function(jit_compile=jit_compile)
    def train():
        with tf.GradientTape() as tape:
            loss = loss_of(model(inputs, training=True))
        optimizer.apply(tape.gradient(loss, variables), variables)
        return loss

    # Reading the scalar back waits for the device to finish the step.
    return (lambda: float(forward())), (lambda: float(train()))


def measure_configs(configs, batch_size, seq_length, warmup=3, repeats=10, dtype=None,
                    jit_compile=False):
    """The `Timing`s of the backbones of `configs` (`AlbertConfig`s) at
    `(batch_size, seq_length)`: all built at once (their weights and optimizer
    states in memory together), timed interleaved (`time_interleaved`)."""
    import keras
    import tensorflow as tf

    from albert_tf.backbone import AlbertBackbone

    keras.utils.set_random_seed(0)
    steps = []
    for config in configs:
        model = AlbertBackbone(config, dtype=dtype)
        inputs = {k: tf.constant(v)
                  for k, v in random_inputs(config, batch_size, seq_length).items()}
        steps.append(_steps(model, inputs, jit_compile))
    forward = time_interleaved([f for f, _ in steps], warmup, repeats)
    train = time_interleaved([t for _, t in steps], warmup, repeats)
    del steps
    keras.backend.clear_session()
    gc.collect()
    return [Timing(c.sharing, f, t) for c, f, t in zip(configs, forward, train)]


def machine_description():
    """The device the steps ran on, in words."""
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        names = [tf.config.experimental.get_device_details(g).get("device_name", g.name)
                 for g in gpus]
        return f"GPU {names[0]}" + (f" (1 of {len(gpus)} used)" if len(gpus) > 1 else "")
    cpu = platform.processor() or platform.machine()
    return f"CPU {cpu}, {os.cpu_count()} cores"


def report(timings, flops_per_token, batch_size, seq_length, warmup, repeats, setup):
    """The measurements as text, one column per sharing mode, beside the computed FLOPs.

    timings: `Timing`s, one of them with sharing "none" (the baseline of the ratios);
    flops_per_token: the computed forward FLOPs per token, in the same order;
    setup: words naming the machine, dtype and compilation.
    """
    baseline = next(t for t in timings if t.sharing == "none")
    tokens = batch_size * seq_length
    rows = []
    for what, times_of, factor in (("Forward", lambda t: t.forward, 1),
                                   ("Training step", lambda t: t.train, 3)):
        base = Timing.median(times_of(baseline))
        rows += [
            (f"{what} ms (median)", [f"{1e3 * Timing.median(times_of(t)):,.2f}" for t in timings]),
            (f"{what}, relative to none", [f"{Timing.median(times_of(t)) / base:.3f}x"
                                           for t in timings]),
            (f"{what} spread (IQR / median)", [f"{100 * Timing.spread(times_of(t)):.1f}%"
                                               for t in timings]),
            (f"{what} tokens per second", [f"{tokens / Timing.median(times_of(t)):,.0f}"
                                           for t in timings]),
            (f"{what} GFLOP/s achieved (computed FLOPs)",
             [f"{factor * f * tokens / Timing.median(times_of(t)) / 1e9:,.2f}"
              for t, f in zip(timings, flops_per_token)]),
        ]
    rows.append(("Forward FLOPs per token (computed)", [f"{f / 1e6:,.2f}M"
                                                        for f in flops_per_token]))
    width = max(len(label) for label, _ in rows) + 2
    lines = [f"Measured on this machine: {setup}; batch {batch_size} x seq_length {seq_length} "
             f"= {tokens:,} tokens per step; median of {repeats} after {warmup} warm-up calls",
             " " * width + "".join(f"{t.sharing:>16}" for t in timings)]
    lines += [f"{label:<{width}}" + "".join(f"{v:>16}" for v in values) for label, values in rows]
    lines.append("The FLOPs are the same in every mode: a ratio away from 1 by more than the "
                 "spread is how this machine runs them (a loop over a shared block, or straight-"
                 "line layers; more or fewer stored weights to update and to read).")
    return "\n".join(lines)
