"""bench/_machine.py: every benchmark header says whether the compiled kernels ran (review F9),
for every module setup.py compiles (its COMPILED list is the one list)."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiled_legs import from_source
from kafka_rebalance import native
from kafka_rebalance.assign import kernels, kernels_heterogeneous, kernels_sticky, sticky_general
from kafka_rebalance.sim import compiled

ROOT = Path(__file__).resolve().parents[1]
MACHINE = from_source(ROOT / "bench" / "_machine.py", "bench_machine")
SETUP = from_source(ROOT / "setup.py", "setup_for_machine")


def test_the_list_is_setup_pys() -> None:
    assert MACHINE.compiled_sources() == SETUP.COMPILED


def test_each_module_is_reported_as_the_loader_runs_it() -> None:
    by_source = {
        "src/kafka_rebalance/assign/kernels.py": kernels.is_compiled(),
        "src/kafka_rebalance/assign/kernels_heterogeneous.py": kernels_heterogeneous.is_compiled(),
        "src/kafka_rebalance/assign/kernels_sticky.py": kernels_sticky.is_compiled(),
        "src/kafka_rebalance/assign/sticky_general.py": native.is_compiled(sticky_general),
        "src/kafka_rebalance/sim/poll_kernels.py": compiled.is_compiled(),
    }
    for source, state in by_source.items():
        assert MACHINE.runs_compiled(source) == state, source


def test_the_machine_line_says_how_the_kernels_ran() -> None:
    states = [MACHINE.runs_compiled(s) for s in SETUP.COMPILED]
    line = MACHINE.machine()
    if all(states):
        assert line.endswith("; kernels: compiled (mypyc)")
    elif not any(states):
        assert line.endswith("; kernels: pure Python (no fresh compiled build)")
    else:
        assert "pure" in line and "compiled" in line
    assert "Python " in line and "CPUs" in line


def test_a_stale_build_is_reported_as_pure(monkeypatch: pytest.MonkeyPatch) -> None:
    stale = "src/kafka_rebalance/assign/kernels_sticky.py"
    monkeypatch.setattr(MACHINE, "runs_compiled", lambda source: source != stale)
    line = MACHINE.kernels()
    assert "assign/kernels_sticky.py pure" in line
    for other in SETUP.COMPILED:
        if other != stale:
            assert f"{other.removeprefix('src/kafka_rebalance/')} compiled" in line


def test_no_build_at_all_is_pure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MACHINE, "runs_compiled", lambda source: False)
    assert MACHINE.kernels() == "kernels: pure Python (no fresh compiled build)"
