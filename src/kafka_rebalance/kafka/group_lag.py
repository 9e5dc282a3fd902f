"""Live lag monitoring: Burrow's status rules and kafka-lag-exporter's time lag, over polled offsets.

Every sample reads each group's committed offsets (OffsetFetch) and the log-end offsets
(ListOffsets) of their partitions. The evaluation is not re-implemented here: each
(group, partition) feeds the pipeline's pure Burrow store (`pipeline/burrow.PartitionStore`:
ring of `intervals` commits with their lag, ring of broker offsets, Burrow's rules), and each
partition's log-end offsets feed kafka-lag-exporter's lookup table (`pipeline/timelag`),
which interpolates when the log end was at the committed offset.

Polling cannot see commits, only committed offsets, so a sample counts as a commit when
the offset moved, or when the group has active members (Kafka consumers keep committing
their position while alive, even when it does not move: Burrow then sees repeated equal
commits and says STALL). A group with no members sends no commits: Burrow's STOP rule
(no commit for longer than the window spans) applies.

Metric names and labels are kafka-lag-exporter's, plus `kafka_consumergroup_group_status`
(Burrow's status code: 1 OK, 2 WARN, 3 ERR, 4 STOP, 5 STALL, 6 REWIND; the group value
caps at ERR as Burrow does) and its per-partition twin.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..model import TopicPartition
from ..pipeline.burrow import BurrowConfig, PartitionStore, Status, group_status
from ..pipeline.timelag import LookupTable
from .groups import Group, GroupAdmin


@dataclass(frozen=True, slots=True)
class PartitionLag:
    topic: str
    partition: int
    committed: int
    log_end_offset: int
    lag: int
    time_lag_s: float  # NaN: too few log-end points to place the offset in time
    status: Status
    consumer_id: str
    host: str
    client_id: str

    def to_json(self) -> dict:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "committed": self.committed,
            "log_end_offset": self.log_end_offset,
            "lag": self.lag,
            "time_lag_s": None if math.isnan(self.time_lag_s) else round(self.time_lag_s, 3),
            "status": self.status.name,
            "consumer_id": self.consumer_id,
            "host": self.host,
            "client_id": self.client_id,
        }


@dataclass(frozen=True, slots=True)
class GroupLag:
    group: str
    state: str
    status: Status
    complete: float
    total_lag: int
    max_lag: int
    max_time_lag_s: float
    partitions: tuple[PartitionLag, ...]

    def to_json(self) -> dict:
        return {
            "group": self.group,
            "state": self.state,
            "status": self.status.name,
            "complete": round(self.complete, 3),
            "total_lag": self.total_lag,
            "max_lag": self.max_lag,
            "max_time_lag_s": None
            if math.isnan(self.max_time_lag_s)
            else round(self.max_time_lag_s, 3),
            "partitions": [p.to_json() for p in self.partitions],
        }


@dataclass
class LagMonitor:
    """Samples groups through a GroupAdmin and evaluates them; `clock_ms` is wall time in ms."""

    admin: GroupAdmin
    groups: Sequence[str] = ()  # empty: every group the cluster lists
    config: BurrowConfig = field(default_factory=BurrowConfig)
    table_size: int = 60
    stores: dict[tuple[str, TopicPartition], PartitionStore] = field(default_factory=dict)
    tables: dict[TopicPartition, LookupTable] = field(default_factory=dict)
    described: dict[str, Group] = field(default_factory=dict)
    last_offset: dict[tuple[str, TopicPartition], int] = field(default_factory=dict)
    samples: int = 0
    last_sample_ms: int = 0
    _order: int = 0

    def sample(self, now_ms: int) -> None:
        """One poll: committed offsets of every group, log-end offsets of their partitions."""
        ids = list(self.groups) or [g.group_id for g in self.admin.list_groups()]
        self.described = {g: d for g, d in self.admin.describe(ids).items() if d.state != "Dead"}
        committed = {g: self.admin.committed(g) for g in self.described}
        tps = sorted(
            {tp for c in committed.values() for tp in c}, key=lambda t: (t.topic, t.partition)
        )
        ends = self.admin.log_offsets(tps, "latest")
        for tp, end in ends.items():
            if end is not None:
                self.tables.setdefault(tp, LookupTable(self.table_size)).add_point(end, now_ms)
        for g, offsets in committed.items():
            alive = bool(self.described[g].members)
            for tp, off in offsets.items():
                end = ends.get(tp)
                if end is None:
                    continue
                key = (g, tp)
                store = self.stores.setdefault(key, PartitionStore(self.config))
                store.add_broker_offset(end)
                if alive or self.last_offset.get(key) != off:
                    self._order += 1
                    store.add_commit(off, now_ms, self._order, now_ms)
                self.last_offset[key] = off
        self.samples += 1
        self.last_sample_ms = now_ms

    def evaluate(self, now_ms: int | None = None) -> list[GroupLag]:
        """Burrow's status per group (worst partition, capped at ERR) with offset and time lag."""
        now_ms = self.last_sample_ms if now_ms is None else now_ms
        out = []
        for g in sorted(self.described):
            owners = {tp: m for m in self.described[g].members for tp in m.assignment}
            parts = []
            statuses = []
            for (gid, tp), store in sorted(
                self.stores.items(), key=lambda kv: (kv[0][0], kv[0][1].topic, kv[0][1].partition)
            ):
                if gid != g or (gid, tp) not in self.last_offset:
                    continue
                st = store.evaluate(now_ms)
                statuses.append(st)
                end = store.broker[-1] if store.broker else 0
                off = self.last_offset[(gid, tp)]
                table = self.tables.get(tp)
                tl = table.time_lag_ms(off, now_ms) / 1000 if table is not None else math.nan
                m = owners.get(tp)
                parts.append(
                    PartitionLag(
                        tp.topic,
                        tp.partition,
                        off,
                        end,
                        max(0, end - off),
                        max(0.0, tl) if not math.isnan(tl) else math.nan,
                        st.status,
                        m.member_id if m else "",
                        m.host if m else "",
                        m.client_id if m else "",
                    )
                )
            status, complete, _ = group_status(statuses)
            if not parts:
                status = Status.OK
            lags = [p.lag for p in parts]
            times = [p.time_lag_s for p in parts if not math.isnan(p.time_lag_s)]
            out.append(
                GroupLag(
                    g,
                    self.described[g].state,
                    status,
                    complete,
                    sum(lags),
                    max(lags, default=0),
                    max(times) if times else math.nan,
                    tuple(parts),
                )
            )
        return out


