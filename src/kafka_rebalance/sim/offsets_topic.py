"""Turn a simulation's event log into the topics a real cluster would hold.

`__consumer_offsets` records (Kafka-source schema, encoded with the group
record codecs) from the simulator's commit events and its GroupMetadata
records, and log-end-offset samples from the scenario's produce rate, so the
Spark jobs read the same shapes they would read from a real cluster.

The event log does not say who led a generation or which protocol the group
selected (only that it reached a state), so the GroupMetadata records come
from the coordinator itself: `simulate_recording_group_metadata` runs the
scenario as `sim.api.simulate_scenario` does (same summary and event log) and
keeps every GroupMetadataValue the simulated coordinator stores, with its
real member ids, leader, protocol and timestamps. Given only an event log,
the records are rebuilt from the `assigned`/`revoked` events instead: member
names stand for member ids, the protocol is what the caller says it
configured, and the leader is unknown (null).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..group.records import (
    GroupMetadataValue,
    MemberMetadata,
    encode_record,
    group_metadata_record,
    offset_commit_record,
)

if TYPE_CHECKING:
    from .api import SimulationResult
    from .scenario import Scenario

KAFKA_SOURCE_SCHEMA = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("ms", tz="UTC")),
        ("timestampType", pa.int32()),
    ]
)


def _tp(s: str) -> tuple[str, int]:
    topic, _, part = s.rpartition("-")
    return topic, int(part)


@dataclass(frozen=True)
class GroupMetadataWrite:
    """One GroupMetadata record the simulated coordinator stored."""

    position: int  # event-log rows emitted before it: it goes between events[position - 1] and events[position]
    ts_ms: int  # simulated time of the write
    value: GroupMetadataValue  # as the coordinator encodes it (sim.offsets_store)


def simulate_recording_group_metadata(
    sc: Scenario, *, core: str = "auto"
) -> tuple[SimulationResult, tuple[GroupMetadataWrite, ...]]:
    """`simulate_scenario(sc, core=core)` (same summary, same event log) and every GroupMetadata record its coordinator wrote.

    The classic coordinator hands each record to its offsets store
    (`store.write_group`); the store of this one run is wrapped to keep a copy,
    nothing in the simulator changes. Classic groups only: a KIP-848 group
    writes ConsumerGroup records, not GroupMetadata.
    """
    from .api import simulate_scenario
    from .offsets_store import _group_value

    if sc.protocol == "consumer":
        raise ValueError(
            "GroupMetadata records exist for classic groups only (this scenario uses protocol consumer)"
        )
    writes: list[GroupMetadataWrite] = []

    def record_writes(world) -> None:
        store = world.coord.store
        write_group = store.write_group

        def recording(snapshot, now_ms: int) -> None:
            # events_emitted: the event-log rows so far, so the record goes right after them
            writes.append(
                GroupMetadataWrite(
                    world.events_emitted, int(now_ms), _group_value(snapshot, world.parts.tps)
                )
            )
            write_group(snapshot, now_ms)

        store.write_group = recording

    return simulate_scenario(sc, on_world=record_writes, core=core), tuple(writes)


def consumer_offsets_records(
    events: Iterable[dict[str, Any]],
    start_ms: int,
    protocol: str | None = None,
    group_partitions: int = 50,
    group_metadata: Sequence[GroupMetadataWrite] | None = None,
) -> pa.Table:
    """Commits become OffsetCommit records; GroupMetadata records come from `group_metadata` (the coordinator's
    own, from simulate_recording_group_metadata), each at its place in the log, or else one per completed
    generation rebuilt from the assignment events (leader unknown: null; `protocol` as the caller configured
    it)."""
    from ..assign.protocol import Assignment, Subscription, encode_assignment, encode_subscription
    from ..group.coordinator_location import partition_for
    from ..model import TopicPartition

    rows: list[tuple[bytes, bytes | None, int, int]] = []  # key, value, partition, ts
    owned: dict[str, set[str]] = {}
    pending: tuple[str, int, int] | None = (
        None  # group, generation, ts of a generation being handed out
    )

    def flush(handed_out: tuple[str, int, int]) -> None:
        group, generation, ts = handed_out
        members = []
        topics = tuple(sorted({_tp(p)[0] for ps in owned.values() for p in ps}))
        for m, parts in sorted(owned.items()):
            if not parts:
                continue
            asg = encode_assignment(
                Assignment(partitions=tuple(TopicPartition(*_tp(p)) for p in sorted(parts)))
            )
            members.append(
                MemberMetadata(
                    member_id=m,
                    client_id=m,
                    client_host="/127.0.0.1",
                    session_timeout=45000,
                    subscription=encode_subscription(Subscription(topics)),
                    assignment=asg,
                    rebalance_timeout=300000,
                )
            )
        # the event log names no leader (and the first member by name is not it): unknown, so null
        value = GroupMetadataValue(
            protocol_type="consumer",
            generation=generation,
            protocol=protocol,
            leader=None,
            members=tuple(members),
            current_state_timestamp=ts,
        )
        k, v = encode_record(group_metadata_record(group, value))
        rows.append((k, v, partition_for(group, group_partitions), ts))

    recorded = sorted(group_metadata or (), key=lambda w: w.position)
    next_write = 0
    group_id: str | None = None

    def stored(upto: int, group_id: str) -> None:
        """The coordinator's records written before event `upto`."""
        nonlocal next_write
        while next_write < len(recorded) and recorded[next_write].position <= upto:
            w = recorded[next_write]
            k, v = encode_record(group_metadata_record(group_id, w.value))
            rows.append((k, v, partition_for(group_id, group_partitions), start_ms + w.ts_ms))
            next_write += 1

    for n, ev in enumerate(events):
        kind = ev["kind"]
        group = ev["group"]
        ts = start_ms + int(ev["ts_ms"])
        if group_metadata is not None:
            group_id = group
            stored(n, group)
            if kind == "commit":
                _commit(rows, ev, group, ts, group_partitions)
            continue
        if pending is not None and kind not in ("assigned", "paused"):
            flush(pending)
            pending = None
        if kind == "commit":
            _commit(rows, ev, group, ts, group_partitions)
        elif kind == "assigned":
            owned.setdefault(ev["member"], set()).update(ev["partitions"])
            pending = (group, int(ev["generation"]), ts)
        elif kind in ("revoked", "lost"):
            owned.setdefault(ev["member"], set()).difference_update(ev["partitions"])
    if pending is not None:
        flush(pending)
    if next_write < len(recorded):  # written after the last event
        if group_id is None:
            raise ValueError("GroupMetadata records without an event log: the group id is unknown")
        stored(recorded[-1].position, group_id)
    offsets: dict[int, int] = {}
    out_off = []
    for _, _, p, _ in rows:
        out_off.append(offsets.get(p, 0))
        offsets[p] = offsets.get(p, 0) + 1
    return pa.table(
        {
            "key": pa.array([r[0] for r in rows], pa.binary()),
            "value": pa.array([r[1] for r in rows], pa.binary()),
            "topic": pa.array(["__consumer_offsets"] * len(rows), pa.string()),
            "partition": pa.array([r[2] for r in rows], pa.int32()),
            "offset": pa.array(out_off, pa.int64()),
            "timestamp": pa.array([r[3] for r in rows], pa.timestamp("ms", tz="UTC")),
            "timestampType": pa.array([0] * len(rows), pa.int32()),
        },
        schema=KAFKA_SOURCE_SCHEMA,
    )


