import json
import os
import shutil

import numpy as np
import pytest

import albert_tf
from albert_tf import extras
from albert_tf.backbone import AlbertBackbone
from albert_tf.checkpoints import CheckpointError, google, hf
from albert_tf.models.pretraining import AlbertPretrainingModel
from helpers import reference, tiny_config, tiny_inputs

TOL = 1e-4


def _check(outputs, expected, mask, heads):
    real = mask.astype(bool)
    np.testing.assert_allclose(outputs["sequence_output"].numpy()[real],
                               expected["sequence_output"][real], atol=TOL)
    np.testing.assert_allclose(outputs["pooled_output"], expected["pooled_output"], atol=TOL)
    if heads:
        np.testing.assert_allclose(outputs["mlm_logits"].numpy()[real],
                                   expected["mlm_logits"][real], atol=TOL)
        np.testing.assert_allclose(outputs["sop_logits"], expected["sop_logits"], atol=TOL)


@pytest.mark.parametrize("name", ["tiny", "tiny_grouped"])
@pytest.mark.parametrize("fmt", ["google", "hf", pytest.param("keras_hub", marks=pytest.mark.skipif(
    not extras.available("keras-hub"), reason="keras-hub presets need the keras-hub extra"))])
def test_reference_formats_reproduce_expected(name, fmt):
    inputs, expected, folder = reference(name)
    heads = fmt != "keras_hub"  # keras-hub presets hold the backbone only
    model = albert_tf.load_pretrained(os.path.join(folder, fmt), with_heads=heads)
    assert albert_tf.detect_format(os.path.join(folder, fmt)) == fmt
    _check(model(inputs), expected, inputs["padding_mask"], heads)


def test_backbone_only_skips_heads():
    inputs, expected, folder = reference("tiny_grouped")
    model = albert_tf.load_pretrained(os.path.join(folder, "google"))
    assert isinstance(model, AlbertBackbone)
    _check(model(inputs), expected, inputs["padding_mask"], heads=False)


def test_google_checkpoint_prefix_accepted():
    inputs, expected, folder = reference("tiny")
    model = albert_tf.load_pretrained(os.path.join(folder, "google", "model.ckpt"))
    _check(model(inputs), expected, inputs["padding_mask"], heads=False)


def test_hf_without_prefix_and_heads(tmp_path):
    from safetensors.numpy import load_file, save_file

    inputs, expected, folder = reference("tiny")
    shutil.copy(os.path.join(folder, "hf", "config.json"), tmp_path)
    tensors = load_file(os.path.join(folder, "hf", "model.safetensors"))
    # As AlbertModel saves it: no "albert." prefix, no pretraining heads.
    save_file({k[len("albert."):]: v for k, v in tensors.items() if k.startswith("albert.")},
              str(tmp_path / "model.safetensors"))
    model = albert_tf.load_pretrained(str(tmp_path))
    _check(model(inputs), expected, inputs["padding_mask"], heads=False)
    with pytest.raises(CheckpointError, match="missing from the checkpoint") as e:
        albert_tf.load_pretrained(str(tmp_path), with_heads=True)
    assert "predictions.dense.weight" in str(e.value)


@pytest.mark.parametrize("sharing", ["all", "attention", "ffn", "none"])
def test_native_round_trip(tmp_path, sharing):
    model = AlbertPretrainingModel(AlbertBackbone(tiny_config(sharing=sharing)))
    x = tiny_inputs()
    albert_tf.save_pretrained(model, str(tmp_path / "m"))
    assert albert_tf.detect_format(str(tmp_path / "m")) == "albert_tf"
    loaded = albert_tf.load_pretrained(str(tmp_path / "m"), with_heads=True)
    assert loaded.config == model.config
    for key, value in model(x).items():
        np.testing.assert_array_equal(loaded(x)[key], value)
    backbone = albert_tf.load_pretrained(str(tmp_path / "m"))
    np.testing.assert_array_equal(backbone(x)["pooled_output"], model(x)["pooled_output"])


@pytest.mark.parametrize("heads", [True, False])
@pytest.mark.parametrize("sharing,groups", [("all", 3), ("none", 1)])
def test_hf_export_round_trip(tmp_path, heads, sharing, groups):
    backbone = AlbertBackbone(tiny_config(sharing=sharing, num_groups=groups))
    model = AlbertPretrainingModel(backbone) if heads else backbone
    albert_tf.export_hf(model, str(tmp_path / "hf"))
    with open(tmp_path / "hf" / "config.json") as f:
        assert json.load(f)["architectures"] == [
            "AlbertForPreTraining" if heads else "AlbertModel"]
    loaded = albert_tf.load_pretrained(str(tmp_path / "hf"), with_heads=heads)
    x = tiny_inputs()
    for key, value in model(x).items():
        np.testing.assert_array_equal(loaded(x)[key], value)


def test_hf_export_matches_reference_layout(tmp_path):
    from safetensors.numpy import load_file

    _, _, folder = reference("tiny_grouped")
    model = albert_tf.load_pretrained(os.path.join(folder, "hf"), with_heads=True)
    albert_tf.export_hf(model, str(tmp_path / "out"))
    ours = load_file(str(tmp_path / "out" / "model.safetensors"))
    theirs = load_file(os.path.join(folder, "hf", "model.safetensors"))
    assert sorted(ours) == sorted(theirs)
    for key in theirs:
        np.testing.assert_array_equal(ours[key], theirs[key])


