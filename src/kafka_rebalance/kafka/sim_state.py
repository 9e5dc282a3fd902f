"""The simulated cluster's state: placement, ISR, configs, and reassignments copying over time.

No sockets and no clock here: every operation takes `now` (virtual seconds),
so the server and the tests drive the same state the same way.

Replication model. An adding replica fetches the partition's bytes from the
current leader. Its rate is the smaller of the leader's and the follower's
budget, each shared equally among the copies that broker serves or receives:
the budget is `leader.replication.throttled.rate` (on the leader) or
`follower.replication.throttled.rate` (on the follower) when the topic's
`leader/follower.replication.throttled.replicas` lists that `partition:broker`
(or `*`), else the broker's fixed bandwidth. A caught-up replica joins the
ISR; when all adding replicas are in, the replica set becomes the target,
removed replicas are deleted and, if the leader left, the first target replica
in the ISR leads (as Kafka's controller does after a reassignment).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..fields import INT64_MAX
from ..model import Broker, ClusterSnapshot, PartitionLoad, PartitionReplicas

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_CONFIG = 40
INVALID_REQUEST = 42
PREFERRED_LEADER_NOT_AVAILABLE = 80
ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
ELECTION_NOT_NEEDED = 84
NO_REASSIGNMENT_IN_PROGRESS = 85

BROKER_CONFIG_DEFAULTS = {  # the throttles default to Long.MAX_VALUE
    "leader.replication.throttled.rate": str(INT64_MAX),
    "follower.replication.throttled.rate": str(INT64_MAX),
    "replica.alter.log.dirs.io.max.bytes.per.second": str(INT64_MAX),
}
TOPIC_CONFIG_DEFAULTS = {
    "leader.replication.throttled.replicas": "",
    "follower.replication.throttled.replicas": "",
    "retention.ms": "604800000",
    "retention.bytes": "-1",
    "cleanup.policy": "delete",
    "min.insync.replicas": "1",
    "segment.bytes": "1073741824",
}
LIST_CONFIGS = {
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
    "cleanup.policy",
}


class ConfigError(ValueError):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class PartitionState:
    topic: str
    partition: int
    replicas: list[int]
    leader: int | None
    isr: list[int]
    size_bytes: float
    load: PartitionLoad | None
    leader_epoch: int = 0


@dataclass
class Reassignment:
    original: list[int]
    target: list[int]
    copied: dict[int, float] = field(default_factory=dict)  # adding replica -> bytes copied

    @property
    def adding(self) -> list[int]:
        return [b for b in self.target if b not in self.original]

    @property
    def removing(self) -> list[int]:
        return [b for b in self.original if b not in self.target]

    @property
    def replicas(self) -> list[int]:
        """Kafka's merged list during a reassignment: target first, then the replicas leaving."""
        return self.target + self.removing


def validate_config(name: str, value: str, is_topic: bool) -> None:
    known = TOPIC_CONFIG_DEFAULTS if is_topic else BROKER_CONFIG_DEFAULTS
    if name not in known:
        raise ConfigError(
            INVALID_CONFIG, f"Unknown {'topic' if is_topic else 'broker'} config name: {name}"
        )
    if name.endswith("throttled.rate") or name.endswith("bytes.per.second"):
        try:
            if int(value) < 0:
                raise ValueError
        except ValueError:
            raise ConfigError(
                INVALID_CONFIG, f"Invalid value {value} for configuration {name}"
            ) from None
    if name.endswith("throttled.replicas") and value.strip() not in ("", "*"):
        for item in value.split(","):
            parts = item.strip().split(":")
            if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
                raise ConfigError(
                    INVALID_CONFIG,
                    f"Invalid value {value} for configuration {name}: "
                    "must be the wildcard (*) or a list of partition:broker",
                )


