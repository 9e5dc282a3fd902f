"""Kafka's consumer protocol wire format: `Subscription` and `Assignment`, versions 0-3.

Byte-compatible with Kafka's `ConsumerProtocol` serializer (the generated
`ConsumerProtocolSubscription` / `ConsumerProtocolAssignment` messages, not
flexible): an int16 version header, then the fields of that version.

Subscription: topics `[]string`; user data nullable `bytes`; v1+ owned
partitions `[]{topic string, partitions []int32}`; v2+ generation id int32;
v3+ rack id nullable string. Assignment: assigned partitions
`[]{topic, []int32}` and nullable user data (same layout in every version).

Strings are int16 length + UTF-8, bytes int32 length (-1 for null), arrays
int32 count. As in Kafka, the serializer sorts the subscribed topics and the
owned partitions; a newer version than 3 is written and read as version 3
(trailing fields of newer versions are ignored).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..model import TopicPartition

LOWEST_SUPPORTED_VERSION = 0
HIGHEST_SUPPORTED_VERSION = 3
PROTOCOL_TYPE = "consumer"

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class SchemaException(ValueError):
    """Kafka's SchemaException: the bytes do not parse as the consumer protocol."""


@dataclass(frozen=True, slots=True)
class Subscription:
    """ConsumerPartitionAssignor.Subscription: what a member sends in JoinGroup metadata."""

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = -1  # -1: no generation (Optional.empty in Kafka)
    rack_id: str | None = None


@dataclass(frozen=True, slots=True)
class Assignment:
    """ConsumerPartitionAssignor.Assignment: what the leader sends a member in SyncGroup."""

    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None = None


def _check_version(version: int) -> int:
    if version < LOWEST_SUPPORTED_VERSION:
        raise SchemaException(f"Unsupported version: {version}")
    return min(version, HIGHEST_SUPPORTED_VERSION)


def _java_sorted(strings: Iterable[str]) -> list[str]:
    vals = list(strings)
    if any(ord(c) > 0xFFFF for s in vals for c in s):
        return sorted(vals, key=lambda s: s.encode("utf-16-be", "surrogatepass"))
    return sorted(vals)


# ---------------------------------------------------------------- writing


class _Writer:
    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def int16(self, v: int) -> None:
        self.parts.append(_I16.pack(v))

    def int32(self, v: int) -> None:
        self.parts.append(_I32.pack(v))

    def string(self, s: str | None, nullable: bool = False) -> None:
        if s is None:
            if not nullable:
                raise SchemaException("non-nullable string is null")
            self.int16(-1)
            return
        b = s.encode("utf-8")
        if len(b) > 0x7FFF:
            raise SchemaException(f"string of {len(b)} bytes is longer than 32767")
        self.int16(len(b))
        self.parts.append(b)

    def bytes_(self, b: bytes | None) -> None:
        if b is None:
            self.int32(-1)
        else:
            self.int32(len(b))
            self.parts.append(bytes(b))

    def int32_array(self, values: Sequence[int]) -> None:
        self.int32(len(values))
        if values:
            self.parts.append(struct.pack(f">{len(values)}i", *values))

    def topic_partitions(self, groups: list[tuple[str, list[int]]]) -> None:
        self.int32(len(groups))
        for topic, parts in groups:
            self.string(topic)
            self.int32_array(parts)

    def value(self) -> bytes:
        return b"".join(self.parts)


def encode_subscription(sub: Subscription, version: int = HIGHEST_SUPPORTED_VERSION) -> bytes:
    """ConsumerProtocol.serializeSubscription: topics sorted, owned partitions sorted and grouped."""
    version = _check_version(version)
    w = _Writer()
    w.int16(version)
    topics = _java_sorted(sub.topics)
    w.int32(len(topics))
    for t in topics:
        w.string(t)
    w.bytes_(sub.user_data)
    if version >= 1:
        order = {
            t: i for i, t in enumerate(_java_sorted({tp.topic for tp in sub.owned_partitions}))
        }
        owned = sorted(sub.owned_partitions, key=lambda tp: (order[tp.topic], tp.partition))
        groups: list[tuple[str, list[int]]] = []
        for tp in owned:
            if not groups or groups[-1][0] != tp.topic:
                groups.append((tp.topic, []))
            groups[-1][1].append(tp.partition)
        w.topic_partitions(groups)
    if version >= 2:
        w.int32(sub.generation_id)
    if version >= 3:
        w.string(sub.rack_id, nullable=True)
    return w.value()


