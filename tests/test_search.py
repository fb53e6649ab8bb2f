"""`albert-tf search`: the space, the pruner on an evaluation history, the resumable study."""

import json
import os
import signal
import sys
import time

import optuna
import pytest

from albert_tf.errors import RunStopped

from albert_tf.training.settings import FinetuneSettings
from albert_tf.tuning import report, space, study, watch


def _space(text):
    return space.parse_space(text, FinetuneSettings)


def test_the_space_takes_the_settings_types():
    lr, batch, steps, drop = _space("learning_rate=1e-5:5e-5:log | batch_size=16,32 | "
                                    "train_steps=10:40 | dropout=0:0.2")
    assert (lr.kind, lr.type, lr.low, lr.high) == ("log", float, 1e-5, 5e-5)
    assert (batch.kind, batch.choices) == ("choice", (16, 32))
    assert (steps.kind, steps.type, steps.low, steps.high) == ("uniform", int, 10, 40)
    assert drop.type is float and drop.extremes() == [0.0, 0.2]
    trial = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3)).ask()
    values = {p.name: p.suggest(trial) for p in (lr, batch, steps)}
    assert 1e-5 <= values["learning_rate"] <= 5e-5 and values["batch_size"] in (16, 32)
    assert isinstance(values["train_steps"], int) and 10 <= values["train_steps"] <= 40
    assert space.grid(_space("batch_size=16,32 | recompute=true,false")) == \
        {"batch_size": [16, 32], "recompute": [True, False]}


@pytest.mark.parametrize("text, message", [
    ("lr=1e-5:5e-5", "--space: unknown setting 'lr'; a search may vary accumulation_steps, "),
    ("batch_size=16,x", "--space: batch_size=16,x: 'x' is not an integer"),
    ("learning_rate=0:1e-3:log", "a range needs low < high and low > 0 (log)"),
    ("optimizer=adamw:lamb", "a range is low:high or low:high:log, of a numeric setting"),
    ("seed=1,2", "unknown setting 'seed'"),  # --seeds_per_trial varies the seed
    ("batch_size=16 | batch_size=32", "batch_size is given twice"),
    ("batch_size", "is not name=low:high[:log] or name=a,b,..."),
])
def test_a_bad_space_is_one_line_naming_the_part(text, message):
    with pytest.raises(ValueError) as error:
        _space(text)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_grid_needs_lists():
    with pytest.raises(ValueError, match="--sampler=grid needs a list of values for every "
                                         "parameter; learning_rate is a range"):
        space.grid(_space("learning_rate=1e-5:5e-5 | batch_size=16,32"))


class FakeProcess:
    """A fine-tuning process that runs until stopped (or until `ends` polls)."""

    def __init__(self, ends=None):
        self.signals, self.polls, self.ends, self.returncode = [], 0, ends, None

    def poll(self):
        self.polls += 1
        if self.ends is not None and self.polls >= self.ends:
            self.returncode = 0
        return self.returncode

    def send_signal(self, number):
        self.signals.append(number)
        self.returncode = -number

    def wait(self):
        return self.returncode


def _history(path, *values, partial=None):
    with open(path, "w") as f:
        for step, value in enumerate(values, start=1):
            f.write(json.dumps({"step": step * 10, "epoch": step / 2, "accuracy": value,
                                "f1": 0.5}) + "\n")
        if partial:
            f.write(partial)  # a line the run is still writing


def _study_with_finished_trials(values_per_trial):
    made = optuna.create_study(direction="maximize", pruner=optuna.pruners.MedianPruner(
        n_startup_trials=len(values_per_trial)))
    for values in values_per_trial:
        trial = made.ask()
        for step, value in enumerate(values, start=1):
            trial.report(value, step * 10)
        made.tell(trial, values[-1])
    return made


def test_the_pruner_stops_a_hopeless_trial_from_its_history(tmp_path):
    made = _study_with_finished_trials([[0.6, 0.7, 0.8], [0.62, 0.72, 0.82]])
    history = str(tmp_path / "eval_history.jsonl")
    _history(history, 0.61, 0.3, partial='{"step": 30, "accu')
    hopeless, process = made.ask(), FakeProcess()
    assert watch.watch(process, history, "accuracy", hopeless, poll_seconds=0) is True
    assert process.signals == [signal.SIGTERM]  # what saves the run's step and ends it
    assert made.trials[-1].intermediate_values == {10: 0.61, 20: 0.3}  # not the partial line
    # A trial as good as the others is left to finish.
    _history(history, 0.65, 0.75, 0.85)
    good, process = made.ask(), FakeProcess(ends=1)  # ended before its history was read
    assert watch.watch(process, history, "accuracy", good, poll_seconds=0) is False
    assert process.signals == [] and made.trials[-1].intermediate_values == \
        {10: 0.65, 20: 0.75, 30: 0.85}
    # No history (no --eval_every): nothing to report, the run finishes.
    missing, process = made.ask(), FakeProcess(ends=2)
    assert watch.watch(process, str(tmp_path / "none.jsonl"), "accuracy", missing,
                       poll_seconds=0) is False


