# `make test` and `make demo` set up a virtual environment from the pinned
# requirements on first use, then run.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

$(STAMP): requirements.txt requirements-test.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt -r requirements-test.txt
	touch $(STAMP)

.PHONY: setup test test-all demo
setup: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q

test-all: $(STAMP)
	$(PY) -m pytest -q --runslow

demo: $(STAMP)
	$(PY) -m albert_tf.finetune --task=squad --demo --output_dir=runs/demo_squad
