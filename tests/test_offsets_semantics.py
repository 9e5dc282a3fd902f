"""Offset commit/fetch validation, metadata size, retention from when the group became Empty, tombstones."""

from __future__ import annotations

import pytest

from kafka_rebalance.group.errors import Errors
from kafka_rebalance.group.offset_messages import (
    GroupType,
    GroupView,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetFetchRequest,
    OffsetsConfig,
)
from kafka_rebalance.group.offsets import (
    OffsetStore,
    commit_offsets,
    delete_group_records,
    delete_offsets_records,
    expire_offsets,
    fetch_offsets,
    rebuild_from_records,
)
from kafka_rebalance.group.records import (
    GroupMetadataRecord,
    OffsetCommitRecord,
    decode_record,
    encode_record,
)
from kafka_rebalance.model import TopicPartition

TP = TopicPartition("orders", 0)
DAY = 24 * 3600 * 1000
WEEK = 7 * DAY


def classic(state="Stable", generation=3, members=("m1",), **kw) -> GroupView:
    return GroupView(
        "g", GroupType.CLASSIC, state, generation, {m: generation for m in members}, **kw
    )


def consumer(members=None, **kw) -> GroupView:
    return GroupView(
        "g", GroupType.CONSUMER, "Stable" if members else "Empty", 0, members or {}, **kw
    )


def commit(group, member="m1", gen=3, offset=10, metadata="", instance=None, api=9, now=1000):
    req = OffsetCommitRequest(
        "g",
        (OffsetCommitPartition("orders", 0, offset, metadata=metadata),),
        member,
        gen,
        instance,
        api_version=api,
    )
    return commit_offsets(group, req, now)


def apply(store, result):
    for r in result.records:
        store.replay(r)


# --- classic validation -------------------------------------------------------------------


@pytest.mark.parametrize(
    "group,member,gen,instance,expected",
    [
        (classic(), "m1", 3, None, Errors.NONE),
        (classic(), "m1", 2, None, Errors.ILLEGAL_GENERATION),
        (classic(), "zz", 3, None, Errors.UNKNOWN_MEMBER_ID),
        (classic(state="CompletingRebalance"), "m1", 3, None, Errors.REBALANCE_IN_PROGRESS),
        (classic(state="PreparingRebalance"), "m1", 3, None, Errors.NONE),
        (classic(state="Dead"), "m1", 3, None, Errors.COORDINATOR_NOT_AVAILABLE),
        (
            classic(state="Empty", members=()),
            "",
            -1,
            None,
            Errors.NONE,
        ),  # admin / manual assignment
        (classic(), "", -1, None, Errors.UNKNOWN_MEMBER_ID),  # no identity, group active
        (classic(static_members={"i1": "m1"}), "m1", 3, "i1", Errors.NONE),
        (classic(static_members={"i1": "m1"}), "m9", 3, "i1", Errors.FENCED_INSTANCE_ID),
        (classic(static_members={}), "m1", 3, "i1", Errors.UNKNOWN_MEMBER_ID),
    ],
)
def test_classic_commit_validation(group, member, gen, instance, expected):
    res = commit(group, member, gen, instance=instance)
    assert res.response.error_for(TP) is expected
    assert bool(res.records) == (expected is Errors.NONE)


def test_commit_in_stable_keeps_session_alive():
    assert commit(classic()).reschedule_heartbeat
    assert not commit(classic(state="Empty", members=()), "", -1).reschedule_heartbeat


def test_unknown_group():
    assert commit(None, "", -1).created_simple_group
    assert commit(None, "m1", 3).response.error_for(TP) is Errors.GROUP_ID_NOT_FOUND
    assert commit(None, "m1", 3, api=8).response.error_for(TP) is Errors.ILLEGAL_GENERATION


# --- KIP-848 validation -------------------------------------------------------------------


def test_consumer_group_commit_by_member_epoch():
    g = consumer({"m1": 5})
    assert commit(g, "m1", 5).response.error_for(TP) is Errors.NONE
    assert commit(g, "m1", 4).response.error_for(TP) is Errors.STALE_MEMBER_EPOCH
    assert commit(g, "m2", 5).response.error_for(TP) is Errors.UNKNOWN_MEMBER_ID
    assert commit(g, "m1", 5, api=8).response.error_for(TP) is Errors.UNSUPPORTED_VERSION
    upgraded = consumer({"m1": 5}, classic_protocol_members=frozenset({"m1"}))
    assert commit(upgraded, "m1", 4).response.error_for(TP) is Errors.ILLEGAL_GENERATION
    assert commit(consumer(), "", -1).response.error_for(TP) is Errors.NONE


