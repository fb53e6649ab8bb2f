"""Ablation grids end to end on a tiny corpus and model: every column, resuming, Table 5."""

import json
import os

import numpy as np
import pytest

import cli_helpers as cli
from conftest import FIXTURES

CORPUS = os.path.join(FIXTURES, "pretraining", "google", "pride_and_prejudice_1-12.txt")
SEQ, PREDICTIONS, BATCH = 32, 5, 4


def _settings(tmp_path, **values):
    from albert_tf.ablation.settings import AblationSettings

    defaults = dict(output_dir=str(tmp_path / "grid"), corpus=CORPUS, input_format="lines",
                    vocab_file=cli.SPM, model=cli.tiny_model(tmp_path), max_seq_length=SEQ,
                    max_predictions_per_seq=PREDICTIONS, batch_size=BATCH, dupe_factor=1,
                    heldout_fraction=0.1, eval_batches=100, budget_steps=2, seed=3)
    return AblationSettings(**{**defaults, **values})


@pytest.fixture(scope="module")
def grid_run(tmp_path_factory):
    """A grid of three sentence tasks, stopped after one variant, then continued."""
    from albert_tf.ablation.runner import run_grid

    tmp_path = tmp_path_factory.mktemp("ablation")
    settings = _settings(tmp_path, grid="sentence_task=sop,nsp,none", stop_after=1,
                         eval_every=1)
    first, _ = run_grid(settings, verbose=False, log=lambda line: None)
    done = os.path.join(settings.output_dir, first[0]["variant"], "result.json")
    stamp = os.stat(done).st_mtime_ns
    lines = []
    rows, paths = run_grid(settings.replace(stop_after=None), verbose=False, log=lines.append)
    return settings, first, rows, paths, lines, os.stat(done).st_mtime_ns == stamp


def test_a_stopped_grid_continues_without_redoing_finished_variants(grid_run):
    settings, first, rows, _, lines, untouched = grid_run
    assert [r["variant"] for r in first] == ["all-E8-L2-H16-sop-seed3"]
    assert [r["variant"] for r in rows] == ["all-E8-L2-H16-sop-seed3",
                                            "all-E8-L2-H16-nsp-seed3",
                                            "all-E8-L2-H16-none-seed3"]
    assert untouched
    assert "[1/3] all-E8-L2-H16-sop-seed3: done before" in lines
    assert any(line.startswith("data sop/train: made before") for line in lines)


