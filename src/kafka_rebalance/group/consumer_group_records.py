"""KIP-848 consumer-group records of `__consumer_offsets` (record types 3-8) and their replay.

Schemas (group-coordinator/src/main/resources/common/message/ConsumerGroup*.json):
keys are non-flexible (int16-length strings), values are version 0 and
flexible (compact strings/arrays, tagged fields at the end of each struct).

    3 ConsumerGroupMetadata          key(group)         value: Epoch int32
    4 ConsumerGroupPartitionMetadata key(group)         value: Topics[TopicId uuid, TopicName,
                                                           NumPartitions, PartitionMetadata[Partition,
                                                           Racks[]]]
    5 ConsumerGroupMemberMetadata    key(group, member) value: InstanceId?, RackId?, ClientId, ClientHost,
                                       SubscribedTopicNames[], SubscribedTopicRegex?, RebalanceTimeoutMs,
                                       ServerAssignor?
    6 ConsumerGroupTargetAssignmentMetadata key(group)  value: AssignmentEpoch int32
    7 ConsumerGroupTargetAssignmentMember   key(group, member) value: TopicPartitions[TopicId, Partitions int32[]]
    8 ConsumerGroupCurrentMemberAssignment  key(group, member) value: MemberEpoch, PreviousMemberEpoch,
                                       State int8, AssignedPartitions[], PartitionsPendingRevocation[]

A topic's id is `UUID.nameUUIDFromBytes(name)` (the convention `assign.uniform`
uses). Kafka writes topic/partition lists in HashMap order; we write them
sorted (topic id, then partition), so these arrays may differ in order -
never in content - from a broker's bytes. The `ClassicMemberMetadata` tagged
field (members upgraded from the classic protocol) is kept raw.

Decoding keeps everything encoding needs to give the same bytes back: unknown
tagged fields of every struct (value, topic, partition) and the deprecated
PartitionMetadata racks of type 4, which this coordinator never writes (as
Kafka's, it writes an empty list) but 3.7-3.9 brokers did. A topic-partitions
entry of types 7/8 is `(topic id, partitions)`, or `(topic id, partitions,
tagged fields)` when the topic struct carried any.

API:
    decode_consumer_group_record(key, value) -> ConsumerGroupRecord (RecordDecodeError on bad data)
    encode_consumer_group_record(record) -> (key, value | None)
    decode_any(key, value) -> records.OffsetsRecord | ConsumerGroupRecord
    diff_records(old, new) -> [ConsumerGroupRecord]: what the coordinator writes for a transition
    replay_consumer_groups(records, topics) -> {group_id: ConsumerGroup} (then consumer_group.on_loaded)
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..model import TopicMetadata, TopicPartition
from .consumer_group_model import ConsumerGroup, ConsumerGroupMember, MemberState
from .consumer_group_tx import _Tx
from .records import (
    _I16,
    _I32,
    OffsetsRecord,
    RecordDecodeError,
    TaggedFields,
    UnknownRecordTypeError,
    _Reader,
    _uvarint,
    _w_string,
    _w_tagged,
    decode_record,
    record_type,
)

_UUID = struct.Struct(">qq")


def topic_uuid(name: str) -> bytes:
    from ..assign.uniform import topic_id  # lazy: assign/ is built alongside

    return _UUID.pack(*topic_id(name))


@dataclass(frozen=True, slots=True)
class ConsumerGroupRecord:
    """One KIP-848 record: `record_type` 3-8, group id, member id (types 5, 7, 8), value (None = tombstone)."""

    record_type: int
    group_id: str
    member_id: str | None
    value: object | None

    @property
    def is_tombstone(self) -> bool:
        return self.value is None


@dataclass(frozen=True, slots=True)
class GroupEpochValue:  # types 3 (Epoch) and 6 (AssignmentEpoch)
    epoch: int
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class PartitionRacks:  # ConsumerGroupPartitionMetadataValue.PartitionMetadata (deprecated; kept for round trips)
    partition: int
    racks: tuple[str, ...] = ()
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class PartitionMetadataTopic:  # ConsumerGroupPartitionMetadataValue.TopicMetadata
    topic_id: bytes
    name: str
    num_partitions: int
    partition_metadata: tuple[PartitionRacks, ...] = ()
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class PartitionMetadataValue:  # type 4
    topics: tuple[PartitionMetadataTopic, ...]  # sorted by name when we write them
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class MemberMetadataValue:  # type 5
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    tagged_fields: TaggedFields = ()


# (topic id, partitions) or (topic id, partitions, the topic struct's tagged fields)
TopicPartitions = tuple[tuple, ...]


@dataclass(frozen=True, slots=True)
class TargetAssignmentValue:  # type 7
    partitions: TopicPartitions
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class CurrentAssignmentValue:  # type 8
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: TopicPartitions
    pending_revocation: TopicPartitions
    tagged_fields: TaggedFields = ()


_MEMBER_TYPES = (5, 7, 8)


# ---------------------------------------------------------------------------
# Encoding.


def _w_carray(items: list[bytes]) -> bytes:
    return _uvarint(len(items) + 1) + b"".join(items)


def _w_topic_partitions(tps: TopicPartitions) -> bytes:
    return _w_carray(
        [
            entry[0]
            + _w_carray([_I32.pack(p) for p in entry[1]])
            + _w_tagged(entry[2] if len(entry) > 2 else ())
            for entry in tps
        ]
    )


def _w_partition_metadata_topic(t: PartitionMetadataTopic) -> bytes:
    parts = [
        _I32.pack(pm.partition)
        + _w_carray([_w_string(r, "Racks", True) for r in pm.racks])
        + _w_tagged(pm.tagged_fields)
        for pm in t.partition_metadata
    ]
    return (
        t.topic_id
        + _w_string(t.name, "TopicName", True)
        + _I32.pack(t.num_partitions)
        + _w_carray(parts)
        + _w_tagged(t.tagged_fields)
    )


def encode_consumer_group_record(rec: ConsumerGroupRecord) -> tuple[bytes, bytes | None]:
    t = rec.record_type
    if t not in range(3, 9):
        raise ValueError(f"not a consumer group record type: {t}")
    key = _I16.pack(t) + _w_string(rec.group_id, "GroupId", False)
    if t in _MEMBER_TYPES:
        key += _w_string(rec.member_id, "MemberId", False)
    v = rec.value
    if v is None:
        return key, None
    out = bytearray(_I16.pack(0))
    if t in (3, 6):
        assert isinstance(v, GroupEpochValue)
        out += _I32.pack(v.epoch)
    elif t == 4:
        assert isinstance(v, PartitionMetadataValue)
        out += _w_carray([_w_partition_metadata_topic(topic) for topic in v.topics])
    elif t == 5:
        assert isinstance(v, MemberMetadataValue)
        out += (
            _w_string(v.instance_id, "InstanceId", True, True)
            + _w_string(v.rack_id, "RackId", True, True)
            + _w_string(v.client_id, "ClientId", True)
            + _w_string(v.client_host, "ClientHost", True)
            + _w_carray(
                [_w_string(s, "SubscribedTopicNames", True) for s in v.subscribed_topic_names]
            )
            + _w_string(v.subscribed_topic_regex, "SubscribedTopicRegex", True, True)
            + _I32.pack(v.rebalance_timeout_ms)
            + _w_string(v.server_assignor, "ServerAssignor", True, True)
        )
    elif t == 7:
        assert isinstance(v, TargetAssignmentValue)
        out += _w_topic_partitions(v.partitions)
    else:
        assert isinstance(v, CurrentAssignmentValue)
        out += (
            _I32.pack(v.member_epoch)
            + _I32.pack(v.previous_member_epoch)
            + struct.pack(">b", v.state)
            + _w_topic_partitions(v.assigned)
            + _w_topic_partitions(v.pending_revocation)
        )
    out += _w_tagged(v.tagged_fields)
    return key, bytes(out)


# ---------------------------------------------------------------------------
# Decoding.


def _r_topic_partitions(r: _Reader, what: str) -> TopicPartitions:
    out: list[tuple] = []
    for _ in range(r.array_len(what, True)):
        tid = r.take(16, "TopicId")
        parts = tuple(r.int32("Partitions") for _ in range(r.array_len("Partitions", True)))
        tagged = r.tagged_fields()
        out.append((tid, parts, tagged) if tagged else (tid, parts))
    return tuple(out)


def _r_partition_metadata_topic(r: _Reader) -> PartitionMetadataTopic:
    tid = r.take(16, "TopicId")
    name = r.string("TopicName", True)
    n = r.int32("NumPartitions")
    partitions = []
    for _ in range(r.array_len("PartitionMetadata", True)):
        partition = r.int32("Partition")
        racks = tuple(r.string("Racks", True) for _ in range(r.array_len("Racks", True)))
        partitions.append(PartitionRacks(partition, racks, r.tagged_fields()))
    return PartitionMetadataTopic(tid, name, n, tuple(partitions), r.tagged_fields())


def decode_consumer_group_record(key: bytes, value: bytes | None) -> ConsumerGroupRecord:
    t = record_type(key)
    if t not in range(3, 9):
        raise UnknownRecordTypeError(
            f"not a consumer group record type: {t}", part="key", version=t
        )
    k = _Reader(bytes(key), "key", t)
    k.pos = 2
    group = k.string("GroupId", False)
    member = k.string("MemberId", False) if t in _MEMBER_TYPES else None
    if value is None:
        return ConsumerGroupRecord(t, group, member, None)
    r = _Reader(bytes(value), "value")
    r.pos = 0
    version = r.int16("version")
    r.version = version
    if version != 0:
        raise RecordDecodeError(
            f"unknown value version {version} for record type {t} (valid: 0)",
            part="value",
            version=version,
        )
    v: object
    if t in (3, 6):
        epoch = r.int32("Epoch")
        v = GroupEpochValue(epoch, r.tagged_fields())
    elif t == 4:
        topics = tuple(_r_partition_metadata_topic(r) for _ in range(r.array_len("Topics", True)))
        v = PartitionMetadataValue(topics, r.tagged_fields())
    elif t == 5:
        instance = r.nullable_string("InstanceId", True)
        rack = r.nullable_string("RackId", True)
        client_id = r.string("ClientId", True)
        client_host = r.string("ClientHost", True)
        names = tuple(
            r.string("SubscribedTopicNames", True)
            for _ in range(r.array_len("SubscribedTopicNames", True))
        )
        regex = r.nullable_string("SubscribedTopicRegex", True)
        timeout = r.int32("RebalanceTimeoutMs")
        assignor = r.nullable_string("ServerAssignor", True)
        v = MemberMetadataValue(
            instance,
            rack,
            client_id,
            client_host,
            names,
            regex,
            timeout,
            assignor,
            r.tagged_fields(),
        )
    elif t == 7:
        parts = _r_topic_partitions(r, "TopicPartitions")
        v = TargetAssignmentValue(parts, r.tagged_fields())
    else:
        epoch, prev = r.int32("MemberEpoch"), r.int32("PreviousMemberEpoch")
        state = struct.unpack(">b", r.take(1, "State"))[0]
        assigned = _r_topic_partitions(r, "AssignedPartitions")
        pending = _r_topic_partitions(r, "PartitionsPendingRevocation")
        v = CurrentAssignmentValue(epoch, prev, state, assigned, pending, r.tagged_fields())
    return ConsumerGroupRecord(t, group, member, v)


def decode_any(key: bytes, value: bytes | None) -> OffsetsRecord | ConsumerGroupRecord:
    """Offset commits and classic group metadata (records.decode_record) or KIP-848 records."""
    t = record_type(key)
    if 3 <= t <= 8:
        return decode_consumer_group_record(key, value)
    return decode_record(key, value)


# ---------------------------------------------------------------------------
# From group state to records and back.


def _by_topic(tps: Iterable[TopicPartition]) -> tuple[tuple[bytes, tuple[int, ...]], ...]:
    grouped: dict[bytes, list[int]] = {}
    for tp in tps:
        grouped.setdefault(topic_uuid(tp.topic), []).append(tp.partition)
    return tuple((tid, tuple(sorted(ps))) for tid, ps in sorted(grouped.items()))


def _member_metadata(m: ConsumerGroupMember) -> MemberMetadataValue:
    return MemberMetadataValue(
        m.instance_id,
        m.rack_id,
        m.client_id,
        "",
        tuple(sorted(m.subscribed_topics)),
        None,
        m.rebalance_timeout_ms,
        m.server_assignor,
    )


def _current(m: ConsumerGroupMember) -> CurrentAssignmentValue:
    return CurrentAssignmentValue(
        m.member_epoch,
        m.previous_member_epoch,
        m.state.value,
        _by_topic(m.assigned),
        _by_topic(m.pending_revocation),
    )


def diff_records(old: ConsumerGroup | None, new: ConsumerGroup) -> list[ConsumerGroupRecord]:
    """The records a coordinator appends to move the persisted group from `old` to `new`
    (removed members' tombstones first, then subscriptions, metadata, epoch, target, current)."""
    g = new.group_id
    out: list[ConsumerGroupRecord] = []
    old_members = old.members if old is not None else {}
    for mid in old_members:
        if mid not in new.members:
            out += [
                ConsumerGroupRecord(8, g, mid, None),
                ConsumerGroupRecord(7, g, mid, None),
                ConsumerGroupRecord(5, g, mid, None),
            ]
    for mid, m in new.members.items():
        o = old_members.get(mid)
        if o is None or _member_metadata(o) != _member_metadata(m):
            out.append(ConsumerGroupRecord(5, g, mid, _member_metadata(m)))
    if old is None or dict(old.subscription_metadata) != dict(new.subscription_metadata):
        out.append(
            ConsumerGroupRecord(
                4,
                g,
                None,
                PartitionMetadataValue(
                    tuple(
                        PartitionMetadataTopic(topic_uuid(t), t, n)
                        for t, n in sorted(new.subscription_metadata.items())
                    )
                ),
            )
        )
    if old is None or old.group_epoch != new.group_epoch:
        out.append(ConsumerGroupRecord(3, g, None, GroupEpochValue(new.group_epoch)))
    old_target = old.target_assignment if old is not None else {}
    target_changed = False
    for mid, parts in new.target_assignment.items():
        if old_target.get(mid) != parts:
            out.append(ConsumerGroupRecord(7, g, mid, TargetAssignmentValue(_by_topic(parts))))
            target_changed = True
    if old is None or target_changed or old.assignment_epoch != new.assignment_epoch:
        out.append(ConsumerGroupRecord(6, g, None, GroupEpochValue(new.assignment_epoch)))
    for mid, m in new.members.items():
        o = old_members.get(mid)
        if o is None or _current(o) != _current(m):
            out.append(ConsumerGroupRecord(8, g, mid, _current(m)))
    return out


def replay_consumer_groups(
    records: Iterable[ConsumerGroupRecord], topics: Mapping[str, TopicMetadata]
) -> dict[str, ConsumerGroup]:
    """Rebuild every consumer group from its records, as a new coordinator loads them.
    Timers are not persisted: call consumer_group.on_loaded on each group afterwards."""
    names = {topic_uuid(t): t for t in topics}
    groups: dict[str, dict] = {}

    def tps(parts: TopicPartitions) -> frozenset[TopicPartition]:
        return frozenset(
            TopicPartition(names[e[0]], p) for e in parts if e[0] in names for p in e[1]
        )

    for rec in records:
        st = groups.setdefault(
            rec.group_id,
            {
                "epoch": 0,
                "assignment_epoch": 0,
                "meta": {},
                "members": {},
                "current": {},
                "target": {},
            },
        )
        v = rec.value
        if rec.record_type == 3:
            if v is None:
                del groups[rec.group_id]
            else:
                assert isinstance(v, GroupEpochValue)
                st["epoch"] = v.epoch
        elif rec.record_type == 6:
            st["assignment_epoch"] = v.epoch if isinstance(v, GroupEpochValue) else 0
        elif rec.record_type == 4:
            st["meta"] = (
                {topic.name: topic.num_partitions for topic in v.topics}
                if isinstance(v, PartitionMetadataValue)
                else {}
            )
        elif rec.record_type == 5:
            st["members"].pop(rec.member_id, None) if v is None else st["members"].__setitem__(
                rec.member_id, v
            )
        elif rec.record_type == 7:
            if isinstance(v, TargetAssignmentValue):
                st["target"][rec.member_id] = tps(v.partitions)
            else:
                st["target"].pop(rec.member_id, None)
        elif rec.record_type == 8:
            st["current"].pop(rec.member_id, None) if v is None else st["current"].__setitem__(
                rec.member_id, v
            )
    out: dict[str, ConsumerGroup] = {}
    for gid, st in groups.items():
        group = ConsumerGroup(
            gid,
            group_epoch=st["epoch"],
            assignment_epoch=st["assignment_epoch"],
            topics=dict(topics),
            subscription_metadata=st["meta"],
        )
        tx = _Tx(group)  # the same indexing (and ownership checks) as live updates
        for mid, meta in st["members"].items():
            cur = st["current"].get(mid)
            try:
                state = MemberState(cur.state) if cur else MemberState.STABLE
            except ValueError:
                state = MemberState.UNKNOWN
            tx.put_member(
                ConsumerGroupMember(
                    mid,
                    member_epoch=cur.member_epoch if cur else 0,
                    previous_member_epoch=cur.previous_member_epoch if cur else -1,
                    state=state,
                    instance_id=meta.instance_id,
                    rack_id=meta.rack_id,
                    rebalance_timeout_ms=meta.rebalance_timeout_ms,
                    subscribed_topics=tuple(meta.subscribed_topic_names),
                    server_assignor=meta.server_assignor,
                    client_id=meta.client_id,
                    assigned=tps(cur.assigned) if cur else frozenset(),
                    pending_revocation=tps(cur.pending_revocation) if cur else frozenset(),
                )
            )
        tx.target_assignment = dict(st["target"])
        tx._copied.add("target_assignment")
        out[gid] = dataclasses.replace(tx.build(0), state_timestamp_ms=0)
    return out
