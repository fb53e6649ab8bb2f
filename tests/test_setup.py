"""The run setup both training paths share: resolved precision saved and reused on resume."""

import json

import keras
import pytest

from albert_tf.pretraining.train_settings import SETTINGS_FILE as PRETRAIN_FILE
from albert_tf.pretraining.train_settings import PretrainSettings
from albert_tf.training import devices
from albert_tf.training.settings import SETTINGS_FILE, FinetuneSettings
from albert_tf.training.setup import start_run
from helpers import tiny_config


@pytest.mark.parametrize("make, file_name", [
    (lambda out: FinetuneSettings(task="rte", output_dir=out, strategy="one_device"),
     SETTINGS_FILE),
    (lambda out: PretrainSettings(input_files="x", output_dir=out, strategy="one_device"),
     PRETRAIN_FILE)])
def test_auto_precision_is_saved_resolved_and_kept_on_resume(tmp_path, monkeypatch, make,
                                                            file_name):
    settings = make(str(tmp_path))
    monkeypatch.setattr(devices, "cpu_bf16_speedup", lambda: 2.0)
    first = start_run(settings, file_name)
    assert (first.policy, first.jit, first.settings.precision, first.settings.xla) == (
        "mixed_bfloat16", False, "bf16", "off")
    saved = json.loads((tmp_path / file_name).read_text())
    assert (saved["precision"], saved["xla"]) == ("bf16", "off")
    # Started again before it saved a checkpoint: nothing to keep, measured again.
    monkeypatch.setattr(devices, "cpu_bf16_speedup", lambda: 0.5)
    assert start_run(settings, file_name).policy == "float32"
    # The run got somewhere (a checkpoint), then resumes on a machine where bfloat16 now
    # measures slower: it keeps its choice.
    monkeypatch.setattr(devices, "cpu_bf16_speedup", lambda: 2.0)
    start_run(settings, file_name)
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "checkpoint").write_text('model_checkpoint_path: "ckpt-1"\n')
    monkeypatch.setattr(devices, "cpu_bf16_speedup", lambda: 0.5)
    assert start_run(settings, file_name).policy == "mixed_bfloat16"
    # A new run folder measures afresh.
    assert start_run(make(str(tmp_path / "new")), file_name).policy == "float32"


def test_compile_builds_the_settings_optimizer_with_loss_scaling_for_fp16(tmp_path):
    from albert_tf.backbone import AlbertBackbone
    from albert_tf.models import AlbertClassifier

    settings = FinetuneSettings(task="rte", output_dir=str(tmp_path), strategy="one_device",
                                precision="fp16", optimizer="lamb")
    setup = start_run(settings, SETTINGS_FILE)
    with setup.strategy.scope():
        model = AlbertClassifier(AlbertBackbone(tiny_config(), dtype=setup.policy), 2)
    setup.compile(model)
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert type(model.optimizer.inner_optimizer).__name__ == "Lamb"
    assert setup.chief and setup.replicas == 1
    assert "fp16" not in setup.describe() and "mixed_float16" in setup.describe()
