"""How a training step runs: precision, XLA and how the encoder's layers run.

`resolve_execution` turns the `--precision`, `--xla` and `--layer_execution`
settings into an `Execution`. Precision is chosen as
`albert_tf.training.devices.resolve_precision` does. Whether the step is
compiled with XLA and whether the shared layers run in a `tf.while_loop` or
unrolled depend on the CPU's instruction set and kernels, so where either is
`auto` they are measured: a short probe of the run's model (its own
configuration, each group cut to a few layers, its batch shape capped) is
trained a few steps in every candidate way, interleaved, and the fastest
wins if it beats the default (no XLA, loop; XLA on a GPU) by `MIN_GAIN`.
With `--xla=auto` the probe also times a forward pass with and without XLA:
evaluation and prediction are compiled apart from the training step, and
what is faster for one need not be for the other (an AVX2-only CPU: XLA's
forward pass 1.18x faster, the training step no faster; bfloat16 on an
AVX512-BF16 CPU: XLA's forward pass 0.5x). The probe takes half a minute
to a few minutes on a CPU, once per host and software: its results are kept
in `$ALBERT_TF_CACHE` (`albert_tf.training.probe_cache`, keyed by CPU model
and flags, TensorFlow version, model shape and precision), so a second run on
the machine, whatever its command, does not measure again. A run whose
training is estimated shorter than the probe would take takes the defaults and
says so. The run saves the training choice (its settings file) and a resumed
run reads it back (and, its `xla` then given, evaluates as it trains).

With `recompute` the layers stay in the loop, which is what makes
recomputation save memory, and so does a model whose unrolled backward pass
would hold gigabytes of extra gradients (xlarge, xxlarge). A step under
`MIN_MEASURED_STEP_GFLOP` (a tiny model) and a multi-worker run (whose
workers could measure apart) take the defaults. On a TPU the step is always
compiled.
"""

import dataclasses
import logging
import os
import time

from albert_tf.training import probe_cache
from albert_tf.training.devices import resolve_precision
from albert_tf.training.settings import LAYER_EXECUTIONS

log = logging.getLogger(__name__)

