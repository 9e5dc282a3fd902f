"""Cluster operations on a snapshot: describe, skew, preferred leader election, plan, `--generate`.

Each returns a frozen result whose `to_json()` is the object `kafka-rebalance cluster ...`
prints under `--format json`. Bad parameters raise InputError naming the parameter
(`seed`, `brokers`, `band`, ...); the CLI renames them to its flags.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cluster import kafka_json
from ..cluster.capacity_file import CapacityConfig, apply_capacities
from ..cluster.election import (
    AutoRebalanceResult,
    Controller,
    ElectionPlan,
    apply_preferred_election,
    auto_leader_rebalance,
    preferred_election,
)
from ..cluster.generate import generate_reassignment
from ..cluster.leader_skew import (
    DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE,
    BrokerLeaderImbalance,
    kraft_imbalanced_partitions,
    zk_leader_imbalance,
)
from ..cluster.planner import DEFAULT_PLAN_BAND, Mode, PlanOptions, PlanResult
from ..cluster.planner import plan as run_planner
from ..cluster.skew import DEFAULT_BALANCE_THRESHOLD, SkewReport, skew_report
from ..errors import InputError
from ..fields import INT64_MAX, INT64_MIN
from ..model import ClusterSnapshot, TopicPartition


def check_seed(seed: int, name: str = "seed") -> None:
    """The seed of a java.util.Random is a Java long."""
    if not INT64_MIN <= seed <= INT64_MAX:
        raise InputError(f"a Java long ({INT64_MIN}..{INT64_MAX}), got {seed}", field=name)


def check_percentage(pct: float, name: str = "leader_imbalance_per_broker_percentage") -> None:
    if not (math.isfinite(pct) and 0.0 <= pct <= 100.0):
        raise InputError(f"a percentage: a number in [0, 100], got {pct!r}", field=name)


# -- describe --------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterSummary:
    """Counts a person checks first: brokers, racks, partitions, and what is not healthy."""

    brokers: int
    alive_brokers: int
    racks: dict[str, int]  # rack ("(none)" for brokers without one) -> brokers
    topics: int
    partitions: int
    replicas: int
    under_replicated_partitions: int
    offline_partitions: int
    not_led_by_preferred: int
    has_load: bool
    # Partitions being reassigned (live clusters): kafka-topics.sh --describe's view of each.
    reassignments: tuple[dict[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.reassignments:
            extra = {
                "reassigning_partitions": len(self.reassignments),
                "reassignments": [dict(r) for r in self.reassignments],
            }
        return {
            "brokers": self.brokers,
            "alive_brokers": self.alive_brokers,
            "racks": dict(self.racks),
            "topics": self.topics,
            "partitions": self.partitions,
            "replicas": self.replicas,
            "under_replicated_partitions": self.under_replicated_partitions,
            "offline_partitions": self.offline_partitions,
            "not_led_by_preferred": self.not_led_by_preferred,
            "has_load": self.has_load,
            **extra,
        }


def replication_factor(p, reassignment) -> int:
    """TopicCommand.getReplicationFactor: while a reassignment runs, its replicas minus the adding
    ones (so a move of RF 3 never counts as RF 4); else the partition's replicas."""
    if reassignment is not None and set(p.replicas) & (
        set(reassignment.adding) | set(reassignment.removing)
    ):
        return len(reassignment.replicas) - len(reassignment.adding)
    return len(p.replicas)


