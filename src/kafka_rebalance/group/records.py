"""`__consumer_offsets` record codecs, byte-exact with Kafka's group coordinator.

A record is a (key, value) pair of byte strings. Both start with a big-endian
int16 version (CoordinatorRecordSerde): the key's version is the record type
(0/1 = OffsetCommitKey, 2 = GroupMetadataKey, 3.. = KIP-848/share records this
module does not decode); the value's version selects the value schema. A
tombstone is a null value. Schemas are Kafka's
group-coordinator/src/main/resources/common/message/*.json:

- OffsetCommitKey v0-1 (never flexible): group, topic (int16-length strings), partition int32.
- OffsetCommitValue v0-4, flexible from v4: offset int64, leaderEpoch int32 (v3+),
  metadata string, commitTimestamp int64, expireTimestamp int64 (v1 only).
- GroupMetadataKey v2: group.
- GroupMetadataValue v0-4, flexible from v4: protocolType, generation int32,
  protocol (nullable), leader (nullable), currentStateTimestamp int64 (v2+),
  members[]: memberId, groupInstanceId (nullable, v3+), clientId, clientHost,
  rebalanceTimeout int32 (v1+), sessionTimeout int32, subscription bytes, assignment bytes.

Flexible versions use compact strings/bytes/arrays (unsigned varint length+1,
0 = null) and end every struct with tagged fields; unknown tagged fields are
kept (as Kafka keeps `_unknownTaggedFields`) so a decode/encode round trip is
lossless. Fields absent from a version are dropped on encode (all are
`ignorable`) and take their defaults on decode. Trailing bytes after a value
are ignored, as the coordinator's loader ignores them.

API:
    decode_record(key, value) -> OffsetCommitRecord | GroupMetadataRecord   (raises RecordDecodeError)
    decode_key(key) / decode_value(record_type, value)
    encode_record(record) -> (key_bytes, value_bytes | None)
    encode_key(key) / encode_value(value)
    offset_commit_record(...), group_metadata_record(...), *_tombstone(...),
    group_metadata_value(snapshot, subscription, assignment):
        build records with the versions the coordinator writes today
        (key v1 / value v3, value v1 when an expire timestamp is set;
        GroupMetadataKey v2 / value v3).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .classic_member import ClassicGroupSnapshot

OFFSET_COMMIT_KEY_VERSIONS = (0, 1)
OFFSET_COMMIT_VALUE_VERSIONS = (0, 1, 2, 3, 4)
GROUP_METADATA_KEY_VERSION = 2
GROUP_METADATA_VALUE_VERSIONS = (0, 1, 2, 3, 4)
# Versions the coordinator writes at this Kafka commit (MetadataVersion >= 2.3).
CURRENT_OFFSET_COMMIT_KEY_VERSION = 1
CURRENT_OFFSET_COMMIT_VALUE_VERSION = 3
CURRENT_GROUP_METADATA_VALUE_VERSION = 3
NO_PARTITION_LEADER_EPOCH = -1
DEFAULT_TIMESTAMP = -1

TaggedFields = tuple[tuple[int, bytes], ...]


class RecordDecodeError(ValueError):
    """A record that cannot be decoded; `reason` says why (truncated, unknown version, ...)."""

    def __init__(self, reason: str, *, part: str = "record", version: int | None = None) -> None:
        self.reason = reason
        self.part = part
        self.version = version
        super().__init__(f"{part}: {reason}")


class UnknownRecordTypeError(RecordDecodeError):
    """A key version (record type) this module does not decode, e.g. KIP-848 records (3..8)."""


# ---------------------------------------------------------------------------
# Decoded records (frozen values).


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int
    version: int = CURRENT_OFFSET_COMMIT_KEY_VERSION


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    metadata: str = ""
    commit_timestamp: int = DEFAULT_TIMESTAMP
    leader_epoch: int = NO_PARTITION_LEADER_EPOCH
    expire_timestamp: int = DEFAULT_TIMESTAMP
    version: int = CURRENT_OFFSET_COMMIT_VALUE_VERSION
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str
    version: int = GROUP_METADATA_KEY_VERSION


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    member_id: str
    client_id: str
    client_host: str
    session_timeout: int
    subscription: bytes
    assignment: bytes
    rebalance_timeout: int = -1
    group_instance_id: str | None = None
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    members: tuple[MemberMetadata, ...] = ()
    current_state_timestamp: int = -1
    version: int = CURRENT_GROUP_METADATA_VALUE_VERSION
    tagged_fields: TaggedFields = ()


@dataclass(frozen=True, slots=True)
class OffsetCommitRecord:
    key: OffsetCommitKey
    value: OffsetCommitValue | None  # None = tombstone (offset deleted/expired)

    @property
    def is_tombstone(self) -> bool:
        return self.value is None


@dataclass(frozen=True, slots=True)
class GroupMetadataRecord:
    key: GroupMetadataKey
    value: GroupMetadataValue | None  # None = tombstone (group deleted)

    @property
    def is_tombstone(self) -> bool:
        return self.value is None


OffsetsRecord = OffsetCommitRecord | GroupMetadataRecord
RecordKey = OffsetCommitKey | GroupMetadataKey
RecordValue = OffsetCommitValue | GroupMetadataValue


# ---------------------------------------------------------------------------
# Builders with the versions the coordinator writes.


def offset_commit_record(
    group: str,
    topic: str,
    partition: int,
    offset: int,
    *,
    metadata: str = "",
    commit_timestamp: int,
    leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    expire_timestamp: int | None = None,
) -> OffsetCommitRecord:
    """newOffsetCommitRecord: key v1, value v3 (v1 when the commit carries an expire timestamp)."""
    version = 1 if expire_timestamp is not None else CURRENT_OFFSET_COMMIT_VALUE_VERSION
    value = OffsetCommitValue(
        offset,
        metadata,
        commit_timestamp,
        leader_epoch,
        DEFAULT_TIMESTAMP if expire_timestamp is None else expire_timestamp,
        version,
    )
    return OffsetCommitRecord(OffsetCommitKey(group, topic, partition), value)


def offset_commit_tombstone(group: str, topic: str, partition: int) -> OffsetCommitRecord:
    return OffsetCommitRecord(OffsetCommitKey(group, topic, partition), None)


def group_metadata_record(group: str, value: GroupMetadataValue) -> GroupMetadataRecord:
    return GroupMetadataRecord(GroupMetadataKey(group), value)


def group_metadata_value(
    snap: ClassicGroupSnapshot,
    subscription: Callable[[Any], bytes],
    assignment: Callable[[Any], bytes],
    client_host: str = "/127.0.0.1",
) -> GroupMetadataValue:
    """GroupMetadataValue as the coordinator writes it from a classic group's snapshot.

    Callers differ only in how a member's state becomes bytes: `subscription` gets the
    member's metadata for the selected protocol (None when it has none), `assignment`
    the member's assignment as the snapshot holds it.
    """
    members = []
    for m in snap.members:
        selected = None
        for name, meta in m.protocols:
            if name == snap.protocol_name:
                selected = meta
        members.append(
            MemberMetadata(
                m.member_id,
                m.client_id,
                client_host,
                m.session_timeout_ms,
                subscription(selected),
                assignment(m.assignment),
                m.rebalance_timeout_ms,
                m.group_instance_id,
            )
        )
    return GroupMetadataValue(
        snap.protocol_type or "consumer",
        snap.generation_id,
        snap.protocol_name,
        snap.leader,
        tuple(members),
        snap.state_timestamp_ms,
    )


def empty_group_metadata_record(
    group: str, current_state_timestamp: int = -1
) -> GroupMetadataRecord:
    """newEmptyGroupMetadataRecord: protocolType "", generation 0, no protocol/leader/members."""
    return GroupMetadataRecord(
        GroupMetadataKey(group), GroupMetadataValue("", 0, None, None, (), current_state_timestamp)
    )


def group_metadata_tombstone(group: str) -> GroupMetadataRecord:
    return GroupMetadataRecord(GroupMetadataKey(group), None)


# ---------------------------------------------------------------------------
# Wire primitives.

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class _Reader:
    """A cursor over bytes that raises RecordDecodeError on every malformed read."""

    __slots__ = ("buf", "pos", "part", "version")

    def __init__(self, buf: bytes, part: str, version: int | None = None) -> None:
        self.buf = buf
        self.pos = 0
        self.part = part
        self.version = version

    def fail(self, reason: str) -> RecordDecodeError:
        return RecordDecodeError(reason, part=self.part, version=self.version)

    def take(self, n: int, what: str) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.buf):
            raise self.fail(
                f"truncated: {what} needs {n} bytes at offset {self.pos}, "
                f"only {len(self.buf) - self.pos} remain"
            )
        out = self.buf[self.pos : end]
        self.pos = end
        return out

    def int16(self, what: str) -> int:
        return _I16.unpack(self.take(2, what))[0]

    def int32(self, what: str) -> int:
        return _I32.unpack(self.take(4, what))[0]

    def int64(self, what: str) -> int:
        return _I64.unpack(self.take(8, what))[0]

    def uvarint(self, what: str) -> int:
        value = shift = 0
        for _ in range(5):
            if self.pos >= len(self.buf):
                raise self.fail(f"truncated: varint {what} at offset {self.pos}")
            b = self.buf[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
        raise self.fail(f"varint {what} is longer than 5 bytes")

    def nullable_string(self, what: str, flexible: bool) -> str | None:
        n = self.uvarint(what) - 1 if flexible else self.int16(what)
        if n < 0:  # Kafka reads any negative length of a nullable string as null
            return None
        return self._string_body(what, n)

    def string(self, what: str, flexible: bool) -> str:
        n = self.uvarint(what) - 1 if flexible else self.int16(what)
        if n < 0:
            raise self.fail(f"non-nullable field {what} was serialized as null")
        return self._string_body(what, n)

    def _string_body(self, what: str, n: int) -> str:
        if n > 0x7FFF:
            raise self.fail(f"string field {what} had invalid length {n}")
        return self.take(n, what).decode("utf-8", errors="replace")

    def bytes_(self, what: str, flexible: bool) -> bytes:
        n = self.uvarint(what) - 1 if flexible else self.int32(what)
        if n < 0:
            raise self.fail(f"non-nullable field {what} was serialized as null")
        return self.take(n, what)

    def array_len(self, what: str, flexible: bool) -> int:
        n = self.uvarint(what) - 1 if flexible else self.int32(what)
        if n < 0:
            raise self.fail(f"non-nullable field {what} was serialized as null")
        if n > len(self.buf) - self.pos:
            raise self.fail(
                f"truncated: {what} claims {n} elements, only {len(self.buf) - self.pos} bytes remain"
            )
        return n

    def tagged_fields(self) -> TaggedFields:
        count = self.uvarint("tagged field count")
        out = []
        for _ in range(count):
            tag = self.uvarint("tag")
            size = self.uvarint("tag size")
            out.append((tag, self.take(size, f"tagged field {tag}")))
        return tuple(out)


def _uvarint(n: int) -> bytes:
    if n < 0:
        raise ValueError(f"unsigned varint must be >= 0, got {n}")
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _w_string(s: str | None, what: str, flexible: bool, nullable: bool = False) -> bytes:
    if s is None:
        if not nullable:
            raise ValueError(f"non-nullable field {what} was null")
        return b"\x00" if flexible else _I16.pack(-1)
    data = s.encode("utf-8")
    if len(data) > 0x7FFF:
        raise ValueError(f"string field {what} is too long ({len(data)} bytes > 32767)")
    return (_uvarint(len(data) + 1) if flexible else _I16.pack(len(data))) + data


def _w_bytes(b: bytes, flexible: bool) -> bytes:
    return (_uvarint(len(b) + 1) if flexible else _I32.pack(len(b))) + bytes(b)


def _w_tagged(fields: TaggedFields) -> bytes:
    out = bytearray(_uvarint(len(fields)))
    prev = -1
    for tag, data in fields:
        if tag <= prev:
            raise ValueError(
                f"tagged fields must have strictly increasing tags: {tag} after {prev}"
            )
        prev = tag
        out += _uvarint(tag) + _uvarint(len(data)) + data
    return bytes(out)


def _check_version(version: int, valid: tuple[int, ...], what: str, part: str) -> None:
    if version not in valid:
        raise RecordDecodeError(
            f"unknown {what} version {version} (valid: {valid[0]}-{valid[-1]})",
            part=part,
            version=version,
        )


# ---------------------------------------------------------------------------
# Encoders.


def encode_key(key: RecordKey) -> bytes:
    """Version-prefixed key bytes (the version is the record type)."""
    if isinstance(key, OffsetCommitKey):
        if key.version not in OFFSET_COMMIT_KEY_VERSIONS:
            raise ValueError(f"OffsetCommitKey version {key.version} is not 0-1")
        return (
            _I16.pack(key.version)
            + _w_string(key.group, "group", False)
            + _w_string(key.topic, "topic", False)
            + _I32.pack(key.partition)
        )
    if isinstance(key, GroupMetadataKey):
        if key.version != GROUP_METADATA_KEY_VERSION:
            raise ValueError(f"GroupMetadataKey version {key.version} is not 2")
        return _I16.pack(key.version) + _w_string(key.group, "group", False)
    raise TypeError(f"not a __consumer_offsets key: {key!r}")


def encode_value(value: RecordValue) -> bytes:
    """Version-prefixed value bytes; fields the version lacks are dropped (all are ignorable)."""
    if isinstance(value, OffsetCommitValue):
        v = value.version
        if v not in OFFSET_COMMIT_VALUE_VERSIONS:
            raise ValueError(f"OffsetCommitValue version {v} is not 0-4")
        flex = v >= 4
        out = bytearray(_I16.pack(v))
        out += _I64.pack(value.offset)
        if v >= 3:
            out += _I32.pack(value.leader_epoch)
        out += _w_string(value.metadata, "metadata", flex)
        out += _I64.pack(value.commit_timestamp)
        if v == 1:
            out += _I64.pack(value.expire_timestamp)
        if flex:
            out += _w_tagged(value.tagged_fields)
        return bytes(out)
    if isinstance(value, GroupMetadataValue):
        v = value.version
        if v not in GROUP_METADATA_VALUE_VERSIONS:
            raise ValueError(f"GroupMetadataValue version {v} is not 0-4")
        flex = v >= 4
        out = bytearray(_I16.pack(v))
        out += _w_string(value.protocol_type, "protocolType", flex)
        out += _I32.pack(value.generation)
        out += _w_string(value.protocol, "protocol", flex, nullable=True)
        out += _w_string(value.leader, "leader", flex, nullable=True)
        if v >= 2:
            out += _I64.pack(value.current_state_timestamp)
        out += _uvarint(len(value.members) + 1) if flex else _I32.pack(len(value.members))
        for m in value.members:
            out += _w_string(m.member_id, "memberId", flex)
            if v >= 3:
                out += _w_string(m.group_instance_id, "groupInstanceId", flex, nullable=True)
            out += _w_string(m.client_id, "clientId", flex)
            out += _w_string(m.client_host, "clientHost", flex)
            if v >= 1:
                out += _I32.pack(m.rebalance_timeout)
            out += _I32.pack(m.session_timeout)
            out += _w_bytes(m.subscription, flex)
            out += _w_bytes(m.assignment, flex)
            if flex:
                out += _w_tagged(m.tagged_fields)
        if flex:
            out += _w_tagged(value.tagged_fields)
        return bytes(out)
    raise TypeError(f"not a __consumer_offsets value: {value!r}")


def encode_record(record: OffsetsRecord) -> tuple[bytes, bytes | None]:
    """(key bytes, value bytes or None for a tombstone)."""
    return encode_key(record.key), None if record.value is None else encode_value(record.value)


# ---------------------------------------------------------------------------
# Decoders.


def record_type(key: bytes) -> int:
    """The key's int16 version prefix, i.e. the record type."""
    if key is None or len(key) < 2:
        raise RecordDecodeError("could not read version from key's buffer (truncated)", part="key")
    return _I16.unpack_from(key)[0]


