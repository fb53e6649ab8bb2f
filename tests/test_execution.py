"""How a training step runs: the measured choice of XLA and layer execution, its
record in the run folder, and the length buckets of a compiled step."""

import json
import os

import numpy as np
import pytest

from albert_tf.config import AlbertConfig
from albert_tf.data import bucket_lengths, padded_length, train_batches
from albert_tf.training import devices, execution, probe_cache
from albert_tf.training.execution import Candidate, candidates, choose, resolve_execution
from albert_tf.training.settings import SETTINGS_FILE, FinetuneSettings
from albert_tf.training.setup import start_run
from helpers import tiny_config

LOOP, UNROLLED = Candidate(False, False), Candidate(False, True)
XLA_LOOP, XLA_UNROLLED = Candidate(True, False), Candidate(True, True)


def test_candidates_are_what_the_settings_leave_open_the_default_first():
    assert candidates("auto", "auto", False) == [LOOP, UNROLLED, XLA_LOOP, XLA_UNROLLED]
    assert candidates("off", "auto", False) == [LOOP, UNROLLED]
    assert candidates("on", "unrolled", False) == [XLA_UNROLLED]
    assert candidates("auto", "loop", False) == [LOOP, XLA_LOOP]
    # Recomputation saves memory only in the loop.
    assert candidates("auto", "auto", True) == [LOOP, XLA_LOOP]
    with pytest.raises(ValueError, match="--recompute .* --layer_execution=unrolled"):
        candidates("auto", "unrolled", True)
    with pytest.raises(ValueError, match="layer_execution must be one of"):
        candidates("auto", "sideways", False)


def test_the_fastest_is_chosen_only_when_clearly_faster_than_the_default():
    assert choose([(LOOP, 1.0), (UNROLLED, 0.9), (XLA_LOOP, 0.7)]) == XLA_LOOP
    # Within the noise of a busy machine the default stays.
    assert choose([(LOOP, 1.0), (UNROLLED, 0.97), (XLA_LOOP, 0.99)]) == LOOP
    assert choose([(LOOP, 1.0), (XLA_UNROLLED, 1.5)]) == LOOP


def fake_measure(seconds, calls=None, forward=None):
    """A `measure` that reports `seconds[candidate]` per step, `forward[jit]`
    per forward pass (default: XLA no faster), and records what it was asked."""
    forward = forward or {False: 0.1, True: 0.1}

    def measure(config, policy, options, batch_size, seq_length):
        if calls is not None:
            calls.append((config, policy, list(options), batch_size, seq_length))
        jits = list(dict.fromkeys(o.jit for o in options))
        return [(o, seconds[o]) for o in options], [(jit, forward[jit]) for jit in jits]

    return measure


def test_resolve_execution_measures_the_open_choices_and_keeps_the_timings(monkeypatch):
    monkeypatch.setattr(devices, "cpu_bf16_speedup", lambda: 0.0)
    calls = []
    seconds = {LOOP: 1.0, UNROLLED: 0.95, XLA_LOOP: 0.8, XLA_UNROLLED: 0.6}
    base = AlbertConfig.preset("albert_base")
    got = resolve_execution("auto", "auto", "auto", None, config=base, batch_size=16,
                            seq_length=64, measure_fn=fake_measure(seconds, calls))
    assert (got.policy, got.jit, got.unroll, got.layer_execution) == (
        "float32", True, True, "unrolled")
    assert [name for name, _ in got.timings] == [
        "XLA off, layers loop", "XLA off, layers unrolled", "XLA on, layers loop",
        "XLA on, layers unrolled"]
    assert "XLA on, layers unrolled" in got.describe() and "600 ms" in got.describe()
    (config, policy, options, batch, length), = calls
    assert (policy, batch, length) == ("float32", 16, 64)
    # With recomputation only the loop is measured, and given settings are not measured.
    got = resolve_execution("fp32", "auto", "auto", None, config=base, recompute=True,
                            measure_fn=fake_measure(seconds, calls))
    assert (got.jit, got.unroll) == (True, False) and calls[-1][2] == [LOOP, XLA_LOOP]
    got = resolve_execution("fp32", "off", "unrolled", None, config=base,
                            measure_fn=fake_measure(seconds, calls))
    assert (got.jit, got.unroll, got.timings, len(calls)) == (False, True, (), 2)
    # A tiny model's step is not worth measuring: the defaults.
    got = resolve_execution("fp32", "auto", "auto", None, config=tiny_config(),
                            measure_fn=fake_measure(seconds, calls))
    assert (got.jit, got.unroll, got.timings, len(calls)) == (False, False, (), 2)
    # A model whose unrolled gradients would take gigabytes stays in the loop.
    xxlarge = AlbertConfig.preset("albert_xxlarge")
    assert execution.unrolled_gradient_bytes(xxlarge) > 8e9
    assert execution.unrolled_gradient_bytes(xxlarge.replace(sharing="none")) == 0
    got = resolve_execution("fp32", "auto", "auto", None, config=xxlarge,
                            measure_fn=fake_measure(seconds, calls))
    assert calls[-1][2] == [LOOP, XLA_LOOP] and not got.unroll
    # Without a model to measure: the device's defaults (on a CPU no XLA, the loop).
    got = resolve_execution("fp32", "auto", "auto", None)
    assert (got.jit, got.unroll, got.timings) == (False, False, ())


