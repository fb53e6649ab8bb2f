"""LoRA: adapters on the query and value projections of a frozen backbone, the
trainable count, a run whose model folder holds only the adapters and the head,
and that folder loaded back with the adapters merged (equal to the unmerged model)."""

import json
import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file

import cli_helpers as cli
from albert_tf import tasks
from albert_tf import load_tokenizer, lora, save_pretrained
from albert_tf.backbone import AlbertBackbone
from albert_tf.config import AlbertConfig
from albert_tf.models import AlbertClassifier
from albert_tf.training.finetuning import Run, run
from albert_tf.training.settings import FinetuneSettings
from helpers import tiny_config, tiny_inputs
from albert_tf.tasks.base import Example
from albert_tf.tasks.finetuned import export_model, load_finetuned

CLASSIFY = tasks.get("text_classification")


def _count(variables):
    return sum(int(np.prod(v.shape)) for v in variables)


@pytest.mark.parametrize("sharing,modules", [("all", 1), ("none", 3)])
def test_trainable_parameters_are_rank_times_in_plus_out_per_matrix_and_the_head(sharing,
                                                                                 modules):
    config = tiny_config(sharing=sharing)
    model = AlbertClassifier(AlbertBackbone(config), 5)
    lora.enable_lora(model.backbone, 2, alpha=3)
    hidden = config.hidden_dim
    head = hidden * 5 + 5
    per_matrix = 2 * (hidden + hidden)
    assert _count(model.trainable_variables) == modules * 2 * per_matrix + head
    assert lora.adapter_parameters(config, 2) == modules * 2 * per_matrix
    names = {v.path for v in model.trainable_variables}
    assert names == {f"attention_{j}/{t}/lora_kernel_{f}" for j in range(modules)
                     for t in ("query", "value") for f in "ab"} | {"classifier/kernel",
                                                                 "classifier/bias"}


def test_albert_base_rank_8_has_24576_adapter_parameters():
    assert lora.adapter_parameters(AlbertConfig.preset("albert_base"), 8) == 24_576


def test_adapters_start_at_the_pretrained_model_and_only_they_and_the_head_train():
    keras.utils.set_random_seed(3)
    model = AlbertClassifier(AlbertBackbone(tiny_config()), 4)
    x = tiny_inputs()
    before = model(x)["logits"].numpy()
    lora.enable_lora(model.backbone, 3)
    np.testing.assert_allclose(model(x)["logits"], before, atol=1e-6)  # B starts at zero
    weights = {v.path: v.numpy().copy() for v in model.weights}
    model.compile(optimizer=keras.optimizers.SGD(0.5))
    model.fit(x, {"label": np.array([0, 3, 1])}, epochs=2, verbose=0)
    changed = {v.path for v in model.weights if not np.array_equal(weights[v.path], v.numpy())}
    assert changed <= {v.path for v in model.trainable_variables}
    assert {"classifier/kernel", "attention_0/value/lora_kernel_b"} <= changed


def _backbone_folder(tmp_path):
    tokenizer = load_tokenizer(cli.SPM, host=True)
    with open(cli.tiny_model(str(tmp_path))) as f:
        config = AlbertConfig(**json.load(f))
    keras.utils.set_random_seed(11)
    return save_pretrained(AlbertBackbone(config), str(tmp_path / "backbone"),
                           tokenizer=tokenizer)