def decode_key(key: bytes) -> RecordKey:
    rtype = record_type(key)
    r = _Reader(key, "key", rtype)
    r.pos = 2
    if rtype in OFFSET_COMMIT_KEY_VERSIONS:
        group = r.string("group", False)
        topic = r.string("topic", False)
        return OffsetCommitKey(group, topic, r.int32("partition"), rtype)
    if rtype == GROUP_METADATA_KEY_VERSION:
        return GroupMetadataKey(r.string("group", False), rtype)
    raise UnknownRecordTypeError(
        f"unknown record type {rtype} (this decoder reads 0-2)", part="key", version=rtype
    )


def decode_value(rtype: int, value: bytes) -> RecordValue:
    """Decode a value of record type `rtype` (0/1 offset commit, 2 group metadata)."""
    if len(value) < 2:
        raise RecordDecodeError(
            "could not read version from value's buffer (truncated)", part="value"
        )
    v = _I16.unpack_from(value)[0]
    r = _Reader(value, "value", v)
    r.pos = 2
    if rtype in OFFSET_COMMIT_KEY_VERSIONS:
        _check_version(v, OFFSET_COMMIT_VALUE_VERSIONS, "OffsetCommitValue", "value")
        return _read_offset_commit_value(r, v)
    if rtype == GROUP_METADATA_KEY_VERSION:
        _check_version(v, GROUP_METADATA_VALUE_VERSIONS, "GroupMetadataValue", "value")
        return _read_group_metadata_value(r, v)
    raise UnknownRecordTypeError(f"unknown record type {rtype}", part="key", version=rtype)


