"""Planner properties: no replica dropped or duplicated, racks kept, dead brokers emptied, bounds met."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.cluster.planner import plan
from kafka_rebalance.cluster.synthetic import add_empty_broker, synthetic_cluster
from kafka_rebalance.errors import InputError
from kafka_rebalance.model import Broker, ClusterSnapshot, PartitionLoad, PartitionReplicas


def rack_aware(snap: ClusterSnapshot, p: PartitionReplicas) -> bool:
    rack = {b.id: b.rack for b in snap.brokers}
    racks = [rack[r] for r in p.replicas]
    return None not in racks and len(set(racks)) == len(racks)


def rack_spread(snap: ClusterSnapshot, replicas) -> int:
    rack = {b.id: b.rack for b in snap.brokers}
    return len({rack.get(r) for r in replicas} - {None})


def usable(snap: ClusterSnapshot, removed=frozenset()) -> set[int]:
    return {b.id for b in snap.brokers if b.alive} - set(removed)


def check_plan(before: ClusterSnapshot, res, removed: set[int] = frozenset()) -> None:
    after = res.after_snapshot
    alive = usable(before, removed)
    usable_racks = len({b.rack for b in before.brokers if b.id in alive} - {None})
    assert len(after.partitions) == len(before.partitions)
    for b, a in zip(before.partitions, after.partitions):
        assert (a.topic, a.partition) == (b.topic, b.partition)
        assert len(a.replicas) == len(b.replicas), "replication factor kept"
        assert len(set(a.replicas)) == len(a.replicas), "one replica per broker"
        # Kafka-like rack awareness: the spread never falls below min(what it was, RF, usable racks)
        need = min(len(b.replicas), usable_racks)
        assert rack_spread(before, a.replicas) >= min(rack_spread(before, b.replicas), need), (
            "rack spread kept"
        )
        if rack_aware(before, b) and usable_racks >= len(b.replicas):
            assert rack_aware(before, a), "rack awareness kept"
        # every replica that is new sits on an alive, staying broker
        assert all(r in alive for r in a.replicas if r not in b.replicas)
    left = sum(1 for a in after.partitions for r in a.replicas if r not in alive)
    if res.mode.value != "leaders":  # leaders mode moves no data by definition
        # dead and removed brokers are emptied, or the plan says it is incomplete and why
        assert res.complete == (left == 0)
        assert res.complete or len(res.violations) >= 1
    else:
        assert res.complete
    moved = sum(
        len(set(a.replicas) - set(b.replicas)) for b, a in zip(before.partitions, after.partitions)
    )
    assert moved == res.replica_moves
    # the bound is on the moves needed to satisfy every goal; a plan that moves less must say it fell short
    if res.replica_moves < res.lower_bound_moves:
        assert not (res.complete and res.goals_satisfied)
    assert res.summary()["complete"] == res.complete


@st.composite
def clusters(draw):
    n_b = draw(st.integers(3, 8))
    racks = draw(st.sampled_from([0, 2, 3]))
    dead = draw(st.sets(st.integers(0, n_b - 1), max_size=1))
    brokers = tuple(
        Broker(i, f"r{i % racks}" if racks else None, i not in dead) for i in range(n_b)
    )
    n_p = draw(st.integers(1, 25))
    parts = []
    for i in range(n_p):
        rf = draw(st.integers(1, min(3, n_b)))
        reps = draw(st.permutations(range(n_b)))[:rf]
        isr = tuple(r for r in reps if r not in dead) or reps[:1]
        leader = isr[0] if isr[0] not in dead else None
        load = PartitionLoad(
            bytes_in=draw(st.floats(0, 100)),
            bytes_out=draw(st.floats(0, 300)),
            messages_in=draw(st.floats(0, 10)),
            size_bytes=draw(st.floats(0, 1000)),
        )
        parts.append(PartitionReplicas(f"t{i % 3}", i, tuple(reps), leader, isr, load))
    return ClusterSnapshot(brokers, tuple(parts))


@settings(max_examples=40, deadline=None)
@given(clusters(), st.sampled_from(["full", "leaders"]))
def test_plans_never_drop_duplicate_or_break_racks(snap, mode):
    res = plan(snap, mode)
    if mode == "leaders":
        assert res.replica_moves == 0
        for b, a in zip(snap.partitions, res.after_snapshot.partitions):
            assert set(a.replicas) == set(b.replicas)
    check_plan(snap, res)
    assert res == plan(snap, mode) or res.summary() == plan(snap, mode).summary()  # deterministic


@settings(max_examples=30, deadline=None)
@given(clusters(), st.data())
def test_remove_brokers_moves_exactly_their_replicas(snap, data):
    live = [b.id for b in snap.brokers if b.alive]
    k = data.draw(st.integers(1, max(1, len(live) - 3)))
    removed = set(data.draw(st.permutations(live))[:k])
    res = plan(snap, "remove-brokers", sorted(removed))
    check_plan(snap, res, removed)
    stay = usable(snap, removed)
    on_leaving = sum(1 for p in snap.partitions for r in p.replicas if r not in stay)
    # Only a partition with more replicas than usable brokers cannot be emptied (no capacities here):
    # the rack rule never blocks a move, and every other replica moves exactly once.
    stuck = sum(max(0, len(p.replicas) - len(stay)) for p in snap.partitions)
    assert res.lower_bound_moves == on_leaving
    assert res.replica_moves == on_leaving - stuck
    assert res.complete == (stuck == 0) and (len(res.violations) == stuck)
    left_on_removed = sum(
        1 for p in res.after_snapshot.partitions for r in p.replicas if r not in stay
    )
    assert left_on_removed == stuck


def test_decommission_on_a_rack_aware_cluster():
    snap = synthetic_cluster(brokers=9, racks=3, partitions=600, seed=11)
    for removed in ([4], [0, 4, 8]):
        res = plan(snap, "remove-brokers", removed)
        on = sum(1 for p in snap.partitions for r in p.replicas if r in removed)
        assert res.replica_moves == on == res.lower_bound_moves
        check_plan(snap, res, set(removed))
        assert all(rack_aware(snap, p) for p in res.after_snapshot.partitions)


def test_add_broker_meets_the_lower_bound_and_fills_the_new_broker():
    snap, new = add_empty_broker(synthetic_cluster(brokers=9, racks=3, partitions=600, seed=3))
    res = plan(snap, "add-brokers", [new])
    check_plan(snap, res)
    assert res.replica_moves == res.lower_bound_moves > 0
    cnt = sum(1 for p in res.after_snapshot.partitions if new in p.replicas)
    rack_of_new = next(b.rack for b in snap.brokers if b.id == new)
    same_rack = [b.id for b in snap.brokers if b.rack == rack_of_new]
    assert cnt == 600 // len(
        same_rack
    )  # one replica per rack: the rack's 600 replicas spread evenly


def test_full_plan_balances_a_skewed_cluster():
    snap = synthetic_cluster(brokers=9, racks=3, partitions=1500, topics=15, seed=5, skew=0.3)
    res = plan(snap, "full")
    check_plan(snap, res)
    assert all(ok for _, ok in res.goals), res.goals
    assert max(res.after.values()) <= 1.09 + 1e-9
    assert max(res.before.values()) > 1.2
    assert res.replica_moves <= 1.5 * res.lower_bound_moves


def test_offline_replicas_are_moved_in_full_mode():
    brokers = (Broker(1, "a"), Broker(2, "b"), Broker(3, "c", alive=False), Broker(4, "c"))
    parts = tuple(PartitionReplicas("t", i, (1, 2, 3), 1, (1, 2)) for i in range(4))
    snap = ClusterSnapshot(brokers, parts)
    res = plan(snap, "full")
    assert res.replica_moves == 4 == res.lower_bound_moves
    assert all(set(p.replicas) == {1, 2, 4} for p in res.after_snapshot.partitions)


@settings(max_examples=25, deadline=None)
@given(clusters(), st.integers(0, 2))
def test_add_brokers_only_moves_onto_the_new_broker(snap, rack_choice):
    racks = sorted({b.rack for b in snap.brokers if b.rack is not None})
    rack = racks[rack_choice % len(racks)] if racks else None
    new_id = max(b.id for b in snap.brokers) + 1
    grown = ClusterSnapshot(snap.brokers + (Broker(new_id, rack),), snap.partitions)
    res = plan(grown, "add-brokers", [new_id])
    check_plan(grown, res)
    dead = {b.id for b in snap.brokers if not b.alive}
    for b, a in zip(grown.partitions, res.after_snapshot.partitions):
        for r in set(a.replicas) - set(b.replicas):
            # a replica lands on the new broker, or replaces one on a dead broker
            assert r == new_id or set(b.replicas) & dead


def test_disk_capacity_goal_empties_an_overfull_broker():
    brokers = tuple(Broker(i, disk_bytes=1000.0) for i in range(4))
    parts = tuple(
        PartitionReplicas(
            "t", i, (0, 1 + i % 3), 0, (0, 1 + i % 3), PartitionLoad(size_bytes=100.0)
        )
        for i in range(9)
    )
    snap = ClusterSnapshot(
        brokers, parts
    )  # broker 0 holds 900 of 1000 bytes, above the 80% threshold
    res = plan(snap, "remove-brokers", [3], capacity_threshold=0.8)
    assert dict(res.goals)["DiskCapacityGoal"]
    on0 = sum(1 for p in res.after_snapshot.partitions if 0 in p.replicas)
    assert on0 * 100.0 <= 800.0
    check_plan(snap, res, {3})


def test_plan_without_loads_from_describe_text():
    from kafka_rebalance.cluster.snapshot import parse_describe_text

    text = "".join(
        f"\tTopic: t\tPartition: {i}\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\n" for i in range(6)
    )
    text += "\tTopic: u\tPartition: 0\tLeader: 3\tReplicas: 3,4\tIsr: 3,4\n"
    snap = parse_describe_text(text)
    res = plan(snap, "full")
    check_plan(snap, res)
    counts = {
        b: sum(1 for p in res.after_snapshot.partitions if b in p.replicas) for b in (1, 2, 3, 4)
    }
    assert (
        max(counts.values()) <= 4
    )  # 14 replicas on 4 brokers: band 1.09 x 3.5 -> at most 3, ceil 4
    assert res.after["leaders"] < res.before["leaders"]


@settings(max_examples=25, deadline=None)
@given(clusters(), st.sampled_from(["full", "leaders"]))
def test_reassignment_json_lists_exactly_the_changed_partitions(snap, mode):
    res = plan(snap, mode)
    by_tp = {r.tp: r for r in res.reassignments}
    for b, a in zip(snap.partitions, res.after_snapshot.partitions):
        if a.replicas != b.replicas:
            assert by_tp[b.tp].replicas == a.replicas
        else:
            assert b.tp not in by_tp
        # the planned leader is the new preferred replica
        if b.tp in by_tp:
            assert a.leader == a.replicas[0]


def test_fix_offline_mode_moves_only_dead_replicas():
    base = synthetic_cluster(brokers=9, racks=3, partitions=300, seed=2)
    from dataclasses import replace

    snap = ClusterSnapshot(
        tuple(replace(b, alive=b.id != 4) for b in base.brokers), base.partitions
    )
    res = plan(snap, "fix-offline")
    on4 = sum(1 for p in snap.partitions if 4 in p.replicas)
    assert res.replica_moves == on4 == res.lower_bound_moves
    check_plan(snap, res)


def test_add_a_broker_missing_from_a_describe_text_snapshot():
    from kafka_rebalance.cluster.snapshot import parse_describe_text

    text = "".join(
        f"\tTopic: t\tPartition: {i}\tLeader: {1 + i % 2}\tReplicas: {1 + i % 2},{2 - i % 2}\t"
        f"Isr: 1,2\n"
        for i in range(8)
    )
    snap = parse_describe_text(text)
    res = plan(snap, "add-brokers", [3])
    # 16 replicas over 3 brokers: the new one gets floor(16/3) = 5
    assert res.replica_moves == res.lower_bound_moves == 5
    assert sum(1 for p in res.after_snapshot.partitions if 3 in p.replicas) == 5


def test_network_inbound_capacity_goal_moves_bytes_off_a_hot_broker():
    brokers = tuple(Broker(i, nw_in_bytes=1000.0) for i in range(4))
    parts = tuple(
        PartitionReplicas("t", i, (0, 1 + i % 3), 0, (0, 1 + i % 3), PartitionLoad(bytes_in=100.0))
        for i in range(9)
    )
    snap = ClusterSnapshot(brokers, parts)  # broker 0 takes 900 B/s of 1000, above 80%
    res = plan(snap, "fix-offline")
    assert dict(res.goals)["NetworkInboundCapacityGoal"]
    assert sum(100.0 for p in res.after_snapshot.partitions if 0 in p.replicas) <= 800.0
    check_plan(snap, res)


def test_decommission_a_whole_rack_of_a_cluster_that_was_never_rack_aware():
    # RF 3 over two racks: no partition could span 3 racks. Removing rack b leaves rack a only, so the
    # partitions may (must) end on one rack; the old rule refused every target and moved nothing.
    brokers = (Broker(1, "a"), Broker(2, "a"), Broker(3, "b"), Broker(4, "b"), Broker(5, "a"))
    reps = [(1, 2, 3), (3, 4, 1), (2, 4, 5), (4, 1, 2), (5, 3, 1), (3, 2, 5)]
    snap = ClusterSnapshot(
        brokers,
        tuple(
            PartitionReplicas("t", i, r, r[0], r, PartitionLoad(size_bytes=1.0))
            for i, r in enumerate(reps)
        ),
    )
    res = plan(snap, "remove-brokers", [3, 4])
    assert res.complete and not res.violations
    assert res.replica_moves == res.lower_bound_moves == 7
    assert all(set(p.replicas) == {1, 2, 5} for p in res.after_snapshot.partitions)
    check_plan(snap, res, {3, 4})


def test_a_partition_spread_over_two_racks_keeps_two_when_a_third_rack_goes():
    brokers = (Broker(1, "a"), Broker(2, "a"), Broker(3, "b"), Broker(4, "b"), Broker(5, "c"))
    snap = ClusterSnapshot(
        brokers,
        (
            PartitionReplicas("t", 0, (1, 3, 5), 1, (1, 3, 5)),
            PartitionReplicas("t", 1, (1, 2, 5), 1, (1, 2, 5)),
        ),
    )
    res = plan(snap, "remove-brokers", [5])
    after = {p.partition: p.replicas for p in res.after_snapshot.partitions}
    assert res.complete
    assert set(after[0]) in (
        {1, 3, 2},
        {1, 3, 4},
    )  # 3 racks -> 2 usable: either a or b broker will do
    assert set(after[1]) in (
        {1, 2, 3},
        {1, 2, 4},
    )  # racks {a, c} must still be two: 5's replica goes to b
    check_plan(snap, res, {5})


def test_removing_below_the_replication_factor_is_reported_incomplete():
    brokers = (Broker(1, "a"), Broker(2, "b"), Broker(3, "c"))
    snap = ClusterSnapshot(
        brokers, tuple(PartitionReplicas("t", i, (1, 2, 3), 1, (1, 2, 3)) for i in range(2))
    )
    res = plan(snap, "remove-brokers", [3])
    assert not res.complete and len(res.violations) == 2
    assert res.replica_moves == 0 < res.lower_bound_moves == 2
    assert res.summary()["complete"] is False
    check_plan(snap, res, {3})


def test_an_added_broker_missing_from_a_racked_snapshot_needs_its_rack():
    import pytest

    from kafka_rebalance.errors import InputError

    snap = synthetic_cluster(brokers=6, racks=3, partitions=60, seed=4)
    new = max(b.id for b in snap.brokers) + 1
    with pytest.raises(InputError, match=f"broker {new} .*--broker-racks") as info:
        plan(snap, "add-brokers", [new])
    assert info.value.field == "brokers"
    rack = snap.brokers[0].rack
    res = plan(snap, "add-brokers", [new], broker_racks={new: rack})
    check_plan(ClusterSnapshot(snap.brokers + (Broker(new, rack),), snap.partitions), res)
    assert res.replica_moves > 0
    racks = {b.id: b.rack for b in snap.brokers} | {new: rack}
    # every partition was one replica per rack and stays so: the new broker only takes its own rack's replicas
    assert all(len({racks[r] for r in p.replicas}) == 3 for p in res.after_snapshot.partitions)
    with pytest.raises(InputError, match="not among the added"):
        plan(snap, "add-brokers", [new], broker_racks={new + 1: rack})
    with pytest.raises(InputError, match="in rack"):
        plan(snap, "add-brokers", [new, 0], broker_racks={0: "elsewhere", new: rack})


def test_topic_spread_trades_replicas_when_every_single_move_breaks_the_count_band():
    # Broker 0 holds 10 of topic a's 12 replicas (limit 9 = ceil(max(3 + 2, min(3 x 3, 3 + 40))))
    # but sits at the count band's floor (19 of mean 20): no replica may simply leave it. A trade
    # (an `a` replica out, one of another topic back) fixes the spread and keeps every count.
    brokers = tuple(Broker(i) for i in range(4))
    layout = {
        0: ["a"] * 10 + [f"x{i}" for i in range(9)],
        1: ["a"] * 2 + [f"y{i}" for i in range(19)],
        2: [f"z{i}" for i in range(20)],
        3: [f"w{i}" for i in range(20)],
    }
    parts, n = [], {}
    for b, topics in layout.items():
        for t in topics:
            n[t] = n.get(t, -1) + 1
            parts.append(PartitionReplicas(t, n[t], (b,), b, (b,)))
    snap = ClusterSnapshot(brokers, tuple(parts))
    res = plan(snap, "full")
    check_plan(snap, res)
    assert dict(res.goals)["TopicReplicaDistributionGoal"] and res.goals_satisfied
    after = [sum(1 for p in res.after_snapshot.partitions if p.replicas == (b,)) for b in range(4)]
    assert after == [19, 21, 20, 20]
    assert (
        sum(1 for p in res.after_snapshot.partitions if p.topic == "a" and p.replicas == (0,)) == 9
    )
    assert res.replica_moves == 2


@settings(max_examples=30, deadline=None)
@given(clusters(), st.data())
def test_rack_rule_scalar_and_vectorized_agree(snap, data):
    import numpy as np

    from kafka_rebalance.cluster.planner.state import PlanState

    live = [b.id for b in snap.brokers if b.alive]
    removed = tuple(
        data.draw(st.permutations(live))[: data.draw(st.integers(0, max(0, len(live) - 1)))]
    )
    state = PlanState(snap, remove=removed)
    p = data.draw(st.integers(0, state.P - 1))
    s = data.draw(st.integers(0, int(state.rf[p]) - 1))
    dsts = np.arange(state.B)
    assert state.rack_ok_many(p, s, dsts).tolist() == [state.rack_ok(p, s, int(d)) for d in dsts]


@pytest.mark.parametrize("mode", ["full", "leaders", "fix-offline"])
def test_brokers_are_refused_where_the_mode_would_ignore_them(mode):
    snap = synthetic_cluster(brokers=4, racks=2, partitions=16, topics=2, seed=3, skew=0.4)
    with pytest.raises(InputError, match=f"mode {mode}") as info:
        plan(snap, mode, [1])
    assert info.value.field == "brokers"
    plan(snap, mode, [])  # and without them the mode plans


@pytest.mark.parametrize(
    "kw, field",
    [
        ({"band": float("nan")}, "band"),
        ({"band": float("inf")}, "band"),
        ({"band": -1.0}, "band"),
        ({"band": 0.99}, "band"),
        ({"capacity_threshold": -2.0}, "capacity_threshold"),
        ({"capacity_threshold": 0.0}, "capacity_threshold"),
        ({"capacity_threshold": float("nan")}, "capacity_threshold"),
        ({"capacity_threshold": 1.01}, "capacity_threshold"),
    ],
)
def test_band_and_capacity_threshold_out_of_range_are_refused(kw, field):
    snap = synthetic_cluster(brokers=4, racks=2, partitions=16, topics=2, seed=3, skew=0.4)
    with pytest.raises(InputError) as info:
        plan(snap, "full", **kw)
    assert info.value.field == field and repr(next(iter(kw.values()))) in str(info.value)


def test_band_one_and_full_capacity_are_accepted():
    snap = synthetic_cluster(brokers=4, racks=2, partitions=16, topics=2, seed=3, skew=0.4)
    for mode in ("full", "leaders"):
        check_plan(snap, plan(snap, mode, band=1.0, capacity_threshold=1.0))
