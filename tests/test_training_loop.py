"""The fine-tuning loop: epochs, evaluation while training, the best step, early stopping.

The runs here fine-tune a tiny model on test_task_plugin's toy task (is a
sentence a question?, a task type folder of tests/plugin_tasks/) in-process, a
few updates each.
"""

import dataclasses
import json
import os
import types

import numpy as np
import pytest
from conftest import FIXTURES
from safetensors.numpy import load_file

import cli_helpers as cli
from albert_tf import tasks
from albert_tf.checkpoints.weights import model_variables
from albert_tf.training import engine, eval_history, finetuning
from albert_tf.training.callbacks import TrainingInterrupted, update_step
from albert_tf.training.results import report_complete
from albert_tf.training.settings import FinetuneSettings, resolve, scheduled
from albert_tf.tasks.base import Scoring, SplitData
from test_task_plugin import PLUGINS, SENTENCES
from test_task_plugin import write_data as _write_data


with tasks.task_path(PLUGINS):  # the toy task type, for the classes below
    TOY = tasks.declarations()["toy_question"]
    QuestionTask = type(tasks.get("toy_question"))


# -- The number of updates --------------------------------------------------------

def test_epochs_are_counted_in_updates_of_the_global_batch():
    settings = FinetuneSettings(task="mrpc", output_dir="x", batch_size=32, num_epochs=3.0,
                                warmup_proportion=0.1)
    run = scheduled(settings, 3668)
    assert run.train_steps == 344  # ceil(3 x 3,668 / 32) = ceil(343.875)
    assert run.warmup_steps == 34  # int(0.1 x 344), run_classifier.py's rounding
    # 0.1 x 30 is 3.0000000000000004 in floating point: still 3 updates of one.
    assert scheduled(settings.replace(num_epochs=0.1, batch_size=1), 30).train_steps == 3
    # --train_steps with --warmup_proportion: the warmup only.
    steps = scheduled(FinetuneSettings(task="mrpc", output_dir="x", train_steps=50,
                                       warmup_proportion=0.25), 7)
    assert (steps.train_steps, steps.warmup_steps) == (50, 12)


def test_recipes_keep_their_numbers_and_epochs_keep_their_warmup_share():
    mrpc = tasks.get("mrpc")
    pretrained = {"output_dir": "x", "init_checkpoint": "albert_base_v2"}  # the paper's recipe
    default = resolve(mrpc, pretrained)
    assert (default.train_steps, default.warmup_steps, default.num_epochs) == (800, 200, None)
    # MRPC's recipe warms up for 200 of 800 updates: a quarter of any number of epochs.
    epochs = resolve(mrpc, {**pretrained, "num_epochs": 3.0, "batch_size": 32})
    assert epochs.warmup_proportion == 0.25
    assert (scheduled(epochs, 3668).train_steps, scheduled(epochs, 3668).warmup_steps) == \
        (344, 86)
    for given, message in ((dict(num_epochs=3.0, train_steps=10),
                            "give --num_epochs or --train_steps, not both"),
                           (dict(warmup_proportion=0.1, warmup_steps=10),
                            "give --warmup_proportion or --warmup_steps, not both")):
        with pytest.raises(ValueError, match=message):
            resolve(mrpc, {"output_dir": "x", **given})


def test_evaluation_settings_are_checked_by_name():
    make = lambda **v: FinetuneSettings(task="rte", output_dir="x", **v)  # noqa: E731
    assert make(eval_every="200").eval_every == 200  # as a flag gives it
    assert make(eval_every="epoch").eval_every == "epoch"
    for values, message in ((dict(eval_every="epochs"),
                             "eval_every must be a number of updates >= 1 or 'epoch', got "
                             "'epochs'"),
                            (dict(eval_every=0), "eval_every must be a number of updates"),
                            (dict(keep_best=True), "keep_best needs eval_every"),
                            (dict(early_stopping_patience=2), "early_stopping_patience needs "
                             "eval_every"),
                            (dict(eval_every=5, best_metric="f1"), "best_metric is read by")):
        with pytest.raises(ValueError, match=message):
            make(**values)