def _read_offset_commit_value(r: _Reader, v: int) -> OffsetCommitValue:
    flex = v >= 4
    offset = r.int64("offset")
    leader_epoch = r.int32("leaderEpoch") if v >= 3 else NO_PARTITION_LEADER_EPOCH
    metadata = r.string("metadata", flex)
    commit_ts = r.int64("commitTimestamp")
    expire_ts = r.int64("expireTimestamp") if v == 1 else DEFAULT_TIMESTAMP
    tagged = r.tagged_fields() if flex else ()
    return OffsetCommitValue(offset, metadata, commit_ts, leader_epoch, expire_ts, v, tagged)


def _read_group_metadata_value(r: _Reader, v: int) -> GroupMetadataValue:
    flex = v >= 4
    protocol_type = r.string("protocolType", flex)
    generation = r.int32("generation")
    protocol = r.nullable_string("protocol", flex)
    leader = r.nullable_string("leader", flex)
    current_ts = r.int64("currentStateTimestamp") if v >= 2 else -1
    members = []
    for _ in range(r.array_len("members", flex)):
        member_id = r.string("memberId", flex)
        instance_id = r.nullable_string("groupInstanceId", flex) if v >= 3 else None
        client_id = r.string("clientId", flex)
        client_host = r.string("clientHost", flex)
        rebalance_timeout = r.int32("rebalanceTimeout") if v >= 1 else -1
        session_timeout = r.int32("sessionTimeout")
        subscription = r.bytes_("subscription", flex)
        assignment = r.bytes_("assignment", flex)
        tagged = r.tagged_fields() if flex else ()
        members.append(
            MemberMetadata(
                member_id,
                client_id,
                client_host,
                session_timeout,
                subscription,
                assignment,
                rebalance_timeout,
                instance_id,
                tagged,
            )
        )
    tagged = r.tagged_fields() if flex else ()
    return GroupMetadataValue(
        protocol_type,
        generation,
        protocol,
        leader,
        tuple(members),
        current_ts,
        v,
        tagged,
    )


def decode_record(key: bytes, value: bytes | None) -> OffsetsRecord:
    """Decode one `__consumer_offsets` record; a None value is a tombstone.

    Raises UnknownRecordTypeError for record types other than 0-2 and
    RecordDecodeError (with `.reason`) for truncated data or unknown versions.
    """
    if key is None:
        raise RecordDecodeError("null key", part="key")
    k = decode_key(bytes(key))
    if isinstance(k, OffsetCommitKey):
        ov = None if value is None else decode_value(k.version, bytes(value))
        return OffsetCommitRecord(k, ov)  # type: ignore[arg-type]
    gv = None if value is None else decode_value(k.version, bytes(value))
    return GroupMetadataRecord(k, gv)  # type: ignore[arg-type]