# A candidate must be this much faster per step than the default to be chosen:
# a shared machine's noise should not flip the choice.
MIN_GAIN = 0.05
# The probe: layers kept per group, and the largest batch shape it trains.
# Three: a classifier computes its last layer apart (`first_only`), so the
# loop of the probe's group still runs two layers (with two, the "loop"
# would be one layer called once, no loop, and the probe blind to it).
PROBE_LAYERS_PER_GROUP = 3
PROBE_MAX_BATCH = 4
PROBE_MAX_LENGTH = 128
PROBE_STEPS = 3
# The probe's results in this process, by what it measured: a run repeated in
# one process (`--seeds`, `--kfold`) takes the first one's measurements, so
# every repetition runs the same way, and no time goes to measuring again.
_MEASURED = {}
# The JSON file that keeps them across processes is `probe_cache.probes_file()`:
# the host's cache, or the file this variable names (a search's, for its trials).
PROBES_FILE_ENV = probe_cache.PROBES_FILE_ENV
# `auto` does not unroll a model whose unrolled backward pass would hold more
# than this in extra copies of shared weights' gradients (xlarge: 4.6 GB,
# xxlarge: 8.9 GB).
UNROLL_MAX_GRADIENT_BYTES = 2 * 2**30
# Smaller training steps (GFLOP, at the run's batch shape) take the defaults:
# the probe would cost more than the choice could save (tiny test models).
MIN_MEASURED_STEP_GFLOP = 10.0


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One way to run the step."""

    jit: bool
    unroll: bool

    @property
    def name(self):
        return f"XLA {_on(self.jit)}, layers {'unrolled' if self.unroll else 'loop'}"


@dataclasses.dataclass(frozen=True)
class Execution:
    """What `resolve_execution` decided.

    policy: the Keras dtype policy name; jit: XLA on; unroll: the encoder's
    layers unrolled (else in a loop).
    timings: `((candidate name, seconds per probe step), ...)` when measured.
    seconds: the time the measurement took (0 when nothing was measured).
    inference_jit: evaluation and prediction compiled with XLA (None: as `jit`).
    inference_timings: `(("XLA off", seconds per probe forward pass), ...)`
        when measured.
    reused: the measurements are an earlier run's (the same probe, in this
        process or the probes file), not taken again.
    note: why nothing was measured where `auto` could have been ("" else).
    """

    policy: str
    jit: bool
    unroll: bool
    timings: tuple = ()
    seconds: float = 0.0
    inference_jit: bool = None
    inference_timings: tuple = ()
    reused: bool = False
    note: str = ""

    def __post_init__(self):
        if self.inference_jit is None:
            object.__setattr__(self, "inference_jit", self.jit)

    @property
    def layer_execution(self):
        return "unrolled" if self.unroll else "loop"

    def describe(self):
        """One line: the choice, and the measurements it rests on."""
        line = (f"precision {self.policy}, XLA {_on(self.jit)}, layers "
                f"{self.layer_execution}")
        if self.inference_jit != self.jit:
            line += f", evaluation XLA {_on(self.inference_jit)}"
        return f"{line} {self.measurements() or self.note}".rstrip()

    def measurements(self):
        """"(measured in ... s, per probe step: ...; per probe forward pass: ...)",
        or "" when nothing was measured."""
        if not self.timings:
            return ""

        def listed(timings):
            return "; ".join(f"{name} {seconds * 1e3:.0f} ms" for name, seconds in timings)

        when = ("measured for an earlier run" if self.reused
                else f"measured in {self.seconds:.0f} s")
        line = f"({when}, per probe step: {listed(self.timings)}"
        if self.inference_timings:
            line += f"; per probe forward pass: {listed(self.inference_timings)}"
        return line + ")"


def _on(flag):
    return "on" if flag else "off"


def candidates(xla, layer_execution, recompute):
    """The ways to run the step that the settings leave open, the default first.

    xla: "auto", "on" or "off"; layer_execution: one of LAYER_EXECUTIONS;
    recompute: recomputation keeps the loop.
    """
    if layer_execution not in LAYER_EXECUTIONS:
        raise ValueError(f"layer_execution must be one of {LAYER_EXECUTIONS}, "
                         f"got {layer_execution!r}")
    if recompute and layer_execution == "unrolled":
        raise ValueError("--recompute runs the layers in a loop: it cannot be combined with "
                         "--layer_execution=unrolled")
    jits = (False, True) if xla == "auto" else (xla == "on",)
    unrolls = ((False,) if recompute or layer_execution == "loop" else
               (True,) if layer_execution == "unrolled" else (False, True))
    return [Candidate(jit, unroll) for jit in jits for unroll in unrolls]


def unrolled_gradient_bytes(config):
    """The float32 bytes of the shared weights' gradients that an unrolled
    backward pass makes beyond the loop's running sums: one per block call,
    less one per stored module (see `albert_tf.layers.layer_loop`)."""
    from albert_tf.sharing import sharing_plan

    plan = sharing_plan(config)
    h, i = config.hidden_dim, config.intermediate_dim
    attention, ffn = 4 * h * h + 6 * h, 2 * h * i + i + 3 * h  # kernels, biases, LayerNorm
    return 4 * ((plan.num_calls - plan.num_attention_modules) * attention
                + (plan.num_calls - plan.num_ffn_modules) * ffn)


def step_gflop(config, batch_size, seq_length):
    """A training step's model arithmetic in GFLOP (3x the forward pass,
    `albert_tf.accounting`)."""
    from albert_tf import accounting

    forward = accounting.total(accounting.component_costs(config, seq_length)).flops_per_token
    return 3 * forward * batch_size * seq_length / 1e9


def _measurements(measure_fn, config, policy, options, batch_size, seq_length, device):
    """`(measure_fn's results, taken earlier)` for this probe: from this
    process's earlier runs, else from the probes file
    (`albert_tf.training.probe_cache`, for `measure` itself), else measured
    now (and added to the file)."""
    import tensorflow as tf

    # What the probe measures: the same for runs whose batches exceed its own.
    cut = probe_config(config)
    batch, length = min(batch_size, PROBE_MAX_BATCH), min(seq_length, PROBE_MAX_LENGTH)
    probe = (cut, policy, tuple(options), batch, length, device)
    if (measure_fn, probe) in _MEASURED:
        return _MEASURED[measure_fn, probe], True
    path = probe_cache.probes_file() if measure_fn is measure else None
    key = probe_cache.probe_key(cut, policy, options, batch, length, device)
    result = _decoded(probe_cache.read_probes(path).get(key)) if path else None
    reused = result is not None
    if not reused:
        with tf.device(device):
            result = measure_fn(config, policy, options, batch_size, seq_length)
        if path:
            probe_cache.store_probe(path, key, {
                "timings": [[o.jit, o.unroll, s] for o, s in result[0]],
                "forward": [[jit, s] for jit, s in result[1]]})
    _MEASURED[measure_fn, probe] = result
    return result, reused


def _is_cached(config, policy, options, batch_size, seq_length, device):
    """Whether this probe's measurements are at hand (this process or the file)."""
    cut = probe_config(config)
    batch, length = min(batch_size, PROBE_MAX_BATCH), min(seq_length, PROBE_MAX_LENGTH)
    if any(probe == (cut, policy, tuple(options), batch, length, device)
           for fn, probe in _MEASURED if fn is measure):
        return True
    key = probe_cache.probe_key(cut, policy, options, batch, length, device)
    return _decoded(probe_cache.read_probes(probe_cache.probes_file()).get(key)) is not None


