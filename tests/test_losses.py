"""The classification losses (`--loss=focal`, `--focal_gamma`, `--label_smoothing`):
checked against Keras' own losses, in every head that takes them, and refused by
the tasks whose head is no softmax over classes."""

import keras
import numpy as np
import pytest

from albert_tf import tasks
from albert_tf.backbone import AlbertBackbone
from albert_tf.models import AlbertClassifier, AlbertMultipleChoice, AlbertTokenClassifier
from albert_tf.models.losses import binary_loss, categorical_loss
from albert_tf.tasks.text_classification.model import TextClassifier
from albert_tf.training.settings import FinetuneSettings
from helpers import tiny_config, tiny_inputs

LOGITS = np.array([[2.0, -1.0, 0.5, 0.0, 3.0], [0.1, 0.2, -0.3, 1.5, -2.0],
                   [-1.0, 4.0, 0.0, 0.5, 1.0]], "float32")  # (3 examples, 5 classes)
LABELS = np.array([4, 0, 2], "int32")
LOSSES = [({"kind": "cross_entropy", "label_smoothing": 0.1}, 0.1, 0.0),
          ({"kind": "cross_entropy", "label_smoothing": 0.0}, 0.0, 0.0),
          ({"kind": "focal", "label_smoothing": 0.0, "gamma": 2.0}, 0.0, 2.0),
          ({"kind": "focal", "label_smoothing": 0.2, "gamma": 0.5}, 0.2, 0.5)]


def _keras_categorical(smoothing, gamma, labels, logits):
    one_hot = keras.ops.one_hot(labels, logits.shape[-1])
    if gamma:
        loss = keras.losses.CategoricalFocalCrossentropy(
            alpha=1.0, gamma=gamma, from_logits=True, label_smoothing=smoothing, reduction=None)
    else:
        loss = keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=smoothing,
                                                    reduction=None)
    return np.asarray(loss(one_hot, logits))


@pytest.mark.parametrize("loss,smoothing,gamma", LOSSES)
def test_categorical_loss_is_keras(loss, smoothing, gamma):
    np.testing.assert_allclose(categorical_loss(LABELS, LOGITS, loss),
                               _keras_categorical(smoothing, gamma, LABELS, LOGITS), rtol=2e-5)


def test_padded_choices_take_no_smoothing_and_no_loss():
    # Question 0 has 3 of the batch's 5 choice slots: its loss is Keras' over those 3.
    padded = LOGITS.copy()
    padded[0, 3:] = -np.inf
    labels = np.array([1, 0, 2], "int32")
    for loss, smoothing, gamma in LOSSES:
        got = np.asarray(categorical_loss(labels, padded, loss))
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got[0], _keras_categorical(smoothing, gamma, labels[:1],
                                                              LOGITS[:1, :3])[0], rtol=2e-5)
        np.testing.assert_allclose(got[1:], _keras_categorical(smoothing, gamma, labels[1:],
                                                               LOGITS[1:]), rtol=2e-5)


@pytest.mark.parametrize("loss,smoothing,gamma", LOSSES)
def test_binary_loss_is_keras(loss, smoothing, gamma):
    targets = (LOGITS > 0.3).astype("float32")
    targets[1] = 1 - targets[1]
    if gamma:
        keras_loss = keras.losses.BinaryFocalCrossentropy(
            gamma=gamma, from_logits=True, label_smoothing=smoothing, reduction=None)
    else:
        keras_loss = keras.losses.BinaryCrossentropy(from_logits=True,
                                                     label_smoothing=smoothing, reduction=None)
    # Keras' binary losses average the last axis: one unit a row, then compare per unit.
    expected = np.asarray(keras_loss(targets[..., None], LOGITS[..., None]))
    np.testing.assert_allclose(binary_loss(targets, LOGITS, loss), expected, rtol=2e-5)


def _backbone():
    keras.utils.set_random_seed(3)
    return AlbertBackbone(tiny_config())


FOCAL = {"kind": "focal", "label_smoothing": 0.1, "gamma": 1.5}


