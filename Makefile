# `make test` and `make demo` set up a virtual environment from the pinned
# requirements on first use, then run.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# albert_tf itself is installed editable, so that `albert-tf` and every
# `python -m albert_tf.<command>` work from any folder once .venv is activated.
$(STAMP): requirements.txt requirements-test.txt requirements-serve.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt -r requirements-test.txt
	$(PY) -m pip install -q --no-deps -r requirements-serve.txt  # why: requirements-serve.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $(STAMP)

BENCH_VENV ?= .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed

$(BENCH_STAMP): requirements.txt bench/requirements-bench.txt
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install -q --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install -q -r requirements.txt -r bench/requirements-bench.txt
	touch $(BENCH_STAMP)

# The lowest supported versions (constraints-lowest.txt): the fast model, tokenizer
# and export tests on them, in a virtual environment of their own.
LOW_VENV ?= .venv-lowest
LOW_STAMP := $(LOW_VENV)/.installed
LOWEST_TESTS := tests/test_backbone.py tests/test_models.py tests/test_sharing.py \
	tests/test_config.py tests/test_tokenizer.py tests/test_tokenizer_packing.py \
	tests/test_wordpiece.py tests/test_checkpoints.py tests/test_export.py

$(LOW_STAMP): constraints-lowest.txt pyproject.toml requirements-test.txt
	$(PYTHON) -m venv $(LOW_VENV)
	$(LOW_VENV)/bin/python -m pip install -q --upgrade pip
	$(LOW_VENV)/bin/python -m pip install -q -c constraints-lowest.txt -e . \
		-r requirements-test.txt
	touch $(LOW_STAMP)

# The phone runtimes (tests/test_mobile_runtimes.py): MediaPipe in .venv (requirements.txt),
# the TFLite Task Library's BertQuestionAnswerer in a virtual environment of its own
# (requirements-mobile.txt says why).
MOBILE_VENV ?= .venv-mobile
MOBILE_STAMP := $(MOBILE_VENV)/.installed

$(MOBILE_STAMP): requirements-mobile.txt
	$(PYTHON) -m venv $(MOBILE_VENV)
	$(MOBILE_VENV)/bin/python -m pip install -q --no-deps -r requirements-mobile.txt
	touch $(MOBILE_STAMP)

.PHONY: setup test test-budget test-all test-lowest test-mobile demo bench web-deps
setup: $(STAMP)

# Test files are spread over TEST_WORKERS processes (pytest-xdist), a file's tests kept
# together so that its module fixtures are built once.
# Two, one per core: session fixtures are built once per worker that needs them, so
# more workers cost more CPU (four: 831 s counted against two's 716 s on a 2-core AMD
# EPYC; on a 2-core Xeon four were also slower, 11 min 19 s against 10 min 38 s).
TEST_WORKERS ?= 2

test: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

# The default tier with its CPU budget (tests/budget.py) enforced: a benchmark of the
# tier on a host the budget was measured for; `make test` reports the total only.
test-budget: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --enforce_cpu_budget

test-all: $(STAMP)
	$(PY) -m pytest -q --runslow

test-lowest: $(LOW_STAMP)
	$(LOW_VENV)/bin/python -m pytest -q $(LOWEST_TESTS)

test-mobile: $(STAMP) $(MOBILE_STAMP) node_modules/.package-lock.json
	ALBERT_TF_TASK_LIBRARY_PYTHON=$(abspath $(MOBILE_VENV))/bin/python \
		$(PY) -m pytest -q --runslow tests/test_mobile_runtimes.py

demo: $(STAMP)
	$(PY) -m albert_tf.finetune --task=squad --demo --output_dir=runs/demo_squad

# Benchmarks against keras-hub and PyTorch transformers (installed only here).
bench: $(BENCH_STAMP)
	PYTHONPATH=. $(BENCH_VENV)/bin/python bench/run_all.py

# The browser runtime of `albert-tf export --web` (LiteRT.js, SentencePiece
# WebAssembly) and the headless-Chromium test driver, pinned by
# package-lock.json; export copies the runtime files from node_modules.
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --ignore-scripts --no-audit --no-fund

web-deps: node_modules/.package-lock.json
