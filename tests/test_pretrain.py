"""Raw text -> pretraining data -> pretraining -> fine-tuning, through the CLIs."""

import pytest
import json
import os

import cli_helpers as cli
from conftest import FIXTURES

BOOK = os.path.join(FIXTURES, "pretraining", "ledger_gutenberg.txt")


def _pretrain(out, data, model, *extra):
    return cli.run("albert_tf.pretrain", f"--input_files={data}-*", f"--eval_files={data}-*",
                   f"--model={model}", f"--spm_model={cli.SPM}", f"--output_dir={out}",
                   "--max_seq_length=64", "--max_predictions_per_seq=10", "--batch_size=8",
                   "--train_steps=10", "--warmup_steps=2", "--checkpoint_every=5",
                   "--precision=fp32", "--eval_batches=5", *extra)


@pytest.mark.slow  # a minute of CI; the slow tier (make test-all) runs it
def test_pretrain_then_finetune_from_it(tmp_path):
    data = tmp_path / "data" / "train"
    made = cli.run("albert_tf.create_pretraining_data", f"--input={BOOK}",
                   "--input_format=prose", f"--spm_model={cli.SPM}", f"--output={data}",
                   "--max_seq_length=64", "--max_predictions_per_seq=10", "--dupe_factor=2")
    assert made.returncode == 0, made.stderr[-2000:]
    model = cli.tiny_model(tmp_path)
    result = _pretrain(tmp_path / "run", data, model)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "eval mlm_accuracy" in result.stdout
    with open(tmp_path / "run" / "pretrain_results.json") as f:
        results = json.load(f)
    assert results["train"]["step"] == 10
    for key in ("mlm_accuracy", "sop_accuracy", "mlm_baseline_most_frequent_token",
                "sop_baseline_majority"):
        assert 0.0 <= results["eval"][key] <= 1.0
    assert os.path.isfile(tmp_path / "run" / "model" / "spiece.model")

    again = _pretrain(tmp_path / "run", data, model)  # the same command resumes
    assert again.returncode == 0, again.stderr[-3000:]
    with open(tmp_path / "run" / "pretrain_results.json") as f:
        resumed = json.load(f)
    assert resumed["train"]["resumed_from"] == 10

    # Continued pretraining scores its starting point first: the saved model's own scores.
    further = cli.run("albert_tf.pretrain", f"--input_files={data}-*", f"--eval_files={data}-*",
                      f"--init_checkpoint={tmp_path / 'run' / 'model'}",
                      f"--output_dir={tmp_path / 'further'}", "--max_seq_length=64",
                      "--max_predictions_per_seq=10", "--batch_size=8", "--train_steps=2",
                      "--warmup_steps=1", "--precision=fp32", "--eval_batches=5")
    assert further.returncode == 0, further.stderr[-3000:]
    assert "eval before training mlm_accuracy" in further.stdout
    with open(tmp_path / "further" / "pretrain_results.json") as f:
        start = json.load(f)["eval_init_checkpoint"]
    for key in ("mlm_accuracy", "sop_accuracy", "masked_tokens"):
        assert start[key] == pytest.approx(resumed["eval"][key], abs=1e-6), key
    # The checkpoint's vocabulary travels on, so that fine-tuning from the new folder works.
    assert os.path.isfile(tmp_path / "further" / "model" / "spiece.model")

    tuned = cli.run("albert_tf.finetune", "--task=rte", f"--data_dir={cli.RTE}",
                    f"--init_checkpoint={tmp_path / 'run' / 'model'}",
                    f"--output_dir={tmp_path / 'rte'}", "--train_steps=3", "--warmup_steps=1",
                    "--batch_size=4", "--max_seq_length=64", "--precision=fp32")
    assert tuned.returncode == 0, tuned.stderr[-3000:]
    assert "dev: accuracy=" in tuned.stdout


def test_eval_every_scores_the_heldout_records_while_training(tmp_path, capsys):
    from albert_tf.pretraining.train_settings import PretrainSettings
    from albert_tf.pretraining.trainer import run_pretraining

    records = os.path.join(FIXTURES, "pretraining", "google", "google_sop_dupe1_seed1.tfrecord")
    values = dict(input_files=records, output_dir=str(tmp_path / "run"),
                  model=cli.tiny_model(str(tmp_path), positions=128), max_seq_length=128,
                  max_predictions_per_seq=20, batch_size=8, train_steps=4, warmup_steps=1,
                  eval_every=3, eval_batches=2, precision="fp32", xla="off",
                  layer_execution="loop", log_every=1)
    with pytest.raises(ValueError, match="eval_every must be unset without --eval_files"):
        PretrainSettings(**values)
    with pytest.raises(ValueError, match="--max_seq_length=256 is more than the model's 128"):
        run_pretraining(PretrainSettings(**{**values, "max_seq_length": 256},
                                         eval_files=records))
    results = run_pretraining(PretrainSettings(**values, eval_files=records))
    with open(tmp_path / "run" / "eval_history.jsonl") as f:
        history = [json.loads(line) for line in f]
    assert [entry["step"] for entry in history] == [3, 4]  # every 3rd update and the last
    assert "epoch" not in history[0]  # records do not say how many make an epoch
    for key in ("mlm_accuracy", "sop_accuracy", "sop_baseline_majority",
                "sop_balanced_accuracy", "sequences"):
        assert history[-1][key] == results["eval"][key], key
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step ")]
    assert "heldout_sop_accuracy" not in lines[1]  # step 2: nothing scored yet
    assert f"heldout_sop_accuracy {history[0]['sop_accuracy']:.4f}" in lines[2]
    assert f"heldout_sop_baseline_majority {history[0]['sop_baseline_majority']:.4f}" in lines[2]


def test_pretrain_errors_are_one_line(tmp_path):
    result = cli.run("albert_tf.pretrain", f"--input_files={tmp_path}/none-*",
                     f"--output_dir={tmp_path}/out", "--model=albert_base")
    assert cli.one_line_error(result) == \
        f"error: --input_files: {tmp_path}/none-*: no such file or folder"


def test_recompute_setting_reaches_the_model(tmp_path):
    from albert_tf.pretraining.train_settings import PretrainSettings
    from albert_tf.pretraining.trainer import build_model

    settings = PretrainSettings(input_files="unused", output_dir=str(tmp_path),
                                model=cli.tiny_model(tmp_path), recompute=True)
    assert build_model(settings, "float32").backbone.encoder.recompute
