"""Serving multiple choice: the raw-text signature against the host pipeline, both
vocabularies, hostile input; and (slow) fine-tune -> export -> a fresh process, the
predict command and TFLite."""

import functools
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import cli_helpers as cli
from albert_tf import tasks
from albert_tf.backbone import AlbertBackbone
from albert_tf.tokenizer.loading import load_tokenizer
from albert_tf.config import AlbertConfig
from albert_tf.export.multiple_choice import MultipleChoiceServing
from albert_tf.models import AlbertMultipleChoice
from conftest import FIXTURES
from export_helpers import (TINY, assert_refuses_other_shapes, kernels_at_any_width, randomize,
                            xla_compiled_functions)
from albert_tf.tasks.multiple_choice.task import ChoiceExample, encode_choices

SPM = os.path.join(FIXTURES, "spm", "albert_30k_clean.model")
WORDPIECE = os.path.join(FIXTURES, "wordpiece", "vocab.txt")
OWN = os.path.join(FIXTURES, "mc", "own")
LONG = "word " * 2000  # 10,000 characters

QUESTIONS = [  # (context, question, choices): blanks, a long text, empties, punctuation
    ("Tom walks his dog in the park every morning.", "Tom walks the dog _ .",
     ["in the morning", "at night", "after lunch"]),
    ("男：你明天去图书馆吗?女：不去，我要去医院。", "女的明天去哪儿?", ["图书馆", "医院", "学校", "家"]),
    (LONG, LONG, ["yes", LONG]),
    ("", "", ["a", "b"]),
    ("?!...,,;", "!!!", ["。。。", "?", "..."]),
]


@functools.lru_cache(maxsize=None)  # tracing the tokenizer is most of a module's cost
def _serving(vocabulary, fill_blank, max_seq_length=21, max_qa_length=7):
    host = load_tokenizer(vocabulary, host=True)
    config = AlbertConfig(**dict(TINY, vocabulary_size=host.vocabulary_size))
    model = AlbertMultipleChoice(AlbertBackbone(config), dropout=0.0)
    randomize(model, seed=3)
    module = MultipleChoiceServing(model, load_tokenizer(vocabulary), max_seq_length,
                                   max_qa_length, fill_blank)
    return module, model, host


def _padded(choices):
    width = max(len(c) for c in choices)
    return [list(c) + [""] * (width - len(c)) for c in choices]


def host_probabilities(model, host, questions, fill_blank, max_seq_length=21, max_qa_length=7):
    examples = [ChoiceExample(str(i), c, q, tuple(ch)) for i, (c, q, ch) in enumerate(questions)]
    arrays, _ = encode_choices(examples, host, max_seq_length, max_qa_length, fill_blank)
    logits = model({k: tf.constant(v) for k, v in arrays.items()})["logits"].numpy()
    return tf.nn.softmax(logits, axis=-1).numpy()


@pytest.mark.parametrize("vocabulary, fill_blank", [(SPM, True), (WORDPIECE, False)])
def test_served_probabilities_equal_the_host_pipelines(vocabulary, fill_blank):
    module, model, host = _serving(vocabulary, fill_blank)
    context, question, choices = zip(*QUESTIONS)
    out = module.serving_default(tf.constant(context), tf.constant(question),
                                 tf.constant(_padded(choices)))
    expected = host_probabilities(model, host, QUESTIONS, fill_blank)
    np.testing.assert_allclose(out["probabilities"].numpy(), expected, atol=1e-5)
    best = expected.argmax(-1)
    assert out["choice_index"].numpy().tolist() == best.tolist()
    assert [c.decode() for c in out["choice"].numpy()] == \
        [QUESTIONS[i][2][b] for i, b in enumerate(best)]