def test_a_history_is_read_as_it_grows(tmp_path):
    path = tmp_path / "eval_history.jsonl"
    reader = watch.HistoryReader(str(path))
    assert reader.new_entries() == []
    path.write_text('{"step": 1, "accuracy": 0.5}\n{"step": 2, "acc')
    assert reader.new_entries() == [{"step": 1, "accuracy": 0.5}]
    with open(path, "a") as f:
        f.write('uracy": 0.6}\n')
    assert reader.new_entries() == [{"step": 2, "accuracy": 0.6}]


def test_a_killed_search_resumes_without_rerunning_finished_trials(tmp_path):
    parameters = _space("learning_rate=1e-5:5e-5:log | batch_size=16,32")
    folder, calls = str(tmp_path / "search"), []

    def run_trial(trial, params, path, reported):
        calls.append((trial.number, params))
        if len(calls) == 2:
            raise KeyboardInterrupt  # the search is stopped during trial 1
        return {"state": "complete", "value": params["learning_rate"] * 1e4, "sd": None,
                "values": {}}

    first = study.open_study(folder, "maximize", "tpe", parameters, seed=5, prune=True)
    with pytest.raises(KeyboardInterrupt):
        study.run_search(folder, first, parameters, 3, run_trial, log=lambda line: None)
    assert os.path.isfile(os.path.join(folder, "study.db"))
    lines = []
    again = study.open_study(folder, "maximize", "tpe", parameters, seed=5, prune=True)
    records = study.run_search(folder, again, parameters, 3, run_trial, log=lines.append)
    # Trial 0 was not run again; trial 1 was finished with its own parameters; then trial 2.
    assert [number for number, _ in calls] == [0, 1, 1, 2]
    assert calls[2][1] == calls[1][1]
    assert lines[:2] == ["1 trial(s) finished before (not run again)",
                         "trial 1: continuing where the last start stopped"]
    assert sorted(records) == [0, 1, 2]
    states = {t.number: t.state for t in again.trials}
    assert states == {n: optuna.trial.TrialState.COMPLETE for n in range(3)}
    # A third start with the trials done runs nothing.
    done = study.open_study(folder, "maximize", "tpe", parameters, seed=5, prune=True)
    study.run_search(folder, done, parameters, 3, run_trial, log=lines.append)
    assert len(calls) == 4
    # The table: sorted by the metric, the best trial's folder first; the plot is written.
    table = report.rows(records, parameters, "accuracy", True, folder)
    assert [r["accuracy"] for r in table] == sorted((r["value"] for r in records.values()),
                                                    reverse=True)
    assert table[0]["folder"] == os.path.join(folder, f"trial-{table[0]['trial']}")
    paths = report.write_table(table, parameters, "accuracy", folder)
    with open(paths[2]) as f:
        assert json.load(f)["best"] == table[0]["folder"]
    assert os.path.getsize(report.write_plot(table, parameters, "accuracy", folder)) > 0


def test_a_failed_trial_is_marked_and_stops_the_search(tmp_path):
    parameters = _space("batch_size=16,32")
    folder = str(tmp_path / "search")

    def run_trial(trial, params, path, reported):
        raise ValueError("no such file")

    made = study.open_study(folder, "minimize", "grid", parameters, seed=0, prune=False)
    with pytest.raises(ValueError, match="no such file"):
        study.run_search(folder, made, parameters, 2, run_trial, log=lambda line: None)
    assert [t.state for t in made.trials] == [optuna.trial.TrialState.FAIL]


def _offline(_):
    raise OSError("[Errno -3] Temporary failure in name resolution")


@pytest.mark.parametrize("given, starts", [
    (["--init_checkpoint=albert_base_v2"],
     "error: --init_checkpoint: albert_base_v2: could not fetch "),
    (["--init_checkpoint=NOWHERE"], "error: --init_checkpoint: NOWHERE: no such file or folder"),
    (["--init_checkpoint=NOWHERE", "--vocab_file=SPM"],
     "error: --init_checkpoint: NOWHERE: no such file or folder"),
    (["--model=albert_base_v2", "--vocab_file=SPM"],
     "error: --model=albert_base_v2: not a model preset (")])
