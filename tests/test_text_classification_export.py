"""Exports of the own-file text tasks, reloaded in a fresh process: labels and
probabilities (multi-class), label sets (multi-label), scores (regression), hostile
inputs, TFLite, both vocabularies, and the command-line path from a CSV to predictions.

Slow tier: each export traces the tokenizer's graph, and the fresh processes import
TensorFlow."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import cli_helpers as cli
import export_helpers as helpers
from albert_tf import tasks
from albert_tf import load_tokenizer
from albert_tf.backbone import AlbertBackbone
from albert_tf.config import AlbertConfig
from albert_tf.export.formats.tflite.convert import TfliteModel
from albert_tf.training.finetuning import save_finetuned
from albert_tf.training.settings import FinetuneSettings
from conftest import FIXTURES
from albert_tf.tasks.finetuned import export_model

pytestmark = pytest.mark.slow

WORDPIECE = os.path.join(FIXTURES, "wordpiece", "vocab.txt")
INVALID_UTF8 = [b"caf\xc3", b"\xff\xfe broken \xe2\x82", b"\xed\xa0\x80 surrogate"]
HOSTILE = [b"", "a long review, ".encode() * 667, "!?.,;:()[]{}...---".encode(),
           "东京 Ελλάδα 🙂👍🏽".encode(), *INVALID_UTF8]  # the second is 10,005 characters
# Loads a SavedModel in a fresh process and prints its outputs on the given texts.
FRESH = """
import json, sys
import tensorflow as tf, tensorflow_text
version, names, texts = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
function = tf.saved_model.load(version).signatures["serving_default"]
inputs = {n: tf.constant([t.encode("latin-1") for t in texts]) for n in names}
out = function(**inputs)
print(json.dumps({k: v.numpy().tolist() if v.dtype != tf.string else
                  [[s.decode("utf-8") for s in r] if v.shape.rank == 2 else r.decode("utf-8")
                   for r in v.numpy()] for k, v in out.items()}))
"""


def _fresh_outputs(version, names, texts):
    """`serving_default` outputs on `texts` (bytes), from a new Python process."""
    result = subprocess.run(
        [sys.executable, "-c", FRESH, version, json.dumps(names),
         json.dumps([t.decode("latin-1") for t in texts])],
        capture_output=True, text=True, timeout=300, cwd=cli.ROOT, env=cli.env())
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _finetuned(tmp_path, vocabulary, rows, task_name="text_classification", **options):
    """A fine-tuned folder of a tiny model with large random weights, its training file
    `rows`; returns `(task, settings, model, model_dir)`."""
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                     encoding="utf-8")
    tokenizer = load_tokenizer(vocabulary, host=True)
    task = tasks.get(task_name)
    settings = FinetuneSettings(task=task_name, output_dir=str(tmp_path), max_seq_length=24,
                                dropout=0.0, classifier_dropout=0.0,
                                task_options={"train_file": str(train), **options})
    config = AlbertConfig(**dict(helpers.TINY, vocabulary_size=tokenizer.vocabulary_size))
    model = task.build_model(AlbertBackbone(config), settings)
    helpers.randomize(model, seed=5)
    model_dir = os.path.join(str(tmp_path), "model")
    save_finetuned(model, task, settings, model_dir, tokenizer)
    return task, settings, model, model_dir


def _host_logits(task, settings, model, model_dir, texts, pairs=None):
    """The model's logits on `texts` featurized on the host, as training does."""
    from albert_tf.tasks.base import Example

    tokenizer = load_tokenizer(model_dir, host=True)
    examples = [Example(str(i), t, None if pairs is None else pairs[i])
                for i, t in enumerate(texts)]
    features = task.featurize(examples, tokenizer, settings, "test")
    inputs = {k: v.astype("int32") for k, v in features.arrays.items()}
    inputs["padding_mask"] = (np.arange(settings.max_seq_length)[None]
                              < features.lengths[:, None]).astype("int32")
    return np.asarray(model(inputs, training=False)["logits"], np.float64)


