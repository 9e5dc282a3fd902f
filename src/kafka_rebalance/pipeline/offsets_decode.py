"""`__consumer_offsets` records (Spark's Kafka-source schema) -> one decoded row per record.

Records are decoded with the shared codecs (`group.records`, and
`assign.protocol` for the members' subscriptions and assignments), through
fast_decode's vectorised path for the common shapes and the exact per-record
path (`decode_slow`) for the rest. A record that does not decode
(truncated, unknown key version, null key or timestamp) becomes a quarantine
row with the reason; the job goes on. DECODED_SCHEMA is the wide row every
output of the offsets job is defined from (offsets_tables.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

SOURCE_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp")

TP_TYPE = "struct<topic:string, partition:int>"
MEMBER_TYPE = (
    "struct<member_id:string, group_instance_id:string, client_id:string, client_host:string, "
    "rebalance_timeout:int, session_timeout:int, topics:array<string>, "
    "assigned:array<struct<topic:string, partition:int>>, error:string>"
)
DECODED_SCHEMA = (
    "kind string, reason string, record_partition int, record_offset long, record_ts timestamp, "
    "key_version int, value_version int, tombstone boolean, "
    "group string, topic string, partition int, offset long, leader_epoch int, metadata string, "
    "commit_timestamp long, expire_timestamp long, "
    "protocol_type string, generation int, protocol string, leader string, current_state_timestamp long, "
    f"members array<{MEMBER_TYPE}>, detail string, "
    f"member_id string, epoch int, previous_epoch int, member_state int, "
    f"partitions array<{TP_TYPE}>, pending array<{TP_TYPE}>"
)
_FIELDS = [
    f.strip().split(" ", 1)[0]
    for f in DECODED_SCHEMA.replace(f"array<{MEMBER_TYPE}>", "M")
    .replace(f"array<{TP_TYPE}>", "P")
    .split(",")
]
# KIP-848 record types (the key's version) and their names in Kafka
CONSUMER_GROUP_RECORDS = {
    3: "ConsumerGroupMetadata",
    4: "ConsumerGroupPartitionMetadata",
    5: "ConsumerGroupMemberMetadata",
    6: "ConsumerGroupTargetAssignmentMetadata",
    7: "ConsumerGroupTargetAssignmentMember",
    8: "ConsumerGroupCurrentMemberAssignment",
}


def topic_id_string(raw: bytes) -> str:
    """A topic id as Kafka prints it (Uuid.toString: URL-safe base64, no padding)."""
    import base64

    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _tps(entries) -> list[dict[str, Any]]:
    return [{"topic": topic_id_string(e[0]), "partition": p} for e in entries for p in sorted(e[1])]


def _consumer_group_row(cols: dict[str, list], i: int, rec) -> None:
    """A KIP-848 record's fields into row i (kind consumer_group); detail holds type 4/5 values as JSON."""
    import json

    from ..group import consumer_group_records as cgr

    cols["kind"][i] = "consumer_group"
    cols["key_version"][i] = rec.record_type
    cols["group"][i] = rec.group_id
    cols["member_id"][i] = rec.member_id
    cols["tombstone"][i] = rec.value is None
    v = rec.value
    if v is None:
        return
    cols["value_version"][i] = 0
    if isinstance(v, cgr.GroupEpochValue):
        cols["epoch"][i] = v.epoch
    elif isinstance(v, cgr.TargetAssignmentValue):
        cols["partitions"][i] = _tps(v.partitions)
    elif isinstance(v, cgr.CurrentAssignmentValue):
        cols["epoch"][i] = v.member_epoch
        cols["previous_epoch"][i] = v.previous_member_epoch
        cols["member_state"][i] = v.state
        cols["partitions"][i] = _tps(v.assigned)
        cols["pending"][i] = _tps(v.pending_revocation)
    elif isinstance(v, cgr.MemberMetadataValue):
        cols["detail"][i] = json.dumps(
            {
                "instance_id": v.instance_id,
                "rack_id": v.rack_id,
                "client_id": v.client_id,
                "client_host": v.client_host,
                "subscribed_topic_names": list(v.subscribed_topic_names),
                "subscribed_topic_regex": v.subscribed_topic_regex,
                "rebalance_timeout_ms": v.rebalance_timeout_ms,
                "server_assignor": v.server_assignor,
            }
        )
    elif isinstance(v, cgr.PartitionMetadataValue):
        cols["detail"][i] = json.dumps(
            {
                "topics": [
                    {
                        "id": topic_id_string(t.topic_id),
                        "name": t.name,
                        "partitions": t.num_partitions,
                    }
                    for t in v.topics
                ]
            }
        )


