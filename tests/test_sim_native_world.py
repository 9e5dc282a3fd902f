"""The native world (`sim/native_world.pyx`, docs/sim-native.md M2) against the reference world.

`NativeWorld` is `world_core.WorldCore` + `world.Simulation` as a Cython class over `native_books`
(books and arrivals by member index) and `native_members` (the partition table's columns and
processed intervals, each member's owned partitions). Here it runs the claimed fingerprint
scenarios with the native members and the native coordinator (which stores a native member's
commits, `native_members.Triples`, into the world's committed column), and every event row, the
summary, the event count, the paused time per member, the partition table and each member's
partitions, positions and sent offsets must be the reference's. `WorldBase` (the interface members and the
coordinator call) refuses every call itself. Without the builds the tests skip (fail under
KAFKA_REBALANCE_REQUIRE_COMPILED=1).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sim_fingerprint_set as fps  # noqa: E402
from compiled_legs import require_build
from kafka_rebalance.sim.scenario import parse_simulation_scenario  # noqa: E402

KNOWN = json.loads(fps.FINGERPRINTS.read_text())
SCENARIOS = dict(fps.scenarios())
M2 = (
    "rolling-range",
    "rolling-roundrobin",
    "rolling-range-40",
    "example-rolling-restart-seed1",
    "example-rolling-restart-seed7",
)
M3 = ("rolling-sticky", "rolling-cooperative-sticky", "rolling-cooperative-sticky-40")


def _build(name: str):
    return require_build(name)


def _world(sc, sink):
    world = _build("native_world")
    member = _build("native_world_member")
    coordinator = _build("native_coordinator")
    return world.NativeWorld(sc, sink, member.NativeMember, coordinator.NativeCoordinator)


def _run(sc, world):
    events: list[dict] = []
    w = world(sc, events.append)
    summary = w.run()
    return events, summary, w.loop.processed, dict(w.paused_by_member), w


def _fingerprint(events, summary, simulated) -> str:
    h = hashlib.sha256()
    for ev in events:
        h.update(json.dumps(ev, sort_keys=True, separators=(",", ":")).encode())
        h.update(b"\n")
    h.update(json.dumps(summary, sort_keys=True, separators=(",", ":")).encode())
    h.update(f"\n{simulated}".encode())
    return h.hexdigest()


@pytest.mark.parametrize("name", M2 + M3)
def test_the_native_world_gives_the_fingerprint(name):
    sc = parse_simulation_scenario(SCENARIOS[name])
    events, summary, simulated, _, w = _run(sc, _world)
    assert type(w).__name__ == "NativeWorld"
    assert type(next(iter(w.members.values()))).__name__ == "NativeMember"
    assert _fingerprint(events, summary, simulated) == KNOWN[name]


def test_rows_summary_counts_and_pauses_equal_the_reference():
    from kafka_rebalance.sim.world import Simulation

    sc = parse_simulation_scenario(SCENARIOS["example-rolling-restart-seed1"])
    nat = _run(sc, _world)
    ref = _run(sc, Simulation)
    assert nat[:4] == ref[:4]
    assert nat[3]  # members paused: the per-member books were exercised
    assert nat[4].events_emitted == ref[4].events_emitted
    assert nat[4].rng.getstate() == ref[4].rng.getstate()


@pytest.mark.parametrize(
    "name",
    [
        "rolling-range-40",
        "example-rolling-restart-seed7",
        "rolling-cooperative-sticky-40",
        "rolling-sticky",
    ],
)
def test_the_partition_table_and_the_members_partitions_equal_the_reference(name):
    """At the end of a run, the C columns and intervals hold the reference table's committed
    offsets and processed intervals, and each member's C arrays its owned list, positions and the
    sent offsets of its owned partitions (the reference's dict may keep others: never read); its
    assignors' state (sticky's memory, cooperative-sticky's generation) is the reference member's."""
    from kafka_rebalance.sim.world import Simulation

    sc = parse_simulation_scenario(SCENARIOS[name])
    nat, ref = _world(sc, None), Simulation(sc, None)
    assert nat.run() == ref.run()
    n = len(ref.parts)
    assert nat.cols.column("committed") == ref.parts.committed
    assert any(ref.parts.committed)
    for p in range(n):
        po = ref.parts.processed[p]
        assert nat.processed_table.intervals(p) == (po.starts, po.ends)
    assert nat.processed_table.lost(nat.cols) >= 0
    owning = 0
    for name_, rm in ref.members.items():
        nm = nat.members[name_]
        assert nm.owned == rm.owned
        assert nm.positions == rm.positions
        assert nm.sent_offsets == {p: o for p, o in rm.sent_offsets.items() if p in rm.owned}
        assert nm.sticky_memory == rm.sticky_memory
        assert nm.coop_generation == rm.coop_generation
        assert (nm.generation, nm.member_id, nm.state) == (rm.generation, rm.member_id, rm.state)
        owning += bool(rm.owned)
    assert owning  # some member owned partitions at the end
    if sc.group.assignors[0] == "sticky":
        assert all(m.sticky_memory for m in ref.members.values())
    if sc.group.assignors[0] == "cooperative-sticky":
        assert all(m.coop_generation > 0 for m in ref.members.values())
        assert ref.revocations == nat.books.revocations > 0


def test_without_a_sink_the_summary_is_the_same():
    from kafka_rebalance.sim.world import Simulation

    sc = parse_simulation_scenario(SCENARIOS["rolling-range"])
    nat, ref = _world(sc, None), Simulation(sc, None)
    assert nat.run() == ref.run()
    assert nat.loop.processed == ref.loop.processed
    assert nat.events_emitted == ref.events_emitted


def test_an_unclaimed_event_is_refused():
    from dataclasses import replace

    from kafka_rebalance.sim.scenario import SimEvent

    sc = parse_simulation_scenario(SCENARIOS["rolling-range"])
    sc = replace(sc, events=(SimEvent(at_ms=10, kind="crash", member=sc.members[0].name),))
    with pytest.raises(NotImplementedError, match="crash events"):
        _world(sc, None).run()


def test_the_base_class_refuses_every_call():
    base = _build("native_world_base").WorldBase()
    calls = {
        "emit": ("start",),
        "draw": ((1,),),
        "send": (None, "join", None),
        "to_coordinator": ("heartbeat", None, "a"),
        "reply": ("a#1", "join", None),
        "reply_many": ([],),
        "commit": (None, {}, "auto"),
        "on_generation": (1,),
        "leader_assign": (None, None),
        "send_leave": (None, "leave", None),
        "coordinator_retry_time": (0, 1),
        "group_needs_heartbeats": (),
        "partition_counts": (),
        "set_available_many": ([], 0, "a"),
        "set_unavailable_many": ([], 0),
        "add_paused": (None, 1),
        "revoke": (None, [], "close"),
        "lose": (None, [], "close"),
        "assigned": (None, [], []),
        "add_processed": (1, 0),
    }
    for name, args in calls.items():
        with pytest.raises(NotImplementedError, match=f"WorldBase.{name}"):
            getattr(base, name)(*args)


def test_a_partition_table_beyond_int64_is_named():
    """The C columns refuse a run whose log end offsets could leave int64 (the reference's ints do
    not wrap): `partition_range_refusal` names it before a world is built, and building one raises."""
    from dataclasses import replace

    world = _build("native_world")
    sc = parse_simulation_scenario(SCENARIOS["rolling-range"])
    assert world.partition_range_refusal(sc) is None
    topic = replace(sc.topics[0], produce_rate=1e12)
    big = replace(sc, topics=(topic,), duration_ms=2**44)
    assert "beyond int64" in world.partition_range_refusal(big)
    with pytest.raises(OverflowError):
        _world(big, None)