def test_evaluation_steps():
    # 10 examples in batches of 4: the epochs end in updates 3, 5 and 8.
    assert eval_history.evaluation_steps("epoch", 8, 4, 10) == (3, 5, 8)
    assert eval_history.evaluation_steps(3, 8, 4, 10) == (3, 6, 8)  # and the last
    assert eval_history.evaluation_steps(None, 8, 4, 10) == ()


# -- Best step and early stopping -----------------------------------------------

def _history(values, key="accuracy", every=10):
    return [{"step": every * (i + 1), "epoch": 0.5 * (i + 1), key: v}
            for i, v in enumerate(values)]


def test_early_stopping_stops_at_the_predicted_evaluation():
    # min_delta 0.05: 0.60 improves on 0.50, 0.62 and 0.61 do not improve on 0.60.
    selection = eval_history.Selection("accuracy", True, patience=2, min_delta=0.05)
    history = _history([0.50, 0.60, 0.62, 0.61, 0.90])
    entry, reference = selection.stop(history)
    assert (entry["step"], reference["step"]) == (40, 20)
    assert selection.best(history[:4])["step"] == 30  # the best step needs no min_delta
    assert selection.stop(history[:3]) is None
    # Lower is better for a loss; equal values are no improvement (the earliest is best).
    losses = eval_history.Selection("dev/loss", False, patience=1)
    history = _history([0.9, 0.7, 0.7, 0.5], key="dev/loss")
    assert losses.best(history[:3])["step"] == 20 and losses.stop(history)[0]["step"] == 30
    assert tasks.get("mrpc").greater_is_better("accuracy")
    assert not tasks.get("mrpc").greater_is_better("dev/loss")
    assert not tasks.get("text_regression").greater_is_better("baseline_mse")


# -- Every task's primary metric is one its evaluation reports -------------------

def _scoring(task, output_dir, examples=(), labels=None, logits=None, **options):
    """`(task bound to a run's settings, what the run hands its evaluation)`, with the
    outputs given; the model's head has labels a, b, c and the default threshold."""
    settings = FinetuneSettings(task=task.name, output_dir=str(output_dir),
                                task_options=options)
    split = SplitData("dev", list(examples), types.SimpleNamespace(arrays={"label": labels}),
                      {"logits": logits})
    head = {"labels": ["a", "b", "c"], "threshold": 0.5, "threshold_source": "default"}
    return task.bind(settings), Scoring(split, {}, head, str(output_dir))


def _evaluated_keys(task, tmp_path, monkeypatch):
    logits = np.array([[0.2, 0.5, 0.1], [0.9, 0.1, 0.0], [0.1, 0.2, 0.8]], np.float32)
    labels = np.array([1, 0, 0])
    if isinstance(task, tasks.get("squad").__class__):
        from albert_tf.tasks.squad.cmrc2018 import read_cmrc2018
        from albert_tf.tasks.squad.data import read_squad

        examples = (read_cmrc2018(os.path.join(FIXTURES, "clue", "cmrc2018", "dev.json"))
                    if task.name == "cmrc2018" else
                    read_squad(os.path.join(FIXTURES, "squad", f"v{task.version[0]}_dev.json")))
        monkeypatch.setattr(type(task), "decode", lambda self, split: (
            {e.qid: "" for e in split.examples}, {}, {e.qid: 0.0 for e in split.examples}))
        bound, scoring = _scoring(task, tmp_path, examples)
        scoring = dataclasses.replace(scoring, helpers={"heldout": SplitData("heldout", [],
                                                                             None, None)})
    elif task.name == "token_classification":
        encoded = [types.SimpleNamespace(tags=["B-PER", "I-PER", "O"]),
                   types.SimpleNamespace(tags=["O", "B-LOC", "O"])]
        predicted = [["B-PER", "I-PER", "O"], ["O", "O", "O"]]
        monkeypatch.setattr(type(task), "predicted_tags", lambda self, scoring: (encoded,
                                                                                predicted))
        monkeypatch.setattr(type(task), "_scheme", lambda self: "iob2")
        monkeypatch.setattr(type(task), "_write_conll", lambda *args: None)
        bound, scoring = _scoring(task, tmp_path)
    elif task.options_class is not None and "max_qa_length" in task.options_class.field_names():
        examples = [types.SimpleNamespace(label=1, choices=("x", "y", "z"), group=""),
                    types.SimpleNamespace(label=0, choices=("x", "y", "z"), group="")]
        bound, scoring = _scoring(task, tmp_path, examples, logits=logits[:2])
    elif task.name == "chid":  # two blanks of one passage, three idioms
        examples = [types.SimpleNamespace(key=f"#idiom{i}#", label=i, choices=("x", "y", "z"),
                                          group="p") for i in (1, 0)]
        bound, scoring = _scoring(task, tmp_path, examples, logits=logits[:2])
    elif task.name == "toy_question":  # (tests/plugin_tasks/: one logit a sentence)
        bound, scoring = _scoring(task, tmp_path, labels=labels)
        scoring = dataclasses.replace(scoring, split=dataclasses.replace(
            scoring.split, outputs={"logit": logits[:, 0]}))
    elif task.name == "text_regression" or getattr(task, "is_regression", False):
        bound, scoring = _scoring(task, tmp_path, labels=np.array([0.5, 2.0, 1.0]),
                                  logits=logits[:, :1])
    else:  # a GLUE or CLUE classification, or the user's own classes (3 here)
        classes = len(getattr(getattr(task, "spec", None), "labels", None) or "abc")
        bound, scoring = _scoring(task, tmp_path, labels=labels, logits=logits[:, :classes])
    return set(bound.evaluate(scoring))


