"""Execution batches: caps, coverage, order, and throttle strings exactly as kafka-reassign-partitions.sh."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.cluster.batches import (
    FOLLOWER_THROTTLED_RATE,
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLED_RATE,
    LEADER_THROTTLED_REPLICAS,
    PartitionMove,
    moves_from_plan,
    parse_log_dirs,
    parse_reassignment,
    plan_batches,
    reassignment_json,
    throttle_for,
)
from kafka_rebalance.errors import InputError


def test_throttle_strings_match_kafka_unit_test():
    # The move map of ReassignPartitionsUnitTest.testMoveMap, expressed as (sources -> new replicas).
    moves = [
        PartitionMove("foo", 0, (1, 2, 3), (1, 2, 5)),
        PartitionMove("foo", 1, (4, 5, 6), (7, 8)),
        PartitionMove("foo", 2, (1, 2), (3, 4)),
        PartitionMove("foo", 3, (1, 2), (5, 6)),
        PartitionMove("foo", 4, (1, 2), (3,)),
        PartitionMove("foo", 5, (1, 2), (3, 4, 5, 6)),
        PartitionMove("bar", 0, (2, 3, 4), (1, 2, 3)),
    ]
    t = throttle_for(moves, 1000)
    topics = t.topic_configs()
    assert (
        topics["foo"][LEADER_THROTTLED_REPLICAS]
        == "0:1,0:2,0:3,1:4,1:5,1:6,2:1,2:2,3:1,3:2,4:1,4:2,5:1,5:2"
    )
    assert topics["bar"][LEADER_THROTTLED_REPLICAS] == "0:2,0:3,0:4"
    assert (
        topics["foo"][FOLLOWER_THROTTLED_REPLICAS]
        == "0:5,1:7,1:8,2:3,2:4,3:5,3:6,4:3,5:3,5:4,5:5,5:6"
    )
    assert topics["bar"][FOLLOWER_THROTTLED_REPLICAS] == "0:1"
    assert t.brokers == (1, 2, 3, 4, 5, 6, 7, 8)
    brokers = t.broker_configs()
    assert set(brokers) == {1, 2, 3, 4, 5, 6, 7, 8}
    assert brokers[7] == {LEADER_THROTTLED_RATE: "1000", FOLLOWER_THROTTLED_RATE: "1000"}


def test_throttle_lists_sort_as_strings_like_treeset():
    moves = [PartitionMove("t", 10, (1,), (2,)), PartitionMove("t", 2, (1,), (3,))]
    t = throttle_for(moves, 5)
    assert t.topic_configs()["t"][LEADER_THROTTLED_REPLICAS] == "10:1,2:1"
    assert t.topic_configs()["t"][FOLLOWER_THROTTLED_REPLICAS] == "10:2,2:3"


def test_no_throttle_sets_nothing():
    t = throttle_for([PartitionMove("t", 0, (1,), (2,))], None)
    assert t.broker_configs() == {} and t.topic_configs() == {}


def test_reassignment_json_layout_is_the_tools():
    doc = reassignment_json(
        [PartitionMove("b", 1, (1, 2), (3, 2)), PartitionMove("a", 0, (1,), (2,))]
    )
    assert doc == {
        "version": 1,
        "partitions": [
            {"topic": "a", "partition": 0, "replicas": [2], "log_dirs": ["any"]},
            {"topic": "b", "partition": 1, "replicas": [3, 2], "log_dirs": ["any", "any"]},
        ],
    }


def test_largest_first_and_deterministic():
    moves = [
        PartitionMove("t", p, (1,), (2,), size_bytes=float(s))
        for p, s in enumerate([5, 50, 20, 50])
    ]
    batches = plan_batches(moves, max_moves_per_broker=1)
    assert [b.moves[0].partition for b in batches] == [1, 3, 2, 0]
    assert plan_batches(list(reversed(moves)), max_moves_per_broker=1) == batches


def test_unchanged_partitions_are_dropped_and_duplicates_rejected():
    same = PartitionMove("t", 0, (1, 2), (1, 2))
    assert plan_batches([same]) == []
    with pytest.raises(InputError):
        plan_batches([PartitionMove("t", 0, (1,), (2,)), PartitionMove("t", 0, (1,), (3,))])
    for kw, flag in (
        ({"max_moves_per_broker": 0}, "--max-moves-per-broker"),
        ({"max_moves": 0}, "--max-moves"),
        ({"throttle": -1}, "--throttle"),
    ):
        with pytest.raises(InputError) as err:
            plan_batches([same], **kw)
        assert err.value.field == flag  # named as the user typed it, not as the Python keyword


def test_parse_reassignment_validates_like_the_tool():
    assert parse_reassignment(
        {"version": 1, "partitions": [{"topic": "a", "partition": 0, "replicas": [1, 2]}]}
    ) == {("a", 0): (1, 2)}
    for bad in (
        {"partitions": [{"topic": "a", "partition": 0, "replicas": [1, 1]}]},
        {"partitions": [{"topic": "a", "partition": 0, "replicas": []}]},
        {
            "partitions": [
                {"topic": "a", "partition": 0, "replicas": [1]},
                {"topic": "a", "partition": 0, "replicas": [2]},
            ]
        },
        {"version": 2, "partitions": []},
        [],
    ):
        with pytest.raises(InputError):
            parse_reassignment(bad)
    with pytest.raises(InputError):
        moves_from_plan({("x", 0): (1,)}, {("a", 0): (2,)})


@st.composite
def plans(draw):
    brokers = list(range(draw(st.integers(2, 7))))
    n = draw(st.integers(0, 25))
    moves = []
    for p in range(n):
        rf = draw(st.integers(1, len(brokers)))
        old = draw(st.permutations(brokers))[:rf]
        new = draw(st.permutations(brokers))[:rf]
        size = draw(st.integers(0, 10**6))
        moves.append(PartitionMove("t" + str(p % 3), p, tuple(old), tuple(new), float(size)))
    return moves


@settings(max_examples=60, deadline=None)
@given(plans(), st.one_of(st.none(), st.integers(1, 4)), st.one_of(st.none(), st.integers(1, 6)))
def test_caps_respected_and_every_move_in_exactly_one_batch(moves, per_broker, cluster):
    batches = plan_batches(moves, max_moves_per_broker=per_broker, max_moves=cluster, throttle=100)
    placed = [(m.topic, m.partition) for b in batches for m in b.moves]
    expected = sorted((m.topic, m.partition) for m in moves if m.changes)
    assert sorted(placed) == expected and len(placed) == len(set(placed))
    for i, b in enumerate(batches):
        assert b.index == i and b.moves
        if cluster is not None:
            assert len(b.moves) <= cluster
        if per_broker is not None:
            assert all(v <= per_broker for v in b.broker_load().values())
        # The throttle covers exactly the batch's brokers and topics.
        assert set(b.throttle.brokers) == {
            x for m in b.moves for x in (*m.old_replicas, *m.new_replicas)
        }
        assert set(b.throttle.topic_configs()) == {m.topic for m in b.moves}


def _reference_batches(moves, per_broker, cluster):
    """The obvious algorithm: fill batch 1 greedily from the ordered list, then batch 2 from the rest, ..."""
    from kafka_rebalance.cluster.batches import move_order

    pending = sorted((m for m in moves if m.changes), key=move_order)
    out = []
    while pending:
        taken, rest, load = [], [], {}
        for m in pending:
            if (cluster is None or len(taken) < cluster) and (
                per_broker is None or all(load.get(b, 0) < per_broker for b in m.brokers_busy)
            ):
                taken.append(m)
                for b in m.brokers_busy:
                    load[b] = load.get(b, 0) + 1
            else:
                rest.append(m)
        out.append(tuple(taken))
        pending = rest
    return out


@settings(max_examples=60, deadline=None)
@given(plans(), st.one_of(st.none(), st.integers(1, 3)), st.one_of(st.none(), st.integers(1, 5)))
def test_fast_first_fit_equals_the_obvious_greedy(moves, per_broker, cluster):
    fast = plan_batches(moves, max_moves_per_broker=per_broker, max_moves=cluster)
    assert [b.moves for b in fast] == _reference_batches(moves, per_broker, cluster)


def test_no_throttle_rate_on_an_offline_broker_but_its_replicas_stay_listed():
    moves = [PartitionMove("t", 3, (5, 1, 2), (2, 4, 6))]
    t = throttle_for(moves, 1000, offline={5})
    assert t.brokers == (1, 2, 4, 6) and 5 not in t.broker_configs()
    assert t.topic_configs()["t"][LEADER_THROTTLED_REPLICAS] == "3:1,3:2,3:5"
    assert all(
        5 not in b.throttle.brokers
        for b in plan_batches(moves, throttle=10, offline=frozenset({5}))
    )


def test_log_dirs_survive_batching_into_the_batch_json():
    doc = {
        "version": 1,
        "partitions": [
            {"topic": "t", "partition": 0, "replicas": [2, 1], "log_dirs": ["/data/d2", "any"]},
            {
                "topic": "t",
                "partition": 1,
                "replicas": [1, 2],
                "log_dirs": ["any", "C:\\kafka\\d1"],
            },
            {"topic": "t", "partition": 2, "replicas": [2, 1]},
        ],
    }
    dirs = parse_log_dirs(doc)
    assert dirs == {("t", 0): ("/data/d2", "any"), ("t", 1): ("any", "C:\\kafka\\d1")}
    moves = moves_from_plan(
        parse_reassignment(doc), {("t", p): (1, 2) for p in range(3)}, log_dirs=dirs
    )
    assert moves[0].log_dir_moves == ((2, "/data/d2"),) and moves[2].log_dirs is None
    assert (
        moves[1].changes and not moves[1].brokers_busy
    )  # a log-dir-only move changes, takes no broker slot
    batches = plan_batches(moves, max_moves_per_broker=1)
    out = {
        (e["topic"], e["partition"]): e["log_dirs"]
        for b in batches
        for e in b.reassignment_json()["partitions"]
    }
    assert out == {
        ("t", 0): ["/data/d2", "any"],
        ("t", 1): ["any", "C:\\kafka\\d1"],
        ("t", 2): ["any", "any"],
    }


@pytest.mark.parametrize("dirs", [["d2", "any"], ["", "any"], ["./d", "any"], ["ANY", "any"]])
def test_log_dirs_must_be_any_or_absolute(dirs):
    doc = {
        "version": 1,
        "partitions": [
            {"topic": "t", "partition": 0, "replicas": [1]},
            {"topic": "t", "partition": 1, "replicas": [2, 1], "log_dirs": dirs},
        ],
    }
    with pytest.raises(InputError) as err:
        parse_log_dirs(doc)
    # an empty name is refused by the typed-field reader, on the element itself
    assert err.value.field in ("partitions[1].log_dirs", "partitions[1].log_dirs[0]")
    assert repr(dirs[0]) in err.value.message or json.dumps(dirs[0]) in err.value.message


def test_unknown_partition_names_the_plan_entry():
    with pytest.raises(InputError, match="Unable to find partition: x-0") as err:
        moves_from_plan({("a", 0): (1,), ("x", 0): (1,)}, {("a", 0): (2,)})
    assert err.value.field == "partitions[1]"
