"""What each variant of an export costs: inputs from a task's features, and measurements.

An export's variants (the SavedModel in its compute precision, each TFLite
file: what `albert_tf.export.formats.runners` finds in the folder) are run on
the same encoded examples as the float Keras model, and scored by a function
the caller gives (the task's metric: this module knows no task). Everything
runs through the `encoded` inputs at `max_seq_length`, as TFLite takes them,
so the variants differ only in their arithmetic.
"""

import statistics
import time

import numpy as np

from albert_tf.export.formats.tflite import convert as tflite_lib

LATENCY_CALLS = 20  # timed batch-1 calls per variant, after two warm-up calls
THROUGHPUT_EXAMPLES = 256  # timed in calls of 32 per variant, after one warm-up call


def encoded_inputs(features, names):
    """The model inputs `names` of `albert_tf.data.Features`, int32
    `(examples, max_seq_length)` each; `padding_mask` from the lengths."""
    length = features.max_seq_length
    arrays = dict(features.arrays)
    arrays["padding_mask"] = (np.arange(length)[None] < features.lengths[:, None])
    missing = sorted(set(names) - set(arrays))
    if missing:
        raise ValueError(f"the task's features have no {missing} for the model's inputs")
    return {name: np.asarray(arrays[name], np.int32) for name in names}


def sample_indices(total, count, seed=0):
    """At most `count` of `range(total)`, drawn without replacement, ascending:
    a fixed sample spread over a split, not its first rows (often sorted)."""
    if count >= total:
        return np.arange(total)
    return np.sort(np.random.default_rng(seed).choice(total, count, replace=False))


def batched(run, inputs, batch_size=32):
    """`run` (dict of arrays -> dict of arrays) over `inputs` in batches; the
    outputs concatenated (numpy)."""
    total = len(next(iter(inputs.values())))
    collected = {}
    for begin in range(0, total, batch_size):
        outputs = run({k: v[begin:begin + batch_size] for k, v in inputs.items()})
        for name, value in outputs.items():
            collected.setdefault(name, []).append(np.asarray(value))
    return {name: np.concatenate(values) for name, values in collected.items()}


def batch1_latency_ms(run, inputs, calls=LATENCY_CALLS):
    """The median milliseconds of one call of `run` on one example (the first
    ones of `inputs`, in turn), after two warm-up calls."""
    total = len(next(iter(inputs.values())))
    times = []
    for i in range(calls + 2):
        one = {k: v[i % total:i % total + 1] for k, v in inputs.items()}
        start = time.perf_counter()
        run(one)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times[2:])


def throughput(run, inputs, batch_size=32, examples=THROUGHPUT_EXAMPLES):
    """Examples per second of `run` in calls of `batch_size` examples, over
    the first `examples` of `inputs` (cycled when fewer), after one warm-up call."""
    total = len(next(iter(inputs.values())))
    rows = np.arange(max(examples, batch_size)) % total
    batches = [{k: v[rows[i:i + batch_size]] for k, v in inputs.items()}
               for i in range(0, len(rows) - batch_size + 1, batch_size)]
    run(batches[0])
    start = time.perf_counter()
    for batch in batches:
        run(batch)
    return len(batches) * batch_size / (time.perf_counter() - start)


def saved_model_runner(path):
    """The `encoded` signature of the SavedModel in `path`, as a numpy runner."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 (registers the tokenizer ops the graph holds)

    signature = tf.saved_model.load(path).signatures["encoded"]
    return lambda inputs: {k: v.numpy() for k, v in signature(
        **{name: tf.constant(value) for name, value in inputs.items()}).items()}


def tflite_runner(path):
    """A `.tflite` file as a numpy runner."""
    model = tflite_lib.TfliteModel(path=path)
    return lambda inputs: model(**inputs)


def max_abs_error(outputs, reference):
    """The largest |output - reference| over the float outputs both have,
    skipping positions the reference masks (-1e30 and below)."""
    errors = [0.0]
    for name, expected in reference.items():
        if name in outputs and np.issubdtype(expected.dtype, np.floating):
            keep = expected > -1e29
            errors.append(float(np.max(np.abs(outputs[name][keep] - expected[keep]),
                                       initial=0.0)))
    return max(errors)


def measure_variants(runners, inputs, score, batch_size=32):
    """`{name: {**score(outputs), "batch1_ms", "batch32_per_s", "max_abs_error"}}`
    for each runner, on the same inputs; `score` maps a dict of output arrays
    (one row per example) to the task's metrics; the error is against the
    first runner's outputs (the reference)."""
    results, reference = {}, None
    for name, run in runners.items():
        outputs = batched(run, inputs, batch_size)
        reference = outputs if reference is None else reference
        metrics = dict(score(outputs))
        metrics["batch1_ms"] = round(batch1_latency_ms(run, inputs), 3)
        metrics["batch32_per_s"] = round(throughput(run, inputs, batch_size), 2)
        metrics["max_abs_error"] = round(max_abs_error(outputs, reference), 6)
        results[name] = metrics
    return results
