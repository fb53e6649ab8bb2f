"""`--seeds` and `--kfold`: the repetitions, their summary, the folds of a training file."""

import collections
import json
import os
import statistics

import pytest

from albert_tf.training import seeds_folds
from albert_tf.training.seeds_folds import RepeatSettings
from albert_tf.tasks import user_files


def _results(path, seed):
    """A run's results as `finetuning.run` writes them: dev metrics of the seed."""
    results = {"task": "x", "dev": {"accuracy": 0.5 + seed / 100, "f1": 0.7 - seed ** 2 / 1000,
                                    "examples": 9, "confusion": [[1]]},
               "train": {"step": 3}}
    with open(os.path.join(path, "eval_results.json"), "w") as f:
        json.dump(results, f)
    return results


def test_seed_lists_and_counts():
    assert RepeatSettings(seeds="3,1,7").seed_list == (3, 1, 7)
    assert RepeatSettings(seeds="4").seed_list == (1, 2, 3, 4)
    for bad in ("1,x", "1,1", "-1,2", "0"):
        with pytest.raises(ValueError, match="seeds must be a comma-separated list"):
            RepeatSettings(seeds=bad)
    with pytest.raises(ValueError, match="give --seeds or --kfold, not both"):
        RepeatSettings(seeds="1,2", kfold=3)
    with pytest.raises(ValueError, match="kfold must be >= 2, got 1"):
        RepeatSettings(kfold=1)


def test_the_seeds_summary_equals_statistics_of_the_per_seed_files(tmp_path):
    seeds = (1, 2, 5, 11)
    summary, paths = seeds_folds.run_seeds(str(tmp_path), seeds, lambda s, p: _results(p, s),
                                       ("dev",), log=lambda line: None)
    assert [os.path.basename(p) for p in paths] == ["seeds_summary.json", "seeds_summary.md"]
    per_seed = {}
    for seed in seeds:
        with open(tmp_path / f"seed-{seed}" / "eval_results.json") as f:
            per_seed[str(seed)] = json.load(f)["dev"]
    with open(paths[0]) as f:
        saved = json.load(f)
    assert saved["seeds"] == list(seeds)
    assert set(saved["metrics"]) == {"accuracy", "f1"}  # not the count, not the tables
    for metric, entry in saved["metrics"].items():
        values = [per_seed[s][metric] for s in map(str, seeds)]
        assert entry["values"] == {s: per_seed[s][metric] for s in map(str, seeds)}
        assert entry["mean"] == pytest.approx(sum(values) / len(values))
        assert entry["sd"] == pytest.approx(statistics.stdev(values))  # sample sd (n - 1)
        assert entry["median"] == pytest.approx((sorted(values)[1] + sorted(values)[2]) / 2)
        assert (entry["min"], entry["max"]) == (min(values), max(values))
    table = open(paths[1]).read().splitlines()
    assert table[0] == "| metric | mean | sd | median | min | max | seed 1 | seed 2 | seed 5 " \
                       "| seed 11 |"
    assert table[2].startswith(f"| accuracy | {saved['metrics']['accuracy']['mean']:.4f} | ")
    assert summary == saved["metrics"]


def test_the_seeds_summary_says_which_step_each_model_is_and_how_it_was_chosen(tmp_path):
    def run(seed, path):
        results = {"dev": {"accuracy": 0.5 + seed / 100}, "train": {"step": 2000}}
        if seed == 2:  # --keep_best: the best evaluation's weights
            results["best"] = {"step": 1500, "epoch": 1.0, "metric": "dev/accuracy",
                               "value": 0.52}
        return results

    _, paths = seeds_folds.run_seeds(str(tmp_path), (1, 2), run, ("dev",), log=lambda _: None)
    with open(paths[0]) as f:
        assert json.load(f)["steps"] == {"1": 2000, "2": 1500}
    notes = open(paths[1]).read().splitlines()
    assert "seed 1: the model of step 2000 (the last)" in notes
    assert ("seed 2: the model of step 1500, the best of its evaluations by dev/accuracy, "
            "chosen on the split these metrics are of (an optimistic estimate; score a "
            "held-out set for an unbiased one)") in notes


def test_a_stopped_set_resumes_at_the_seed_where_it_stopped(tmp_path):
    ran = []

    def run(seed, path):
        ran.append(seed)
        if seed == 2 and ran.count(2) == 1:
            raise KeyboardInterrupt  # Ctrl-C during the second seed
        return _results(path, seed)

    with pytest.raises(KeyboardInterrupt):
        seeds_folds.run_seeds(str(tmp_path), (1, 2, 3), run, ("dev",), log=lambda line: None)
    assert not (tmp_path / "seeds_summary.json").exists()
    lines = []
    summary, _ = seeds_folds.run_seeds(str(tmp_path), (1, 2, 3), run, ("dev",), log=lines.append)
    assert ran == [1, 2, 2, 3]  # seed 1 was not run again
    assert "[1/3] seed-1: done before" in lines
    assert list(summary["accuracy"]["values"]) == ["1", "2", "3"]