def describe(snap: ClusterSnapshot, reassignments: Mapping | None = None) -> ClusterSummary:
    """The summary; `reassignments` ((topic, partition) -> replicas/adding/removing, from
    ListPartitionReassignments) make partitions in flight count with their real replication factor."""
    reassignments = reassignments or {}
    alive = {b.id for b in snap.brokers if b.alive}
    rf = {
        (p.topic, p.partition): replication_factor(p, reassignments.get((p.topic, p.partition)))
        for p in snap.partitions
    }
    moving = []
    for p in snap.partitions:
        r = reassignments.get((p.topic, p.partition))
        if r is not None:
            moving.append(
                {
                    "topic": p.topic,
                    "partition": p.partition,
                    "leader": p.leader,
                    "replicas": list(p.replicas),
                    "isr": list(p.isr),
                    "adding": list(r.adding),
                    "removing": list(r.removing),
                    "replication_factor": rf[(p.topic, p.partition)],
                }
            )
    racks: dict[str, int] = {}
    for b in snap.brokers:
        racks[b.rack or ""] = racks.get(b.rack or "", 0) + 1
    return ClusterSummary(
        brokers=len(snap.brokers),
        alive_brokers=len(alive),
        racks={k or "(none)": v for k, v in sorted(racks.items())},
        topics=len({p.topic for p in snap.partitions}),
        partitions=len(snap.partitions),
        replicas=sum(rf.values()),
        under_replicated_partitions=sum(
            1 for p in snap.partitions if len(p.isr) < rf[(p.topic, p.partition)]
        ),
        offline_partitions=sum(
            1 for p in snap.partitions if p.leader is None or p.leader not in alive
        ),
        not_led_by_preferred=len(kraft_imbalanced_partitions(snap)),
        has_load=any(p.load is not None for p in snap.partitions),
        reassignments=tuple(moving),
    )


# -- skew ------------------------------------------------------------------------


@dataclass(frozen=True)
class SkewResult:
    """Broker skew per resource (max/mean against a band) and leader imbalance as both controllers see it."""

    report: SkewReport
    zk: dict[int, BrokerLeaderImbalance]  # broker -> the ZooKeeper controller's imbalance ratio
    kraft_imbalanced_partitions: int
    threshold: float
    leader_imbalance_per_broker_percentage: float

    @property
    def skewed(self) -> list[str]:
        return self.report.skewed

    def to_json(self) -> dict[str, Any]:
        rep, zk = self.report, self.zk
        brokers = []
        for b in rep.brokers:
            z = zk.get(b.broker)
            brokers.append(
                {
                    "broker": b.broker,
                    "rack": b.rack,
                    "alive": b.alive,
                    "replicas": b.replicas,
                    "leaders": b.leaders,
                    "preferred_leaders": b.preferred_leaders,
                    "bytes_in": b.bytes_in,
                    "bytes_out": b.bytes_out,
                    "messages_in": b.messages_in,
                    "size_bytes": b.size_bytes,
                    "leader_imbalance_ratio": z.ratio if z else 0.0,
                    "leader_imbalance_triggered": bool(z and z.triggered),
                }
            )
        worst = sorted(rep.topics, key=lambda t: (-t.ratio, t.topic))[:10]
        return {
            "brokers": brokers,
            "max_over_mean": rep.max_over_mean,
            "threshold": self.threshold,
            "skewed": rep.skewed,
            "leader_imbalance": {
                "zk": {
                    "leader_imbalance_per_broker_percentage": self.leader_imbalance_per_broker_percentage,
                    "brokers_over": [b.broker for b in zk.values() if b.triggered],
                },
                "kraft": {"imbalanced_partitions": self.kraft_imbalanced_partitions},
            },
            "topic_spread": {
                "max_ratio": max((t.ratio for t in rep.topics), default=1.0),
                "worst": [
                    {
                        "topic": t.topic,
                        "replicas": t.replicas,
                        "max_per_broker": t.max_per_broker,
                        "min_per_broker": t.min_per_broker,
                        "ratio": t.ratio,
                    }
                    for t in worst
                ],
            },
        }


