"""Shared test setup: quiet TensorFlow, fixture paths, the slow tier, the budget."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# One thread per TensorFlow op in the test processes and the commands they start:
# the tier's workers already keep every core busy (Makefile's TEST_WORKERS), and
# each op spreading over all cores as well only makes the processes contend.
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")
# MLflow's usage reports: a thread that posts to the internet (none here), with
# retries that MLflow's flush waits for; tests stay on this machine.
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

import pytest  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
REFERENCE_MODELS = os.path.join(FIXTURES, "reference_models")
SHARED = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "shared"))

# budget.py: the default tier's CPU budget; pytester: for test_budget.py.
pytest_plugins = ("budget", "pytester")


@pytest.fixture(scope="session")
def spm_tokenizer():
    """The fixture SentencePiece model's `AlbertTokenizer`, shared by the test files:
    a new one takes seconds to build and to run for the first time."""
    from albert_tf.tokenizer import AlbertTokenizer

    return AlbertTokenizer(os.path.join(FIXTURES, "spm", "albert_30k_clean.model"))


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory, monkeypatch):
    """Each test its own `$ALBERT_TF_CACHE`: the execution probe's measurements
    kept there by one test (or by the user's own runs) must not decide another's."""
    monkeypatch.setenv("ALBERT_TF_CACHE", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.delenv("ALBERT_TF_PROBES_FILE", raising=False)


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run the slow end-to-end tests")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: end-to-end tests, run with --runslow")
    config.addinivalue_line("markers", "shared: needs ../shared (skipped without it)")


def pytest_collection_modifyitems(config, items):
    run_slow = config.getoption("--runslow") or os.environ.get("ALBERT_TF_RUN_SLOW") == "1"
    skip_slow = pytest.mark.skip(reason="slow; run with --runslow")
    skip_shared = pytest.mark.skip(reason=f"{SHARED} not present")
    for item in items:
        if "slow" in item.keywords and not run_slow:
            item.add_marker(skip_slow)
        if "shared" in item.keywords and not os.path.isdir(SHARED):
            item.add_marker(skip_shared)
