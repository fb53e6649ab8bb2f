"""What a new user meets first: problems found before any work, folders that are not
locked by a failed start, path spellings, interrupts, damaged checkpoints."""

import os
import re
import shutil
import signal
import subprocess
import sys

import pytest

import cli_helpers as cli
from albert_tf import tasks
from albert_tf.training.results import report_complete
from albert_tf.training import settings as settings_lib
from albert_tf.training.settings import FinetuneSettings

MODULE = "albert_tf.finetune"


def _rte_copy(tmp_path, drop=()):
    folder = tmp_path / "RTE"
    shutil.copytree(cli.RTE, folder)
    for name in drop:
        os.remove(folder / name)
    return folder


def test_every_problem_is_listed_before_any_work(tmp_path):
    data = _rte_copy(tmp_path, drop=["test.tsv"])
    (data / "train.tsv").write_text("index\tsentence1\tsentence2\tlabel\n")  # no rows
    small = tmp_path / "small.json"
    small.write_text('{"vocabulary_size": 120, "num_layers": 1, "num_heads": 2, '
                     '"hidden_dim": 8, "intermediate_dim": 8, "embedding_dim": 4, '
                     '"max_sequence_length": 32}')
    out = tmp_path / "run"
    args = [a for a in cli.rte_args(out, str(small), "--do_predict") if "data_dir" not in a]
    result = cli.run(MODULE, *args, f"--data_dir={data}")
    line = cli.one_line_error(result)
    # A random model is sized to the tokenizer, whatever vocabulary its file names.
    assert "vocabulary" not in line
    assert "--max_seq_length=64 is more than the model's 32 positions" in line
    assert f"rte split 'test': no file {data}/test.tsv" in line
    assert "the train split of task 'rte' has no examples" in line
    assert not out.exists() or not os.listdir(out)  # nothing written, nothing locked


def test_a_model_and_a_checkpoint_together_are_refused(tmp_path):
    # The checks the command makes before any work (its one-line form: above).
    from albert_tf.training.run_checks import check_inputs

    settings = settings_lib.resolve(tasks.get("rte"), {
        "data_dir": cli.RTE, "vocab_file": cli.SPM, "model": cli.tiny_model(tmp_path),
        "init_checkpoint": f"{cli.ROOT}/tests/fixtures/reference_models/tiny/hf",
        "output_dir": str(tmp_path / "run"), "max_seq_length": 32})
    with pytest.raises(ValueError, match=r"give --init_checkpoint \(its model is used\) or "
                                         r"--model \(a new model\), not both"):
        check_inputs(tasks.get("rte"), settings)


def test_train_steps_below_the_recipes_warmup_keep_its_share():
    rte = tasks.get("rte")  # recipe: 800 steps, 200 of them warmup
    pretrained = {"init_checkpoint": "albert_base_v2"}
    settings = settings_lib.resolve(rte, {"train_steps": 12, "output_dir": "x", **pretrained})
    assert (settings.train_steps, settings.warmup_steps) == (12, 3)
    explicit = settings_lib.resolve(rte, {"train_steps": 12, "warmup_steps": 0,
                                          "output_dir": "x", **pretrained})
    assert explicit.warmup_steps == 0


# Two command runs (~13 s of CPU); the lock itself: test_engine.py and test_repeats.py.
@pytest.mark.slow
def test_a_start_that_failed_does_not_lock_its_folder(tmp_path):
    out, model = tmp_path / "run", cli.tiny_model(tmp_path)
    bad = cli.run(MODULE, *[a for a in cli.rte_args(out, model) if "data_dir" not in a],
                  f"--data_dir={tmp_path}/nowhere")
    assert "no file" in cli.one_line_error(bad)
    # Settings left by a start that saved no checkpoint do not hold the folder either.
    out.mkdir(exist_ok=True)
    (out / "settings.json").write_text('{"task": "rte", "output_dir": "x", "train_steps": 99}')
    good = cli.run(MODULE, *cli.rte_args(out, model, "--train_steps=4"))
    assert good.returncode == 0, good.stderr[-3000:]
    assert cli.results(out)["train"]["step"] == 4


def _run_in(folder, *args):
    return subprocess.run([sys.executable, "-m", MODULE, *args], capture_output=True, text=True,
                          timeout=300, cwd=folder, env=cli.env())


