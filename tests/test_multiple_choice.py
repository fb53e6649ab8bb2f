"""Multiple choice: the shared encoding, the head, batching, metrics and the own-files reader.

References: run_race.py's packing written out as the reference states it
(`ending_tokens[-max_qa_length:]`, then the context cut to what is left),
numpy softmax cross-entropy, scikit-learn's accuracy.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
from sklearn.metrics import accuracy_score

from albert_tf import tasks
from albert_tf.backbone import AlbertBackbone
from albert_tf.tokenizer.loading import load_tokenizer
from albert_tf.data import Features
from albert_tf.models import AlbertMultipleChoice
from conftest import FIXTURES
from helpers import tiny_config
from albert_tf.tasks.multiple_choice.options import MultipleChoiceOptions
from albert_tf.tasks.multiple_choice.task import (ChoiceExample, choice_metrics, encode_choices,
                                                  qa_texts, read_choice_file,
                                                  write_choice_predictions)

OWN = os.path.join(FIXTURES, "mc", "own")
SPM = os.path.join(FIXTURES, "spm", "albert_30k_clean.model")
WORDPIECE = os.path.join(FIXTURES, "wordpiece", "vocab.txt")


def reference_sequence(context_ids, qa_ids, max_seq_length, max_qa_length, cls, sep):
    """race_utils.convert_single_example for one ending, as the reference writes it."""
    ending = list(qa_ids)[-max_qa_length:] if max_qa_length else []
    context = list(context_ids)
    if len(context) + len(ending) > max_seq_length - 3:
        context = context[:max_seq_length - 3 - len(ending)]
    tokens = [cls] + context + [sep] + ending + [sep]
    return tokens, [0] * (len(context) + 2) + [1] * (len(ending) + 1)


def reference_qa_text(question, choice, fill_blank):
    """race_utils.RaceProcessor.read_examples' question-choice text."""
    return question.replace("_", choice) if fill_blank and "_" in question else \
        question + " " + choice


@pytest.mark.parametrize("vocabulary, fill_blank", [(SPM, True), (WORDPIECE, False)],
                         ids=["sentencepiece-blanks", "wordpiece"])
def test_each_choice_is_packed_as_run_race_packs_it(vocabulary, fill_blank, monkeypatch):
    from albert_tf.tasks.multiple_choice import task as multiple_choice

    monkeypatch.setattr(multiple_choice, "BATCH_QUESTIONS", 3)  # two batches of questions
    tokenizer = load_tokenizer(vocabulary, host=True)
    examples = [
        ChoiceExample("a", "The cat sat on the mat by the door. " * 3 + "猫在门口的垫子上。",
                      "Where did the cat sit?", ("on the mat", "on a very long wooden chair")),
        ChoiceExample("b", "短文。", "问题?", ("甲", "乙", "丙", "丁", "戊")),
        ChoiceExample("c", "", "", ("x", "y")),
        ChoiceExample("d", "他_走了。", "他 _ 去了 _ 。" * 3, ("昨天", "_", "a long answer " * 4)),
    ]
    max_seq_length, max_qa_length = 17, 6
    arrays, lengths = encode_choices(examples, tokenizer, max_seq_length, max_qa_length,
                                     fill_blank)
    assert arrays["token_ids"].shape == (4, 5, 17) and arrays["choice_lengths"].shape == (4, 5)
    for i, example in enumerate(examples):
        context = tokenizer.encode(example.context)
        for j in range(5):
            if j >= len(example.choices):  # a padded slot: nothing in it
                assert arrays["choice_lengths"][i, j] == 0
                assert (arrays["token_ids"][i, j] == tokenizer.pad_id).all()
                assert (arrays["segment_ids"][i, j] == 0).all()
                continue
            qa = tokenizer.encode(reference_qa_text(example.question, example.choices[j],
                                                    fill_blank))
            tokens, segments = reference_sequence(context, qa, max_seq_length, max_qa_length,
                                                  tokenizer.cls_id, tokenizer.sep_id)
            n = len(tokens)
            assert arrays["choice_lengths"][i, j] == n
            assert arrays["token_ids"][i, j, :n].tolist() == tokens
            assert arrays["segment_ids"][i, j, :n].tolist() == segments
            assert (arrays["token_ids"][i, j, n:] == tokenizer.pad_id).all()
        assert lengths[i] == arrays["choice_lengths"][i].max()


