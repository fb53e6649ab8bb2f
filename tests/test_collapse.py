"""Collapse detection and rescue (`--collapse_restarts`): each task says when its
predictions collapsed; the run says so in one line and restarts from its initial
weights with another seed, every attempt recorded."""

import json
import os
import types

import numpy as np
import pytest

from albert_tf import tasks
from albert_tf.training import collapse, finetuning, seeds_folds
from albert_tf.training.task_data import Collapse
from albert_tf.tasks.base import Scoring, SplitData
from albert_tf.training.settings import FinetuneSettings
from test_training_loop import QuestionTask, TOY, _settings

LABELS = np.array([0, 1, 1, 0, 1])


def _scoring(task_name, outputs, labels=LABELS, examples=None, **options):
    task = tasks.get(task_name)
    settings = FinetuneSettings(task=task_name, output_dir="x", task_options=options)
    arrays = {"label": labels}
    split = SplitData("dev", examples or [None] * len(labels),
                      types.SimpleNamespace(arrays=arrays), outputs)
    return task.bind(settings), Scoring(split, {}, {"labels": ["a", "b"], "threshold": 0.5},
                                        "x")


def test_a_classifier_that_predicts_one_label_has_collapsed():
    task, scoring = _scoring("rte", {"logits": np.tile([[2.0, -1.0]], (5, 1))})
    results = task.evaluate(scoring)
    found = task.collapse(scoring, results)
    assert found == Collapse("dev", "every one of the 5 predictions is 'entailment'",
                             {"accuracy": 0.4, "baseline_accuracy": 0.6})
    assert found.describe() == ("every one of the 5 predictions is 'entailment' on dev "
                                "(accuracy 0.4000, baseline_accuracy 0.6000)")
    mixed = np.array([[2.0, -1.0], [-1.0, 2.0], [2.0, -1.0], [2.0, -1.0], [2.0, -1.0]])
    task, scoring = _scoring("rte", {"logits": mixed})
    assert task.collapse(scoring, task.evaluate(scoring)) is None


def test_a_constant_regression_and_one_answer_position_have_collapsed():
    scores = np.array([0.5, 4.0, 2.5, 1.0, 3.0])
    task, scoring = _scoring("stsb", {"logits": np.full((5, 1), 2.2) + 1e-4 * LABELS[:, None]},
                             labels=scores)
    found = task.collapse(scoring, task.evaluate(scoring))
    assert found.what.startswith("every one of the 5 predictions is about 2.2 (sd 4.9e-05 "
                                 "against the labels' 1.3)")
    assert set(found.figures) == {"mse", "baseline_mse"}
    task, scoring = _scoring("stsb", {"logits": scores[:, None] + 0.3}, labels=scores)
    assert task.collapse(scoring, task.evaluate(scoring)) is None
    # Multiple choice: the same answer position for every question.
    examples = [types.SimpleNamespace(label=i % 3, choices=("x", "y", "z"), group="")
                for i in range(4)]
    task, scoring = _scoring("race", {"logits": np.tile([[0.1, 0.9, 0.2]], (4, 1))},
                             labels=np.array([0, 1, 2, 0]), examples=examples)
    found = task.collapse(scoring, task.evaluate(scoring))
    assert found.what == "every one of the 4 predictions is 'choice 1'"


def test_a_tagger_that_finds_no_entity_has_collapsed():
    task = tasks.get("token_classification")
    results = {"entities": 7, "predicted_entities": 0, "examples": 3, "f1": 0.0,
               "baseline_f1": 0.0}
    found = task.collapse(types.SimpleNamespace(split=SplitData("dev", [], None, None)), results)
    assert found.what == "no entity is predicted in the 3 texts (they hold 7)"
    assert task.collapse(None, {**results, "predicted_entities": 2}) is None


def test_attempts_take_another_seed_and_from_the_third_restart_half_the_rate():
    assert [collapse.attempt_values(7, 1e-4, r) for r in range(5)] == [
        (7, 1e-4), (1007, 1e-4), (2007, 1e-4), (3007, 5e-5), (4007, 5e-5)]
    assert collapse.first_check_step((2, 4, 6), 2) == 4
    assert collapse.first_check_step((2,), 5) is None


class CollapsingTask(QuestionTask):
    """The toy task whose predictions have collapsed at its first `collapses` judgements."""

    def __init__(self, collapses):
        super().__init__(TOY)
        self.script = list(collapses)  # shared by the bound copies

    def collapse(self, scoring, results):
        collapsed = self.script.pop(0) if self.script else False
        return Collapse(scoring.split.name, "every one of the 4 predictions is 'yes'",
                        {"accuracy": 0.5}) if collapsed else None