def _shorter_than_probe(config, policy, options, batch_size, seq_length, device,
                        train_steps):
    """"(not measured: ...)" when the probe is not cached and the run's
    training is estimated shorter than measuring would take; else ""."""
    if _is_cached(config, policy, options, batch_size, seq_length, device):
        return ""
    calls = len(options) + len({o.jit for o in options})
    probe_step = step_gflop(probe_config(config), min(batch_size, PROBE_MAX_BATCH),
                            min(seq_length, PROBE_MAX_LENGTH))
    train, probe = probe_cache.estimated_seconds(
        train_steps * step_gflop(config, batch_size, seq_length), probe_step, calls,
        PROBE_STEPS + 2, probe_cache.host_gflops(device))
    if train >= probe:
        return ""
    return (f"(not measured: the training, about {train:.0f} s, is estimated shorter than "
            f"the probe, about {probe:.0f} s; the defaults are taken)")


def _decoded(entry):
    """A probes file's entry as `measure` returns it; None if it is not one."""
    try:
        return ([(Candidate(bool(jit), bool(unroll)), float(s))
                 for jit, unroll, s in entry["timings"]],
                [(bool(jit), float(s)) for jit, s in entry["forward"]])
    except (KeyError, TypeError, ValueError):
        return None


def choose(timings, min_gain=MIN_GAIN):
    """The chosen candidate of `timings` (`[(candidate, seconds), ...]`, the
    default first): the fastest if it beats the default by `min_gain`."""
    default, default_seconds = timings[0]
    best, best_seconds = min(timings, key=lambda t: t[1])
    return best if best_seconds < (1 - min_gain) * default_seconds else default


def probe_config(config):
    """`config` with each group cut to `PROBE_LAYERS_PER_GROUP` layers."""
    per_group = config.num_layers // config.num_groups
    return config.replace(num_layers=config.num_groups * min(per_group, PROBE_LAYERS_PER_GROUP))


def measure(config, policy, options, batch_size, seq_length, steps=PROBE_STEPS):
    """Seconds per training step of a classifier on `probe_config(config)` for
    each `Candidate` of `options`, the best of `steps` steps, the candidates'
    steps interleaved (so that a busy machine slows them alike); and seconds
    per forward pass (inference) with and without XLA, as `options` have it
    (the forward pass runs the layers unrolled either way).

    Returns `([(Candidate, seconds per step), ...], [(jit, seconds per
    forward pass), ...])`, each in the order of `options`.

    Models and data are random and nothing is kept; building them draws from
    Keras' global random state, so a run seeds after measuring.
    """
    import numpy as np
    import tensorflow as tf

    from albert_tf.backbone import AlbertBackbone
    from albert_tf.models import AlbertClassifier
    from albert_tf.training.optimizers import create_optimizer

    batch, length = min(batch_size, PROBE_MAX_BATCH), min(seq_length, PROBE_MAX_LENGTH)
    config = probe_config(config)
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, config.vocabulary_size, (batch, length)).astype("int32")
    x = {"token_ids": tokens, "segment_ids": np.zeros_like(tokens),
         "padding_mask": np.ones_like(tokens)}
    y = {"label": rng.integers(0, 2, batch).astype("int32")}
    inputs = {k: tf.constant(v) for k, v in x.items()}
    steps_of, forward_of = [], {}
    for option in options:
        model = AlbertClassifier(AlbertBackbone(config, dtype=policy, unroll=option.unroll), 2)
        model.compile(optimizer=create_optimizer("adamw", 1e-5, 1000, 10), jit_compile=option.jit)
        iterator = iter(tf.data.Dataset.from_tensors((x, y)).repeat())
        model.make_train_function()
        step = (lambda model, iterator: lambda: model.train_function(iterator)["loss"].numpy())(
            model, iterator)
        steps_of.append(step)
        if option.jit not in forward_of:
            forward = tf.function(lambda inputs, model=model: model(inputs, training=False),
                                  jit_compile=option.jit)
            forward_of[option.jit] = lambda forward=forward: forward(inputs)["logits"].numpy()
    calls = steps_of + list(forward_of.values())
    for call in calls:
        call()  # traces (and compiles)
        call()
    best = [float("inf")] * len(calls)
    for _ in range(steps):
        for i, call in enumerate(calls):
            start = time.perf_counter()
            call()
            best[i] = min(best[i], time.perf_counter() - start)
    return (list(zip(options, best[:len(options)])),
            list(zip(forward_of, best[len(options):])))