def test_a_blank_is_filled_with_the_choice_as_race_does():
    def qa_text(question, choice, fill_blank):
        return qa_texts([ChoiceExample("x", "", question, (choice, "y"))], fill_blank)[0][0]

    assert qa_text("Tom walks his dog _ .", "at night", fill_blank=True) == \
        "Tom walks his dog at night ."
    assert qa_text("_ and _", "x", fill_blank=True) == "x and x"
    assert qa_text("Where is it?", "here", fill_blank=True) == "Where is it? here"
    assert qa_text("a _ b", "c", fill_blank=False) == "a _ b c"
    assert qa_text("行\n_。", "甲", fill_blank=True) == "行\n甲。"


def _model(seed=0):
    model = AlbertMultipleChoice(AlbertBackbone(tiny_config()), dropout=0.0)
    rng = np.random.default_rng(seed)
    for variable in model.weights:  # large weights: scores clearly differ between choices
        variable.assign(rng.normal(0, 0.5, variable.shape).astype(variable.dtype))
    return model


def _inputs(seed=1, batch=3, choices=4, seq=7):
    rng = np.random.default_rng(seed)
    lengths = np.array([[7, 5, 6, 0], [3, 7, 0, 0], [4, 4, 4, 7]], np.int32)
    return {"token_ids": rng.integers(0, 11, (batch, choices, seq)).astype(np.int32),
            "segment_ids": (np.arange(seq) >= 3).astype(np.int32)[None, None].repeat(
                batch, 0).repeat(choices, 1),
            "choice_lengths": lengths}


def test_each_choice_is_scored_alone_and_padded_choices_get_minus_infinity():
    model, inputs = _model(), _inputs()
    logits = model(inputs)["logits"].numpy()
    assert logits.shape == (3, 4) and logits.dtype == np.float32
    lengths = inputs["choice_lengths"]
    assert np.isneginf(logits[lengths == 0]).all() and np.isfinite(logits[lengths > 0]).all()
    for i in range(3):
        for j in np.flatnonzero(lengths[i]):
            row = {"token_ids": inputs["token_ids"][i, j][None],
                   "segment_ids": inputs["segment_ids"][i, j][None],
                   "padding_mask": (np.arange(7) < lengths[i, j]).astype(np.int32)[None]}
            np.testing.assert_allclose(model.score(row).numpy()[0], logits[i, j], atol=1e-5)
    # Changing a padded slot's tokens, or the padding of a choice, changes nothing.
    changed = dict(inputs, token_ids=inputs["token_ids"].copy())
    changed["token_ids"][0, 3] = 1
    changed["token_ids"][1, 0, 3:] = 2
    np.testing.assert_array_equal(model(changed)["logits"].numpy(), logits)


def test_the_loss_is_softmax_cross_entropy_over_the_real_choices():
    model, inputs = _model(), _inputs()
    labels = np.array([2, 1, 3], np.int32)
    logits = model(inputs)["logits"].numpy().astype(np.float64)
    expected = []
    for row, label, lengths in zip(logits, labels, inputs["choice_lengths"]):
        real = row[lengths > 0]
        expected.append(np.log(np.exp(real - real.max()).sum()) + real.max() - row[label])
    loss = model.compute_loss(y={"label": labels}, y_pred={"logits": tf.constant(logits,
                                                                              tf.float32)})
    np.testing.assert_allclose(float(loss), np.mean(expected), rtol=1e-5)
    with tf.GradientTape() as tape:
        loss = model.compute_loss(y={"label": labels}, y_pred=model(inputs, training=True))
    gradients = tape.gradient(loss, model.trainable_variables)
    assert all(np.isfinite(tf.convert_to_tensor(g).numpy()).all() for g in gradients)


def test_features_of_several_sequences_are_cut_on_their_last_axis():
    arrays = {"token_ids": np.arange(2 * 3 * 9, dtype=np.int32).reshape(2, 3, 9),
              "segment_ids": np.ones((2, 3, 9), np.int32),
              "choice_lengths": np.array([[9, 4, 0], [2, 3, 3]], np.int32),
              "label": np.array([1, 2], np.int32)}
    features = Features(arrays, np.array([9, 3], np.int32), label_keys=("label",))
    assert features.max_seq_length == 9
    assert features.is_token_level("segment_ids") and not features.is_token_level(
        "choice_lengths")
    batch = features.batch(np.array([1, -1]), 8)
    assert batch["token_ids"].shape == (2, 3, 8) and batch["choice_lengths"].shape == (2, 3)
    np.testing.assert_array_equal(batch["token_ids"][0], arrays["token_ids"][1, :, :8])
    assert (batch["token_ids"][1] == 0).all() and (batch["choice_lengths"][1] == 0).all()
    signature = features.signature()
    assert signature["token_ids"].shape.as_list() == [None, 3, None]
    assert signature["choice_lengths"].shape.as_list() == [None, 3]


