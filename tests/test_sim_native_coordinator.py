"""The native coordinator node (sim/native_coordinator.pyx) in the core="native" runs.

tests/test_sim_native_fingerprints.py checks that a claimed run is the reference's; these check that
the coordinator that ran it is the native one (not a silent fallback to `ClassicCoordinator`), that
what it keeps beside the fingerprint (the offsets store, the routing table) is the reference's, and
that it refuses, rather than guesses, what `classic_native.native_support` does not claim. Without
the native build the tests skip (fail under KAFKA_REBALANCE_REQUIRE_COMPILED=1).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sim_fingerprint_set as fps  # noqa: E402
from kafka_rebalance import native  # noqa: E402
from kafka_rebalance.group.classic_messages import HeartbeatRequest  # noqa: E402
from kafka_rebalance.sim import classic_native  # noqa: E402
from kafka_rebalance.sim.api import simulate_scenario  # noqa: E402
from kafka_rebalance.sim.coordinator import ClassicCoordinator  # noqa: E402
from kafka_rebalance.sim.scenario import SimEvent, parse_simulation_scenario  # noqa: E402
from kafka_rebalance.sim.world import Simulation  # noqa: E402
from sim_native_runs import native_coordinator_module  # noqa: E402

SCENARIOS = dict(fps.scenarios())
CLAIMED = sorted(
    {
        "rolling-range",
        "rolling-roundrobin",
        "rolling-range-40",
        "example-rolling-restart-seed1",
        "example-rolling-restart-seed7",
        # M3 (session 16): sticky and cooperative-sticky
        "rolling-sticky",
        "rolling-cooperative-sticky",
        "rolling-cooperative-sticky-40",
    }
)


def _run(name: str, core: str) -> tuple[Any, Any]:
    worlds: list[Any] = []
    sc = parse_simulation_scenario(SCENARIOS[name])
    res = simulate_scenario(sc, collect_events=False, core=core, on_world=worlds.append)
    return res, worlds[0]


@pytest.mark.parametrize("name", CLAIMED)
def test_the_native_coordinator_runs_the_claimed_scenarios(name):
    """The coordinator of a core="native" run is the native one, and what it keeps beside the
    fingerprint equals the reference coordinator's: the offsets store (every record appended, the
    committed offsets with their times, the last GroupMetadata) and the member routing table."""
    mod = native_coordinator_module()
    nat, nw = _run(name, "native")
    ref, rw = _run(name, "reference")
    assert nat.core == "native" and ref.core == "reference"
    assert type(nw.coord) is mod.NativeCoordinator
    assert type(rw.coord) is ClassicCoordinator
    assert nat.summary == ref.summary and nat.simulated_events == ref.simulated_events
    # the group twin did the work: its generation is the reference group's
    assert nw.coord.group.generation_id == rw.coord.group.generation_id > 0
    assert nw.coord.store.records_appended == rw.coord.store.records_appended > 0
    # in the same order too (the native coordinator keeps its commits in C until the store is read)
    assert list(nw.coord.store.offsets.items()) == list(rw.coord.store.offsets.items())
    assert nw.coord.store.group == rw.coord.store.group
    assert nw.coord.by_member_id == rw.coord.by_member_id
    assert nw.coord.hb_history == rw.coord.hb_history
    assert nw.coord.muted == {} and not rw.coord.muted
    assert nw.coord.up and nw.coord.up_at == rw.coord.up_at == 0
    assert nw.coord.needs_real_heartbeats() == rw.coord.needs_real_heartbeats()


def _store_reads(name: str, core: str) -> list[tuple]:
    """The offsets store read every 7,001 ms of simulated time during the run: its records so far,
    its offsets with their times in the dict's order, its last GroupMetadata."""
    reads: list[tuple] = []
    sc = parse_simulation_scenario(SCENARIOS[name])

    def read(world: Any) -> None:
        store = world.coord.store
        reads.append(
            (world.loop.now, store.records_appended, list(store.offsets.items()), store.group)
        )

    def every(world: Any) -> None:
        for t in range(7_001, sc.duration_ms, 7_001):
            world.loop.at(t, read, world)

    simulate_scenario(sc, collect_events=False, core=core, on_world=every)
    return reads