def _softmax(logits):
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_multi_class_export_serves_labels_and_probabilities_in_a_fresh_process(tmp_path):
    rows = [{"text": t, "label": label} for t, label in
            [("good", "pos"), ("bad", "neg"), ("fine", "10"), ("meh", "pos")]]
    task, settings, model, model_dir = _finetuned(tmp_path, cli.SPM, rows)
    os.remove(tmp_path / "train.jsonl")  # the export reads the labels from the model folder
    version = export_model(model_dir, str(tmp_path / "export"), tflite=True)
    info = helpers.export_info(version)
    assert info["inputs"] == ["text"] and info["labels"] == ["10", "neg", "pos"]
    got = _fresh_outputs(version, ["text"], HOSTILE)
    decoded = [t.decode("utf-8", "replace") for t in HOSTILE]
    want = _softmax(_host_logits(task, settings, model, model_dir, decoded))
    np.testing.assert_allclose(got["probabilities"], want, atol=1e-5)
    assert got["label"] == [info["labels"][i] for i in np.argmax(want, -1)]
    # TFLite: token ids in, the same logits out.
    tflite = TfliteModel(os.path.join(version, info["formats"]["tflite"]["file"]))
    ids = helpers.signature(version, "encoded")
    inputs = {"token_ids": np.full((2, 24), 0, np.int32), "segment_ids": np.zeros((2, 24),
                                                                                  np.int32),
              "padding_mask": np.zeros((2, 24), np.int32)}
    inputs["token_ids"][:, :4] = [[2, 48, 25, 3], [2, 1289, 3, 0]]
    inputs["padding_mask"][:, :4] = [[1, 1, 1, 1], [1, 1, 1, 0]]
    np.testing.assert_allclose(tflite(**inputs)["logits"],
                               ids(**{k: v for k, v in inputs.items()})["logits"].numpy(),
                               atol=1e-4)