class ClusterState:
    """Mutable cluster, advanced in virtual time by `advance(now)`."""

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        *,
        broker_bandwidth: float = 100e6,
        cluster_id: str = "sim-kafka-rebalance",
    ) -> None:
        self.brokers: dict[int, Broker] = {b.id: b for b in snapshot.brokers}
        self.partitions: dict[tuple[str, int], PartitionState] = {}
        for p in snapshot.partitions:
            size = p.load.size_bytes if p.load is not None else 0.0
            self.partitions[(p.topic, p.partition)] = PartitionState(
                p.topic, p.partition, list(p.replicas), p.leader, list(p.isr), float(size), p.load
            )
        self.by_topic: dict[str, list[tuple[str, int]]] = {}
        for key in sorted(self.partitions):
            self.by_topic.setdefault(key[0], []).append(key)
        self.reassignments: dict[tuple[str, int], Reassignment] = {}
        self.broker_configs: dict[int, dict[str, str]] = {b: {} for b in self.brokers}
        self.topic_configs: dict[str, dict[str, str]] = {t: {} for t, _ in self.partitions}
        self.broker_bandwidth = float(broker_bandwidth)
        self.cluster_id = cluster_id
        self.now = 0.0
        self.completed: list[
            tuple[float, str, int]
        ] = []  # (time, topic, partition) of finished reassignments

    # -- views --------------------------------------------------------------------------------

    def alive(self, broker: int) -> bool:
        b = self.brokers.get(broker)
        return b is not None and b.alive

    def live_brokers(self) -> list[Broker]:
        return [self.brokers[i] for i in sorted(self.brokers) if self.brokers[i].alive]

    def controller_id(self) -> int:
        live = self.live_brokers()
        return live[0].id if live else -1

    def topics(self) -> list[str]:
        return sorted(self.by_topic)

    def replicas_of(self, key: tuple[str, int]) -> list[int]:
        r = self.reassignments.get(key)
        return r.replicas if r is not None else list(self.partitions[key].replicas)

    def replica_size(self, key: tuple[str, int], broker: int) -> float:
        r = self.reassignments.get(key)
        if r is not None and broker in r.copied:
            return r.copied[broker]
        return self.partitions[key].size_bytes

    def snapshot(self) -> ClusterSnapshot:
        parts = []
        for key in sorted(self.partitions):
            p = self.partitions[key]
            parts.append(
                PartitionReplicas(
                    p.topic,
                    p.partition,
                    tuple(self.replicas_of(key)),
                    p.leader,
                    tuple(p.isr),
                    p.load,
                )
            )
        return ClusterSnapshot(tuple(self.brokers[i] for i in sorted(self.brokers)), tuple(parts))

    # -- time ---------------------------------------------------------------------------------

    def _throttled(self, topic: str, config: str, partition: int, broker: int) -> bool:
        value = self.topic_configs.get(topic, {}).get(config, "")
        if value.strip() == "*":
            return True
        return f"{partition}:{broker}" in {v.strip() for v in value.split(",")}

    def _budget(self, broker: int, rate_config: str, throttled: bool) -> float:
        if throttled and rate_config in self.broker_configs.get(broker, {}):
            return min(float(self.broker_configs[broker][rate_config]), self.broker_bandwidth)
        return self.broker_bandwidth

    def copy_rates(self) -> dict[tuple[tuple[str, int], int], float]:
        """Bytes/s of every copy in flight, keyed by (partition, destination)."""
        flows = []
        for key, r in self.reassignments.items():
            leader = self.partitions[key].leader
            for d in r.adding:
                if d in self.partitions[key].isr:
                    continue
                if leader is None or not self.alive(leader) or not self.alive(d):
                    continue
                flows.append((key, d, leader))
        out_count: dict[int, int] = {}
        in_count: dict[int, int] = {}
        for _, d, leader in flows:
            out_count[leader] = out_count.get(leader, 0) + 1
            in_count[d] = in_count.get(d, 0) + 1
        rates = {}
        for key, d, leader in flows:
            topic, part = key
            lead = self._budget(
                leader,
                "leader.replication.throttled.rate",
                self._throttled(topic, "leader.replication.throttled.replicas", part, leader),
            )
            follow = self._budget(
                d,
                "follower.replication.throttled.rate",
                self._throttled(topic, "follower.replication.throttled.replicas", part, d),
            )
            rates[(key, d)] = min(lead / out_count[leader], follow / in_count[d])
        return rates

    def advance(self, now: float) -> None:
        """Copy bytes up to `now`, joining replicas to the ISR and finishing reassignments on the way."""
        guard = 0
        while True:
            self._finish_caught_up()
            if now <= self.now:
                return
            rates = self.copy_rates()
            if not rates:
                self.now = now
                return
            step = now - self.now
            for (key, d), rate in rates.items():
                left = self.partitions[key].size_bytes - self.reassignments[key].copied.get(d, 0.0)
                if rate > 0:
                    step = min(step, max(left, 0.0) / rate)
            for (key, d), rate in rates.items():
                r = self.reassignments[key]
                size = self.partitions[key].size_bytes
                left = size - r.copied.get(d, 0.0)
                # A copy whose finish time bounded the step lands exactly on its size (no float creep).
                r.copied[d] = (
                    size
                    if left <= rate * step * (1 + 1e-12)
                    else r.copied.get(d, 0.0) + rate * step
                )
            self.now += step
            guard += 1
            if guard > 100000:  # pragma: no cover - each step finishes at least one copy
                self.now = now
                return

    def _finish_caught_up(self) -> None:
        for key in sorted(self.reassignments):
            r = self.reassignments[key]
            p = self.partitions[key]
            for d in r.adding:
                if d not in p.isr and self.alive(d) and r.copied.get(d, 0.0) >= p.size_bytes - 1e-6:
                    p.isr.append(d)
            if all(d in p.isr for d in r.adding):
                self._complete(key)

    def _complete(self, key: tuple[str, int]) -> None:
        r = self.reassignments.pop(key)
        p = self.partitions[key]
        p.replicas = list(r.target)
        p.isr = [b for b in r.target if b in p.isr]
        if p.leader not in p.replicas or p.leader is None or not self.alive(p.leader):
            p.leader = next((b for b in p.replicas if b in p.isr and self.alive(b)), None)
            p.leader_epoch += 1
        self.completed.append((self.now, key[0], key[1]))

    # -- reassignments ------------------------------------------------------------------------

    def alter_reassignment(
        self, key: tuple[str, int], target: list[int] | None
    ) -> tuple[int, str | None]:
        if key not in self.partitions:
            return UNKNOWN_TOPIC_OR_PARTITION, "Unable to find partition"
        p = self.partitions[key]
        ongoing = self.reassignments.get(key)
        if target is None:
            if ongoing is None:
                return (
                    NO_REASSIGNMENT_IN_PROGRESS,
                    f"No ongoing reassignment for partition {key[0]}-{key[1]}.",
                )
            self._revert(key, ongoing)
            return NONE, None
        if not target:
            return (
                INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes an empty replica list.",
            )
        if len(set(target)) != len(target):
            return (
                INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes duplicate replicas.",
            )
        for b in target:
            if b not in self.brokers:
                return INVALID_REPLICA_ASSIGNMENT, (
                    f"The manual partition assignment includes broker {b}, "
                    "but no such broker is registered."
                )
        original = ongoing.original if ongoing is not None else list(p.replicas)
        copied = {b: c for b, c in (ongoing.copied.items() if ongoing else ()) if b in target}
        if ongoing is not None:
            p.isr = [b for b in p.isr if b in original or b in target]
        r = Reassignment(list(original), list(target), copied)
        for d in r.adding:
            r.copied.setdefault(d, 0.0)
        if not r.adding and not r.removing:
            # Only the order changes: Kafka applies it at once.
            self.reassignments.pop(key, None)
            p.replicas = list(target)
            return NONE, None
        self.reassignments[key] = r
        self._finish_caught_up()
        return NONE, None

    def _revert(self, key: tuple[str, int], r: Reassignment) -> None:
        del self.reassignments[key]
        p = self.partitions[key]
        p.replicas = list(r.original)
        p.isr = [b for b in p.isr if b in r.original]
        if p.leader not in p.replicas:
            p.leader = next((b for b in p.replicas if b in p.isr and self.alive(b)), None)
            p.leader_epoch += 1

    # -- elections ----------------------------------------------------------------------------

    def elect(self, key: tuple[str, int], election_type: int) -> tuple[int, str | None]:
        if key not in self.partitions:
            return UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
        p = self.partitions[key]
        replicas = self.replicas_of(key)
        if election_type == 0:
            preferred = replicas[0]
            if p.leader == preferred:
                return ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."
            if not self.alive(preferred) or preferred not in p.isr:
                return PREFERRED_LEADER_NOT_AVAILABLE, (
                    f"Failed to elect leader for partition {key[0]}-{key[1]} under strategy "
                    "PreferredReplicaPartitionLeaderElectionStrategy"
                )
            p.leader = preferred
            p.leader_epoch += 1
            return NONE, None
        if p.leader is not None and self.alive(p.leader):
            return ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."
        candidate = next((b for b in replicas if b in p.isr and self.alive(b)), None)
        if candidate is None:
            candidate = next((b for b in replicas if self.alive(b)), None)
        if candidate is None:
            return (
                ELIGIBLE_LEADERS_NOT_AVAILABLE,
                "Eligible topic partition leaders are not available.",
            )
        p.leader = candidate
        if candidate not in p.isr:
            p.isr = [candidate]
        p.leader_epoch += 1
        return NONE, None

    # -- configs ------------------------------------------------------------------------------

    def config_target(self, resource_type: int, name: str) -> tuple[dict[str, str], bool]:
        """The dynamic config dict of a resource and whether it is a topic; ConfigError if unknown."""
        if resource_type == 2:
            if name not in self.topic_configs:
                raise ConfigError(UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist.")
            return self.topic_configs[name], True
        if resource_type == 4:
            if name == "":
                raise ConfigError(
                    INVALID_REQUEST, "cluster-default broker configs are not simulated"
                )
            try:
                bid = int(name)
            except ValueError:
                raise ConfigError(INVALID_REQUEST, f"Invalid broker id {name}") from None
            if bid not in self.broker_configs:
                raise ConfigError(
                    INVALID_REQUEST, f"Unexpected broker id, expected one of {sorted(self.brokers)}"
                )
            return self.broker_configs[bid], False
        raise ConfigError(INVALID_REQUEST, f"Unsupported resource type {resource_type}")

    def incremental_alter(
        self,
        resource_type: int,
        name: str,
        ops: list[tuple[str, int, str | None]],
        validate_only: bool,
    ) -> None:
        configs, is_topic = self.config_target(resource_type, name)
        new = dict(configs)
        for cname, op, value in ops:
            if op == 1:  # DELETE
                if cname not in (TOPIC_CONFIG_DEFAULTS if is_topic else BROKER_CONFIG_DEFAULTS):
                    raise ConfigError(INVALID_CONFIG, f"Unknown config name: {cname}")
                new.pop(cname, None)
                continue
            if value is None:
                raise ConfigError(INVALID_REQUEST, f"Null value not supported for {cname}")
            if op == 0:  # SET
                validate_config(cname, value, is_topic)
                new[cname] = value
            elif op in (2, 3):  # APPEND, SUBTRACT
                if cname not in LIST_CONFIGS:
                    raise ConfigError(
                        INVALID_CONFIG, f"Config {cname} is not a list; cannot APPEND/SUBTRACT"
                    )
                cur = [
                    v for v in new.get(cname, TOPIC_CONFIG_DEFAULTS.get(cname, "")).split(",") if v
                ]
                items = [v for v in value.split(",") if v]
                merged = (
                    cur + [v for v in items if v not in cur]
                    if op == 2
                    else [v for v in cur if v not in items]
                )
                joined = ",".join(merged)
                validate_config(cname, joined, is_topic)
                new[cname] = joined
            else:
                raise ConfigError(INVALID_REQUEST, f"Unknown config operation {op}")
        if not validate_only:
            configs.clear()
            configs.update(new)

    def alter(
        self,
        resource_type: int,
        name: str,
        entries: list[tuple[str, str | None]],
        validate_only: bool,
    ) -> None:
        """Legacy AlterConfigs: the given entries replace every dynamic config of the resource."""
        configs, is_topic = self.config_target(resource_type, name)
        new = {}
        for cname, value in entries:
            if value is None:
                raise ConfigError(INVALID_REQUEST, f"Null value not supported for {cname}")
            validate_config(cname, value, is_topic)
            new[cname] = value
        if not validate_only:
            configs.clear()
            configs.update(new)

    def describe_configs(
        self, resource_type: int, name: str, keys: list[str] | None
    ) -> list[tuple[str, str, bool]]:
        """(name, value, is_default) for the requested keys (all known when None)."""
        configs, is_topic = self.config_target(resource_type, name)
        defaults = TOPIC_CONFIG_DEFAULTS if is_topic else BROKER_CONFIG_DEFAULTS
        names = (
            sorted(set(defaults) | set(configs))
            if keys is None
            else [k for k in keys if k in defaults]
        )
        return [(k, configs[k], False) if k in configs else (k, defaults[k], True) for k in names]


def eta_seconds(state: ClusterState) -> float:
    """Time until every copy in flight would finish at today's rates (inf when one cannot progress)."""
    rates = state.copy_rates()
    worst = 0.0
    for key, r in state.reassignments.items():
        for d in r.adding:
            if d in state.partitions[key].isr:
                continue
            rate = rates.get((key, d), 0.0)
            left = state.partitions[key].size_bytes - r.copied.get(d, 0.0)
            worst = max(worst, left / rate if rate > 0 else math.inf)
    return worst