@pytest.mark.parametrize("name", tasks.names())
def test_every_task_reports_its_primary_metric(name, tmp_path, monkeypatch):
    task = tasks.get(name)
    assert task.primary_metric in _evaluated_keys(task, tmp_path, monkeypatch)


def test_a_multi_label_task_ranks_by_micro_f1(tmp_path):
    task = tasks.get("text_classification")
    bound, scoring = _scoring(task, tmp_path,
                              labels=np.array([[1, 0, 1], [0, 1, 0]], np.float32),
                              logits=np.array([[2.0, -1.0, 0.5], [-1.0, 1.0, -2.0]]),
                              multi_label=True)
    metric = bound.primary_metric_for(bound.task_options)
    assert metric == "micro_f1" and metric in bound.evaluate(scoring)


# -- Runs ----------------------------------------------------------------------

class ProbabilityTask(QuestionTask):
    """The toy task with a continuous metric too: the log-loss of the dev split."""

    primary_metric = "accuracy"

    def __init__(self):
        super().__init__(TOY)

    def evaluate(self, scoring):
        results = super().evaluate(scoring)
        labels = scoring.split.features.arrays["label"]
        logit = scoring.split.outputs["logit"].astype(np.float64)
        log_p = -np.logaddexp(0.0, np.where(labels == 1, -logit, logit))  # log sigmoid(+-x)
        results["log_loss"] = float(-np.mean(log_p))
        return results


def _settings(tmp_path, **changes):
    values = dict(task="toy_question", output_dir=str(tmp_path / "run"),
                  data_dir=_write_data(tmp_path / "data"), vocab_file=cli.SPM,
                  model=cli.tiny_model(str(tmp_path)), strategy="one_device", precision="fp32",
                  learning_rate=3e-3, batch_size=4, train_steps=6, warmup_steps=1,
                  max_seq_length=16, dropout=0.0, classifier_dropout=0.0, checkpoint_every=100,
                  keep_checkpoints=20, log_every=100)
    values.update(changes)
    return FinetuneSettings(**values)


def _restored_evaluations(task, settings, steps, tmp_path):
    """step -> (dev results, weights) of the training checkpoint of each step, scored
    by a second run that restores them."""
    other = finetuning.Run(task, settings.replace(output_dir=settings.output_dir + "-check",
                                                  do_train=False), verbose=False)
    manager = engine.checkpoint_manager(other.model, other.strategy, str(tmp_path / "unused"))
    restored = {}
    for step in steps:
        path = os.path.join(settings.output_dir, "checkpoints", f"ckpt-{step}")
        manager.checkpoint.restore(path).assert_existing_objects_matched()
        assert update_step(other.model) == step
        other.model_changed()
        restored[step] = (other.task.evaluate(other.scoring("dev")),
                          {k: v.numpy() for k, v in model_variables(other.model).items()})
    return restored


