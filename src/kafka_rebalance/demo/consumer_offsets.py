"""Turn a simulation's event log into what a real cluster would hold.

`__consumer_offsets` records (Kafka-source schema, encoded with the group
record codecs) from the simulator's commit and assignment events, and
log-end-offset samples from the scenario's produce rate, so the Spark jobs
read the same shapes they would read from a real cluster.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Sequence

import pyarrow as pa

from ..group.records import (GroupMetadataValue, MemberMetadata, encode_record, group_metadata_record,
                             offset_commit_record)

KAFKA_SOURCE_SCHEMA = pa.schema([
    ("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()), ("partition", pa.int32()),
    ("offset", pa.int64()), ("timestamp", pa.timestamp("ms", tz="UTC")), ("timestampType", pa.int32()),
])


def _tp(s: str) -> tuple[str, int]:
    topic, _, part = s.rpartition("-")
    return topic, int(part)


def consumer_offsets_records(events: Iterable[dict[str, Any]], start_ms: int, protocol: str = "range",
                             group_partitions: int = 50) -> pa.Table:
    """Commits become OffsetCommit records; each completed generation a GroupMetadata record."""
    from ..assign.protocol import Assignment, Subscription, encode_assignment, encode_subscription
    from ..group.coordinator_location import partition_for
    from ..model import TopicPartition

    rows: list[tuple[bytes, bytes | None, int, int]] = []  # key, value, partition, ts
    owned: dict[str, set[str]] = {}
    pending: tuple[str, int, int] | None = None  # group, generation, ts of a generation being handed out

    def flush() -> None:
        group, generation, ts = pending
        members = []
        topics = tuple(sorted({_tp(p)[0] for ps in owned.values() for p in ps}))
        for m, parts in sorted(owned.items()):
            if not parts:
                continue
            asg = encode_assignment(Assignment(partitions=tuple(TopicPartition(*_tp(p)) for p in sorted(parts))))
            members.append(MemberMetadata(member_id=m, client_id=m, client_host="/127.0.0.1",
                                          session_timeout=45000, subscription=encode_subscription(Subscription(topics)),
                                          assignment=asg, rebalance_timeout=300000))
        value = GroupMetadataValue(protocol_type="consumer", generation=generation, protocol=protocol,
                                   leader=members[0].member_id if members else None,
                                   members=tuple(members), current_state_timestamp=ts)
        k, v = encode_record(group_metadata_record(group, value))
        rows.append((k, v, partition_for(group, group_partitions), ts))

    for ev in events:
        kind = ev["kind"]
        group = ev["group"]
        ts = start_ms + int(ev["ts_ms"])
        if pending is not None and kind not in ("assigned", "paused"):
            flush()
            pending = None
        if kind == "commit":
            d = json.loads(ev["detail"])
            rec = offset_commit_record(group, d["topic"], int(d["partition"]), int(d["offset"]),
                                       metadata=d.get("metadata") or "", commit_timestamp=ts)
            k, v = encode_record(rec)
            rows.append((k, v, partition_for(group, group_partitions), ts))
        elif kind == "assigned":
            owned.setdefault(ev["member"], set()).update(ev["partitions"])
            pending = (group, int(ev["generation"]), ts)
        elif kind in ("revoked", "lost"):
            owned.setdefault(ev["member"], set()).difference_update(ev["partitions"])
    if pending is not None:
        flush()
    offsets: dict[int, int] = {}
    out_off = []
    for _, _, p, _ in rows:
        out_off.append(offsets.get(p, 0))
        offsets[p] = offsets.get(p, 0) + 1
    return pa.table({
        "key": pa.array([r[0] for r in rows], pa.binary()),
        "value": pa.array([r[1] for r in rows], pa.binary()),
        "topic": pa.array(["__consumer_offsets"] * len(rows), pa.string()),
        "partition": pa.array([r[2] for r in rows], pa.int32()),
        "offset": pa.array(out_off, pa.int64()),
        "timestamp": pa.array([r[3] for r in rows], pa.timestamp("ms", tz="UTC")),
        "timestampType": pa.array([0] * len(rows), pa.int32()),
    }, schema=KAFKA_SOURCE_SCHEMA)


def log_end_offsets(topics: Sequence[dict[str, Any]], start_ms: int, duration_ms: int, step_ms: int = 10_000) -> pa.Table:
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
    return pa.table({"ts": pa.array(ts, pa.timestamp("ms", tz="UTC")), "topic": pa.array(tp, pa.string()),
                     "partition": pa.array(pp, pa.int32()), "log_end_offset": pa.array(leo, pa.int64())})


def ownership_intervals(events: Iterable[dict[str, Any]], duration_ms: int) -> tuple[list[dict], list[dict]]:
    """Who owned which partition when (from assigned/revoked/lost), and the members' protocol pauses."""
    open_: dict[tuple[str, str], int] = {}
    intervals: list[dict] = []
    stops: list[dict] = []
    for ev in events:
        kind, member, ts = ev["kind"], ev["member"], int(ev["ts_ms"])
        if kind == "assigned":
            for p in ev["partitions"]:
                open_.setdefault((member, p), ts)
        elif kind in ("revoked", "lost"):
            for p in ev["partitions"]:
                start = open_.pop((member, p), None)
                if start is not None:
                    intervals.append({"partition": p, "member": member, "start_ms": start, "end_ms": ts})
        elif kind == "paused":
            d = json.loads(ev["detail"] or "{}")
            if d.get("ms", 0) > 0 and "since_ms" in d:
                stops.append({"start_ms": int(d["since_ms"]), "end_ms": int(d["since_ms"]) + int(d["ms"]),
                              "member": member})
    for (member, p), start in open_.items():
        intervals.append({"partition": p, "member": member, "start_ms": start, "end_ms": duration_ms})
    intervals.sort(key=lambda iv: (iv["partition"], iv["start_ms"]))
    return intervals, _merge(stops)


def _merge(stops: list[dict]) -> list[dict]:
    out: list[dict] = []
    for s in sorted(stops, key=lambda s: s["start_ms"]):
        if out and s["start_ms"] <= out[-1]["end_ms"]:
            out[-1]["end_ms"] = max(out[-1]["end_ms"], s["end_ms"])
        else:
            out.append({"start_ms": s["start_ms"], "end_ms": s["end_ms"]})
    return out