def test_consumer_group_fetch_validation():
    store = OffsetStore()
    apply(store, commit(consumer({"m1": 5}), "m1", 5, offset=77))
    g = consumer({"m1": 5})
    assert fetch_offsets(store, g, OffsetFetchRequest("g", (TP,), "m1", 5)).offset_of(TP) == 77
    assert (
        fetch_offsets(store, g, OffsetFetchRequest("g", (TP,), "m1", 4)).error
        is Errors.STALE_MEMBER_EPOCH
    )
    assert (
        fetch_offsets(store, g, OffsetFetchRequest("g", (TP,), "x", 5)).error
        is Errors.UNKNOWN_MEMBER_ID
    )
    assert fetch_offsets(store, g, OffsetFetchRequest("g", (TP,))).offset_of(TP) == 77  # admin


# --- metadata size, fetch ------------------------------------------------------------------


def test_metadata_too_large_fails_only_that_partition():
    req = OffsetCommitRequest(
        "g",
        (
            OffsetCommitPartition("orders", 0, 1, metadata="x" * 4097),
            OffsetCommitPartition("orders", 1, 1, metadata="x" * 4096),
        ),
        "m1",
        3,
    )
    res = commit_offsets(classic(), req, 5)
    assert res.response.error_for(TP) is Errors.OFFSET_METADATA_TOO_LARGE
    assert res.response.error_for(TopicPartition("orders", 1)) is Errors.NONE
    assert [r.key.partition for r in res.records] == [1]
    # Java counts UTF-16 units: 2049 astral characters are 4098 units.
    big = OffsetCommitRequest(
        "g", (OffsetCommitPartition("orders", 0, 1, metadata="\U0001f600" * 2049),), "m1", 3
    )
    assert (
        commit_offsets(classic(), big, 5).response.error_for(TP) is Errors.OFFSET_METADATA_TOO_LARGE
    )
    small = OffsetsConfig(offset_metadata_max_bytes=3)
    assert commit_offsets(
        classic(),
        OffsetCommitRequest(
            "g", (OffsetCommitPartition("orders", 0, 1, metadata="abcd"),), "m1", 3
        ),
        5,
        small,
    ).response.errors == {Errors.OFFSET_METADATA_TOO_LARGE}


def test_fetch_returns_committed_or_minus_one():
    store = OffsetStore()
    apply(store, commit(classic(), offset=42, metadata="meta"))
    resp = fetch_offsets(
        store, classic(), OffsetFetchRequest("g", (TP, TopicPartition("orders", 1)))
    )
    assert resp.error is Errors.NONE
    assert [(p.offset, p.metadata) for p in resp.partitions] == [(42, "meta"), (-1, "")]
    unknown = fetch_offsets(store, None, OffsetFetchRequest("h", (TP,)))
    assert unknown.error is Errors.NONE and unknown.offset_of(TP) == -1
    assert fetch_offsets(store, classic(), OffsetFetchRequest("g")).offset_of(TP) == 42


def test_commit_records_use_current_versions():
    res = commit(classic(), offset=5, now=1234)
    key, value = encode_record(res.records[0])
    assert key[:2] == b"\x00\x01" and value[:2] == b"\x00\x03"
    assert decode_record(key, value).value.commit_timestamp == 1234
    req = OffsetCommitRequest(
        "g", (OffsetCommitPartition("orders", 0, 1),), "m1", 3, retention_time_ms=500
    )
    v1 = commit_offsets(classic(), req, 1000).records[0].value
    assert (v1.version, v1.expire_timestamp) == (1, 1500)


# --- retention -----------------------------------------------------------------------------


def _store_with_commit(now=0, group=None):
    store = OffsetStore()
    apply(store, commit(group or classic(), now=now))
    return store


def test_retention_counts_from_when_the_group_became_empty():
    store = _store_with_commit(now=0)
    empty_since = 10 * DAY
    g = classic(state="Empty", members=(), state_timestamp_ms=empty_since)
    # A week after the last commit but only 6 days after becoming Empty: kept.
    assert expire_offsets(store, g, empty_since + 6 * DAY).records == ()
    res = expire_offsets(store, g, empty_since + WEEK)
    assert res.expired == (TP,)
    assert isinstance(res.records[0], OffsetCommitRecord) and res.records[0].is_tombstone
    assert isinstance(res.records[-1], GroupMetadataRecord) and res.records[-1].is_tombstone
    assert res.delete_group
    for r in res.records:
        store.replay(r)
    assert store.committed("g", TP) is None


