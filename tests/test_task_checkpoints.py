"""Fine-tuned checkpoints written with Google's variable names load into task models."""

import keras
import numpy as np
import pytest

from albert_tf import checkpoints
from albert_tf.backbone import AlbertBackbone
from albert_tf.models import AlbertClassifier, AlbertSpanQA, AlbertBeamQA
from helpers import tiny_config, tiny_inputs, to_google_checkpoint


def _inputs():
    x = tiny_inputs()
    x["p_mask"] = np.zeros_like(x["token_ids"])
    x["p_mask"][:, 1:3] = 1
    return x


@pytest.mark.parametrize("build", [
    lambda b: AlbertClassifier(b, 3),
    lambda b: AlbertSpanQA(b),
    lambda b: AlbertBeamQA(b, start_n_top=2, end_n_top=3),
], ids=["classifier", "span", "beam"])
def test_google_named_task_checkpoint_round_trip(tmp_path, build):
    keras.utils.set_random_seed(5)
    source = build(AlbertBackbone(tiny_config(initializer_range=0.3)))
    folder = to_google_checkpoint(source, str(tmp_path / "google"), source.head_kind)
    keras.utils.set_random_seed(6)
    target = build(AlbertBackbone(tiny_config(initializer_range=0.3)))
    checkpoint = checkpoints.read_checkpoint(folder)
    assert checkpoint.format == "google"
    assert checkpoints.load_task_weights(target, checkpoint)  # the head was there
    x = _inputs()
    for name, value in source(x, training=False).items():
        np.testing.assert_allclose(target(x, training=False)[name], value, atol=1e-6,
                                   err_msg=name)


def test_pretrained_checkpoint_leaves_the_head_initialised(tmp_path):
    backbone = AlbertBackbone(tiny_config())
    folder = to_google_checkpoint(backbone, str(tmp_path / "google"))
    model = AlbertBeamQA(AlbertBackbone(tiny_config()))
    head_before = model.answer_dense_0.kernel.numpy().copy()
    assert not checkpoints.load_task_weights(model, checkpoints.read_checkpoint(folder))
    np.testing.assert_array_equal(model.answer_dense_0.kernel.numpy(), head_before)
    x = _inputs()
    np.testing.assert_allclose(model.backbone(x)["sequence_output"],
                               backbone(x)["sequence_output"], atol=1e-6)


def test_head_of_another_shape_is_named(tmp_path):
    source = AlbertClassifier(AlbertBackbone(tiny_config()), 3)
    folder = to_google_checkpoint(source, str(tmp_path / "google"), "classifier")
    target = AlbertClassifier(AlbertBackbone(tiny_config()), 2)
    with pytest.raises(checkpoints.CheckpointError, match=r"output_weights: checkpoint \(3, 6\)"):
        checkpoints.load_task_weights(target, checkpoints.read_checkpoint(folder))


def test_native_pretraining_checkpoint_initialises_a_classifier(tmp_path):
    import albert_tf
    from albert_tf.models import AlbertPretrainingModel

    pretrained = AlbertPretrainingModel(AlbertBackbone(tiny_config()))
    albert_tf.save_pretrained(pretrained, str(tmp_path / "pretrained"))
    model = AlbertClassifier(AlbertBackbone(tiny_config()), 2)
    assert not checkpoints.load_task_weights(
        model, checkpoints.read_checkpoint(str(tmp_path / "pretrained")))
    x = _inputs()
    np.testing.assert_allclose(model.backbone(x)["pooled_output"],
                               pretrained.backbone(x)["pooled_output"], atol=1e-6)