def skew(
    snap: ClusterSnapshot,
    threshold: float = DEFAULT_BALANCE_THRESHOLD,
    leader_imbalance_per_broker_percentage: float = DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE,
) -> SkewResult:
    """Max/mean per resource against `threshold`, and leader imbalance as ZooKeeper and KRaft see it."""
    pct = leader_imbalance_per_broker_percentage
    return SkewResult(
        report=skew_report(snap, threshold),
        zk={b.broker: b for b in zk_leader_imbalance(snap, pct)},
        kraft_imbalanced_partitions=len(kraft_imbalanced_partitions(snap)),
        threshold=threshold,
        leader_imbalance_per_broker_percentage=pct,
    )


# -- elect -----------------------------------------------------------------------


@dataclass(frozen=True)
class ElectionResult:
    """The partitions a preferred leader election elects (and why the others are skipped)."""

    plan: ElectionPlan
    after: ClusterSnapshot = field(repr=False)  # the cluster once they are elected

    @property
    def partitions(self) -> list[TopicPartition]:
        return list(self.plan.elect)

    def election_json(self) -> dict[str, Any]:
        """The `--path-to-json-file` input of kafka-leader-election.sh."""
        return kafka_json.election_json(self.partitions)

    def to_json(self) -> dict[str, Any]:
        tps = self.partitions
        return {
            "elect": len(tps),
            "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in tps],
            "skipped": [
                {
                    "topic": s.tp.topic,
                    "partition": s.tp.partition,
                    "reason": s.reason.value,
                    "detail": s.detail,
                }
                for s in self.plan.skipped
            ],
        }


@dataclass(frozen=True)
class AutoElectionResult:
    """What `auto.leader.rebalance.enable` would elect with this controller."""

    result: AutoRebalanceResult

    @property
    def partitions(self) -> list[TopicPartition]:
        return [tp for tp, _, _ in self.result.elected]

    def election_json(self) -> dict[str, Any]:
        return kafka_json.election_json(self.partitions)

    def to_json(self) -> dict[str, Any]:
        res = self.result
        return {
            "controller": res.controller.value,
            "passes": res.passes,
            "elect": len(res.elected),
            "partitions": [
                {"topic": tp.topic, "partition": tp.partition, "from": old, "to": new}
                for tp, old, new in res.elected
            ],
            "still_not_preferred": len(kraft_imbalanced_partitions(res.after)),
        }


def elect(
    snap: ClusterSnapshot,
    partitions: Sequence[TopicPartition] | None = None,
    topics: Sequence[str] | None = None,
) -> ElectionResult:
    """Preferred leader election, as kafka-leader-election.sh --election-type PREFERRED decides it."""
    ep = preferred_election(snap, partitions, topics)
    return ElectionResult(ep, apply_preferred_election(snap, ep.elect))


def auto_elect(
    snap: ClusterSnapshot,
    controller: str | Controller,
    leader_imbalance_per_broker_percentage: float = DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE,
) -> AutoElectionResult:
    """What `auto.leader.rebalance.enable` would elect with a `zk` or `kraft` controller."""
    check_percentage(leader_imbalance_per_broker_percentage)
    return AutoElectionResult(
        auto_leader_rebalance(snap, Controller(controller), leader_imbalance_per_broker_percentage)
    )


# -- plan ------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanOutcome:
    """A reassignment plan, with the replica moves `--generate` would make when asked to compare."""

    plan: PlanResult
    before: ClusterSnapshot = field(repr=False)
    generate: dict[str, int] | None = None  # {"replica_moves", "seed"}

    @property
    def complete(self) -> bool:
        return self.plan.complete

    @property
    def reassignments(self) -> tuple[kafka_json.Reassignment, ...]:
        return self.plan.reassignments

    @property
    def after_snapshot(self) -> ClusterSnapshot:
        return self.plan.after_snapshot

    def reassignment_json(self) -> dict[str, Any]:
        """The `--reassignment-json-file` input of kafka-reassign-partitions.sh."""
        return kafka_json.reassignment_json(self.plan.reassignments)

    def leader_changes(self) -> list[TopicPartition]:
        """Partitions whose leader the plan changes: the election to run once it completes."""
        after = {p.tp: p for p in self.plan.after_snapshot.partitions}
        return [
            p.tp
            for p in self.before.partitions
            if after[p.tp].leader != p.leader and after[p.tp].leader is not None
        ]

    def election_json(self) -> dict[str, Any]:
        return kafka_json.election_json(self.leader_changes())

    def to_json(self) -> dict[str, Any]:
        result = self.plan.summary()
        if self.generate is not None:
            result["generate"] = dict(self.generate)
        return result