def test_no_expiry_while_group_is_active_or_subscribed():
    store = _store_with_commit(now=0)
    # Stable classic group without known subscriptions: nothing expires.
    assert expire_offsets(store, classic(), 100 * WEEK).records == ()
    # Stable consumer-protocol group still subscribed to the topic: kept.
    subscribed = classic(subscribed_topics=frozenset({"orders"}))
    assert expire_offsets(store, subscribed, 100 * WEEK).records == ()
    # Stable and no longer subscribed: expires from the commit timestamp, group kept.
    moved_on = classic(subscribed_topics=frozenset({"other"}))
    assert expire_offsets(store, moved_on, WEEK - 1).records == ()
    res = expire_offsets(store, moved_on, WEEK)
    assert res.expired == (TP,) and not res.delete_group


def test_empty_group_without_state_timestamp_uses_commit_time():
    store = _store_with_commit(now=5 * DAY)
    g = classic(state="Empty", members=())
    assert expire_offsets(store, g, 5 * DAY + WEEK - 1).expired == ()
    assert expire_offsets(store, g, 5 * DAY + WEEK).expired == (TP,)


def test_explicit_expire_timestamp_wins():
    store = OffsetStore()
    req = OffsetCommitRequest(
        "g", (OffsetCommitPartition("orders", 0, 1),), "", -1, retention_time_ms=1000
    )
    apply(store, commit_offsets(classic(state="Empty", members=()), req, 0))
    g = classic(state="Empty", members=(), state_timestamp_ms=0)
    assert expire_offsets(store, g, 999).expired == ()
    assert expire_offsets(store, g, 1000).expired == (TP,)


def test_consumer_group_offsets_expire_from_commit_when_unsubscribed():
    store = _store_with_commit(now=0, group=consumer({"m1": 3}))
    active = consumer({"m1": 3}, subscribed_topics=frozenset({"orders"}))
    assert expire_offsets(store, active, 10 * WEEK).records == ()
    gone = consumer({}, subscribed_topics=frozenset())
    res = expire_offsets(store, gone, WEEK)
    assert res.expired == (TP,) and res.delete_group


def test_retention_minutes_config():
    store = _store_with_commit(now=0)
    g = classic(state="Empty", members=(), state_timestamp_ms=0)
    cfg = OffsetsConfig.from_minutes(1)
    assert expire_offsets(store, g, 59_999, cfg).expired == ()
    assert expire_offsets(store, g, 60_000, cfg).expired == (TP,)


# --- tombstones and rebuild ------------------------------------------------------------------


def test_group_delete_and_offset_delete_tombstones():
    store = _store_with_commit()
    recs = delete_group_records(store, "g")
    assert [r.is_tombstone for r in recs] == [True, True]
    err, recs = delete_offsets_records(store, classic(protocol_type="connect"), [TP])
    assert err is Errors.NON_EMPTY_GROUP and recs == ()
    # An active consumer-protocol group may delete offsets, but not of topics it still consumes.
    err, recs = delete_offsets_records(store, classic(), [TP])
    assert err is Errors.NONE and recs == ()
    err, recs = delete_offsets_records(store, classic(state="Empty", members=()), [TP])
    assert err is Errors.NONE and len(recs) == 1
    store.replay(recs[0])
    assert store.group_offsets("g") == {}


def test_rebuild_from_records_replays_in_order():
    store = OffsetStore()
    log = list(commit(classic(), offset=1).records) + list(commit(classic(), offset=2).records)
    rebuilt = rebuild_from_records(log)
    assert rebuilt.offsets["g"][TP].offset == 2
    assert rebuilt.groups["g"].value is None  # known only from offsets: a simple group
    assert rebuilt.groups["g"].state == "Empty"
    store.replay_all(log)
    assert store.committed("g", TP).offset == 2


def test_loaded_group_view_parses_subscriptions():
    from kafka_rebalance.assign.protocol import Subscription, encode_subscription
    from kafka_rebalance.group.records import (
        GroupMetadataValue,
        MemberMetadata,
        group_metadata_record,
    )

    sub = encode_subscription(Subscription(("orders", "payments")))
    members = (MemberMetadata("m1", "c", "/h", 45_000, sub, b"", 300_000, "i1"),)
    rebuilt = rebuild_from_records(
        [group_metadata_record("g", GroupMetadataValue("consumer", 5, "range", "m1", members, 777))]
    )
    view = rebuilt.groups["g"].view()
    assert (view.state, view.generation, view.members, view.static_members) == (
        "Stable",
        5,
        {"m1": 5},
        {"i1": "m1"},
    )
    assert (
        view.subscribed_topics == frozenset({"orders", "payments"})
        and view.state_timestamp_ms == 777
    )
    garbled = GroupMetadataValue(
        "consumer", 5, "range", "m1", (MemberMetadata("m1", "c", "/h", 1, b"\x00", b""),)
    )
    assert (
        rebuild_from_records([group_metadata_record("g", garbled)])
        .groups["g"]
        .view()
        .subscribed_topics
        is None
    )
    empty = GroupMetadataValue("consumer", 6, None, None, (), 900)
    v = rebuild_from_records([group_metadata_record("g", empty)]).groups["g"].view()
    assert v.state == "Empty" and v.subscribed_topics == frozenset()


