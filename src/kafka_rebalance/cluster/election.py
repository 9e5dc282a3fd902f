"""Preferred leader election: which partitions to elect, which Kafka would refuse, and why.

`preferred_election` mirrors what the controller answers for each partition of
an ElectLeaders(PREFERRED) request: ELECTION_NOT_NEEDED when the preferred
replica already leads, PREFERRED_LEADER_NOT_AVAILABLE when it is dead or out of
the ISR, UNKNOWN_TOPIC_OR_PARTITION when the partition does not exist.

`auto_leader_rebalance` emulates `auto.leader.rebalance.enable=true` over a
snapshot for both controller flavours (see leader_skew.py for the rules).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ..model import ClusterSnapshot, PartitionReplicas, TopicPartition
from .leader_skew import (
    DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE,
    MAX_ELECTIONS_PER_IMBALANCE,
    preferred_can_lead,
    zk_leader_imbalance,
)


class SkipReason(enum.Enum):
    ELECTION_NOT_NEEDED = "ELECTION_NOT_NEEDED"
    PREFERRED_LEADER_NOT_AVAILABLE = "PREFERRED_LEADER_NOT_AVAILABLE"
    UNKNOWN_TOPIC_OR_PARTITION = "UNKNOWN_TOPIC_OR_PARTITION"


class Controller(enum.Enum):
    ZK = "zk"
    KRAFT = "kraft"


@dataclass(frozen=True, slots=True)
class Skipped:
    tp: TopicPartition
    reason: SkipReason
    detail: str


@dataclass(frozen=True, slots=True)
class ElectionPlan:
    elect: tuple[TopicPartition, ...]
    skipped: tuple[Skipped, ...]


def _why_not(p: PartitionReplicas, alive: set[int]) -> str:
    pref = p.replicas[0]
    if pref not in alive:
        return f"preferred replica {pref} is not alive"
    return f"preferred replica {pref} is not in the ISR {list(p.isr)}"


def preferred_election(
    snapshot: ClusterSnapshot,
    partitions: Sequence[TopicPartition] | None = None,
    topics: Iterable[str] | None = None,
) -> ElectionPlan:
    """Partitions to put in the election JSON; requested ones that Kafka would fail are skipped.

    With no `partitions`, every partition (of `topics` when given) is considered
    and those already led by their preferred replica are left out silently, as
    `kafka-leader-election.sh --all-topic-partitions` does.
    """
    alive = {b.id for b in snapshot.brokers if b.alive}
    by_tp = {p.tp: p for p in snapshot.partitions}
    topic_set = set(topics) if topics is not None else None
    explicit = partitions is not None
    wanted = list(partitions) if partitions is not None else [p.tp for p in snapshot.partitions]
    elect: list[TopicPartition] = []
    skipped: list[Skipped] = []
    for tp in wanted:
        if topic_set is not None and tp.topic not in topic_set:
            continue
        p = by_tp.get(tp)
        if p is None:
            skipped.append(
                Skipped(
                    tp, SkipReason.UNKNOWN_TOPIC_OR_PARTITION, "no such partition in the snapshot"
                )
            )
            continue
        if p.leader == p.replicas[0]:
            if explicit:
                skipped.append(
                    Skipped(
                        tp,
                        SkipReason.ELECTION_NOT_NEEDED,
                        f"preferred replica {p.replicas[0]} already leads",
                    )
                )
            continue
        if not preferred_can_lead(p, alive):
            skipped.append(
                Skipped(tp, SkipReason.PREFERRED_LEADER_NOT_AVAILABLE, _why_not(p, alive))
            )
            continue
        elect.append(tp)
    return ElectionPlan(tuple(elect), tuple(skipped))


def apply_preferred_election(
    snapshot: ClusterSnapshot, elect: Iterable[TopicPartition]
) -> ClusterSnapshot:
    """The snapshot after the preferred replica of each given partition became leader."""
    todo = set(elect)
    parts = tuple(
        replace(p, leader=p.replicas[0]) if p.tp in todo else p for p in snapshot.partitions
    )
    return ClusterSnapshot(snapshot.brokers, parts)


@dataclass(frozen=True, slots=True)
class AutoRebalanceResult:
    controller: Controller
    after: ClusterSnapshot
    elected: tuple[
        tuple[TopicPartition, int | None, int | None], ...
    ]  # (tp, old leader, new leader)
    passes: int  # KRaft: controller passes of at most MAX_ELECTIONS_PER_IMBALANCE elections; ZK: 1


def _kraft_preferred_leader(p: PartitionReplicas, alive: set[int]) -> int | None:
    """PartitionChangeBuilder.electPreferredLeader: preferred, else the current leader, else the first valid."""

    def valid(b: int | None) -> bool:
        return b is not None and b in alive and b in p.isr

    if valid(p.replicas[0]):
        return p.replicas[0]
    if valid(p.leader):
        return p.leader
    for r in p.replicas[1:]:
        if valid(r):
            return r
    return None  # no ELR in a snapshot: stays leaderless


def auto_leader_rebalance(
    snapshot: ClusterSnapshot,
    controller: Controller = Controller.KRAFT,
    percentage: float = DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE,
    max_elections: int = MAX_ELECTIONS_PER_IMBALANCE,
) -> AutoRebalanceResult:
    """What the controller does on its own at the next leader.imbalance.check.interval."""
    alive = {b.id for b in snapshot.brokers if b.alive}
    changes: dict[TopicPartition, int | None] = {}
    if controller is Controller.ZK:
        passes = 1
        triggered = {b.broker for b in zk_leader_imbalance(snapshot, percentage) if b.triggered}
        for p in snapshot.partitions:
            pref = p.replicas[0]
            if pref in triggered and p.leader != pref and preferred_can_lead(p, alive):
                changes[p.tp] = pref
    else:
        imbalanced = [p for p in snapshot.partitions if p.leader != p.replicas[0]]
        for p in imbalanced:
            new = _kraft_preferred_leader(p, alive)
            if new != p.leader:
                changes[p.tp] = new
        # a pass stops once it has produced max_elections change records, then reschedules itself
        passes = max(1 if imbalanced else 0, -(-len(changes) // max_elections))
    elected = []
    parts = []
    for p in snapshot.partitions:
        if p.tp in changes:
            elected.append((p.tp, p.leader, changes[p.tp]))
            parts.append(replace(p, leader=changes[p.tp]))
        else:
            parts.append(p)
    return AutoRebalanceResult(
        controller, ClusterSnapshot(snapshot.brokers, tuple(parts)), tuple(elected), passes
    )