def plan(
    snap: ClusterSnapshot,
    mode: str | Mode = Mode.FULL,
    brokers: Sequence[int] = (),
    band: float = DEFAULT_PLAN_BAND,
    capacity_threshold: float | None = None,
    leaders_by: str = "count",
    compare_generate: bool = False,
    seed: int = 0,
    topic_spread: bool = True,
    broker_racks: dict[int, str] | None = None,
    goals: Sequence[str] | str | None = None,
    options: PlanOptions | None = None,
    capacity: CapacityConfig | None = None,
) -> PlanOutcome:
    """A minimal-move reassignment plan for `mode` (full, add-brokers, remove-brokers, leaders,
    fix-offline, demote), with Cruise Control's `goals` (full mode) and `options` (thresholds,
    exclusions); `capacity` (a parsed capacity file) sets every broker's capacities first."""
    if compare_generate:
        check_seed(seed)
    if capacity is not None:
        snap = apply_capacities(snap, capacity)
    res = run_planner(
        snap,
        mode.value if isinstance(mode, Mode) else mode,
        list(brokers),
        band=band,
        capacity_threshold=capacity_threshold,
        leaders_by_bytes=(leaders_by == "bytes"),
        topic_spread=topic_spread,
        broker_racks=broker_racks,
        goals=goals,
        options=options,
    )
    gen = None
    if compare_generate:
        # The plan's brokers: in add-brokers mode they include added brokers the snapshot did not list
        # (given by --broker-racks or, without racks, by --brokers alone); --generate must place on them too.
        brokers_after = res.after_snapshot.brokers
        targets = [
            b.id
            for b in brokers_after
            if b.alive and not (res.mode is Mode.REMOVE_BROKERS and b.id in brokers)
        ]
        proposed = generate_reassignment(
            ClusterSnapshot(brokers_after, snap.partitions), targets, seed=seed
        )
        moves = 0
        for p in snap.partitions:
            new = proposed.get((p.topic, p.partition))
            if new is not None:
                moves += len(set(new) - set(p.replicas))
        gen = {"replica_moves": moves, "seed": seed}
    return PlanOutcome(res, snap, gen)


# -- generate --------------------------------------------------------------------


@dataclass(frozen=True)
class GenerateResult:
    """What kafka-reassign-partitions.sh --generate proposes (its random seed made explicit)."""

    reassignments: tuple[kafka_json.Reassignment, ...]
    replica_moves: int
    seed: int

    def reassignment_json(self) -> dict[str, Any]:
        return kafka_json.reassignment_json(list(self.reassignments))

    def to_json(self) -> dict[str, Any]:
        return {
            "partitions": len(self.reassignments),
            "replica_moves": self.replica_moves,
            "seed": self.seed,
        }


def generate(
    snap: ClusterSnapshot,
    brokers: Sequence[int] | None = None,
    topics: Sequence[str] | None = None,
    seed: int = 0,
) -> GenerateResult:
    """Emulate `kafka-reassign-partitions.sh --generate` on `brokers` (default: the alive ones)."""
    check_seed(seed)
    gen = generate_reassignment(snap, list(brokers) if brokers else None, topics, seed=seed)
    current = {(p.topic, p.partition): p.replicas for p in snap.partitions}
    entries = tuple(kafka_json.Reassignment(t, n, tuple(r)) for (t, n), r in gen.items())
    moves = sum(len(set(e.replicas) - set(current[(e.topic, e.partition)])) for e in entries)
    return GenerateResult(entries, moves, seed)