def test_a_checkpoint_that_cannot_be_resolved_stops_the_search_before_its_study(
        tmp_path, monkeypatch, given, starts):
    import cli_helpers as cli
    from albert_tf.commands import search as search_program
    from albert_tf.checkpoints import download
    from conftest import FIXTURES

    def no_trial(*args, **kwargs):
        raise AssertionError("a trial started")

    monkeypatch.setattr(download, "fetch_hf", _offline)
    monkeypatch.setenv("ALBERT_TF_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(watch, "start_finetune", no_trial)
    nowhere, out = str(tmp_path / "nowhere"), tmp_path / "search"
    args = ["--task=mrpc", f"--data_dir={os.path.join(FIXTURES, 'glue', 'MRPC')}",
            f"--output_dir={out}", "--space=learning_rate=1e-5,2e-5", "--trials=2",
            *(a.replace("NOWHERE", nowhere).replace("SPM", cli.SPM) for a in given)]
    line = cli.exit_line(search_program, *args).replace(nowhere, "NOWHERE")
    assert line.startswith(starts) and "\n" not in line, line
    assert not out.exists()  # no study, no settings file


def test_a_trial_runs_each_seed_as_a_finetune_process(tmp_path, monkeypatch):
    from cli_helpers import start_fake_finetune

    started = []

    def start(task_name, config, output_dir, log_path, probes_file=None):
        started.append((probes_file, output_dir))
        return start_fake_finetune(task_name, config, output_dir, log_path)

    monkeypatch.setattr(watch, "start_finetune", start)
    def make_config(params, seed):
        return {"batch_size": 4, "task_options": {}, **params, "seed": seed}

    probes = str(tmp_path / "execution_probes.json")
    run_trial = study.finetune_trials("mrpc", make_config, (7, 8),
                                      "accuracy", "dev", poll_seconds=0.01,
                                      log=lambda line: None, probes_file=probes)
    made = optuna.create_study(direction="maximize")
    path = str(tmp_path / "trial-0")
    os.makedirs(path)
    record = run_trial(made.ask(), {"learning_rate": 1e-3}, path, set())
    assert [os.path.basename(p) for _, p in started] == ["seed-7", "seed-8"]
    assert [f for f, _ in started] == [probes, probes]  # one probe for every run
    with open(os.path.join(path, "seed-7.json")) as f:
        assert json.load(f) == {"batch_size": 4, "task_options": {}, "learning_rate": 1e-3,
                                "seed": 7}
    assert record["state"] == "complete"
    assert record["value"] == pytest.approx((1.07 + 1.08) / 2)
    assert record["values"] == {"7": pytest.approx(1.07), "8": pytest.approx(1.08)}
    assert os.path.isfile(os.path.join(path, "seeds_summary.md"))


def test_a_trials_process_is_given_the_searchs_probes_file(tmp_path, monkeypatch):
    from albert_tf.training.execution import PROBES_FILE_ENV

    given = []
    monkeypatch.setattr(watch.subprocess, "Popen", lambda argv, **kw: given.append(kw["env"]))
    monkeypatch.delenv(PROBES_FILE_ENV, raising=False)
    log = str(tmp_path / "seed-1.log")
    watch.start_finetune("mrpc", "c.json", str(tmp_path), log, probes_file="/s/probes.json")
    watch.start_finetune("mrpc", "c.json", str(tmp_path), log)
    assert given[0][PROBES_FILE_ENV] == "/s/probes.json" and PROBES_FILE_ENV not in given[1]
    assert given[0]["PATH"] == os.environ["PATH"]  # the rest of the environment kept


def test_a_pruned_trial_counts_as_finished_and_is_listed_last(tmp_path):
    parameters = _space("batch_size=16,32,64")
    folder = str(tmp_path / "search")

    def run_trial(trial, params, path, reported):
        if params["batch_size"] == 32:
            return {"state": "pruned"}
        return {"state": "complete", "value": params["batch_size"] / 100, "sd": 0.01,
                "values": {"1": params["batch_size"] / 100}}

    made = study.open_study(folder, "minimize", "grid", parameters, seed=0, prune=True)
    records = study.run_search(folder, made, parameters, 5, run_trial, log=lambda line: None)
    assert len(made.trials) == 3  # the grid is exhausted before --trials=5
    by_size = {t.params["batch_size"]: t.state for t in made.trials}
    assert by_size[32] == optuna.trial.TrialState.PRUNED
    table = report.rows(records, parameters, "loss", False, folder)
    assert [(r["batch_size"], r["state"]) for r in table] == \
        [(16, "complete"), (64, "complete"), (32, "pruned")]  # lower is better here
    markdown = open(report.write_table(table, parameters, "loss", folder)[0]).read()
    assert "| 32 | - | - | - |" in markdown


SLOW_FINETUNE = """
import json, os, sys, time
args = dict(a[2:].split("=", 1) for a in sys.argv[1:])
os.makedirs(args["output_dir"], exist_ok=True)
with open(os.path.join(args["output_dir"], "eval_history.jsonl"), "a") as f:
    f.write(json.dumps({"step": 10, "epoch": 0.5, "accuracy": 0.1}) + "\\n")
time.sleep(60)  # training on, until stopped
"""


def test_a_pruned_trial_stops_its_run_and_runs_no_more_seeds(tmp_path, monkeypatch):
    import subprocess
    import time

    started = []

    def start(task_name, config, output_dir, log_path, probes_file=None):
        started.append(output_dir)
        return subprocess.Popen([sys.executable, "-c", SLOW_FINETUNE,
                                 f"--output_dir={output_dir}"])

    monkeypatch.setattr(watch, "start_finetune", start)
    made = _study_with_finished_trials([[0.9]])
    run_trial = study.finetune_trials("mrpc", lambda params, seed: {"seed": seed}, (1, 2),
                                      "accuracy", "dev", poll_seconds=0.05,
                                      log=lambda line: None)
    path = str(tmp_path / "trial-1")
    os.makedirs(path)
    begin = time.monotonic()
    assert run_trial(made.ask(), {}, path, set()) == {"state": "pruned"}
    assert time.monotonic() - begin < 30  # stopped, not waited for
    assert [os.path.basename(p) for p in started] == ["seed-1"]  # seed 2 never started


def test_a_grid_search_stopped_in_its_first_trial_runs_every_point_once(tmp_path):
    parameters = _space("learning_rate=1e-4,3e-4,5e-4")
    folder, calls = str(tmp_path / "search"), []

    def run_trial(trial, params, path, reported):
        calls.append((trial.number, params["learning_rate"]))
        if len(calls) == 1:
            raise watch.Terminated()  # SIGTERM during trial 0
        return {"state": "complete", "value": 1.0, "sd": None, "values": {}}

    first = study.open_study(folder, "maximize", "grid", parameters, seed=0, prune=False)
    with pytest.raises(KeyboardInterrupt):
        study.run_search(folder, first, parameters, 3, run_trial, log=lambda line: None)
    again = study.open_study(folder, "maximize", "grid", parameters, seed=0, prune=False)
    study.run_search(folder, again, parameters, 3, run_trial, log=lambda line: None)
    assert calls[0] == calls[1]  # trial 0 finished with its own point
    assert sorted(lr for _, lr in calls[1:]) == [1e-4, 3e-4, 5e-4]


def test_a_trial_that_failed_runs_again_when_the_search_is_started_again(tmp_path):
    parameters = _space("learning_rate=1e-4,3e-4 | batch_size=16,32")
    folder, calls, lines = str(tmp_path / "search"), [], []

    def run_trial(trial, params, path, reported):
        calls.append((params["learning_rate"], params["batch_size"]))
        if len(calls) == 1:
            raise RunStopped("trial 0, seed 1: the run failed")  # e.g. the tracker was down
        return {"state": "complete", "value": params["learning_rate"], "sd": None,
                "values": {}}

    first = study.open_study(folder, "maximize", "grid", parameters, seed=0, prune=False)
    with pytest.raises(RunStopped):
        study.run_search(folder, first, parameters, 4, run_trial, log=lambda line: None)
    again = study.open_study(folder, "maximize", "grid", parameters, seed=0, prune=False)
    records = study.run_search(folder, again, parameters, 4, run_trial, log=lines.append)
    assert calls[1] == calls[0] and len(calls) == 5  # the failed point first, then the rest
    assert sorted(calls[1:]) == [(1e-4, 16), (1e-4, 32), (3e-4, 16), (3e-4, 32)]
    assert len(records) == 4
    assert lines[0].startswith("trial 0 failed in an earlier start")


def test_sigterm_reaches_the_running_fine_tuning_and_stops_the_search(tmp_path):
    import subprocess

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    watch._CHILDREN.add(child)
    try:
        with pytest.raises(watch.Terminated), watch.stop_on_sigterm():
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(100):
                time.sleep(0.05)  # the handler runs between these
        assert child.wait(10) == -signal.SIGTERM
    finally:
        watch._CHILDREN.discard(child)
        child.kill()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL or callable(
        signal.getsignal(signal.SIGTERM))