def member(m) -> dict[str, Any]:
    """A member of a GroupMetadata value, its consumer-protocol bytes decoded when they parse."""
    from ..assign.protocol import SchemaException, decode_assignment, decode_subscription

    topics = assigned = None
    error = None
    try:
        if m.subscription:
            topics = list(decode_subscription(m.subscription).topics)
        if m.assignment:
            assigned = [
                {"topic": tp.topic, "partition": tp.partition}
                for tp in decode_assignment(m.assignment).partitions
            ]
    except (SchemaException, ValueError, UnicodeDecodeError) as exc:
        error = f"consumer protocol: {exc}"
    return {
        "member_id": m.member_id,
        "group_instance_id": m.group_instance_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "rebalance_timeout": m.rebalance_timeout,
        "session_timeout": m.session_timeout,
        "topics": topics,
        "assigned": assigned,
        "error": error,
    }


def decode_batches(batches: Iterator) -> Iterator:
    """mapInArrow body: Kafka-source batches in, decoded batches out.

    The common shapes (offset commits v0/v1 keys with v1/v3 values, tombstones)
    go through the vectorised fast path (fast_decode.split_fast); every other
    row through the exact per-record path, and the rows are put back in order.
    """
    import numpy as np
    import pyarrow as pa

    from .fast_decode import constant_strings, split_fast

    key_cache: dict[bytes, Any] = {}
    schemas: dict[Any, Any] = {}
    for batch in batches:
        ts_type = batch.column("timestamp").type
        schema = schemas.get(ts_type) or schemas.setdefault(ts_type, arrow_schema(ts_type))
        fast_rows, cols, slow_rows = split_fast(batch)
        if len(fast_rows) == 0:
            yield decode_slow(batch, schema, key_cache)
            continue
        m = len(fast_rows)
        arrays = []
        for f in schema.names:
            typ = schema.field(f).type
            c = cols.get(f)
            if f == "kind":
                arrays.append(constant_strings("offset_commit", m))
            elif c is None:
                arrays.append(pa.nulls(m, type=typ))
            elif isinstance(c, tuple):
                values, mask = c
                arrays.append(pa.array(values.astype(typ.to_pandas_dtype()), mask=mask, type=typ))
            else:
                arrays.append(c.cast(typ) if c.type != typ else c)
        fast = pa.RecordBatch.from_arrays(arrays, schema=schema)
        if len(slow_rows) == 0:
            yield fast
            continue
        slow = decode_slow(batch.take(pa.array(slow_rows)), schema, key_cache)
        order = np.concatenate([fast_rows, slow_rows])
        inverse = np.empty(len(order), np.int64)
        inverse[order] = np.arange(len(order))
        both = pa.Table.from_batches([fast, slow]).take(pa.array(inverse)).combine_chunks()
        yield from both.to_batches(max_chunksize=len(order))


def decode_batches_slow(batches: Iterator) -> Iterator:
    """The exact per-record path alone (the reference the fast path is tested against)."""
    key_cache: dict[bytes, Any] = {}
    for batch in batches:
        yield decode_slow(batch, arrow_schema(batch.column("timestamp").type), key_cache)


