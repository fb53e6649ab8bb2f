"""The docstring examples (`>>>`) of albert_tf/ and tasks/ run, and give what they show."""

import doctest
import importlib
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def modules_with_examples():
    """Dotted names of the modules under albert_tf/ and tasks/ with a `>>>` line."""
    names = []
    for package in ("albert_tf", "tasks"):
        for folder, _, files in os.walk(os.path.join(ROOT, package)):
            for name in sorted(files):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    if not any(line.lstrip().startswith(">>>") for line in f):
                        continue
                module = os.path.relpath(path, ROOT)[:-len(".py")].replace(os.sep, ".")
                if package == "tasks":  # installed (and imported) as albert_tf.tasks
                    module = f"albert_tf.{module}"
                names.append(module[:-len(".__init__")] if module.endswith(".__init__")
                             else module)
    return sorted(names)


MODULES = modules_with_examples()


def test_the_examples_are_found():
    assert len(MODULES) >= 7, MODULES


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name, monkeypatch):
    # The examples name fixture files relative to the repository root.
    monkeypatch.chdir(ROOT)
    module = importlib.import_module(name)
    tests = [t for t in doctest.DocTestFinder().find(module) if t.examples]
    assert tests, f"{name} has a `>>>` line that doctest does not find"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test, out=lambda text: pytest.fail(text, pytrace=False))
    assert runner.failures == 0