@pytest.mark.slow  # three runs' worth of model building (~20 s on 2 idle cores)
def test_history_keep_best_and_epochs(tmp_path):
    task = ProbabilityTask()
    # 8 training sentences, 1.5 epochs in batches of 4: 3 updates, an evaluation at each.
    settings = _settings(tmp_path, num_epochs=1.5, eval_every=1,
                         keep_best=True, best_metric="log_loss", warmup_proportion=0.0)
    # A --best_metric the task does not report is named before any update.
    wrong = settings.replace(best_metric="f2", output_dir=str(tmp_path / "wrong"))
    with pytest.raises(ValueError, match="best_metric 'f2' is not a result of this task's "
                       "evaluation; it reports accuracy, examples, log_loss"):
        finetuning.run(task, wrong, verbose=False)
    assert not os.path.exists(tmp_path / "wrong" / "checkpoints" / "checkpoint")

    results = finetuning.run(task, settings, verbose=False)
    assert results["train"]["step"] == 3
    history = eval_history.read_history(os.path.join(settings.output_dir, "eval_history.jsonl"))
    assert [(e["step"], e["epoch"]) for e in history] == [(1, 0.5), (2, 1.0), (3, 1.5)]
    # Each line is what the checkpoint of its step scores when evaluated afresh.
    restored = _restored_evaluations(task, settings, [e["step"] for e in history], tmp_path)
    for entry in history:
        again = restored[entry["step"]][0]
        assert entry["log_loss"] == pytest.approx(again["log_loss"], abs=1e-6)
        assert entry["accuracy"] == again["accuracy"]
    weights = {step: arrays for step, (_, arrays) in restored.items()}
    best = min(history, key=lambda e: e["log_loss"])
    assert results["best"] == {"metric": "log_loss", "step": best["step"],
                               "epoch": best["epoch"], "value": best["log_loss"]}
    # --keep_best: model/ holds the best step's weights, and the final result is its line.
    assert results["dev"]["log_loss"] == pytest.approx(best["log_loss"], abs=1e-6)
    saved = load_file(os.path.join(settings.output_dir, "model", "model.safetensors"))
    assert saved.keys() == weights[best["step"]].keys()
    for name, value in weights[best["step"]].items():
        np.testing.assert_allclose(saved[name], value, atol=1e-6, err_msg=name)
    others = [s for s in weights if s != best["step"]]  # which the comparison tells apart
    assert others and all(any(not np.allclose(weights[s][k], saved[k]) for k in saved)
                          for s in others)
    with open(os.path.join(settings.output_dir, "eval_results.json")) as f:
        assert json.load(f)["best"]["step"] == best["step"]
    assert _scalars(os.path.join(settings.output_dir, "tensorboard"), "eval_dev/log_loss") == \
        pytest.approx({e["step"]: e["log_loss"] for e in history}, abs=1e-6)


def _scalars(folder, tag):
    """step -> value of a TensorBoard scalar in the event files of `folder`."""
    import tensorflow as tf

    found = {}
    for name in os.listdir(folder):
        for record in tf.data.TFRecordDataset(os.path.join(folder, name)):
            event = tf.compat.v1.Event.FromString(record.numpy())
            for value in event.summary.value:
                if value.tag == tag:
                    found[event.step] = float(tf.make_ndarray(value.tensor))
    return found


