"""bench/native_polls.py: its three drivers (poll_kernels, the native arrays through C calls and
through their Python-level methods) do the same polls: the same positions, sent offsets, batches,
duplicates and processed intervals. The C-call driver is the one caller of native_members' C-level
API (the `.pxd`) until the native world exists."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from compiled_legs import no_compiled_leg, require_build
from kafka_rebalance import native
from kafka_rebalance.sim import compiled

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def bench() -> Any:
    if importlib.util.find_spec("Cython") is None:
        # a skip, or under KAFKA_REBALANCE_REQUIRE_COMPILED=1 a failure (review 8 F7): the only test
        # of native_members' C-level API must not vanish from a compiled run
        no_compiled_leg("the driver is Cython (pip install -e '.[dev]')")
    spec = importlib.util.spec_from_file_location("native_polls_bench", BENCH / "native_polls.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_three_drivers_make_the_same_polls(bench: Any) -> None:
    nm = require_build("native_members")
    if not native.is_compiled(compiled.KERNELS):
        no_compiled_leg("poll_kernels is not compiled: the benchmark compares with its build")
    driver = bench.build("native_polls")
    states = [
        bench.run(driver, nm, 30, 4, which)[1]
        for which in ("poll_kernels", "native (C calls)", "native (Python-level methods)")
    ]
    dup, positions, sent, batches, done = states[0]
    assert all(pos > 0 for member in positions for pos in member.values())  # records were fetched
    assert any(batches) and any(starts for starts, _ in done)
    assert states[1] == states[0]
    assert states[2] == states[0]
