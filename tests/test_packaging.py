"""The package asks for ranges, installs beside what users have, and names missing extras.

pyproject.toml declares ranges whose lower bounds are the versions
`make test-lowest` installs (constraints-lowest.txt); requirements.txt pins the
versions CI tests, which must lie in those ranges. The wheel built from the
checkout carries the ranges (no exact pins), and installing it where a
supported TensorFlow is already present installs nothing but albert-tf.
"""

import email
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from albert_tf import extras
from albert_tf.commands import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _pyproject():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def _pins(name):
    """`{distribution: version}` of an `==` pin file."""
    pins = {}
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        for line in f:
            line = line.split("#")[0].strip()
            if line:
                requirement = Requirement(line)
                (spec,) = requirement.specifier
                assert spec.operator == "==", f"{name}: {line} is not an exact pin"
                pins[_normal(requirement.name)] = spec.version
    return pins


def _normal(name):
    return name.lower().replace("_", "-")


def _lower_bound(requirement):
    bounds = [Version(s.version) for s in requirement.specifier if s.operator == ">="]
    assert len(bounds) == 1, f"{requirement}: needs one lower bound"
    return bounds[0]


def _dependencies():
    project = _pyproject()
    extra = [Requirement(r) for name, group in project["optional-dependencies"].items()
             if name != "all" for r in group]
    return [Requirement(r) for r in project["dependencies"]], extra


def test_every_dependency_is_a_range_whose_lower_bound_is_tested():
    core, extra = _dependencies()
    lowest, locked = _pins("constraints-lowest.txt"), _pins("requirements.txt")
    for requirement in core + extra:
        name = _normal(requirement.name)
        assert not any(s.operator == "==" for s in requirement.specifier), requirement
        assert any(s.operator == "<" for s in requirement.specifier), \
            f"{requirement}: needs an upper bound"
        # The pinned version CI tests lies in the range.
        assert name in locked, f"{name} is not pinned in requirements.txt"
        assert requirement.specifier.contains(locked[name]), (requirement, locked[name])
    for requirement in core:  # the lowest tier installs exactly the lower bounds
        name = _normal(requirement.name)
        assert Version(lowest[name]) == _lower_bound(requirement), (requirement, lowest[name])
    assert set(lowest) == {_normal(r.name) for r in core}
    for requirement in extra:  # extras are tested at the version CI pins
        assert _lower_bound(requirement) == Version(locked[_normal(requirement.name)])


def test_the_extras_of_the_package_are_the_ones_the_code_names():
    groups = _pyproject()["optional-dependencies"]
    assert set(groups) - {"all"} == set(extras.EXTRAS)
    for extra, (module, distribution) in extras.EXTRAS.items():
        assert [_normal(Requirement(r).name) for r in groups[extra]] == [_normal(distribution)]
        assert importlib.util.find_spec(module) is not None  # installed by make setup
    (everything,) = groups["all"]
    assert Requirement(everything).extras == set(extras.EXTRAS)


def test_a_missing_extra_is_one_line_naming_it(monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(extras.importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    assert not extras.available("plots") and extras.available("metrics")
    with pytest.raises(SystemExit) as stopped, cli.user_errors():
        extras.require("plots", "ablate (its loss and score plots)")
    assert str(stopped.value) == (
        'error: ablate (its loss and score plots) needs matplotlib, which is not installed: '
        'pip install "albert-tf[plots]"')


def test_a_task_whose_metric_needs_an_extra_says_so_before_any_work(monkeypatch, tmp_path):
    from albert_tf import tasks
    from albert_tf.training import finetuning
    from albert_tf.training.settings import FinetuneSettings

    real = importlib.util.find_spec
    monkeypatch.setattr(extras.importlib.util, "find_spec",
                        lambda name, *a: None if name == "nltk" else real(name, *a))
    settings = FinetuneSettings(task="cmrc2018", output_dir=str(tmp_path / "run"),
                                data_dir=str(tmp_path / "nowhere"))
    with pytest.raises(extras.MissingExtra, match=r"evaluating task 'cmrc2018' needs nltk.*"
                       r'albert-tf\[metrics\]'):
        finetuning.Run(tasks.get("cmrc2018"), settings, verbose=False)
    assert not os.path.exists(tmp_path / "run")  # nothing was started
    # Without evaluation the scorer is not needed: the run goes on to its next check.
    with pytest.raises(ValueError, match="vocabulary"):
        finetuning.Run(tasks.get("cmrc2018"), settings.replace(do_eval=False), verbose=False)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("building the wheel offline needs setuptools in this environment")
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"  # built from a copy: an in-tree build leaves build/ behind
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv*", "bazel-*", "build", "runs", "__pycache__", "*.egg-info", "tests",
        "node_modules"))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(work / "dist"), str(source)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    (path,) = (work / "dist").glob("albert_tf-*.whl")
    return path


def test_the_wheel_asks_for_ranges_not_pins(wheel):
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = email.message_from_bytes(archive.read(name))
    requirements = [Requirement(r) for r in metadata.get_all("Requires-Dist")]
    by_name = {_normal(r.name): r for r in requirements if r.marker is None}
    for name in ("tensorflow", "numpy", "scipy", "tensorflow-text", "keras"):
        assert not any(s.operator == "==" for s in by_name[name].specifier), by_name[name]
    matplotlib = [r for r in requirements if _normal(r.name) == "matplotlib"]
    assert matplotlib and all(str(r.marker) == 'extra == "plots"' for r in matplotlib)
    assert metadata["License-Expression"] == "Apache-2.0"


def test_installing_the_wheel_keeps_the_tensorflow_already_installed(wheel, tmp_path):
    # Every dependency is satisfied here, so with no index pip must plan to install
    # albert-tf alone: the TensorFlow of this environment stays.
    report = tmp_path / "report.json"
    planned = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--dry-run", "--no-index",
         "--report", str(report), f"{wheel}[all]"], capture_output=True, text=True, timeout=300)
    assert planned.returncode == 0, planned.stderr[-3000:]
    installs = [item["metadata"]["name"] for item in json.loads(report.read_text())["install"]]
    assert installs == ["albert-tf"]


def test_the_wheel_holds_every_package_and_the_configs(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    for folder, _, files in os.walk(os.path.join(ROOT, "albert_tf")):
        if "__init__.py" in files:
            package = os.path.relpath(folder, ROOT).replace(os.sep, "/")
            assert f"{package}/__init__.py" in names, f"{package} is missing from the wheel"
    assert "albert_tf/tasks/__init__.py" in names and "albert_tf/tasks/squad/evaluate.py" in names
    assert ("albert_tf/configs/models/albert_base.json" in names
            and "albert_tf/configs/from_scratch_recipe.json" in names)
    for folder in os.listdir(os.path.join(ROOT, "tasks")):  # each task type's recipes
        if os.path.isfile(os.path.join(ROOT, "tasks", folder, "recipes.json")):
            assert f"albert_tf/tasks/{folder}/recipes.json" in names, folder
    # One top-level name: no `tasks` or `configs` beside other projects' packages.
    assert {name.split("/")[0] for name in names if ".dist-info/" not in name} == {"albert_tf"}
