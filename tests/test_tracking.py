"""`--report_to=mlflow`: a run's parameters, metrics by step, results and artifacts in
MLflow's store; a resumed run continues its MLflow run; seeds, folds and a search's
trials are child runs of one parent. The default tier uses the SQLite store; the slow
tier a real `mlflow server` on 127.0.0.1 with a SQLite backend."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

import cli_helpers as cli
from albert_tf import extras
from albert_tf.commands import finetune
from albert_tf.training import finetuning, tracking
from albert_tf.training.callbacks import TrainingInterrupted
from albert_tf.training.settings import FinetuneSettings
from test_training_loop import ScriptedTask, _settings

mlflow = pytest.importorskip("mlflow")


def _client(uri):
    return mlflow.MlflowClient(tracking_uri=uri)


def _run_of(folder):
    with open(os.path.join(folder, tracking.RUN_FILE)) as f:
        saved = json.load(f)
    return _client(saved["tracking_uri"]), saved["run_id"]


def _steps(client, run_id, metric):
    return {m.step: m.value for m in client.get_metric_history(run_id, metric)}


def _tree(client, experiment_id):
    """`{run name: parent's run name or None}` of an experiment's runs, as the UI
    nests them (by the `mlflow.parentRunId` tag)."""
    runs = client.search_runs([experiment_id], max_results=1000)
    names = {r.info.run_id: r.info.run_name for r in runs}
    return {r.info.run_name: names.get(r.data.tags.get(tracking.PARENT_TAG)) for r in runs}


def test_a_run_reports_to_mlflow_and_a_resumed_run_continues_it(tmp_path):
    settings = _settings(tmp_path, train_steps=6, eval_every=2, checkpoint_every=2,
                         log_every=2, do_eval=False, report_to=("tensorboard", "mlflow"),
                         mlflow_experiment="toys")
    task = ScriptedTask(interrupt_at=4)
    with pytest.raises(TrainingInterrupted):
        finetuning.run(task, settings, verbose=False)
    client, run_id = _run_of(settings.output_dir)
    assert client.get_run(run_id).info.status == "KILLED"  # interrupted: to be resumed
    assert client.get_run(run_id).info.artifact_uri.startswith(
        "file://" + os.path.join(settings.output_dir, "mlartifacts"))

    finetuning.run(task, settings, verbose=False)
    assert _run_of(settings.output_dir)[1] == run_id  # the same MLflow run, continued
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "run"
    assert client.get_experiment(run.info.experiment_id).name == "toys"
    assert run.data.params["learning_rate"] == "0.003" and run.data.params["seed"] == "12345"
    assert run.data.params["report_to"] == '["tensorboard", "mlflow"]'
    # Every evaluation by step, once (step 4 was scored again on resuming: its value kept).
    assert _steps(client, run_id, "eval_dev/score") == {2: 0.5, 4: 0.6, 6: 0.62}
    # (The interrupt came in step 4's evaluation, before its scalars: TensorBoard misses
    # them too.)
    assert set(_steps(client, run_id, "train/loss")) == {2, 6}
    assert set(_steps(client, run_id, "train/learning_rate")) == {2, 6}
    assert run.data.metrics["final/train/step"] == 6
    artifacts = {a.path for a in client.list_artifacts(run_id)}
    assert {"eval_results.json", "eval_history.jsonl", "model"} <= artifacts
    assert "model/model.safetensors" in {a.path for a in client.list_artifacts(run_id, "model")}
    assert os.path.isdir(os.path.join(settings.output_dir, "tensorboard"))


def test_report_to_none_writes_no_tensorboard_and_names_a_missing_extra(tmp_path, monkeypatch):
    settings = FinetuneSettings(task="rte", output_dir=str(tmp_path), report_to=("none",))
    report = tracking.RunReport(settings)
    assert report.summary_dir is None and report.mlflow is None
    for bad in (("mlflow", "none"), ("wandb",), ()):
        with pytest.raises(ValueError, match="report_to must be tensorboard, mlflow, both"):
            settings.replace(report_to=bad)
    monkeypatch.setattr(extras.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(extras.MissingExtra, match=r'^--report_to=mlflow needs mlflow, which is '
                       r'not installed: pip install "albert-tf\[mlflow\]"$'):
        tracking.require(settings.replace(report_to=("mlflow",)))


def _fake_run_once(task, settings, given, make_run=None):
    """A seed's run as `finetuning.run` reports it, without training."""
    report = tracking.RunReport(settings)
    results = {"dev": {"accuracy": 0.5 + settings.seed / 10}}
    report.evaluation(3, results)
    os.makedirs(settings.output_dir, exist_ok=True)
    with open(os.path.join(settings.output_dir, "eval_results.json"), "w") as f:
        json.dump(results, f)
    report.final(3, results, {})
    report.end()
    return results


