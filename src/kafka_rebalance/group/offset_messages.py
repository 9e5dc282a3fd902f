"""The offset store's values and messages: configuration, committed offsets, the GroupView that
offset validation reads, OffsetCommit/OffsetFetch requests and responses, and the GroupSnapshot of
a classic group loaded from `__consumer_offsets` (pure values; the rules live in group.offsets)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from ..model import TopicPartition
from .errors import Errors
from .records import GroupMetadataValue, OffsetCommitRecord, OffsetsRecord
from .subscribed_topics import CONSUMER_PROTOCOL_TYPE, subscribed_topics

DEFAULT_OFFSET_METADATA_MAX_BYTES = 4096
DEFAULT_OFFSETS_RETENTION_MS = 7 * 24 * 60 * 60 * 1000
DEFAULT_OFFSETS_RETENTION_CHECK_INTERVAL_MS = 600_000
DEFAULT_RETENTION_TIME = (
    -1
)  # OffsetCommitRequest.DEFAULT_RETENTION_TIME: use the broker's retention
INVALID_OFFSET = -1


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
