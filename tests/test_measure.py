"""Measured step times per sharing mode (`python -m albert_tf.inspect --measure`)."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from albert_tf import accounting, measure
from helpers import tiny_config


def test_calls_are_warmed_up_then_interleaved():
    calls = []
    steps = [lambda name=name: calls.append(name) for name in "abc"]
    times = measure.time_interleaved(steps, warmup=2, repeats=3)
    assert calls == list("aabbcc") + list("abc") * 3
    assert [len(t) for t in times] == [3, 3, 3] and all(x >= 0 for t in times for x in t)


def test_median_and_spread():
    times = (0.5, 0.1, 0.2, 0.4, 0.3)
    assert measure.Timing.median(times) == pytest.approx(0.3)
    # numpy's quartiles of 0.1..0.5 are 0.2 and 0.4.
    assert measure.Timing.spread(times) == pytest.approx((0.4 - 0.2) / 0.3)


def _row(text, label):
    line = next(line for line in text.splitlines() if line.startswith(label))
    return line[len(label):].split()


def test_report_gives_ratios_to_the_unshared_model_and_achieved_rates():
    timings = [measure.Timing("all", (0.2, 0.2, 0.2), (0.9, 0.9, 0.9)),
               measure.Timing("none", (0.1, 0.1, 0.1), (0.3, 0.3, 0.3))]
    text = measure.report(timings, [2e6, 2e6], batch_size=4, seq_length=16, warmup=1,
                          repeats=3, setup="CPU test")
    assert _row(text, "Forward, relative to none") == ["2.000x", "1.000x"]
    assert _row(text, "Training step, relative to none") == ["3.000x", "1.000x"]
    assert _row(text, "Forward ms (median)") == ["200.00", "100.00"]
    assert _row(text, "Forward tokens per second") == ["320", "640"]  # 64 tokens a step
    # 2 MFLOP x 64 tokens in 0.1 s; a training step is 3x the forward FLOPs.
    assert _row(text, "Forward GFLOP/s achieved (computed FLOPs)") == ["0.64", "1.28"]
    assert _row(text, "Training step GFLOP/s achieved (computed FLOPs)") == ["0.43", "1.28"]
    assert "batch 4 x seq_length 16 = 64 tokens per step" in text


def test_training_step_changes_every_weight():
    import tensorflow as tf

    from albert_tf.backbone import AlbertBackbone

    model = AlbertBackbone(tiny_config(sharing="none"))
    inputs = {k: tf.constant(v) for k, v in measure.random_inputs(model.config, 3, 7).items()}
    before = [v.numpy().copy() for v in model.trainable_variables]
    _, train = measure._steps(model, inputs, jit_compile=False)
    train()
    unchanged = [v.path for v, b in zip(model.trainable_variables, before)
                 if np.array_equal(v.numpy(), b)]
    assert unchanged == []


@pytest.mark.slow  # a minute of CI; the slow tier (make test-all) runs it
def test_command_measures_beside_the_computed_flops(tmp_path):
    config = tiny_config(num_layers=1)
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(config.to_dict()))
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.inspect", f"--model={path}", "--sharing=all",
         "--seq_length=6", "--measure", "--batch_size=2", "--repeats=2", "--warmup=0"],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    header = next(line for line in out.splitlines() if line.startswith(" ") and "none" in line)
    assert header.split() == ["all", "none"]  # the unshared model joins as the baseline
    assert _row(out, "Forward, relative to none")[1] == "1.000x"
    for label in ("Forward ms (median)", "Training step ms (median)"):
        assert all(float(x.replace(",", "")) > 0 for x in _row(out, label))
    flops = accounting.total(accounting.component_costs(config, 6),
                             accounting.COMPONENTS[:-1]).flops_per_token
    assert _row(out, "Forward FLOPs per token (computed)") == [f"{flops / 1e6:,.2f}M"] * 2
    assert re.search(r"median of 2 after 0 warm-up calls", out)


def test_command_refuses_a_longer_sequence_than_the_model_in_one_line():
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.inspect", "--model=albert_tiny", "--measure",
         "--seq_length=513"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: --seq_length=513 is more than the model's max_sequence_length=512 "
        "(--measure runs the model)"]
