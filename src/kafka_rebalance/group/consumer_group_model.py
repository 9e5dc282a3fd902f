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
from dataclasses import MISSING, dataclass, field, fields
from enum import Enum
from operator import attrgetter
from types import MemberDescriptorType
from typing import Any, TypeVar

from ..fields import INT32_MAX
from ..model import TopicMetadata, TopicPartition
from .errors import Errors

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
JOIN_GROUP_MEMBER_EPOCH = 0

_T = TypeVar("_T")
_LAYOUT: dict[type, tuple[Any, dict[str, int]]] = {}


def replace(obj: _T, **changes: Any) -> _T:
    """dataclasses.replace for this package's frozen dataclasses (all fields in __init__), without
    its per-call field introspection: a heartbeat replaces a member or the group several times."""
    cls = type(obj)
    layout = _LAYOUT.get(cls)
    if layout is None:
        names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
        get = attrgetter(*names) if len(names) > 1 else (lambda o, n=names[0]: (getattr(o, n),))
        layout = _LAYOUT[cls] = (get, {n: i for i, n in enumerate(names)})
    values = layout[0](obj)
    if changes:
        values = list(values)
        at = layout[1]
        for k, v in changes.items():
            values[at[k]] = v
    return cls(*values)


_C = TypeVar("_C", bound=type)


class _Factory:
    """A default_factory field's parameter left out (shown as dataclasses shows it)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


_NOT_GIVEN: Any = _Factory()


def slot_init(cls: _C) -> _C:
    """Give a frozen slots dataclass an `__init__` that stores each field through its slot's own
    setter (bound once) instead of `object.__setattr__`: the same parameters, defaults and
    default factories, the same values, about half the cost (a heartbeat builds several of these
    values). Everything else stays the dataclass's (eq, hash, repr, frozen, replace, pickling)."""
    if hasattr(cls, "__post_init__"):  # the generated __init__ would not call it
        raise TypeError(f"{cls.__name__}: slot_init does not run __post_init__")
    params, body, ns = [], [], {"_NOT_GIVEN": _NOT_GIVEN}
    for i, f in enumerate(fields(cls)):
        slot = cls.__dict__[f.name]
        if not f.init or not isinstance(slot, MemberDescriptorType):
            raise TypeError(f"{cls.__name__}.{f.name}: not a slot set by __init__")
        ns[f"_set{i}"] = slot.__set__
        if f.default is not MISSING:
            ns[f"_default{i}"] = f.default
            params.append(f"{f.name}=_default{i}")
        elif f.default_factory is not MISSING:
            ns[f"_factory{i}"] = f.default_factory
            params.append(f"{f.name}=_NOT_GIVEN")
            body.append(f"    if {f.name} is _NOT_GIVEN:\n        {f.name} = _factory{i}()")
        else:
            params.append(f.name)
        body.append(f"    _set{i}(self, {f.name})")
    exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body) + "\n", ns)  # noqa: S102
    init = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = dict(vars(cls)["__init__"].__annotations__)
    setattr(cls, "__init__", init)  # noqa: B010
    return cls


# Kafka's assignor names (group.consumer.assignors) -> our registry names.
SERVER_ASSIGNORS = {"uniform": "uniform", "range": "server-range"}


_by_partition = attrgetter("partition")
_by_topic = attrgetter("topic")


def sorted_partitions(tps: Iterable[TopicPartition]) -> list[TopicPartition]:
    """Distinct partitions (a set's) in (topic, partition) order, as `sorted(tps)` gives them: by
    partition, then stably by topic, two key passes of plain attributes instead of a tuple key or
    the dataclass's `__lt__` per comparison (2-4x faster; the order is the same, no two of the
    partitions being equal)."""
    return sorted(sorted(tps, key=_by_partition), key=_by_topic)


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


@slot_init
@dataclass(frozen=True, slots=True)
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


@slot_init
@dataclass(frozen=True, slots=True)
class ConsumerGroupConfig:
    """group.consumer.* broker configs (Kafka defaults)."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = INT32_MAX
    assignors: tuple[str, ...] = ("uniform", "range")  # the first is the default


@slot_init
@dataclass(frozen=True, slots=True)
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


@slot_init
@dataclass(frozen=True, slots=True)
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


@slot_init
@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatResponse:
    error: Errors = Errors.NONE
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: frozenset[TopicPartition] | None = None  # None: unchanged, not sent
    error_message: str = ""


# --- effects: what the shell must do after a transition -----------------------------------


@slot_init
@dataclass(frozen=True, slots=True)
class GroupEpochBumped:
    group_epoch: int
    cause: str


@slot_init
@dataclass(frozen=True, slots=True)
class TargetAssignmentComputed:
    assignment_epoch: int
    assignor: str


@slot_init
@dataclass(frozen=True, slots=True)
class MemberJoined:
    member_id: str
    instance_id: str | None


@slot_init
@dataclass(frozen=True, slots=True)
class MemberRemoved:
    member_id: str
    reason: str  # "leave" | "session timeout" | "rebalance timeout" | "replaced"


@slot_init
@dataclass(frozen=True, slots=True)
class MemberReconciled:
    member_id: str
    member_epoch: int
    state: MemberState
    assigned: frozenset[TopicPartition]
    pending_revocation: frozenset[TopicPartition]


@slot_init
@dataclass(frozen=True, slots=True)
class ScheduleSessionTimeout:
    member_id: str
    deadline_ms: int


@slot_init
@dataclass(frozen=True, slots=True)
class ScheduleRebalanceTimeout:
    member_id: str
    member_epoch: int
    deadline_ms: int


@slot_init
@dataclass(frozen=True, slots=True)
class CancelRebalanceTimeout:
    member_id: str


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
