"""Broker skew: what each broker carries, and max/mean per resource against a balance band.

Load attribution follows docs/formats.md section 3: every replica carries the
partition's `bytes_in` (the leader from producers, followers by replication)
and its `size_bytes`; only the leader carries `bytes_out` and `messages_in`
(MessagesInPerSec is counted where the produce request lands). Means are over
alive brokers, because a dead broker carries nothing it could give away.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..model import ClusterSnapshot

# Cruise Control's default balance band (balance.threshold = 1.10): a resource is
# skewed when its busiest broker carries more than 10% over the mean.
DEFAULT_BALANCE_THRESHOLD = 1.10

RESOURCES = (
    "replicas",
    "leaders",
    "preferred_leaders",
    "bytes_in",
    "bytes_out",
    "messages_in",
    "size_bytes",
)


@dataclass(frozen=True, slots=True)
class BrokerLoad:
    broker: int
    rack: str | None
    alive: bool
    replicas: int = 0
    leaders: int = 0
    preferred_leaders: int = 0
    bytes_in: float = 0.0
    bytes_out: float = 0.0
    messages_in: float = 0.0
    size_bytes: float = 0.0

    def get(self, resource: str) -> float:
        return getattr(self, resource)


@dataclass(frozen=True, slots=True)
class TopicSpread:
    """How evenly one topic's replicas sit on the alive brokers; ratio 1.0 = as even as integers allow."""

    topic: str
    replicas: int
    max_per_broker: int
    min_per_broker: int
    ratio: float


@dataclass(frozen=True, slots=True)
class SkewReport:
    brokers: tuple[BrokerLoad, ...]
    max_over_mean: dict[str, float]
    threshold: float
    topics: tuple[TopicSpread, ...] = field(default=())

    @property
    def skewed(self) -> list[str]:
        return [r for r, v in self.max_over_mean.items() if v > self.threshold]


def max_over_mean(values: list[float]) -> float:
    """max/mean; 1.0 when nothing is carried at all (an empty resource is balanced)."""
    if not values:
        return 1.0
    mean = sum(values) / len(values)
    if mean <= 0:
        return 1.0
    return max(values) / mean


def broker_loads(snapshot: ClusterSnapshot) -> list[BrokerLoad]:
    acc: dict[int, dict[str, float]] = {b.id: {r: 0.0 for r in RESOURCES} for b in snapshot.brokers}
    for p in snapshot.partitions:
        ld = p.load
        for r in p.replicas:
            a = acc.setdefault(r, {k: 0.0 for k in RESOURCES})
            a["replicas"] += 1
            if ld is not None:
                a["bytes_in"] += ld.bytes_in
                a["size_bytes"] += ld.size_bytes
        acc[p.replicas[0]]["preferred_leaders"] += 1
        if p.leader is not None:
            a = acc[p.leader]
            a["leaders"] += 1
            if ld is not None:
                a["bytes_out"] += ld.bytes_out
                a["messages_in"] += ld.messages_in
    info = {b.id: b for b in snapshot.brokers}
    out = []
    for bid in sorted(acc):
        a = acc[bid]
        b = info.get(bid)
        out.append(
            BrokerLoad(
                bid,
                b.rack if b else None,
                b.alive if b else False,
                int(a["replicas"]),
                int(a["leaders"]),
                int(a["preferred_leaders"]),
                a["bytes_in"],
                a["bytes_out"],
                a["messages_in"],
                a["size_bytes"],
            )
        )
    return out


def topic_spread(snapshot: ClusterSnapshot) -> list[TopicSpread]:
    alive = [b.id for b in snapshot.brokers if b.alive]
    if not alive:
        return []
    per: dict[str, dict[int, int]] = {}
    for p in snapshot.partitions:
        d = per.setdefault(p.topic, {})
        for r in p.replicas:
            d[r] = d.get(r, 0) + 1
    out = []
    for topic in sorted(per):
        d = per[topic]
        counts = [d.get(b, 0) for b in alive]
        total = sum(d.values())
        target = math.ceil(total / len(alive)) if total else 1
        out.append(
            TopicSpread(topic, total, max(counts), min(counts), max(counts) / max(target, 1))
        )
    return out


def skew_report(
    snapshot: ClusterSnapshot, threshold: float = DEFAULT_BALANCE_THRESHOLD
) -> SkewReport:
    loads = broker_loads(snapshot)
    alive = [b for b in loads if b.alive]
    ratios = {r: max_over_mean([b.get(r) for b in alive]) for r in RESOURCES}
    return SkewReport(tuple(loads), ratios, threshold, tuple(topic_spread(snapshot)))