def test_evaluation_xla_is_measured_apart_from_the_training_steps(monkeypatch):
    monkeypatch.setattr(devices, "cpu_bf16_speedup", lambda: 0.0)
    base = AlbertConfig.preset("albert_base")
    steps = {LOOP: 1.0, UNROLLED: 1.0, XLA_LOOP: 1.1, XLA_UNROLLED: 1.0}
    # XLA's forward pass clearly faster, its training step not: evaluation
    # compiles, training does not (an AVX2-only CPU in float32).
    got = resolve_execution("auto", "auto", "auto", None, config=base, measure_fn=fake_measure(
        steps, forward={False: 0.118, True: 0.100}))
    assert (got.jit, got.inference_jit) == (False, True)
    assert got.describe().startswith("precision float32, XLA off, layers loop, evaluation XLA on")
    assert "per probe forward pass: XLA off 118 ms; XLA on 100 ms" in got.describe()
    # Within the noise: the device's default (on a CPU no XLA), for both.
    got = resolve_execution("auto", "auto", "auto", None, config=base, measure_fn=fake_measure(
        steps, forward={False: 0.100, True: 0.097}))
    assert (got.jit, got.inference_jit) == (False, False)
    assert "evaluation" not in got.describe()
    # XLA given: evaluation follows it, whatever a forward pass would measure.
    got = resolve_execution("auto", "off", "auto", None, config=base, measure_fn=fake_measure(
        steps, forward={False: 0.2, True: 0.1}))
    assert (got.jit, got.inference_jit, got.inference_timings) == (False, False, ())
    got = resolve_execution("auto", "on", "loop", None, config=base)
    assert (got.jit, got.inference_jit) == (True, True)


def test_repeated_runs_in_one_process_share_one_measurement(monkeypatch):
    monkeypatch.setattr(devices, "cpu_bf16_speedup", lambda: 0.0)
    monkeypatch.setattr(execution, "_MEASURED", {})
    calls = []
    monkeypatch.setattr(execution, "measure", fake_measure(
        {LOOP: 1.0, UNROLLED: 0.9, XLA_LOOP: 1.2, XLA_UNROLLED: 1.1}, calls))
    base = AlbertConfig.preset("albert_base")
    first = resolve_execution("auto", "auto", "auto", None, config=base, batch_size=8)
    assert "measured in" in first.describe() and not first.reused
    # A second seed, and a run of batch 32 (the probe's batch is capped at 4): no new probe.
    for batch_size in (8, 32):
        again = resolve_execution("auto", "auto", "auto", None, config=base,
                                  batch_size=batch_size)
        assert (again.jit, again.unroll, again.timings) == (first.jit, first.unroll,
                                                            first.timings)
        assert again.reused and "(measured for an earlier run, per probe " \
            "step: XLA off, layers loop 1000 ms" in again.describe()
    # 6 layers of the same width: the same probe (3 layers).
    resolve_execution("auto", "auto", "auto", None, config=base.replace(num_layers=6))
    assert len(calls) == 1
    # Another model, precision, length or set of candidates is measured anew.
    resolve_execution("auto", "auto", "auto", None, config=AlbertConfig.preset("albert_large"))
    resolve_execution("bf16", "auto", "auto", None, config=base)
    resolve_execution("auto", "auto", "auto", None, config=base, seq_length=64)
    resolve_execution("auto", "off", "auto", None, config=base)
    assert len(calls) == 5