def test_every_classification_head_trains_on_the_loss_it_is_given():
    backbone, x = _backbone(), tiny_inputs()
    labels = np.array([2, 0, 1], "int32")
    heads = {"classifier": AlbertClassifier(backbone, 4, head_loss=FOCAL),
             "text": TextClassifier(backbone, ["a", "b", "c", "d"], head_loss=FOCAL,
                                    class_weights=(1.0, 2.0, 0.5, 1.0))}
    for name, model in heads.items():
        logits = np.asarray(model(x)["logits"])
        got = float(model.compute_loss(y={"label": labels}, y_pred={"logits": logits}))
        expected = _keras_categorical(0.1, 1.5, labels, logits)
        if name == "text":
            expected = expected * np.array([1.0, 2.0, 0.5, 1.0])[labels]
        np.testing.assert_allclose(got, expected.mean(), rtol=2e-5, err_msg=name)
        assert model.head_config()["head_loss"] == FOCAL  # saved with the model folder
    # Multi-label: each label's sigmoid.
    multi = TextClassifier(backbone, ["a", "b", "c"], multi_label=True, head_loss=FOCAL)
    targets = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 0]], "float32")
    logits = np.asarray(multi(x)["logits"])
    expected = keras.losses.BinaryFocalCrossentropy(
        gamma=1.5, from_logits=True, label_smoothing=0.1, reduction=None)(
        targets[..., None], logits[..., None])
    np.testing.assert_allclose(float(multi.compute_loss(y={"label": targets},
                                                        y_pred={"logits": logits})),
                               np.mean(expected), rtol=2e-5)


def test_token_and_choice_heads_take_the_loss():
    backbone, x = _backbone(), tiny_inputs()
    tokens = AlbertTokenClassifier(backbone, 5, head_loss=FOCAL)
    logits = np.asarray(tokens(x)["logits"])  # (3, 7, 5)
    labels = np.full((3, 7), -100, "int32")
    labels[:, 1], labels[0, 3], labels[2, 4] = [1, 4, 0], 2, 3
    tagged = labels != -100
    expected = _keras_categorical(0.1, 1.5, labels[tagged], logits[tagged]).mean()
    np.testing.assert_allclose(float(tokens.compute_loss(y={"label": labels},
                                                         y_pred={"logits": logits})),
                               expected, rtol=2e-5)
    with pytest.raises(ValueError, match="CRF head .* takes no focal loss"):
        AlbertTokenClassifier(backbone, 5, crf=True, head_loss=FOCAL)
    with pytest.raises(ValueError, match="regression head"):
        AlbertClassifier(backbone, 1, head_loss=FOCAL)
    choices = AlbertMultipleChoice(backbone, head_loss=FOCAL)
    logits = np.array([[0.3, -0.2, -np.inf], [1.0, 0.0, 2.0]], "float32")
    got = float(choices.compute_loss(y={"label": np.array([1, 2])}, y_pred={"logits": logits}))
    expected = [_keras_categorical(0.1, 1.5, np.array([1]), logits[:1, :2])[0],
                _keras_categorical(0.1, 1.5, np.array([2]), logits[1:])[0]]
    np.testing.assert_allclose(got, np.mean(expected), rtol=2e-5)


CLASSIFICATION = ("rte", "cola", "tnews", "text_classification", "token_classification",
                  "multiple_choice", "race", "c3", "chid")
NOT_CLASSIFICATION = ("stsb", "text_regression", "squad", "squad_v2", "cmrc2018")


def test_the_classification_tasks_take_the_loss_options_and_the_others_refuse_them():
    given = {"loss": "focal", "focal_gamma": 1.0, "label_smoothing": 0.1}
    for name in CLASSIFICATION:
        task = tasks.declared(name)
        options = task.options(FinetuneSettings(task=name, output_dir="x", task_options=given))
        assert options.head_loss() == {"kind": "focal", "label_smoothing": 0.1,
                                       "gamma": 1.0}, name
    for name in NOT_CLASSIFICATION:
        with pytest.raises(ValueError, match=f"task {name!r}.*label_smoothing"):
            tasks.declared(name).options(FinetuneSettings(task=name, output_dir="x",
                                                          task_options=given))
    with pytest.raises(ValueError, match="a CRF is trained by the tag sequence"):
        tasks.declared("token_classification").options(FinetuneSettings(
            task="token_classification", output_dir="x",
            task_options={"crf": True, "label_smoothing": 0.1}))
    with pytest.raises(ValueError, match="label_smoothing must be in"):
        tasks.declared("rte").options(FinetuneSettings(task="rte", output_dir="x",
                                                       task_options={"label_smoothing": 1.0}))
    # Cross-entropy without smoothing is the head's default loss.
    plain = tasks.declared("rte").options(FinetuneSettings(task="rte", output_dir="x"))
    assert plain.head_loss() is None


def test_a_built_task_model_carries_the_loss(tmp_path):
    task = tasks.get("rte")
    settings = FinetuneSettings(task="rte", output_dir=str(tmp_path),
                                task_options={"loss": "focal"})
    model = task.bind(settings).build_model(_backbone(), settings)
    assert model.head_loss == {"kind": "focal", "label_smoothing": 0.0, "gamma": 2.0}