@pytest.mark.parametrize("name", ["rolling-cooperative-sticky-40", "rolling-range"])
def test_the_store_read_during_the_run_is_the_references(name):
    """The native coordinator keeps a native member's commits in C columns and puts them into the
    store when it is read: read at any time, the store is the reference's, records, times and the
    offsets dict's insertion order included."""
    native_coordinator_module()
    nat = _store_reads(name, "native")
    ref = _store_reads(name, "reference")
    assert len(nat) == len(ref) > 10
    assert any(offsets for _, _, offsets, _ in nat[:3])  # read while commits were still coming
    assert nat == ref


@pytest.mark.parametrize(
    "name", ["rolling-range-40", "example-rolling-restart-seed7", "rolling-cooperative-sticky-40"]
)
def test_it_runs_in_the_reference_world_too(name):
    """Beside the reference's members and world (`world.Simulation`, its calls through Python), the
    native coordinator gives the reference's run: event rows, summary and event count."""
    mod = native_coordinator_module()
    sc = parse_simulation_scenario(SCENARIOS[name])
    rows: list[dict] = []
    w = Simulation(sc, rows.append)
    w.coord = mod.NativeCoordinator(w)
    summary = w.run()
    ref = simulate_scenario(sc, collect_events=True, core="reference")
    assert type(w.coord) is mod.NativeCoordinator
    assert rows == ref.events and summary == ref.summary
    assert w.loop.processed == ref.simulated_events


def _world(**changes: Any) -> Simulation:
    sc = parse_simulation_scenario(SCENARIOS["rolling-range"])
    group = changes.pop("group", {})
    return Simulation(replace(sc, group=replace(sc.group, **group), **changes))


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"group": {"static_membership": True}}, "static membership"),
        ({"group": {"assignors": ("uniform",)}}, "assignor uniform"),
        ({"group": {"group_max_size": 10}}, "group_max_size"),
        ({"log_append_ms": (1, 2, 3)}, "log_append_ms"),
        ({"group": {"heartbeat_interval_ms": 0}}, "heartbeat_interval_ms 0"),
        (
            {"events": (SimEvent(at_ms=1000, kind="coordinator_failover", down_ms=500),)},
            "coordinator_failover events",
        ),
    ],
)
def test_what_it_does_not_handle_is_refused(changes, why):
    mod = native_coordinator_module()
    w = _world(**changes)
    assert mod.refusal(w.sc) == why
    with pytest.raises(NotImplementedError, match=why):
        mod.NativeCoordinator(w)


def test_a_consumer_protocol_world_is_refused():
    mod = native_coordinator_module()
    sc = parse_simulation_scenario(SCENARIOS["rolling-range"])
    assert mod.refusal(replace(sc, protocol="consumer")) == "protocol consumer"


def test_failover_and_unknown_requests_are_refused():
    mod = native_coordinator_module()
    c = mod.NativeCoordinator(_world())
    with pytest.raises(NotImplementedError, match="failover"):
        c.failover(1000)
    with pytest.raises(ValueError, match="offset_fetch"):
        c.receive("offset_fetch", HeartbeatRequest("a#0", "", -1), "a")


def test_a_stale_coordinator_build_is_a_reason(monkeypatch):
    """The claim needs the coordinator's build too: without it the reference runs, and says why."""
    native_coordinator_module()
    real = native.cython_build

    def without_coordinator(package: str, name: str) -> Any:
        return None if name == "native_coordinator" else real(package, name)

    monkeypatch.setattr(native, "cython_build", without_coordinator)
    sc = parse_simulation_scenario(SCENARIOS["rolling-range"])
    reason = classic_native.native_support(sc)
    assert reason is not None and "native_coordinator" in reason
    res = simulate_scenario(sc, collect_events=False, core="auto")
    assert res.core == "reference" and res.core_reason == reason
