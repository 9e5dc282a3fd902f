"""Value types shared by every part of the toolkit.

Names follow Kafka: a TopicPartition is (topic, partition), a member has a
member id and an optional group.instance.id, a broker has an id and a rack.
All values are frozen so they can be hashed, shared and compared.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .errors import InputError

DEFAULT_GENERATION = -1


@dataclass(frozen=True, order=True, slots=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


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


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    """What one member tells the group leader in JoinGroup (Kafka's ConsumerProtocolSubscription)."""

    member_id: str
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...] = ()
    generation: int = DEFAULT_GENERATION
    rack: str | None = None
    instance_id: str | None = None


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


def _field(
    obj: object,
    key: str,
    where: str,
    types: type | tuple[type, ...],
    required: bool = True,
    default=None,
):
    if not isinstance(obj, Mapping):
        raise InputError(f"expected an object, got {type(obj).__name__}", field=where)
    if key not in obj:
        if required:
            raise InputError("missing", field=f"{where}.{key}" if where else key)
        return default
    value = obj[key]
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise InputError(
            f"expected {_tname(types)}, got {value!r}", field=f"{where}.{key}" if where else key
        )
    if not isinstance(value, types):
        raise InputError(
            f"expected {_tname(types)}, got {value!r}", field=f"{where}.{key}" if where else key
        )
    return value


def _tname(types: type | tuple[type, ...]) -> str:
    if isinstance(types, tuple):
        return " or ".join(t.__name__ for t in types)
    return types.__name__


_TOPIC_KEYS = {"name", "partitions", "rf", "racks", "offset", "replica_racks"}
_MEMBER_KEYS = {"id", "topics", "owned", "generation", "rack", "instance"}
_SCENARIO_KEYS = {"name", "topics", "members", "rounds", "expected", "description"}


def _check_keys(obj: Mapping, allowed: set[str], where: str) -> None:
    for key in obj:
        if key not in allowed:
            raise InputError(
                f"unknown field (allowed: {', '.join(sorted(allowed))})",
                field=f"{where}.{key}" if where else key,
            )


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
    """Validate a decoded group scenario; raise InputError naming the field."""
    if not isinstance(doc, Mapping):
        raise InputError("the scenario must be a JSON object")
    _check_keys(doc, _SCENARIO_KEYS, "")
    topics_doc = _field(doc, "topics", "", list)
    members_doc = _field(doc, "members", "", list)
    rounds = _field(doc, "rounds", "", int, required=False, default=1)
    if rounds < 1:
        raise InputError(f"must be >= 1, got {rounds}", field="rounds")
    topics: dict[str, TopicMetadata] = {}
    for i, t in enumerate(topics_doc):
        where = f"topics[{i}]"
        if not isinstance(t, Mapping):
            raise InputError(f"expected an object, got {t!r}", field=where)
        _check_keys(t, _TOPIC_KEYS, where)
        name = _field(t, "name", where, str)
        if not name:
            raise InputError("empty topic name", field=f"{where}.name")
        if name in topics:
            raise InputError(f"duplicate topic {name!r}", field=f"{where}.name")
        n = _field(t, "partitions", where, int)
        if n < 0:
            raise InputError(f"must be >= 0, got {n}", field=f"{where}.partitions")
        racks: tuple[frozenset[str], ...] = ()
        if "replica_racks" in t:
            rr = _field(t, "replica_racks", where, list)
            if len(rr) != n:
                raise InputError(
                    f"expected {n} lists (one per partition), got {len(rr)}",
                    field=f"{where}.replica_racks",
                )
            parsed = []
            for p, lst in enumerate(rr):
                if not isinstance(lst, list) or not all(isinstance(r, str) for r in lst):
                    raise InputError(
                        f"expected a list of rack names, got {lst!r}",
                        field=f"{where}.replica_racks[{p}]",
                    )
                parsed.append(frozenset(lst))
            racks = tuple(parsed)
        elif "racks" in t or "rf" in t:
            rack_list = _field(t, "racks", where, list)
            if not rack_list:
                raise InputError("a rack layout needs at least one rack", field=f"{where}.racks")
            if not all(isinstance(r, str) for r in rack_list):
                raise InputError(
                    f"expected a list of rack names, got {rack_list!r}", field=f"{where}.racks"
                )
            rf = _field(t, "rf", where, int, required=False, default=len(rack_list))
            if rf < 0:
                raise InputError(f"must be >= 0, got {rf}", field=f"{where}.rf")
            offset = _field(t, "offset", where, int, required=False, default=0)
            racks = topic_racks(n, rf, rack_list, offset)
        topics[name] = TopicMetadata(name, n, racks)
    members: list[MemberSubscription] = []
    seen: set[str] = set()
    subscriptions: dict[tuple[str, ...], tuple[str, ...]] = {}
    for i, m in enumerate(members_doc):
        where = f"members[{i}]"
        if not isinstance(m, Mapping):
            raise InputError(f"expected an object, got {m!r}", field=where)
        _check_keys(m, _MEMBER_KEYS, where)
        mid = _field(m, "id", where, str)
        if not mid:
            raise InputError("empty member id", field=f"{where}.id")
        if mid in seen:
            raise InputError(f"duplicate member id {mid!r}", field=f"{where}.id")
        seen.add(mid)
        subs = _field(m, "topics", where, list)
        for j, s in enumerate(subs):
            if not isinstance(s, str):
                raise InputError(f"expected a topic name, got {s!r}", field=f"{where}.topics[{j}]")
        owned_doc = _field(m, "owned", where, list, required=False, default=[])
        owned = []
        for j, o in enumerate(owned_doc):
            if (
                not isinstance(o, list)
                or len(o) != 2
                or not isinstance(o[0], str)
                or not isinstance(o[1], int)
                or isinstance(o[1], bool)
                or o[1] < 0
            ):
                raise InputError(
                    f"expected [topic, partition>=0], got {o!r}", field=f"{where}.owned[{j}]"
                )
            if o[0] in topics and o[1] >= topics[o[0]].partitions:
                raise InputError(
                    f"topic {o[0]!r} has {topics[o[0]].partitions} partitions, got partition {o[1]}",
                    field=f"{where}.owned[{j}]",
                )
            # the topic's own name object: equal names compare by identity later
            owned.append(TopicPartition(topics[o[0]].name if o[0] in topics else o[0], o[1]))
        gen = _field(m, "generation", where, int, required=False, default=DEFAULT_GENERATION)
        rack = _field(m, "rack", where, (str, type(None)), required=False, default=None)
        inst = _field(m, "instance", where, (str, type(None)), required=False, default=None)
        # equal subscriptions share one tuple (assignors group members by it)
        sub = tuple(topics[t].name if t in topics else t for t in subs)
        sub = subscriptions.setdefault(sub, sub)
        members.append(MemberSubscription(mid, sub, tuple(owned), gen, rack, inst))
    return GroupScenario(GroupSpec(topics, tuple(members)), rounds, str(doc.get("name", "")))