# Three runs of the command; default tier, resuming: test_finetune_cli.py's
# test_train_evaluate_predict_then_resume_is_a_no_op_and_other_settings_are_refused.
@pytest.mark.slow
def test_resume_does_not_depend_on_how_the_folder_is_spelled_or_where_it_is(tmp_path,
                                                                            monkeypatch):
    model = cli.tiny_model(str(tmp_path))
    first = _run_in(tmp_path, *cli.rte_args("runs/ck", model, "--train_steps=4"))
    assert first.returncode == 0, first.stderr[-3000:]
    assert (tmp_path / "runs" / "ck" / "eval_results.json").exists()
    # The command, with a spelling that differs in both ends of the path.
    again = _run_in(tmp_path, *cli.rte_args("./runs/ck/", model, "--train_steps=4"))
    assert again.returncode == 0, again.stderr[-3000:]
    assert "this run is complete" in again.stdout
    # What the command decides that from, for the other spellings (in-process).
    monkeypatch.chdir(tmp_path)
    for spelling in ("runs/ck/", "./runs/ck", str(tmp_path / "runs" / "ck")):
        assert settings_lib.has_progress(spelling), spelling
        saved = settings_lib.load_saved(FinetuneSettings, spelling)
        given = {"task": "rte", "output_dir": spelling, "data_dir": cli.RTE,
                 "vocab_file": cli.SPM, "model": model, "train_steps": 4}
        assert settings_lib.resume_conflicts(saved, given) == {}, spelling
        assert report_complete(spelling), spelling
    shutil.move(str(tmp_path / "runs" / "ck"), str(tmp_path / "moved"))
    moved = _run_in(tmp_path, "--output_dir=moved", "--do_eval")
    assert moved.returncode == 0, moved.stderr[-3000:]
    assert "resumed from step 4 of 4" in moved.stdout


# Both signals stop training once the step under way ends, and that step is saved
# (test_engine.py's test_a_signal_lets_the_step_under_way_finish_then_saves_it, in-process);
# the command is the same for both after that: Ctrl-C's run is in the slow tier.
# Both signals' command runs are in the slow tier (about 30 s of CPU each): the default tier
# checks the stop in-process (test_engine's signal tests, the stop's exit status and lock).
@pytest.mark.parametrize("signum", [pytest.param(signal.SIGINT, marks=pytest.mark.slow),
                                    pytest.param(signal.SIGTERM, marks=pytest.mark.slow)],
                         ids=["ctrl-c", "sigterm"])
def test_an_interrupt_saves_the_current_step_and_says_how_to_resume(tmp_path, signum):
    out, model = tmp_path / "run", cli.tiny_model(tmp_path)
    args = cli.rte_args(out, model, "--train_steps=400", "--checkpoint_every=100")
    process = cli.start(MODULE, *args)
    seen = []
    # Past the first logged steps (the training loop runs), before the first save at 100.
    for line in process.stdout:
        seen.append(line)
        if line.startswith("step 8/400"):
            break
    process.send_signal(signum)
    output, _ = process.communicate(timeout=120)
    output = "".join(seen) + output
    # A stop asked for is no error: exit status 0, its line without "error:".
    assert process.returncode == 0, output[-3000:]
    assert "Traceback" not in output and "error:" not in output, output[-3000:]
    said = [l for l in output.splitlines() if l.startswith("stopped as asked: ")]
    assert len(said) == 1 and said[0].startswith("stopped as asked: interrupted at step "), \
        output[-3000:]
    # Quiet logs: no native start-up or first-run notes, every message in one format.
    assert not re.search(r"^[IWE]\d{4} |oneDNN|absl::InitializeLog", output, re.M), \
        output[-3000:]
    assert "warning: no --init_checkpoint: training " in output, output[-3000:]
    step = int(said[0].split("interrupted at step ")[1].split()[0])
    assert 0 < step < 400 and "Run the same command again to resume" in said[0]
    assert (out / "checkpoints" / f"ckpt-{step}.index").exists()
    resumed = cli.run(MODULE, *args[:-2], "--train_steps=400", "--checkpoint_every=100")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resumed from step {step} of 400" in resumed.stdout
    assert cli.results(out)["train"]["resumed_from"] == step


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """`(settings, folder)`: a toy run of 8 updates, checkpointed at 4 and 8; each
    test damages a copy of its checkpoints."""
    from engine_helpers import toy_dataset, toy_model, toy_settings

    from albert_tf.training import engine

    folder = tmp_path_factory.mktemp("trained")
    settings = toy_settings(folder, train_steps=8, checkpoint_every=4)
    model, strategy = toy_model(settings)
    engine.train(model, strategy, toy_dataset(strategy, settings), settings, str(folder),
                 verbose=False)
    return settings, folder