def test_accuracy_overall_and_per_group_equals_scikit_learn():
    rng = np.random.default_rng(3)
    examples = [ChoiceExample(str(i), "", "", ("a", "b", "c", "d")[:2 + i % 3],
                              int(rng.integers(0, 2 + i % 3)), group=("middle", "high")[i % 2])
                for i in range(40)]
    predicted = rng.integers(0, 2, 40)
    labels = [e.label for e in examples]
    results = choice_metrics(examples, predicted)
    assert results["accuracy"] == pytest.approx(accuracy_score(labels, predicted))
    for group in ("middle", "high"):
        inside = [i for i, e in enumerate(examples) if e.group == group]
        assert results[f"{group}_accuracy"] == pytest.approx(
            accuracy_score([labels[i] for i in inside], predicted[inside]))
        assert results[f"{group}_questions"] == len(inside)
    assert results["chance_accuracy"] == pytest.approx(
        np.mean([1 / len(e.choices) for e in examples]))


def test_predictions_name_the_choice_with_probabilities_over_its_own_choices(tmp_path):
    examples = [ChoiceExample("q1", "", "", ("x", "y")),
                ChoiceExample("q2", "", "", ("u", "v", "w"))]
    logits = np.array([[0.0, 1.0, -np.inf], [2.0, 0.5, 3.0]], np.float32)
    path = str(tmp_path / "p.jsonl")
    write_choice_predictions(examples, logits, path)
    rows = [json.loads(line) for line in open(path, encoding="utf-8")]
    assert [r["choice"] for r in rows] == ["y", "w"] and rows[1]["choice_index"] == 2
    np.testing.assert_allclose(rows[0]["probabilities"], [1 / (1 + np.e), np.e / (1 + np.e)],
                               atol=1e-6)
    assert len(rows[1]["probabilities"]) == 3


def test_own_files_read_labels_as_index_or_text():
    train = read_choice_file(os.path.join(OWN, "train.jsonl"), "auto", "train", True)
    assert [e.label for e in train] == [0, 1, 2, 2, 0, 1]
    assert [len(e.choices) for e in train] == [3, 2, 5, 4, 2, 3]
    assert train[0].guid == "q1" and train[1].guid == "train-2" and train[4].guid == "17"
    predict = read_choice_file(os.path.join(OWN, "predict.jsonl"), "auto", "test", False)
    assert [e.label for e in predict] == [None, None]
    task = tasks.get("multiple_choice")
    options = MultipleChoiceOptions(train_file="train.jsonl", eval_file="dev.jsonl")
    assert len(task.read_examples(OWN, "dev", options)) == 3


BAD_ROWS = [
    ({"context": "c", "question": "q", "choices": ["a", "b"], "label": 2},
     ":1: field 'label': index 2 is out of range for 2 choices (0 to 1)"),
    ({"context": "c", "question": "q", "choices": ["a", "b"], "label": "z"},
     ":1: field 'label': 'z' is not among the choices [\"a\", \"b\"]"),
    ({"context": "c", "question": "q", "choices": ["a", "a"], "label": "a"},
     ":1: field 'label': 'a' is 2 of the choices"),
    ({"context": "c", "question": "q", "choices": ["a", "b"]},
     ":1: missing field 'label'"),
    ({"question": "q", "choices": ["a", "b"], "label": 0}, ":1: missing field 'context'"),
    ({"context": "c", "choices": ["a", "b"], "label": 0}, ":1: missing field 'question'"),
    ({"context": "c", "question": "q", "label": 0}, ":1: missing field 'choices'"),
    ({"context": "c", "question": "q", "choices": [], "label": 0},
     ":1: field 'choices': expected at least 2 choices, got 0"),
    ({"context": "c", "question": "q", "choices": ["a", " "], "label": 0},
     ":1: field 'choices[1]': empty choice"),
    ({"context": "c", "question": "q", "choices": ["a", 3], "label": 0},
     ":1: field 'choices[1]': expected a string, got an integer"),
    ({"context": "c", "question": "q", "choices": "a b", "label": 0},
     ":1: field 'choices': expected an array, got a string"),
    ({"context": "c", "question": "q", "choices": ["a", "b"], "label": True},
     ":1: field 'label': expected a choice's index (an integer) or its text"),
]


@pytest.mark.parametrize("row, message", BAD_ROWS)
def test_bad_rows_name_the_file_line_and_field(tmp_path, row, message):
    path = tmp_path / "train.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(ValueError) as error:
        read_choice_file(str(path), "auto", "train", True)
    assert str(error.value).startswith(str(path) + message)


def test_a_csv_file_is_refused_before_reading(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text("context,question\n", encoding="utf-8")
    with pytest.raises(ValueError, match="reads JSON lines"):
        read_choice_file(str(path), "auto", "train", True)