def decode_slow(batch, schema, key_cache: dict[bytes, Any]):
    """Decode one batch row by row with the shared codecs (group.records)."""
    import pyarrow as pa

    from ..group.consumer_group_records import decode_consumer_group_record
    from ..group.records import (
        GroupMetadataValue,
        OffsetCommitKey,
        OffsetCommitValue,
        RecordDecodeError,
        RecordKey,
        decode_key,
        decode_value,
        record_type,
    )

    # decode_record(key, value) is decode_key + decode_value; keys repeat (one per group/topic/partition),
    # so each distinct key is decoded once per task.
    n = batch.num_rows
    cols: dict[str, list] = {f: [None] * n for f in _FIELDS}
    for c in ("members", "partitions", "pending"):
        cols[c] = [None] * n
    keys = batch.column("key").to_pylist()
    values = batch.column("value").to_pylist()
    parts = batch.column("partition").to_pylist()
    offs = batch.column("offset").to_pylist()
    ts = batch.column("timestamp")
    ts_valid = ts.is_valid().to_pylist() if ts.null_count else None
    cols["record_partition"] = parts
    cols["record_offset"] = offs
    kind, reason, kv, vv, tomb = (
        cols["kind"],
        cols["reason"],
        cols["key_version"],
        cols["value_version"],
        cols["tombstone"],
    )
    group, topic, part, offset = cols["group"], cols["topic"], cols["partition"], cols["offset"]
    epoch, meta, cts, ets = (
        cols["leader_epoch"],
        cols["metadata"],
        cols["commit_timestamp"],
        cols["expire_timestamp"],
    )
    for i in range(n):
        key, value = keys[i], values[i]
        bad = None
        k: RecordKey | None = None
        if ts_valid is not None and not ts_valid[i]:
            bad = "null timestamp"
        elif parts[i] is None or offs[i] is None:
            bad = "null partition or offset"
        if bad is None:
            try:
                if key is None:
                    raise RecordDecodeError("null key", part="key")
                if 3 <= record_type(key) <= 8:  # KIP-848 consumer group records
                    _consumer_group_row(cols, i, decode_consumer_group_record(key, value))
                    continue
                k = key_cache.get(key)
                if k is None:
                    k = decode_key(key)
                    if len(key_cache) < 100_000:
                        key_cache[key] = k
                v = None if value is None else decode_value(k.version, value)
            except RecordDecodeError as exc:
                bad = f"{exc.part}: {exc.reason}"
        if bad is not None or k is None:
            kind[i] = "quarantine"
            reason[i] = bad
            cols["detail"][i] = (
                f"key={key.hex() if key is not None else None} value={value.hex() if value is not None else None}"
            )
            continue
        kv[i] = k.version
        tomb[i] = v is None
        group[i] = k.group
        if not isinstance(k, OffsetCommitKey):
            kind[i] = "group_metadata"
            if isinstance(v, GroupMetadataValue):
                vv[i] = v.version
                cols["protocol_type"][i] = v.protocol_type
                cols["generation"][i] = v.generation
                cols["protocol"][i] = v.protocol
                cols["leader"][i] = v.leader
                cols["current_state_timestamp"][i] = v.current_state_timestamp
                cols["members"][i] = [member(m) for m in v.members]
        else:
            kind[i] = "offset_commit"
            topic[i] = k.topic
            part[i] = k.partition
            if isinstance(v, OffsetCommitValue):
                vv[i] = v.version
                offset[i] = v.offset
                epoch[i] = v.leader_epoch
                meta[i] = v.metadata
                cts[i] = v.commit_timestamp
                ets[i] = v.expire_timestamp
    arrays = [
        ts if f == "record_ts" else pa.array(cols[f], type=schema.field(f).type)
        for f in schema.names
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def arrow_schema(ts_type):
    import pyarrow as pa

    tp = pa.struct([("topic", pa.string()), ("partition", pa.int32())])
    member = pa.struct(
        [
            ("member_id", pa.string()),
            ("group_instance_id", pa.string()),
            ("client_id", pa.string()),
            ("client_host", pa.string()),
            ("rebalance_timeout", pa.int32()),
            ("session_timeout", pa.int32()),
            ("topics", pa.list_(pa.string())),
            ("assigned", pa.list_(pa.struct([("topic", pa.string()), ("partition", pa.int32())]))),
            ("error", pa.string()),
        ]
    )
    types = {
        "kind": pa.string(),
        "reason": pa.string(),
        "record_partition": pa.int32(),
        "record_offset": pa.int64(),
        "record_ts": ts_type,
        "key_version": pa.int32(),
        "value_version": pa.int32(),
        "tombstone": pa.bool_(),
        "group": pa.string(),
        "topic": pa.string(),
        "partition": pa.int32(),
        "offset": pa.int64(),
        "leader_epoch": pa.int32(),
        "metadata": pa.string(),
        "commit_timestamp": pa.int64(),
        "expire_timestamp": pa.int64(),
        "protocol_type": pa.string(),
        "generation": pa.int32(),
        "protocol": pa.string(),
        "leader": pa.string(),
        "current_state_timestamp": pa.int64(),
        "members": pa.list_(member),
        "detail": pa.string(),
        "member_id": pa.string(),
        "epoch": pa.int32(),
        "previous_epoch": pa.int32(),
        "member_state": pa.int32(),
        "partitions": pa.list_(tp),
        "pending": pa.list_(tp),
    }
    return pa.schema([(f, types[f]) for f in _FIELDS])


def source_frame(df):
    """Normalise a Kafka-source DataFrame (official connector, our data source or Parquet) for decoding."""
    from pyspark.sql import functions as F

    kinds = dict(df.dtypes)
    ts = F.col("timestamp")
    if not kinds["timestamp"].startswith("timestamp"):
        ts = F.timestamp_millis(F.col("timestamp").cast("long"))
    return df.select(
        F.col("key").cast("binary").alias("key"),
        F.col("value").cast("binary").alias("value"),
        F.col("topic").cast("string").alias("topic"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("long").alias("offset"),
        ts.alias("timestamp"),
    )


def decode(df):
    """The decoded DataFrame (DECODED_SCHEMA) of a Kafka-source DataFrame."""
    return source_frame(df).mapInArrow(decode_batches, DECODED_SCHEMA)
