"""The commands check their flags and settings, and print their help, without
importing TensorFlow (seconds, not the 10-40 s of its import); the task registry
knows every task's name, options and recipe before importing its module
(tests/test_classification_task.py checks the declarations against the modules)."""

import os
import subprocess
import sys

import pytest

from albert_tf.registry import Registry
from cli_helpers import ROOT, env


def _command(module, *args):
    """`(exit status, the program's stderr lines, the modules imported)` of
    `python -X importtime -m module args`."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", module, *args],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, env=env())
    lines = done.stderr.splitlines()
    imported = {line.rsplit("|", 1)[-1].strip() for line in lines
                if line.startswith("import time:")}
    said = [line for line in lines if not line.startswith("import time:")]
    return done.returncode, said, imported, done.stdout


def _no_tensorflow(imported):
    heavy = sorted(m for m in imported if m.split(".")[0] in ("tensorflow", "keras"))
    assert not heavy, heavy[:5]


@pytest.mark.parametrize("args, error", [
    (("--task=rte", "--learning_rate=-1"), "error: learning_rate must be > 0, got -1.0"),
    (("--task=rtee",), "error: unknown task 'rtee'; did you mean 'rte'? known tasks: "),
    (("--task=squad", "--doc_stride=0"), "error: doc_stride must be >= 1, got 0"),
    (("--task=rte", "--crf"), "error: unknown option for task 'rte' in ['crf']"),
    (("--task=rte", "--learnig_rate=1e-5"),
     "error: finetune has no flag --learnig_rate; did you mean --learning_rate?"),
    (("--task=rte", "--spm_model=a.model", "--vocab_file=b.model"),
     "error: give --vocab_file or its alias --spm_model, not both"),
])
def test_a_settings_error_is_one_line_before_tensorflow(tmp_path, args, error):
    status, said, imported, _ = _command("albert_tf.finetune", *args,
                                         f"--output_dir={tmp_path / 'run'}")
    assert status == 1 and len(said) == 1 and said[0].startswith(error), said
    _no_tensorflow(imported)
    assert not os.path.exists(tmp_path / "run")


@pytest.mark.parametrize("module, args, error", [
    ("albert_tf.finetune", ("--task=rte", "--data_dir=no/such/RTE"),
     "error: --data_dir: no/such/RTE: no such file or folder (no folder "),
    ("albert_tf.finetune", ("--task=rte", "--data_dir=.", "--model=albert_tiny",
                            "--vocab_file=missing.model"),
     "error: --vocab_file: missing.model: no such file or folder"),
    ("albert_tf.finetune", ("--task=rte", "--data_dir=.", "--init_checkpoint=ckpts/base"),
     "error: --init_checkpoint: ckpts/base: no such file or folder"),
    ("albert_tf.finetune", ("--task=text_classification", "--train_file=reviews.csv"),
     "error: --train_file: reviews.csv: no such file or folder"),
    ("albert_tf.pretrain", ("--input_files=records/*.tfrecord",),
     "error: --input_files: records/*.tfrecord: no such file or folder"),
    ("albert_tf.predict", ("--model=runs/gone/model", "--text_a=hi"),
     "error: --model: runs/gone/model: no such file or folder"),
])
def test_a_missing_file_or_folder_is_one_line_before_tensorflow(tmp_path, module, args, error):
    status, said, imported, _ = _command(module, *args, *(
        () if module.endswith("predict") else (f"--output_dir={tmp_path / 'run'}",)))
    assert status == 1 and len(said) == 1 and said[0].startswith(error), said
    _no_tensorflow(imported)


def test_download_names_an_unknown_data_set_before_tensorflow(tmp_path):
    # Each task's data source is in its declaration, not in its module.
    status, said, imported, _ = _command("albert_tf.download", "--dataset=rte,glue",
                                         f"--output_dir={tmp_path}")
    assert status == 1 and len(said) == 1, said
    assert said[0].startswith("error: unknown data set(s) glue; known: afqmc, chid,")
    _no_tensorflow(imported)


def test_help_of_every_training_command_without_tensorflow():
    _, said, imported, out = _command("albert_tf.finetune", "--helpfull")
    assert not said
    # The flags of every task's options, from the registry's declarations.
    for flag in ("--doc_stride", "--max_qa_length", "--[no]crf", "--long_inputs", "--text_column"):
        assert flag in out
    _no_tensorflow(imported)
    for module in ("albert_tf.distill", "albert_tf.search", "albert_tf.pretrain",
                   "albert_tf.export"):
        _, said, imported, out = _command(module, "--help")
        assert not said and ("--output_dir" in out or "--export_dir" in out), module
        _no_tensorflow(imported)


def test_a_declared_entry_imports_only_its_own_module(tmp_path, monkeypatch):
    for name in ("one", "two"):
        (tmp_path / f"plugin_{name}.py").write_text(
            "from registry_under_test import REGISTRY\n"
            f"class Entry:\n    name = {name!r}\nREGISTRY.register(Entry())\n")
    module = type(sys)("registry_under_test")
    module.REGISTRY = Registry("thing", declared={"one": "plugin_one", "two": "plugin_two"})
    monkeypatch.setitem(sys.modules, "registry_under_test", module)
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = module.REGISTRY
    assert registry.names() == ["one", "two"] and "plugin_one" not in sys.modules
    assert registry.get("one").name == "one"
    assert "plugin_one" in sys.modules and "plugin_two" not in sys.modules
    with pytest.raises(ValueError, match="unknown thing 'tow'; did you mean 'two'"):
        registry.get("tow")
    assert "plugin_two" not in sys.modules
    for name in ("plugin_one", "plugin_two"):
        monkeypatch.delitem(sys.modules, name, raising=False)
