"""A stopped run evaluated from its last checkpoint (`--do_train=false`), then resumed."""

import json
import os
import shutil

import cli_helpers as cli
from albert_tf import tasks
from albert_tf.training import settings as settings_lib
from albert_tf.training.finetuning import run
from albert_tf.training.settings import FinetuneSettings


def test_a_stopped_run_evaluates_its_last_checkpoint_and_still_resumes(tmp_path, capsys):
    out = tmp_path / "run"
    settings = FinetuneSettings(
        task="rte", output_dir=str(out), data_dir=cli.RTE, vocab_file=cli.SPM,
        model=cli.tiny_model(str(tmp_path)), strategy="one_device", precision="fp32",
        batch_size=4, train_steps=2, warmup_steps=1, checkpoint_every=2, max_seq_length=32,
        learning_rate=1e-3)
    run(tasks.get("rte"), settings, verbose=False)
    # The same folder as a run of 4 steps stopped after its checkpoint of step 2.
    saved = json.loads((out / "settings.json").read_text())
    (out / "settings.json").write_text(json.dumps(dict(saved, train_steps=4)))
    os.remove(out / "eval_results.json")
    shutil.rmtree(out / "model")

    stopped = settings_lib.load_saved(FinetuneSettings, str(out))
    assert settings_lib.resume_conflicts(stopped, {"do_train": False}) == {}
    results = run(tasks.get("rte"), stopped.replace(do_train=False))
    assert results["checkpoint_step"] == 2 and "accuracy" in results["dev"]
    assert "using the checkpoint of step 2 of 4 (the run stopped there" in capsys.readouterr().out
    assert json.loads((out / "eval_results_step_2.json").read_text())["dev"] == results["dev"]
    # Neither the run's results nor its model, and the run still trains on by itself.
    assert not os.path.exists(out / "eval_results.json") and not os.path.exists(out / "model")
    assert json.loads((out / "settings.json").read_text())["do_train"] is True
    resumed = run(tasks.get("rte"), settings_lib.load_saved(FinetuneSettings, str(out)),
                  verbose=False)
    assert resumed["train"]["resumed_from"] == 2 and resumed["train"]["step"] == 4