def test_seeds_are_child_runs_of_the_sets_run(tmp_path, monkeypatch):
    monkeypatch.setattr(finetune, "run_once", _fake_run_once)
    root = str(tmp_path / "seeds")
    finetune.PROGRAM.call({"task": "rte", "data_dir": cli.RTE, "output_dir": root,
                           "seeds": "1,2,3", "report_to": ["mlflow"]})
    client, parent_id = _run_of(root)
    assert client.tracking_uri == f"sqlite:///{root}/mlflow.db"  # one store for the set
    parent = client.get_run(parent_id)
    assert _tree(client, parent.info.experiment_id) == {
        "seeds 1,2,3": None, "seed-1": "seeds 1,2,3", "seed-2": "seeds 1,2,3",
        "seed-3": "seeds 1,2,3"}
    assert parent.info.status == "FINISHED" and "seed" not in parent.data.params
    assert parent.data.metrics["accuracy/mean"] == pytest.approx(0.7)
    assert parent.data.metrics["accuracy/sd"] == pytest.approx(0.1)
    assert {"seeds_summary.json", "seeds_summary.md"} <= \
        {a.path for a in client.list_artifacts(parent_id)}


# A search of trial processes (~10 s); child runs of one parent: the seeds' test above.
# In the local SQLite store and through a real `mlflow server` (which takes string tags only).
@pytest.mark.slow
@pytest.mark.parametrize("store", ["sqlite", "server"])
def test_a_searchs_trials_are_its_child_runs(tmp_path, monkeypatch, request, store):
    pytest.importorskip("optuna")
    from albert_tf.commands import search
    from albert_tf.tuning import watch

    configs = []

    def start(task_name, config, output_dir, log_path, probes_file=None):
        configs.append(json.load(open(config)))
        return cli.start_fake_finetune(task_name, config, output_dir, log_path)

    monkeypatch.setattr(watch, "start_finetune", start)
    root = str(tmp_path / "search")
    uri = (request.getfixturevalue("mlflow_server") if store == "server"
           else f"sqlite:///{root}/mlflow.db")
    search.PROGRAM.call({"task": "rte", "data_dir": cli.RTE, "output_dir": root,
                         "vocab_file": cli.SPM, "model": cli.tiny_model(str(tmp_path)),
                         "space": "learning_rate=1e-4,2e-4", "sampler": "grid", "trials": 2,
                         "seeds_per_trial": 2, "max_seq_length": 64, "report_to": ["mlflow"],
                         **({"mlflow_tracking_uri": uri} if store == "server" else {})})
    client, search_id = _run_of(root)
    tree = _tree(client, client.get_run(search_id).info.experiment_id)
    assert tree == {"search": None, "trial-0": "search", "trial-1": "search"}
    for number in (0, 1):
        trial = client.get_run(_run_of(os.path.join(root, f"trial-{number}"))[1])
        # The fake run's accuracy: learning_rate x 1000 + seed / 100, seeds 12345 and 12346.
        value = float(trial.data.params["learning_rate"]) * 1000 + 123.455
        assert trial.data.metrics["accuracy/mean"] == pytest.approx(value)
        assert trial.info.status == "FINISHED" and trial.data.tags["state"] == "complete"
    # Each trial's runs are told to be the trial's children, in the search's store.
    trial_ids = {_run_of(os.path.join(root, f"trial-{n}"))[1] for n in (0, 1)}
    assert {c["mlflow_parent_run"] for c in configs} == trial_ids
    assert {c["mlflow_tracking_uri"] for c in configs} == {uri}
    search_run = client.get_run(search_id)
    assert search_run.info.status == "FINISHED"
    assert search_run.data.params["search.sampler"] == "grid"
    assert "trials.md" in {a.path for a in client.list_artifacts(search_id)}


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def mlflow_server(tmp_path):
    """A real `mlflow server` on 127.0.0.1 (SQLite backend, artifacts proxied); its URI."""
    port = _free_port()
    log = open(tmp_path / "server.log", "w")
    process = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
         "--backend-store-uri", f"sqlite:///{tmp_path}/server.db", "--artifacts-destination",
         str(tmp_path / "server-artifacts"), "--workers", "1"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, \
                    open(tmp_path / "server.log").read()[-2000:]
                time.sleep(0.5)
        yield uri
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the server and its workers
        process.wait(timeout=60)
        log.close()


@pytest.mark.slow  # the server's start (~8 s) and two tiny runs as processes
def test_seeds_reach_a_real_mlflow_server(tmp_path, mlflow_server):
    root = tmp_path / "seeds"
    args = cli.rte_args(root, cli.tiny_model(tmp_path), "--seeds=2", "--eval_every=6",
                        "--report_to=tensorboard,mlflow", f"--mlflow_tracking_uri={mlflow_server}",
                        "--mlflow_experiment=rte-seeds")
    result = cli.run("albert_tf.finetune", *args, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    client = _client(mlflow_server)
    experiment = client.get_experiment_by_name("rte-seeds")
    assert _tree(client, experiment.experiment_id) == {
        "seeds 1,2": None, "seed-1": "seeds 1,2", "seed-2": "seeds 1,2"}
    for seed in (1, 2):
        run_id = _run_of(str(root / f"seed-{seed}"))[1]
        run = client.get_run(run_id)
        assert run.info.status == "FINISHED" and run.data.params["seed"] == str(seed)
        assert set(_steps(client, run_id, "eval_dev/accuracy")) == {6, 12}
        assert set(_steps(client, run_id, "train/loss")) == {4, 8, 12}
        # The artifacts went through the server into its artifact store.
        assert "model/model.safetensors" in {
            a.path for a in client.list_artifacts(run_id, "model")}
    assert not (root / "mlflow.db").exists()  # the server's store, not a local one
