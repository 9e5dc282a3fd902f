"""Leader balance: the min-cost-flow choice equals a brute force optimum on tiny clusters."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.cluster.leader_balance import min_change_leaders, plan_leader_balance
from kafka_rebalance.cluster.synthetic import rolling_restart, synthetic_cluster
from kafka_rebalance.model import Broker, ClusterSnapshot, PartitionReplicas


def brute(cands: list[list[int]], current: list[int], n_b: int, n_lead_brokers: int):
    """Lexicographic optimum: smallest max count, then smallest shortfall below floor, then fewest changes."""
    n = sum(1 for c in cands if c)
    lower = n // n_lead_brokers
    best = None
    choices = [c if c else [-1] for c in cands]
    for combo in itertools.product(*choices):
        cnt = [0] * n_b
        for b in combo:
            if b >= 0:
                cnt[b] += 1
        key = (
            max(cnt),
            sum(max(0, lower - c) for c in cnt[:n_lead_brokers]),
            sum(1 for b, cur in zip(combo, current) if b >= 0 and b != cur),
        )
        if best is None or key < best:
            best = key
    return best


@st.composite
def tiny(draw):
    n_b = draw(st.integers(2, 4))
    n_p = draw(st.integers(1, 7))
    cands, current = [], []
    for _ in range(n_p):
        c = sorted(draw(st.sets(st.integers(0, n_b - 1), min_size=0, max_size=3)))
        cands.append(c)
        current.append(draw(st.sampled_from(c + [-1])) if c else -1)
    return n_b, cands, current


@settings(max_examples=60, deadline=None)
@given(tiny())
def test_flow_matches_brute_force(case):
    n_b, cands, current = case
    ep = np.array([p for p, c in enumerate(cands) for _ in c], dtype=np.int64)
    eb = np.array([b for c in cands for b in c], dtype=np.int64)
    cur = np.array(current, dtype=np.int64)
    sol = min_change_leaders(ep, eb, cur, len(cands), n_b, leader_brokers=n_b)
    for p, c in enumerate(cands):
        assert (sol.choice[p] in c) if c else sol.choice[p] == -1
    cnt = np.bincount(sol.choice[sol.choice >= 0], minlength=n_b)
    n = sum(1 for c in cands if c)
    got = (int(cnt.max()) if len(cnt) else 0, int(np.maximum(0, n // n_b - cnt).sum()), sol.changes)
    assert got == brute(cands, current, n_b, n_b)


def test_rolling_restart_fixed_with_optimal_changes_and_no_data_moved():
    snap = synthetic_cluster(brokers=6, racks=3, partitions=300, seed=4)
    skewed = rolling_restart(snap)
    lb = plan_leader_balance(skewed)
    # only the order of replica lists changes: same replica sets
    by = {p.tp: p for p in skewed.partitions}
    for r in lb.reassignments:
        assert set(r.replicas) == set(by[r.tp].replicas)
        assert r.replicas[0] in by[r.tp].isr
    assert lb.leader_changes == lb.optimal_leader_changes
    assert max(lb.leaders_after.values()) - min(lb.leaders_after.values()) <= 1
    # no preferred-election alternative can do it with fewer changes: the last restarted broker
    # must get its fair share back, and every change moves one leader
    fair = 300 // 6
    assert lb.leader_changes >= sum(max(0, fair - c) for c in lb.leaders_before.values())


def test_only_isr_replicas_become_preferred():
    snap = ClusterSnapshot(
        (Broker(1), Broker(2), Broker(3, alive=False)),
        tuple(PartitionReplicas("t", i, (1, 2, 3), 1, (1, 3)) for i in range(4)),
    )
    lb = plan_leader_balance(snap)
    # broker 2 is out of every ISR and 3 is dead: nothing can change
    assert lb.reassignments == () and lb.leader_changes == 0


def test_by_bytes_evens_leader_bytes():
    from kafka_rebalance.model import PartitionLoad

    parts = []
    for i in range(12):
        parts.append(
            PartitionReplicas(
                "t",
                i,
                (1, 2),
                1 if i < 6 else 2,
                (1, 2),
                PartitionLoad(bytes_out=100.0 if i < 6 else 1.0, messages_in=1.0),
            )
        )
    snap = ClusterSnapshot((Broker(1), Broker(2)), tuple(parts))
    by_count = plan_leader_balance(snap)
    assert by_count.leader_changes == 0  # counts already even
    by_bytes = plan_leader_balance(snap, by="bytes", band=1.2)
    assert by_bytes.leader_changes > 0
    lead = {p.tp: p.leader for p in snap.partitions}
    for r in by_bytes.reassignments:
        lead[r.tp] = r.replicas[0]
    out = {1: 0.0, 2: 0.0}
    for p in snap.partitions:
        out[lead[p.tp]] += p.load.bytes_out
    assert max(out.values()) <= 1.2 * sum(out.values()) / 2
