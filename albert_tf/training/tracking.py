"""Where a fine-tuning run reports beside its files (`--report_to`): TensorBoard and MLflow.

TensorBoard: `<output_dir>/tensorboard/`, as ever (`--report_to=none` leaves it
out). MLflow, through MLflow's own client (the `mlflow` extra), into
`--mlflow_tracking_uri` (default: the `MLFLOW_TRACKING_URI` variable, else the
SQLite store `sqlite:///<output_dir>/mlflow.db`, its artifacts beside it in
`mlartifacts/`) under the experiment `--mlflow_experiment` (default: the task's
name). One MLflow run per run folder:

- parameters: the run's settings (a task's options as `task_options.NAME`);
- metrics: the training scalars every `--log_every` updates (`train/loss`,
  `train/learning_rate`, `train/examples_per_second`), each evaluation's
  numbers at its step (`eval_<split>/<metric>`, as in TensorBoard), and the final
  results (`final/<split>/<metric>`, `final/train/...`);
- artifacts: `eval_results.json`, `eval_history.jsonl` and the model folder (`model/`).

The folder keeps its MLflow run in `mlflow_run.json` (`RUN_FILE`), so that a
resumed run continues the same MLflow run. Repetitions are child runs
(`mlflow.parentRunId`) of one parent: the seeds of `--seeds` and the folds of
`--kfold` of their set's run, a search's trials of the search's run, and each
trial's seeds of the trial's run (`mlflow_parent_run`, set by the program that
runs them, with the parent's store).
"""

import json
import logging
import os
import re
import time

from albert_tf import extras
from albert_tf.io_utils import atomic_file

REPORT_TO = ("tensorboard", "mlflow", "none")
RUN_FILE = "mlflow_run.json"
DEFAULT_STORE = "mlflow.db"
DEFAULT_ARTIFACTS = "mlartifacts"
PARENT_TAG = "mlflow.parentRunId"
# MLflow's limits: a batch's metrics and parameters, a parameter's value and key.
BATCH_METRICS, BATCH_PARAMS, PARAM_LENGTH, KEY_LENGTH = 1000, 100, 6000, 250


def uses_mlflow(settings):
    return "mlflow" in settings.report_to


def require(settings):
    """Raises `extras.MissingExtra` (one line naming the extra) when `settings`
    report to MLflow and it is not installed."""
    if uses_mlflow(settings):
        extras.require("mlflow", "--report_to=mlflow")


def store(settings, output_dir=None):
    """The tracking URI of a run of `settings` in `output_dir` (default: its own)."""
    folder = os.path.abspath(output_dir or settings.output_dir)
    return (settings.mlflow_tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
            or f"sqlite:///{os.path.join(folder, DEFAULT_STORE)}")


def key(name):
    """`name` as MLflow takes a metric or parameter key (letters, digits, `_-. :/`)."""
    return re.sub(r"[^\w.\- :/]", "_", str(name))[:KEY_LENGTH]


def flat(values, prefix=""):
    """Nested dicts of settings or results as `{"a.b": value}` (lists as JSON)."""
    found = {}
    for name, value in values.items():
        if isinstance(value, dict):
            found.update(flat(value, f"{prefix}{name}."))
        else:
            found[f"{prefix}{name}"] = value
    return found


def _client(uri):
    mlflow = extras.load("mlflow", "--report_to=mlflow")
    # MLflow prints two emoji lines of links at every run's end; the top run's link
    # is said once instead, in the project's format (`MlflowRun.open`).
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    for noisy in ("mlflow", "alembic"):  # the store's one-time table creation, said at INFO
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return mlflow.MlflowClient(tracking_uri=uri)