def test_one_seed_has_no_sd_and_several_splits_are_prefixed():
    values = seeds_folds.metric_values({"m": {"acc": 0.5}, "mm": {"acc": 0.25}, "train": {"x": 1}},
                                   ("m", "mm"))
    assert values == {"m_acc": 0.5, "mm_acc": 0.25}
    assert seeds_folds.summarise({"1": values})["m_acc"]["sd"] is None


def _csv(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.write("text,label\n" + "".join(f'"{t}",{label}\n' for t, label in rows))
    return str(path)


def _fold_rows(fold):
    with open(fold.dev, encoding="utf-8") as f:
        dev = f.read().splitlines()[1:]
    with open(fold.train, encoding="utf-8") as f:
        train = f.read().splitlines()[1:]
    return dev, train


def test_kfold_folds_partition_the_rows_and_are_stratified(tmp_path):
    from albert_tf.tasks.text_classification.options import TextOptions
    from albert_tf import tasks

    labels = ["a"] * 10 + ["b"] * 7 + ["c"] * 4  # in file order: a run of each label
    rows = [(f"text, {i}", label) for i, label in enumerate(labels)]
    path = _csv(tmp_path / "train.csv", rows)
    task = tasks.get("text_classification")
    folds = task.kfold_files(TextOptions(train_file=path), None, 3, str(tmp_path / "folds"))
    assert [f.index for f in folds] == [1, 2, 3]
    every_line = list(range(2, len(rows) + 2))  # the rows' lines (the header is line 1)
    assert sorted(line for f in folds for line in f.lines) == every_line  # a partition
    for fold in folds:
        dev, train = _fold_rows(fold)
        assert len(dev) == len(fold.lines) and len(dev) + len(train) == len(rows)
        counts = collections.Counter(line.rsplit(",", 1)[1] for line in dev)
        for label, total in collections.Counter(labels).items():
            assert abs(counts[label] - total / 3) < 1, (fold.index, label, counts)
        # The fold files read back as the rows they came from.
        read = [r.values for r in user_files.read_rows(fold.dev)]
        assert read == [{"text": rows[line - 2][0], "label": rows[line - 2][1]}
                        for line in fold.lines]
    # A second start reads the folds back; another K is refused.
    again = task.kfold_files(TextOptions(train_file=path), None, 3, str(tmp_path / "folds"))
    assert again == folds
    with pytest.raises(ValueError, match="holds the folds of another training file or --kfold"):
        task.kfold_files(TextOptions(train_file=path), None, 4, str(tmp_path / "folds"))


def test_unstratified_folds_hash_the_row(tmp_path):
    from albert_tf import tasks

    conll = tmp_path / "train.conll"
    sentences = [f"w{i} O\nx{i} B-PER\n" for i in range(9)]
    conll.write_text("-DOCSTART- O\n\n" + "\n".join(sentences), encoding="utf-8")
    task = tasks.get("token_classification")
    options = task.options_class(train_file=str(conll))
    folds = task.kfold_files(options, None, 2, str(tmp_path / "folds"))
    texts = []
    for fold in folds:
        with open(fold.dev, encoding="utf-8") as f:
            dev = [s.strip() + "\n" for s in f.read().split("\n\n") if s.strip()]
        texts += dev
        for sentence in dev:  # the fold a hash of the sentence says
            assert user_files.stable_fold(user_files.Record(sentence + "\n", 0), 2) == \
                fold.index - 1
    assert sorted(texts) == sorted(sentences)
    # Regression rows are hashed too; other tasks and other files are refused.
    options = task.options_class(train_file=str(conll), eval_file=str(conll))
    with pytest.raises(ValueError, match="give only --train_file, not --eval_file"):
        task.kfold_files(options, None, 2, str(tmp_path / "other"))
    with pytest.raises(ValueError, match="--kfold is for the tasks on your own files"):
        tasks.get("rte").kfold_files(None, None, 2, str(tmp_path / "other"))
    tiny = _csv(tmp_path / "tiny.csv", [("x", "a"), ("y", "b")])
    with pytest.raises(ValueError, match="fold\\(s\\) 3 would hold none; use fewer folds"):
        tasks.get("text_classification").kfold_files(
            task_options(train_file=tiny), None, 3, str(tmp_path / "t"))


def task_options(**values):
    from albert_tf.tasks.text_classification.options import TextOptions

    return TextOptions(**values)


def test_out_of_fold_predictions_cover_every_row_once(tmp_path):
    path = _csv(tmp_path / "train.csv", [(f"t{i}", "ab"[i % 2]) for i in range(7)])
    from albert_tf import tasks

    task = tasks.get("text_classification")
    folds = task.kfold_files(task_options(train_file=path), None, 3, str(tmp_path / "data"))

    def run(index, folder):  # a fold's run: predicts its dev rows, in their order
        fold = folds[index - 1]
        out = os.path.join(folder, "test_predictions.jsonl")
        with open(out, "w") as f:
            for row in user_files.read_rows(fold.dev):
                f.write(json.dumps({"id": row.line, "label": row.values["text"]}) + "\n")
        return {"dev": {"accuracy": index / 10}, "predictions": {"test": out}}

    summary, paths = seeds_folds.run_folds(str(tmp_path / "run"), folds, run, ("dev",), "test",
                                       log=lambda line: None)
    assert summary["accuracy"]["values"] == {"1": 0.1, "2": 0.2, "3": 0.3}
    assert os.path.basename(paths[0]) == "kfold_summary.json"
    with open(paths[-1]) as f:
        oof = [json.loads(line) for line in f]
    assert [r["line"] for r in oof] == list(range(2, 9))
    assert [r["label"] for r in oof] == [f"t{i}" for i in range(7)]  # each row's own prediction
    assert all(r["line"] in folds[r["fold"] - 1].lines for r in oof)
    # The folds' ids were their own files' lines, alike across folds: unique ids instead.
    assert [r["id"] for r in oof] == [str(line) for line in range(2, 9)]


def _cli_args(tmp_path, *extra):
    import cli_helpers as cli

    return ("--task=rte", f"--data_dir={cli.RTE}", f"--vocab_file={cli.SPM}",
            f"--model={cli.tiny_model(tmp_path)}", "--batch_size=4", "--max_seq_length=64",
            "--train_steps=2", "--warmup_steps=0", "--precision=fp32", *extra)


@pytest.mark.slow  # two fine-tuning runs in a subprocess; default tier:
# test_the_seeds_summary_equals_statistics_of_the_per_seed_files
def test_finetune_seeds_runs_one_folder_per_seed_and_summarises_them(tmp_path):
    import cli_helpers as cli

    out = tmp_path / "runs"
    result = cli.run("albert_tf.finetune", *_cli_args(tmp_path, f"--output_dir={out}",
                                                      "--seeds=3,4"))
    assert result.returncode == 0, result.stderr[-3000:]
    with open(out / "seeds_summary.json") as f:
        summary = json.load(f)
    accuracies = {s: cli.results(out / f"seed-{s}")["dev"]["accuracy"] for s in ("3", "4")}
    for seed in ("3", "4"):  # each run used its own seed
        with open(out / f"seed-{seed}" / "settings.json") as f:
            assert json.load(f)["seed"] == int(seed)
    assert summary["seeds"] == [3, 4]
    assert summary["metrics"]["accuracy"]["values"] == accuracies
    assert summary["metrics"]["accuracy"]["mean"] == pytest.approx(
        statistics.fmean(accuracies.values()))
    assert "| accuracy |" in result.stdout and "seeds_summary.md" in result.stdout


@pytest.mark.slow  # three fine-tuning runs in a subprocess
def test_finetune_kfold_on_a_csv(tmp_path):
    import cli_helpers as cli

    rows = [(f"this is {'good' if i % 3 else 'bad'} number {i}", "pos" if i % 3 else "neg")
            for i in range(12)]
    train = _csv(tmp_path / "train.csv", rows)
    out = tmp_path / "cv"
    args = ("--task=text_classification", f"--train_file={train}", f"--vocab_file={cli.SPM}",
            f"--model={cli.tiny_model(tmp_path)}", "--batch_size=4", "--max_seq_length=32",
            "--train_steps=2", "--warmup_steps=0", "--precision=fp32", f"--output_dir={out}")
    result = cli.run("albert_tf.finetune", *args, "--kfold=3")
    assert result.returncode == 0, result.stderr[-3000:]
    with open(out / "oof_predictions.jsonl") as f:
        oof = [json.loads(line) for line in f]
    assert [r["line"] for r in oof] == list(range(2, 14))
    with open(out / "kfold_summary.json") as f:
        summary = json.load(f)
    assert summary["metrics"]["accuracy"]["values"] == {
        str(k): cli.results(out / f"fold-{k}")["dev"]["accuracy"] for k in (1, 2, 3)}
    again = cli.run("albert_tf.finetune", *args, "--kfold=3")
    assert "[3/3] fold-3: done before" in again.stdout
    line = cli.one_line_error(cli.run("albert_tf.finetune", *args, "--kfold=2",
                                      f"--eval_file={train}"))
    assert line == "error: --kfold scores each fold on its own held-out rows; give only " \
                   "--train_file, not --eval_file"


@pytest.mark.slow  # the search program's start (imports), twice
def test_search_flags_and_a_mistyped_space(tmp_path):
    import cli_helpers as cli

    help_text = cli.run("albert_tf.search", "--helpfull", timeout=60).stdout
    for flag in ("--space", "--trials", "--seeds_per_trial", "--sampler", "--[no]prune",
                 "--learning_rate", "--train_file"):
        assert flag in help_text
    line = cli.one_line_error(cli.run("albert_tf.search", *_cli_args(
        tmp_path, f"--output_dir={tmp_path / 's'}", "--space=lr=1e-5:2e-5", "--trials=2")))
    assert line.startswith("error: --space: unknown setting 'lr'; a search may vary ")
    assert not os.path.exists(tmp_path / "s" / "study.db")