def resolve_execution(precision, xla, layer_execution, strategy, config=None, recompute=False,
                      batch_size=8, seq_length=128, measure_fn=None, timed=True,
                      train_steps=None):
    """The `Execution` of a run with these settings.

    precision, xla, layer_execution: the settings (each may be "auto").
    strategy: the run's `tf.distribute.Strategy` (None: this host's device).
    config: the model's `AlbertConfig`, needed to measure (without it, the
        defaults: no XLA on a CPU, loop).
    batch_size, seq_length: the run's per-replica batch shape (the probe's is
        capped at `PROBE_MAX_BATCH` x `PROBE_MAX_LENGTH`).
    measure_fn: a function like `measure` (the default), e.g. a test's.
    timed: False: nothing is timed (`auto` takes the defaults, and float32 on
        a CPU), so that the choice is the same every time (`--deterministic`).
    train_steps: the run's training steps (of `batch_size`), if known: a run
        whose training is estimated shorter than the probe (not yet cached)
        takes the defaults, and its `Execution.note` says so.

    Where nothing is measured, evaluation's XLA (`inference_jit`) is the
    training step's.
    """
    import tensorflow as tf

    policy, default_jit = resolve_precision(precision, xla, strategy, timed)
    config = config if timed else None
    if layer_execution == "auto" and config is not None and \
            unrolled_gradient_bytes(config) > UNROLL_MAX_GRADIENT_BYTES:
        layer_execution = "loop"
    # The device's default first: what is kept unless another is clearly faster.
    options = sorted(candidates(xla, layer_execution, recompute),
                     key=lambda o: o.jit != default_jit)
    on_tpu = isinstance(strategy, tf.distribute.TPUStrategy)
    if on_tpu:
        options = [o for o in options if o.jit] or options
    # Workers measuring apart could choose apart: a multi-worker run takes the defaults.
    multi_worker = isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
    small = config is not None and \
        step_gflop(config, batch_size, seq_length) < MIN_MEASURED_STEP_GFLOP
    if len(options) == 1 or config is None or small or on_tpu or multi_worker:
        chosen = options[0]
        return Execution(policy, chosen.jit, chosen.unroll)
    device = "/gpu:0" if tf.config.list_logical_devices("GPU") else "/cpu:0"
    if train_steps and measure_fn is None:
        note = _shorter_than_probe(config, policy, options, batch_size, seq_length, device,
                                   train_steps)
        if note:
            log.info("%s", note)
            return Execution(policy, options[0].jit, options[0].unroll, note=note)
    start = time.perf_counter()
    (timings, forward), reused = _measurements(measure_fn or measure, config, policy, options,
                                               batch_size, seq_length, device)
    seconds = time.perf_counter() - start
    chosen = choose(timings)
    # Evaluation's XLA, where both were measured (`--xla=auto`): the default
    # (the device's) unless XLA off or on is clearly faster; else the step's.
    both = len(forward) > 1
    execution = Execution(policy, chosen.jit, chosen.unroll,
                          tuple((o.name, s) for o, s in timings), seconds,
                          choose(forward) if both else chosen.jit,
                          tuple((f"XLA {_on(jit)}", s) for jit, s in forward) if both else (),
                          reused)
    log.info("chose %s", execution.describe())
    return execution
