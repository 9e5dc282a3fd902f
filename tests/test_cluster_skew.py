"""Broker skew, ZooKeeper/KRaft leader imbalance, election skip reasons, auto leader rebalance."""

from __future__ import annotations

import pytest

from kafka_rebalance.cluster.election import (
    Controller,
    SkipReason,
    auto_leader_rebalance,
    preferred_election,
)
from kafka_rebalance.cluster.leader_skew import kraft_imbalanced_partitions, zk_leader_imbalance
from kafka_rebalance.cluster.skew import skew_report
from kafka_rebalance.model import (
    Broker,
    ClusterSnapshot,
    PartitionLoad,
    PartitionReplicas,
    TopicPartition,
)


def P(topic, n, replicas, leader, isr=None, load=None):
    return PartitionReplicas(
        topic, n, tuple(replicas), leader, tuple(isr if isr is not None else replicas), load
    )


def test_skew_numbers_by_hand():
    L = PartitionLoad
    snap = ClusterSnapshot(
        (Broker(1), Broker(2), Broker(3)),
        (
            P("t", 0, [1, 2], 1, load=L(bytes_in=10, bytes_out=30, messages_in=5, size_bytes=100)),
            P("t", 1, [1, 3], 3, load=L(bytes_in=20, bytes_out=60, messages_in=7, size_bytes=200)),
            P("u", 0, [2, 1], 2, load=L(bytes_in=1, bytes_out=2, messages_in=1, size_bytes=50)),
        ),
    )
    r = skew_report(snap)
    b = {x.broker: x for x in r.brokers}
    assert (b[1].replicas, b[2].replicas, b[3].replicas) == (3, 2, 1)
    assert (b[1].leaders, b[2].leaders, b[3].leaders) == (1, 1, 1)
    assert (b[1].preferred_leaders, b[2].preferred_leaders, b[3].preferred_leaders) == (2, 1, 0)
    # every replica carries bytes_in and size; only the leader carries bytes_out and messages_in
    assert b[1].bytes_in == 31 and b[2].bytes_in == 11 and b[3].bytes_in == 20
    assert b[1].size_bytes == 350 and b[3].size_bytes == 200
    assert b[1].bytes_out == 30 and b[3].bytes_out == 60 and b[2].bytes_out == 2
    assert b[3].messages_in == 7
    assert r.max_over_mean["replicas"] == pytest.approx(3 / 2)
    assert r.max_over_mean["leaders"] == 1.0
    assert r.max_over_mean["preferred_leaders"] == pytest.approx(2 / 1)
    assert r.max_over_mean["bytes_out"] == pytest.approx(60 / (92 / 3))
    assert set(r.skewed) >= {"replicas", "preferred_leaders", "bytes_out"}
    assert "leaders" not in r.skewed


def test_dead_broker_is_left_out_of_the_mean():
    snap = ClusterSnapshot(
        (Broker(1), Broker(2), Broker(3, alive=False)),
        (P("t", 0, [1, 3], 1, [1]), P("t", 1, [2, 1], 2)),
    )
    r = skew_report(snap)
    assert r.max_over_mean["replicas"] == pytest.approx(2 / 1.5)  # dead broker 3 not in the mean


def test_zk_leader_imbalance_ratio_and_threshold():
    # broker 1 prefers 10 partitions, 1 led elsewhere (10%: not above 10%); broker 2 prefers 4, 1 leaderless
    parts = [P("a", i, [1, 2], 1) for i in range(9)] + [P("a", 9, [1, 2], 2)]
    parts += [P("b", i, [2, 1], 2) for i in range(3)] + [P("b", 3, [2, 1], None, [])]
    snap = ClusterSnapshot((Broker(1), Broker(2)), tuple(parts))
    zk = {b.broker: b for b in zk_leader_imbalance(snap)}
    assert (zk[1].preferred, zk[1].not_led_by_preferred, zk[1].ratio, zk[1].triggered) == (
        10,
        1,
        0.1,
        False,
    )
    assert (zk[2].preferred, zk[2].not_led_by_preferred, zk[2].ratio, zk[2].triggered) == (
        4,
        1,
        0.25,
        True,
    )
    assert {b.broker for b in zk_leader_imbalance(snap, percentage=5) if b.triggered} == {1, 2}
    # KRaft: every partition not led by replicas[0], whatever the ratio
    assert kraft_imbalanced_partitions(snap) == [TopicPartition("a", 9), TopicPartition("b", 3)]


