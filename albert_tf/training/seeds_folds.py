"""The same fine-tuning run repeated: once per seed (`--seeds`) or per fold (`--kfold`).

    <output_dir>/seed-1/ ... seed-5/     one ordinary run folder per seed
                 seeds_summary.{json,md} per metric: mean, sample sd, median, min, max
                                         and each seed's value; the seeds restarted after
                                         a collapse (`--collapse_restarts`) and those whose
                                         run ended collapsed
    <output_dir>/fold-1/ ... fold-K/     one run per fold (`--kfold`), kfold_summary.{json,md}

Each repetition is a variant of `albert_tf.training.variant_runner.VariantRunner`: a set
stopped part-way resumes at the repetition where it stopped (which continues
from its own checkpoints), and finished ones are read back, not run again.
The library runs whatever `run(name, folder)` the program gives it; it knows
no task.
"""

import dataclasses
import json
import os
import statistics

from albert_tf.io_utils import atomic_file
from albert_tf.settings import Settings, at_least, setting
from albert_tf.training import run_card
from albert_tf.training.variant_runner import VariantRunner, say

SEEDS_SUMMARY = "seeds_summary"
KFOLD_SUMMARY = "kfold_summary"
KFOLD_DATA = "kfold_data"  # the folds' files, written once from the training file
OOF_PREDICTIONS = "oof_predictions.jsonl"
STATISTICS = ("mean", "sd", "median", "min", "max")


@dataclasses.dataclass(frozen=True, kw_only=True)
class RepeatSettings(Settings):
    """How often `finetune` runs the same settings (flags of `finetune`, not saved in runs)."""

    seeds: str = setting(
        "", "Run the same settings once per seed, into OUTPUT_DIR/seed-N/, and write "
        "seeds_summary.json/.md (per metric: mean, sample sd, median, min, max, each seed's "
        "value): a list such as 1,2,3,4,5, or a count N for seeds 1..N. A stopped set "
        "resumes at the seed where it stopped.")
    kfold: int | None = setting(
        None, "Own-data tasks (text_classification, text_regression, token_classification, "
        "multiple_choice) with only --train_file: K folds (stratified by label for "
        "single-label classification, else by a hash of the row), one run per fold into "
        "OUTPUT_DIR/fold-N/, out-of-fold predictions in one file, kfold_summary.json/.md.",
        rule=at_least(2))

    def checks(self):
        return ((not (self.seeds and self.kfold), "give --seeds or --kfold, not both"),
                ("seeds", not self.seeds or bool(self.seed_list),
                 "a comma-separated list of distinct integers >= 0, or a count >= 1"))

    @property
    def seed_list(self):
        """The seeds of `seeds`, in order; () when it does not parse."""
        try:
            values = [int(v) for v in self.seeds.split(",") if v.strip()]
        except ValueError:
            return ()
        if len(values) == 1 and "," not in self.seeds:
            return tuple(range(1, values[0] + 1))
        if any(v < 0 for v in values) or len(set(values)) != len(values):
            return ()
        return tuple(values)


def metric_values(results, splits):
    """`{name: value}` of the numeric metrics of `splits` in a run's results:
    `accuracy`, or `dev_matched_accuracy` when there are several splits."""
    values = {}
    for split in splits:
        prefix = "" if len(splits) == 1 else f"{split}_"
        for metric, value in (results.get(split) or {}).items():
            if metric != "examples" and isinstance(value, (int, float)) and \
                    not isinstance(value, bool):
                values[prefix + metric] = float(value)
    return values


def summarise(values_by_run):
    """Per metric, the statistics over runs: `{metric: {"mean", "sd", "median", "min",
    "max", "values": {run: value}}}`; `sd` is the sample standard deviation (n - 1),
    None for a single run. A metric some run lacks is summarised over those that have it."""
    metrics = []
    for values in values_by_run.values():
        metrics += [m for m in values if m not in metrics]
    summary = {}
    for metric in metrics:
        values = {run: v[metric] for run, v in values_by_run.items() if metric in v}
        numbers = list(values.values())
        summary[metric] = {
            "mean": statistics.fmean(numbers),
            "sd": statistics.stdev(numbers) if len(numbers) > 1 else None,
            "median": statistics.median(numbers), "min": min(numbers), "max": max(numbers),
            "values": values}
    return summary


