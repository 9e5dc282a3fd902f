"""KIP-848 records (types 3-8): byte layouts from the schemas, round trips, replay after a failover."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.group.consumer_group import heartbeat, new_group, on_loaded, persisted
from kafka_rebalance.group.consumer_group_member import (
    ClientState,
    ConsumerMember,
    complete_reconciliation,
    heartbeat_request,
    on_heartbeat_response,
)
from kafka_rebalance.group.consumer_group_model import ConsumerGroupConfig
from kafka_rebalance.group.consumer_group_records import (
    ConsumerGroupRecord,
    CurrentAssignmentValue,
    GroupEpochValue,
    MemberMetadataValue,
    PartitionMetadataTopic,
    PartitionMetadataValue,
    PartitionRacks,
    TargetAssignmentValue,
    decode_any,
    decode_consumer_group_record,
    diff_records,
    encode_consumer_group_record,
    replay_consumer_groups,
    topic_uuid,
)
from kafka_rebalance.group.records import (
    OffsetCommitRecord,
    RecordDecodeError,
    encode_record,
    offset_commit_record,
)
from kafka_rebalance.model import TopicMetadata, TopicPartition
from kafka_rebalance.sim.offsets_log_store import OffsetsLogStore

TID = bytes(range(16))


def test_group_epoch_record_layout():
    key, value = encode_consumer_group_record(ConsumerGroupRecord(3, "g", None, GroupEpochValue(7)))
    assert key == bytes.fromhex("00030001") + b"g"
    # value version 0, Epoch int32, empty tagged fields
    assert value == bytes.fromhex("00000000000700")


def test_current_assignment_record_layout():
    v = CurrentAssignmentValue(5, 4, 1, ((TID, (0, 2)),), ())
    key, value = encode_consumer_group_record(ConsumerGroupRecord(8, "g", "m", v))
    assert key == bytes.fromhex("00080001") + b"g" + bytes.fromhex("0001") + b"m"
    assert value == (
        bytes.fromhex("0000000000050000000401")
        + bytes.fromhex("02")
        + TID
        + bytes.fromhex("03000000000000000200")  # 1 topic, 2 parts
        + bytes.fromhex("01")  # no pending
        + bytes.fromhex("00")
    )
    assert decode_consumer_group_record(key, value).value == v


def test_member_metadata_layout_and_round_trip():
    v = MemberMetadataValue(None, "r1", "c", "/h", ("a", "b"), None, 300000, "uniform")
    key, value = encode_consumer_group_record(ConsumerGroupRecord(5, "g", "m", v))
    assert value == (
        bytes.fromhex("00000003")
        + b"r1"
        + bytes.fromhex("02")
        + b"c"
        + bytes.fromhex("03")
        + b"/h"
        + bytes.fromhex("0302")
        + b"a"
        + bytes.fromhex("02")
        + b"b"
        + bytes.fromhex("00000493e008")
        + b"uniform"
        + bytes.fromhex("00")
    )
    assert decode_consumer_group_record(key, value) == ConsumerGroupRecord(5, "g", "m", v)


@pytest.mark.parametrize(
    "rec",
    [
        ConsumerGroupRecord(
            4, "g", None, PartitionMetadataValue((PartitionMetadataTopic(TID, "orders", 12),))
        ),
        ConsumerGroupRecord(6, "g", None, GroupEpochValue(3)),
        ConsumerGroupRecord(7, "g", "m", TargetAssignmentValue(((TID, (1, 5, 9)),))),
        ConsumerGroupRecord(7, "g", "m", None),
        ConsumerGroupRecord(3, "g", None, GroupEpochValue(1, ((4, b"xy"),))),
    ],
)
def test_round_trips(rec):
    assert decode_consumer_group_record(*encode_consumer_group_record(rec)) == rec


def test_partition_metadata_layout_keeps_racks_and_tagged_fields():
    # ConsumerGroupPartitionMetadataValue v0 as a 3.7-3.9 broker wrote it: PartitionMetadata with racks,
    # plus an unknown tagged field on the topic struct.
    value = (
        bytes.fromhex("000002")
        + TID
        + bytes.fromhex("07")
        + b"orders"
        + bytes.fromhex("00000002")
        + bytes.fromhex(
            "03"  # 2 PartitionMetadata
            "00000000"
            "03"
            "03"
        )
        + b"r1"
        + bytes.fromhex("03")
        + b"r2"
        + bytes.fromhex("00")
        + bytes.fromhex("000000010100")  # partition 1, no racks
        + bytes.fromhex("010502")
        + b"xy"  # topic tagged field 5 = "xy"
        + bytes.fromhex("00")
    )  # value tagged fields
    key = bytes.fromhex("00040001") + b"g"
    rec = decode_consumer_group_record(key, value)
    assert rec.value == PartitionMetadataValue(
        (
            PartitionMetadataTopic(
                TID,
                "orders",
                2,
                (PartitionRacks(0, ("r1", "r2")), PartitionRacks(1, ())),
                ((5, b"xy"),),
            ),
        )
    )
    assert encode_consumer_group_record(rec) == (key, value)


def _tagged():
    return st.lists(
        st.tuples(st.integers(0, 300), st.binary(max_size=4)), max_size=2, unique_by=lambda t: t[0]
    ).map(lambda fs: tuple(sorted(fs)))


_NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)
_PARTITION_RACKS = st.builds(
    PartitionRacks,
    st.integers(-(2**31), 2**31 - 1),
    st.lists(_NAMES, max_size=3).map(tuple),
    _tagged(),
)
_PM_TOPIC = st.builds(
    PartitionMetadataTopic,
    st.binary(min_size=16, max_size=16),
    _NAMES,
    st.integers(-(2**31), 2**31 - 1),
    st.lists(_PARTITION_RACKS, max_size=3).map(tuple),
    _tagged(),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(_PM_TOPIC, max_size=4).map(tuple), _tagged(), _NAMES)
def test_partition_metadata_round_trip_is_byte_exact(topics, tagged, group):
    rec = ConsumerGroupRecord(4, group, None, PartitionMetadataValue(topics, tagged))
    key, value = encode_consumer_group_record(rec)
    decoded = decode_consumer_group_record(key, value)
    assert decoded == rec
    assert encode_consumer_group_record(decoded) == (key, value)


_TOPIC_PARTS = st.tuples(
    st.binary(min_size=16, max_size=16),
    st.lists(st.integers(-(2**31), 2**31 - 1), max_size=4).map(tuple),
    _tagged(),
).map(lambda e: e if e[2] else e[:2])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_TOPIC_PARTS, max_size=3).map(tuple),
    st.lists(_TOPIC_PARTS, max_size=3).map(tuple),
    _tagged(),
)
def test_assignment_records_round_trip_is_byte_exact(assigned, pending, tagged):
    for rec in (
        ConsumerGroupRecord(7, "g", "m", TargetAssignmentValue(assigned, tagged)),
        ConsumerGroupRecord(
            8, "g", "m", CurrentAssignmentValue(3, 2, 1, assigned, pending, tagged)
        ),
    ):
        key, value = encode_consumer_group_record(rec)
        decoded = decode_consumer_group_record(key, value)
        assert decoded == rec
        assert encode_consumer_group_record(decoded) == (key, value)


def test_errors_and_decode_any():
    key, value = encode_consumer_group_record(ConsumerGroupRecord(3, "g", None, GroupEpochValue(7)))
    with pytest.raises(RecordDecodeError, match="unknown value version 1"):
        decode_consumer_group_record(key, b"\x00\x01" + value[2:])
    with pytest.raises(RecordDecodeError, match="truncated"):
        decode_consumer_group_record(key, value[:4])
    assert isinstance(decode_any(key, value), ConsumerGroupRecord)
    rec = offset_commit_record("g", "t", 0, 1, commit_timestamp=0)
    assert isinstance(decode_any(*encode_record(rec)), OffsetCommitRecord)


def test_topic_ids_follow_name_uuid_convention():
    assert topic_uuid("orders") == topic_uuid("orders") and len(topic_uuid("orders")) == 16
    assert (topic_uuid("orders")[6] >> 4) == 3  # version-3 (name based) UUID


CFG = ConsumerGroupConfig()
TOPICS = {"orders": TopicMetadata("orders", 8)}


def _run_group():
    """Three members join and settle; every transition's records are collected."""
    group = new_group("app", TOPICS)
    clients = {
        n: ConsumerMember(
            "app", ("orders",), member_id=n, instance_id=f"i-{n}" if n == "c" else None
        )
        for n in "abc"
    }
    log: list[ConsumerGroupRecord] = []
    now = 0
    prev = None
    for _ in range(8):
        for n in "abc":
            c = clients[n]
            if c.reconciling is not None:
                c, _ = complete_reconciliation(c)
            group, resp, _ = heartbeat(group, heartbeat_request(c), now, CFG)
            c, _, _ = on_heartbeat_response(c, resp)
            clients[n] = c
            log += diff_records(prev, group)
            prev = group
            now += 100
    return group, log


