import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from albert_tf.data.batching import train_batches
from albert_tf.training import engine
from albert_tf.training.callbacks import (CheckpointSaver, StopOnSignal, TrainingDiverged,
                                          TrainingInterrupted, update_step)
from engine_helpers import (MAX_LEN, batch_length, toy_dataset, toy_features, toy_model,
                            toy_settings)


def _weights(model):
    return {v.path: v.numpy() for v in model.weights}


def _train(settings, seed=0, verbose=False):
    model, strategy = toy_model(settings, seed=seed)
    result = engine.train(model, strategy, toy_dataset(strategy, settings), settings,
                          settings.output_dir, verbose=verbose)
    return model, strategy, result


def test_checkpoints_every_n_updates_and_resume_gives_the_uninterrupted_result(tmp_path,
                                                                              monkeypatch):
    straight, _, result = _train(toy_settings(tmp_path / "a"))
    assert result["step"] == 12
    names = sorted(f for f in os.listdir(tmp_path / "a" / "checkpoints") if f.endswith(".index"))
    assert names == ["ckpt-12.index", "ckpt-4.index", "ckpt-8.index"]
    assert os.listdir(tmp_path / "a" / "tensorboard")

    original = CheckpointSaver.on_train_batch_end

    def crash_after_step_8(self, batch, logs=None):
        original(self, batch, logs)
        if self.last_saved == 8:
            raise KeyboardInterrupt("killed")

    monkeypatch.setattr(CheckpointSaver, "on_train_batch_end", crash_after_step_8)
    with pytest.raises(TrainingInterrupted, match="interrupted at step 8 of 12; saved "):
        _train(toy_settings(tmp_path / "b"))
    monkeypatch.setattr(CheckpointSaver, "on_train_batch_end", original)
    # A fresh process would rebuild the model from scratch (another seed here,
    # to show that the checkpoint, not the initialisation, decides).
    resumed, _, result = _train(toy_settings(tmp_path / "b"), seed=7)
    assert result["resumed_from"] == 8
    a, b = _weights(straight), _weights(resumed)
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_allclose(b[name], a[name], atol=1e-6, err_msg=name)


def _signal_during_step(monkeypatch, step, signals):
    """Sends `signals` (to this process) as update `step` begins, before it runs."""
    original = CheckpointSaver.on_train_batch_begin

    def send(self, batch, logs=None):
        original(self, batch, logs)
        if update_step(self.model) == step - 1:
            for number in signals:
                os.kill(os.getpid(), number)

    monkeypatch.setattr(CheckpointSaver, "on_train_batch_begin", send)


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_lets_the_step_under_way_finish_then_saves_it(tmp_path, monkeypatch, capsys,
                                                               number):
    _signal_during_step(monkeypatch, 6, [number])
    with pytest.raises(TrainingInterrupted, match="interrupted at step 6 of 12; saved .*ckpt-6"):
        _train(toy_settings(tmp_path))
    assert sorted(f for f in os.listdir(tmp_path / "checkpoints") if f.endswith(".index")) == [
        "ckpt-4.index", "ckpt-6.index"]
    name = "Ctrl-C" if number == signal.SIGINT else "SIGTERM"
    assert f"{name}: stopping when the current step ends (again to stop at once)" in \
        capsys.readouterr().err
    # The handlers are put back once training ends.
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_second_signal_stops_before_the_step_under_way(tmp_path, monkeypatch):
    _signal_during_step(monkeypatch, 6, [signal.SIGTERM, signal.SIGTERM])
    with pytest.raises(TrainingInterrupted, match="interrupted at step 5 of 12; saved .*ckpt-5"):
        _train(toy_settings(tmp_path))


def test_an_ignored_signal_stays_ignored():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with StopOnSignal():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_worker_of_several_stops_at_the_first_signal():
    stop = StopOnSignal(at_once=True)
    with stop, pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGTERM)
    assert stop.signal is None
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_padding_each_batch_to_its_own_length_trains_like_fixed_padding(tmp_path):
    # `--nofixed_padding` (the default) is a speed option: padding is masked
    # out, so the weights after training match padding every batch to the
    # maximum length. Length-aware batching off, so both see the same batches.
    trained = {}
    for name, length in (("own", batch_length), ("fixed", lambda lengths: MAX_LEN)):
        settings = toy_settings(tmp_path / name, dropout=0.0, length_aware_batching=False)
        model, strategy = toy_model(settings)
        dataset = engine.planned_dataset(strategy, toy_features(), settings, length)
        engine.train(model, strategy, dataset, settings, settings.output_dir, verbose=False)
        trained[name] = _weights(model)
    for name, value in trained["fixed"].items():
        np.testing.assert_allclose(trained["own"][name], value, atol=2e-5, err_msg=name)
    lengths = toy_features().lengths  # and a third of the batches really were shorter
    plan = train_batches(lengths, 4, 12, seed=settings.seed, length_aware=False)
    assert sum(batch_length(lengths[b]) < MAX_LEN for b in plan) >= 4


