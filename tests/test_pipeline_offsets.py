"""Offsets job: decode `__consumer_offsets` records with the shared codecs; quarantine what does not decode."""

from __future__ import annotations

import struct

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_rebalance.assign.protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)
from kafka_rebalance.group.records import (
    GroupMetadataValue,
    MemberMetadata,
    encode_record,
    group_metadata_record,
    group_metadata_tombstone,
    offset_commit_record,
    offset_commit_tombstone,
)
from kafka_rebalance.model import TopicPartition
from kafka_rebalance.pipeline.offsets import run_offsets

T0 = 1_700_000_000_000


def member(mid, parts, instance=None):
    sub = encode_subscription(Subscription(("t",)))
    asg = encode_assignment(Assignment(tuple(TopicPartition("t", p) for p in parts)))
    return MemberMetadata(mid, "client", "/127.0.0.1", 45000, sub, asg, 300000, instance)


def gm(gen, members, state_ts):
    return group_metadata_record(
        "g",
        GroupMetadataValue(
            "consumer", gen, "range", members[0].member_id, tuple(members), state_ts
        ),
    )


def commit(p, off, ts, metadata=""):
    return offset_commit_record("g", "t", p, off, commit_timestamp=T0 + ts, metadata=metadata)


def records_table(rows):
    """rows: (key, value, ts_ms or None) in log order -> Spark Kafka-source schema."""
    return pa.table(
        {
            "key": pa.array([r[0] for r in rows], pa.binary()),
            "value": pa.array([r[1] for r in rows], pa.binary()),
            "topic": pa.array(["__consumer_offsets"] * len(rows)),
            "partition": pa.array([0] * len(rows), pa.int32()),
            "offset": pa.array(list(range(len(rows))), pa.int64()),
            "timestamp": pa.array(
                [None if r[2] is None else T0 + r[2] for r in rows], pa.timestamp("ms", tz="UTC")
            ),
            "timestampType": pa.array([0] * len(rows), pa.int32()),
        }
    )


@pytest.fixture(scope="module")
def decoded(spark, tmp_path_factory):
    enc = lambda rec, ts: (*encode_record(rec), ts)  # noqa: E731
    bad_value = bytearray(encode_record(commit(0, 1, 0))[1])
    bad_value[0:2] = struct.pack(">h", 7)
    rows = [
        enc(gm(1, [member("a-1", [0, 1]), member("b-1", [2, 3])], T0 + 900), 1000),
        enc(commit(0, 10, 2000, "old"), 2000),
        enc(commit(1, 20, 3000), 3000),
        enc(commit(0, 15, 4000), 4000),
        enc(commit(2, 7, 5000, "incomplete:8,9"), 5000),
        enc(gm(2, [member("a-1", [0, 1, 2]), member("c-1", [3], instance="c")], T0 + 5400), 5500),
        enc(offset_commit_tombstone("g", "t", 1), 6000),
        (b"\x00\x01\x00", b"\x00\x03", 6100),  # truncated key
        (
            struct.pack(">h", 9) + b"\x00\x01g",
            b"\x00\x00",
            6200,
        ),  # unknown key version / record type
        (encode_record(commit(3, 1, 0))[0], bytes(bad_value), 6300),  # unknown value version
        (*encode_record(commit(3, 2, 6400))[:2], None),  # null timestamp
        enc(group_metadata_tombstone("h"), 7000),
    ]
    d = tmp_path_factory.mktemp("offsets")
    pq.write_table(records_table(rows), d / "records.parquet")
    summary = run_offsets(spark, str(d / "records.parquet"), str(d / "out"))
    return summary, d / "out"


def test_counts(decoded):
    summary, _ = decoded
    assert summary["records"] == 12
    assert (
        summary["commits"],
        summary["latest_offsets"],
        summary["group_metadata"],
        summary["rebalances"],
    ) == (4, 2, 3, 2)
    assert summary["offset_tombstones"] == 1 and summary["group_tombstones"] == 1
    assert summary["quarantined"] == 4


def test_quarantine_reasons(decoded):
    _, out = decoded
    q = pd.read_parquet(out / "quarantine.parquet")
    reasons = sorted(q["reason"])
    # the codecs' own messages, prefixed with the part that failed
    assert len(reasons) == 4 and "null timestamp" in reasons
    assert any(r.startswith("key:") and "truncated" in r for r in reasons), reasons
    assert any(r.startswith("key:") and "record type 9" in r for r in reasons), reasons
    assert any(r.startswith("value:") and "version 7" in r for r in reasons), reasons
    assert all("offset=" in d for d in q["detail"])


def test_commits_and_latest_offsets_after_tombstones(decoded):
    _, out = decoded
    c = pd.read_parquet(out / "commits.parquet").sort_values("record_offset")
    assert list(c["offset"]) == [10, 20, 15, 7] and list(c["record_offset"]) == [1, 2, 3, 4]
    assert c["commit_ts"].iloc[0] == pd.Timestamp(T0 + 2000, unit="ms")
    latest = pd.read_parquet(out / "latest_offsets.parquet")
    assert sorted(zip(latest["partition"], latest["offset"], latest["metadata"])) == [
        (0, 15, ""),
        (2, 7, "incomplete:8,9"),
    ]


