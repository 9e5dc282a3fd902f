"""The simulator's coordinator rebuilds its group from the encoded __consumer_offsets records."""

from __future__ import annotations

from kafka_rebalance.group.classic_group import ClassicGroupSnapshot, MemberSnapshot
from kafka_rebalance.group.records import (
    GroupMetadataRecord,
    OffsetCommitRecord,
    decode_record,
    encode_record,
)
from kafka_rebalance.model import TopicPartition
from kafka_rebalance.sim.offsets_store import SimOffsetsStore
from kafka_rebalance.sim.subscription import Subscription

TPS = [TopicPartition("orders", i) for i in range(4)]
INDEX = {tp: i for i, tp in enumerate(TPS)}


def _snapshot() -> ClassicGroupSnapshot:
    subs = [
        Subscription(("orders",), (TPS[0], TPS[1]), 3, "r1"),
        Subscription(("orders",), (), 3, None),
    ]
    return ClassicGroupSnapshot(
        "g",
        "consumer",
        3,
        "range",
        "a-1",
        1234,
        (
            MemberSnapshot(
                "a-1",
                None,
                "a",
                300_000,
                45_000,
                (("range", subs[0]), ("cooperative-sticky", subs[0])),
                [0, 1],
            ),
            MemberSnapshot("b-1", "inst-b", "b", 300_000, 30_000, (("range", subs[1]),), [2, 3]),
        ),
    )


def test_records_are_kafka_records_that_round_trip():
    st = SimOffsetsStore("g")
    st.write_group(_snapshot(), 1000)
    st.commit(0, 42, 1100)
    st.commit(0, 50, 1200)
    st.commit(3, 7, 1300)
    recs = st.records(TPS)
    assert isinstance(recs[0], GroupMetadataRecord) and all(
        isinstance(r, OffsetCommitRecord) for r in recs[1:]
    )
    assert len(recs) == 3  # compacted: the last value per key
    for r in recs:
        assert decode_record(*encode_record(r)) == r


def test_recover_rebuilds_group_and_offsets():
    st = SimOffsetsStore("g")
    st.write_group(_snapshot(), 1000)
    st.commit(0, 50, 1200)
    st.commit(3, 7, 1300)
    snap, offsets = st.recover(TPS, INDEX)
    assert offsets == {TPS[0]: 50, TPS[3]: 7}
    assert (
        snap is not None
        and snap.generation_id == 3
        and snap.protocol_name == "range"
        and snap.leader == "a-1"
    )
    a, b = snap.members
    assert a.assignment == [0, 1] and b.assignment == [2, 3]
    assert b.group_instance_id == "inst-b" and b.session_timeout_ms == 30_000
    # only the selected protocol's metadata is in the log (as Kafka stores it)
    assert a.protocols == (("range", Subscription(("orders",), (TPS[0], TPS[1]), 3, "r1")),)


def test_recover_empty_store():
    snap, offsets = SimOffsetsStore("g").recover(TPS, INDEX)
    assert snap is None and offsets == {}