def test_no_choice_empty_batches_and_invalid_utf8_have_a_defined_answer():
    module, _, _ = _serving(WORDPIECE, False)
    out = module.serving_default(tf.constant([b"c", b"\xff\xfe"]),
                                 tf.constant([b"q", b"\xc3\x28 bad"]),
                                 tf.constant([[b"", b""], [b"\xe2\x82", b"ok"]]))
    index = out["choice_index"].numpy()
    assert index[0] == -1 and index[1] in (0, 1)
    assert out["choice"].numpy()[0] == b"" and (out["probabilities"].numpy()[0] == 0).all()
    np.testing.assert_allclose(out["probabilities"].numpy()[1].sum(), 1.0, atol=1e-6)
    empty = module.serving_default(tf.constant([], tf.string), tf.constant([], tf.string),
                                   tf.zeros([0, 3], tf.string))
    assert empty["probabilities"].shape == (0, 3) and empty["choice"].shape == (0,)
    # No column at all: every question has no choice.
    none = module.serving_default(tf.constant(["c", "d"]), tf.constant(["q", "r"]),
                                  tf.zeros([2, 0], tf.string))
    assert none["probabilities"].shape == (2, 0)
    assert none["choice_index"].numpy().tolist() == [-1, -1]
    assert none["choice"].numpy().tolist() == [b"", b""]
    with pytest.raises(tf.errors.InvalidArgumentError, match="context.*question.*choices"):
        module.serving_default(tf.constant(["c", "d"]), tf.constant(["q"]),
                               tf.constant([["a"], ["b"]]))
    assert_refuses_other_shapes(module.signatures()["serving_default"], context=["c", "d"],
                                question=["q", "r"], choices=[["a", "b"], ["", "e"]])


FRESH_PROCESS = r"""
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401 - the SentencePiece op
path, questions = sys.argv[1], json.loads(sys.argv[2])
serve = tf.saved_model.load(path).signatures["serving_default"]
context, question, choices = zip(*questions)
width = max(len(c) for c in choices)
rows = [c + [""] * (width - len(c)) for c in choices]
good = serve(context=tf.constant(context), question=tf.constant(question),
             choices=tf.constant(rows))
bad = serve(context=tf.constant([b"\xff\xfe", b""]), question=tf.constant([b"\xc3\x28", b""]),
            choices=tf.constant([[b"\xe2\x82", b"ok"], [b"", b""]]))
leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("albert_tf", "tasks", "keras_hub"))
print(json.dumps({"probabilities": good["probabilities"].numpy().tolist(),
                  "choice": [c.decode() for c in good["choice"].numpy()],
                  "bad_index": bad["choice_index"].numpy().tolist(),
                  "bad_probabilities": bad["probabilities"].numpy().tolist(),
                  "leaked": leaked}))
"""


def _finetune(tmp_path):
    from albert_tf.training.finetuning import run
    from albert_tf.training.settings import FinetuneSettings

    task = tasks.get("multiple_choice")
    settings = FinetuneSettings(
        task=task.name, output_dir=str(tmp_path / "run"), data_dir=OWN, vocab_file=SPM,
        model=cli.tiny_model(str(tmp_path)), strategy="one_device", precision="fp32",
        learning_rate=1e-3, batch_size=4, train_steps=6, warmup_steps=1, max_seq_length=24,
        do_predict=True, task_options={"train_file": "train.jsonl", "eval_file": "dev.jsonl",
                                       "predict_file": "predict.jsonl", "max_qa_length": 9})
    return run(task, settings, verbose=False)


