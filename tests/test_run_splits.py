"""A run reads a split only when it uses it: train to train, dev to evaluate, test to predict."""

import os
import shutil

import pytest

import json

from albert_tf import tasks
from albert_tf.training.finetuning import run, splits_to_read
from albert_tf.training.settings import FinetuneSettings
from conftest import FIXTURES


@pytest.mark.parametrize("name", tasks.names())
def test_evaluating_reads_no_test_split_of_any_task(name):
    task = tasks.get(name)
    settings = FinetuneSettings(task=name, output_dir="x", do_train=True, do_eval=True,
                                do_predict=False)
    read = splits_to_read(task, settings)
    assert not set(read) & set(task.test_splits), read
    assert not set(task.eval_splits) & set(task.test_splits + task.scored_test_splits)
    predicting = splits_to_read(task, settings.replace(do_predict=True, do_eval=False))
    assert set(task.test_splits) <= set(predicting)


def _small_model(folder):
    """A small config sized to whatever vocabulary the run's tokenizer has."""
    path = os.path.join(folder, "small.json")
    with open(path, "w") as f:
        json.dump({"num_layers": 1, "num_heads": 2, "hidden_dim": 16, "intermediate_dim": 24,
                   "embedding_dim": 8, "max_sequence_length": 64}, f)
    return path


def test_a_c3_run_without_its_test_files_evaluates_dev(tmp_path):
    data = tmp_path / "c3"
    os.makedirs(data)
    for name in os.listdir(os.path.join(FIXTURES, "mc", "c3")):
        if "-test" not in name:
            shutil.copy(os.path.join(FIXTURES, "mc", "c3", name), data)
    settings = FinetuneSettings(
        task="c3", output_dir=str(tmp_path / "run"), data_dir=str(data),
        vocab_file=os.path.join(FIXTURES, "wordpiece", "vocab.txt"),
        model=_small_model(tmp_path),
        strategy="one_device", precision="fp32", batch_size=2, train_steps=1,
        warmup_steps=0, max_seq_length=48, do_eval=True)
    results = run(tasks.get("c3"), settings, verbose=False)
    assert "dev" in results and "test" not in results
