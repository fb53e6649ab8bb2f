"""A task bound to a run's settings: its options validated once, what it reads from the
run's files kept on the bound copy (no module-level cache), the registered task unbound."""

import json
import os

import pytest

from albert_tf import tasks
from albert_tf.training.settings import FinetuneSettings
from albert_tf.tasks.text_classification import data as text_classification_data


def _settings(task, **options):
    return FinetuneSettings(task=task, output_dir="unused", task_options=options)


def test_bind_validates_the_options_once_and_leaves_the_registered_task_alone():
    squad = tasks.get("squad_v2")
    settings = _settings("squad_v2", qa_head="span")
    bound = squad.bind(settings)
    assert bound.task_options.qa_head == "span" and bound.name == "squad_v2"
    assert bound.options(settings) is bound.task_options  # not derived again
    assert bound.options(settings.replace(task_options={})).qa_head == "beam"  # other options
    assert squad.task_options is None and squad.run_cache is None
    assert tasks.get("squad_v2") is squad
    with pytest.raises(ValueError, match=r"unknown option for task 'squad_v2' in \['qa_haed'\]"):
        squad.bind(_settings("squad_v2", qa_haed="span"))


def _train_file(path, labels):
    with open(path, "w", encoding="utf-8") as f:
        for i, label in enumerate(labels):
            f.write(json.dumps({"text": f"t{i}", "label": label}) + "\n")
    return str(path)


def test_label_statistics_belong_to_the_bound_run(tmp_path):
    assert not hasattr(text_classification_data, "_STATS")
    classify = tasks.get("text_classification")
    train = _train_file(tmp_path / "train.jsonl", ["b", "a", "b"])
    first = classify.bind(_settings("text_classification", train_file=train))
    stats = first.training_labels(first.task_options, None)
    assert (stats.labels, stats.counts, stats.rows) == (("a", "b"), (1, 2), 3)
    assert first.training_labels(first.task_options, None) is stats  # read once for the run
    second = classify.bind(_settings("text_classification", train_file=train))
    assert second.run_cache == {} and classify.run_cache is None
    # A changed file is read again, by the same run too.
    _train_file(train, ["c", "a", "c", "c"])
    os.utime(train, ns=(1, 1))
    assert first.training_labels(first.task_options, None).labels == ("a", "c")
    assert second.training_labels(second.task_options, None).counts == (1, 3)


def test_the_training_files_tags_belong_to_the_bound_run(tmp_path):
    train = tmp_path / "train.conll"
    train.write_text("EU B-ORG\nrejects O\nGerman B-MISC\n\nPeter B-PER\nBlackburn I-PER\n",
                     encoding="utf-8")
    ner = tasks.get("token_classification")
    bound = ner.bind(_settings("token_classification", train_file=str(train)))
    tags = bound.tags(bound.task_options, None)
    assert {"O", "B-ORG", "B-MISC", "B-PER", "I-PER"} <= set(tags)
    assert list(bound.run_cache.values()) == [tags]
    assert bound.tags(bound.task_options, None) is tags  # read once for the run
    assert ner.run_cache is None and not hasattr(ner, "_train")
    assert ner.tags(bound.task_options, None) == tags  # unbound: read, not kept