def test_a_collapsed_run_restarts_with_another_seed_and_records_every_attempt(tmp_path,
                                                                              capsys):
    settings = _settings(tmp_path, train_steps=6, warmup_steps=1, eval_every=2,
                         checkpoint_every=2, collapse_restarts=2)
    # Collapsed at the check step (2, the first evaluation past warmup), then not.
    results = finetuning.run(CollapsingTask([True]), settings, verbose=False)
    out = capsys.readouterr().out
    assert ("collapsed at step 2 (past warmup): every one of the 4 predictions is 'yes' on dev "
            "(accuracy 0.5000); restarting from the initial weights with seed 13345, learning "
            "rate 0.003 (restart 1 of 2)") in out
    assert results["attempts"] == [
        {"attempt": 1, "seed": 12345, "learning_rate": 0.003,
         "collapsed": {"step": 2, "split": "dev", "what": "every one of the 4 predictions is "
                       "'yes'", "figures": {"accuracy": 0.5}}},
        {"attempt": 2, "seed": 13345, "learning_rate": 0.003}]
    assert "collapsed" not in results and results["train"]["step"] == 6
    folder = settings.output_dir
    # The first attempt's files aside; the run's settings its own, the model's the attempt's.
    assert os.path.isfile(os.path.join(folder, "attempts", "attempt-1", "eval_history.jsonl"))
    assert os.path.isdir(os.path.join(folder, "attempts", "attempt-1", "checkpoints"))
    assert json.load(open(os.path.join(folder, "settings.json")))["seed"] == 12345
    model = json.load(open(os.path.join(folder, "model", "albert_tf_config.json")))
    assert model["settings"]["seed"] == 13345
    assert json.load(open(os.path.join(folder, "eval_results.json")))["attempts"] == \
        results["attempts"]


def test_without_restarts_a_collapse_is_said_and_recorded(tmp_path, capsys):
    settings = _settings(tmp_path, train_steps=4, warmup_steps=1)
    results = finetuning.run(CollapsingTask([True]), settings, verbose=False)  # at the end
    assert ("collapsed at step 4 (at the end): every one of the 4 predictions is 'yes' on dev "
            "(accuracy 0.5000); --collapse_restarts=N restarts it with another seed") in \
        capsys.readouterr().out
    assert results["collapsed"]["what"] == "every one of the 4 predictions is 'yes'"
    assert results["attempts"][0]["collapsed"]["step"] == 4


def test_a_restart_killed_while_moving_files_finishes_the_move(tmp_path):
    settings = FinetuneSettings(task="rte", output_dir=str(tmp_path), collapse_restarts=1)
    attempts = collapse.Attempts(settings)
    attempts.record(3, Collapse("dev", "x", {}))
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "eval_history.jsonl").write_text("{}\n")
    attempts.current["archived"] = False
    attempts.entries.append(attempts._entry(1))
    attempts._save()  # killed here, before the files moved
    again = collapse.Attempts(settings)
    assert again.varied() == {"seed": 13345, "learning_rate": 2e-5}
    assert again.restarts_left == 0
    again.archive()
    assert sorted(os.listdir(tmp_path / "attempts" / "attempt-1")) == ["checkpoints",
                                                                        "eval_history.jsonl"]
    assert not (tmp_path / "checkpoints").exists()
    assert collapse.Attempts(settings).entries[0]["archived"] is True


def test_the_seeds_summary_lists_restarts_and_collapses(tmp_path):
    def run(seed, path):
        results = {"dev": {"accuracy": 0.5 + seed / 10}}
        if seed == 2:
            results["attempts"] = [{"attempt": 1, "seed": 2, "learning_rate": 1e-5,
                                    "collapsed": {"step": 4, "what": "all 'a'"}},
                                   {"attempt": 2, "seed": 1002, "learning_rate": 1e-5}]
        if seed == 3:
            results["collapsed"] = {"step": 9, "what": "all 'b'", "split": "dev"}
        return results

    summary, paths = seeds_folds.run_seeds(str(tmp_path), (1, 2, 3), run, ("dev",),
                                           log=lambda line: None)
    saved = json.load(open(paths[0]))
    assert saved["restarts"] == {"2": 1} and saved["collapsed"] == {"3": "all 'b'"}
    table = open(paths[1]).read()
    assert "seed 2: restarted 1 time(s) after a collapse" in table
    assert "seed 3: collapsed (all 'b'; at step 9)" in table
