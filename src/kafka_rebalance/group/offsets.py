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

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..model import TopicPartition
from .errors import Errors
from .offset_messages import (
    DEFAULT_RETENTION_TIME,
    INVALID_OFFSET,
    CommitResult,
    ExpireResult,
    FetchedOffset,
    GroupSnapshot,
    GroupType,
    GroupView,
    OffsetAndMetadata,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetsConfig,
)
from .records import (
    GroupMetadataRecord,
    OffsetCommitRecord,
    OffsetsRecord,
    group_metadata_tombstone,
    offset_commit_record,
    offset_commit_tombstone,
)
from .subscribed_topics import CONSUMER_PROTOCOL_TYPE


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
