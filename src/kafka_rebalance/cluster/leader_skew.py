"""Leader imbalance exactly as Kafka's two controllers judge it.

ZooKeeper controller (core KafkaController.checkAndTriggerAutoLeaderRebalance):
partitions are grouped by preferred replica (replicas.head); for each broker the
imbalance ratio is (partitions preferring it whose leader is someone else, a
leaderless partition included) / (partitions preferring it). When the ratio is
strictly above leader.imbalance.per.broker.percentage / 100 (default 10) the
controller elects the preferred replica for those partitions where it can lead:
it is alive and in the ISR (preferredReplicaPartitionLeaderElection).

KRaft controller (ReplicationControlManager): a partition is imbalanced as soon
as leader != replicas[0] (PartitionRegistration.hasPreferredLeader); there is no
per-broker percentage, every imbalanced partition is tried, at most
MAX_ELECTIONS_PER_IMBALANCE (1000) per pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import ClusterSnapshot, PartitionReplicas, TopicPartition

DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE = 10
MAX_ELECTIONS_PER_IMBALANCE = 1000


@dataclass(frozen=True, slots=True)
class BrokerLeaderImbalance:
    broker: int
    preferred: int  # partitions whose preferred replica is this broker
    not_led_by_preferred: int  # ... but led by another broker (or by none)
    ratio: float
    triggered: bool  # ratio > percentage/100: the ZK controller would act


def preferred_can_lead(p: PartitionReplicas, alive: set[int]) -> bool:
    """preferredReplicaPartitionLeaderElection: the preferred replica is alive and in the ISR."""
    pref = p.replicas[0]
    return pref in alive and pref in p.isr


def zk_leader_imbalance(
    snapshot: ClusterSnapshot,
    percentage: float = DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE,
) -> list[BrokerLeaderImbalance]:
    """Per broker ratio as the ZooKeeper controller computes it (brokers preferring nothing omitted)."""
    total: dict[int, int] = {}
    off: dict[int, int] = {}
    for p in snapshot.partitions:
        pref = p.replicas[0]
        total[pref] = total.get(pref, 0) + 1
        if p.leader != pref:
            off[pref] = off.get(pref, 0) + 1
    out = []
    for b in sorted(total):
        n, k = total[b], off.get(b, 0)
        ratio = k / n
        out.append(BrokerLeaderImbalance(b, n, k, ratio, ratio > percentage / 100.0))
    return out


def kraft_imbalanced_partitions(snapshot: ClusterSnapshot) -> list[TopicPartition]:
    """Partitions not led by their preferred replica: the KRaft controller's imbalancedPartitions."""
    return [p.tp for p in snapshot.partitions if p.leader != p.replicas[0]]