def test_partial_sharing_cannot_export_hf(tmp_path):
    with pytest.raises(ValueError, match="sharing='ffn' cannot be written"):
        albert_tf.export_hf(AlbertBackbone(tiny_config(sharing="ffn")), str(tmp_path / "x"))
    assert not os.path.exists(tmp_path / "x")
    assert os.listdir(tmp_path) == []  # no half-written folder left behind


def test_shape_mismatch_lists_offenders(tmp_path):
    _, _, folder = reference("tiny")
    shutil.copytree(os.path.join(folder, "hf"), tmp_path / "hf")
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    config["intermediate_size"] = 41
    (tmp_path / "hf" / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError) as e:
        albert_tf.load_pretrained(str(tmp_path / "hf"))
    message = str(e.value)
    assert "shape mismatches (3)" in message
    assert ("encoder.albert_layer_groups.0.albert_layers.0.ffn.weight: checkpoint (40, 24) "
            "(stored transposed), model ffn_0/intermediate/kernel (24, 41)") in message
    assert "ffn.bias: checkpoint (40,), model ffn_0/intermediate/bias (41,)" in message


def test_extra_group_is_unexpected(tmp_path):
    _, _, folder = reference("tiny_grouped")
    shutil.copytree(os.path.join(folder, "google"), tmp_path / "g")
    config = json.loads((tmp_path / "g" / "albert_config.json").read_text())
    config["num_hidden_groups"] = 1
    (tmp_path / "g" / "albert_config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="unexpected in the checkpoint \\(16\\)") as e:
        albert_tf.load_pretrained(str(tmp_path / "g"))
    assert "bert/encoder/transformer/group_1/inner_group_0/LayerNorm/beta" in str(e.value)


def test_unknown_folder_is_named(tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"\0")
    with pytest.raises(CheckpointError, match="not a known checkpoint folder") as e:
        albert_tf.load_pretrained(str(tmp_path))
    assert "weights.bin" in str(e.value)


def test_bad_config_field_in_checkpoint_is_named(tmp_path):
    _, _, folder = reference("tiny")
    shutil.copytree(os.path.join(folder, "google"), tmp_path / "g")
    config = json.loads((tmp_path / "g" / "albert_config.json").read_text())
    config["num_attention_heads"] = 5
    (tmp_path / "g" / "albert_config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="albert_config.json: AlbertConfig.hidden_dim=24 must be "
                                         "divisible by num_heads=5"):
        albert_tf.load_pretrained(str(tmp_path / "g"))


def test_training_state_and_task_heads_are_skipped():
    for key in ("global_step", "bert/pooler/dense/kernel/adam_m",
                "bert/embeddings/word_embeddings/adam_v", "output_weights",
                "cls/squad/output_bias"):
        assert google.skip(key, heads=True)
    assert google.skip("cls/predictions/output_bias", heads=False)
    assert not google.skip("cls/predictions/output_bias", heads=True)
    assert not google.skip("bert/encoder/transformer/group_9/inner_group_0/LayerNorm/beta", True)
    assert hf.skip("predictions.decoder.weight", heads=True)
    assert hf.skip("classifier.weight", heads=False)


def test_failed_save_leaves_previous_checkpoint(tmp_path, monkeypatch):
    model = AlbertBackbone(tiny_config())
    target = str(tmp_path / "m")
    albert_tf.save_pretrained(model, target)
    before = sorted(os.listdir(target))

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("albert_tf.checkpoints.native.save_file", broken)
    with pytest.raises(OSError, match="disk full"):
        albert_tf.save_pretrained(model, target)
    assert sorted(os.listdir(target)) == before
    assert sorted(os.listdir(tmp_path)) == ["m"]
    albert_tf.load_pretrained(target)


def test_init_from_group0_grows_a_model(tmp_path):
    from albert_tf.checkpoints import init_from_group0

    small = AlbertPretrainingModel(AlbertBackbone(tiny_config(num_layers=2,
                                                              initializer_range=0.3)))
    albert_tf.save_pretrained(small, str(tmp_path / "small"))
    grown = AlbertPretrainingModel(AlbertBackbone(tiny_config(num_layers=4, num_groups=2)))
    init_from_group0(grown, str(tmp_path / "small"))
    for a in ("attention_0", "attention_1"):
        np.testing.assert_array_equal(
            grown.backbone.attention_blocks[int(a[-1])].query.kernel.numpy(),
            small.backbone.attention_blocks[0].query.kernel.numpy())
    # Both groups equal the small model's one group: the grown model computes
    # what the small one does with every layer applied twice as often.
    twice = AlbertPretrainingModel(AlbertBackbone(tiny_config(num_layers=4)))
    init_from_group0(twice, str(tmp_path / "small"))
    x = tiny_inputs()
    np.testing.assert_allclose(grown(x)["mlm_logits"], twice(x)["mlm_logits"], atol=1e-5)
    np.testing.assert_array_equal(grown.mlm_head.output_bias.numpy(),
                                  small.mlm_head.output_bias.numpy())


def test_init_from_group0_rejects_other_widths(tmp_path):
    from albert_tf.checkpoints import init_from_group0

    albert_tf.save_pretrained(AlbertBackbone(tiny_config()), str(tmp_path / "small"))
    wide = AlbertBackbone(tiny_config(hidden_dim=8))
    with pytest.raises(CheckpointError, match="cannot initialise the model from group 0"):
        init_from_group0(wide, str(tmp_path / "small"))