def test_auto_leader_rebalance_zk_vs_kraft():
    parts = [P("a", i, [1, 2], 1) for i in range(9)] + [P("a", 9, [1, 2], 2)]
    parts += [P("b", 0, [2, 1], 1), P("b", 1, [2, 1], 2)]
    snap = ClusterSnapshot((Broker(1), Broker(2)), tuple(parts))
    zk = auto_leader_rebalance(snap, Controller.ZK)
    # broker 1 at 10% is not above the threshold: only broker 2's partition moves back
    assert [e[0] for e in zk.elected] == [TopicPartition("b", 0)]
    kraft = auto_leader_rebalance(snap, Controller.KRAFT)
    assert sorted(e[0] for e in kraft.elected) == [TopicPartition("a", 9), TopicPartition("b", 0)]
    assert kraft_imbalanced_partitions(kraft.after) == []
    assert kraft.passes == 1
    assert auto_leader_rebalance(snap, Controller.KRAFT, max_elections=1).passes == 2


def test_kraft_auto_rebalance_keeps_a_valid_leader_when_preferred_cannot_lead():
    snap = ClusterSnapshot(
        (Broker(1, alive=False), Broker(2), Broker(3)),
        (P("a", 0, [1, 2, 3], 2, [2, 3]), P("a", 1, [1, 2, 3], None, [3])),
    )
    res = auto_leader_rebalance(snap, Controller.KRAFT)
    # a-0 keeps leader 2 (no change record); a-1 gets the first valid replica, 3
    assert res.elected == ((TopicPartition("a", 1), None, 3),)


def test_preferred_election_skip_reasons():
    snap = ClusterSnapshot(
        (Broker(1), Broker(2), Broker(3, alive=False)),
        (
            P("t", 0, [1, 2], 2),  # electable
            P("t", 1, [1, 2], 1),  # already preferred
            P("t", 2, [3, 1], 1, [1]),  # preferred dead
            P("t", 3, [2, 1], 1, [1]),  # preferred alive but out of ISR
            P("u", 0, [2, 1], 1),
        ),
    )
    all_ = preferred_election(snap)
    assert all_.elect == (TopicPartition("t", 0), TopicPartition("u", 0))
    reasons = {s.tp: s.reason for s in all_.skipped}
    assert reasons == {
        TopicPartition("t", 2): SkipReason.PREFERRED_LEADER_NOT_AVAILABLE,
        TopicPartition("t", 3): SkipReason.PREFERRED_LEADER_NOT_AVAILABLE,
    }
    assert "not alive" in next(s.detail for s in all_.skipped if s.tp.partition == 2)
    assert "not in the ISR" in next(s.detail for s in all_.skipped if s.tp.partition == 3)
    only = preferred_election(
        snap, [TopicPartition("t", 1), TopicPartition("t", 0), TopicPartition("x", 0)]
    )
    assert only.elect == (TopicPartition("t", 0),)
    reasons = {s.tp: s.reason for s in only.skipped}
    assert reasons == {
        TopicPartition("t", 1): SkipReason.ELECTION_NOT_NEEDED,
        TopicPartition("x", 0): SkipReason.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert preferred_election(snap, topics=["u"]).elect == (TopicPartition("u", 0),)


def test_synthetic_cluster_is_seeded_and_rolling_restart_strips_the_last_broker():
    from kafka_rebalance.cluster.synthetic import (
        add_empty_broker,
        rolling_restart,
        synthetic_cluster,
    )

    a = synthetic_cluster(brokers=6, racks=3, partitions=60, topics=3, seed=5)
    assert a == synthetic_cluster(brokers=6, racks=3, partitions=60, topics=3, seed=5)
    assert a != synthetic_cluster(brokers=6, racks=3, partitions=60, topics=3, seed=6)
    assert all(len({r % 3 for r in p.replicas}) == 3 for p in a.partitions)
    after = rolling_restart(a)
    assert not any(p.leader == 5 for p in after.partitions)  # restarted last
    assert all(p.leader in p.isr for p in after.partitions)
    bigger, new = add_empty_broker(a)
    assert new == 6 and len(bigger.brokers) == 7 and bigger.brokers[-1].alive


def test_zk_auto_rebalance_skips_partitions_whose_preferred_cannot_lead():
    # broker 1 prefers 4 partitions, all led by 2 (ratio 1.0 > 10%); in two of them 1 is out of the ISR
    parts = (
        P("a", 0, [1, 2], 2),
        P("a", 1, [1, 2], 2),
        P("a", 2, [1, 2], 2, [2]),
        P("a", 3, [1, 2], 2, [2]),
    )
    snap = ClusterSnapshot((Broker(1), Broker(2)), parts)
    res = auto_leader_rebalance(snap, Controller.ZK)
    assert [e[0].partition for e in res.elected] == [0, 1]
    assert [p.leader for p in res.after.partitions] == [1, 1, 2, 2]