def test_recomputation_trains_like_keeping_the_activations(tmp_path):
    # `--recompute` trades time for memory; the weights after training are
    # the same up to the order of floating-point sums.
    trained = {}
    for recompute in (False, True):
        settings = toy_settings(tmp_path / str(recompute), dropout=0.0, recompute=recompute)
        model, _, _ = _train(settings)
        trained[recompute] = _weights(model)
    for name, value in trained[False].items():
        np.testing.assert_allclose(trained[True][name], value, atol=2e-5, err_msg=name)
    with pytest.raises(ValueError, match="recompute needs dropout=0 .*got dropout=0.1"):
        toy_settings(tmp_path, recompute=True, dropout=0.1)


def test_gradient_accumulation_resumes_and_counts_updates(tmp_path):
    model, _, result = _train(toy_settings(tmp_path, accumulation_steps=2))
    assert int(model.optimizer.iterations.numpy()) == 12
    assert result["step"] == 12


def test_divergence_stops_and_keeps_last_good_checkpoint(tmp_path):
    settings = toy_settings(tmp_path, learning_rate=1e6, warmup_steps=0, train_steps=40,
                            divergence_factor=5.0, checkpoint_every=1)
    with pytest.raises(TrainingDiverged, match=r"training diverged at step \d+") as e:
        _train(settings)
    saved = sorted(f for f in os.listdir(tmp_path / "checkpoints") if f.endswith(".index"))
    assert saved, "the checkpoints before divergence are kept"
    assert f"ckpt-{saved[-1].split('-')[1].split('.')[0]}" in str(e.value)
    diverged_at = int(str(e.value).split("step ")[1].split(" ")[0])
    assert all(int(f.split("-")[1].split(".")[0]) < diverged_at for f in saved)


def test_predict_covers_every_example_in_order(tmp_path):
    settings = toy_settings(tmp_path)
    model, strategy = toy_model(settings)
    features = toy_features(n=11)
    outputs = engine.predict(model, strategy, features, 4, batch_length)
    assert outputs["logits"].shape == (11, 2)
    direct = model(features.batch(np.arange(11), 16), training=False)["logits"]
    np.testing.assert_allclose(outputs["logits"], direct, atol=1e-5)
    # Compiled with XLA (evaluation's `--xla=auto` choice): the same outputs, in order.
    compiled = engine.predict(model, strategy, features, 4, batch_length, jit=True)
    np.testing.assert_allclose(compiled["logits"], direct, atol=1e-5)
    assert engine._prediction_step(model, strategy, True) is not \
        engine._prediction_step(model, strategy, False)


MIRRORED_SCRIPT = r"""
import sys, numpy as np, tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/tests"]
from engine_helpers import (MAX_LEN, batch_length, toy_dataset, toy_features, toy_model,
                            toy_settings)
from albert_tf.training import engine
out = {}
for name, strategy in [("one", tf.distribute.OneDeviceStrategy("/cpu:0")),
                       ("mirrored", tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))]:
    settings = toy_settings(sys.argv[2] + "/" + name, dropout=0.0, classifier_dropout=0.0)
    model, strategy = toy_model(settings, strategy)
    engine.train(model, strategy, toy_dataset(strategy, settings), settings,
                 settings.output_dir, verbose=False)
    out[name] = engine.predict(model, strategy, toy_features(n=13, seed=3), 6, batch_length)["logits"]
    assert strategy.num_replicas_in_sync == (2 if name == "mirrored" else 1)
np.testing.assert_allclose(out["mirrored"], out["one"], atol=2e-4)
print("MIRRORED_OK", np.abs(out["mirrored"] - out["one"]).max())
"""


@pytest.mark.slow  # a minute of CI; the slow tier (make test-all) runs it
def test_mirrored_two_devices_trains_and_evaluates_like_one(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = subprocess.run([sys.executable, "-c", MIRRORED_SCRIPT, root, str(tmp_path)],
                            capture_output=True, text=True, timeout=300)
    assert "MIRRORED_OK" in result.stdout, result.stderr[-3000:]


def test_float16_loss_scaling_trains_and_resumes(tmp_path):
    import keras
    import tensorflow as tf

    from albert_tf.backbone import AlbertBackbone
    from albert_tf.models import AlbertClassifier
    from albert_tf.training.optimizers import create_optimizer
    from engine_helpers import MAX_LEN
    from helpers import tiny_config

    settings = toy_settings(tmp_path, train_steps=8, checkpoint_every=4)
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    with strategy.scope():
        backbone = AlbertBackbone(tiny_config(max_sequence_length=MAX_LEN), dtype="mixed_float16")
        model = AlbertClassifier(backbone, 2)
        model.compile(optimizer=keras.optimizers.LossScaleOptimizer(
            create_optimizer("adamw", 1e-3, 8, 2)))
    first = engine.train(model, strategy, toy_dataset(strategy, settings), settings,
                         settings.output_dir, verbose=False)
    assert first["step"] == 8 and int(model.optimizer.iterations.numpy()) == 8
    assert all(np.isfinite(v.numpy()).all() for v in model.trainable_variables)
    # Training again restores the loss scale and counters and finds nothing left to do.
    again = engine.train(model, strategy, toy_dataset(strategy, settings), settings,
                         settings.output_dir, verbose=False)
    assert again == {"step": 8, "resumed_from": 8}