class MlflowRun:
    """The MLflow run of one folder (a run, a set of seeds or folds, a search, a trial).

    `open` continues the run recorded in the folder's `mlflow_run.json` when it
    is in the same store, else creates one (a child of `parent`, a run id, when
    given). `fresh`: whether it was created now.
    """

    def __init__(self, client, uri, experiment_id, run_id, fresh):
        self.client, self.uri, self.experiment_id = client, uri, experiment_id
        self.run_id, self.fresh = run_id, fresh

    @classmethod
    def open(cls, folder, uri, experiment, name, parent=None, tags=None):
        """The run of `folder` in the store `uri`, in the experiment named `experiment`
        (created if new), named `name`."""
        client = _client(uri)
        resumed = cls._resumed(client, folder, uri)
        if resumed is not None:
            return resumed
        found = client.get_experiment_by_name(experiment)
        if found is not None:
            experiment_id = found.experiment_id
        else:
            # The default store keeps its artifacts beside it, not in the working folder.
            location = None
            if uri.startswith("sqlite:///") and uri.endswith("/" + DEFAULT_STORE):
                location = "file://" + os.path.join(
                    os.path.dirname(uri[len("sqlite:///"):]), DEFAULT_ARTIFACTS)
            experiment_id = client.create_experiment(experiment, artifact_location=location)
        run = cls._create(client, folder, uri, experiment_id, name, parent, tags)
        if parent is None and uri.startswith(("http://", "https://")):
            print(f"mlflow: run {name!r} at {uri.rstrip('/')}/#/experiments/{experiment_id}"
                  f"/runs/{run.run_id}", flush=True)
        return run

    def child(self, folder, name, params=None, tags=None):
        """The run of `folder` as a child of this one (same store and experiment),
        with `params` logged when it is new."""
        run = self._resumed(self.client, folder, self.uri) or self._create(
            self.client, folder, self.uri, self.experiment_id, name, self.run_id, tags)
        if run.fresh and params:
            run.params(params)
        return run

    @classmethod
    def _resumed(cls, client, folder, uri):
        """The run `folder` recorded in this store, set running again; else None."""
        path = os.path.join(folder, RUN_FILE)
        if not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8") as f:
            saved = json.load(f)
        if saved.get("tracking_uri") != uri:
            return None
        client.update_run(saved["run_id"], status="RUNNING")
        return cls(client, uri, saved["experiment_id"], saved["run_id"], fresh=False)

    @classmethod
    def _create(cls, client, folder, uri, experiment_id, name, parent, tags):
        # A tracking server takes string tag values only (the SQLite store any).
        run = client.create_run(experiment_id, run_name=name, tags={
            k: str(v) for k, v in {**(tags or {}), **({PARENT_TAG: parent} if parent else {})
                                   }.items()})
        os.makedirs(folder, exist_ok=True)
        with atomic_file(os.path.join(folder, RUN_FILE), encoding="utf-8") as f:
            json.dump({"tracking_uri": uri, "experiment_id": experiment_id,
                       "run_id": run.info.run_id}, f, indent=2)
        return cls(client, uri, experiment_id, run.info.run_id, fresh=True)

    def child_settings(self):
        """The settings that make a run this run's child, in this run's store."""
        return {"mlflow_parent_run": self.run_id, "mlflow_tracking_uri": self.uri}

    def params(self, values):
        """Logs `values` (nested dicts flattened) as parameters; MLflow keeps a
        parameter's first value, so a resumed run logs none again."""
        from mlflow.entities import Param

        items = [Param(key(k), "" if v is None else (
            json.dumps(v) if isinstance(v, (list, tuple)) else str(v))[:PARAM_LENGTH])
            for k, v in sorted(flat(values).items())]
        for start in range(0, len(items), BATCH_PARAMS):
            self.client.log_batch(self.run_id, params=items[start:start + BATCH_PARAMS])

    def metrics(self, values, step=0):
        """Logs `values` (name -> number) at `step`."""
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        items = [Metric(key(k), float(v), now, int(step)) for k, v in values.items()]
        for start in range(0, len(items), BATCH_METRICS):
            self.client.log_batch(self.run_id, metrics=items[start:start + BATCH_METRICS])

    def tags(self, values):
        for name, value in values.items():
            self.client.set_tag(self.run_id, key(name), str(value))

    def artifacts(self, path, artifact_path=None):
        """Logs a file, or a folder's files under `artifact_path`."""
        if os.path.isdir(path):
            self.client.log_artifacts(self.run_id, path, artifact_path)
        elif os.path.isfile(path):
            self.client.log_artifact(self.run_id, path, artifact_path)

    def end(self, status="FINISHED"):
        """Marks the run FINISHED, FAILED or KILLED (an interrupted run: resumed later)."""
        self.client.set_terminated(self.run_id, status)

    def summary(self, summary, files=()):
        """A set's summary (`seeds_folds.summarise`: metric -> statistics) as metrics
        (`<metric>/mean`, `/sd`, ...) and its files as artifacts."""
        self.metrics({f"{metric}/{name}": value for metric, entry in summary.items()
                      for name, value in entry.items()
                      if name != "values" and value is not None})
        for path in files:
            self.artifacts(path)


