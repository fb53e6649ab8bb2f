"""Runs one pytest file as a Bazel py_test: `bazel_pytest.py tests/test_x.py [pytest args]`.

Bazel starts this in the test's runfiles tree (the working directory), which
holds the declared sources and data only; pytest then finds pytest.ini and
tests/conftest.py there as under `make test`. Honours Bazel's test
environment: results go to $XML_OUTPUT_FILE, temporary files under
$TEST_TMPDIR, and `bazel test --test_filter=EXPR` becomes `pytest -k EXPR`.
Extra arguments (`--test_arg=--runslow`) go to pytest.
"""

import os
import sys


def _drop_checkout_from_path():
    # Python puts the real (symlink-resolved) directory of this script first on
    # sys.path: tests/ of the checkout. Imports must come from the runfiles
    # (the declared deps), so that a missing dep fails here as it should.
    here = os.path.dirname(os.path.realpath(__file__))
    if sys.path and sys.path[0] == here and here != os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]


def pytest_args(argv, environ):
    """The pytest command line for `argv` (this script's arguments) under Bazel."""
    args = list(argv)
    tmp = environ.get("TEST_TMPDIR")
    if tmp:
        args.append("--basetemp=" + os.path.join(tmp, "pytest"))
    if environ.get("XML_OUTPUT_FILE"):
        args.append("--junitxml=" + environ["XML_OUTPUT_FILE"])
    if environ.get("TESTBRIDGE_TEST_ONLY"):
        args += ["-k", environ["TESTBRIDGE_TEST_ONLY"]]
    return args


def main(argv):
    if not argv:
        sys.exit("usage: bazel_pytest.py TEST_FILE [PYTEST_ARGS...]")
    _drop_checkout_from_path()
    # Bazel leaves HOME unset in tests; keep ~/.keras and other caches out of
    # the real home directory.
    if os.environ.get("TEST_TMPDIR") and not os.environ.get("HOME"):
        os.environ["HOME"] = os.environ["TEST_TMPDIR"]
    import pytest

    return pytest.main(pytest_args(argv, os.environ))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