def test_multi_label_export_serves_label_sets_at_the_saved_threshold(tmp_path):
    rows = [{"text": "x", "tags": ["sport", "news"]}, {"text": "y", "tags": ["art"]}]
    task, settings, model, model_dir = _finetuned(tmp_path, cli.SPM, rows, label_column="tags",
                                                  multi_label=True, heldout_fraction=0.0)
    texts = [t.decode("utf-8", "replace") for t in HOSTILE]
    probabilities = 1 / (1 + np.exp(-_host_logits(task, settings, model, model_dir, texts)))
    # Between two of the probabilities (none on the boundary): some labels in, some out.
    ordered = np.sort(probabilities.ravel())
    threshold = float(ordered[len(ordered) // 2 - 1: len(ordered) // 2 + 1].mean())
    model.threshold, model.threshold_source = threshold, "test"
    save_finetuned(model, task, settings, model_dir, load_tokenizer(model_dir, host=True))
    version = export_model(model_dir, str(tmp_path / "export"))
    info = helpers.export_info(version)
    assert info["labels"] == ["art", "news", "sport"] and info["threshold"] == threshold
    got = _fresh_outputs(version, ["text"], HOSTILE)
    np.testing.assert_allclose(got["probabilities"], probabilities, atol=1e-5)
    for row, chosen, count in zip(probabilities, got["labels"], got["num_predicted"]):
        want = [name for name, p in zip(info["labels"], row) if p >= threshold]
        assert chosen[:count] == want and chosen[count:] == [""] * (3 - count)
    assert 0 < sum(got["num_predicted"]) < 3 * len(HOSTILE)
    # The export command's --threshold replaces the saved one; out of (0, 1) is refused.
    given = export_model(model_dir, str(tmp_path / "export"), threshold=0.999)
    assert helpers.export_info(given)["threshold"] == 0.999
    assert helpers.export_info(given)["threshold_source"] == "given"
    with pytest.raises(ValueError, match=r"threshold must be in \(0, 1\), got 1.5"):
        export_model(model_dir, str(tmp_path / "export"), threshold=1.5)


def test_chinese_pairs_through_a_wordpiece_export(tmp_path):
    pairs = [("这家餐厅的菜真好吃", "菜的味道很好"), ("他昨天去了北京。", "他没有离开上海！"),
             ("", "！？。"), ("好" * 3000, "")]
    rows = [{"a": a, "b": b, "label": label} for (a, b), label in zip(pairs, "是否是否")]
    task, settings, model, model_dir = _finetuned(tmp_path, WORDPIECE, rows, text_column="a",
                                                  text_pair_column="b")
    version = export_model(model_dir, str(tmp_path / "export"))
    assert helpers.export_info(version)["inputs"] == ["text_a", "text_b"]
    assert helpers.export_info(version)["columns"] == {"text_a": "a", "text_b": "b"}
    got = helpers.serve(version, text_a=[a for a, _ in pairs], text_b=[b for _, b in pairs])
    want = _softmax(_host_logits(task, settings, model, model_dir, [a for a, _ in pairs],
                                 [b for _, b in pairs]))
    np.testing.assert_allclose(got["probabilities"], want, atol=1e-5)


def test_regression_export_serves_scores(tmp_path):
    rows = [{"text": "a", "label": 1.5}, {"text": "b", "label": 4}]
    task, settings, model, model_dir = _finetuned(tmp_path, cli.SPM, rows, "text_regression")
    version = export_model(model_dir, str(tmp_path / "export"))
    assert helpers.export_info(version)["labels"] is None
    texts = ["", "a fine day", "!!!"]
    got = helpers.serve(version, text=texts)
    np.testing.assert_allclose(got["score"], _host_logits(task, settings, model, model_dir,
                                                          texts)[:, 0], atol=1e-5)


def test_from_a_csv_to_predictions_with_the_commands(tmp_path):
    header = "id,review,stars"
    lines = [f'r{i},"{text}",{label}' for i, (text, label) in enumerate(
        [("A great, moving film.", "pos"), ("Dull.\nToo long.", "neg"), ("Loved it!", "pos"),
         ("Awful acting", "neg"), ("", "neg"), ("Superb", "pos")] * 3)]
    for name in ("train", "dev", "test"):
        (tmp_path / f"{name}.csv").write_text("\n".join([header, *lines]) + "\n",
                                              encoding="utf-8")
    out = tmp_path / "run"
    result = cli.run("albert_tf.finetune", "--task=text_classification",
                     f"--train_file={tmp_path / 'train.csv'}", "--eval_file=dev.csv",
                     "--predict_file=test.csv", f"--data_dir={tmp_path}",
                     "--text_column=review", "--label_column=stars", "--class_weights=balanced",
                     f"--spm_model={cli.SPM}", f"--model={cli.tiny_model(tmp_path)}",
                     f"--output_dir={out}", "--batch_size=4", "--max_seq_length=32",
                     "--train_steps=4", "--warmup_steps=1", "--learning_rate=1e-3",
                     "--precision=fp32", "--do_predict", "--export")
    assert result.returncode == 0, result.stderr[-3000:]
    dev = cli.results(out)["dev"]
    assert dev["examples"] == 18 and dev["baseline_accuracy"] == 0.5
    assert set(dev["per_class"]) == {"neg", "pos"} and os.path.isfile(dev["confusion_matrix_png"])
    with open(out / "test_predictions.jsonl", encoding="utf-8") as f:
        predicted = [json.loads(line) for line in f]
    assert [p["id"] for p in predicted] == [f"r{i}" for i in range(18)]
    assert all(len(p["probabilities"]) == 2 for p in predicted)  # (neg, pos), as served
    # predict on the export and on the model folder: the same answers as the run's.
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"id": f"r{i}", "text": t}) + "\n" for i, t in
                            enumerate(["A great, moving film.", "", "?!" * 10, "x" * 10000])))
    for model in (out / "export", out / "model"):
        answer = cli.run("albert_tf.predict", f"--model={model}", f"--input={rows}")
        assert answer.returncode == 0, answer.stderr[-3000:]
        served = [json.loads(line) for line in answer.stdout.splitlines()]
        assert [s["id"] for s in served] == ["r0", "r1", "r2", "r3"]
        assert served[0]["label"] == predicted[0]["label"]
        np.testing.assert_allclose(served[0]["probabilities"], predicted[0]["probabilities"],
                                   atol=1e-5)
    # The training file's own format and columns (a CSV with `review`) predict too.
    answer = cli.run("albert_tf.predict", f"--model={out / 'export'}",
                     f"--input={tmp_path / 'test.csv'}")
    assert answer.returncode == 0, answer.stderr[-3000:]
    served = [json.loads(line) for line in answer.stdout.splitlines()]
    assert [s["label"] for s in served] == [p["label"] for p in predicted]
    # Invalid UTF-8 in the input file: one line naming it.
    rows.write_bytes(b'{"text": "ok"}\n{"text": "caf\xc3"}\n')
    assert cli.one_line_error(cli.run("albert_tf.predict", f"--model={out / 'export'}",
                                      f"--input={rows}")).endswith(":2: not UTF-8 (invalid "
                                                                   "continuation byte at byte 13)")