# -- Prometheus ------------------------------------------------------------------------------------


class LagCollector:
    """A prometheus-client collector that reports the monitor's latest evaluation."""

    def __init__(self, monitor: LagMonitor, cluster_name: str) -> None:
        self.monitor = monitor
        self.cluster = cluster_name
        self.latest: list[GroupLag] = []

    def update(self, result: list[GroupLag]) -> None:
        self.latest = result

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        c = self.cluster
        gp = [
            "cluster_name",
            "group",
            "topic",
            "partition",
            "member_host",
            "consumer_id",
            "client_id",
        ]
        offset = GaugeMetricFamily(
            "kafka_consumergroup_group_offset",
            "Last group consumed offset of a partition",
            labels=gp,
        )
        lag = GaugeMetricFamily(
            "kafka_consumergroup_group_lag", "Group offset lag of a partition", labels=gp
        )
        lag_s = GaugeMetricFamily(
            "kafka_consumergroup_group_lag_seconds", "Group time lag of a partition", labels=gp
        )
        pstatus = GaugeMetricFamily(
            "kafka_consumergroup_group_partition_status",
            "Burrow status of a partition (1 OK, 2 WARN, 3 ERR, 4 STOP, 5 STALL, 6 REWIND)",
            labels=gp,
        )
        gl = ["cluster_name", "group"]
        max_lag = GaugeMetricFamily(
            "kafka_consumergroup_group_max_lag", "Max group offset lag", labels=gl
        )
        max_lag_s = GaugeMetricFamily(
            "kafka_consumergroup_group_max_lag_seconds", "Max group time lag", labels=gl
        )
        sum_lag = GaugeMetricFamily(
            "kafka_consumergroup_group_sum_lag", "Sum of group offset lag", labels=gl
        )
        topic_sum = GaugeMetricFamily(
            "kafka_consumergroup_group_topic_sum_lag",
            "Sum of group offset lag across topic partitions",
            labels=["cluster_name", "group", "topic"],
        )
        status = GaugeMetricFamily(
            "kafka_consumergroup_group_status",
            "Burrow status of the group (1 OK, 2 WARN, 3 ERR)",
            labels=gl,
        )
        latest = GaugeMetricFamily(
            "kafka_partition_latest_offset",
            "Latest offset of a partition",
            labels=["cluster_name", "topic", "partition"],
        )
        seen: set[TopicPartition] = set()
        for g in self.latest:
            per_topic: dict[str, int] = {}
            for p in g.partitions:
                labels = [c, g.group, p.topic, str(p.partition), p.host, p.consumer_id, p.client_id]
                offset.add_metric(labels, p.committed)
                lag.add_metric(labels, p.lag)
                lag_s.add_metric(labels, p.time_lag_s)
                pstatus.add_metric(labels, int(p.status))
                per_topic[p.topic] = per_topic.get(p.topic, 0) + p.lag
                tp = TopicPartition(p.topic, p.partition)
                if tp not in seen:
                    seen.add(tp)
                    latest.add_metric([c, p.topic, str(p.partition)], p.log_end_offset)
            max_lag.add_metric([c, g.group], g.max_lag)
            max_lag_s.add_metric([c, g.group], g.max_time_lag_s)
            sum_lag.add_metric([c, g.group], g.total_lag)
            status.add_metric([c, g.group], int(g.status))
            for t, v in per_topic.items():
                topic_sum.add_metric([c, g.group, t], v)
        yield from (
            offset,
            lag,
            lag_s,
            pstatus,
            max_lag,
            max_lag_s,
            sum_lag,
            topic_sum,
            status,
            latest,
        )


def serve_metrics(collector: LagCollector, port: int):
    """Serve the collector on 127.0.0.1:port; returns the server (call .shutdown() to stop)."""
    from prometheus_client import CollectorRegistry, start_http_server

    registry = CollectorRegistry()
    registry.register(collector)
    started = start_http_server(port, addr="127.0.0.1", registry=registry)
    return started[0] if isinstance(started, tuple) else started
