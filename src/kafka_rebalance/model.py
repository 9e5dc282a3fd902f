"""Value types shared by every part of the toolkit.

Names follow Kafka: a TopicPartition is (topic, partition), a member has a
member id and an optional group.instance.id, a broker has an id and a rack.
All values are frozen so they can be hashed, shared and compared.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import model_fields as _model_fields
from . import native
from .errors import InputError

if TYPE_CHECKING:
    from .model_fields import MemberFields as _MemberFields
    from .model_fields import PartitionFields as _PartitionFields
else:  # the compiled storage when the build is fresh, else its source (kafka_rebalance.native)
    _MemberFields = native.load(_model_fields).MemberFields
    _PartitionFields = native.load(_model_fields).PartitionFields

DEFAULT_GENERATION = -1

# Metric samples (docs/formats.md, section 4): the columns the demo's telemetry writes and the
# load model reads, one row per broker, partition and time step; `cpu` (last) is optional.
METRIC_SAMPLE_COLUMNS = (
    "ts",
    "broker",
    "topic",
    "partition",
    "is_leader",
    "bytes_in",
    "bytes_out",
    "messages_in",
    "size_bytes",
    "cpu",
)


def _stored_in_base(cls: type, names: tuple[str, ...]) -> None:
    """Give `cls` its base's field descriptors as its own class attributes, as a slotted
    dataclass has them: `cls.__dict__[name]` is the C-level store (tpcache and sticky set fields
    through it), and a dataclass default left on the class would hide the stored value."""
    for name in names:
        for base in cls.__mro__[1:]:
            if name in base.__dict__:
                setattr(cls, name, base.__dict__[name])
                break


def _reduce_ex(self: Any, protocol: Any) -> Any:
    """Pickling as a slotted frozen dataclass (protocol 2+: the same bytes); protocols 0 and 1
    rebuild through the constructor (copyreg's path cannot rebuild a compiled base)."""
    if protocol < 2:
        return (type(self), tuple(self.__getstate__()))
    return object.__reduce_ex__(self, protocol)


def _setstate(self: Any, state: Sequence[Any]) -> None:
    for f, value in zip(self.__dataclass_fields__, state):
        object.__setattr__(self, f, value)


@dataclass(frozen=True, order=True)
class TopicPartition(_PartitionFields):
    """A topic and a partition number: a frozen value (equal, hashed and ordered as the pair).

    The two fields live in `model_fields.PartitionFields` (compiled by mypyc when the install
    can), which the assignors' kernels read directly; this class adds no storage (`__slots__ =
    ()`: no instance dict, as before) and pickles as a slotted frozen dataclass does."""

    __slots__ = ()

    # field(): no default, whatever the class finds on its base (a compiled base's descriptors
    # would otherwise be taken for defaults)
    topic: str = field()
    partition: int = field()

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    def __getstate__(self) -> list[Any]:
        return [self.topic, self.partition]

    __setstate__ = _setstate
    __reduce_ex__ = _reduce_ex


_stored_in_base(TopicPartition, ("topic", "partition"))


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """A topic as the assignors see it: name, partition count, replica racks per partition."""

    name: str
    partitions: int
    # partition_racks[p] = racks holding a replica of partition p (empty when unknown)
    partition_racks: tuple[frozenset[str], ...] = ()

    def racks_of(self, partition: int) -> frozenset[str]:
        if partition < len(self.partition_racks):
            return self.partition_racks[partition]
        return frozenset()

    @property
    def has_racks(self) -> bool:
        return any(self.partition_racks)


@dataclass(frozen=True)
class MemberSubscription(_MemberFields):
    """What one member tells the group leader in JoinGroup (Kafka's ConsumerProtocolSubscription).

    Stored in `model_fields.MemberFields` (as TopicPartition: no instance dict, pickled as a
    slotted frozen dataclass)."""

    __slots__ = ()

    member_id: str = field()  # field(): as TopicPartition's
    topics: tuple[str, ...] = field()
    owned: tuple[TopicPartition, ...] = ()
    generation: int = DEFAULT_GENERATION
    rack: str | None = None
    instance_id: str | None = None

    def __post_init__(self) -> None:
        # A caller may pass lists: the assignors key caches and dicts on these, so keep tuples.
        if type(self.topics) is not tuple:
            object.__setattr__(self, "topics", tuple(self.topics))
        if type(self.owned) is not tuple:
            object.__setattr__(self, "owned", tuple(self.owned))

    def __getstate__(self) -> list[Any]:
        return [getattr(self, f) for f in self.__dataclass_fields__]

    __setstate__ = _setstate
    __reduce_ex__ = _reduce_ex


_stored_in_base(
    MemberSubscription, ("member_id", "topics", "owned", "generation", "rack", "instance_id")
)


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """Input of an assignor: members in the order the leader put them into its HashMap."""

    topics: Mapping[str, TopicMetadata]
    members: tuple[MemberSubscription, ...]

    def member(self, member_id: str) -> MemberSubscription:
        for m in self.members:
            if m.member_id == member_id:
                return m
        raise KeyError(member_id)


# member id -> partitions, in the order the assignor produced them
Assignment = dict[str, list[TopicPartition]]
# What an assignor's assign() returns: member id -> partitions, read-only. The KIP-848 uniform
# assignor gives an unchanged member its own `owned` tuple (as Kafka's builder reuses the member's
# assignment map), so a caller that wants lists it may change copies them (run_rounds does).
AssignmentView = Mapping[str, Sequence[TopicPartition]]


@dataclass(frozen=True, slots=True)
class LogDir:
    """One log directory (disk) of a broker; capacity in bytes when known."""

    path: str
    capacity_bytes: float | None = None


@dataclass(frozen=True, slots=True)
class Broker:
    """A broker; capacities are bytes, bytes/s, and CPU in Cruise Control's percent (100 = one core)."""

    id: int
    rack: str | None = None
    alive: bool = True
    disk_bytes: float | None = None
    nw_in_bytes: float | None = None
    nw_out_bytes: float | None = None
    cpu: float | None = None
    log_dirs: tuple[LogDir, ...] = ()


@dataclass(frozen=True, slots=True)
class PartitionLoad:
    bytes_in: float = 0.0
    bytes_out: float = 0.0
    messages_in: float = 0.0
    size_bytes: float = 0.0
    cpu: float = 0.0


@dataclass(frozen=True, slots=True)
class PartitionReplicas:
    """A partition's replica placement; replicas[0] is the preferred leader."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int | None
    isr: tuple[int, ...]
    load: PartitionLoad | None = None
    # log_dirs[i]: the log directory holding replicas[i] (None where unknown); None when not read
    log_dirs: tuple[str | None, ...] | None = None

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def preferred_leader(self) -> int | None:
        return self.replicas[0] if self.replicas else None


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    brokers: tuple[Broker, ...]
    partitions: tuple[PartitionReplicas, ...]

    def broker_ids(self) -> list[int]:
        return [b.id for b in self.brokers]


# ---------------------------------------------------------------------------
# Group scenario (docs/formats.md section 1): parsing from decoded JSON.


@dataclass(frozen=True, slots=True)
class GroupScenario:
    spec: GroupSpec
    rounds: int = 1
    name: str = ""


_TOPIC_KEYS = {"name", "partitions", "rf", "racks", "offset", "replica_racks"}
_MEMBER_KEYS = {"id", "topics", "owned", "generation", "rack", "instance"}
_SCENARIO_KEYS = {"name", "topics", "members", "rounds", "expected", "description"}


def topic_racks(
    partitions: int, rf: int, racks: Sequence[str], offset: int
) -> tuple[frozenset[str], ...]:
    """Replica j of partition p sits on racks[(p + j + offset) % len(racks)] (the vectors' layout)."""
    if not racks or rf <= 0:
        return tuple(frozenset() for _ in range(partitions))
    n = len(racks)
    return tuple(
        frozenset(racks[(p + j + offset) % n] for j in range(rf)) for p in range(partitions)
    )


def parse_group_scenario(doc: object) -> GroupScenario:
    """Validate a decoded group scenario; raise InputError naming the field.

    Sizes are checked against the active limits (`limits`) before anything per partition is
    built, so `partitions: 1000000000000` is one error line, not an exhausted machine.
    """
    from . import fields as F
    from . import limits

    if not isinstance(doc, Mapping):
        raise InputError("the scenario must be a JSON object")
    F.check_keys(doc, _SCENARIO_KEYS, "")
    topics_doc = F.get(doc, "topics", "", F.array)
    members_doc = F.get(doc, "members", "", F.array)
    rounds = F.get(doc, "rounds", "", F.int32, 1, lo=1)
    limits.check("rounds", rounds, field="rounds")
    F.get(doc, "name", "", F.string, "", empty=True)
    F.get(doc, "description", "", F.string, "", empty=True)
    limits.check("topics", len(topics_doc), field="topics")
    limits.check("members", len(members_doc), field="members")
    total = 0
    for i, t in enumerate(topics_doc):  # sizes first: nothing is built for an oversized scenario
        if isinstance(t, Mapping) and F.is_int(t.get("partitions")):
            n = F.int32(t["partitions"], f"topics[{i}].partitions")
            total += n
            limits.check("partitions", total, field=f"topics[{i}].partitions")
    topics: dict[str, TopicMetadata] = {}
    for i, t in enumerate(topics_doc):
        where = f"topics[{i}]"
        F.mapping(t, where)
        F.check_keys(t, _TOPIC_KEYS, where)
        name = F.get(t, "name", where, F.string, what="a topic name")
        if name in topics:
            raise InputError(f"duplicate topic {name!r}", field=f"{where}.name")
        n = F.get(t, "partitions", where, F.int32, what="a partition count (integer >= 0)")
        racks: tuple[frozenset[str], ...] = ()
        if "replica_racks" in t:
            rr = F.get(t, "replica_racks", where, F.array)
            if len(rr) != n:
                raise InputError(
                    f"expected {n} lists (one per partition), got {len(rr)}",
                    field=f"{where}.replica_racks",
                )
            racks = tuple(
                frozenset(F.strings(lst, f"{where}.replica_racks[{p}]", what="rack names"))
                for p, lst in enumerate(rr)
            )
        elif "racks" in t or "rf" in t:
            rack_list = F.get(t, "racks", where, F.strings, what="rack names")
            if not rack_list:
                raise InputError("a rack layout needs at least one rack", field=f"{where}.racks")
            rf = F.get(t, "rf", where, F.int32, len(rack_list))
            offset = F.get(t, "offset", where, F.int32, 0)
            racks = topic_racks(n, min(rf, len(rack_list)), rack_list, offset)
        elif "offset" in t:
            F.get(t, "offset", where, F.int32, 0)
        topics[name] = TopicMetadata(name, n, racks)
    members: list[MemberSubscription] = []
    seen: set[str] = set()
    subscriptions: dict[tuple[str, ...], tuple[str, ...]] = {}
    for i, m in enumerate(members_doc):
        where = f"members[{i}]"
        F.mapping(m, where)
        F.check_keys(m, _MEMBER_KEYS, where)
        mid = F.get(m, "id", where, F.string, what="a member id")
        if mid in seen:
            raise InputError(f"duplicate member id {mid!r}", field=f"{where}.id")
        seen.add(mid)
        subs = F.get(m, "topics", where, F.strings, what="topic names")
        owned_doc = F.get(m, "owned", where, F.array, [])
        owned = []
        for j, o in enumerate(owned_doc):
            ow = f"{where}.owned[{j}]"
            if not isinstance(o, list) or len(o) != 2:
                raise F.expected("[topic, partition]", o, ow)
            topic = F.string(o[0], f"{ow}[0]", what="a topic name")
            num = F.partition(o[1], f"{ow}[1]")
            if topic in topics and num >= topics[topic].partitions:
                raise InputError(
                    f"topic {topic!r} has {topics[topic].partitions} partitions, got partition {num}",
                    field=ow,
                )
            # the topic's own name object: equal names compare by identity later
            owned.append(TopicPartition(topics[topic].name if topic in topics else topic, num))
        gen = F.get(m, "generation", where, F.int32, DEFAULT_GENERATION, lo=-1)
        rack = F.get(m, "rack", where, F.optional_string, None, what="a rack name")
        inst = F.get(m, "instance", where, F.optional_string, None, what="a group.instance.id")
        # equal subscriptions share one tuple (assignors group members by it)
        sub = tuple(topics[t].name if t in topics else t for t in subs)
        sub = subscriptions.setdefault(sub, sub)
        members.append(MemberSubscription(mid, sub, tuple(owned), gen, rack, inst))
    return GroupScenario(GroupSpec(topics, tuple(members)), rounds, str(doc.get("name", "")))
