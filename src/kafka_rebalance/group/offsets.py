"""Offset-store semantics of Kafka's group coordinator (pure; OffsetMetadataManager's rules).

Kafka's coordinator never mutates state in a request handler: the handler
validates and returns records, and *replaying* those records updates the
state, both live and when a new coordinator loads `__consumer_offsets` after a
failover. This module keeps that split:

- `commit_offsets(store, group, request, now_ms, config)` -> CommitResult(response, records, ...)
- `fetch_offsets(store, group, request)` -> OffsetFetchResponse
- `expire_offsets(store, group, now_ms, config)` -> ExpireResult(records, delete_group)
- `delete_group_records(store, group_id)` -> tombstones for every offset plus the group
- `GroupSnapshot.view()` -> the GroupView of a group loaded from the log (subscriptions parsed)
- `OffsetStore.replay(record)` is the only mutation; `rebuild_from_records(records)`
  replays a whole log into a fresh `Rebuilt(groups, offsets)`.

The group is described by a `GroupView` (what offset validation needs: type,
state, generation, members with epochs, static members, protocol type, the
time the group entered its current state, subscribed topics), so the classic
coordinator and the KIP-848 coordinator both plug in without this module
depending on either.

Validation (OffsetCommit):
- classic group: Dead -> COORDINATOR_NOT_AVAILABLE; generation < 0 and Empty
  -> accepted (admin / manual assignment); with a member id, generation or
  instance id: unknown static instance -> UNKNOWN_MEMBER_ID, instance held by
  another member id -> FENCED_INSTANCE_ID, unknown member -> UNKNOWN_MEMBER_ID,
  generation mismatch -> ILLEGAL_GENERATION; otherwise non-Empty ->
  UNKNOWN_MEMBER_ID; CompletingRebalance -> REBALANCE_IN_PROGRESS.
- consumer (KIP-848) group: epoch < 0 and no members -> accepted; unknown member
  -> UNKNOWN_MEMBER_ID; API version < 9 -> UNSUPPORTED_VERSION; epoch mismatch
  -> STALE_MEMBER_EPOCH (ILLEGAL_GENERATION for members on the classic protocol).
- unknown group: epoch < 0 creates a simple group; else GROUP_ID_NOT_FOUND (API
  v9+) or ILLEGAL_GENERATION (older API).
- per partition: metadata longer than `offset.metadata.max.bytes` (counted in
  UTF-16 units as Java's String.length) -> OFFSET_METADATA_TOO_LARGE; a partition
  the broker does not know (optional `partition_exists`) -> UNKNOWN_TOPIC_OR_PARTITION.

Retention (`offsets.retention.minutes`, default 7 days), per OffsetExpirationCondition:
an offset with an explicit expire timestamp (OffsetCommitValue v1) expires at
it; otherwise it expires when now - base >= retention, where base is the time
the group became Empty (classic group, Empty, state timestamp known), else the
commit timestamp (Empty without timestamp, simple groups, Stable classic
groups on the consumer protocol with known subscriptions, KIP-848 groups).
Offsets of topics the group is still subscribed to never expire, and a
non-Empty classic group with unknown subscriptions expires nothing. When every
offset is gone and the group is empty, the group itself is deleted (tombstone).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..model import TopicPartition
from .errors import Errors
from .records import (
    GroupMetadataRecord,
    GroupMetadataValue,
    OffsetCommitRecord,
    OffsetsRecord,
    group_metadata_tombstone,
    offset_commit_record,
    offset_commit_tombstone,
)

DEFAULT_OFFSET_METADATA_MAX_BYTES = 4096
DEFAULT_OFFSETS_RETENTION_MS = 7 * 24 * 60 * 60 * 1000
DEFAULT_OFFSETS_RETENTION_CHECK_INTERVAL_MS = 600_000
DEFAULT_RETENTION_TIME = (
    -1
)  # OffsetCommitRequest.DEFAULT_RETENTION_TIME: use the broker's retention
INVALID_OFFSET = -1
CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(frozen=True, slots=True)
class OffsetsConfig:
    offset_metadata_max_bytes: int = DEFAULT_OFFSET_METADATA_MAX_BYTES
    offsets_retention_ms: int = DEFAULT_OFFSETS_RETENTION_MS
    offsets_retention_check_interval_ms: int = DEFAULT_OFFSETS_RETENTION_CHECK_INTERVAL_MS

    @classmethod
    def from_minutes(cls, offsets_retention_minutes: int, **kw: int) -> OffsetsConfig:
        return cls(offsets_retention_ms=offsets_retention_minutes * 60_000, **kw)


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int = -1  # -1: none
    metadata: str = ""
    commit_timestamp_ms: int = 0
    expire_timestamp_ms: int | None = None


class GroupType(Enum):
    CLASSIC = "classic"
    CONSUMER = "consumer"


@dataclass(frozen=True, slots=True)
class GroupView:
    """What offset validation and expiry need to know about a group.

    `state` uses Kafka's names: classic Empty, PreparingRebalance,
    CompletingRebalance, Stable, Dead; consumer Empty, Assigning, Reconciling,
    Stable. `members` maps member id -> member epoch (KIP-848) or the classic
    generation (ignored there). `state_timestamp_ms` is when the group entered
    its current state (ClassicGroup.currentStateTimestamp).
    """

    group_id: str
    type: GroupType = GroupType.CLASSIC
    state: str = "Empty"
    generation: int = 0
    members: Mapping[str, int] = field(default_factory=dict)
    static_members: Mapping[str, str] = field(
        default_factory=dict
    )  # group.instance.id -> member id
    classic_protocol_members: frozenset[str] = (
        frozenset()
    )  # consumer-group members still on the classic protocol
    protocol_type: str | None = CONSUMER_PROTOCOL_TYPE
    state_timestamp_ms: int | None = None
    subscribed_topics: frozenset[str] | None = None

    def is_empty(self) -> bool:
        return self.state == "Empty" if self.type is GroupType.CLASSIC else not self.members


@dataclass(frozen=True, slots=True)
class OffsetCommitPartition:
    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    group_id: str
    partitions: tuple[OffsetCommitPartition, ...]
    member_id: str = ""
    generation_id_or_member_epoch: int = -1
    group_instance_id: str | None = None
    retention_time_ms: int = DEFAULT_RETENTION_TIME
    api_version: int = 9


@dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    partitions: tuple[tuple[TopicPartition, Errors], ...]

    def error_for(self, tp: TopicPartition) -> Errors:
        for p, e in self.partitions:
            if p == tp:
                return e
        raise KeyError(tp)

    @property
    def errors(self) -> set[Errors]:
        return {e for _, e in self.partitions}


@dataclass(frozen=True, slots=True)
class CommitResult:
    response: OffsetCommitResponse
    records: tuple[OffsetCommitRecord, ...]
    created_simple_group: bool = False
    # Classic groups: a commit in Stable/PreparingRebalance keeps the member's session alive.
    reschedule_heartbeat: bool = False


@dataclass(frozen=True, slots=True)
class OffsetFetchRequest:
    group_id: str
    partitions: tuple[TopicPartition, ...] | None = None  # None: all committed offsets
    member_id: str | None = None
    member_epoch: int = -1


@dataclass(frozen=True, slots=True)
class FetchedOffset:
    tp: TopicPartition
    offset: int
    leader_epoch: int = -1
    metadata: str = ""


@dataclass(frozen=True, slots=True)
class OffsetFetchResponse:
    error: Errors
    partitions: tuple[FetchedOffset, ...] = ()

    def offset_of(self, tp: TopicPartition) -> int:
        for p in self.partitions:
            if p.tp == tp:
                return p.offset
        return INVALID_OFFSET


@dataclass(frozen=True, slots=True)
class ExpireResult:
    records: tuple[OffsetsRecord, ...]
    expired: tuple[TopicPartition, ...]
    delete_group: bool


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """A classic group as a new coordinator loads it: Stable if it has members, else Empty."""

    group_id: str
    value: GroupMetadataValue | None  # None: a simple group known only from its offsets

    @property
    def state(self) -> str:
        return "Stable" if self.value is not None and self.value.members else "Empty"

    @property
    def generation(self) -> int:
        return self.value.generation if self.value is not None else 0

    @property
    def protocol_type(self) -> str | None:
        return (self.value.protocol_type or None) if self.value is not None else None

    @property
    def state_timestamp_ms(self) -> int | None:
        if self.value is None or self.value.current_state_timestamp == -1:
            return None
        return self.value.current_state_timestamp

    def view(self) -> GroupView:
        """The GroupView a freshly loaded classic group presents to offset validation and expiry."""
        v = self.value
        if v is None:
            return GroupView(self.group_id, GroupType.CLASSIC, "Empty", 0, {}, protocol_type=None)
        return GroupView(
            self.group_id,
            GroupType.CLASSIC,
            self.state,
            v.generation,
            {m.member_id: v.generation for m in v.members},
            {
                m.group_instance_id: m.member_id
                for m in v.members
                if m.group_instance_id is not None
            },
            protocol_type=v.protocol_type or None,
            state_timestamp_ms=self.state_timestamp_ms,
            subscribed_topics=subscribed_topics(v),
        )


def consumer_protocol_topics(buf: bytes | bytearray | memoryview) -> list[str]:
    """The topics of a ConsumerProtocolSubscription, read as version 0 whatever its header says.

    ClassicGroup.computeSubscribedTopics reads the version header, then parses version 0 (topics,
    user data), the prefix of every version; bytes left over are ignored. Raises ValueError where
    Kafka's parse throws (buffer underflow, a null topic array or topic name); invalid UTF-8 is
    replaced, as Java's `new String(bytes, UTF_8)` does.
    """
    buf = bytes(buf)
    size = len(buf)
    if size < 6:
        raise ValueError("subscription too short")
    (n,) = struct.unpack_from(">i", buf, 2)
    pos, out = 6, []
    if n < 0 or n > size - pos:
        raise ValueError("bad topic count")
    for _ in range(n):
        if pos + 2 > size:
            raise ValueError("truncated subscription")
        (ln,) = struct.unpack_from(">h", buf, pos)
        pos += 2
        if ln < 0 or pos + ln > size:
            raise ValueError("truncated subscription")
        out.append(buf[pos : pos + ln].decode("utf-8", errors="replace"))
        pos += ln
    if pos + 4 > size:  # userData: nullable bytes
        raise ValueError("truncated subscription")
    (ud,) = struct.unpack_from(">i", buf, pos)
    if ud > size - pos - 4:
        raise ValueError("truncated subscription user data")
    return out


def metadata_topics(meta: object) -> list[str]:
    """Topics of one member's protocol metadata: ConsumerProtocolSubscription bytes, or an already
    decoded subscription (anything with `.topics`, as the simulator passes); ValueError otherwise."""
    if isinstance(meta, (bytes, bytearray, memoryview)):
        return consumer_protocol_topics(meta)
    topics = getattr(meta, "topics", None)
    if topics is None:
        raise ValueError(f"not a consumer protocol subscription: {type(meta).__name__}")
    return list(topics)


def topics_of_subscriptions(metadata: Iterable[Any]) -> frozenset[str] | None:
    """The union of the subscriptions' topics (ClassicGroup.computeSubscribedTopics), or None when
    one is not a valid ConsumerProtocolSubscription: Kafka logs the SchemaException and knows none."""
    topics: set[str] = set()
    try:
        for meta in metadata:
            topics.update(metadata_topics(meta))
    except ValueError:
        return None
    return frozenset(topics)


def subscribed_topics(value: GroupMetadataValue) -> frozenset[str] | None:
    """ClassicGroup.computeSubscribedTopics: None unless the protocol type is "consumer" and every
    member's subscription parses; the empty set for a group without members."""
    if value.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None
    if not value.members:
        return frozenset()
    if value.protocol is None:
        return None
    return topics_of_subscriptions(m.subscription for m in value.members)


