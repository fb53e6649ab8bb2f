"""`--deterministic`: the same command twice gives bit-identical weights and results."""

import json
import os

import numpy as np
import pytest
from safetensors.numpy import load_file

import cli_helpers as cli


def _run(tmp_path, name, *extra):
    output_dir = tmp_path / name
    args = cli.rte_args(output_dir, cli.tiny_model(tmp_path), "--train_steps=6",
                        "--warmup_steps=2", "--eval_every=3", *extra)
    result = cli.run("albert_tf.finetune", *args)
    assert result.returncode == 0, result.stderr[-3000:]
    return output_dir, result.stdout


# Two fine-tuning processes (~19 s of CPU); training that gives the same bits again in
# one process: test_engine.py's
# test_checkpoints_every_n_updates_and_resume_gives_the_uninterrupted_result.
@pytest.mark.slow
def test_the_same_command_twice_gives_the_same_bits(tmp_path):
    runs = [_run(tmp_path, name, "--deterministic", "--xla=auto", "--precision=auto")
            for name in ("a", "b")]
    (first, stdout), (second, _) = runs
    assert "deterministic" in stdout  # the device line says so
    settings = json.loads((first / "settings.json").read_text())
    assert settings["deterministic"] is True
    # auto resolved without timing anything: float32 and XLA off on a CPU.
    assert (settings["precision"], settings["xla"], settings["layer_execution"]) == \
        ("fp32", "off", "loop")
    weights = [load_file(os.path.join(folder, "model", "model.safetensors"))
               for folder in (first, second)]
    assert sorted(weights[0]) == sorted(weights[1])
    for name in weights[0]:
        np.testing.assert_array_equal(weights[0][name], weights[1][name], err_msg=name)
    assert cli.results(first)["dev"] == cli.results(second)["dev"]
    assert (first / "eval_history.jsonl").read_text() == \
        (second / "eval_history.jsonl").read_text()
