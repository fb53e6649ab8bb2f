"""Running the command-line programs in subprocesses, as a user would."""

import json
import os
import signal
import subprocess
import sys

from conftest import FIXTURES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPM = os.path.join(FIXTURES, "spm", "albert_30k_clean.model")
RTE = os.path.join(FIXTURES, "glue", "RTE")


def env(**extra):
    values = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2", **extra)
    values.pop("TF_CONFIG", None)
    values.update(extra)
    return values


def run(module, *args, timeout=300, input=None, **extra_env):
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=env(**extra_env), input=input)


def run_here(module, *args):
    """A command module's program as the shell runs it (its flags parsed from
    `args`), in this process, on flag values of its own (absl's are untouched)."""
    from absl import flags

    from albert_tf.io_utils import release_folders

    values = flags.FlagValues()
    module.PROGRAM.define(values, module.__name__)
    try:
        module.PROGRAM.main(module.PROGRAM.parse([module.__name__, *args], values), values)
    finally:
        release_folders()  # as the command's process would, ending


def exit_line(module, *args):
    """The line a command module's program ends with when run here on `args`
    (a user's mistake: `cli.user_errors` exits with it, status 1)."""
    import pytest

    with pytest.raises(SystemExit) as stopped:
        run_here(module, *args)
    return str(stopped.value.code)


def _default_sigint():
    # A test run started in the background by a shell ignores SIGINT, and children
    # inherit that: give the command Ctrl-C's default, as a terminal would.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(module, *args, **extra_env):
    return subprocess.Popen([sys.executable, "-m", module, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=env(**extra_env),
                            preexec_fn=_default_sigint)


def tiny_model(folder, positions=64):
    """A small albert_tf config file (the vocabulary size comes from the SentencePiece model)."""
    path = os.path.join(folder, "tiny.json")
    with open(path, "w") as f:
        json.dump({"vocabulary_size": 30000, "num_layers": 2, "num_heads": 2, "hidden_dim": 16,
                   "intermediate_dim": 24, "embedding_dim": 8,
                   "max_sequence_length": positions}, f)
    return path


def rte_args(output_dir, model, *extra):
    return ["--task=rte", f"--data_dir={RTE}", f"--spm_model={SPM}", f"--model={model}",
            f"--output_dir={output_dir}", "--batch_size=4", "--max_seq_length=64",
            "--train_steps=12", "--warmup_steps=2", "--learning_rate=1e-3", "--dropout=0.1",
            "--checkpoint_every=4", "--precision=fp32", "--log_every=4", *extra]


def results(output_dir):
    with open(os.path.join(output_dir, "eval_results.json")) as f:
        return json.load(f)


def one_line_error(result):
    """The error line of a failed run; checks there is no traceback."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = [l for l in result.stderr.strip().splitlines() if l.startswith("error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


# A fine-tuning process for the search's trials (`albert_tf.tuning.watch.start_finetune`'s
# stand-in): its dev accuracy is learning_rate x 1000 + seed / 100 of its --config.
FAKE_FINETUNE = """
import json, os, sys
args = dict(a[2:].split("=", 1) for a in sys.argv[1:])
config = json.load(open(args["config"]))
os.makedirs(args["output_dir"], exist_ok=True)
value = config["learning_rate"] * 1000 + config["seed"] / 100
json.dump({"dev": {"accuracy": value}}, open(os.path.join(args["output_dir"],
                                                            "eval_results.json"), "w"))
"""


def start_fake_finetune(task_name, config, output_dir, log_path, probes_file=None):
    """`watch.start_finetune` with `FAKE_FINETUNE` as the process (which measures nothing)."""
    return subprocess.Popen([sys.executable, "-c", FAKE_FINETUNE, f"--task={task_name}",
                             f"--config={config}", f"--output_dir={output_dir}"])
