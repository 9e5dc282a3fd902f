"""Cruise Control's goals in the planner: hard goals, priorities, exclusions, demotion, models, reasons.

The hard goals are checked on the plan's resulting snapshot by an evaluator written here from Cruise
Control's definitions (not the planner's own arrays): network out = leader bytes out + bytes in x
(RF - 1) on the leader; CPU = sampled leader CPU, followers 0.15 bin / (0.7 bin + 0.15 bout) of it.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.cluster.planner import GOAL_NAMES, PlanOptions, parse_goals, plan
from kafka_rebalance.cluster.planner.registry import HARD_GOALS
from kafka_rebalance.cluster.planner.state import PlanState
from kafka_rebalance.errors import InputError
from kafka_rebalance.model import Broker, ClusterSnapshot, PartitionLoad, PartitionReplicas

CAP_ATTR = {
    "size_bytes": "disk_bytes",
    "bytes_in": "nw_in_bytes",
    "nw_out": "nw_out_bytes",
    "cpu": "cpu",
}


def broker_loads(snap: ClusterSnapshot) -> dict[int, dict[str, float]]:
    """Per broker: replicas, disk, network in/out and CPU as Cruise Control models them."""
    out = {
        b.id: {"replicas": 0, "size_bytes": 0.0, "bytes_in": 0.0, "nw_out": 0.0, "cpu": 0.0}
        for b in snap.brokers
    }
    for p in snap.partitions:
        ld = p.load or PartitionLoad()
        lead = p.replicas[0]  # the plan's leader stands first
        weighted = 0.7 * ld.bytes_in + 0.15 * ld.bytes_out
        follower_cpu = ld.cpu * (0.15 * ld.bytes_in / weighted) if weighted > 0 else 0.0
        for r in p.replicas:
            o = out[r]
            o["replicas"] += 1
            o["size_bytes"] += ld.size_bytes
            o["bytes_in"] += ld.bytes_in
            if r == lead:
                o["nw_out"] += ld.bytes_out + ld.bytes_in * (len(p.replicas) - 1)
                o["cpu"] += ld.cpu
            else:
                o["cpu"] += follower_cpu
    return out


def hard_ok(snap: ClusterSnapshot, opts: PlanOptions, usable: set[int]) -> dict[str, bool]:
    """Each hard goal, evaluated on a snapshot whose replicas[0] is the leader."""
    loads = broker_loads(snap)
    th = opts.capacity_thresholds
    res = {}
    for name, r in (
        ("DiskCapacityGoal", "size_bytes"),
        ("NetworkInboundCapacityGoal", "bytes_in"),
        ("NetworkOutboundCapacityGoal", "nw_out"),
        ("CpuCapacityGoal", "cpu"),
    ):
        ok = True
        for b in snap.brokers:
            cap = getattr(b, CAP_ATTR[r])
            if (
                b.id in usable
                and cap is not None
                and loads[b.id][r] > th.get(r, 0.8) * cap * (1 + 1e-6)
            ):
                ok = False
        res[name] = ok
    res["ReplicaCapacityGoal"] = all(
        loads[b]["replicas"] <= opts.max_replicas_per_broker for b in usable
    )
    rack = {b.id: b.rack for b in snap.brokers}
    racks = {rack[b] for b in usable} - {None}
    res["RackAwareGoal"] = not racks or all(
        len({rack[r] for r in p.replicas} - {None}) >= min(len(p.replicas), len(racks))
        for p in snap.partitions
    )
    return res


@st.composite
def clusters(draw):
    n_b = draw(st.integers(3, 7))
    racks = draw(st.sampled_from([0, 2, 3]))
    dead = draw(st.sets(st.integers(0, n_b - 1), max_size=1))
    tight = draw(st.floats(1.2, 4.0))
    n_p = draw(st.integers(2, 24))
    parts = []
    for i in range(n_p):
        rf = draw(st.integers(1, min(3, n_b)))
        reps = draw(st.permutations(range(n_b)))[:rf]
        isr = tuple(r for r in reps if r not in dead) or reps[:1]
        leader = isr[0] if isr[0] not in dead else None
        bi = draw(st.floats(0, 100))
        bo = draw(st.floats(0, 300))
        load = PartitionLoad(
            bytes_in=bi,
            bytes_out=bo,
            messages_in=draw(st.floats(0, 10)),
            size_bytes=draw(st.floats(0, 1000)),
            # every partition with traffic sampled: the CPU the evaluator sums is the planner's
            cpu=draw(st.floats(0.1, 5)) if bi > 0 or bo > 0 else 0.0,
        )
        parts.append(PartitionReplicas(f"t{i % 4}", i, tuple(reps), leader, isr, load))
    # capacities: `tight` x the even share of each resource (some plans cannot meet them)
    share = {"size_bytes": 0.0, "bytes_in": 0.0, "nw_out": 0.0, "cpu": 0.0}
    for p in parts:
        share["size_bytes"] += p.load.size_bytes * len(p.replicas)
        share["bytes_in"] += p.load.bytes_in * len(p.replicas)
        share["nw_out"] += p.load.bytes_out + p.load.bytes_in * (len(p.replicas) - 1)
        share["cpu"] += p.load.cpu * 1.3
    with_caps = draw(st.booleans())
    brokers = tuple(
        Broker(
            i,
            f"r{i % racks}" if racks else None,
            i not in dead,
            *(
                [max(share[r], 1.0) * tight / n_b for r in ("size_bytes", "bytes_in", "nw_out")]
                + [max(share["cpu"], 1.0) * tight / n_b]
                if with_caps
                else [None] * 4
            ),
        )
        for i in range(n_b)
    )
    return ClusterSnapshot(brokers, tuple(parts))


@st.composite
def goal_lists(draw):
    names = draw(st.permutations(GOAL_NAMES))
    k = draw(st.integers(1, len(names)))
    return tuple(names[:k])


@settings(max_examples=60, deadline=None)
@given(clusters(), goal_lists(), st.sampled_from([None, "t0", "t[12]"]), st.data())
def test_no_plan_breaks_a_hard_goal_moves_an_excluded_topic_or_worsens_a_higher_goal(
    snap, goals, excluded, data
):
    alive = [b.id for b in snap.brokers if b.alive]
    no_lead = tuple(data.draw(st.sets(st.sampled_from(alive), max_size=1)))
    no_move = tuple(data.draw(st.sets(st.sampled_from(alive), max_size=1)))
    opts = PlanOptions(
        exclude_topics=excluded,
        exclude_brokers_for_leadership=no_lead,
        exclude_brokers_for_replica_move=no_move,
    )
    res = plan(snap, "full", goals=goals, options=opts)
    usable = set(alive)
    # a plan's leader stands first; compare the cluster before with its preferred leaders as leaders
    led_first = ClusterSnapshot(
        snap.brokers,
        tuple(
            PartitionReplicas(
                p.topic,
                p.partition,
                ((p.leader,) + tuple(r for r in p.replicas if r != p.leader))
                if p.leader is not None
                else p.replicas,
                p.leader,
                p.isr,
                p.load,
            )
            for p in snap.partitions
        ),
    )
    before = hard_ok(led_first, opts, usable)
    after = hard_ok(res.after_snapshot, opts, usable)
    dead = {b.id for b in snap.brokers if not b.alive}
    for name in set(goals) & HARD_GOALS & set(after):
        if before[name] and not dead:
            assert after[name], f"{name} held before the plan and is broken by it"
    report = {r.goal: r for r in res.reports}
    for name in set(goals) & HARD_GOALS & set(after):
        # the planner's verdict agrees with the independent evaluation
        if name != "RackAwareGoal":
            assert report[name].satisfied == after[name], (name, report[name])
    if any(r.hard and not r.satisfied for r in res.reports):
        assert res.refused and res.unmet and all(": " in u for u in res.unmet)
    else:  # a plan that is not refused meets every hard goal in its list, dead brokers or not
        assert not res.refused
        assert all(after[name] for name in set(goals) & HARD_GOALS & set(after))
    # excluded topics: never moved (except replicas leaving a dead broker), leader kept
    for b, a in zip(snap.partitions, res.after_snapshot.partitions):
        if excluded and re.fullmatch(excluded, b.topic):
            assert set(a.replicas) - set(b.replicas) == set() or set(b.replicas) & dead
            assert set(b.replicas) - set(a.replicas) <= dead
            if b.leader is not None and b.leader not in dead:
                assert a.leader == b.leader
        # no replica lands on a broker excluded from replica moves; no new leadership on excluded
        assert not (set(a.replicas) - set(b.replicas)) & set(no_move)
        if a.leader in no_lead:
            assert a.leader == b.leader
    # a lower-priority goal never makes a higher one worse
    for r in res.reports:
        assert r.violation_final <= r.violation_own + 1e-6 * max(1.0, r.violation_own), r
    assert res.summary()["refused"] == res.refused


@settings(max_examples=40, deadline=None)
@given(clusters(), st.data())
def test_demotion_moves_nothing_and_demoted_brokers_lead_nothing_and_stand_last(snap, data):
    alive = [b.id for b in snap.brokers if b.alive]
    demoted = sorted(data.draw(st.sets(st.sampled_from(alive), min_size=1, max_size=2)))
    res = plan(snap, "demote", demoted)
    assert res.replica_moves == 0 and res.bytes_moved == 0
    for b, a in zip(snap.partitions, res.after_snapshot.partitions):
        assert set(a.replicas) == set(b.replicas)
        flags = [r in demoted for r in a.replicas]
        assert flags == sorted(flags), f"demoted brokers stand last: {a.replicas}"
        others = [r for r in b.isr if r not in demoted and r in alive]
        if others:
            assert a.leader not in demoted and a.leader in others
    for e in res.reassignments:
        assert e.log_dirs is None
    failed = [r for r in res.reports if not r.satisfied]
    stuck = [
        p
        for p in snap.partitions
        if p.leader in demoted and not [r for r in p.isr if r not in demoted and r in alive]
    ]
    assert bool(failed) == bool(stuck)


def test_network_out_and_cpu_follow_cruise_controls_models():
    brokers = tuple(Broker(i) for i in range(3))
    parts = (
        PartitionReplicas(
            "t", 0, (0, 1, 2), 0, (0, 1, 2), PartitionLoad(100.0, 300.0, 1.0, 10.0, 7.0)
        ),
        PartitionReplicas("t", 1, (1, 2), 1, (1, 2), PartitionLoad(50.0, 0.0, 1.0, 10.0, 0.0)),
    )
    st_ = PlanState(ClusterSnapshot(brokers, parts))
    # leader 0: 300 out + 100 x 2 replication; leader 1: 0 + 50 x 1
    assert st_.loads["nw_out"].tolist() == [500.0, 50.0, 0.0]
    # p0 sampled 7.0 on its leader; followers 7 x 0.15 x 100 / (0.7 x 100 + 0.15 x 300)
    f0 = 7.0 * 15.0 / 115.0
    # p1 has no sample: k x 0.7 x 50 with k = 7 / 115 fitted on p0; its follower 0.15/0.7 of that
    l1 = 7.0 / 115.0 * 35.0
    f1 = l1 * 7.5 / 35.0
    assert st_.loads["cpu"].tolist() == pytest.approx([7.0, f0 + l1, f0 + f1])
    assert st_.loads["potential_nw_out"].tolist() == [500.0, 550.0, 550.0]


def test_capacity_goals_move_leadership_before_data():
    # broker 0 leads everything; network out capacity forces leadership off it, no replica moves needed
    brokers = tuple(Broker(i, nw_out_bytes=1000.0) for i in range(3))
    parts = tuple(
        PartitionReplicas("t", i, (0, 1, 2), 0, (0, 1, 2), PartitionLoad(10.0, 80.0, 1.0, 1.0))
        for i in range(9)
    )
    res = plan(ClusterSnapshot(brokers, parts), "full", goals="NetworkOutboundCapacityGoal")
    assert res.replica_moves == 0 and not res.refused
    out = broker_loads(res.after_snapshot)
    assert max(o["nw_out"] for o in out.values()) <= 800.0


def test_an_unmeetable_hard_goal_refuses_the_plan_with_the_reason():
    brokers = tuple(Broker(i, disk_bytes=100.0) for i in range(3))
    parts = tuple(
        PartitionReplicas("t", i, (i % 3,), i % 3, (i % 3,), PartitionLoad(size_bytes=90.0))
        for i in range(6)
    )
    res = plan(ClusterSnapshot(brokers, parts), "full")
    assert res.refused
    (reason,) = [u for u in res.unmet if u.startswith("DiskCapacityGoal")]
    assert "above the sum of the brokers' limits" in reason
    assert "at 180% of capacity > 80%" in reason


def test_unmet_goals_are_explained_and_the_summary_separates_reorders():
    # three racks, rack c has one broker: with RF 3 every partition keeps a replica there
    brokers = (
        Broker(1, "a"),
        Broker(2, "a"),
        Broker(3, "b"),
        Broker(4, "b"),
        Broker(5, "c"),
    )
    parts = tuple(
        PartitionReplicas("t", i, (1 + i % 2, 3 + i % 2, 5), 5, (1 + i % 2, 3 + i % 2, 5), None)
        for i in range(20)
    )
    res = plan(ClusterSnapshot(brokers, parts), "full", band=1.1)
    rd = next(r for r in res.reports if r.goal == "ReplicaDistributionGoal")
    assert not rd.satisfied
    assert re.match(r"replicas max/mean 1\.67 > 1\.10 \(broker 5\): ", rd.reason)
    assert "broker 5 holds 33% of topic t's replicas" in rd.reason
    assert "rack c has only 1 brokers" in rd.reason
    assert any(u.startswith("ReplicaDistributionGoal: replicas max/mean") for u in res.unmet)
    # leadership leaves broker 5 by reordering only: no replica moves
    assert res.replica_moves == 0 and res.reorder_only == len(res.reassignments) > 0
    assert res.headline() == (
        f"0 replica moves in {len(res.reassignments)} partition reassignments; "
        f"{res.reorder_only} only reorder replicas"
    )


def test_headline_counts_moves_and_reorders():
    brokers = tuple(Broker(i) for i in range(4))
    parts = tuple(
        PartitionReplicas("t", i, (0, 1), 0, (0, 1), PartitionLoad(1.0, 1.0, 1.0, 1.0))
        for i in range(8)
    )
    res = plan(ClusterSnapshot(brokers, parts), "full")
    moved = sum(1 for e in res.reassignments if set(e.replicas) != {0, 1})
    assert res.reorder_only == len(res.reassignments) - moved
    assert res.headline().startswith(
        f"{res.replica_moves:,} replica moves in {len(res.reassignments):,}"
    )
    assert res.summary()["reorder_only"] == res.reorder_only


def test_goal_names_parse_like_cruise_control():
    assert parse_goals("RackAwareGoal, diskcapacitygoal,com.linkedin.x.CpuCapacityGoal") == (
        "RackAwareGoal",
        "DiskCapacityGoal",
        "CpuCapacityGoal",
    )
    with pytest.raises(InputError, match="unknown goal 'Nope'"):
        parse_goals("Nope")
    with pytest.raises(InputError, match="listed twice"):
        parse_goals("RackAwareGoal,RackAware")
    with pytest.raises(InputError, match="for mode full only"):
        plan(ClusterSnapshot((Broker(0),), ()), "leaders", goals="RackAwareGoal")


def test_options_are_validated():
    with pytest.raises(InputError, match="regular expression"):
        PlanOptions(exclude_topics="(")
    with pytest.raises(InputError) as e:
        PlanOptions(capacity_thresholds={"cpu": 1.5})
    assert e.value.field == "cpu_capacity_threshold"
    snap = ClusterSnapshot((Broker(0), Broker(1)), ())
    with pytest.raises(InputError, match="broker 7 is not in the cluster"):
        plan(snap, "full", options=PlanOptions(exclude_brokers_for_leadership=(7,)))


def test_every_unmet_goal_names_the_brokers_shut_to_new_replicas():
    """The causes all explanations share (count goals and load goals alike) close each reason."""
    brokers = tuple(Broker(i, disk_bytes=1000.0) for i in range(3))
    parts = tuple(
        PartitionReplicas("t", i, (0,), 0, (0,), PartitionLoad(1.0, 1.0, 1.0, 50.0))
        for i in range(6)
    )
    res = plan(
        ClusterSnapshot(brokers, parts),
        "full",
        goals="ReplicaDistributionGoal,DiskUsageDistributionGoal",
        options=PlanOptions(exclude_brokers_for_replica_move=(1, 2)),
    )
    reasons = {r.goal: r.reason for r in res.reports if not r.satisfied}
    assert set(reasons) == {"ReplicaDistributionGoal", "DiskUsageDistributionGoal"}, reasons
    for goal, reason in reasons.items():
        assert reason.endswith("; 2 brokers are excluded from receiving replicas"), (goal, reason)