@dataclass(frozen=True, slots=True)
class Rebuilt:
    groups: dict[str, GroupSnapshot]
    offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]]


class OffsetStore:
    """Committed offsets by group; mutated only by `replay`, as Kafka replays its log."""

    def __init__(self) -> None:
        self.offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        self.groups: dict[str, GroupSnapshot] = {}

    def replay(self, record: OffsetsRecord) -> None:
        if isinstance(record, OffsetCommitRecord):
            k = record.key
            tp = TopicPartition(k.topic, k.partition)
            if record.value is None:
                group = self.offsets.get(k.group)
                if group is not None:
                    group.pop(tp, None)
                    if not group:
                        del self.offsets[k.group]
                return
            v = record.value
            if k.group not in self.groups:
                self.groups[k.group] = GroupSnapshot(k.group, None)  # a "simple consumer group"
            self.offsets.setdefault(k.group, {})[tp] = OffsetAndMetadata(
                v.offset,
                v.leader_epoch,
                v.metadata,
                v.commit_timestamp,
                None if v.expire_timestamp == -1 else v.expire_timestamp,
            )
        elif isinstance(record, GroupMetadataRecord):
            if record.value is None:
                self.groups.pop(record.key.group, None)
            else:
                self.groups[record.key.group] = GroupSnapshot(record.key.group, record.value)
        else:
            raise TypeError(f"not an offsets record: {record!r}")

    def replay_all(self, records: Iterable[OffsetsRecord]) -> OffsetStore:
        for r in records:
            self.replay(r)
        return self

    def committed(self, group_id: str, tp: TopicPartition) -> OffsetAndMetadata | None:
        return self.offsets.get(group_id, {}).get(tp)

    def group_offsets(self, group_id: str) -> dict[TopicPartition, OffsetAndMetadata]:
        return dict(self.offsets.get(group_id, {}))


