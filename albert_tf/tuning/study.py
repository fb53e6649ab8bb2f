"""The search's Optuna study and its resumable loop of trials.

    <output_dir>/study.db              the Optuna study (SQLite): every trial's
                                       parameters, reported values and state
                 search_settings.json  the search's settings
                 trial-N/              one trial: seed-S/ (a fine-tuning run folder),
                                       seed-S.json (its settings), seed-S.log (its
                                       output), seeds_summary.*, result.json (done)
                 trials.{md,csv,json}, metric_vs_params.png

A trial is a variant of `albert_tf.training.variant_runner.VariantRunner` (the runner the
ablation grid, `--seeds` and `--kfold` use): done when its `result.json` is
written. A search stopped part-way leaves its last trial RUNNING in the study;
the next start finishes that trial first (its runs continue from their
checkpoints, its finished seeds are read back); a trial that failed (which
stops the search) has its parameters run again as a new trial; then Optuna is
asked for new ones until `trials` are complete or pruned. Finished trials are
never run again.
"""

import json
import os

from albert_tf.errors import RunStopped
from albert_tf.io_utils import atomic_file, read_json
from albert_tf.training import seeds_folds, tracking
from albert_tf.training.run_folder import RESULTS_FILE
from albert_tf.tuning import watch
from albert_tf.tuning.space import grid
from albert_tf.training.variant_runner import VariantRunner, say

STUDY_FILE = "study.db"
STUDY_NAME = "search"
# Trials finished before the median pruner compares a trial with them.
PRUNER_STARTUP_TRIALS = 3


class Pruned(Exception):
    """A trial's run was stopped by the pruner."""


def open_study(folder, direction, sampler, parameters, seed, prune):
    """The study in `folder/study.db`, created or loaded.

    The sampler's seed moves on with the trials already in the study, so that a
    continued random search does not draw its first points again; the grid
    sampler keeps `seed`: it shuffles the grid with it and numbers the points in
    that order, so another seed on a continued start would map the trials'
    recorded grid ids to other points (one run twice, another never).
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    os.makedirs(folder, exist_ok=True)
    storage = f"sqlite:///{os.path.abspath(os.path.join(folder, STUDY_FILE))}"
    done = 0
    if os.path.isfile(os.path.join(folder, STUDY_FILE)):
        done = len(optuna.load_study(study_name=STUDY_NAME, storage=storage).trials)
    samplers = {"tpe": optuna.samplers.TPESampler, "random": optuna.samplers.RandomSampler}
    made = (_grid_sampler()(grid(parameters), seed=seed) if sampler == "grid"
            else samplers[sampler](seed=seed + done))
    pruner = (optuna.pruners.MedianPruner(n_startup_trials=PRUNER_STARTUP_TRIALS)
              if prune else optuna.pruners.NopPruner())
    return optuna.create_study(storage=storage, study_name=STUDY_NAME, direction=direction,
                               sampler=made, pruner=pruner, load_if_exists=True)


def _grid_sampler():
    import optuna

    class GridSampler(optuna.samplers.GridSampler):
        """Optuna's grid sampler, for ask and tell: its `after_trial` only stops
        `study.optimize` once the grid is done (and raises outside it); `run_search`
        asks `is_exhausted` itself."""

        def after_trial(self, study, trial, state, values):
            pass
    return GridSampler


def finished_trials(study):
    import optuna

    states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    return study.get_trials(deepcopy=False, states=states)


def _failed_before(study):
    """The failed trials whose parameters no other trial has run or is running,
    one per set of parameters."""
    import optuna

    failed, seen = [], [t.params for t in study.get_trials(deepcopy=False) if t.state in (
        optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED,
        optuna.trial.TrialState.RUNNING, optuna.trial.TrialState.WAITING)]
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.FAIL,)):
        if trial.params not in seen:
            failed.append(trial)
            seen.append(trial.params)
    return failed


def run_search(folder, study, parameters, trials, run_trial, log=say):
    """Runs trials until `trials` are finished (complete or pruned); returns the
    records of the finished ones, `{trial number: record}`.

    run_trial(trial, params, path, reported): runs one trial in `path` (the
        Optuna `trial` takes its reports; `reported`: the steps reported before)
        and returns its record: `{"state": "complete", "value", "sd", "values"}`
        or `{"state": "pruned"}`.
    """
    import optuna

    runner = VariantRunner(folder, "search", log)

    def finish(trial, params, reported):
        def run(name, path):
            return {"number": trial.number, "params": params,
                    **run_trial(trial, params, path, reported)}
        try:
            record = runner.run_one(f"trial-{trial.number}", run)
        except KeyboardInterrupt:
            raise  # the trial stays RUNNING: the next start finishes it
        except BaseException:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            raise
        if record["state"] == "pruned":
            study.tell(trial, state=optuna.trial.TrialState.PRUNED, skip_if_finished=True)
        else:
            study.tell(trial, record["value"], skip_if_finished=True)

    if finished_trials(study):
        log(f"{len(finished_trials(study))} trial(s) finished before (not run again)")
    for frozen in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        log(f"trial {frozen.number}: continuing where the last start stopped")
        # FrozenTrial has no public id; Trial(study, id) is Optuna's handle on a running trial.
        finish(optuna.trial.Trial(study, frozen._trial_id), frozen.params,
               set(frozen.intermediate_values))
    for frozen in _failed_before(study):
        # A failure stops the search; started again (the cause mended), the failed
        # point is run first, as a new trial (Optuna's grid counts a failed one as done).
        study.enqueue_trial(frozen.params)
        trial = study.ask()
        params = {p.name: p.suggest(trial) for p in parameters}
        log(f"trial {frozen.number} failed in an earlier start: its parameters run again as "
            f"trial {trial.number}")
        finish(trial, params, set())
    while len(finished_trials(study)) < trials:
        if isinstance(study.sampler, optuna.samplers.GridSampler) and \
                study.sampler.is_exhausted(study):
            log("every point of the grid is done")
            break
        trial = study.ask()
        params = {p.name: p.suggest(trial) for p in parameters}
        log(f"[{len(finished_trials(study)) + 1}/{trials}] trial {trial.number}: "
            + ", ".join(f"{k}={v}" for k, v in params.items()))
        finish(trial, params, set())
    return {t.number: runner.record(f"trial-{t.number}") for t in finished_trials(study)}


def last_error(log_path):
    """`: <the last "error: ..." line>` of a run's output, or ""."""
    with open(log_path, encoding="utf-8", errors="replace") as f:
        errors = [line.strip() for line in f if line.startswith("error: ")]
    return f": {errors[-1][len('error: '):]}" if errors else ""


