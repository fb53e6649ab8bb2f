"""Task models: `from_config(get_config())`, a saved head config and `.keras` files
round-trip."""

import keras
import numpy as np
import pytest

from albert_tf.backbone import AlbertBackbone
from albert_tf.models import (AlbertBeamQA, AlbertClassifier, AlbertMultipleChoice,
                              AlbertPretrainingModel, AlbertSpanQA, AlbertTokenClassifier)
from albert_tf.tasks.text_classification.model import TextClassifier
from helpers import BATCH, SEQ, tiny_config, tiny_inputs

# Each builds a task model, with non-default head arguments, on a backbone.
TASK_MODELS = {
    "classifier": lambda backbone: AlbertClassifier(backbone, num_classes=5, dropout=0.2),
    "span_qa": AlbertSpanQA,
    "beam_qa": lambda backbone: AlbertBeamQA(backbone, start_n_top=4, end_n_top=2, dropout=0.3),
    # (its sentence head trained on NSP pairs: its metrics are named so)
    "pretraining": lambda backbone: AlbertPretrainingModel(backbone, sentence_task="nsp"),
}
# Every task head, with non-default constructor arguments.
HEADS = {
    **TASK_MODELS,
    "multiple_choice": lambda backbone: AlbertMultipleChoice(backbone, dropout=0.2),
    "token_classifier": lambda backbone: AlbertTokenClassifier(backbone, num_tags=4,
                                                               dropout=0.3, crf=True),
    "text_classifier": lambda backbone: TextClassifier(
        backbone, ["b", "a", "c"], multi_label=True, class_weights=(1.0, 2.0, 0.5),
        threshold=0.7, threshold_source="given", dropout=0.2),
}


def _inputs():
    x = tiny_inputs()
    p_mask = np.ones((BATCH, SEQ), "int32")
    p_mask[:, 0] = 0  # [CLS]
    p_mask[:, 2:6] = 0  # the context
    x["p_mask"] = p_mask
    x["mask_positions"] = np.array([[1, 5], [0, 4], [3, 2]], "int32")
    return x


def _task_model(kind, policy=None):
    keras.utils.set_random_seed(5)
    backbone = AlbertBackbone(tiny_config(num_groups=3, layer_norm_epsilon=1e-6,
                                          initializer_range=0.4), dtype=policy)
    return TASK_MODELS[kind](backbone)


def _assert_same_outputs(expected, got):
    assert sorted(got) == sorted(expected)
    for name in expected:
        np.testing.assert_array_equal(np.asarray(got[name], "float32"),
                                      np.asarray(expected[name], "float32"), err_msg=name)


@pytest.mark.parametrize("kind", sorted(TASK_MODELS))
def test_from_config_rebuilds_the_same_model(kind):
    model = _task_model(kind)
    config = model.get_config()
    rebuilt = type(model).from_config(config)
    assert type(rebuilt) is type(model)
    assert rebuilt.get_config() == config
    assert rebuilt.config == model.config
    assert rebuilt.head_config() == model.head_config()
    assert [v.path for v in rebuilt.weights] == [v.path for v in model.weights]
    if kind == "pretraining":  # what the progress line and its logs call the head's figures
        assert [m.name for m in rebuilt.metrics][-3:] == [
            "mlm_accuracy", "nsp_accuracy", "nsp_baseline"]


@pytest.mark.parametrize("kind", sorted(HEADS))
def test_get_config_and_the_saved_head_config_rebuild_the_same_head(kind):
    keras.utils.set_random_seed(5)
    model = HEADS[kind](AlbertBackbone(tiny_config()))
    rebuilt = type(model).from_config(model.get_config())
    assert rebuilt.get_config() == model.get_config()
    assert rebuilt.head_config() == model.head_config()
    # What a fine-tuned model folder records, on a backbone of its own.
    head = {k: v for k, v in model.head_config().items() if k not in model.head_labels}
    again = type(model)(AlbertBackbone(tiny_config()), **head)
    assert again.head_config() == model.head_config()
    assert [v.shape for v in again.weights] == [v.shape for v in model.weights]


@pytest.mark.parametrize("policy", [None, "mixed_bfloat16"])
@pytest.mark.parametrize("kind", sorted(TASK_MODELS))
def test_keras_file_round_trip(tmp_path, kind, policy):
    model = _task_model(kind, policy)
    x = _inputs()
    expected = model(x, training=False)
    path = str(tmp_path / f"{kind}.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded) is type(model)
    assert loaded.get_config() == model.get_config()
    assert loaded.backbone.dtype_policy.name == model.backbone.dtype_policy.name
    _assert_same_outputs(expected, loaded(x, training=False))
    # The weights came from the file: a model rebuilt from the config alone differs.
    fresh = type(model).from_config(model.get_config())(x, training=False)
    name = sorted(expected)[-1]
    assert not np.array_equal(np.asarray(fresh[name], "float32"),
                              np.asarray(expected[name], "float32"))