def test_group_metadata_with_decoded_assignments(decoded):
    _, out = decoded
    g = pd.read_parquet(out / "group_metadata.parquet").sort_values("record_offset")
    assert list(g["generation"].iloc[:2]) == [1, 2] and bool(g["tombstone"].iloc[2])
    assert g["protocol"].iloc[0] == "range" and g["leader"].iloc[0] == "a-1"
    members = list(g["members"].iloc[1])
    by_id = {m["member_id"]: m for m in members}
    assert [a["partition"] for a in by_id["a-1"]["assigned"]] == [0, 1, 2]
    assert by_id["c-1"]["group_instance_id"] == "c" and list(by_id["c-1"]["topics"]) == ["t"]


def test_rebalance_episodes(decoded):
    _, out = decoded
    r = pd.read_parquet(out / "rebalances.parquet").sort_values("generation_to")
    first, second = r.iloc[0], r.iloc[1]
    # the group's first record has no earlier assignment to attribute commits by: its start is unknown
    assert (
        pd.isna(first["generation_from"])
        and first["start_source"] is None
        and pd.isna(first["duration_ms"])
    )
    assert (second["generation_from"], second["generation_to"]) == (1, 2)
    # a-1's last commit before generation 2 is at 4000 (partition 0), b-1's at 5000 (partition 2): the rebalance
    # starts with the first member to react (4000) and ends with the record (5500)
    assert second["start_source"] == "commit" and second["duration_ms"] == 1500
    assert list(second["joined"]) == ["c"] and list(second["left"]) == ["b-1"]
    assert second["partitions_moved"] == 2 and second["partitions_assigned"] == 4


def test_kip848_records_decode_and_give_consumer_protocol_episodes(spark, tmp_path):
    """A consumer-protocol group's records (types 3-8) are decoded, not quarantined: consumer_groups.parquet
    holds them, and rebalances.parquet has an episode per group epoch (start at the epoch bump, end when
    every member of the new target reached it), beside the classic group's."""
    from kafka_rebalance.group import consumer_group_records as cgr

    t = cgr.topic_uuid("t")
    tid = __import__("base64").urlsafe_b64encode(t).decode().rstrip("=")

    def rec(rtype, member, value, ts):
        key, val = cgr.encode_consumer_group_record(
            cgr.ConsumerGroupRecord(rtype, "cg", member, value)
        )
        return key, val, ts

    meta = cgr.MemberMetadataValue(None, None, "client", "/127.0.0.1", ("t",))
    rows = [
        rec(5, "m1", meta, 100),
        rec(3, None, cgr.GroupEpochValue(1), 100),
        rec(7, "m1", cgr.TargetAssignmentValue(((t, (0, 1)),)), 101),
        rec(6, None, cgr.GroupEpochValue(1), 101),
        rec(8, "m1", cgr.CurrentAssignmentValue(1, 0, 0, ((t, (0, 1)),), ()), 150),
        rec(5, "m2", meta, 200),  # m2 joins: epoch 2 moves partition 1 to it
        rec(3, None, cgr.GroupEpochValue(2), 200),
        rec(7, "m1", cgr.TargetAssignmentValue(((t, (0,)),)), 201),
        rec(7, "m2", cgr.TargetAssignmentValue(((t, (1,)),)), 201),
        rec(6, None, cgr.GroupEpochValue(2), 201),
        rec(8, "m1", cgr.CurrentAssignmentValue(2, 1, 0, ((t, (0,)),), ()), 260),
        rec(8, "m2", cgr.CurrentAssignmentValue(2, 0, 0, ((t, (1,)),), ()), 300),
        rec(5, "m3", None, 400),  # a member tombstone
        (*encode_record(gm(1, [member("a-1", [0])], T0 + 500)), 500),
    ]
    pq.write_table(records_table(rows), tmp_path / "records.parquet")
    summary = run_offsets(spark, str(tmp_path / "records.parquet"), str(tmp_path / "out"))
    assert summary["quarantined"] == 0 and summary["consumer_group_records"] == 13
    cg = pd.read_parquet(tmp_path / "out" / "consumer_groups.parquet").sort_values("record_offset")
    assert list(cg["record"])[:3] == [
        "ConsumerGroupMemberMetadata",
        "ConsumerGroupMetadata",
        "ConsumerGroupTargetAssignmentMember",
    ]
    last = cg.iloc[11]
    assert (last["member_id"], last["epoch"], last["previous_epoch"]) == ("m2", 2, 0)
    assert [(p["topic"], p["partition"]) for p in last["partitions"]] == [(tid, 1)]
    assert cg.iloc[12]["tombstone"] and cg.iloc[0]["value_json"].startswith('{"instance_id": null')
    eps = pd.read_parquet(tmp_path / "out" / "rebalances.parquet")
    consumer = eps[eps["protocol"] == "consumer"].sort_values("generation_to")
    assert len(eps) == 3 and list(consumer["generation_to"]) == [1, 2]
    first, second = consumer.iloc[0], consumer.iloc[1]
    assert first["duration_ms"] == 50 and first["partitions_assigned"] == 2
    assert second["start"] == pd.Timestamp(T0 + 200, unit="ms")
    assert second["duration_ms"] == 100 and list(second["joined"]) == ["m2"]
    assert (second["members_before"], second["members_after"], second["partitions_moved"]) == (
        1,
        2,
        1,
    )