def markdown(summary, label, notes=()):
    """The summary as a Markdown table: one row per metric, one column per run;
    then `notes`, a line each."""
    runs = []
    for entry in summary.values():
        runs += [r for r in entry["values"] if r not in runs]
    header = ["metric", *STATISTICS, *(f"{label} {r}" for r in runs)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for metric, entry in summary.items():
        cells = [_cell(entry[s]) for s in STATISTICS] + \
            [_cell(entry["values"].get(r)) for r in runs]
        lines.append("| " + " | ".join([metric, *cells]) + " |")
    if notes:
        lines += ["", *notes]
    return "\n".join(lines) + "\n"


def _cell(value):
    return "-" if value is None else f"{value:.4f}"


def write_summary(folder, stem, label, summary, extra=None, notes=()):
    """Writes `<stem>.json` (the summary, and `extra`) and `<stem>.md` (with `notes`);
    returns the paths."""
    paths = [os.path.join(folder, f"{stem}.{ext}") for ext in ("json", "md")]
    with atomic_file(paths[0], encoding="utf-8") as f:
        json.dump({**(extra or {}), "metrics": summary}, f, indent=2, sort_keys=True)
    with atomic_file(paths[1], encoding="utf-8") as f:
        f.write(markdown(summary, label, notes))
    return paths


def rescue(results):
    """What a run's results say of collapses (`albert_tf.training.collapse`): the
    restarts it took and the collapse it ended with, as a repetition records them."""
    record = {}
    restarts = len(results.get("attempts") or [None]) - 1
    if restarts:
        record["restarts"] = restarts
    if results.get("collapsed"):
        record["collapsed"] = {k: results["collapsed"].get(k) for k in ("what", "step")}
    return record


def rescue_notes(records, label):
    """`(extra, notes)`: the restarts and collapses of `records` (name -> record) for
    the summary file and its Markdown lines."""
    restarts = {n.split("-", 1)[1]: r["restarts"] for n, r in records.items()
                if r and r.get("restarts")}
    collapsed = {n.split("-", 1)[1]: r["collapsed"] for n, r in records.items()
                 if r and r.get("collapsed")}
    notes = [f"{label} {run}: restarted {count} time(s) after a collapse"
             for run, count in restarts.items()]
    notes += [f"{label} {run}: collapsed ({c['what']}; at step {c['step']})"
              for run, c in collapsed.items()]
    extra = {"restarts": restarts, "collapsed": {run: c["what"] for run, c in collapsed.items()}}
    return extra, notes


def model_step(results):
    """`{"step": the step whose model was scored, "best": its choice}`: with
    --keep_best, the best evaluation's step (chosen on the split it is scored on)."""
    if results.get("best"):
        best = results["best"]
        return {"step": best["step"], "best": f"{best['metric']}"}
    step = (results.get("train") or {}).get("step")
    return {} if step is None else {"step": step}


def step_notes(records, label):
    """`(extra, notes)`: the step whose model each repetition's metrics are of, and,
    where it was the best of the evaluations, that the same split chose it."""
    steps = {n.split("-", 1)[1]: r for n, r in records.items() if r and "step" in r}
    notes = [f"{label} {run}: the model of step {r['step']}"
             + (f", the best of its evaluations by {r['best']}, chosen on the split "
                "these metrics are of (an optimistic estimate; score a held-out set for "
                "an unbiased one)" if r.get("best") else " (the last)")
             for run, r in steps.items()]
    return {"steps": {run: r["step"] for run, r in steps.items()}}, notes


def run_repeats(folder, names, run, splits, stem, label, log=say, extra=None):
    """Runs every repetition `name` (`run(name, folder)` returns the run's results)
    not done before, then writes the summary; returns `(summary, paths, records)`.

    splits: the eval splits whose metrics are summarised. A record keeps the
    metrics and the prediction files (relative to the repetition's folder).
    """
    def repetition(name, path):
        results = run(name, path)
        predictions = {split: os.path.relpath(file, path) for split, file in
                       (results.get("predictions") or {}).items() if isinstance(file, str)}
        return {"metrics": metric_values(results, splits), "predictions": predictions,
                **rescue(results), **model_step(results)}

    title = "seeds" if stem == SEEDS_SUMMARY else "folds"
    records = VariantRunner(folder, title, log).run_all(list(names), repetition)
    summary = summarise({name.split("-", 1)[1]: r["metrics"] for name, r in records.items()})
    rescued, notes = rescue_notes(records, label)
    steps, step_lines = step_notes(records, label)
    rescued, notes = {**rescued, **steps}, [*step_lines, *notes]
    run_card.add_repeats(folder, list(names), summary, label)
    return summary, write_summary(folder, stem, label, summary, {**(extra or {}), **rescued},
                                  notes), records


def seed_folder(seed):
    return f"seed-{seed}"


def run_seeds(folder, seeds, run, splits, log=say):
    """`run_repeats` of one run per seed: `run(seed, path)` runs seed `seed` in `path`
    (`folder/seed-N`) and returns its results."""
    by_name = {seed_folder(s): s for s in seeds}
    summary, paths, _ = run_repeats(folder, by_name, lambda name, path: run(by_name[name], path),
                                    splits, SEEDS_SUMMARY, "seed", log, {"seeds": list(seeds)})
    return summary, paths


@dataclasses.dataclass(frozen=True)
class Fold:
    """One fold of a k-fold split: its files and where its held-out rows came from.

    index: 1..K. train, dev: the fold's training file (the other folds' rows)
        and held-out file (its own rows), in the training file's format.
    lines: the training file's line of each held-out row, in the order of `dev`.
    """

    index: int
    train: str
    dev: str
    lines: tuple


def fold_folder(index):
    return f"fold-{index}"


def run_folds(folder, folds, run, splits, predict_split, log=say):
    """One run per fold (`run(index, path)` trains on `fold.train` and scores and
    predicts `fold.dev`); writes the summary and the out-of-fold predictions,
    `oof_predictions.jsonl`: every row of the training file once, in its order,
    as the run that did not train on it predicted it, with `fold` and `line`
    added (and `id` the line where the folds' ids would repeat). Returns `(summary, paths)`."""
    by_name = {fold_folder(f.index): f for f in folds}
    summary, paths, records = run_repeats(
        folder, by_name, lambda name, path: run(by_name[name].index, path), splits,
        KFOLD_SUMMARY, "fold", log, {"folds": len(folds)})
    rows = []
    for name, record in records.items():
        fold = by_name[name]
        if predict_split not in record["predictions"]:
            raise ValueError(f"{os.path.join(folder, name)}: the run wrote no {predict_split} "
                             "predictions")
        path = os.path.join(folder, name, record["predictions"][predict_split])
        with open(path, encoding="utf-8") as f:
            predicted = [json.loads(line) for line in f if line.strip()]
        if len(predicted) != len(fold.lines):
            raise ValueError(f"{path}: {len(predicted)} predictions for the {len(fold.lines)} "
                             f"held-out rows of fold {fold.index}")
        rows += [{"fold": fold.index, "line": line, **p} for line, p in zip(fold.lines, predicted)]
    rows.sort(key=lambda r: r["line"])
    if len({r.get("id") for r in rows}) < len(rows):
        # Ids made from each fold file's own line numbers repeat across folds: the
        # training file's line is the row's id there (as a run on it would give).
        for r in rows:
            r["id"] = str(r["line"])
    oof = os.path.join(folder, OOF_PREDICTIONS)
    with atomic_file(oof, encoding="utf-8", newline="\n") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    return summary, [*paths, oof]
