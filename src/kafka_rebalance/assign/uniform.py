"""KIP-848 server-side `UniformAssignor`: sticky, balanced, racks ignored.

A homogeneous group (every member subscribed to the same topics) goes to
`uniform_homogeneous`, any other to `uniform_heterogeneous`, as in Kafka's
group-coordinator/.../assignor/UniformAssignor.java.

The server side knows topics by id. Here a topic's id is
`UUID.nameUUIDFromBytes(name as UTF-8)` (the parity vectors' convention):
its order (`Uuid.compareTo`, signed longs) breaks ties between topics and
its `hashCode` places it in Java hash tables. A member's current assignment
is its `owned` partitions; topics absent from metadata are not among a
member's subscribed topic ids (the coordinator resolves names through the
metadata image), and members are iterated in the order of the group's
`HashMap<String, member>`, emulated with `javacompat.JavaHashMap`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache

from ..model import Assignment, GroupSpec, TopicPartition
from .javacompat import JavaHashMap, JavaHashSet


def _int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def _signed64(b: bytes) -> int:
    v = int.from_bytes(b, "big")
    return v - (1 << 64) if v & (1 << 63) else v


@lru_cache(maxsize=65536)
def topic_id(name: str) -> tuple[int, int]:
    """`UUID.nameUUIDFromBytes(name.getBytes(UTF_8))` as Kafka `Uuid(msb, lsb)` (signed longs).

    Tuples of the two signed longs compare like `Uuid.compareTo`.
    """
    md5 = bytearray(hashlib.md5(name.encode("utf-8")).digest())
    md5[6] = (md5[6] & 0x0F) | 0x30  # version 3
    md5[8] = (md5[8] & 0x3F) | 0x80  # IETF variant
    return _signed64(bytes(md5[:8])), _signed64(bytes(md5[8:]))


def topic_id_string(name: str) -> str:
    """The id in `java.util.UUID.toString()` form (for people and logs)."""
    msb, lsb = topic_id(name)
    h = f"{msb & ((1 << 64) - 1):016x}{lsb & ((1 << 64) - 1):016x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@lru_cache(maxsize=65536)
def topic_id_hash(name: str) -> int:
    """Kafka `Uuid.hashCode()` of the topic's id: fold of msb ^ lsb to 32 bits."""
    msb, lsb = topic_id(name)
    x = (msb ^ lsb) & ((1 << 64) - 1)
    return _int32((x >> 32) ^ x)


@dataclass(slots=True)
class UniformGroup:
    """The assignor's view of the group (Kafka's GroupSpec + SubscribedTopicDescriber)."""

    member_ids: list[str]  # in HashMap iteration order (groupSpec.memberIds())
    subscriptions: dict[str, list[str]]  # member -> subscribed existing topics, distinct, in order given
    subscribed_names: dict[str, tuple[str, ...]]  # member -> subscribed topic names as given (may be absent)
    partitions: dict[str, int]  # topic -> partition count (topics in metadata)
    owned: dict[str, tuple[TopicPartition, ...]]  # member -> current assignment, in order given
    instance_ids: dict[str, str | None]


def member_iteration_order(spec: GroupSpec) -> list[str]:
    """Member ids as a `HashMap<String, ...>` filled in `spec.members` order iterates them."""
    m = JavaHashMap()
    for member in spec.members:
        m.put(member.member_id, True)
    return list(m.keys())


def current_assignment(owned: tuple[TopicPartition, ...]) -> list[tuple[str, list[int]]]:
    """A member's current assignment `Map<Uuid, Set<Integer>>` in Java iteration order.

    Built as `map.computeIfAbsent(topicId, k -> new HashSet<>()).add(p)` in
    the owned order (so a new topic goes to the head of its bin), the parity
    vectors' construction.
    """
    m = JavaHashMap(hasher=topic_id_hash)
    for tp in owned:
        m.compute_if_absent(tp.topic, _new_set).add(tp.partition)
    return [(t, s.to_list()) for t, s in m.items()]


def _new_set(_key: object) -> JavaHashSet:
    return JavaHashSet()


def group_view(spec: GroupSpec) -> UniformGroup:
    partitions = {name: t.partitions for name, t in spec.topics.items()}
    subs = {m.member_id: [t for t in dict.fromkeys(m.topics) if t in partitions] for m in spec.members}
    return UniformGroup(
        member_ids=member_iteration_order(spec),
        subscriptions=subs,
        subscribed_names={m.member_id: m.topics for m in spec.members},
        partitions=partitions,
        owned={m.member_id: m.owned for m in spec.members},
        instance_ids={m.member_id: m.instance_id for m in spec.members},
    )


def is_homogeneous(group: UniformGroup) -> bool:
    """SubscriptionType.HOMOGENEOUS: every member subscribes to the same topic ids."""
    first = None
    for subs in group.subscriptions.values():
        s = frozenset(subs)
        if first is None:
            first = s
        elif s != first:
            return False
    return True


class UniformAssignor:
    """KIP-848 `uniform` assignor."""

    name = "uniform"

    def assign(self, spec: GroupSpec) -> Assignment:
        if not spec.members:
            return {}
        group = group_view(spec)
        if is_homogeneous(group):
            from .uniform_homogeneous import build_homogeneous

            result = build_homogeneous(group)
        else:
            from .uniform_heterogeneous import build_heterogeneous

            result = build_heterogeneous(group)
        return {m.member_id: result.get(m.member_id, []) for m in spec.members}
