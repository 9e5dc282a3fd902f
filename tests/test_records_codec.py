"""__consumer_offsets codecs: byte layouts derived by hand from Kafka's JSON schemas."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.group.classic_member import ClassicGroupSnapshot, MemberSnapshot
from kafka_rebalance.group.records import (
    GroupMetadataKey,
    GroupMetadataRecord,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitRecord,
    OffsetCommitValue,
    RecordDecodeError,
    UnknownRecordTypeError,
    decode_record,
    empty_group_metadata_record,
    encode_key,
    encode_record,
    encode_value,
    group_metadata_record,
    group_metadata_tombstone,
    group_metadata_value,
    offset_commit_record,
    offset_commit_tombstone,
)


def h(*parts: str) -> bytes:
    """Hex pieces with spaces, one piece per field, so each vector reads like the schema."""
    return bytes.fromhex("".join(parts).replace(" ", ""))


# OffsetCommitKey v1: int16 version 1, string "g" (int16 len 1 + 'g'), string "t", int32 partition 3.
KEY_V1 = h("0001", "0001 67", "0001 74", "00000003")
# OffsetCommitValue v3: version 3, offset 42 int64, leaderEpoch 7 int32, metadata "" (int16 0), commitTs 1000 int64.
VALUE_V3 = h("0003", "000000000000002a", "00000007", "0000", "00000000000003e8")
# v1: offset, metadata "m", commitTs, expireTs 2000 (no leaderEpoch).
VALUE_V1 = h("0001", "000000000000002a", "0001 6d", "00000000000003e8", "00000000000007d0")
# v0 / v2: offset, metadata "", commitTs.
VALUE_V0 = h("0000", "000000000000002a", "0000", "00000000000003e8")
# v4 flexible: compact string "m" = uvarint(2) + 'm', then an empty tagged-field section (uvarint 0).
VALUE_V4 = h("0004", "000000000000002a", "00000007", "02 6d", "00000000000003e8", "00")


def test_offset_commit_key_and_value_v3_layout():
    rec = offset_commit_record("g", "t", 3, 42, leader_epoch=7, commit_timestamp=1000)
    key, value = encode_record(rec)
    assert key == KEY_V1
    assert value == VALUE_V3
    assert decode_record(KEY_V1, VALUE_V3) == rec


def test_offset_commit_value_v1_carries_expire_timestamp():
    rec = offset_commit_record(
        "g", "t", 3, 42, metadata="m", commit_timestamp=1000, expire_timestamp=2000
    )
    assert rec.value.version == 1
    assert encode_value(rec.value) == VALUE_V1
    decoded = decode_record(KEY_V1, VALUE_V1).value
    assert (decoded.offset, decoded.metadata) == (42, "m")
    assert (decoded.commit_timestamp, decoded.expire_timestamp) == (1000, 2000)
    assert decoded.leader_epoch == -1


def test_offset_commit_value_v0_v2_and_v4_layouts():
    assert encode_value(OffsetCommitValue(42, "", 1000, version=0)) == VALUE_V0
    assert encode_value(OffsetCommitValue(42, "", 1000, version=2)) == h("0002") + VALUE_V0[2:]
    assert encode_value(OffsetCommitValue(42, "m", 1000, leader_epoch=7, version=4)) == VALUE_V4
    v4 = decode_record(KEY_V1, VALUE_V4).value
    assert (v4.version, v4.offset, v4.leader_epoch, v4.metadata) == (4, 42, 7, "m")


def test_fields_absent_from_a_version_are_dropped_on_encode():
    # leaderEpoch (v3+) and expireTimestamp (v1 only) are ignorable: v0 silently drops them.
    assert (
        encode_value(OffsetCommitValue(42, "", 1000, leader_epoch=9, expire_timestamp=5, version=0))
        == VALUE_V0
    )


def test_offset_commit_key_v0():
    key = encode_key(OffsetCommitKey("g", "t", 3, version=0))
    assert key == h("0000") + KEY_V1[2:]
    assert decode_record(key, None) == OffsetCommitRecord(OffsetCommitKey("g", "t", 3, 0), None)


def test_unknown_tagged_fields_survive_a_round_trip():
    # tagged section: 1 field, tag 5, size 2, data 0xbeef
    raw = VALUE_V4[:-1] + h("01", "05", "02", "beef")
    value = decode_record(KEY_V1, raw).value
    assert value.tagged_fields == ((5, b"\xbe\xef"),)
    assert encode_value(value) == raw


MEMBER = MemberMetadata("m1", "c", "/h", 45000, b"\x00\x01", b"\x01\x02", 300000, "i1")


def test_group_metadata_value_v3_layout():
    value = GroupMetadataValue("consumer", 1, "range", "m1", (MEMBER,), 1234, version=3)
    expected = h(
        "0003",
        "0008",
        b"consumer".hex(),  # protocolType
        "00000001",  # generation
        "0005",
        b"range".hex(),  # protocol (nullable string)
        "0002",
        b"m1".hex(),  # leader
        "00000000000004d2",  # currentStateTimestamp (v2+)
        "00000001",  # members: int32 count
        "0002",
        b"m1".hex(),  # memberId
        "0002",
        b"i1".hex(),  # groupInstanceId (v3+)
        "0001",
        b"c".hex(),  # clientId
        "0002",
        b"/h".hex(),  # clientHost
        "000493e0",  # rebalanceTimeout 300000 (v1+)
        "0000afc8",  # sessionTimeout 45000
        "00000002 0001",  # subscription bytes (int32 length)
        "00000002 0102",  # assignment bytes
    )
    assert encode_value(value) == expected
    assert encode_key(GroupMetadataKey("g")) == h("0002", "0001 67")
    assert decode_record(h("0002", "0001 67"), expected) == GroupMetadataRecord(
        GroupMetadataKey("g"), value
    )


def test_group_metadata_value_v4_flexible_layout():
    value = GroupMetadataValue("consumer", 1, None, None, (MEMBER,), 1234, version=4)
    expected = h(
        "0004",
        "09",
        b"consumer".hex(),  # compact string: uvarint(len+1)
        "00000001",
        "00",  # null compact string
        "00",
        "00000000000004d2",
        "02",  # compact array: uvarint(count+1)
        "03",
        b"m1".hex(),
        "03",
        b"i1".hex(),
        "02",
        b"c".hex(),
        "03",
        b"/h".hex(),
        "000493e0",
        "0000afc8",
        "03 0001",  # compact bytes
        "03 0102",
        "00",  # member tagged fields
        "00",  # value tagged fields
    )
    assert encode_value(value) == expected
    assert decode_record(h("0002", "0001 67"), expected).value == value


def test_group_metadata_v0_and_null_protocol():
    value = GroupMetadataValue("consumer", 3, None, None, (), version=0)
    expected = h("0000", "0008", b"consumer".hex(), "00000003", "ffff", "ffff", "00000000")
    assert encode_value(value) == expected
    decoded = decode_record(h("0002", "0001 67"), expected).value
    assert (
        decoded.protocol is None
        and decoded.leader is None
        and decoded.current_state_timestamp == -1
    )


def test_empty_group_and_tombstones():
    rec = empty_group_metadata_record("g", 99)
    key, value = encode_record(rec)
    assert value == h("0003", "0000", "00000000", "ffff", "ffff", "0000000000000063", "00000000")
    assert encode_record(group_metadata_tombstone("g")) == (key, None)
    t = decode_record(KEY_V1, None)
    assert t.is_tombstone and t == offset_commit_tombstone("g", "t", 3)


@pytest.mark.parametrize("cut", range(0, len(VALUE_V3)))
def test_truncated_value_raises(cut):
    with pytest.raises(RecordDecodeError) as exc:
        decode_record(KEY_V1, VALUE_V3[:cut])
    assert "truncated" in exc.value.reason


@pytest.mark.parametrize("cut", range(0, len(KEY_V1)))
def test_truncated_key_raises(cut):
    with pytest.raises(RecordDecodeError):
        decode_record(KEY_V1[:cut], None)


def test_unknown_versions_raise():
    with pytest.raises(RecordDecodeError, match="unknown OffsetCommitValue version 5"):
        decode_record(KEY_V1, h("0005") + VALUE_V3[2:])
    with pytest.raises(RecordDecodeError, match="unknown GroupMetadataValue version 9"):
        decode_record(h("0002", "0001 67"), h("0009"))
    with pytest.raises(UnknownRecordTypeError) as exc:
        decode_record(h("0003", "0001 67"), None)
    assert exc.value.version == 3


def test_null_non_nullable_string_and_bad_array_length():
    with pytest.raises(RecordDecodeError, match="serialized as null"):
        decode_record(h("0001", "ffff"), None)
    with pytest.raises(RecordDecodeError, match="claims"):
        decode_record(
            h("0002", "0001 67"), h("0000", "0000", "00000001", "ffff", "ffff", "7fffffff")
        )


def test_trailing_bytes_are_ignored_like_the_loader():
    assert decode_record(KEY_V1, VALUE_V3 + b"\x00\x01").value.offset == 42


# ---------------------------------------------------------------------------
# Round trips.

text = st.text(max_size=20)
i32 = st.integers(-(2**31), 2**31 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)
tagged = st.lists(
    st.tuples(st.integers(0, 300), st.binary(max_size=8)), max_size=3, unique_by=lambda t: t[0]
).map(lambda xs: tuple(sorted(xs)))


@st.composite
def offset_values(draw):
    v = draw(st.integers(0, 4))
    return OffsetCommitValue(
        draw(i64),
        draw(text),
        draw(i64),
        draw(i32) if v >= 3 else -1,
        draw(i64) if v == 1 else -1,
        v,
        draw(tagged) if v >= 4 else (),
    )


@st.composite
def group_values(draw):
    v = draw(st.integers(0, 4))
    flex = v >= 4
    members = tuple(
        MemberMetadata(
            draw(text),
            draw(text),
            draw(text),
            draw(i32),
            draw(st.binary(max_size=16)),
            draw(st.binary(max_size=16)),
            draw(i32) if v >= 1 else -1,
            draw(st.none() | text) if v >= 3 else None,
            draw(tagged) if flex else (),
        )
        for _ in range(draw(st.integers(0, 3)))
    )
    return GroupMetadataValue(
        draw(text),
        draw(i32),
        draw(st.none() | text),
        draw(st.none() | text),
        members,
        draw(i64) if v >= 2 else -1,
        v,
        draw(tagged) if flex else (),
    )


@settings(max_examples=150, deadline=None)
@given(
    st.text(max_size=30), st.text(max_size=30), i32, st.integers(0, 1), st.none() | offset_values()
)
def test_offset_commit_round_trip(group, topic, partition, kv, value):
    rec = OffsetCommitRecord(OffsetCommitKey(group, topic, partition, kv), value)
    assert decode_record(*encode_record(rec)) == rec


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=30), st.none() | group_values())
def test_group_metadata_round_trip(group, value):
    rec = GroupMetadataRecord(GroupMetadataKey(group), value)
    assert decode_record(*encode_record(rec)) == rec


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=40), st.none() | st.binary(max_size=60))
def test_arbitrary_bytes_decode_or_raise_record_decode_error(key, value):
    try:
        decode_record(key, value)
    except RecordDecodeError:
        pass


@pytest.mark.parametrize("version", [0, 3, 4])
def test_every_truncation_of_group_metadata_raises(version):
    value = encode_value(
        GroupMetadataValue("consumer", 1, "range", "m1", (MEMBER, MEMBER), 1234, version=version)
    )
    for cut in range(len(value)):
        with pytest.raises(RecordDecodeError):
            decode_record(h("0002", "0001 67"), value[:cut])


def test_group_metadata_value_takes_the_selected_protocols_metadata_and_the_callers_bytes():
    """One builder serves the simulator's coordinator and its offsets store: only the member bytes differ."""
    members = (
        MemberSnapshot(
            "m1", "i1", "c1", 30_000, 10_000, (("range", "r1"), ("sticky", "s1")), (1, 2)
        ),
        MemberSnapshot("m2", None, "c2", 40_000, 12_000, (("range", "r2"),), None),
    )
    snap = ClassicGroupSnapshot("g", None, 5, "sticky", "m1", 1234, members)
    seen: list[object] = []

    def subscription(meta: object) -> bytes:
        seen.append(meta)
        return b"" if meta is None else str(meta).encode()

    value = group_metadata_value(snap, subscription, lambda a: bytes(a or ()))
    assert seen == ["s1", None]  # m2 has no "sticky" metadata
    assert value == GroupMetadataValue(
        "consumer",  # a snapshot without a protocol type is written as "consumer"
        5,
        "sticky",
        "m1",
        (
            MemberMetadata("m1", "c1", "/127.0.0.1", 10_000, b"s1", b"\x01\x02", 30_000, "i1"),
            MemberMetadata("m2", "c2", "/127.0.0.1", 12_000, b"", b"", 40_000, None),
        ),
        1234,
    )
    assert decode_record(*encode_record(group_metadata_record("g", value))).value == value