@pytest.mark.slow
def test_finetune_export_and_serve_from_a_fresh_process(tmp_path):
    from albert_tf.export import TfliteModel
    from albert_tf.tasks.finetuned import export_model, load_finetuned

    results = _finetune(tmp_path)
    assert results["dev"]["questions"] == 3 and 0 <= results["dev"]["accuracy"] <= 1
    with open(results["predictions"]["test"], encoding="utf-8") as f:
        assert [json.loads(line)["id"] for line in f] == ["p1", "p2"]
    with kernels_at_any_width():
        version = export_model(str(tmp_path / "run"), str(tmp_path / "export"), tflite=True)
    with open(os.path.join(version, "assets.extra", "albert_tf_export.json")) as f:
        info = json.load(f)
    assert info["inputs"] == ["context", "question", "choices"] and info["max_qa_length"] == 9
    assert xla_compiled_functions(version) == []  # the scoring model: standard ops only

    questions = [(c, q, list(ch)) for c, q, ch in QUESTIONS]
    env = dict(cli.env(), PYTHONPATH="")  # albert_tf is not importable there
    result = subprocess.run([sys.executable, "-c", FRESH_PROCESS, version, json.dumps(questions)],
                            capture_output=True, text=True, timeout=600, env=env,
                            cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["leaked"] == []
    _, settings, model, host = load_finetuned(os.path.join(tmp_path, "run", "model"))
    expected = host_probabilities(model, host, QUESTIONS, False, 24, 9)
    np.testing.assert_allclose(report["probabilities"], expected, atol=1e-4)
    assert report["bad_index"][1] == -1 and report["bad_index"][0] in (0, 1)
    assert report["bad_probabilities"][1] == [0.0, 0.0]

    # TFLite scores one packed row per (question, choice), as the model's `score`.
    lite = TfliteModel(os.path.join(version, "model.tflite"))
    arrays, _ = encode_choices([ChoiceExample("0", *QUESTIONS[1][:2], tuple(QUESTIONS[1][2]))],
                               host, 24, 9)
    rows = {"token_ids": arrays["token_ids"][0], "segment_ids": arrays["segment_ids"][0],
            "padding_mask": (np.arange(24) < arrays["choice_lengths"][0][:, None]).astype(
                np.int32)}
    np.testing.assert_allclose(lite(**rows)["logits"], model.score(rows).numpy(), atol=1e-4)


@pytest.mark.slow
def test_predict_reads_choice_lists_from_exports_and_model_folders(tmp_path):
    from albert_tf.tasks.finetuned import export_model

    _finetune(tmp_path)
    export_model(str(tmp_path / "run"), str(tmp_path / "export"))
    lines = []
    for model in (tmp_path / "export", tmp_path / "run" / "model"):
        result = cli.run("albert_tf.predict", f"--model={model}",
                         f"--input={os.path.join(OWN, 'predict.jsonl')}")
        assert result.returncode == 0, result.stderr[-3000:]
        lines.append([json.loads(line) for line in result.stdout.splitlines()])
    for rows in lines:
        assert [r["id"] for r in rows] == ["p1", "p2"]
        assert [len(r["probabilities"]) for r in rows] == [3, 3]  # padded to the longest
        assert rows[0]["probabilities"][2] == 0 and rows[0]["choice"] in ("on Sundays",
                                                                          "on Mondays")
    np.testing.assert_allclose([r["probabilities"] for r in lines[0]],
                               [r["probabilities"] for r in lines[1]], atol=1e-5)
    # albert_tf.api.load: the export's answers; --row gives a list input as JSON.
    from albert_tf.commands import api

    with open(os.path.join(OWN, "predict.jsonl"), encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    assert api.load(tmp_path / "export").predict(rows) == lines[0]
    row = {k: rows[0][k] for k in ("context", "question", "choices")}
    result = cli.run("albert_tf.predict", f"--model={tmp_path / 'export'}",
                     f"--row={json.dumps(row)}")
    assert result.returncode == 0, result.stderr[-3000:]
    alone = json.loads(result.stdout)  # (its probabilities padded to its own choices)
    assert alone["choice"] == lines[0][0]["choice"]
    np.testing.assert_allclose(alone["probabilities"],
                               lines[0][0]["probabilities"][:len(row["choices"])], atol=1e-6)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"context": "c", "question": "q", "choices": "a"}\n', encoding="utf-8")
    result = cli.run("albert_tf.predict", f"--model={tmp_path / 'export'}", f"--input={bad}")
    assert cli.one_line_error(result) == \
        f"error: --input: {bad}:1: 'choices' must be a list of strings (JSON lines), got str"