def test_replay_rebuilds_the_persisted_group():
    group, log = _run_group()
    assert group.state.value == "Stable"
    rebuilt = replay_consumer_groups(
        [decode_any(*encode_consumer_group_record(r)) for r in log], TOPICS
    )["app"]
    expect = persisted(group)
    fields = [
        "group_epoch",
        "assignment_epoch",
        "target_assignment",
        "partition_epochs",
        "partition_owners",
        "static_members",
        "subscription_metadata",
    ]
    for f in fields:
        got, want = getattr(rebuilt, f), getattr(expect, f)
        assert (dict(got) if hasattr(got, "items") else got) == (
            dict(want) if hasattr(want, "items") else want
        ), f
    for mid, m in expect.members.items():
        assert dataclasses.replace(rebuilt.members[mid], client_id=m.client_id) == m


def test_failover_through_the_log_store(tmp_path):
    group, log = _run_group()
    with OffsetsLogStore.open(tmp_path / "log", fsync=False) as store:
        store.append_consumer_group_records(log, 1)
        store.append_record(offset_commit_record("app", "orders", 0, 42, commit_timestamp=1), 1)
        store.compact(now_ms=10)
    with OffsetsLogStore.open(tmp_path / "log") as store:
        groups = store.rebuild_consumer_groups(TOPICS)
        offsets = store.rebuild().offsets
    loaded, effects = on_loaded(groups["app"], 50_000, CFG)
    assert loaded.group_epoch == group.group_epoch
    assert {m: x.assigned for m, x in loaded.members.items()} == {
        m: x.assigned for m, x in group.members.items()
    }
    assert len(effects) == 3
    assert offsets["app"][TopicPartition("orders", 0)].offset == 42
    # A member coming back to the new coordinator carries on at its epoch, no rebalance.
    m = group.members["a"]
    client = ConsumerMember(
        "app",
        ("orders",),
        member_id="a",
        member_epoch=m.member_epoch,
        owned=m.assigned,
        state=ClientState.STABLE,
    )
    after, resp, _ = heartbeat(loaded, heartbeat_request(client), 51_000, CFG)
    assert resp.error.name == "NONE" and after.group_epoch == group.group_epoch
