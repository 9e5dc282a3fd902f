"""Consumer protocol wire format: round trips and known byte layouts (Kafka's serializer)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.assign.protocol import (
    Assignment,
    SchemaException,
    Subscription,
    decode_assignment,
    decode_subscription,
    decode_version,
    encode_assignment,
    encode_subscription,
)
from kafka_rebalance.model import TopicPartition as TP


def s16(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def i32(*vals: int) -> bytes:
    return b"".join(struct.pack(">i", v) for v in vals)


SUB = Subscription(("t2", "t1"), b"\x01\x02", (TP("t2", 0), TP("t1", 3), TP("t1", 1)), 7, "rack-a")


def test_subscription_v0_layout():
    assert encode_subscription(SUB, 0) == (
        b"\x00\x00" + i32(2) + s16("t1") + s16("t2") + i32(2) + b"\x01\x02"
    )


def test_subscription_v1_layout_sorts_and_groups_owned():
    owned = i32(2) + s16("t1") + i32(2, 1, 3) + s16("t2") + i32(1, 0)
    assert encode_subscription(SUB, 1) == (
        b"\x00\x01" + i32(2) + s16("t1") + s16("t2") + i32(2) + b"\x01\x02" + owned
    )


def test_subscription_v3_layout():
    owned = i32(2) + s16("t1") + i32(2, 1, 3) + s16("t2") + i32(1, 0)
    expected = (
        b"\x00\x03"
        + i32(2)
        + s16("t1")
        + s16("t2")
        + i32(2)
        + b"\x01\x02"
        + owned
        + i32(7)
        + s16("rack-a")
    )
    assert encode_subscription(SUB) == expected
    v2 = encode_subscription(SUB, 2)
    assert v2 == b"\x00\x02" + expected[2 : -len(s16("rack-a"))]


def test_subscription_nulls():
    sub = Subscription(("a",))
    assert encode_subscription(sub) == (
        b"\x00\x03" + i32(1) + s16("a") + i32(-1) + i32(0) + i32(-1) + b"\xff\xff"
    )
    assert decode_subscription(encode_subscription(sub)) == sub


def test_assignment_layout_groups_by_first_appearance():
    a = Assignment((TP("b", 2), TP("a", 0), TP("b", 1)), None)
    body = i32(2) + s16("b") + i32(2, 2, 1) + s16("a") + i32(1, 0) + i32(-1)
    for v in range(4):
        assert encode_assignment(a, v) == struct.pack(">h", v) + body
    assert decode_assignment(encode_assignment(a)).partitions == (
        TP("b", 2),
        TP("b", 1),
        TP("a", 0),
    )


def test_lower_versions_drop_newer_fields():
    got = decode_subscription(encode_subscription(SUB, 0))
    assert got == Subscription(("t1", "t2"), b"\x01\x02")
    got = decode_subscription(encode_subscription(SUB, 2))
    assert got.generation_id == 7 and got.rack_id is None


def test_newer_version_read_as_highest():
    data = bytearray(encode_subscription(SUB))
    data[0:2] = b"\x00\x07"
    data += b"future-field"
    assert decode_version(bytes(data)) == 7
    got = decode_subscription(bytes(data))
    assert got.rack_id == "rack-a" and got.generation_id == 7
    assert encode_subscription(SUB, 9)[:2] == b"\x00\x03"


def test_empty_rack_reads_as_none():
    assert (
        decode_subscription(encode_subscription(Subscription(("a",), rack_id=""))).rack_id is None
    )


@pytest.mark.parametrize(
    "data", [b"", b"\x00", b"\x00\x00\x00\x00\x00\x05", b"\x00\x00" + i32(1) + b"\x00\x09ab"]
)
def test_truncated_input_is_schema_error(data):
    with pytest.raises(SchemaException):
        decode_subscription(data)


def test_negative_version_rejected():
    with pytest.raises(SchemaException):
        decode_assignment(b"\xff\xff" + i32(0) + i32(-1))
    with pytest.raises(SchemaException):
        encode_assignment(Assignment(()), -1)


def test_matches_kafka_python_v0():
    """kafka-python implements version 0 of both; our bytes must be its bytes."""
    from kafka.coordinator.protocol import (
        ConsumerProtocolMemberAssignment,
        ConsumerProtocolMemberMetadata,
    )

    # (kafka-python's Struct.encode holds its instance weakly: keep a reference)
    meta_struct = ConsumerProtocolMemberMetadata(0, ["t1", "t2"], b"ud")
    meta = meta_struct.encode()
    assert encode_subscription(Subscription(("t2", "t1"), b"ud"), 0) == meta
    assign_struct = ConsumerProtocolMemberAssignment(0, [("t1", [0, 2]), ("t2", [1])], b"")
    assign = assign_struct.encode()
    assert encode_assignment(Assignment((TP("t1", 0), TP("t1", 2), TP("t2", 1)), b""), 0) == assign
    decoded = ConsumerProtocolMemberAssignment.decode(
        encode_assignment(Assignment((TP("x", 5),), b"u"), 0)
    )
    assert decoded.assignment == [("x", [5])] and decoded.user_data == b"u"


names = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8)
parts = st.integers(min_value=0, max_value=2**31 - 1)


@settings(max_examples=150, deadline=None)
@given(
    topics=st.lists(names, max_size=5, unique=True),
    owned=st.lists(st.tuples(names, parts), max_size=8, unique=True),
    user_data=st.none() | st.binary(max_size=20),
    gen=st.integers(min_value=-1, max_value=2**31 - 1),
    rack=st.none() | names,
    version=st.integers(min_value=0, max_value=3),
)
def test_subscription_round_trip(topics, owned, user_data, gen, rack, version):
    sub = Subscription(tuple(topics), user_data, tuple(TP(t, p) for t, p in owned), gen, rack)
    got = decode_subscription(encode_subscription(sub, version))
    assert sorted(got.topics) == sorted(topics)
    assert got.user_data == user_data
    assert set(got.owned_partitions) == (set(sub.owned_partitions) if version >= 1 else set())
    assert got.generation_id == (gen if version >= 2 else -1)
    assert got.rack_id == (rack if version >= 3 else None)
    # Re-encoding what we decoded gives the same bytes (canonical form).
    assert encode_subscription(got, version) == encode_subscription(sub, version)


@settings(max_examples=150, deadline=None)
@given(
    partitions=st.lists(st.tuples(names, parts), max_size=10, unique=True),
    user_data=st.none() | st.binary(max_size=20),
    version=st.integers(min_value=0, max_value=3),
)
def test_assignment_round_trip(partitions, user_data, version):
    a = Assignment(tuple(TP(t, p) for t, p in partitions), user_data)
    got = decode_assignment(encode_assignment(a, version))
    assert got.user_data == user_data
    assert sorted(got.partitions) == sorted(a.partitions)
    # Grouping keeps each topic's partitions in their original relative order.
    for topic in {tp.topic for tp in a.partitions}:
        assert [tp for tp in got.partitions if tp.topic == topic] == [
            tp for tp in a.partitions if tp.topic == topic
        ]
