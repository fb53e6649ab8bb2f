"""The one program entry: every command's flags, `--config`, required flags, aliases
and unknown names come from its settings classes, alike on the command line and
in `albert_tf.api`."""

import json
import subprocess
import sys

import pytest
from absl import flags

import cli_helpers as cli
from albert_tf.commands import COMMANDS, api
from albert_tf.commands import cli as cli_lib
from albert_tf.commands import distill, export, finetune, inspect, predict, serve

ROOT = cli.ROOT


def test_every_command_module_imports_in_one_process():
    modules = ", ".join(COMMANDS.values())
    done = subprocess.run([sys.executable, "-c", f"import {modules}, albert_tf.api"],
                          capture_output=True, text=True, cwd=ROOT, env=cli.env(), timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_importing_a_command_defines_no_flag():
    before = set(flags.FLAGS)
    for name in COMMANDS:
        __import__(COMMANDS[name])
    assert set(flags.FLAGS) == before


@pytest.mark.parametrize("module, args, line", [
    (serve, ["--prot=80", "--model=m"], "error: serve has no flag --prot; did you mean --port?"),
    (finetune, ["--learnig_rate=1e-5", "--output_dir=o"],
     "error: finetune has no flag --learnig_rate; did you mean --learning_rate?"),
    (inspect, ["--seq_length=many"],
     "error: flag --seq_length=many: invalid literal for int() with base 10: 'many'"),
])
def test_a_mistyped_flag_is_one_line_with_the_nearest_name(module, args, line):
    assert cli.exit_line(module, *args) == line


@pytest.mark.parametrize("module, args, line", [
    (serve, [], "error: missing required flag(s): --model"),
    (export, ["--export_dir=e"], "error: missing required flag(s): --model_dir"),
    (predict, ["--batch_size=2"], "error: missing required flag(s): --model"),
    (finetune, ["--task=rte"], "error: missing required flag(s): --output_dir"),
])
def test_a_missing_required_flag_is_named(module, args, line):
    assert cli.exit_line(module, *args) == line


def test_a_resuming_command_names_a_missing_flag_once_its_folder_holds_no_run(tmp_path):
    # The run folder is empty: nothing saved supplies the task, or the teacher.
    with pytest.raises(ValueError, match=r"^missing required flag\(s\): --task$"):
        api.finetune(output_dir=str(tmp_path / "run"), learning_rate=1e-4)
    with pytest.raises(ValueError, match=r"^missing required flag\(s\): --teacher, "
                                         r"--student$"):
        api.distill(output_dir=str(tmp_path / "student"), temperature=3.0)


def test_an_alias_on_the_command_line_and_in_python(tmp_path):
    values = flags.FlagValues()
    distill.PROGRAM.define(values, "distill")
    distill.PROGRAM.parse(["distill", "--spm_model=v.model", "--output_dir=o"], values)
    given, = distill.PROGRAM.settings(cli_lib.given_flags(distill.PROGRAM.flag_names(), values))
    assert given.flags == {"vocab_file": "v.model", "output_dir": "o"}
    assert values["spm_model"].help == "Alias for --vocab_file."
    settings, = inspect.PROGRAM.settings({"spm_model": "v.model"})
    assert settings.vocab_file == "v.model"
    with pytest.raises(ValueError, match=r"^missing required flag\(s\): --teacher"):
        (tmp_path / "v.model").write_text("")
        api.distill(output_dir=str(tmp_path / "d"), spm_model=str(tmp_path / "v.model"))


def test_a_flag_and_its_alias_together_are_one_line_naming_both():
    line = cli.exit_line(finetune, "--spm_model=a.model", "--vocab_file=b.model", "--output_dir=o")
    assert line == "error: give --vocab_file or its alias --spm_model, not both"
    with pytest.raises(ValueError, match=r"^give --formats or its alias --tflite_variants, "
                                         r"not both$"):
        export.PROGRAM.settings({"model_dir": "m", "export_dir": "e", "formats": "tflite",
                                 "tflite_variants": "web"})


def test_config_on_a_command_other_than_finetune(tmp_path, capsys):
    config = tmp_path / "inspect.json"
    config.write_text(json.dumps({"model": "albert_base", "seq_length": 64, "sharing": "ffn"}))
    cli.run_here(inspect, f"--config={config}", "--sharing=all")  # the flag over the file
    out = capsys.readouterr().out
    assert "seq_length=64" in out and "Unique parameters" in out
    assert out.splitlines()[3].split() == ["all"]  # the table's one column: --sharing's
    # Required flags may come from the file; an old name there is read as the new one.
    config.write_text(json.dumps({"model_dir": "m", "export_dir": "e",
                                  "tflite_variants": "tflite", "null_threshold": 0.5}))
    settings, = export.PROGRAM.settings({"config": str(config), "version": 3})
    assert (settings.model_dir, settings.formats, settings.version) == ("m", "tflite", 3)
    assert settings.task_options == {"null_threshold": 0.5}


def test_a_config_names_its_own_mistakes(tmp_path):
    config = tmp_path / "serve.json"
    config.write_text(json.dumps({"model": "m", "prot": 80}))
    with pytest.raises(ValueError, match=rf"^{config}: serve has no flag --prot; did you mean "
                                         r"--port\?$"):
        serve.PROGRAM.settings({"config": str(config)})
    with pytest.raises(FileNotFoundError, match=r"^--config: no such file .*none.json$"):
        serve.PROGRAM.settings({"config": str(tmp_path / "none.json")})
    config.write_text("[1]")
    with pytest.raises(ValueError, match=r"expected a JSON object of settings, got list"):
        serve.PROGRAM.settings({"config": str(config)})


def test_finetune_config_sits_between_the_recipe_and_the_flags(tmp_path):
    from albert_tf import tasks
    from albert_tf.training import settings as settings_lib

    config = tmp_path / "run.json"
    config.write_text(json.dumps({"task": "squad", "learning_rate": 1e-4, "batch_size": 8,
                                  "doc_stride": 64}))
    given, repeat, demo = finetune.PROGRAM.settings(
        {"config": str(config), "output_dir": str(tmp_path / "run"), "batch_size": 4})
    assert given.config == {"task": "squad", "learning_rate": 1e-4, "batch_size": 8,
                            "task_options": {"doc_stride": 64}}
    assert given.flags == {"output_dir": str(tmp_path / "run"), "batch_size": 4}
    assert (repeat.seeds, demo.demo) == ("", False)
    squad = tasks.declared("squad")
    settings = settings_lib.resolve(squad, {**given.flags, "init_checkpoint": "x"},
                                    given.config, given.source)
    assert (settings.learning_rate, settings.batch_size, settings.max_seq_length) == (
        1e-4, 4, squad.recipe.max_seq_length)
    assert settings.task_options == {"doc_stride": 64}


def test_help_says_where_the_defaults_and_the_config_come_from():
    values = flags.FlagValues()
    finetune.PROGRAM.define(values, "finetune")
    assert values["learning_rate"].default is None
    assert values["learning_rate"].help.endswith(" Default: the task's recipe.")
    assert values["doc_stride"].help.endswith(" Default: the task's own.")
    assert values["config"].help.endswith("over the defaults and the task's recipe, under "
                                          "the flags given.")
    assert values["task"].default is None  # (required: it has no default)