def test_processes_that_share_a_probes_file_measure_once(tmp_path, monkeypatch):
    monkeypatch.setattr(devices, "cpu_bf16_speedup", lambda: 0.0)
    path = tmp_path / "search" / "execution_probes.json"
    monkeypatch.setenv(execution.PROBES_FILE_ENV, str(path))
    calls = []
    monkeypatch.setattr(execution, "measure", fake_measure(
        {LOOP: 1.0, UNROLLED: 0.7, XLA_LOOP: 1.2, XLA_UNROLLED: 1.1}, calls,
        forward={False: 0.2, True: 0.1}))
    base = AlbertConfig.preset("albert_base")
    for process in range(3):  # each a fresh process: nothing kept in memory
        monkeypatch.setattr(execution, "_MEASURED", {})
        got = resolve_execution("auto", "auto", "auto", None, config=base)
        assert (got.jit, got.unroll, got.inference_jit, got.reused) == (
            False, True, True, process > 0)
        assert got.timings == (("XLA off, layers loop", 1.0), ("XLA off, layers unrolled", 0.7),
                               ("XLA on, layers loop", 1.2), ("XLA on, layers unrolled", 1.1))
    assert len(calls) == 1 and len(json.loads(path.read_text())) == 1
    # Another probe is added beside it; a damaged file is measured over, not a crash.
    monkeypatch.setattr(execution, "_MEASURED", {})
    resolve_execution("auto", "auto", "auto", None, config=base, seq_length=64)
    assert len(calls) == 2 and len(json.loads(path.read_text())) == 2
    path.write_text('{"truncated')
    monkeypatch.setattr(execution, "_MEASURED", {})
    assert not resolve_execution("auto", "auto", "auto", None, config=base).reused
    assert len(calls) == 3 and len(json.loads(path.read_text())) == 1
    # A measure given (a test's, a benchmark's) neither reads nor writes it.
    resolve_execution("auto", "auto", "auto", None, config=base, seq_length=32,
                      measure_fn=fake_measure({LOOP: 1, UNROLLED: 1, XLA_LOOP: 1,
                                               XLA_UNROLLED: 1}))
    assert len(json.loads(path.read_text())) == 1


def test_the_choice_is_saved_in_the_run_folder_logged_and_kept_on_resume(tmp_path,
                                                                        monkeypatch):
    monkeypatch.setattr(devices, "cpu_bf16_speedup", lambda: 0.0)
    settings = FinetuneSettings(task="rte", output_dir=str(tmp_path), strategy="one_device")
    monkeypatch.setattr(execution, "measure", fake_measure(
        {LOOP: 1.0, UNROLLED: 0.7, XLA_LOOP: 0.9, XLA_UNROLLED: 0.8},
        forward={False: 0.2, True: 0.1}))
    setup = start_run(settings, SETTINGS_FILE, AlbertConfig.preset("albert_base"))
    assert (setup.jit, setup.unroll, setup.settings.layer_execution) == (False, True, "unrolled")
    assert setup.inference_jit
    assert "layers unrolled, evaluation XLA on (measured in" in setup.describe()
    saved = json.loads((tmp_path / SETTINGS_FILE).read_text())
    assert (saved["xla"], saved["layer_execution"]) == ("off", "unrolled")
    # Resumed (a checkpoint exists) on a machine that now measures otherwise: kept.
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "checkpoint").write_text('model_checkpoint_path: "ckpt-1"\n')
    monkeypatch.setattr(execution, "measure", fake_measure(
        {LOOP: 1.0, UNROLLED: 1.0, XLA_LOOP: 0.5, XLA_UNROLLED: 1.0}))
    resumed = start_run(settings, SETTINGS_FILE, AlbertConfig.preset("albert_base"))
    assert (resumed.jit, resumed.unroll, resumed.execution.timings) == (False, True, ())
    assert not resumed.inference_jit  # its `xla` given now: evaluation follows it


def test_recompute_with_unrolled_layers_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="layer_execution"):
        FinetuneSettings(task="rte", output_dir="x", recompute=True, layer_execution="unrolled")


def test_measure_times_each_candidate_on_a_probe_of_the_model():
    config = tiny_config(num_layers=8, num_groups=2)
    assert execution.probe_config(config).num_layers == 6  # 2 groups of 3 layers
    assert execution.probe_config(tiny_config(num_layers=2)).num_layers == 2
    # (Few candidates: each costs a model and a traced training step.)
    timings, forward = execution.measure(tiny_config(num_layers=2), "float32", [UNROLLED, LOOP],
                                         3, 9, steps=1)
    assert [o for o, _ in timings] == [UNROLLED, LOOP]
    assert [jit for jit, _ in forward] == [False]  # one forward pass per XLA setting
    assert all(np.isfinite(s) and s > 0 for _, s in timings + forward)