def finetune_trials(task_name, make_config, seeds, metric, split, poll_seconds=2.0, log=say,
                    probes_file=None, tracker=None):
    """`run_trial` for `run_search`: each of a trial's seeds is a fine-tuning
    process (`watch.start_finetune`) on the settings `make_config(params, seed)`
    returns (a dict, as a `--config` file holds them); the first seed's history
    is reported to the pruner. The trial's value: the mean of `metric` over the
    seeds, on the eval split `split`. probes_file: where the processes keep
    `auto`'s measurements of how to run the step (the first to need one
    measures; the others, alike, run alike), or None. tracker: the search's
    MLflow run (`albert_tf.training.tracking.MlflowRun`), or None: each trial is a
    child run of it (its parameters, its mean and sd, pruned trials KILLED), and
    the trial's runs are children of the trial's."""
    def run_trial(trial, params, path, reported):
        trial_run = None if tracker is None else tracker.child(
            path, f"trial-{trial.number}", params=params, tags={"trial": trial.number})
        extra = {} if trial_run is None else trial_run.child_settings()

        def run(seed, seed_path):
            config = seed_path + ".json"
            with atomic_file(config, encoding="utf-8") as f:
                json.dump({**make_config(params, seed), **extra}, f, indent=2, sort_keys=True)
            process = watch.start_finetune(task_name, config, seed_path, seed_path + ".log",
                                           probes_file=probes_file)
            pruned = watch.watch(process, os.path.join(seed_path, watch.HISTORY_FILE), metric,
                                 trial if seed == seeds[0] else None, poll_seconds, reported)
            if pruned:
                raise Pruned()
            if process.returncode:
                raise RunStopped(f"trial {trial.number}, seed {seed}: the run failed (exit "
                                 f"status {process.returncode}{last_error(seed_path + '.log')}"
                                 f"); its output: {seed_path}.log")
            return read_json(os.path.join(seed_path, RESULTS_FILE))

        try:
            summary, paths = seeds_folds.run_seeds(path, seeds, run, (split,), log)
            if metric not in summary:
                raise ValueError(f"the {split} results have no metric {metric!r}; they have "
                                 f"{', '.join(summary)}")
        except Pruned:
            log(f"trial {trial.number}: pruned")
            if trial_run is not None:
                trial_run.tags({"state": "pruned"})
                trial_run.end("KILLED")
            return {"state": "pruned"}
        except BaseException as e:
            tracking.ended(trial_run, e)
            raise
        if trial_run is not None:
            trial_run.summary(summary)
            trial_run.tags({"state": "complete"})
            tracking.ended(trial_run)
        entry = summary[metric]
        saved = read_json(paths[0])  # the seeds' restarts and collapses (--collapse_restarts)
        return {"state": "complete", "value": entry["mean"], "sd": entry["sd"],
                "values": entry["values"], "restarts": saved.get("restarts", {}),
                "collapsed": saved.get("collapsed", {})}
    return run_trial
