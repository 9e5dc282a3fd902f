"""Planner properties: no replica dropped or duplicated, racks kept, dead brokers emptied, bounds met."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from kafka_rebalance.cluster.planner import plan
from kafka_rebalance.cluster.synthetic import add_empty_broker, synthetic_cluster
from kafka_rebalance.model import Broker, ClusterSnapshot, PartitionLoad, PartitionReplicas


def rack_aware(snap: ClusterSnapshot, p: PartitionReplicas) -> bool:
    rack = {b.id: b.rack for b in snap.brokers}
    racks = [rack[r] for r in p.replicas]
    return None not in racks and len(set(racks)) == len(racks)


def check_plan(before: ClusterSnapshot, res, removed: set[int] = frozenset()) -> None:
    after = res.after_snapshot
    alive = {b.id for b in before.brokers if b.alive} - set(removed)
    assert len(after.partitions) == len(before.partitions)
    for b, a in zip(before.partitions, after.partitions):
        assert (a.topic, a.partition) == (b.topic, b.partition)
        assert len(a.replicas) == len(b.replicas), "replication factor kept"
        assert len(set(a.replicas)) == len(a.replicas), "one replica per broker"
        if rack_aware(before, b):
            assert rack_aware(before, a), "rack awareness kept"
        # every replica that is new sits on an alive, staying broker; dead brokers are emptied
        assert all(r in alive for r in a.replicas if r not in b.replicas)
        if not res.violations and res.mode.value != "leaders":  # leaders mode moves no data by definition
            assert all(r in alive for r in a.replicas), "dead and removed brokers emptied"
    moved = sum(len(set(a.replicas) - set(b.replicas)) for b, a in zip(before.partitions, after.partitions))
    assert moved == res.replica_moves
    # the bound is on the moves needed to satisfy the goals; a plan that cannot satisfy them moves less
    if all(ok for _, ok in res.goals) and not res.violations:
        assert res.replica_moves >= res.lower_bound_moves


@st.composite
def clusters(draw):
    n_b = draw(st.integers(3, 8))
    racks = draw(st.sampled_from([0, 2, 3]))
    dead = draw(st.sets(st.integers(0, n_b - 1), max_size=1))
    brokers = tuple(Broker(i, f"r{i % racks}" if racks else None, i not in dead) for i in range(n_b))
    n_p = draw(st.integers(1, 25))
    parts = []
    for i in range(n_p):
        rf = draw(st.integers(1, min(3, n_b)))
        reps = draw(st.permutations(range(n_b)))[:rf]
        isr = tuple(r for r in reps if r not in dead) or reps[:1]
        leader = isr[0] if isr[0] not in dead else None
        load = PartitionLoad(bytes_in=draw(st.floats(0, 100)), bytes_out=draw(st.floats(0, 300)),
                             messages_in=draw(st.floats(0, 10)), size_bytes=draw(st.floats(0, 1000)))
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
    on_leaving = sum(1 for p in snap.partitions for r in p.replicas
                     if r in removed or not next(b for b in snap.brokers if b.id == r).alive)
    if not res.violations:
        assert res.replica_moves == on_leaving == res.lower_bound_moves
        assert all(r not in removed for p in res.after_snapshot.partitions for r in p.replicas)


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
    assert cnt == 600 // len(same_rack)  # one replica per rack: the rack's 600 replicas spread evenly


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