def open_run(settings, folder, name, params=None, parent=None, tags=None):
    """The MLflow run of `folder` for `settings` (their store and experiment),
    with `params` logged when it is new; None when they do not report to MLflow."""
    if not uses_mlflow(settings):
        return None
    run = MlflowRun.open(folder, store(settings, folder),
                         settings.mlflow_experiment or settings.task, name,
                         parent=parent, tags=tags)
    if run.fresh and params:
        run.params(params)
    return run


def open_parent(settings, folder, name):
    """The MLflow run of a set of runs of `settings` in `folder` (seeds, folds,
    a search) whose runs are its children, or None without MLflow: its parameters
    are the settings the runs share (not their folder and seed)."""
    shared = {k: v for k, v in settings.to_dict().items()
              if k not in ("output_dir", "seed", "mlflow_parent_run")}
    return open_run(settings, folder, name, params=shared, parent=settings.mlflow_parent_run)


def ended(run, error=None):
    """Ends `run` (None: nothing) as `error` says; for a `try`'s two branches."""
    if run is not None:
        run.end(end_status(error))


def end_status(error):
    """The MLflow status of a run that ended with `error`: FINISHED (None), KILLED
    (interrupted: the run resumes) or FAILED."""
    from albert_tf.training.callbacks import TrainingInterrupted

    if error is None:
        return "FINISHED"
    return "KILLED" if isinstance(error, (KeyboardInterrupt, TrainingInterrupted)) else "FAILED"


class RunReport:
    """What one fine-tuning run reports, made by the run on its chief (`chief`
    False: nothing): TensorBoard's folder (`summary_dir`, None without it) and its
    MLflow run (`mlflow`, None without it), with `settings` as parameters."""

    def __init__(self, settings, chief=True):
        from albert_tf.training.run_folder import TENSORBOARD_DIR

        self.summary_dir = (os.path.join(settings.output_dir, TENSORBOARD_DIR)
                            if chief and "tensorboard" in settings.report_to else None)
        self.mlflow = open_run(
            settings, settings.output_dir,
            os.path.basename(os.path.normpath(settings.output_dir)) or settings.task,
            params=settings.to_dict(), parent=settings.mlflow_parent_run) if chief else None

    def scalars(self, step, values):
        """Training scalars (`train/...`) at `step` (TensorBoard writes its own)."""
        if self.mlflow is not None:
            self.mlflow.metrics(values, step)

    def evaluation(self, step, results):
        """An evaluation's results (split -> metrics) at `step`: `eval_<split>/...`."""
        from albert_tf.training import eval_history

        if self.summary_dir:
            eval_history.write_evaluation(self.summary_dir, step, results)
        if self.mlflow is not None:
            self.mlflow.metrics({f"eval_{split}/{name}": value for split, metrics in
                                 results.items()
                                 for name, value in eval_history.scalars(metrics).items()},
                                step)

    def final(self, step, results, files):
        """The run's results (`final/...` at `step`) and its files as artifacts
        (`files`: `{path: artifact folder or None}`)."""
        from albert_tf.training import eval_history

        if self.mlflow is None:
            return
        self.mlflow.metrics(eval_history.scalars(
            {k: v for k, v in results.items() if k != "predictions"}, "final/"), step)
        for path, folder in files.items():
            self.mlflow.artifacts(path, folder)

    def end(self, error=None):
        if self.mlflow is not None:
            self.mlflow.end(end_status(error))
