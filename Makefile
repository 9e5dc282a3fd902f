# Two commands set up everything on a fresh machine: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev

.PHONY: run test lint install install-dev bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -U pip

# setup.py compiles the modules of its COMPILED list with mypyc and its CYTHON list with Cython
# (optional): rebuild when one of them changes (KERNELS lists the same files;
# tests/test_build_clean.py checks), and the .pxd files they cimport. A build is used only when its
# stamp matches its source (a Cython build's: its .pyx and the .pxd files it read).
KERNELS := setup.py src/kafka_rebalance/cython_deps.py $(wildcard src/kafka_rebalance/*/*.pxd) src/kafka_rebalance/model_fields.py $(wildcard src/kafka_rebalance/assign/kernels*.py) src/kafka_rebalance/assign/sticky_general.py src/kafka_rebalance/sim/poll_kernels.py src/kafka_rebalance/sim/engine.py src/kafka_rebalance/group/classic_member.py src/kafka_rebalance/group/classic_group_base.py src/kafka_rebalance/group/classic_group_join.py src/kafka_rebalance/group/classic_group.py src/kafka_rebalance/group/consumer_group_values.py src/kafka_rebalance/group/consumer_group_model.py src/kafka_rebalance/group/consumer_group_reconcile.py src/kafka_rebalance/group/consumer_group_target.py src/kafka_rebalance/group/consumer_group_tx.py src/kafka_rebalance/group/consumer_group_steady.py src/kafka_rebalance/group/consumer_group.py src/kafka_rebalance/group/consumer_group_member.py src/kafka_rebalance/sim/coordinator.py src/kafka_rebalance/sim/member_rebalance.py src/kafka_rebalance/sim/member.py src/kafka_rebalance/sim/world_core.py src/kafka_rebalance/sim/world.py src/kafka_rebalance/sim/consumer_world.py src/kafka_rebalance/assign/uniform_native.pyx src/kafka_rebalance/assign/uniform_native_plan.pyx src/kafka_rebalance/assign/uniform_native_balance.pyx src/kafka_rebalance/assign/range_native.pyx src/kafka_rebalance/sim/native_engine.pyx src/kafka_rebalance/sim/native_members.pyx src/kafka_rebalance/sim/native_books.pyx src/kafka_rebalance/sim/native_batch_time.pyx src/kafka_rebalance/sim/native_group_core.pyx src/kafka_rebalance/sim/native_group_handlers.pyx src/kafka_rebalance/sim/native_group.pyx src/kafka_rebalance/sim/native_member_messages.pyx src/kafka_rebalance/sim/native_world_client.pyx src/kafka_rebalance/sim/native_world_member.pyx src/kafka_rebalance/sim/native_world_base.pyx src/kafka_rebalance/sim/native_world.pyx src/kafka_rebalance/sim/native_coordinator.pyx

$(STAMP): pyproject.toml $(KERNELS) | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $(STAMP)

$(DEVSTAMP): pyproject.toml $(KERNELS) | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP) $(DEVSTAMP)

install: $(STAMP)
install-dev: $(DEVSTAMP)

run: $(STAMP)
	$(BIN)/kafka-rebalance demo

# ruff (lint and format) and mypy first: seconds, before minutes of tests.
lint: $(DEVSTAMP)
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/ruff format --check .  # README's and docs' Python blocks too (ruff formats Markdown)
	$(BIN)/mypy

# When the install built the compiled modules (their stamps exist), the compiled legs of the tests
# must run: KAFKA_REBALANCE_REQUIRE_COMPILED=1 turns their skips into failures.
test: lint
	@bash scripts/ensure-chromium.sh
	@ls src/kafka_rebalance/*/*.build-sha256 >/dev/null 2>&1 || echo "note: the compiled kernels were not built (pip install -v -e . says why): their compiled test legs skip"
	KAFKA_REBALANCE_REQUIRE_COMPILED=$$(ls src/kafka_rebalance/*/*.build-sha256 >/dev/null 2>&1 && echo 1) \
	  $(BIN)/python -m pytest

# Assignors beside Kafka's Java assignors (../shared/java-assignors), both in one run, table into
# BENCHMARKS.md (skipped, saying so, without the harness or a JDK). Cases 1-3: 20 alternating runs
# per side; 4-5 (a million partitions) take minutes: `make bench BENCH_CASES=1,2,3` for a quick run.
BENCH_CASES ?= 1,2,3,4,5
# The simulator's table (bench/simulate.py, into BENCHMARKS.md): every protocol's rolling restart at
# each group size; the 1,000-member runs take minutes each: `make bench BENCH_SIM_MEMBERS=100,300`.
BENCH_SIM_MEMBERS ?= 100,300,1000
bench: $(DEVSTAMP)
	$(BIN)/python bench/assignors.py --cases $(BENCH_CASES)
	$(BIN)/python bench/simulate.py --members $(BENCH_SIM_MEMBERS) --update-benchmarks

clean:
	rm -rf $(VENV) build dist src/*.egg-info src/*__mypyc*
	find src/kafka_rebalance \( -name '*.so' -o -name '*.pyd' -o -name '*.build-sha256' \) -delete