def test_unknown_partitions_are_rejected_before_the_coordinator():
    req = OffsetCommitRequest(
        "g",
        (
            OffsetCommitPartition("orders", 0, 1),
            OffsetCommitPartition("orders", 9, 1),
            OffsetCommitPartition("ghost", 0, 1),
        ),
        "m1",
        3,
    )
    exists = lambda tp: tp.topic == "orders" and tp.partition < 4  # noqa: E731
    res = commit_offsets(classic(), req, 5, partition_exists=exists)
    assert [e for _, e in res.response.partitions] == [
        Errors.NONE,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
    ]
    assert [r.key.partition for r in res.records] == [0]
    # Only unknown partitions: the group is not even validated.
    only_ghost = OffsetCommitRequest("g", (OffsetCommitPartition("ghost", 0, 1),), "zz", 99)
    assert commit_offsets(classic(), only_ghost, 5, partition_exists=exists).response.errors == {
        Errors.UNKNOWN_TOPIC_OR_PARTITION
    }
    # The group error applies to the known ones.
    bad = OffsetCommitRequest("g", req.partitions, "m1", 2)
    assert [
        e for _, e in commit_offsets(classic(), bad, 5, partition_exists=exists).response.partitions
    ] == [
        Errors.ILLEGAL_GENERATION,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
    ]


# --- retention on the simulated broker (sim/kafka_cluster.SimCluster) -----------------------


def _sim(retention_ms=60_000, interval_ms=10_000):
    from kafka_rebalance.group.classic_group import ClassicGroupConfig
    from kafka_rebalance.sim.kafka_client import SimConsumer
    from kafka_rebalance.sim.kafka_cluster import SimCluster

    cluster = SimCluster(
        {"a": 2, "b": 1},
        group_config=ClassicGroupConfig(initial_rebalance_delay_ms=0),
        offsets_config=OffsetsConfig(
            offsets_retention_ms=retention_ms, offsets_retention_check_interval_ms=interval_ms
        ),
        tick_ms=500,
    )
    c = SimConsumer(cluster, "g", session_timeout_ms=10_000, heartbeat_interval_ms=1_000)
    c.subscribe(["a"])
    for _ in range(50):
        c.consume()
        if c.assignment():
            break
    assert c.assignment()
    return cluster, c


def _commit_a_and_b(cluster, c):
    from confluent_kafka import TopicPartition as CTP

    c.commit(offsets=[CTP("a", 0, 5), CTP("a", 1, 6), CTP("b", 0, 7)], asynchronous=False)
    return cluster.now_ms


def test_sim_stable_group_expires_only_offsets_of_topics_it_no_longer_subscribes_to():
    """ClassicGroup.offsetExpirationCondition: a Stable "consumer" group that knows its subscribed
    topics (computed at the generation) expires, from the commit time, the offsets of other topics;
    cleanupGroupMetadata runs every offsets.retention.check.interval.ms."""
    cluster, c = _sim()
    g = cluster.coordinators["g"].group
    assert g.subscribed_topics == frozenset({"a"})
    assert cluster.group_view("g").subscribed_topics == frozenset({"a"})
    t0 = _commit_a_and_b(cluster, c)
    while cluster.now_ms < t0 + 59_000:
        c.consume()
    assert set(cluster.committed_offsets("g")) == {("a", 0), ("a", 1), ("b", 0)}
    while cluster.now_ms < t0 + 71_000:  # retention passed, and a check ran
        c.consume()
    assert cluster.committed_offsets("g") == {("a", 0): (5, ""), ("a", 1): (6, "")}
    assert g.state.value == "Stable" and "g" in cluster.coordinators


def test_sim_empty_group_expires_from_when_it_became_empty_then_is_deleted():
    cluster, c = _sim()
    _commit_a_and_b(cluster, c)
    c.close()
    g = cluster.coordinators["g"].group
    assert g.state.value == "Empty" and g.subscribed_topics == frozenset()
    empty_at = g.state_timestamp_ms
    cluster.advance(empty_at + 59_999 - cluster.now_ms)
    assert len(cluster.committed_offsets("g")) == 3 and "g" in cluster.coordinators
    cluster.advance(10_001)
    assert cluster.committed_offsets("g") == {} and "g" not in cluster.coordinators
    assert "g" not in cluster.store.groups  # the group tombstone was appended and replayed
    key, value = cluster.offsets_log[-1]
    assert value is None and isinstance(decode_record(key, value), GroupMetadataRecord)
