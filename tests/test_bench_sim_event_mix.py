"""bench/sim_event_mix.py counts every engine event once, and names messages by their kind."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def mix():
    spec = importlib.util.spec_from_file_location("sim_event_mix", BENCH / "sim_event_mix.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("case", ["rolling-eager", "rolling-consumer"])
def test_every_event_is_counted_once(mix, case):
    counts, row = mix.event_mix(case, 6)
    assert sum(counts.values()) == row["events"] > 0
    kinds = set(counts)
    if case == "rolling-eager":
        assert {"ClassicCoordinator.receive join", "ClassicCoordinator.receive sync"} <= kinds
    else:
        assert "ConsumerCoordinator.receive cheartbeat" in kinds
        assert any(k.endswith("(changes nothing)") for k in kinds)
        assert any(k.endswith("(changes)") for k in kinds)


def test_the_simulator_gets_its_engine_back(mix):
    from kafka_rebalance.sim import world, world_core

    engine, init = world_core.ENGINE, world.Simulation.__init__
    mix.event_mix("rolling-eager", 4)
    assert world_core.ENGINE is engine and world.Simulation.__init__ is init
