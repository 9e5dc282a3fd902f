"""Byte-exact user data of Kafka's sticky assignors.

`StickyAssignor` (eager) carries each member's previous assignment in its
subscription user data, because an eager member revokes everything before
it rejoins:

    V0: previous_assignment: ARRAY(topic: STRING, partitions: ARRAY(INT32))
    V1: V0 + generation: INT32

`CooperativeStickyAssignor` V0 carries only `generation: INT32` (owned
partitions travel in the protocol's own field).

Kafka groups the partitions per topic with `CollectionUtils.groupPartitionsByTopic`,
a `HashMap` filled through `computeIfAbsent`, so topics appear in that map's
iteration order; partitions keep their order within a topic. Reading tries V1
and falls back to V0 (then generation is absent), as `StickyAssignor` does.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from .javacompat import JavaHashMap, insertion_order

DEFAULT_GENERATION = -1


class UserDataError(ValueError):
    """The bytes do not parse under the schema."""


@dataclass(frozen=True, slots=True)
class StickyUserData:
    """Decoded StickyAssignor user data; generation None means V0 (absent)."""

    partitions: tuple[tuple[str, int], ...]
    generation: int | None


def group_partitions_by_topic(partitions: Iterable[tuple[str, int]]) -> list[tuple[str, list[int]]]:
    """`CollectionUtils.groupPartitionsByTopic`: topics in Java HashMap order (computeIfAbsent)."""
    by_topic: dict[str, list[int]] = {}
    calls = 0
    last_new = -1
    for topic, partition in partitions:
        lst = by_topic.get(topic)
        if lst is None:
            lst = by_topic[topic] = []
            last_new = calls
        lst.append(partition)
        calls += 1
    # computeIfAbsent checks for a resize at the start of every call, also for a
    # topic already present: a call after the last new topic can still double
    # the table once, which changes the iteration order.
    order = grouped_topic_order(tuple(by_topic), calls - 1 > last_new)
    return [(t, by_topic[t]) for t in order]


def grouped_topic_order(topics: tuple[str, ...], trailing: bool) -> list[str]:
    """The iteration order of `groupPartitionsByTopic`'s HashMap: `topics` in first-seen order,
    `trailing` when a call for a topic already present came after the last new one."""
    key = (topics, trailing)
    order = _TOPIC_ORDER_CACHE.get(key)
    if order is None:
        order = _topic_order(list(topics), trailing)
        if len(_TOPIC_ORDER_CACHE) >= 256:
            _TOPIC_ORDER_CACHE.clear()
        _TOPIC_ORDER_CACHE[key] = order
    return order


def _topic_order(topics: list[str], trailing_call: bool) -> list[str]:
    if not trailing_call or len(topics) < 13:  # 13 = first size above the default threshold (12)
        return insertion_order(topics, head=True)
    m = JavaHashMap()
    for t in topics:
        m.compute_if_absent(t, _present)
    m.compute_if_absent(topics[0], _present)  # the trailing call's resize check
    return m.keys()


def _present(_key: object) -> bool:
    return True


# members of one group usually list their topics in the same first-seen order
_TOPIC_ORDER_CACHE: dict[tuple[tuple[str, ...], bool], list[str]] = {}


def grouped_partitions(partitions: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """The partitions as StickyAssignor reads them back from its user data: grouped by topic."""
    return [(t, p) for t, ps in group_partitions_by_topic(partitions) for p in ps]


def _put_string(out: bytearray, s: str) -> None:
    data = s.encode("utf-8")
    if len(data) > 0x7FFF:
        raise UserDataError(f"String length {len(data)} is larger than the maximum string length.")
    out += struct.pack(">h", len(data))
    out += data


def encode_sticky_user_data(partitions: Sequence[tuple[str, int]], generation: int | None) -> bytes:
    """StickyAssignor user data: V1 with a generation, V0 without."""
    grouped = group_partitions_by_topic(partitions)
    out = bytearray(struct.pack(">i", len(grouped)))
    for topic, parts in grouped:
        _put_string(out, topic)
        out += struct.pack(">i", len(parts))
        out += np.asarray(parts, dtype=">i4").tobytes()
    if generation is not None:
        out += struct.pack(">i", generation)
    return bytes(out)


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def remaining(self) -> int:
        return len(self.buf) - self.pos

    def int32(self) -> int:
        if self.remaining() < 4:
            raise UserDataError("buffer underflow")
        (v,) = struct.unpack_from(">i", self.buf, self.pos)
        self.pos += 4
        return v

    def int16(self) -> int:
        if self.remaining() < 2:
            raise UserDataError("buffer underflow")
        (v,) = struct.unpack_from(">h", self.buf, self.pos)
        self.pos += 2
        return v

    def string(self) -> str:
        n = self.int16()
        if n < 0:
            raise UserDataError(f"String length {n} cannot be negative")
        if n > self.remaining():
            raise UserDataError(
                f"Error reading string of length {n}, only {self.remaining()} bytes available"
            )
        s = self.buf[self.pos : self.pos + n].decode("utf-8", errors="replace")
        self.pos += n
        return s

    def array_size(self) -> int:
        n = self.int32()
        if n < 0:
            raise UserDataError(f"Array size {n} cannot be negative")
        if n > self.remaining():
            raise UserDataError(
                f"Error reading array of size {n}, only {self.remaining()} bytes available"
            )
        return n

    def int32_array(self) -> list[int]:
        n = self.array_size()
        if 4 * n > self.remaining():
            raise UserDataError("buffer underflow")
        vals = np.frombuffer(self.buf, dtype=">i4", count=n, offset=self.pos).tolist()
        self.pos += 4 * n
        return vals


def _read_assignment(r: _Reader) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for _ in range(r.array_size()):
        topic = r.string()
        out.extend((topic, p) for p in r.int32_array())
    return out


def decode_sticky_user_data(data: bytes | None) -> StickyUserData:
    """`StickyAssignor.memberData`: V1, else V0, else nothing with DEFAULT_GENERATION."""
    if not data:
        return StickyUserData((), None)
    try:
        r = _Reader(data)
        parts = _read_assignment(r)
        gen = r.int32()
        return StickyUserData(tuple(parts), gen)
    except UserDataError:
        pass
    try:
        r = _Reader(data)
        return StickyUserData(tuple(_read_assignment(r)), None)
    except UserDataError:
        return StickyUserData((), DEFAULT_GENERATION)


def encode_cooperative_user_data(generation: int) -> bytes:
    """CooperativeStickyAssignor user data V0: the member's last generation."""
    return struct.pack(">i", generation)


def decode_cooperative_user_data(data: bytes | None) -> int | None:
    """Generation from CooperativeStickyAssignor user data; None without user data."""
    if data is None:
        return None
    try:
        return _Reader(data).int32()
    except UserDataError:
        return DEFAULT_GENERATION
