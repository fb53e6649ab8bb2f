"""A new task type is one module: this file defines one, then fine-tunes, exports and
predicts with it through the library and the commands, touching nothing in albert_tf/.

The toy task: is a sentence a question? Its data is JSON lines of
`{"sentence", "question"}`; its serving signature takes `sentence` and returns
`is_question` and `probability`.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import cli_helpers as cli
from albert_tf import tasks
from albert_tf.data import Features
from albert_tf.data.mapped import map_rows, ragged_rows
from albert_tf.export.base import ServingModule
from albert_tf.steps.packing import padded_length
from albert_tf.export.exporter import INFO_FILE
from albert_tf.models import AlbertClassifier
from albert_tf.steps import SegmentPacker
from albert_tf.training.finetuning import run
from albert_tf.training.settings import FinetuneSettings
from albert_tf.tasks.base import Recipe, Task
from albert_tf.tasks.finetuned import export_model

SENTENCES = ["Where is the station?", "The station is near.", "Who wrote this book?",
             "She wrote a book.", "Is it raining?", "It rains today.", "What time is it?",
             "It is late."]


class QuestionServing(ServingModule):
    """`sentence` string (batch_size,) -> `is_question` bool, `probability` float32."""

    def __init__(self, model, tokenizer, max_seq_length):
        super().__init__(model, tokenizer, max_seq_length, name="question_serving")
        self.packer = SegmentPacker(max_seq_length, tokenizer.cls_id, tokenizer.sep_id,
                                    tokenizer.pad_id)
        self.define_signatures(self._serve, ("sentence",))

    def _serve(self, sentence):
        packed = self.packer(self.tokenizer(sentence))
        length = padded_length(tf.reduce_sum(packed["padding_mask"], 1), self.max_seq_length)
        logits = self.run_model({k: v[:, :length] for k, v in packed.items()})["logits"]
        probability = tf.nn.softmax(logits, axis=-1)[:, 1]
        return {"is_question": probability > 0.5, "probability": probability}


class QuestionTask(Task):
    name = "toy_question"
    test_splits = ()

    @property
    def recipe(self):
        return Recipe(learning_rate=1e-3, batch_size=4, train_steps=6, warmup_steps=1,
                      max_seq_length=16, dropout=0.0, classifier_dropout=0.0, source="test")

    def read_examples(self, data_dir, split, options=None):
        with open(os.path.join(data_dir, f"{split}.jsonl"), encoding="utf-8") as f:
            return [json.loads(line) for line in f]

    def featurize(self, examples, tokenizer, settings, split):
        # The serving module's packer, mapped over the split's ids.
        packer = SegmentPacker(settings.max_seq_length, tokenizer.cls_id, tokenizer.sep_id,
                               tokenizer.pad_id)
        ids = ragged_rows(tokenizer.encode_batch([e["sentence"] for e in examples]))
        arrays = map_rows(packer, (ids,), ("token_ids", "segment_ids", "padding_mask"))
        lengths = arrays.pop("padding_mask").sum(axis=1, dtype=np.int32)
        arrays["label"] = np.array([int(e["question"]) for e in examples], np.int32)
        return Features(arrays, lengths, label_keys=("label",))

    def build_model(self, backbone, settings, head=None):
        return AlbertClassifier(backbone, 2, dropout=settings.classifier_dropout)

    def evaluate(self, run, split):
        labels = run.features(split).arrays["label"]
        predicted = np.argmax(run.outputs(split)["logits"], axis=-1)
        return {"accuracy": float(np.mean(predicted == labels)), "examples": len(labels)}

    def write_predictions(self, run, split):
        raise ValueError("no test split")

    def serving_module(self, model, tokenizer, settings, model_dir, export_options):
        self.check_export_options(export_options)
        return QuestionServing(model, tokenizer, settings.max_seq_length), {
            "inputs": ["sentence"]}


TASK = QuestionTask()


@pytest.fixture
def registered():
    """The toy task in the registry for one test (other tests see the real registry)."""
    tasks.register(TASK)
    yield TASK
    tasks.REGISTRY.unregister(TASK.name)


def _write_data(folder):
    folder.mkdir()
    for split in ("train", "dev"):
        with open(folder / f"{split}.jsonl", "w", encoding="utf-8") as f:
            for sentence in SENTENCES:
                f.write(json.dumps({"sentence": sentence, "question": sentence.endswith("?")})
                        + "\n")
    return str(folder)


def test_a_task_defined_outside_the_library_finetunes_exports_and_predicts(tmp_path, registered):
    assert tasks.get("toy_question") is TASK
    settings = FinetuneSettings(task=TASK.name, output_dir=str(tmp_path / "run"),
                                data_dir=_write_data(tmp_path / "data"), vocab_file=cli.SPM,
                                model=cli.tiny_model(str(tmp_path)), strategy="one_device",
                                precision="fp32", **{k: getattr(TASK.recipe, k) for k in (
                                    "learning_rate", "batch_size", "train_steps",
                                    "warmup_steps", "max_seq_length")})
    results = run(TASK, settings, verbose=False)
    assert results["train"]["step"] == 6 and results["dev"]["examples"] == len(SENTENCES)

    version = export_model(str(tmp_path / "run"), str(tmp_path / "export"))
    with open(os.path.join(version, INFO_FILE), encoding="utf-8") as f:
        assert json.load(f)["inputs"] == ["sentence"]
    loaded = tf.saved_model.load(version)
    served = loaded.signatures["serving_default"](sentence=tf.constant(SENTENCES[:2]))
    assert served["is_question"].dtype == tf.bool and served["probability"].shape == (2,)

    # The predict command knows nothing of the task: it feeds the inputs the export names.
    answer = subprocess.run(
        [sys.executable, "-m", "albert_tf.predict", f"--model={tmp_path / 'export'}"],
        input='{"id": 7, "sentence": "Is this a question?"}\n', capture_output=True, text=True,
        cwd=cli.ROOT, env=cli.env(), timeout=300)
    assert answer.returncode == 0, answer.stderr[-2000:]
    row = json.loads(answer.stdout)
    assert set(row) == {"id", "is_question", "probability"} and 0 <= row["probability"] <= 1
