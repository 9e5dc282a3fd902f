"""KIP-848 records (types 3-8): byte layouts from the schemas, round trips, replay after a failover."""

from __future__ import annotations

import dataclasses

import pytest

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
    PartitionMetadataValue,
    TargetAssignmentValue,
    decode_any,
    decode_consumer_group_record,
    diff_records,
    encode_consumer_group_record,
    replay_consumer_groups,
    topic_uuid,
)
from kafka_rebalance.group.records import OffsetCommitRecord, RecordDecodeError, encode_record, offset_commit_record
from kafka_rebalance.model import TopicMetadata, TopicPartition
from kafka_rebalance.sim.offsets_log_store import OffsetsLogStore

TID = bytes(range(16))


def test_group_epoch_record_layout():
    key, value = encode_consumer_group_record(ConsumerGroupRecord(3, "g", None, GroupEpochValue(7)))
    assert key == bytes.fromhex("0003" "0001") + b"g"
    # value version 0, Epoch int32, empty tagged fields
    assert value == bytes.fromhex("0000" "00000007" "00")


def test_current_assignment_record_layout():
    v = CurrentAssignmentValue(5, 4, 1, ((TID, (0, 2)),), ())
    key, value = encode_consumer_group_record(ConsumerGroupRecord(8, "g", "m", v))
    assert key == bytes.fromhex("0008" "0001") + b"g" + bytes.fromhex("0001") + b"m"
    assert value == (bytes.fromhex("0000" "00000005" "00000004" "01")
                     + bytes.fromhex("02") + TID + bytes.fromhex("03" "00000000" "00000002" "00")  # 1 topic, 2 parts
                     + bytes.fromhex("01")                                                         # no pending
                     + bytes.fromhex("00"))
    assert decode_consumer_group_record(key, value).value == v


def test_member_metadata_layout_and_round_trip():
    v = MemberMetadataValue(None, "r1", "c", "/h", ("a", "b"), None, 300000, "uniform")
    key, value = encode_consumer_group_record(ConsumerGroupRecord(5, "g", "m", v))
    assert value == (bytes.fromhex("0000" "00" "03") + b"r1" + bytes.fromhex("02") + b"c" + bytes.fromhex("03")
                     + b"/h" + bytes.fromhex("03" "02") + b"a" + bytes.fromhex("02") + b"b"
                     + bytes.fromhex("00" "000493e0" "08") + b"uniform" + bytes.fromhex("00"))
    assert decode_consumer_group_record(key, value) == ConsumerGroupRecord(5, "g", "m", v)


@pytest.mark.parametrize("rec", [
    ConsumerGroupRecord(4, "g", None, PartitionMetadataValue(((TID, "orders", 12),))),
    ConsumerGroupRecord(6, "g", None, GroupEpochValue(3)),
    ConsumerGroupRecord(7, "g", "m", TargetAssignmentValue(((TID, (1, 5, 9)),))),
    ConsumerGroupRecord(7, "g", "m", None),
    ConsumerGroupRecord(3, "g", None, GroupEpochValue(1, ((4, b"xy"),))),
])
def test_round_trips(rec):
    assert decode_consumer_group_record(*encode_consumer_group_record(rec)) == rec


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
    clients = {n: ConsumerMember("app", ("orders",), member_id=n, instance_id=f"i-{n}" if n == "c" else None)
               for n in "abc"}
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
    rebuilt = replay_consumer_groups([decode_any(*encode_consumer_group_record(r)) for r in log], TOPICS)["app"]
    expect = persisted(group)
    fields = ["group_epoch", "assignment_epoch", "target_assignment", "partition_epochs", "partition_owners",
              "static_members", "subscription_metadata"]
    for f in fields:
        got, want = getattr(rebuilt, f), getattr(expect, f)
        assert (dict(got) if hasattr(got, "items") else got) == (dict(want) if hasattr(want, "items") else want), f
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
    assert {m: x.assigned for m, x in loaded.members.items()} == {m: x.assigned for m, x in group.members.items()}
    assert len(effects) == 3
    assert offsets["app"][TopicPartition("orders", 0)].offset == 42
    # A member coming back to the new coordinator carries on at its epoch, no rebalance.
    m = group.members["a"]
    client = ConsumerMember("app", ("orders",), member_id="a", member_epoch=m.member_epoch, owned=m.assigned,
                            state=ClientState.STABLE)
    after, resp, _ = heartbeat(loaded, heartbeat_request(client), 51_000, CFG)
    assert resp.error.name == "NONE" and after.group_epoch == group.group_epoch
