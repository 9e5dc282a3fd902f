"""The --generate emulation reproduces Kafka's AdminUtils expectations and java.util.Random."""

from __future__ import annotations

import pytest

from kafka_rebalance.cluster.generate import (
    BrokerMetadata,
    JavaRandom,
    assign_replicas_to_brokers,
    generate_reassignment,
    rack_alternated_broker_list,
)
from kafka_rebalance.cluster.synthetic import synthetic_cluster
from kafka_rebalance.errors import InputError


def test_java_random_matches_the_jdk():
    # values printed by java.util.Random(42) on a JDK: nextInt(), nextInt(10), nextInt(100), nextInt(7),
    # nextInt(1 << 20), nextInt(1000000007)
    r = JavaRandom(42)
    assert r._next(32) == -1170105035
    assert [
        r.next_int(10),
        r.next_int(100),
        r.next_int(7),
        r.next_int(1 << 20),
        r.next_int(1000000007),
    ] == [3, 48, 3, 323715, 595021505]


def test_rack_alternated_list_from_admin_rack_aware_test():
    rack_map = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_broker_list(rack_map) == [0, 3, 1, 5, 4, 2]
    del rack_map[5]
    assert rack_alternated_broker_list(rack_map) == [0, 3, 1, 4, 2]


def test_rack_aware_assignment_from_admin_rack_aware_test():
    rack_map = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    metas = [BrokerMetadata(b, r) for b, r in rack_map.items()]
    got = assign_replicas_to_brokers(metas, 7, 3, 0, 0)
    assert got == {
        0: [0, 3, 1],
        1: [3, 1, 5],
        2: [1, 5, 4],
        3: [5, 4, 2],
        4: [4, 2, 0],
        5: [2, 0, 3],
        6: [0, 4, 2],
    }


def test_rack_unaware_assignment_from_admin_rack_aware_test():
    metas = [BrokerMetadata(b) for b in range(5)]
    got = assign_replicas_to_brokers(metas, 10, 3, 0, -1)
    assert got == {
        0: [0, 1, 2],
        1: [1, 2, 3],
        2: [2, 3, 4],
        3: [3, 4, 0],
        4: [4, 0, 1],
        5: [0, 2, 3],
        6: [1, 3, 4],
        7: [2, 4, 0],
        8: [3, 0, 1],
        9: [4, 1, 2],
    }


def test_invalid_parameters_are_rejected_like_kafka():
    metas = [BrokerMetadata(b) for b in range(5)]
    with pytest.raises(InputError):
        assign_replicas_to_brokers(metas, 0, 1)
    with pytest.raises(InputError):
        assign_replicas_to_brokers(metas, 10, 0)
    with pytest.raises(InputError):
        assign_replicas_to_brokers(metas, 10, 6)
    with pytest.raises(InputError):
        assign_replicas_to_brokers([BrokerMetadata(0, "a"), BrokerMetadata(1)], 2, 1)


def test_rack_aware_every_partition_spans_all_racks_and_is_even():
    metas = [BrokerMetadata(b, f"r{b % 3}") for b in range(9)]
    got = assign_replicas_to_brokers(metas, 90, 3, rng=JavaRandom(5))
    counts = {b: 0 for b in range(9)}
    leaders = {b: 0 for b in range(9)}
    for reps in got.values():
        assert len({r % 3 for r in reps}) == 3
        leaders[reps[0]] += 1
        for r in reps:
            counts[r] += 1
    assert set(counts.values()) == {30} and set(leaders.values()) == {10}


def test_generate_is_seeded_and_moves_most_replicas():
    snap = synthetic_cluster(brokers=6, racks=3, partitions=120, seed=2)
    a = generate_reassignment(snap, seed=1)
    assert a == generate_reassignment(snap, seed=1)
    assert len(a) == 120 and all(len(set(r)) == 3 for r in a.values())
