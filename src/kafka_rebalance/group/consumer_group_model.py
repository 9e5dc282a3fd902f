"""Values of the KIP-848 consumer group protocol: member and group state, requests, responses, effects.

Names follow Kafka's group-coordinator `modern/` package. A member's
`assigned` partitions plus its `pending_revocation` are what the coordinator
considers it to own; `ConsumerGroup.partition_owners` indexes them (partition
-> owner), and `partition_epochs` reads the owner's epoch through it, which is
how the reconciliation knows a partition is not yet free (Kafka's
`currentPartitionEpoch`). States are documented on the enums.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from operator import attrgetter
from typing import Any

from ..fields import INT32_MAX
from ..model import TopicMetadata, TopicPartition
from ..model_fields import PartitionFields
from .consumer_group_values import _NOT_GIVEN
from .consumer_group_values import fast_inits as fast_inits  # (re-exported, as the three below)
from .consumer_group_values import replace as replace
from .consumer_group_values import slot_init as slot_init
from .consumer_group_values import value_reduce as value_reduce
from .errors import Errors

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
JOIN_GROUP_MEMBER_EPOCH = 0


def _or_dict(given: Any) -> Any:
    """A default_factory=dict field's value in a hand-written `__init__`: a new dict if left out."""
    return {} if given is _NOT_GIVEN else given


# Kafka's assignor names (group.consumer.assignors) -> our registry names.
SERVER_ASSIGNORS = {"uniform": "uniform", "range": "server-range"}


_by_partition = attrgetter("partition")
_by_topic = attrgetter("topic")


def sorted_partitions(tps: Iterable[TopicPartition]) -> list[TopicPartition]:
    """Distinct partitions (a set's) in (topic, partition) order, as `sorted(tps)` gives them: by
    partition, then stably by topic, two key passes of plain attributes instead of a tuple key or
    the dataclass's `__lt__` per comparison (2-4x faster; the order is the same, no two of the
    partitions being equal). Partitions of one topic (a one-topic group's every set) skip the
    second pass: it would keep their order."""
    by_partition = sorted(tps, key=_by_partition)
    first: object = None
    for i, tp in enumerate(by_partition):
        fields: object = tp
        # (the compiled storage read directly, as the assignors' kernels read it)
        t = fields.topic if isinstance(fields, PartitionFields) else tp.topic
        if i == 0:
            first = t
        elif t is not first and t != first:
            return sorted(by_partition, key=_by_topic)
    return by_partition


class MemberState(Enum):
    """Reconciliation state of one member (Kafka's modern.MemberState).

    STABLE: reconciled to the target assignment of its epoch; moves on when a
        newer target epoch exists.
    UNREVOKED_PARTITIONS: must revoke `pending_revocation` before it may move to
        the next epoch; stays until its heartbeat stops reporting them, and is
        fenced if that takes longer than its rebalance timeout.
    UNRELEASED_PARTITIONS: at the target epoch but waiting for partitions other
        members still own; they are handed over as soon as they are released.
    UNKNOWN: a state written by a newer coordinator; the member is fenced unless
        it reports no partitions.
    """

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class ConsumerGroupState(Enum):
    """Kafka's ConsumerGroup.ConsumerGroupState.

    Empty: no members. Assigning: the group epoch is ahead of the target
    assignment epoch (a member joined/left/changed subscription and no
    heartbeat has recomputed the target yet). Reconciling: some member is not
    yet STABLE at the target epoch. Stable: every member is. Dead: deleted.
    """

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True, init=False)
class ConsumerGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topics: tuple[str, ...] = ()
    server_assignor: str | None = None
    client_id: str = ""
    assigned: frozenset[TopicPartition] = frozenset()
    pending_revocation: frozenset[TopicPartition] = frozenset()
    # The rebalance timer's deadline, so the shell can schedule it and a stale timer is ignored
    # (the session timers are the group's: ConsumerGroup.session_deadlines).
    rebalance_deadline_ms: int | None = None

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_epoch

    @property
    def owned(self) -> frozenset[TopicPartition]:
        """What the coordinator considers this member to hold."""
        pending = self.pending_revocation
        return self.assigned | pending if pending else self.assigned

    def __reduce__(self) -> tuple:  # a native build's too (see value_reduce)
        return value_reduce(self)

    def __init__(
        self,
        member_id: str,
        member_epoch: int = 0,
        previous_member_epoch: int = -1,
        state: MemberState = MemberState.STABLE,
        instance_id: str | None = None,
        rack_id: str | None = None,
        rebalance_timeout_ms: int = -1,
        subscribed_topics: tuple[str, ...] = (),
        server_assignor: str | None = None,
        client_id: str = "",
        assigned: frozenset[TopicPartition] = frozenset(),
        pending_revocation: frozenset[TopicPartition] = frozenset(),
        rebalance_deadline_ms: int | None = None,
    ) -> None:
        # a mypyc build's constructor (stores each field); the sources' is slot_init's
        self.member_id = member_id  # type: ignore[misc]
        self.member_epoch = member_epoch  # type: ignore[misc]
        self.previous_member_epoch = previous_member_epoch  # type: ignore[misc]
        self.state = state  # type: ignore[misc]
        self.instance_id = instance_id  # type: ignore[misc]
        self.rack_id = rack_id  # type: ignore[misc]
        self.rebalance_timeout_ms = rebalance_timeout_ms  # type: ignore[misc]
        self.subscribed_topics = subscribed_topics  # type: ignore[misc]
        self.server_assignor = server_assignor  # type: ignore[misc]
        self.client_id = client_id  # type: ignore[misc]
        self.assigned = assigned  # type: ignore[misc]
        self.pending_revocation = pending_revocation  # type: ignore[misc]
        self.rebalance_deadline_ms = rebalance_deadline_ms  # type: ignore[misc]