def _commit(rows: list, ev: dict[str, Any], group: str, ts: int, group_partitions: int) -> None:
    from ..group.coordinator_location import partition_for

    d = json.loads(ev["detail"])
    rec = offset_commit_record(
        group,
        d["topic"],
        int(d["partition"]),
        int(d["offset"]),
        metadata=d.get("metadata") or "",
        commit_timestamp=ts,
    )
    k, v = encode_record(rec)
    rows.append((k, v, partition_for(group, group_partitions), ts))


def log_end_offsets(
    topics: Sequence[dict[str, Any]], start_ms: int, duration_ms: int, step_ms: int = 10_000
) -> pa.Table:
    """Log-end offset per partition every `step_ms`, from each topic's produce rate spread evenly."""
    ts, tp, pp, leo = [], [], [], []
    for t in topics:
        n = int(t["partitions"])
        rate = float(t.get("produce_rate", 0.0)) / max(n, 1)
        for step in range(0, duration_ms + 1, step_ms):
            for p in range(n):
                ts.append(start_ms + step)
                tp.append(t["name"])
                pp.append(p)
                leo.append(int(rate * step / 1000.0))
    return pa.table(
        {
            "ts": pa.array(ts, pa.timestamp("ms", tz="UTC")),
            "topic": pa.array(tp, pa.string()),
            "partition": pa.array(pp, pa.int32()),
            "log_end_offset": pa.array(leo, pa.int64()),
        }
    )
