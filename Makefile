# Two commands set up everything on a fresh machine: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev

.PHONY: run test install install-dev bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -U pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $(STAMP)

$(DEVSTAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP) $(DEVSTAMP)

install: $(STAMP)
install-dev: $(DEVSTAMP)

run: $(STAMP)
	$(BIN)/kafka-rebalance demo

test: $(DEVSTAMP)
	@bash scripts/ensure-chromium.sh
	$(BIN)/python -m pytest

bench: $(DEVSTAMP)
	$(BIN)/python bench/assignors.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info