class ScriptedTask(QuestionTask):
    """The toy task whose `score` follows a script by step; it can interrupt once."""

    primary_metric = "score"
    SCRIPT = {2: 0.50, 4: 0.60, 6: 0.62, 8: 0.61, 10: 0.90, 12: 0.95}

    def __init__(self, interrupt_at=None):
        super().__init__(TOY)
        # Held in lists: each run works on its own bound copy of the task (`Task.bind`),
        # and the script spans runs.
        self.interrupt_at, self.calls = [interrupt_at], []

    def evaluate(self, scoring):
        step = scoring.step
        self.calls.append(step)
        if step == self.interrupt_at[0]:
            self.interrupt_at[0] = None
            raise KeyboardInterrupt
        return {"score": self.SCRIPT[step], "examples": len(SENTENCES)}


def test_early_stopping_stops_at_the_predicted_step_and_survives_an_interrupt(tmp_path,
                                                                                capsys):
    settings = _settings(tmp_path, train_steps=12, eval_every=2, early_stopping_patience=2,
                         early_stopping_min_delta=0.05, do_eval=False)
    task = ScriptedTask(interrupt_at=6)
    with pytest.raises(TrainingInterrupted, match="interrupted at step 6 of 12"):
        finetuning.run(task, settings, verbose=False)
    history_file = os.path.join(settings.output_dir, "eval_history.jsonl")
    assert [e["step"] for e in eval_history.read_history(history_file)] == [2, 4]

    task.calls = []
    results = finetuning.run(task, settings, verbose=False)
    # 0.62 and 0.61 do not beat 0.60 by 0.05: two evaluations without one, stop at 8.
    assert task.calls == [6, 8]  # step 6 scored on resuming, nothing scored twice
    assert results["train"]["step"] == 8
    assert results["train"]["early_stopped"]["reason"] == (
        "early stopping at step 8: score has not improved by at least 0.05 in 2 "
        "evaluation(s) since step 4 (0.6000)")
    assert [(e["step"], e["score"]) for e in eval_history.read_history(history_file)] == \
        [(2, 0.5), (4, 0.6), (6, 0.62), (8, 0.61)]
    # Run again, the run is over: nothing is trained or scored.
    task.calls = []
    assert finetuning.run(task, settings, verbose=False)["train"]["step"] == 8
    assert task.calls == []
    capsys.readouterr()
    assert report_complete(settings.output_dir)  # what rerunning the command prints
    assert results["train"]["early_stopped"]["reason"] in capsys.readouterr().out


def test_no_early_stop_is_reported_at_the_planned_last_step(tmp_path, capsys):
    """Step 8 would stop the run early (see above); planned as the last, it is no stop."""
    settings = _settings(tmp_path, train_steps=8, eval_every=2, early_stopping_patience=2,
                         early_stopping_min_delta=0.05, do_eval=False)
    results = finetuning.run(ScriptedTask(), settings, verbose=False)
    assert results["train"]["step"] == 8 and "early_stopped" not in results["train"]
    assert "early stopping" not in capsys.readouterr().out


@pytest.mark.slow  # two trainings of the same run (about 20 s of CPU)
def test_evaluation_compiled_apart_from_training_scores_the_same(tmp_path, monkeypatch):
    """`--xla=auto` may compile evaluation with XLA and not the training step
    (`albert_tf.training.execution`): the run's results say so, and its dev
    scores are those of an evaluation without XLA."""
    from albert_tf.training import execution

    task = ProbabilityTask()
    settings = _settings(tmp_path, train_steps=2)
    plain = finetuning.run(task, settings.replace(xla="off", output_dir=str(tmp_path / "plain")),
                           verbose=False)
    # The toy model is under the size `auto` measures; measured as if XLA's
    # forward pass were 2x faster and its training step slower.
    monkeypatch.setattr(execution, "MIN_MEASURED_STEP_GFLOP", 0.0)
    # (and a run of 2 steps, shorter than the probe, measured as a longer one is)
    monkeypatch.setattr(execution, "_shorter_than_probe", lambda *args: "")
    monkeypatch.setattr(execution, "measure", lambda config, policy, options, *_: (
        [(o, 2.0 if o.jit else 1.0) for o in options], [(False, 0.2), (True, 0.1)]))
    predicted_with, predict = [], engine.predict
    monkeypatch.setattr(engine, "predict", lambda *args, jit=False, **kwargs: (
        predicted_with.append(jit) or predict(*args, jit=jit, **kwargs)))
    split = finetuning.run(task, settings.replace(xla="auto", layer_execution="loop",
                                                  output_dir=str(tmp_path / "split")),
                           verbose=False)
    assert (plain["xla"], plain["evaluation_xla"]) == (False, False)
    assert (split["xla"], split["evaluation_xla"]) == (False, True)
    assert predicted_with and all(predicted_with)
    assert split["dev"]["accuracy"] == plain["dev"]["accuracy"]
    assert split["dev"]["log_loss"] == pytest.approx(plain["dev"]["log_loss"], abs=1e-5)