def _copy_of(trained, tmp_path):
    settings, folder = trained
    shutil.copytree(folder / "checkpoints", tmp_path / "checkpoints")
    return settings


def test_a_damaged_checkpoint_is_named_and_the_one_before_is_used(trained, tmp_path, caplog):
    from engine_helpers import toy_model

    from albert_tf.training import engine

    settings = _copy_of(trained, tmp_path)
    data = [p for p in os.listdir(tmp_path / "checkpoints") if p.startswith("ckpt-8.data")]
    with open(tmp_path / "checkpoints" / data[0], "r+b") as f:
        f.truncate(16)
    fresh, strategy = toy_model(settings, seed=3)
    manager = engine.checkpoint_manager(fresh, strategy, str(tmp_path / "checkpoints"))
    assert engine.restore_latest(manager, str(tmp_path / "checkpoints")) == 4
    assert "ckpt-8: damaged or incomplete checkpoint" in caplog.text


@pytest.mark.parametrize("state", [b"\xf7garbage {{{", b"", None], ids=["garbage", "empty",
                                                                     "missing"])
def test_an_unreadable_checkpoint_state_file_resumes_from_the_newest_ckpt(trained, tmp_path,
                                                                          caplog, state):
    from engine_helpers import toy_model

    from albert_tf.training import engine

    settings = _copy_of(trained, tmp_path)
    folder = tmp_path / "checkpoints"
    if state is None:
        (folder / "checkpoint").unlink()
    else:
        (folder / "checkpoint").write_bytes(state)
    before = {p: (folder / p).read_bytes() for p in os.listdir(folder) if p.startswith("ckpt-")}
    fresh, strategy = toy_model(settings, seed=3)
    manager = engine.checkpoint_manager(fresh, strategy, str(folder))
    assert engine.restore_latest(manager, str(folder)) == 8
    assert f"resuming from {folder / 'ckpt-8'}" in caplog.text
    assert {p: (folder / p).read_bytes() for p in before} == before  # nothing overwritten


def test_a_stop_asked_for_exits_0_and_lets_go_of_the_folder_at_once(tmp_path, capsys):
    """The folder's lock is let go before the process tears TensorFlow down, so the
    same command run again at once finds it free."""
    import fcntl

    from albert_tf.commands.cli import user_errors
    from albert_tf.errors import StopAsked
    from albert_tf.io_utils import LOCK_FILE, hold_folder

    hold_folder(str(tmp_path), "--output_dir")
    with pytest.raises(SystemExit) as exited:
        with user_errors():
            raise StopAsked("interrupted at step 24 of 2000; saved ckpt-24. Run the same "
                            "command again to resume from it")
    assert exited.value.code == 0
    assert capsys.readouterr().err == ("stopped as asked: interrupted at step 24 of 2000; "
                                       "saved ckpt-24. Run the same command again to resume "
                                       "from it\n")
    with open(tmp_path / LOCK_FILE, "a+") as f:  # another open file: free, not held
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_a_commands_stderr_is_filtered_of_native_notes_and_its_messages_are_one_line(tmp_path):
    """The filter a command puts on file descriptor 2 (notes TensorFlow's native code
    prints at any time, e.g. a kernel's first run) and the project's one-line format
    (not absl's, with its thread ids), as a command sets them up."""
    script = tmp_path / "command.py"
    script.write_text(
        "import logging, os, sys\n"
        "from absl import app\n"
        "from albert_tf import log, startup\n"
        "def main(argv):\n"
        "    startup.filter_process_noise()\n"
        "    log.setup()\n"
        "    logging.getLogger('albert_tf.training.run_model').warning('no --init_checkpoint')\n"
        "    os.write(2, b'E0000 00:00:1796437774.846739    9760 util.cc:131] oneDNN supports "
        "DT_INT64 only on platforms with AVX-512. Falling back to the default Eigen-based "
        "implementation if present.\\n')\n"
        "    print('a line of its own', file=sys.stderr)\n"
        "app.run(main)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, cwd=cli.ROOT, env=cli.env())
    assert done.returncode == 0, done.stderr
    assert done.stderr == "warning: no --init_checkpoint\na line of its own\n"

