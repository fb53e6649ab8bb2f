import json
import os

import pytest
import numpy as np
from safetensors.numpy import load_file

import cli_helpers as cli

MODULE = "albert_tf.finetune"


def test_helpfull_documents_every_flag():
    result = cli.run(MODULE, "--helpfull", timeout=60)
    assert "Traceback" not in result.stderr  # absl exits with 1 after help
    for flag in ("--task", "--init_checkpoint", "--strategy", "--precision", "--xla",
                 "--layer_execution", "--accumulation_steps", "--checkpoint_every", "--demo",
                 "--doc_stride", "--[no]recompute", "--num_epochs", "--warmup_proportion",
                 "--eval_every", "--[no]keep_best", "--best_metric", "--early_stopping_patience",
                 "--early_stopping_min_delta", "--seeds", "--kfold"):
        assert flag in result.stdout


def test_mistyped_task_is_one_line(tmp_path):
    line = cli.one_line_error(cli.run(MODULE, "--task=rtee", f"--output_dir={tmp_path}"))
    assert line.startswith("error: unknown task 'rtee'; did you mean 'rte'? known tasks: afqmc, "
                           "c3, chid, cluewsc2020, cmnli, cmrc2018, cola")
    assert "text_classification" in line and "token_classification" in line


def test_missing_data_file_names_it(tmp_path):
    # In this process: an error found once TensorFlow is loaded is one line in a
    # process of its own too (test_first_hour.py's every-problem test).
    from albert_tf.commands import finetune

    line = cli.exit_line(finetune, "--task=rte", f"--data_dir={tmp_path}",
                         f"--spm_model={cli.SPM}", f"--model={cli.tiny_model(tmp_path)}",
                         f"--output_dir={tmp_path}/out")
    assert line.startswith("error: ") and str(tmp_path / "train.tsv") in line


def test_missing_spm_model_names_it(tmp_path):
    result = cli.run(MODULE, "--task=rte", f"--data_dir={cli.RTE}",
                     f"--spm_model={tmp_path}/nope.model", f"--output_dir={tmp_path}/out")
    assert cli.one_line_error(result) == (f"error: --vocab_file: {tmp_path}/nope.model: "
                                       "no such file or folder")


def test_glue_task_rejects_squad_options(tmp_path):
    result = cli.run(MODULE, *cli.rte_args(tmp_path / "out", cli.tiny_model(tmp_path)),
                     "--doc_stride=32")
    assert "unknown option for task 'rte' in ['doc_stride']; known: loss, focal_gamma, " \
        "label_smoothing, long_inputs, window_stride" in cli.one_line_error(result)


def test_train_evaluate_predict_then_resume_is_a_no_op_and_other_settings_are_refused(
        tmp_path, capsys):
    from albert_tf.commands import finetune

    out, model = tmp_path / "run", cli.tiny_model(tmp_path)
    result = cli.run(MODULE, *cli.rte_args(out, model, "--do_predict"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "dev: accuracy=" in result.stdout
    first = cli.results(out)
    assert first["train"]["step"] == 12 and first["dev"]["examples"] == 1
    assert first["precision"] == "float32"
    for name in ("settings.json", "RTE.tsv", "model/albert_tf_config.json",
                 "model/spiece.model", "checkpoints/ckpt-12.index", "tensorboard"):
        assert os.path.exists(out / name), name
    assert (out / "RTE.tsv").read_text().splitlines()[0] == "index\tprediction"
    # Only --output_dir: the saved run is complete, so nothing runs again; it says so.
    # (The command's program in this process: the run above was the process.)
    cli.run_here(finetune, f"--output_dir={out}")
    said = capsys.readouterr().out
    assert f"{out}: this run is complete" in said and "dev: accuracy=" in said
    assert cli.results(out) == first
    # Asking for a step again runs it, from the saved checkpoint.
    cli.run_here(finetune, f"--output_dir={out}", "--do_eval")
    assert "resumed from step 12 of 12" in capsys.readouterr().out
    assert cli.results(out)["dev"] == first["dev"]
    assert cli.results(out)["train"]["resumed_from"] == 12
    # Resuming with other settings is refused (one saved run serves both checks).
    result = cli.run(MODULE, *cli.rte_args(out, model, "--train_steps=5"))
    assert "holds a run with other settings (train_steps: saved 12, given 5)" in \
        cli.one_line_error(result)


def test_epochs_evaluation_while_training_and_the_best_step(tmp_path, capsys):
    from albert_tf.commands import finetune

    out = tmp_path / "run"
    args = [a for a in cli.rte_args(out, cli.tiny_model(tmp_path))
            if not a.startswith(("--train_steps", "--warmup_steps", "--log_every"))]
    cli.run_here(finetune, *args, "--num_epochs=6", "--eval_every=epoch", "--keep_best",
                 "--log_every=1")
    said = capsys.readouterr().out
    # RTE's fixture has 2 training pairs: 6 epochs in batches of 4 are 3 updates.
    assert "train: 6.0 epochs of 2 examples = 3 updates of 4" in said
    assert "step 1/3  loss " in said and "dev_accuracy " in said
    with open(out / "eval_history.jsonl") as f:
        history = [json.loads(line) for line in f]
    assert [(e["step"], e["epoch"]) for e in history] == [(1, 2.0), (2, 4.0), (3, 6.0)]
    first = cli.results(out)
    best = max(history, key=lambda e: e["accuracy"])  # the earliest of equals
    assert first["best"] == {"metric": "accuracy", "step": best["step"], "epoch": best["epoch"],
                             "value": best["accuracy"]}
    assert first["dev"]["accuracy"] == best["accuracy"] and first["train"]["step"] == 3
    assert f"best: step {best['step']} (epoch {best['epoch']}), accuracy=" in said


@pytest.mark.slow  # a minute of CI; the slow tier (make test-all) runs it
def test_sigkill_then_resume_gives_the_uninterrupted_result(tmp_path):
    model = cli.tiny_model(tmp_path)
    steps = ["--train_steps=60", "--checkpoint_every=10", "--max_seq_length=64"]
    straight = cli.run(MODULE, *cli.rte_args(tmp_path / "straight", model), *steps)
    assert straight.returncode == 0, straight.stderr[-3000:]

    killed = tmp_path / "killed"
    process = cli.start(MODULE, *cli.rte_args(killed, model), *steps)
    # A checkpoint counts once the manager's state file names it (its index
    # file is written just before: a kill in between resumes from ckpt-10).
    state = killed / "checkpoints" / "checkpoint"
    saved = lambda: state.exists() and "ckpt-20" in state.read_text()  # noqa: E731
    try:
        import time

        deadline = time.time() + 240
        while not saved() and process.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        assert saved(), process.stdout.read() if process.poll() is not None else ""
        process.kill()  # SIGKILL: no cleanup, no final checkpoint
    finally:
        process.wait()
    assert process.returncode == -9
    assert not (killed / "checkpoints" / "ckpt-60.index").exists()

    resumed = cli.run(MODULE, f"--output_dir={killed}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert cli.results(killed)["train"]["resumed_from"] >= 20
    a = load_file(str(tmp_path / "straight" / "model" / "model.safetensors"))
    b = load_file(str(killed / "model" / "model.safetensors"))
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_allclose(b[name], a[name], atol=1e-6, err_msg=name)
