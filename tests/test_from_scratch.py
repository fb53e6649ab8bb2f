"""Training from random weights: its own recipe, a warning when the loss keeps rising,
and progress lines by time as well as by steps."""

import types

import numpy as np
import pytest

from albert_tf import tasks
from albert_tf.training import settings as settings_lib
from albert_tf.training.callbacks import LossRiseWarning, ProgressLogger


def test_without_a_checkpoint_the_from_scratch_recipe_applies_to_what_is_not_given():
    sst2 = tasks.get("sst2")
    scratch = settings_lib.resolve(sst2, {"output_dir": "x"})
    assert (scratch.learning_rate, scratch.train_steps, scratch.warmup_steps,
            scratch.dropout) == (3e-4, 2000, 200, 0.1)
    # The task's own batch, length and head dropout stay.
    recipe = sst2.recipe
    assert (scratch.batch_size, scratch.max_seq_length, scratch.classifier_dropout) == (
        recipe.batch_size, recipe.max_seq_length, recipe.classifier_dropout)
    pretrained = settings_lib.resolve(sst2, {"output_dir": "x",
                                             "init_checkpoint": "albert_base_v2"})
    assert (pretrained.learning_rate, pretrained.train_steps) == (recipe.learning_rate,
                                                                   recipe.train_steps)
    given = settings_lib.resolve(sst2, {"output_dir": "x", "learning_rate": 1e-4,
                                        "train_steps": 500})
    assert (given.learning_rate, given.train_steps, given.warmup_steps) == (1e-4, 500, 50)
    assert "random weights" in sst2.scratch_recipe.source


def _warnings(losses, **kwargs):
    watch = LossRiseWarning(**kwargs)
    return [message for message in map(watch.observe, losses) if message]


def test_a_sustained_rise_of_the_loss_is_reported_once():
    # The CRF run of a new user: from 5.6 down a little, then up to 11.2.
    rising = [5.6 - 0.01 * i for i in range(40)] + [5.2 + 0.05 * i for i in range(120)]
    said = _warnings(rising, window=10, stretch=3)
    assert len(said) == 1
    assert said[0].startswith("the training loss has risen for 30 steps: ")
    assert "--learning_rate" in said[0]


@pytest.mark.parametrize("losses", [
    [2.0 / (1 + 0.05 * i) for i in range(200)],  # falling
    [1.0 + 0.3 * (i % 2) for i in range(200)],  # noisy but flat
    [1.0] * 30 + [2.0] * 20 + [0.9] * 100,  # a short bump, then lower
    [0.1] * 50 + [0.13] * 100,  # a well-fitted set: relatively up, absolutely nothing
])
def test_a_falling_flat_or_briefly_bumped_loss_is_not_reported(losses):
    assert _warnings(losses, window=10, stretch=3) == []


@pytest.mark.parametrize("seed", range(10))
def test_a_healthy_runs_noisy_loss_is_not_reported(seed):
    """Small batches' losses scatter (here around 1.0, skewed as cross-entropy is):
    a window only by chance above the lowest one, by chance low, is no rise."""
    rng = np.random.default_rng(seed)
    assert _warnings(list(0.7 + rng.exponential(0.3, 600)), window=10, stretch=3) == []


def test_the_rise_warning_goes_through_the_projects_logger(caplog):
    watch = LossRiseWarning(window=10, stretch=3)
    rising = [5.6 - 0.01 * i for i in range(40)] + [5.2 + 0.05 * i for i in range(120)]
    with caplog.at_level("WARNING", logger="albert_tf"):
        for loss in rising:
            watch.on_train_batch_end(0, {"loss": loss})
    (record,) = [r for r in caplog.records if "has risen" in r.getMessage()]
    assert record.name == "albert_tf.training.callbacks"


class _Clock:
    def __init__(self, step_seconds):
        self.now, self.step_seconds = 0.0, step_seconds

    def __call__(self):
        return self.now


def test_progress_lines_come_by_time_as_well_as_by_steps(capsys):
    clock = _Clock(12.0)
    logger = ProgressLogger(10, 32, None, every=50, verbose=True, interval=30.0, clock=clock)
    iterations = types.SimpleNamespace(value=0, numpy=lambda: iterations.value)
    logger.set_model(types.SimpleNamespace(optimizer=types.SimpleNamespace(
        iterations=iterations)))
    logger.on_train_begin()
    for step in range(1, 11):
        clock.now += clock.step_seconds
        iterations.value = step
        logger.on_train_batch_end(step - 1, {"loss": 0.5})
    lines = capsys.readouterr().out.splitlines()
    # Every 30 s (steps 3, 6, 9: 36 s, 72 s, 108 s) and the last step, each with rate and ETA.
    assert [line.split()[1] for line in lines] == ["3/10", "6/10", "9/10", "10/10"]
    assert lines[0] == "step 3/10  loss 0.5000  2.7 examples/s  ETA 1:24"
    assert lines[-1].endswith("ETA 0:00")


def test_the_first_step_and_a_featurization_show_they_are_alive(capsys):
    import time

    from albert_tf.progress import Heartbeat

    logger = ProgressLogger(10, 32, None, every=50, verbose=True, interval=0.05)
    iterations = types.SimpleNamespace(value=0, numpy=lambda: iterations.value)
    logger.set_model(types.SimpleNamespace(optimizer=types.SimpleNamespace(
        iterations=iterations)))
    logger.on_train_begin()
    time.sleep(0.3)  # the first step's tracing
    iterations.value = 1
    logger.on_train_batch_end(0, {"loss": 0.5})
    waiting = capsys.readouterr().out.splitlines()
    assert len(waiting) >= 3 and waiting[0].startswith(
        "step 0/10: building and tracing the training step, 0:00 so far")
    # Then the first step's line: no rate or ETA yet (not "0.0 examples/s  ETA 0:00").
    assert waiting[-1] == "step 1/10  loss 0.5000  (the first step, with its tracing: 0:00)"
    time.sleep(0.2)
    assert capsys.readouterr().out == ""  # the heartbeat ended with the first step

    with Heartbeat("featurize train", "798 examples", interval=0.05):
        time.sleep(0.2)
    said = capsys.readouterr().err.splitlines()
    assert said and said[0] == "featurize train: 798 examples, 0:00 so far"
    time.sleep(0.1)
    assert capsys.readouterr().err == ""


def test_the_first_steps_native_notes_are_filtered_not_its_errors(capfd):
    import os

    logger = ProgressLogger(2, 32, None, every=50, verbose=False)
    iterations = types.SimpleNamespace(value=0, numpy=lambda: iterations.value)
    logger.set_model(types.SimpleNamespace(optimizer=types.SimpleNamespace(
        iterations=iterations)))
    logger.on_train_begin()
    os.write(2, b"E0000 00:00:1796177708.583865   17017 util.cc:131] oneDNN supports DT_INT64 "
                b"only on platforms with AVX-512. Falling back to the default Eigen-based "
                b"implementation if present.\n")
    os.write(2, b"E0000 00:00:1796177708.6   17017 op_kernel.cc:1] a real failure\n")
    iterations.value = 1
    logger.on_train_batch_end(0, {"loss": 0.5})
    os.write(2, b"after the first step\n")
    err = capfd.readouterr().err
    assert "a real failure" in err and "after the first step" in err and "DT_INT64" not in err