@dataclass(frozen=True, slots=True, init=False)
class ConsumerGroupConfig:
    """group.consumer.* broker configs (Kafka defaults)."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = INT32_MAX
    assignors: tuple[str, ...] = ("uniform", "range")  # the first is the default

    def __reduce__(self) -> tuple:  # a native build's too (see value_reduce)
        return value_reduce(self)

    def __init__(
        self,
        session_timeout_ms: int = 45_000,
        heartbeat_interval_ms: int = 5_000,
        max_size: int = INT32_MAX,
        assignors: tuple[str, ...] = ("uniform", "range"),
    ) -> None:
        # a mypyc build's constructor (stores each field); the sources' is slot_init's
        self.session_timeout_ms = session_timeout_ms  # type: ignore[misc]
        self.heartbeat_interval_ms = heartbeat_interval_ms  # type: ignore[misc]
        self.max_size = max_size  # type: ignore[misc]
        self.assignors = assignors  # type: ignore[misc]


@dataclass(frozen=True, slots=True, init=False)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: Mapping[str, ConsumerGroupMember] = field(default_factory=dict)  # in join order
    target_assignment: Mapping[str, frozenset[TopicPartition]] = field(default_factory=dict)
    partition_owners: Mapping[TopicPartition, str] = field(default_factory=dict)
    static_members: Mapping[str, str] = field(default_factory=dict)  # instance id -> member id
    # member id -> its session timeout's deadline: timers, in memory only (Kafka's timer, not the
    # member record), so a heartbeat moves one entry instead of rebuilding its member
    session_deadlines: Mapping[str, int] = field(default_factory=dict)
    # Topic metadata the coordinator knows (the metadata image) and the slice the group subscribes to.
    topics: Mapping[str, TopicMetadata] = field(default_factory=dict)
    subscription_metadata: Mapping[str, int] = field(default_factory=dict)  # topic -> partitions
    metadata_refresh_needed: bool = False
    member_id_counter: int = 0
    state_timestamp_ms: int = 0
    deleted: bool = False
    # Members not reconciled to the assignment epoch, kept by consumer_group's updates so the state
    # costs O(1) per heartbeat; None = unknown (count on demand).
    unreconciled: int | None = None
    # A cache beside target_assignment: member id -> (its target set, that set sorted, the assignor
    # input made of them), valid for a member while the set is the very object in target_assignment
    # (consumer_group_target.TargetOrder).
    target_order: Mapping[str, tuple] = field(default_factory=dict, compare=False, repr=False)
    # A cache of answers: member id -> the last plain answer the in-place heartbeat gave it (no
    # error, no assignment), handed out again while its epoch and interval are still the ones to
    # send: most heartbeats get the same answer as the one before (consumer_group_steady).
    answers: Mapping[str, ConsumerGroupHeartbeatResponse] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def state(self) -> ConsumerGroupState:
        if self.deleted:
            return ConsumerGroupState.DEAD
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        unreconciled = self.unreconciled
        if unreconciled is None:
            unreconciled = count_unreconciled(self.members.values(), self.assignment_epoch)
        return ConsumerGroupState.RECONCILING if unreconciled else ConsumerGroupState.STABLE

    @property
    def partition_epochs(self) -> Mapping[TopicPartition, int]:
        """Partition -> the epoch of the member holding it (Kafka's ConsumerGroup.partitionEpochs).

        Kafka stores each partition's epoch and rewrites it whenever its owner's epoch changes,
        so it always equals the owner's member epoch: read through `partition_owners` instead, a
        member's move to a new epoch costs nothing per partition."""
        return PartitionEpochs(self.partition_owners, self.members)

    def current_partition_epoch(self, tp: TopicPartition) -> int:
        """Epoch of the member still holding `tp`, or -1 if it is free."""
        owner = self.partition_owners.get(tp)
        return -1 if owner is None else self.members[owner].member_epoch

    def subscribed_topic_names(self) -> frozenset[str]:
        return frozenset(t for m in self.members.values() for t in m.subscribed_topics)

    def __reduce__(self) -> tuple:  # a native build's too (see value_reduce)
        return value_reduce(self)

    def __init__(
        self,
        group_id: str,
        group_epoch: int = 0,
        assignment_epoch: int = 0,
        members: Any = _NOT_GIVEN,
        target_assignment: Any = _NOT_GIVEN,
        partition_owners: Any = _NOT_GIVEN,
        static_members: Any = _NOT_GIVEN,
        session_deadlines: Any = _NOT_GIVEN,
        topics: Any = _NOT_GIVEN,
        subscription_metadata: Any = _NOT_GIVEN,
        metadata_refresh_needed: bool = False,
        member_id_counter: int = 0,
        state_timestamp_ms: int = 0,
        deleted: bool = False,
        unreconciled: int | None = None,
        target_order: Any = _NOT_GIVEN,
        answers: Any = _NOT_GIVEN,
    ) -> None:
        # a mypyc build's constructor (stores each field); the sources' is slot_init's
        self.group_id = group_id  # type: ignore[misc]
        self.group_epoch = group_epoch  # type: ignore[misc]
        self.assignment_epoch = assignment_epoch  # type: ignore[misc]
        self.members = _or_dict(members)  # type: ignore[misc]
        self.target_assignment = _or_dict(target_assignment)  # type: ignore[misc]
        self.partition_owners = _or_dict(partition_owners)  # type: ignore[misc]
        self.static_members = _or_dict(static_members)  # type: ignore[misc]
        self.session_deadlines = _or_dict(session_deadlines)  # type: ignore[misc]
        self.topics = _or_dict(topics)  # type: ignore[misc]
        self.subscription_metadata = _or_dict(subscription_metadata)  # type: ignore[misc]
        self.metadata_refresh_needed = metadata_refresh_needed  # type: ignore[misc]
        self.member_id_counter = member_id_counter  # type: ignore[misc]
        self.state_timestamp_ms = state_timestamp_ms  # type: ignore[misc]
        self.deleted = deleted  # type: ignore[misc]
        self.unreconciled = unreconciled  # type: ignore[misc]
        self.target_order = _or_dict(target_order)  # type: ignore[misc]
        self.answers = _or_dict(answers)  # type: ignore[misc]


class PartitionEpochs(Mapping[TopicPartition, int]):
    """partition -> its owner's member epoch, read through the owners and members maps (no copy)."""

    __slots__ = ("_owners", "_members")

    def __init__(
        self, owners: Mapping[TopicPartition, str], members: Mapping[str, ConsumerGroupMember]
    ) -> None:
        self._owners = owners
        self._members = members

    def __getitem__(self, tp: TopicPartition) -> int:
        return self._members[self._owners[tp]].member_epoch

    def __contains__(self, tp: object) -> bool:
        return tp in self._owners

    def __iter__(self):
        return iter(self._owners)

    def __len__(self) -> int:
        return len(self._owners)

    def __repr__(self) -> str:
        return repr(dict(self.items()))


def count_unreconciled(members, assignment_epoch: int) -> int:
    return sum(1 for m in members if not m.is_reconciled_to(assignment_epoch))


@dataclass(frozen=True, slots=True, init=False)
class ConsumerGroupHeartbeatRequest:
    """ConsumerGroupHeartbeatRequest. None means "not sent" (only changes are sent after joining)."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    server_assignor: str | None = None
    owned_partitions: tuple[TopicPartition, ...] | None = None

    def __reduce__(self) -> tuple:  # a native build's too (see value_reduce)
        return value_reduce(self)

    def __init__(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        instance_id: str | None = None,
        rack_id: str | None = None,
        rebalance_timeout_ms: int = -1,
        subscribed_topic_names: tuple[str, ...] | None = None,
        server_assignor: str | None = None,
        owned_partitions: tuple[TopicPartition, ...] | None = None,
    ) -> None:
        # a mypyc build's constructor (stores each field); the sources' is slot_init's
        self.group_id = group_id  # type: ignore[misc]
        self.member_id = member_id  # type: ignore[misc]
        self.member_epoch = member_epoch  # type: ignore[misc]
        self.instance_id = instance_id  # type: ignore[misc]
        self.rack_id = rack_id  # type: ignore[misc]
        self.rebalance_timeout_ms = rebalance_timeout_ms  # type: ignore[misc]
        self.subscribed_topic_names = subscribed_topic_names  # type: ignore[misc]
        self.server_assignor = server_assignor  # type: ignore[misc]
        self.owned_partitions = owned_partitions  # type: ignore[misc]


@dataclass(frozen=True, slots=True, init=False)
class ConsumerGroupHeartbeatResponse:
    error: Errors = Errors.NONE
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: frozenset[TopicPartition] | None = None  # None: unchanged, not sent
    error_message: str = ""

    def __reduce__(self) -> tuple:  # a native build's too (see value_reduce)
        return value_reduce(self)

    def __init__(
        self,
        error: Errors = Errors.NONE,
        member_id: str | None = None,
        member_epoch: int = 0,
        heartbeat_interval_ms: int = 0,
        assignment: frozenset[TopicPartition] | None = None,
        error_message: str = "",
    ) -> None:
        # a mypyc build's constructor (stores each field); the sources' is slot_init's
        self.error = error  # type: ignore[misc]
        self.member_id = member_id  # type: ignore[misc]
        self.member_epoch = member_epoch  # type: ignore[misc]
        self.heartbeat_interval_ms = heartbeat_interval_ms  # type: ignore[misc]
        self.assignment = assignment  # type: ignore[misc]
        self.error_message = error_message  # type: ignore[misc]


# --- effects: what the shell must do after a transition -----------------------------------


@dataclass(frozen=True, slots=True, init=False)
class GroupEpochBumped:
    group_epoch: int
    cause: str

    def __reduce__(self) -> tuple:  # a native build's too (see value_reduce)
        return value_reduce(self)

    def __init__(
        self,
        group_epoch: int,
        cause: str,
    ) -> None:
        # a mypyc build's constructor (stores each field); the sources' is slot_init's
        self.group_epoch = group_epoch  # type: ignore[misc]
        self.cause = cause  # type: ignore[misc]


@dataclass(frozen=True, slots=True, init=False)
class TargetAssignmentComputed:
    assignment_epoch: int
    assignor: str

    def __reduce__(self) -> tuple:  # a native build's too (see value_reduce)
        return value_reduce(self)

    def __init__(
        self,
        assignment_epoch: int,
        assignor: str,
    ) -> None:
        # a mypyc build's constructor (stores each field); the sources' is slot_init's
        self.assignment_epoch = assignment_epoch  # type: ignore[misc]
        self.assignor = assignor  # type: ignore[misc]


@dataclass(frozen=True, slots=True, init=False)
class MemberJoined:
    member_id: str
    instance_id: str | None

    def __reduce__(self) -> tuple:  # a native build's too (see value_reduce)
        return value_reduce(self)

    def __init__(
        self,
        member_id: str,
        instance_id: str | None,
    ) -> None:
        # a mypyc build's constructor (stores each field); the sources' is slot_init's
        self.member_id = member_id  # type: ignore[misc]
        self.instance_id = instance_id  # type: ignore[misc]


@dataclass(frozen=True, slots=True, init=False)
class MemberRemoved:
    member_id: str
    reason: str  # "leave" | "session timeout" | "rebalance timeout" | "replaced"

    def __reduce__(self) -> tuple:  # a native build's too (see value_reduce)
        return value_reduce(self)

    def __init__(
        self,
        member_id: str,
        reason: str,
    ) -> None:
        # a mypyc build's constructor (stores each field); the sources' is slot_init's
        self.member_id = member_id  # type: ignore[misc]
        self.reason = reason  # type: ignore[misc]


@dataclass(frozen=True, slots=True, init=False)
class MemberReconciled:
    member_id: str
    member_epoch: int
    state: MemberState
    assigned: frozenset[TopicPartition]
    pending_revocation: frozenset[TopicPartition]

    def __reduce__(self) -> tuple:  # a native build's too (see value_reduce)
        return value_reduce(self)

    def __init__(
        self,
        member_id: str,
        member_epoch: int,
        state: MemberState,
        assigned: frozenset[TopicPartition],
        pending_revocation: frozenset[TopicPartition],
    ) -> None:
        # a mypyc build's constructor (stores each field); the sources' is slot_init's
        self.member_id = member_id  # type: ignore[misc]
        self.member_epoch = member_epoch  # type: ignore[misc]
        self.state = state  # type: ignore[misc]
        self.assigned = assigned  # type: ignore[misc]
        self.pending_revocation = pending_revocation  # type: ignore[misc]


@dataclass(frozen=True, slots=True, init=False)
class ScheduleSessionTimeout:
    member_id: str
    deadline_ms: int

    def __reduce__(self) -> tuple:  # a native build's too (see value_reduce)
        return value_reduce(self)

    def __init__(
        self,
        member_id: str,
        deadline_ms: int,
    ) -> None:
        # a mypyc build's constructor (stores each field); the sources' is slot_init's
        self.member_id = member_id  # type: ignore[misc]
        self.deadline_ms = deadline_ms  # type: ignore[misc]


@dataclass(frozen=True, slots=True, init=False)
class ScheduleRebalanceTimeout:
    member_id: str
    member_epoch: int
    deadline_ms: int

    def __reduce__(self) -> tuple:  # a native build's too (see value_reduce)
        return value_reduce(self)

    def __init__(
        self,
        member_id: str,
        member_epoch: int,
        deadline_ms: int,
    ) -> None:
        # a mypyc build's constructor (stores each field); the sources' is slot_init's
        self.member_id = member_id  # type: ignore[misc]
        self.member_epoch = member_epoch  # type: ignore[misc]
        self.deadline_ms = deadline_ms  # type: ignore[misc]


@dataclass(frozen=True, slots=True, init=False)
class CancelRebalanceTimeout:
    member_id: str

    def __reduce__(self) -> tuple:  # a native build's too (see value_reduce)
        return value_reduce(self)

    def __init__(
        self,
        member_id: str,
    ) -> None:
        # a mypyc build's constructor (stores each field); the sources' is slot_init's
        self.member_id = member_id  # type: ignore[misc]


Effect = (
    GroupEpochBumped
    | TargetAssignmentComputed
    | MemberJoined
    | MemberRemoved
    | MemberReconciled
    | ScheduleSessionTimeout
    | ScheduleRebalanceTimeout
    | CancelRebalanceTimeout
)

fast_inits(
    ConsumerGroupMember,
    ConsumerGroupConfig,
    ConsumerGroup,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    GroupEpochBumped,
    TargetAssignmentComputed,
    MemberJoined,
    MemberRemoved,
    MemberReconciled,
    ScheduleSessionTimeout,
    ScheduleRebalanceTimeout,
    CancelRebalanceTimeout,
)
