"""The layering the architecture promises (ARCHITECTURE.md), read from the source.

- No library module under albert_tf/ imports `albert_tf.tasks` (the repository's
  tasks/); only the command-line programs do (they wire the task registry to the library).
- `tasks` imports no command-line program.
- Nothing imports a top-level `tasks` or `configs`: the installed package has one
  top-level name, `albert_tf`.
- The name a SentencePiece model is shipped under lives in its vocabulary type only.
- ARCHITECTURE.md lists the commands of `albert_tf.commands.COMMANDS`, the one list.
"""

import ast
import os
import re
import subprocess
import sys

from albert_tf.commands import COMMANDS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The programs (albert_tf/commands/): the only albert_tf modules that may import `tasks`.
PROGRAMS = "albert_tf/commands/"


def _python_files(folder):
    for dirpath, _, names in os.walk(os.path.join(ROOT, folder)):
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                yield os.path.relpath(path, ROOT), path


def _imports(path):
    """Every module name an `import` or `from ... import` anywhere in the file names."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            # `from albert_tf import tasks` imports the module albert_tf.tasks.
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def test_no_library_module_imports_tasks():
    offenders = [f"{relative}: {name}" for relative, path in _python_files("albert_tf")
                 if not relative.startswith(PROGRAMS)
                 for name in _imports(path) if _is_tasks(name)]
    assert offenders == []


def _is_tasks(name):
    return name == "albert_tf.tasks" or name.startswith("albert_tf.tasks.")


def test_nothing_imports_a_top_level_tasks_or_configs():
    offenders = [f"{relative}: {name}" for folder in ("albert_tf", "tasks", "tests", "bench")
                 for relative, path in _python_files(folder)
                 for name in _imports(path) if name.split(".")[0] in ("tasks", "configs")]
    assert offenders == []


def test_the_checker_sees_imports_inside_functions(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from albert_tf.tasks.finetuned import load_finetuned\n"
                      "from albert_tf import tasks\n")
    assert sorted(name for name in _imports(str(module)) if _is_tasks(name)) == [
        "albert_tf.tasks", "albert_tf.tasks.finetuned",
        "albert_tf.tasks.finetuned.load_finetuned"]


def test_tasks_import_no_command():
    offenders = [f"{relative}: {name}" for relative, path in _python_files("tasks")
                 for name in _imports(path) if name.startswith("albert_tf.commands")]
    assert offenders == []


def test_the_shipped_vocabulary_file_is_named_in_one_place():
    literal, found = "spiece.model", []
    for folder in ("albert_tf", "tasks"):
        for relative, path in _python_files(folder):
            with open(path, encoding="utf-8") as f:
                if literal in f.read():
                    found.append(relative)
    assert found == ["albert_tf/tokenizer/sentencepiece/type.py"]


def test_architecture_md_lists_the_commands():
    with open(os.path.join(ROOT, "ARCHITECTURE.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("## Commands", 1)[1].split("\n## ", 1)[0]
    listed = dict(re.findall(r"^\| `albert-tf (\w+)` \| `python -m ([\w.]+)` \|", section, re.M))
    assert listed == {name: f"albert_tf.{name}" for name in COMMANDS}
    for module in COMMANDS.values():
        assert os.path.isfile(os.path.join(ROOT, module.replace(".", "/") + ".py")), module


def test_each_command_runs_as_python_m_albert_tf_name_and_api_is_one_module():
    import albert_tf.api
    import albert_tf.commands.api

    assert albert_tf.api is albert_tf.commands.api
    for name in ("download", "export"):  # an alias, and a library package's __main__
        done = subprocess.run([sys.executable, "-m", f"albert_tf.{name}", "--helpshort"],
                              capture_output=True, text=True, cwd=ROOT, timeout=120,
                              env=dict(os.environ, PYTHONPATH=ROOT))
        assert "Traceback" not in done.stderr, done.stderr[-2000:]
        assert f"albert_tf.commands.{name}:" in done.stdout  # absl's heading of its flags