def rebuild_from_records(records: Iterable[OffsetsRecord]) -> Rebuilt:
    """What a coordinator taking over a `__consumer_offsets` partition knows after loading it."""
    store = OffsetStore().replay_all(records)
    return Rebuilt(store.groups, store.offsets)


# ---------------------------------------------------------------------------
# OffsetCommit


def java_string_length(s: str) -> int:
    """Java's String.length(): UTF-16 code units."""
    return len(s) + sum(1 for ch in s if ord(ch) > 0xFFFF)


def _validate_classic_commit(group: GroupView, req: OffsetCommitRequest) -> Errors:
    gen = req.generation_id_or_member_epoch
    if group.state == "Dead":
        return Errors.COORDINATOR_NOT_AVAILABLE
    if gen < 0 and group.state == "Empty":
        return Errors.NONE
    if gen >= 0 or req.member_id or req.group_instance_id is not None:
        if req.group_instance_id is not None:
            existing = group.static_members.get(req.group_instance_id)
            if existing is None:
                return Errors.UNKNOWN_MEMBER_ID
            if existing != req.member_id:
                return Errors.FENCED_INSTANCE_ID
        if req.member_id not in group.members:
            return Errors.UNKNOWN_MEMBER_ID
        if gen != group.generation:
            return Errors.ILLEGAL_GENERATION
    elif group.state != "Empty":
        return Errors.UNKNOWN_MEMBER_ID
    if group.state == "CompletingRebalance":
        return Errors.REBALANCE_IN_PROGRESS
    return Errors.NONE