def encode_assignment(assignment: Assignment, version: int = HIGHEST_SUPPORTED_VERSION) -> bytes:
    """ConsumerProtocol.serializeAssignment: partitions grouped by topic in order of first appearance."""
    version = _check_version(version)
    w = _Writer()
    w.int16(version)
    groups: dict[str, list[int]] = {}
    for tp in assignment.partitions:
        groups.setdefault(tp.topic, []).append(tp.partition)
    w.topic_partitions(list(groups.items()))
    w.bytes_(assignment.user_data)
    return w.value()


# ---------------------------------------------------------------- reading


class ProtocolReader:
    """Reads the consumer protocol's big-endian fields, raising Kafka's SchemaException texts."""

    __slots__ = ("buf", "pos", "what")

    def __init__(self, buf: bytes, what: str) -> None:
        self.buf = memoryview(bytes(buf))
        self.pos = 0
        self.what = what

    def _take(self, n: int) -> memoryview:
        end = self.pos + n
        if n < 0 or end > len(self.buf):
            raise SchemaException(f"Buffer underflow while parsing consumer protocol's {self.what}")
        out = self.buf[self.pos : end]
        self.pos = end
        return out

    def int16(self) -> int:
        return _I16.unpack(self._take(2))[0]

    def int32(self) -> int:
        return _I32.unpack(self._take(4))[0]

    def nullable_string(self, field: str) -> str | None:
        n = self.int16()
        return None if n < 0 else self._string_body(field, n)

    def string(self, field: str) -> str:
        n = self.int16()
        if n < 0:
            raise SchemaException(f"non-nullable field {field} was serialized as null")
        return self._string_body(field, n)

    def _string_body(self, field: str, n: int) -> str:
        try:
            return bytes(self._take(n)).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SchemaException(f"field {field} is not valid UTF-8: {exc}") from None

    def bytes_(self) -> bytes | None:
        n = self.int32()
        if n < 0:
            return None
        return bytes(self._take(n))

    def array_len(self, field: str) -> int:
        n = self.int32()
        if n < 0:
            raise SchemaException(f"non-nullable field {field} was serialized as null")
        return n

    def int32_array(self, field: str) -> list[int]:
        n = self.array_len(field)
        return list(struct.unpack(f">{n}i", self._take(4 * n))) if n else []

    def topic_partitions(self, field: str) -> list[TopicPartition]:
        out: list[TopicPartition] = []
        for _ in range(self.array_len(field)):
            topic = self.string("topic")
            out.extend(TopicPartition(topic, p) for p in self.int32_array("partitions"))
        return out


def decode_version(buf: bytes) -> int:
    """The int16 version header (ConsumerProtocol.deserializeVersion)."""
    if len(buf) < 2:
        raise SchemaException("Buffer underflow while parsing consumer protocol's header")
    return _I16.unpack_from(buf, 0)[0]


def decode_subscription(buf: bytes) -> Subscription:
    """ConsumerProtocol.deserializeSubscription, header included; an empty rack id reads as none."""
    r = ProtocolReader(buf, "subscription")
    version = _check_version(r.int16())
    topics = tuple(r.string("topics") for _ in range(r.array_len("topics")))
    user_data = r.bytes_()
    owned: list[TopicPartition] = []
    generation = -1
    rack = None
    if version >= 1:
        owned = r.topic_partitions("ownedPartitions")
    if version >= 2:
        generation = r.int32()
    if version >= 3:
        rack = r.nullable_string("rackId")
    return Subscription(topics, user_data, tuple(owned), generation, rack or None)


def decode_assignment(buf: bytes) -> Assignment:
    """ConsumerProtocol.deserializeAssignment, header included."""
    r = ProtocolReader(buf, "assignment")
    _check_version(r.int16())
    partitions = r.topic_partitions("assignedPartitions")
    user_data = r.bytes_()
    return Assignment(tuple(partitions), user_data)