def test_every_variant_gets_every_column(grid_run):
    settings, _, rows, paths, _, _ = grid_run
    with open(os.path.join(settings.output_dir, "results.json")) as f:
        table = json.load(f)
    with open(os.path.join(settings.output_dir, "results.csv")) as f:
        header = f.readline().strip().split(",")
    assert header == table["columns"]
    for column in ("params", "flops_per_token", "activation_mib", "steps", "tokens_per_second",
                   "mlm_loss", "mlm_accuracy", "nsp_accuracy", "nsp_baseline",
                   "nsp_balanced_accuracy", "sop_accuracy", "sop_baseline",
                   "sop_balanced_accuracy", "pretrain_seconds", "wall_seconds"):
        assert column in header
        for row in table["rows"]:  # the none variant too (a linear probe)
            assert isinstance(row[column], (int, float)) and row[column] >= 0, column
    assert all(r["steps"] == 2 for r in rows)
    markdown = open(os.path.join(settings.output_dir, "results.md")).read()
    assert markdown.count("\n| all-E8-L2-H16-") == 3
    # A few dozen held-out pairs: each figure is flagged, with its interval.
    low, high = rows[0]["details"]["sop_ci95"]
    assert (f"| {rows[0]['sop_accuracy']:.4f} [{low:.3f}-{high:.3f}] |" in markdown)
    assert (f"warning: all-E8-L2-H16-sop-seed3's sop accuracy is from "
            f"{rows[0]['details']['sop_examples']} held-out pairs" in markdown)
    for path in paths[3:]:
        with open(path, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def _model(settings, row):
    from albert_tf import checkpoints

    folder = os.path.join(settings.output_dir, row["variant"], "pretrain", "model")
    return checkpoints.load_pretrained(folder, with_heads=True)


def test_unique_parameters_are_those_of_the_saved_model(grid_run):
    settings, _, rows, _, _, _ = grid_run
    for row in rows:
        assert row["params"] == _model(settings, row).backbone.count_params()


def _heldout(settings, task):
    from albert_tf.ablation.data import data_folder, record_pattern
    from albert_tf.tokenizer.loading import load_tokenizer
    from albert_tf.pretraining import read_records

    folder = data_folder(settings, load_tokenizer(settings.vocab_file, host=True))
    return read_records(record_pattern(folder, task, "heldout"), SEQ, PREDICTIONS)


def test_every_model_is_scored_on_both_sentence_tasks(grid_run):
    """Table 5 of the paper: NSP- and SOP-trained models each scored on NSP and SOP
    pairs through their head, the none model through a linear probe; recomputed
    here from the saved models with numpy and scikit-learn."""
    from sklearn.metrics import balanced_accuracy_score

    settings, _, rows, _, _, _ = grid_run
    data = {task: _heldout(settings, task) for task in ("sop", "nsp")}
    assert all(0 < len(d["sop_label"]) < settings.eval_batches * BATCH for d in data.values())
    keys = ("token_ids", "segment_ids", "padding_mask", "mask_positions")
    for row in rows:
        model = _model(settings, row)
        for task, records in data.items():
            out = model({k: records[k] for k in keys}, training=False)
            labels = records["sop_label"]
            share = float(np.mean(labels))
            assert row[f"{task}_baseline"] == pytest.approx(max(share, 1 - share))
            details = row["details"]
            assert details[f"{task}_examples"] == len(labels)
            if row["sentence_task"] == "none":
                assert details[f"{task}_scored_by"] == "linear probe"
            else:
                assert details[f"{task}_scored_by"] == f"{row['sentence_task']} head"
                predicted = np.argmax(np.asarray(out["sop_logits"]), -1)
                assert row[f"{task}_accuracy"] == pytest.approx(
                    float(np.mean(predicted == labels)), abs=1e-6)
                assert row[f"{task}_balanced_accuracy"] == pytest.approx(
                    balanced_accuracy_score(labels, predicted), abs=1e-6)
            if task == "sop":
                hits = np.argmax(np.asarray(out["mlm_logits"]), -1) == records["mask_ids"]
                weights = records["mask_weights"]
                assert row["mlm_accuracy"] == pytest.approx(
                    float(np.sum(hits * weights) / np.sum(weights)), abs=1e-6)
                logits = np.asarray(out["mlm_logits"], np.float64)
                top = logits.max(-1, keepdims=True)
                log_p = logits - top - np.log(np.exp(logits - top).sum(-1, keepdims=True))
                picked = np.take_along_axis(log_p, records["mask_ids"][..., None], -1)[..., 0]
                assert row["mlm_loss"] == pytest.approx(
                    float(-np.sum(picked * weights) / np.sum(weights)), rel=1e-5)


def test_each_variant_is_scored_on_held_out_pairs_while_it_trains(grid_run):
    settings, _, rows, _, _, _ = grid_run
    for row in rows:
        path = os.path.join(settings.output_dir, row["variant"], "pretrain", "eval_history.jsonl")
        with open(path) as f:
            history = [json.loads(line) for line in f]
        assert [entry["step"] for entry in history] == [1, 2]
        last = history[-1]  # the trained model: as the table scores it
        if row["sentence_task"] == "none":
            assert last["mlm_accuracy"] == pytest.approx(row["mlm_accuracy"], abs=1e-6)
        else:  # the pairs of its own task, named by it (an NSP head's figures are nsp_*)
            task = row["sentence_task"]
            assert last[f"{task}_accuracy"] == pytest.approx(row[f"{task}_accuracy"], abs=1e-6)
            assert last[f"{task}_baseline_majority"] == pytest.approx(row[f"{task}_baseline"])
            assert not [k for k in last if k.startswith({"sop": "nsp", "nsp": "sop"}[task])]


def test_a_token_budget_becomes_steps(tmp_path):
    from albert_tf.ablation import grid
    from albert_tf.ablation.pretrain import budget_steps

    settings = _settings(tmp_path, budget_steps=None, budget_tokens=1000)
    variant = grid.Variant("all", 8, 2, 16, "sop", 1)
    # 1000 positions at 4 sequences of 32 per update: 7.8 updates, rounded up.
    assert budget_steps(settings, variant, None, "unused", str(tmp_path)) == 8
    with open(tmp_path / "budget.json") as f:
        assert json.load(f) == {"steps": 8}


def test_variants_of_one_architecture_get_the_same_updates_of_a_time_budget(tmp_path,
                                                                            monkeypatch):
    from albert_tf.ablation import grid, pretrain

    timed = []
    seconds = {"all-E8-L2-H16": [0.25, 0.5, 0.125], "none-E8-L2-H16": [0.2]}

    def measure(variant, config, settings, data_folder):
        timed.append(variant.name)
        return seconds[variant.architecture].pop(0)  # a busy host: each timing differs

    monkeypatch.setattr(pretrain, "measure_step_seconds", measure)
    settings = _settings(tmp_path, budget_steps=None, budget_seconds=10.0)
    os.makedirs(settings.output_dir)
    variants = [grid.Variant("all", 8, 2, 16, task, seed)
                for seed in (1, 2) for task in ("none", "nsp", "sop")]
    steps, said = [], []
    for variant in [*variants, grid.Variant("none", 8, 2, 16, "sop", 1)]:
        folder = tmp_path / variant.name
        folder.mkdir()
        steps.append(pretrain.budget_steps(settings, variant, None, "unused", str(folder),
                                           say=said.append))
    assert steps == [40] * 6 + [50]
    assert said[0] == "budget: 10 s at 0.250 s an update (timed on all-E8-L2-H16-none-seed1): " \
        "40 updates"
    assert said[-1].endswith("0.200 s an update (timed on none-E8-L2-H16-sop-seed1): 50 updates")
    # Decided once: read back, it is not told again.
    assert pretrain.budget_steps(settings, variants[0], None, "unused",
                                 str(tmp_path / variants[0].name), say=said.append) == 40
    assert len(said) == 7
    assert timed == ["all-E8-L2-H16-none-seed1", "none-E8-L2-H16-sop-seed1"]
    with open(tmp_path / variants[-1].name / "budget.json") as f:
        assert json.load(f) == {"measured_seconds_per_step": 0.25, "steps": 40,
                                "measured_with": "all-E8-L2-H16-none-seed1"}
    # A stopped grid that continues reads the measurement back.
    with open(os.path.join(settings.output_dir, "step_seconds.json")) as f:
        assert json.load(f)["all-E8-L2-H16"]["seconds_per_step"] == 0.25


def test_a_grid_with_other_settings_in_the_folder_is_refused(grid_run):
    from albert_tf.ablation.runner import check_saved

    settings = grid_run[0]
    check_saved(settings.replace(grid="seed=9", stop_after=2))  # may change
    with pytest.raises(ValueError, match="budget_steps: saved 2, given 5"):
        check_saved(settings.replace(budget_steps=5))


@pytest.mark.slow
def test_the_command_fine_tunes_every_variant_under_a_time_budget(tmp_path):
    out = tmp_path / "grid"
    args = ["--corpus=" + CORPUS, "--input_format=lines", f"--vocab_file={cli.SPM}",
            f"--model={cli.tiny_model(tmp_path)}", f"--output_dir={out}",
            "--grid=sharing=all,none", "--budget_seconds=3", f"--max_seq_length={SEQ}",
            f"--max_predictions_per_seq={PREDICTIONS}", f"--batch_size={BATCH}",
            "--dupe_factor=1", "--heldout_fraction=0.1", "--finetune=rte",
            f"--finetune_data_dir={os.path.dirname(cli.RTE)}", "--finetune_steps=2",
            "--finetune_batch_size=2", "--finetune_max_seq_length=32"]
    result = cli.run("albert_tf.ablate", *args, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "2 variant(s) done" in result.stdout
    with open(out / "results.json") as f:
        rows = json.load(f)["rows"]
    for row in rows:
        assert 0.0 <= row["rte_accuracy"] <= 1.0
        with open(out / row["variant"] / "pretrain" / "budget.json") as f:
            budget = json.load(f)
        assert row["steps"] == max(1, int(3 / budget["measured_seconds_per_step"]))
    bad_args = [f"--output_dir={tmp_path / 'bad'}" if a.startswith("--output_dir=")
                else "--grid=sharing=al" if a.startswith("--grid=") else a for a in args]
    bad = cli.run("albert_tf.ablate", *bad_args, timeout=300)
    assert cli.one_line_error(bad) == ("error: --grid: sharing='al' in 'sharing=al': expected "
                                       "one of all, attention, ffn, none")


def test_too_few_held_out_instances_are_warned_about(grid_run):
    from albert_tf.ablation.data import few_heldout

    lines = grid_run[4]
    warned = [line for line in lines if line.startswith("warning: ") and "held-out" in line]
    assert {line.split()[1] for line in warned} == {"sop", "nsp"}, lines
    assert "raise --heldout_fraction=0.1 or give more text" in warned[0]
    assert few_heldout("sop", 12, 1, 0.02) == (
        "warning: sop is scored on 12 held-out instance(s) from 1 document(s): an accuracy "
        "near 0.5 is uncertain by +-0.246 (95% interval); raise --heldout_fraction=0.02 or "
        "give more text for 381 or more")
    # 381 pairs: the table's notes flag no accuracy's interval (at most +-0.05).
    assert few_heldout("sop", 381, 9, 0.02) is None
    assert few_heldout("sop", 380, 9, 0.02).startswith("warning: sop is scored on 380")