def _validate_consumer_commit(group: GroupView, req: OffsetCommitRequest) -> Errors:
    epoch = req.generation_id_or_member_epoch
    if epoch < 0 and not group.members:
        return Errors.NONE
    if req.member_id not in group.members:
        return Errors.UNKNOWN_MEMBER_ID
    classic = req.member_id in group.classic_protocol_members
    if not classic and req.api_version < 9:
        return Errors.UNSUPPORTED_VERSION
    if epoch != group.members[req.member_id]:
        return Errors.ILLEGAL_GENERATION if classic else Errors.STALE_MEMBER_EPOCH
    return Errors.NONE


def validate_offset_commit(group: GroupView | None, req: OffsetCommitRequest) -> Errors:
    """The group-level error of an OffsetCommit (NONE when the commit may proceed)."""
    if group is None:
        if req.generation_id_or_member_epoch < 0:
            return Errors.NONE
        return Errors.GROUP_ID_NOT_FOUND if req.api_version >= 9 else Errors.ILLEGAL_GENERATION
    if group.type is GroupType.CLASSIC:
        return _validate_classic_commit(group, req)
    return _validate_consumer_commit(group, req)


def commit_offsets(
    group: GroupView | None,
    req: OffsetCommitRequest,
    now_ms: int,
    config: OffsetsConfig = OffsetsConfig(),
    partition_exists: Callable[[TopicPartition], bool] | None = None,
) -> CommitResult:
    """Handle an OffsetCommit: the response and the records to append (then replay).

    `partition_exists` is the broker's metadata check (KafkaApis): partitions it rejects answer
    UNKNOWN_TOPIC_OR_PARTITION before the coordinator sees the request.
    """
    unknown = set()
    if partition_exists is not None:
        unknown = {
            i
            for i, p in enumerate(req.partitions)
            if not partition_exists(TopicPartition(p.topic, p.partition))
        }
    valid = [p for i, p in enumerate(req.partitions) if i not in unknown]
    error = validate_offset_commit(group, req) if valid else Errors.NONE
    expire = (
        None if req.retention_time_ms == DEFAULT_RETENTION_TIME else now_ms + req.retention_time_ms
    )
    results = []
    records = []
    for i, p in enumerate(req.partitions):
        tp = TopicPartition(p.topic, p.partition)
        if i in unknown:
            results.append((tp, Errors.UNKNOWN_TOPIC_OR_PARTITION))
        elif error is not Errors.NONE:
            results.append((tp, error))
        elif (
            p.metadata is not None
            and java_string_length(p.metadata) > config.offset_metadata_max_bytes
        ):
            results.append((tp, Errors.OFFSET_METADATA_TOO_LARGE))
        else:
            results.append((tp, Errors.NONE))
            records.append(
                offset_commit_record(
                    req.group_id,
                    p.topic,
                    p.partition,
                    p.offset,
                    metadata=p.metadata or "",
                    commit_timestamp=now_ms,
                    leader_epoch=p.leader_epoch,
                    expire_timestamp=expire,
                )
            )
    if error is not Errors.NONE or not valid:
        return CommitResult(OffsetCommitResponse(tuple(results)), ())
    reschedule = (
        group is not None
        and group.type is GroupType.CLASSIC
        and group.state in ("Stable", "PreparingRebalance")
        and req.member_id in group.members
    )
    return CommitResult(
        OffsetCommitResponse(tuple(results)), tuple(records), group is None, reschedule
    )


