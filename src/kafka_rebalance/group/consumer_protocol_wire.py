"""The consumer-protocol bytes inside classic GroupMetadata, kept exactly as a client wrote them.

`assign.protocol` decodes a Subscription/Assignment the way Kafka's ConsumerProtocol reads it and
encodes the way Kafka's Java client writes it (topics sorted, owned partitions sorted and grouped,
no rack written as null). Other clients write the same schema differently: librdkafka sends its
topics in its own order and an empty rack id as "" rather than null, and an assignment may name
a topic twice. Reading such bytes into Kafka's view and writing them back with Java's serializer
changes them. These wire forms keep the version, every field in wire order, null apart from empty,
and any trailing bytes of a version above 3, so decode -> encode gives the original bytes; their
`subscription()` / `assignment()` are Kafka's view of the same bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..assign.protocol import Assignment, ProtocolReader, SchemaException, Subscription
from ..model import TopicPartition

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")

TopicGroups = tuple[tuple[str, tuple[int, ...]], ...]  # (topic, partitions) in wire order


@dataclass(frozen=True, slots=True)
class SubscriptionWire:
    """ConsumerProtocolSubscription as on the wire."""

    version: int
    topics: tuple[str, ...]
    user_data: bytes | None
    owned_partitions: TopicGroups = ()  # v1+
    generation_id: int = -1  # v2+
    rack_id: str | None = None  # v3+; "" is kept apart from null
    trailing: bytes = b""  # fields of a version above 3 (Kafka reads such bytes as version 3)

    def subscription(self) -> Subscription:
        """Kafka's view (ConsumerProtocol.deserializeSubscription): an empty rack id is no rack."""
        owned = tuple(TopicPartition(t, p) for t, ps in self.owned_partitions for p in ps)
        return Subscription(
            self.topics, self.user_data, owned, self.generation_id, self.rack_id or None
        )


@dataclass(frozen=True, slots=True)
class AssignmentWire:
    """ConsumerProtocolAssignment as on the wire (the same layout in every version)."""

    version: int
    partitions: TopicGroups
    user_data: bytes | None
    trailing: bytes = b""

    def assignment(self) -> Assignment:
        parts = tuple(TopicPartition(t, p) for t, ps in self.partitions for p in ps)
        return Assignment(parts, self.user_data)


class _Reader(ProtocolReader):
    """The consumer protocol's reader, plus the topic groups kept exactly as written."""

    def take(self, n: int) -> bytes:
        return bytes(self._take(n))

    def groups(self, field: str) -> TopicGroups:
        out = []
        for _ in range(self.array_len(field)):
            topic = self.string("topic")
            n = self.array_len("partitions")
            out.append((topic, struct.unpack(f">{n}i", self.take(4 * n)) if n else ()))
        return tuple(out)

    def rest(self) -> bytes:
        out = bytes(self.buf[self.pos :])
        self.pos = len(self.buf)
        return out


def _w_string(s: str | None) -> bytes:
    if s is None:
        return _I16.pack(-1)
    b = s.encode("utf-8")
    return _I16.pack(len(b)) + b


def _w_bytes(b: bytes | None) -> bytes:
    return _I32.pack(-1) if b is None else _I32.pack(len(b)) + b


def _w_groups(groups: TopicGroups) -> bytes:
    out = bytearray(_I32.pack(len(groups)))
    for topic, ps in groups:
        out += _w_string(topic) + _I32.pack(len(ps))
        if ps:
            out += struct.pack(f">{len(ps)}i", *ps)
    return bytes(out)


def decode_subscription_wire(buf: bytes) -> SubscriptionWire:
    r = _Reader(buf, "subscription")
    version = r.int16()
    if version < 0:
        raise SchemaException(f"Unsupported version: {version}")
    topics = tuple(r.string("topics") or "" for _ in range(r.array_len("topics")))
    user_data = r.bytes_()
    owned: TopicGroups = r.groups("ownedPartitions") if version >= 1 else ()
    generation = r.int32() if version >= 2 else -1
    rack = r.nullable_string("rackId") if version >= 3 else None
    return SubscriptionWire(version, topics, user_data, owned, generation, rack, r.rest())


def encode_subscription_wire(w: SubscriptionWire) -> bytes:
    out = bytearray(_I16.pack(w.version))
    out += _I32.pack(len(w.topics))
    for t in w.topics:
        out += _w_string(t)
    out += _w_bytes(w.user_data)
    if w.version >= 1:
        out += _w_groups(w.owned_partitions)
    if w.version >= 2:
        out += _I32.pack(w.generation_id)
    if w.version >= 3:
        out += _w_string(w.rack_id)
    return bytes(out) + w.trailing


def decode_assignment_wire(buf: bytes) -> AssignmentWire:
    r = _Reader(buf, "assignment")
    version = r.int16()
    if version < 0:
        raise SchemaException(f"Unsupported version: {version}")
    groups = r.groups("assignedPartitions")
    return AssignmentWire(version, groups, r.bytes_(), r.rest())


def encode_assignment_wire(w: AssignmentWire) -> bytes:
    return _I16.pack(w.version) + _w_groups(w.partitions) + _w_bytes(w.user_data) + w.trailing