def test_results_evaluated_in_bfloat16_say_why_predict_may_differ(tmp_path, capsys):
    from albert_tf.training.results import print_results

    task = ProbabilityTask()
    settings = _settings(tmp_path, train_steps=2, precision="bf16")
    results = finetuning.run(task, settings, verbose=False)
    assert results["precision"] == "mixed_bfloat16"
    assert results["precision_note"].startswith("evaluated in mixed_bfloat16, the precision")
    assert "predict, serve and exports compute in float32" in results["precision_note"]
    with open(tmp_path / "run" / "eval_results.json") as f:
        assert json.load(f)["precision_note"] == results["precision_note"]
    print_results(results)
    assert results["precision_note"] in capsys.readouterr().out
    plain = finetuning.run(task, settings.replace(precision="fp32",
                                                  output_dir=str(tmp_path / "fp32")),
                           verbose=False)
    assert "precision_note" not in plain



def question_share(outputs, labels):
    """A user's metric (`--metrics_fn=test_training_loop:question_share`)."""
    return {"question_share": float(np.mean(outputs["logit"] > 0)),
            "rows_seen": len(labels["label"])}


def test_eval_loss_user_metrics_and_sample_limits_reach_history_and_results(tmp_path):
    task = ProbabilityTask()
    settings = _settings(tmp_path, train_steps=4, eval_every=2, keep_best=True,
                         best_metric="question_share", max_train_samples=5,
                         max_eval_samples=3, metrics_fn="test_training_loop:question_share")
    results = finetuning.run(task, settings, verbose=False)
    dev = results["dev"]
    # The evaluation loss is the model's own training loss on the dev split: here the
    # binary cross-entropy the toy task's log_loss computes apart.
    assert dev["loss"] == pytest.approx(dev["log_loss"], rel=1e-4)
    assert dev["rows_seen"] == 3 and dev["examples"] == 3  # --max_eval_samples
    assert results["train"]["train_set_examples"] == 5  # --max_train_samples
    history = eval_history.read_history(os.path.join(settings.output_dir,
                                                     "eval_history.jsonl"))
    assert [sorted({"loss", "question_share", "rows_seen"} & set(e)) for e in history] == \
        [["loss", "question_share", "rows_seen"]] * 2
    assert results["best"]["metric"] == "question_share"
    with open(os.path.join(settings.output_dir, "eval_results.json")) as f:
        assert json.load(f)["dev"]["loss"] == dev["loss"]


def test_a_metrics_fn_that_cannot_be_loaded_or_returns_no_numbers_is_named(tmp_path):
    from albert_tf.training import eval_extras

    with pytest.raises(ValueError, match=r"^--metrics_fn=nowhere_module:f: No module named"):
        eval_extras.load_metrics_fn("nowhere_module:f")
    with pytest.raises(ValueError, match="expected module:function"):
        eval_extras.load_metrics_fn("just_a_name")
    with pytest.raises(ValueError, match=r"'share': 'high' is not a number"):
        eval_extras.user_metrics(lambda o, y: {"share": "high"}, "m:f", {}, {}, {})
    with pytest.raises(ValueError, match="accuracy already reported by the task"):
        eval_extras.user_metrics(lambda o, y: {"accuracy": 1.0}, "m:f", {}, {}, {"accuracy": 0})
    assert eval_extras.metrics_fn_name(question_share) == "test_training_loop:question_share"
    with pytest.raises(ValueError, match="not a function its module can name"):
        eval_extras.metrics_fn_name(lambda o, y: {})