# ---------------------------------------------------------------------------
# OffsetFetch


def validate_offset_fetch(group: GroupView | None, req: OffsetFetchRequest) -> Errors:
    if group is None or (group.type is GroupType.CLASSIC and group.state == "Dead"):
        return Errors.GROUP_ID_NOT_FOUND
    if group.type is GroupType.CONSUMER and not (req.member_id is None and req.member_epoch < 0):
        if req.member_id is None or req.member_id not in group.members:
            return Errors.UNKNOWN_MEMBER_ID
        if req.member_epoch != group.members[req.member_id]:
            classic = req.member_id in group.classic_protocol_members
            return Errors.ILLEGAL_GENERATION if classic else Errors.STALE_MEMBER_EPOCH
    return Errors.NONE


def fetch_offsets(
    store: OffsetStore, group: GroupView | None, req: OffsetFetchRequest
) -> OffsetFetchResponse:
    """OffsetFetch: an unknown group answers -1 for every partition (not an error), as Kafka does."""
    error = validate_offset_fetch(group, req)
    if error not in (Errors.NONE, Errors.GROUP_ID_NOT_FOUND):
        return OffsetFetchResponse(error)
    committed = {} if error is Errors.GROUP_ID_NOT_FOUND else store.offsets.get(req.group_id, {})
    tps = sorted(committed) if req.partitions is None else req.partitions
    out = []
    for tp in tps:
        o = committed.get(tp)
        out.append(
            FetchedOffset(tp, INVALID_OFFSET)
            if o is None
            else FetchedOffset(tp, o.offset, o.leader_epoch, o.metadata)
        )
    return OffsetFetchResponse(Errors.NONE, tuple(out))


# ---------------------------------------------------------------------------
# Expiration


def expiration_base(group: GroupView, o: OffsetAndMetadata) -> int | None:
    """The timestamp retention counts from for `o`, or None when the group expires nothing."""
    if group.type is GroupType.CONSUMER:
        return o.commit_timestamp_ms
    if group.protocol_type:
        if group.state == "Empty":
            return (
                group.state_timestamp_ms
                if group.state_timestamp_ms is not None
                else o.commit_timestamp_ms
            )
        if (
            group.protocol_type == CONSUMER_PROTOCOL_TYPE
            and group.subscribed_topics is not None
            and group.state == "Stable"
        ):
            return o.commit_timestamp_ms
        return None
    return o.commit_timestamp_ms  # simple group: no protocol type