def _rows(path, count, seed):
    rng = np.random.default_rng(seed)
    words = ["good", "bad", "fine", "awful", "great"]
    lines = ["text,label"] + [f"{' '.join(rng.choice(words, 4))},{'ab'[i % 2]}"
                              for i in range(count)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _settings(tmp_path, backbone, **changes):
    return FinetuneSettings(**{
        "task": CLASSIFY.name, "output_dir": str(tmp_path / "run"),
        "init_checkpoint": backbone, "strategy": "one_device", "precision": "fp32",
        "batch_size": 4, "train_steps": 4, "warmup_steps": 1, "max_seq_length": 16,
        "learning_rate": 3e-2, "checkpoint_every": 2, "lora_rank": 2, "lora_alpha": 4,
        "task_options": {"train_file": _rows(tmp_path / "train.csv", 16, 1),
                         "eval_file": _rows(tmp_path / "dev.csv", 5, 2)}, **changes})


def test_a_lora_run_saves_adapters_and_head_and_loads_back_merged(tmp_path, capsys):
    backbone = _backbone_folder(tmp_path)
    out = tmp_path / "run"
    settings = _settings(tmp_path, backbone)
    runs = []
    run(CLASSIFY, settings, verbose=True,
        make_run=lambda *args: runs.append(Run(*args)) or runs[-1])
    report = capsys.readouterr().out
    assert "lora: rank 2, 128 adapter parameters + 34 in the head trained and saved" in report
    trained = runs[0].model
    hidden = trained.backbone.config.hidden_dim
    assert _count(trained.trainable_variables) == 2 * 2 * (hidden + hidden) + hidden * 2 + 2

    model_dir = out / "model"
    tensors = load_file(str(model_dir / "model.safetensors"))
    assert set(tensors) == {v.path for v in trained.trainable_variables}
    with open(model_dir / "albert_tf_config.json") as f:
        assert json.load(f)["lora"] == {"rank": 2, "alpha": 4.0,
                                        "backbone": os.path.abspath(backbone)}
    assert np.abs(tensors["attention_0/value/lora_kernel_b"]).max() > 0  # it trained
    # Training checkpoints hold no backbone weight either.
    trainable = _count(trained.trainable_variables)
    saved = tf.train.list_variables(str(out / "checkpoints"))
    assert sum(int(np.prod(shape)) for _, shape in saved) <= 3 * trainable + 8  # + Adam's two


    _, _, merged, _ = load_finetuned(str(model_dir))
    assert not lora.lora_enabled(merged.backbone)
    assert not any(lora.is_adapter(v.path) for v in merged.weights)
    x = tiny_inputs(vocabulary_size=30000)
    np.testing.assert_allclose(merged(x)["logits"], trained(x)["logits"], atol=1e-5)
    query = merged.backbone.attention_blocks[0].query.kernel.numpy()
    base = load_file(os.path.join(backbone, "model.safetensors"))["attention_0/query/kernel"]
    assert np.abs(query - base).max() > 1e-4  # the adapters are in the kernel

    shutil.move(backbone, str(tmp_path / "moved"))
    with pytest.raises(ValueError) as info:
        load_finetuned(str(model_dir))
    assert os.path.abspath(backbone) in str(info.value) and "\n" not in str(info.value)


def test_lora_needs_a_backbone_checkpoint_and_alpha_needs_a_rank(tmp_path):
    with pytest.raises(ValueError, match="lora_rank=4 needs an init_checkpoint"):
        FinetuneSettings(task="rte", output_dir=str(tmp_path), lora_rank=4)
    with pytest.raises(ValueError, match="lora_alpha=8.0 needs lora_rank >= 1"):
        FinetuneSettings(task="rte", output_dir=str(tmp_path), lora_alpha=8.0)


@pytest.mark.slow
def test_a_lora_run_resumes_and_its_merged_export_answers_as_the_unmerged_model(tmp_path):
    backbone = _backbone_folder(tmp_path)
    stopped = run(CLASSIFY, _settings(tmp_path, backbone, do_eval=False), verbose=False)
    assert stopped["train"]["step"] == 4
    # Resumed: adapters, head and optimizer from its checkpoint, the backbone from its own.
    runs = []
    settings = _settings(tmp_path, backbone, train_steps=6)
    resumed = run(CLASSIFY, settings, verbose=False,
                  make_run=lambda *args: runs.append(Run(*args)) or runs[-1])
    assert resumed["train"]["step"] == 6 and resumed["train"]["resumed_from"] == 4
    assert "accuracy" in resumed["dev"]

    texts = ["good awful fine", "bad bad great good awful fine bad great good awful fine x"]
    features = CLASSIFY.featurize([Example(str(i), t, None) for i, t in enumerate(texts)],
                                  runs[0].tokenizer, runs[0].settings, "test")
    inputs = {k: v.astype("int32") for k, v in features.arrays.items()}
    inputs["padding_mask"] = (np.arange(16)[None] < features.lengths[:, None]).astype("int32")
    unmerged = tf.nn.softmax(runs[0].model(inputs)["logits"]).numpy()
    version = export_model(str(tmp_path / "run" / "model"), str(tmp_path / "export"))
    serve = tf.saved_model.load(version).signatures["serving_default"]
    got = serve(text=tf.constant(texts))["probabilities"].numpy()
    np.testing.assert_allclose(got, unmerged, atol=1e-5)


def test_sizes_are_readable_at_any_scale():
    """A tiny model's adapters are kilobytes: never "(0.0 MB)"."""
    from albert_tf.lora import size_text

    assert [size_text(n) for n in (512, 24_576, 1_234_567, 46_000_000, 2.3e9)] == [
        "512 B", "24.6 kB", "1.23 MB", "46 MB", "2.3 GB"]
