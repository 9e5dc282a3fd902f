"""Eager "sticky" is sticky in the simulator as in Kafka: through StickyAssignor's user data.

An eager member revokes everything before it joins (ConsumerCoordinator.onJoinPrepare), so the
protocol's owned-partitions field is empty; StickyAssignor.subscriptionUserData() carries the
assignment it last received (onAssignment) and that generation, and the leader's
StickyAssignor.memberData() reads both from there. A restarted consumer is a new instance: no user
data. Before this was modelled, a rolling restart under eager sticky moved as much as roundrobin.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from kafka_rebalance import native
from kafka_rebalance.sim import world_core as sim_world
from kafka_rebalance.sim.api import simulate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sim_fingerprint_set import rolling  # noqa: E402
from sim_native_runs import require_native_build  # noqa: E402

MEMBERS = 12  # 120 partitions, 10 each


def _assignments(res) -> list[tuple[int, str, int, set[str]]]:
    """(event index, member, generation, partitions) of every `assigned` event."""
    return [
        (i, e["member"], e["generation"], set(e["partitions"]))
        for i, e in enumerate(res.events)
        if e["kind"] == "assigned"
    ]


def test_a_rolling_restart_under_eager_sticky_moves_only_what_leaves_and_comes_back() -> None:
    res = simulate(rolling(MEMBERS, ["sticky"]), collect_events=True)
    # each restart: the leaver's 10 partitions go to the others, then 10 come back to it
    assert res.summary["partitions_moved"] == 2 * 10 * MEMBERS
    rr = simulate(rolling(MEMBERS, ["roundrobin"]), collect_events=False)
    assert rr.summary["partitions_moved"] > 5 * res.summary["partitions_moved"]


def test_a_member_that_only_rejoins_keeps_or_extends_its_partitions() -> None:
    res = simulate(rolling(MEMBERS, ["sticky"]), collect_events=True)
    starts = [(i, e["member"]) for i, e in enumerate(res.events) if e["kind"] == "start"]
    last: dict[str, tuple[int, set[str]]] = {}
    checked = 0
    for i, member, _gen, parts in _assignments(res):
        prev = last.get(member)
        restarted = prev is not None and any(m == member and prev[0] < j < i for j, m in starts)
        if prev is not None and not restarted:
            assert parts <= prev[1] or parts >= prev[1], (member, prev[1], parts)
            checked += 1
        last[member] = (i, parts)
    assert checked > MEMBERS * MEMBERS


class _Recorder:
    """Wraps the leader's assignor: keeps every GroupSpec it is given."""

    def __init__(self, inner, specs: list) -> None:
        self.inner, self.specs = inner, specs

    def assign(self, spec):
        self.specs.append(spec)
        return self.inner.assign(spec)


@pytest.mark.parametrize(
    ("assignors", "core"),
    [(["sticky"], "reference"), (["range", "sticky"], "reference"), (["sticky"], "native")],
)
def test_the_leader_reads_owned_partitions_and_generation_from_the_user_data(
    monkeypatch, assignors: list[str], core: str
) -> None:
    """On either core (the native world's leader reads the same user data since session 16)."""
    specs: list = []
    world: Any = sim_world
    if core == "native":
        require_native_build()
        world = native.cython_build("kafka_rebalance.sim", "native_world")
    real = world.get_assignor
    monkeypatch.setattr(
        world,
        "get_assignor",
        lambda name: _Recorder(real(name), specs) if name == "sticky" else real(name),
    )
    doc = rolling(4, assignors)
    res = simulate(doc, collect_events=True, core=core)
    assert res.core == core
    if assignors[0] != "sticky":
        assert specs == []  # range is the leader's choice: sticky user data is never read
        return
    # what each member was last assigned, in which generation, by client (name#incarnation)
    assigned: dict[str, tuple[int, set[tuple[str, int]]]] = {}
    incarnation: dict[str, int] = {}
    rounds = 0
    events = iter(res.events)
    for spec in specs:
        for m in spec.members:
            client = m.member_id.split("-")[0]
            if client in assigned:  # rejoins: its last assignment and generation
                gen, parts = assigned[client]
                assert m.generation == gen
                assert {(tp.topic, tp.partition) for tp in m.owned} == parts
            else:  # a new consumer instance (first start or a restart): no user data
                assert m.owned == () and m.generation == -1
        rounds += 1
        # replay the events up to this generation's assignments
        gen_of_spec = None
        for e in events:
            if e["kind"] == "start":
                incarnation[e["member"]] = incarnation.get(e["member"], 0) + 1
            elif e["kind"] == "assigned":
                client = f"{e['member']}#{incarnation[e['member']]}"
                detail_owned = {("t", int(p.rsplit("-", 1)[1])) for p in e["partitions"]}
                assigned[client] = (e["generation"], detail_owned)
                gen_of_spec = e["generation"]
                if len([1 for c in assigned.values() if c[0] == gen_of_spec]) == len(spec.members):
                    break
    assert rounds == res.summary["rebalances"]


@pytest.mark.parametrize("assignor", ["sticky", "range"])
def test_the_wire_clients_leader_keeps_eager_sticky_sticky(assignor: str) -> None:
    """sim/kafka_client.SimConsumer (the parallel consumer's simulated client): a fourth member joins
    three that own 12 partitions; under sticky each of the three keeps 3 of its 4 partitions."""
    from kafka_rebalance.group.classic_member import ClassicGroupConfig
    from kafka_rebalance.sim.kafka_client import SimConsumer
    from kafka_rebalance.sim.kafka_cluster import SimCluster

    c = SimCluster({"t": 12}, group_config=ClassicGroupConfig(initial_rebalance_delay_ms=0))

    def new() -> SimConsumer:
        s = SimConsumer(c, "g", assignor=assignor, heartbeat_interval_ms=1_000)
        s.subscribe(["t"])
        return s

    def settle(cs: list[SimConsumer]) -> None:
        for _ in range(200):
            for s in cs:
                s.consume(10)
        assert sum(len(s.assignment()) for s in cs) == 12

    first = [new() for _ in range(3)]
    settle(first)
    before = [{(tp.topic, tp.partition) for tp in s.assignment()} for s in first]
    assert [len(b) for b in before] == [4, 4, 4]
    settle([*first, new()])
    after = [{(tp.topic, tp.partition) for tp in s.assignment()} for s in first]
    kept = sum(len(a & b) for a, b in zip(after, before))
    if assignor == "sticky":
        assert kept == 9 and all(a <= b for a, b in zip(after, before))
    else:  # range deals 0-2, 3-5, 6-8, 9-11 afresh: it is not sticky
        assert kept < 9
