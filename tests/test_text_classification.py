"""text_classification and text_regression on the user's own files: reading, label
sets, held-out rows, featurization with both vocabularies, the losses, bad input, and a
tiny multi-label run whose reports and model folder are checked."""

import glob
import json
import os

import numpy as np
import pytest
import tensorflow as tf

import cli_helpers as cli
from albert_tf import tasks
from albert_tf import load_tokenizer
from albert_tf.backbone import AlbertBackbone
from albert_tf.config import AlbertConfig
from albert_tf.training.finetuning import Run, run
from albert_tf.training.settings import FinetuneSettings
from conftest import FIXTURES
from albert_tf.tasks.base import Example
from albert_tf.tasks.text_classification.options import TextOptions
from albert_tf.tasks.text_classification.model import TextClassifier

WORDPIECE = os.path.join(FIXTURES, "wordpiece", "vocab.txt")
CLASSIFY, REGRESS = tasks.get("text_classification"), tasks.get("text_regression")


def _csv(path, *lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _jsonl(path, *rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return str(path)


def _read(task, data_dir, split, options):
    return list(task.read_examples(data_dir, split, options))


def _error(task, options, split="train", data_dir=None):
    with pytest.raises(ValueError) as info:
        list(task.read_examples(data_dir, split, options))  # read as it is iterated
    assert "\n" not in str(info.value)
    return str(info.value)


def test_registered_with_recipes():
    assert {"text_classification", "text_regression"} <= set(tasks.names())
    # Classification adds the loss options (tasks/losses.py) to regression's.
    assert REGRESS.options_class is TextOptions
    assert issubclass(CLASSIFY.options_class, TextOptions)
    assert {"loss", "focal_gamma", "label_smoothing"} <= \
        set(CLASSIFY.options_class.field_names()) - set(TextOptions.field_names())
    for task in (CLASSIFY, REGRESS):
        assert task.recipe.max_seq_length == 128 and task.recipe.warmup_steps < \
            task.recipe.train_steps


def test_reads_pairs_with_ids_or_line_numbers(tmp_path):
    train = _csv(tmp_path / "train.csv", "id,premise,hypothesis,gold",
                 'a7,"It rains, a lot.",It is wet.,yes', ",Cats sleep.,Dogs bark., no ")
    options = TextOptions(train_file=train, text_column="premise",
                          text_pair_column="hypothesis", label_column="gold")
    assert _read(CLASSIFY, None, "train", options) == [
        Example("a7", "It rains, a lot.", "It is wet.", "yes"),
        Example("3", "Cats sleep.", "Dogs bark.", "no")]  # no id: the line
    test = _jsonl(tmp_path / "test.jsonl", {"premise": "x", "hypothesis": "y"})
    options = TextOptions(train_file=train, predict_file=test, text_column="premise",
                          text_pair_column="hypothesis", label_column="gold")
    assert _read(CLASSIFY, None, "test", options) == [Example("1", "x", "y", None)]


def test_label_set_is_sorted_and_stored_in_the_head(tmp_path):
    train = _jsonl(tmp_path / "t.jsonl", *({"text": str(i), "label": label}
                                            for i, label in enumerate([10, "2", 2, "1"])))
    options = TextOptions(train_file=train)
    stats = CLASSIFY.training_labels(options, None)
    assert (stats.labels, stats.counts, stats.rows) == (("1", "2", "10"), (1, 2, 1), 4)
    settings = FinetuneSettings(task=CLASSIFY.name, output_dir=str(tmp_path / "run"),
                                task_options={"train_file": train})
    model = CLASSIFY.build_model(AlbertBackbone(AlbertConfig(**_TINY)), settings)
    assert model.head_config()["labels"] == ["1", "2", "10"] and model.num_classes == 3


def test_multi_label_lists_separators_and_empty_sets(tmp_path):
    rows = [{"text": "a", "tags": ["x", "y", "x"]}, {"text": "b", "tags": []},
            {"text": "c", "tags": "y | z"}]
    options = TextOptions(train_file=_jsonl(tmp_path / "t.jsonl", *rows), label_column="tags",
                          multi_label=True, label_separator="|", heldout_fraction=0.0)
    assert [e.label for e in _read(CLASSIFY, None, "train", options)] == [
        ("x", "y"), (), ("y", "z")]
    csv_file = _csv(tmp_path / "t.csv", "text,tags", "a,x;y", "b,")
    options = TextOptions(train_file=csv_file, label_column="tags", multi_label=True)
    assert _error(CLASSIFY, options) == f"--train_file={csv_file}: multi-label CSV/TSV needs " \
        "--label_separator (what joins a row's labels, e.g. '|')"
    options = TextOptions(train_file=csv_file, label_column="tags", multi_label=True,
                          label_separator=";", heldout_fraction=0.0)
    assert [e.label for e in _read(CLASSIFY, None, "train", options)] == [("x", "y"), ()]


def test_heldout_rows_are_disjoint_and_do_not_depend_on_row_order(tmp_path):
    rows = [{"text": f"row {i}", "label": ["a"] if i % 3 else ["a", "b"]} for i in range(200)]
    split = {}
    for name, order in (("one", rows), ("two", rows[::-1])):
        options = TextOptions(train_file=_jsonl(tmp_path / f"{name}.jsonl", *order),
                              multi_label=True, heldout_fraction=0.2)
        train = _read(CLASSIFY, None, "train", options)
        heldout = _read(CLASSIFY, None, "heldout", options)
        split[name] = {e.text_a for e in heldout}
        assert len(train) + len(heldout) == 200
        assert not split[name] & {e.text_a for e in train}
    assert split["one"] == split["two"] and 20 < len(split["one"]) < 60


def test_regression_scores(tmp_path):
    train = _csv(tmp_path / "t.tsv", "text\tscore", "a\t1.5", "b\t-2", "c\t3e1")
    options = TextOptions(train_file=train, label_column="score")
    assert [e.label for e in _read(REGRESS, None, "train", options)] == [1.5, -2.0, 30.0]
    bad = _csv(tmp_path / "bad.tsv", "text\tscore", "a\t1", "b\thigh")
    assert _error(REGRESS, TextOptions(train_file=bad, label_column="score")) == \
        f"{bad}:3: column 'score': expected a number, got 'high'"
    nan = _jsonl(tmp_path / "nan.jsonl", {"text": "a", "label": True})
    assert _error(REGRESS, TextOptions(train_file=nan)) == \
        f"{nan}:1: column 'label': expected a number, got a boolean"
    assert _error(REGRESS, TextOptions(train_file=train, multi_label=True)) == \
        "task 'text_regression': --multi_label and --class_weights are for text_classification"


def test_bad_input_names_the_file_line_and_what_was_expected(tmp_path):
    train = _csv(tmp_path / "train.csv", "text,label", "good,pos", "bad,neg")
    dev = _csv(tmp_path / "dev.csv", "text,label", "fine,pos", "odd,neutral")
    options = TextOptions(train_file=train, eval_file=dev)
    assert _error(CLASSIFY, options, "dev") == \
        f"{dev}:3: column 'label': label 'neutral' is not in the training file (its labels: " \
        "neg, pos)"
    test = _csv(tmp_path / "test.csv", "text,label", "a,", "b,pos", "c,negative")
    options = TextOptions(train_file=train, predict_file=test)
    assert _error(CLASSIFY, options, "test") == \
        f"{test}:4: column 'label': label 'negative' is not in the training file (its " \
        "labels: neg, pos)"
    other = _csv(tmp_path / "other.csv", "sentence,stars", "hi,5")
    assert _error(CLASSIFY, TextOptions(train_file=other)) == \
        f"{other}: no column 'text', 'label'; it has 'sentence', 'stars'"
    empty_label = _csv(tmp_path / "e.csv", "text,label", "hi, ")
    assert _error(CLASSIFY, TextOptions(train_file=empty_label)) == \
        f"{empty_label}:2: column 'label': empty label"
    one = _csv(tmp_path / "one.csv", "text,label", "a,x", "b,x")
    assert _error(CLASSIFY, TextOptions(train_file=one)) == \
        f"--train_file={one}: classification needs at least two labels, the file has ['x']"
    header_only = _csv(tmp_path / "h.csv", "text,label")
    assert _error(CLASSIFY, TextOptions(train_file=header_only)) == \
        f"--train_file={header_only}: no rows"
    typed = _jsonl(tmp_path / "typed.jsonl", {"text": 3, "label": "a"})
    assert _error(CLASSIFY, TextOptions(train_file=typed, eval_file=typed), "dev") in (
        f"{typed}:1: column 'text': expected a string, got an integer",
        f"--train_file={typed}: classification needs at least two labels, the file has ['a']")
    with pytest.raises(ValueError, match="balanced is for single-label"):
        CLASSIFY.read_examples(None, "train", TextOptions(
            train_file=train, multi_label=True, class_weights="balanced"))


def test_files_stream_and_featurize_in_chunks(tmp_path, monkeypatch):
    from albert_tf.tasks.long_inputs import encode_pairs
    from albert_tf.tasks.text_classification import task as text_classification

    rows = [{"text": f"row {i} " * (i % 5), "label": "ab"[i % 2]} for i in range(7)]
    options = TextOptions(train_file=_jsonl(tmp_path / "t.jsonl", *rows))
    examples = CLASSIFY.read_examples(None, "train", options)
    assert not isinstance(examples, list) and len(examples) == 7
    assert [e.text_a for e in examples] == [r["text"] for r in rows]  # read again
    tokenizer = load_tokenizer(cli.SPM, host=True)
    settings = FinetuneSettings(task=CLASSIFY.name, output_dir=str(tmp_path), max_seq_length=9,
                                task_options={"train_file": options.train_file})
    monkeypatch.setattr(text_classification, "FEATURIZE_CHUNK", 3)
    features = CLASSIFY.featurize(examples, tokenizer, settings, "train")
    arrays, lengths = encode_pairs(list(examples), tokenizer, 9)
    for name in ("token_ids", "segment_ids"):
        np.testing.assert_array_equal(features.arrays[name], arrays[name])
    np.testing.assert_array_equal(features.lengths, lengths)
    assert features.arrays["label"].tolist() == [i % 2 for i in range(7)]


def test_empty_texts_are_kept(tmp_path):
    train = _csv(tmp_path / "train.csv", "text,label", ",a", '"",b')
    examples = _read(CLASSIFY, None, "train", TextOptions(train_file=train))
    assert [(e.text_a, e.label) for e in examples] == [("", "a"), ("", "b")]


_TINY = dict(vocabulary_size=30000, num_layers=2, num_heads=2, hidden_dim=6,
             intermediate_dim=10, embedding_dim=4, max_sequence_length=24)


@pytest.mark.parametrize("vocabulary", [cli.SPM, WORDPIECE], ids=["sentencepiece", "wordpiece"])
def test_featurize_gives_ids_in_the_stored_order_with_both_vocabularies(tmp_path, vocabulary):
    texts = ["这家餐厅的菜真好吃", "The film was long.", "", "!!!"]
    train = _jsonl(tmp_path / "t.jsonl", *({"text": t, "label": label, "tags": tags}
                                            for t, label, tags in zip(
                                                texts, ["b", "a", "c", "a"],
                                                [["y"], [], ["x", "y"], ["x"]])))
    tokenizer = load_tokenizer(vocabulary, host=True)
    examples = _read(CLASSIFY, None, "train", TextOptions(train_file=train))
    settings = FinetuneSettings(task=CLASSIFY.name, output_dir=str(tmp_path), max_seq_length=11,
                                task_options={"train_file": train})
    features = CLASSIFY.featurize(examples, tokenizer, settings, "train")
    assert features.arrays["label"].tolist() == [1, 0, 2, 0]
    assert features.arrays["token_ids"].shape == (4, 11)
    assert features.arrays["token_ids"][2, :2].tolist() == [tokenizer.cls_id, tokenizer.sep_id]
    assert features.lengths[2] == 2
    multi = dict(train_file=train, label_column="tags", multi_label=True, heldout_fraction=0.0)
    settings = settings.replace(task_options=multi)
    examples = _read(CLASSIFY, None, "train", TextOptions(**multi))
    hot = CLASSIFY.featurize(examples, tokenizer, settings, "train").arrays["label"]
    assert hot.tolist() == [[0, 1], [0, 0], [1, 1], [1, 0]]
    assert "label" not in CLASSIFY.featurize(examples, tokenizer, settings, "test").arrays


def _model(labels, **kwargs):
    model = TextClassifier(AlbertBackbone(AlbertConfig(**_TINY)), labels, **kwargs)
    return model


def test_losses_equal_numpy_references():
    rng = np.random.default_rng(0)
    logits = rng.normal(0, 2, (5, 3)).astype("float32")
    ids = np.array([0, 2, 2, 1, 2])
    weights = (1.5, 0.25, 3.0)
    model = _model(("a", "b", "c"), class_weights=weights)
    got = float(model.compute_loss(y={"label": ids}, y_pred={"logits": logits}))
    log_softmax = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    want = np.mean(-log_softmax[np.arange(5), ids] * np.array(weights)[ids])
    assert got == pytest.approx(want, rel=1e-5)
    targets = (rng.random((5, 3)) < 0.5).astype("float32")
    model = _model(("a", "b", "c"), multi_label=True)
    got = float(model.compute_loss(y={"label": targets}, y_pred={"logits": logits}))
    p = 1 / (1 + np.exp(-logits.astype(np.float64)))
    want = np.mean(-(targets * np.log(p) + (1 - targets) * np.log(1 - p)))
    assert got == pytest.approx(want, rel=1e-5)
    model = _model(None)
    scores = rng.normal(size=5).astype("float32")
    got = float(model.compute_loss(y={"label": scores}, y_pred={"logits": logits[:, :1]}))
    assert got == pytest.approx(np.mean((logits[:, 0] - scores) ** 2), rel=1e-5)


def test_a_run_reports_unknown_labels_before_it_starts(tmp_path):
    train = _csv(tmp_path / "train.csv", "text,label", "good,pos", "bad,neg")
    dev = _csv(tmp_path / "dev.csv", "text,label", "so so,mixed")
    settings = FinetuneSettings(task=CLASSIFY.name, output_dir=str(tmp_path / "run"),
                                vocab_file=cli.SPM, model=cli.tiny_model(str(tmp_path)),
                                task_options={"train_file": train, "eval_file": dev})
    with pytest.raises(ValueError, match=rf"{dev}:2: column 'label': label 'mixed' is not in "
                                         r"the training file \(its labels: neg, pos\)"):
        Run(CLASSIFY, settings, verbose=False)
    assert not os.path.exists(tmp_path / "run" / "settings.json")


def _multi_label_rows(count, seed):
    rng = np.random.default_rng(seed)
    words = {"sun": "weather", "rain": "weather", "goal": "sport", "match": "sport",
             "vote": "politics"}
    rows = []
    for i in range(count):
        chosen = sorted(set(rng.choice(list(words), size=int(rng.integers(1, 3)))))
        rows.append({"text": " ".join(chosen) + f" {i}",
                     "tags": sorted({words[w] for w in chosen})})
    return rows


def test_tiny_multi_label_run_reports_and_stores_labels_and_threshold(tmp_path):
    train = _jsonl(tmp_path / "train.jsonl", *_multi_label_rows(40, 1))
    dev = _jsonl(tmp_path / "dev.jsonl", *_multi_label_rows(9, 2))
    out = tmp_path / "run"
    settings = FinetuneSettings(
        task=CLASSIFY.name, output_dir=str(out), vocab_file=cli.SPM,
        model=cli.tiny_model(str(tmp_path)), strategy="one_device", precision="fp32",
        batch_size=4, train_steps=3, warmup_steps=1, max_seq_length=16, learning_rate=1e-3,
        log_every=1, eval_every=3, task_options={"train_file": train, "eval_file": dev,
                                   "label_column": "tags", "multi_label": True,
                                   "heldout_fraction": 0.25})
    results = run(CLASSIFY, settings, verbose=False)["dev"]
    assert results["examples"] == 9
    assert results["threshold_source"].startswith("held-out training rows (")
    assert 0 < results["threshold"] <= 1
    assert set(results["per_class"]) == {"politics", "sport", "weather"}
    assert {"micro_f1", "macro_f1", "exact_match", "baseline_micro_f1"} <= set(results)
    assert os.path.isfile(out / "confusion_matrix_dev.png")
    with open(out / "model" / "albert_tf_config.json", encoding="utf-8") as f:
        head = json.load(f)["head"]
    assert head["labels"] == ["politics", "sport", "weather"] and head["multi_label"]
    assert head["threshold"] == results["threshold"]
    written = []  # (tag, step) of every scalar: each evaluation reaches TensorBoard once
    for path in glob.glob(str(out / "tensorboard" / "*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            written.extend((v.tag, event.step) for v in event.summary.value)
    tags = {tag for tag, _ in written}
    assert {"eval_dev/micro_f1", "eval_dev/per_class/sport/f1", "train/loss"} <= tags
    assert written.count(("eval_dev/micro_f1", 3)) == 1


def test_multi_label_serving_counts_the_predicted_labels():
    from types import SimpleNamespace

    from albert_tf.export.classification import MultiLabelServing

    head = SimpleNamespace(threshold=0.5, labels=["art", "news", "sport"])
    out = MultiLabelServing.decode(head, tf.constant([[2.0, -1.0, 0.5], [-3.0, -2.0, -1.0]]))
    assert out["labels"].numpy().astype(str).tolist() == [["art", "sport", ""], ["", "", ""]]
    # num_predicted: how many labels a row has; num_labels stays the size of the label set.
    assert out["num_predicted"].numpy().tolist() == [2, 0] and "num_labels" not in out
