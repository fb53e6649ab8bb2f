"""albert_tf installs like a Python package: its console script runs from any folder."""

import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.skipif(importlib.util.find_spec("setuptools") is None,
                    reason="building the package offline needs setuptools in this environment")
def test_the_installed_package_runs_its_console_script_from_another_folder(tmp_path):
    # Built from a copy: an in-tree build would leave build/ in the checkout.
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv*", "bazel-*", "build", "runs", "__pycache__", "*.egg-info", "tests"))
    site = tmp_path / "site"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--target", str(site), str(source)], capture_output=True, text=True, timeout=300,
        cwd=tmp_path)
    assert build.returncode == 0, build.stderr[-3000:]
    script = site / "bin" / "albert-tf"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ, PYTHONPATH=str(site), TF_CPP_MIN_LOG_LEVEL="2")
    where = subprocess.run([sys.executable, "-c", "import albert_tf.tasks; "
                            "print(albert_tf.__file__); print(albert_tf.tasks.__file__)"],
                           capture_output=True, text=True, cwd=elsewhere, env=env, timeout=60)
    assert where.stdout.split() == [str(site / "albert_tf" / "__init__.py"),
                                    str(site / "albert_tf" / "tasks" / "__init__.py")], where.stderr
    # One top-level name of the project's own (and its console script, metadata).
    assert sorted(p.name for p in site.iterdir() if not p.name.endswith(".dist-info")) == [
        "albert_tf", "bin"]
    # The presets travel with the package (configs/), so a preset resolves.
    report = subprocess.run([str(script), "inspect", "--model=albert_base", "--seq_length=128"],
                            capture_output=True, text=True, cwd=elsewhere, env=env, timeout=120)
    assert report.returncode == 0, report.stderr[-3000:]
    assert "11,683,584" in report.stdout  # albert-base's unique parameters, all shared
    unknown = subprocess.run([str(script), "finetun"], capture_output=True, text=True,
                             cwd=elsewhere, env=env, timeout=60)
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("albert-tf: error: unknown command 'finetun'; commands: ")


@pytest.mark.skipif(importlib.util.find_spec("setuptools") is None,
                    reason="reading the metadata needs setuptools in this environment")
def test_the_package_metadata_reads_without_deprecation_warnings():
    import warnings

    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist = apply_configuration(Distribution(), os.path.join(ROOT, "pyproject.toml"))
    assert [str(w.message).splitlines()[0] for w in caught] == []
    assert dist.metadata.name == "albert-tf"
    assert "Apache-2.0" in (dist.metadata.license_expression or dist.metadata.license or "")


def test_the_folder_above_a_clone_named_albert_tf_gets_a_clear_message(tmp_path):
    """From the folder above a clone called albert_tf, `import albert_tf` finds the
    clone: not a namespace package without attributes, but one line saying why."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.symlink(root, tmp_path / "albert_tf")
    done = subprocess.run([sys.executable, "-c", "import albert_tf; albert_tf.load_tokenizer"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ImportError: {tmp_path / 'albert_tf'} is a clone of albert_tf's "
                           "repository, found because Python runs in the folder above it"), last
