"""Distillation from a teacher of every task type that says what it distils
(`distilled_outputs`), and a failure before training leaves the folder free."""

import os
import shutil

import pytest

import cli_helpers as cli
from albert_tf import tasks
from albert_tf.distillation.run import distill
from albert_tf.distillation.settings import DistillSettings
from albert_tf.training.finetuning import run as finetune
from albert_tf.training.run_folder import has_progress
from albert_tf.training.settings import FinetuneSettings
from conftest import FIXTURES
from albert_tf.tasks.finetuned import load_finetuned


def _csv(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.write("text,label\n" + "".join(f"{t},{l}\n" for t, l in rows))
    return str(path)


def _classification(tmp_path):
    rows = [("the cat sat on the mat", "pets"), ("a red house by the river", "places"),
            ("the dog ran home", "pets"), ("an old stone tree", "places")] * 3
    return {"train_file": _csv(tmp_path / "train.csv", rows),
            "eval_file": _csv(tmp_path / "dev.csv", rows[:5])}


def _regression(tmp_path):
    rows = [("the cat sat on the mat", 0.5), ("a red house by the river", 2.0),
            ("the dog ran home", 1.0), ("an old stone tree", 3.5)] * 3
    return {"train_file": _csv(tmp_path / "train.csv", rows),
            "eval_file": _csv(tmp_path / "dev.csv", rows[:5])}


def _ner(tmp_path):
    folder = os.path.join(FIXTURES, "ner")
    return {"train_file": os.path.join(folder, "train.conll"),
            "eval_file": os.path.join(folder, "dev.conll")}


def _choices(tmp_path):
    folder = os.path.join(FIXTURES, "mc", "own")
    return {"train_file": os.path.join(folder, "train.jsonl"),
            "eval_file": os.path.join(folder, "dev.jsonl")}


def _squad(tmp_path):
    for split in ("train", "dev"):
        shutil.copy(os.path.join(FIXTURES, "squad_data", "v1.json"), tmp_path / f"{split}.json")
    return {"max_query_length": 16}


TEACHERS = {
    "text_classification": (_classification, None),
    "text_regression": (_regression, None),
    "token_classification": (_ner, None),
    "multiple_choice": (_choices, None),
    "squad": (_squad, "."),
}
SLOW = pytest.mark.slow


@pytest.mark.parametrize("task_name", [
    "text_classification",
    pytest.param("text_regression", marks=SLOW),
    pytest.param("token_classification", marks=SLOW),
    pytest.param("multiple_choice", marks=SLOW),
    pytest.param("squad", marks=SLOW)])
def test_a_teacher_of_every_task_type_distils(tmp_path, task_name):
    make_options, data_dir = TEACHERS[task_name]
    options = make_options(tmp_path)
    data_dir = str(tmp_path) if data_dir else ""
    model = cli.tiny_model(str(tmp_path))
    common = dict(task=task_name, vocab_file=cli.SPM, strategy="one_device", precision="fp32",
                  learning_rate=1e-3, batch_size=4, warmup_steps=1, max_seq_length=48,
                  data_dir=data_dir, task_options=options)
    task = tasks.get(task_name)
    finetune(task, FinetuneSettings(output_dir=str(tmp_path / "teacher"), model=model,
                                    train_steps=2, **common), verbose=False)
    teacher_dir = str(tmp_path / "teacher" / "model")
    settings = DistillSettings(output_dir=str(tmp_path / "student"), teacher=teacher_dir,
                               student="tiny", model=model, train_steps=2, **common)
    results = distill(task, settings, lambda: load_finetuned(teacher_dir)[2], verbose=False)
    assert results["train"]["step"] == 2
    # The task's metrics (the evaluation loss is the student's own).
    assert set(results["teacher"]["dev"]) == set(results["dev"]) - {"loss"}
    assert os.path.isfile(tmp_path / "student" / "model" / "model.safetensors")


def test_a_distillation_failing_before_training_leaves_the_folder_free(tmp_path):
    options = _classification(tmp_path)
    model = cli.tiny_model(str(tmp_path))
    common = dict(task="text_classification", vocab_file=cli.SPM, strategy="one_device",
                  precision="fp32", batch_size=4, warmup_steps=1, max_seq_length=32,
                  task_options=options)
    task = tasks.get("text_classification")
    finetune(task, FinetuneSettings(output_dir=str(tmp_path / "teacher"), model=model,
                                    train_steps=1, **common), verbose=False)
    teacher_dir = str(tmp_path / "teacher" / "model")
    out = tmp_path / "student"

    def broken_teacher():
        raise ValueError("the teacher cannot be loaded")

    settings = DistillSettings(output_dir=str(out), teacher=teacher_dir, student="tiny",
                               model=model, train_steps=1, **common)
    with pytest.raises(ValueError, match="cannot be loaded"):
        distill(task, settings, broken_teacher, verbose=False)
    assert not has_progress(str(out))