def _has_expiration_condition(group: GroupView) -> bool:
    if group.type is GroupType.CONSUMER or not group.protocol_type or group.state == "Empty":
        return True
    return (
        group.protocol_type == CONSUMER_PROTOCOL_TYPE
        and group.subscribed_topics is not None
        and group.state == "Stable"
    )


def is_subscribed_to_topic(group: GroupView, topic: str) -> bool:
    if group.type is GroupType.CONSUMER:
        return group.subscribed_topics is not None and topic in group.subscribed_topics
    if group.subscribed_topics is not None:
        return topic in group.subscribed_topics
    if group.state == "Empty" and group.protocol_type == CONSUMER_PROTOCOL_TYPE:
        return (
            False  # computeSubscribedTopics() of an empty consumer-protocol group is the empty set
        )
    return group.protocol_type == CONSUMER_PROTOCOL_TYPE


def is_offset_expired(o: OffsetAndMetadata, base_ms: int, now_ms: int, retention_ms: int) -> bool:
    if o.expire_timestamp_ms is not None:
        return now_ms >= o.expire_timestamp_ms
    return now_ms - base_ms >= retention_ms


def expire_offsets(
    store: OffsetStore, group: GroupView, now_ms: int, config: OffsetsConfig = OffsetsConfig()
) -> ExpireResult:
    """One pass of cleanupGroupMetadata for one group: offset tombstones, and the group's
    tombstone when every offset is gone and the group is empty."""
    committed = store.offsets.get(group.group_id)
    all_expired = True
    records: list[OffsetsRecord] = []
    expired: list[TopicPartition] = []
    if committed:
        if not _has_expiration_condition(group):
            return ExpireResult((), (), False)
        for tp in sorted(committed):
            o = committed[tp]
            if is_subscribed_to_topic(group, tp.topic):
                all_expired = False
                continue
            base = expiration_base(group, o)
            if base is not None and is_offset_expired(o, base, now_ms, config.offsets_retention_ms):
                records.append(offset_commit_tombstone(group.group_id, tp.topic, tp.partition))
                expired.append(tp)
            else:
                all_expired = False
    delete = all_expired and group.is_empty()
    if delete and group.type is GroupType.CLASSIC:
        records.append(group_metadata_tombstone(group.group_id))
    return ExpireResult(tuple(records), tuple(expired), delete)


def delete_group_records(store: OffsetStore, group_id: str) -> tuple[OffsetsRecord, ...]:
    """DeleteGroups: a tombstone for every committed offset, then the group's tombstone."""
    tps = sorted(store.offsets.get(group_id, {}))
    return tuple(offset_commit_tombstone(group_id, tp.topic, tp.partition) for tp in tps) + (
        group_metadata_tombstone(group_id),
    )


def delete_offsets_records(
    store: OffsetStore, group: GroupView | None, partitions: Iterable[TopicPartition]
) -> tuple[Errors, tuple[OffsetsRecord, ...]]:
    """OffsetDelete: GROUP_ID_NOT_FOUND for unknown/dead groups, NON_EMPTY_GROUP for an active
    classic group not on the consumer protocol; partitions of topics the group is still subscribed
    to are skipped (Kafka answers GROUP_SUBSCRIBED_TO_TOPIC for those)."""
    if group is None or (group.type is GroupType.CLASSIC and group.state == "Dead"):
        return Errors.GROUP_ID_NOT_FOUND, ()
    if (
        group.type is GroupType.CLASSIC
        and group.state in ("Stable", "PreparingRebalance", "CompletingRebalance")
        and group.protocol_type != CONSUMER_PROTOCOL_TYPE
    ):
        return Errors.NON_EMPTY_GROUP, ()
    committed = store.offsets.get(group.group_id, {})
    out = [
        offset_commit_tombstone(group.group_id, tp.topic, tp.partition)
        for tp in partitions
        if tp in committed and not is_subscribed_to_topic(group, tp.topic)
    ]
    return Errors.NONE, tuple(out)