def test_the_probes_loop_candidate_runs_a_loop():
    """The probe's classifier computes its last layer apart: what remains of
    each group must still be a loop of two or more layers, or the probe would
    time the loop without one."""
    import keras
    import tensorflow as tf

    from albert_tf.backbone import AlbertBackbone
    from albert_tf.models import AlbertClassifier

    config = execution.probe_config(tiny_config(num_layers=12))
    model = AlbertClassifier(AlbertBackbone(config), 2)
    x = {"token_ids": tf.ones((2, 5), "int32"), "segment_ids": tf.zeros((2, 5), "int32"),
         "padding_mask": tf.ones((2, 5), "int32")}

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = keras.ops.sum(model(x, training=True)["logits"])
        return tape.gradient(loss, model.trainable_variables)

    ops = {op.type for op in step.get_concrete_function().graph.get_operations()}
    assert "While" in ops or "StatelessWhile" in ops


def test_xla_buckets_bound_the_compiled_shapes_and_keep_length_aware_batching():
    rng = np.random.default_rng(0)
    # A GLUE-like length distribution: most pairs short, a tail to the cut.
    lengths = np.minimum(128, rng.lognormal(3.7, 0.4, 4000).astype(int) + 3)
    buckets = bucket_lengths(128)
    assert buckets == [16, 32, 48, 64, 80, 96, 112, 128]
    batches = train_batches(lengths, 32, 400, seed=1)
    widths = [padded_length(lengths[b], 128, buckets=buckets) for b in batches]
    assert set(widths) <= set(buckets) and len(set(widths)) <= 128 // 16
    assert all(w >= lengths[b].max() for w, b in zip(widths, batches))
    # Most of length-aware batching's saving over padding to 128 is kept.
    unbucketed = [padded_length(lengths[b], 128) for b in batches]
    fixed = 128 * len(batches)
    assert fixed / sum(widths) > 0.9 * fixed / sum(unbucketed) > 1.5
    # Longer inputs: coarser steps, at most 16 shapes to 512.
    assert len(bucket_lengths(512)) == 16 and bucket_lengths(512)[-3:] == [384, 448, 512]
    assert bucket_lengths(16) == [16] and bucket_lengths(10) == [10]


def test_the_measurements_are_cached_per_host_and_software(monkeypatch):
    """Without a probes file named, a second process on this host takes the first's
    measurements from $ALBERT_TF_CACHE; another CPU or TensorFlow measures anew."""
    monkeypatch.setattr(devices, "cpu_bf16_speedup", lambda: 0.0)
    calls = []
    monkeypatch.setattr(execution, "measure", fake_measure(
        {LOOP: 1.0, UNROLLED: 0.7, XLA_LOOP: 1.2, XLA_UNROLLED: 1.1}, calls))
    base = AlbertConfig.preset("albert_base")
    for process in range(2):
        monkeypatch.setattr(execution, "_MEASURED", {})
        got = resolve_execution("auto", "auto", "auto", None, config=base, train_steps=10**6)
        assert (got.unroll, got.reused) == (True, process > 0)
    assert len(calls) == 1
    assert probe_cache.probes_file() == os.path.join(os.environ["ALBERT_TF_CACHE"],
                                                     "execution_probes.json")
    with open(probe_cache.probes_file(), encoding="utf-8") as f:
        stored = json.load(f)
    (key,) = stored
    assert probe_cache.host_key() in key and "TF " in probe_cache.host_key()
    # A TensorFlow upgrade (another host key): measured again.
    monkeypatch.setattr(probe_cache, "host_key", lambda: "another CPU | TF 9.9")
    monkeypatch.setattr(execution, "_MEASURED", {})
    assert not resolve_execution("auto", "auto", "auto", None, config=base).reused
    assert len(calls) == 2


def test_a_run_shorter_than_the_probe_takes_the_defaults_and_says_so(monkeypatch):
    monkeypatch.setattr(devices, "cpu_bf16_speedup", lambda: 0.0)
    monkeypatch.setattr(execution, "_MEASURED", {})
    calls = []
    monkeypatch.setattr(execution, "measure", fake_measure(
        {LOOP: 1.0, UNROLLED: 0.5, XLA_LOOP: 1.2, XLA_UNROLLED: 1.1}, calls))
    base = AlbertConfig.preset("albert_base")
    short = resolve_execution("auto", "auto", "auto", None, config=base, batch_size=8,
                              train_steps=1)
    assert (short.jit, short.unroll, short.timings, calls) == (False, False, (), [])
    assert "not measured: the training, about" in short.describe()
    assert "shorter than the probe" in short.describe()
    long = resolve_execution("auto", "auto", "auto", None, config=base, batch_size=8,
                             train_steps=10**6)
    assert long.unroll and len(calls) == 1
    # Once cached, a short run takes the measured choice at no cost.
    again = resolve_execution("auto", "auto", "auto", None, config=base, batch_size=8,
                              train_steps=1)
    assert again.unroll and again.reused and len(calls) == 1
