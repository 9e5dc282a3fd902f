"""bench/_machine.py: every benchmark header says whether the compiled kernels ran (review F9)."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiled_legs import from_source
from kafka_rebalance.assign import kernels, kernels_heterogeneous, kernels_sticky
from kafka_rebalance.sim import compiled

MACHINE = from_source(
    Path(__file__).resolve().parents[1] / "bench" / "_machine.py", "bench_machine"
)


def test_the_machine_line_says_how_the_kernels_ran() -> None:
    states = [
        kernels.is_compiled(),
        kernels_heterogeneous.is_compiled(),
        kernels_sticky.is_compiled(),
        compiled.is_compiled(),
    ]
    line = MACHINE.machine()
    if all(states):
        assert line.endswith("; kernels: compiled (mypyc)")
    elif not any(states):
        assert line.endswith("; kernels: pure Python (no fresh compiled build)")
    else:
        assert "pure" in line and "compiled" in line
    assert "Python " in line and "CPUs" in line


def test_a_stale_build_is_reported_as_pure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernels_sticky, "is_compiled", lambda: False)
    monkeypatch.setattr(compiled, "is_compiled", lambda: True)
    monkeypatch.setattr(kernels, "is_compiled", lambda: True)
    monkeypatch.setattr(kernels_heterogeneous, "is_compiled", lambda: True)
    assert MACHINE.kernels() == (
        "kernels: assign/kernels.py compiled, assign/kernels_heterogeneous.py compiled, "
        "assign/kernels_sticky.py pure, sim/poll_kernels.py compiled"
    )
