"""Leader balance with zero data moved: choose each partition's preferred leader among its replicas.

Only replicas that could lead today (alive and in the ISR) are candidates.
Reordering a replica list moves no data (`kafka-reassign-partitions.sh` with
the same replica set), and a preferred election then moves leadership.

The count objective is solved exactly as a min-cost flow
(source -> partition -> candidate broker -> sink):
1. the smallest per-broker maximum U (from ceil(P/B) up) that admits a leader
   for every partition;
2. as many brokers as possible reach floor(P/B): the first floor(P/B) units
   into each broker cost -M (M larger than any number of changes);
3. the fewest leader changes: an arc costs 1 unless it is the current leader.
So the number of leader changes is the exact optimum for the most even
leader counts reachable. An optional greedy pass then evens leader bytes
(bytes_out, messages_in) inside a count band; changes it adds are reported.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import ClusterSnapshot, TopicPartition
from .kafka_json import Reassignment


@dataclass(frozen=True, slots=True)
class LeaderChoice:
    choice: np.ndarray  # broker index chosen per partition, -1 where nobody can lead
    changes: int  # partitions whose leader differs from `current`
    upper: int  # per-broker maximum the solution respects
    lower: int  # floor target (some brokers may be below it when the ISRs do not allow)


def min_change_leaders(
    edge_p: np.ndarray,
    edge_b: np.ndarray,
    current: np.ndarray,
    n_partitions: int,
    n_brokers: int,
    leader_brokers: int | None = None,
) -> LeaderChoice:
    """Exact min-cost-flow choice of one leader per partition among the (partition, broker) edges.

    `current[p]` is the broker leading now (-1 none); `leader_brokers` is the
    number of brokers leadership should spread over (default: those on an edge).
    """
    from ortools.graph.python import min_cost_flow

    P, B = n_partitions, n_brokers
    choice = np.full(P, -1, dtype=np.int64)
    if len(edge_p) == 0:
        return LeaderChoice(choice, 0, 0, 0)
    has = np.zeros(P, dtype=bool)
    has[edge_p] = True
    n_lead = int(has.sum())
    n_b = int(leader_brokers) if leader_brokers is not None else len(np.unique(edge_b))
    n_b = max(n_b, 1)
    lower = n_lead // n_b
    upper = -(-n_lead // n_b)
    big = n_lead + 1
    src, sink = P + B, P + B + 1
    cost_e = (edge_b != current[edge_p]).astype(np.int64)
    while True:
        smcf = min_cost_flow.SimpleMinCostFlow()
        pn = np.nonzero(has)[0]
        smcf.add_arcs_with_capacity_and_unit_cost(
            np.full(len(pn), src, dtype=np.int32),
            pn.astype(np.int32),
            np.ones(len(pn), dtype=np.int64),
            np.zeros(len(pn), dtype=np.int64),
        )
        first = len(pn)
        smcf.add_arcs_with_capacity_and_unit_cost(
            edge_p.astype(np.int32),
            (P + edge_b).astype(np.int32),
            np.ones(len(edge_p), dtype=np.int64),
            cost_e,
        )
        bs = np.arange(B, dtype=np.int32)
        if lower > 0:
            smcf.add_arcs_with_capacity_and_unit_cost(
                P + bs,
                np.full(B, sink, dtype=np.int32),
                np.full(B, lower, dtype=np.int64),
                np.full(B, -big, dtype=np.int64),
            )
        if upper - lower > 0:
            smcf.add_arcs_with_capacity_and_unit_cost(
                P + bs,
                np.full(B, sink, dtype=np.int32),
                np.full(B, upper - lower, dtype=np.int64),
                np.zeros(B, dtype=np.int64),
            )
        smcf.set_node_supply(src, n_lead)
        smcf.set_node_supply(sink, -n_lead)
        status = smcf.solve_max_flow_with_min_cost()
        if status != smcf.OPTIMAL:
            raise RuntimeError(f"min cost flow failed with status {status}")
        flows = smcf.flows(np.arange(first, first + len(edge_p)))
        if int(flows.sum()) == n_lead:
            break
        upper += 1  # some partition's candidates are all full: the even maximum is not reachable
    sel = flows > 0
    choice[edge_p[sel]] = edge_b[sel]
    changes = int((choice[has] != current[has]).sum())
    return LeaderChoice(choice, changes, upper, lower)


def refine_leader_bytes(
    choice: np.ndarray,
    edge_p: np.ndarray,
    edge_b: np.ndarray,
    n_brokers: int,
    weights: list[tuple[np.ndarray, float]],
    count_upper: int,
    allowed: np.ndarray | None = None,
) -> np.ndarray:
    """Greedy: move leadership off brokers above a weight limit, never over any limit or count_upper.

    `weights` are (per-partition weight, per-broker limit) pairs, evened in
    order; a move must keep every pair and the leader count within limits.
    """
    choice = choice.copy()
    order = np.argsort(edge_p, kind="stable")
    ep, eb = edge_p[order], edge_b[order]
    starts = np.searchsorted(ep, np.arange(len(choice)))
    ends = np.searchsorted(ep, np.arange(len(choice)), side="right")
    has = choice >= 0
    edges = set(zip(edge_p.tolist(), edge_b.tolist()))
    cnt = np.bincount(choice[has], minlength=n_brokers)
    loads = [np.bincount(choice[has], weights=w[has], minlength=n_brokers) for w, _ in weights]
    limits = [lim for _, lim in weights]
    for k in range(len(weights)):
        w = weights[k][0]
        stuck: set[int] = set()
        while True:
            over = [
                b
                for b in np.argsort(-loads[k], kind="stable").tolist()
                if loads[k][b] > limits[k] and b not in stuck
            ]
            if not over:
                break
            a = over[0]
            led = np.nonzero(choice == a)[0]
            led = led[np.argsort(-w[led], kind="stable")]
            if allowed is not None:
                led = led[allowed[led]]
            moved = False
            for p in led.tolist():
                wp = w[p]
                if wp <= 0:
                    break
                best, best_load = -1, None
                for b in eb[starts[p] : ends[p]].tolist():
                    if b == a or cnt[b] + 1 > count_upper:
                        continue
                    if any(loads[j][b] + weights[j][0][p] > limits[j] for j in range(k + 1)):
                        continue
                    if best < 0 or loads[k][b] < best_load:
                        best, best_load = b, loads[k][b]
                if best < 0:
                    best, back = _swap_partner(
                        p,
                        a,
                        choice,
                        eb[starts[p] : ends[p]].tolist(),
                        edges,
                        w,
                        loads,
                        limits,
                        weights,
                        k,
                    )
                    if back >= 0:
                        _shift(choice, back, best, a, cnt, loads, weights)
                if best >= 0:
                    _shift(choice, p, a, best, cnt, loads, weights)
                    moved = True
                    if loads[k][a] <= limits[k]:
                        break
            if not moved:
                stuck.add(a)
    return choice


def _shift(choice, p, a, b, cnt, loads, weights) -> None:
    choice[p] = b
    cnt[a] -= 1
    cnt[b] += 1
    for j in range(len(weights)):
        loads[j][a] -= weights[j][0][p]
        loads[j][b] += weights[j][0][p]


def _swap_partner(p, a, choice, cands, edges, w, loads, limits, weights, k) -> tuple[int, int]:
    """Leadership of p to b and of a lighter q back from b to a: counts stay, weight moves."""
    for b in cands:
        if b == a:
            continue
        led_b = np.nonzero(choice == b)[0]
        if len(led_b) == 0:
            continue
        led_b = led_b[np.argsort(w[led_b], kind="stable")]
        for q in led_b.tolist():
            if w[q] >= w[p]:
                break
            if (q, a) not in edges:
                continue
            ok = True
            for j in range(k + 1):
                wj = weights[j][0]
                if loads[j][b] + wj[p] - wj[q] > limits[j] or (
                    j < k and loads[j][a] - wj[p] + wj[q] > limits[j]
                ):
                    ok = False
                    break
            if ok:
                return b, q
    return -1, -1


@dataclass(frozen=True, slots=True)
class LeaderBalance:
    reassignments: tuple[Reassignment, ...]  # same replica sets, chosen leader first
    elect: tuple[TopicPartition, ...]  # partitions whose leader then changes
    leader_changes: int
    optimal_leader_changes: int  # exact optimum for the count objective
    leaders_before: dict[int, int]
    leaders_after: dict[int, int]


def plan_leader_balance(
    snapshot: ClusterSnapshot, by: str = "count", band: float = 1.09
) -> LeaderBalance:
    """Reorder replica lists so preferred leaders are even; `by="bytes"` also evens leader bytes."""
    ids = sorted(
        {b.id for b in snapshot.brokers} | {r for p in snapshot.partitions for r in p.replicas}
    )
    index = {b: i for i, b in enumerate(ids)}
    alive = {b.id for b in snapshot.brokers if b.alive}
    parts = snapshot.partitions
    ep, eb = [], []
    current = np.full(len(parts), -1, dtype=np.int64)
    for i, p in enumerate(parts):
        isr = set(p.isr)
        if p.leader is not None:
            current[i] = index[p.leader]
        for r in p.replicas:
            if r in alive and r in isr:
                ep.append(i)
                eb.append(index[r])
    edge_p = np.array(ep, dtype=np.int64)
    edge_b = np.array(eb, dtype=np.int64)
    sol = min_change_leaders(
        edge_p, edge_b, current, len(parts), len(ids), leader_brokers=len(alive)
    )
    choice = sol.choice
    if by == "bytes":
        n_lead = int((choice >= 0).sum())
        upper = max(sol.upper, int(band * n_lead / max(len(alive), 1)))
        weights = []
        for attr in ("bytes_out", "messages_in"):
            w = np.array([getattr(p.load, attr) if p.load else 0.0 for p in parts])
            tot = w.sum()
            if tot > 0:
                weights.append((w, band * tot / max(len(alive), 1)))
        if weights:
            choice = refine_leader_bytes(choice, edge_p, edge_b, len(ids), weights, upper)
    elif by != "count":
        raise ValueError(f"unknown objective {by!r}")
    reassign, elect = [], []
    for i, p in enumerate(parts):
        c = int(choice[i])
        if c < 0:
            continue
        lead = ids[c]
        if p.replicas[0] != lead:
            reps = (lead,) + tuple(r for r in p.replicas if r != lead)
            reassign.append(Reassignment(p.topic, p.partition, reps))
        if p.leader != lead:
            elect.append(p.tp)
    before: dict[int, int] = {b: 0 for b in sorted(alive)}
    after: dict[int, int] = {b: 0 for b in sorted(alive)}
    for i, p in enumerate(parts):
        if p.leader is not None:
            before[p.leader] = before.get(p.leader, 0) + 1
        now = ids[int(choice[i])] if choice[i] >= 0 else p.leader
        if now is not None:
            after[now] = after.get(now, 0) + 1
    return LeaderBalance(tuple(reassign), tuple(elect), len(elect), sol.changes, before, after)
