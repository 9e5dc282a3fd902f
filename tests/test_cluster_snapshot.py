"""Snapshot JSON, `kafka-topics --describe` text and Kafka tool JSON: parsing and clear errors."""

from __future__ import annotations

import json

import pytest

from kafka_rebalance.cluster import kafka_json
from kafka_rebalance.cluster.snapshot import (
    parse_describe_text,
    parse_snapshot,
    parse_snapshot_text,
    snapshot_to_json,
)
from kafka_rebalance.errors import InputError
from kafka_rebalance.model import ClusterSnapshot, TopicPartition

DOC = {
    "brokers": [
        {"id": 1, "rack": "a", "capacity": {"disk_bytes": 1e12}},
        {"id": 2, "rack": "b"},
        {"id": 3, "rack": "c", "alive": False},
    ],
    "partitions": [
        {
            "topic": "orders",
            "partition": 0,
            "replicas": [1, 2, 3],
            "leader": 1,
            "isr": [1, 2],
            "load": {"bytes_in": 1e5, "bytes_out": 3e5, "messages_in": 120.0, "size_bytes": 2e9},
        },
        {"topic": "orders", "partition": 1, "replicas": [2, 3, 1], "leader": None, "isr": []},
        {"topic": "audit", "partition": 0, "replicas": [3, 1]},
    ],
}


def test_parse_snapshot_fields_and_defaults():
    snap = parse_snapshot(DOC)
    assert [b.id for b in snap.brokers] == [1, 2, 3]
    assert snap.brokers[0].disk_bytes == 1e12 and snap.brokers[2].alive is False
    p0, p1, p2 = snap.partitions
    assert p0.replicas == (1, 2, 3) and p0.leader == 1 and p0.isr == (1, 2)
    assert p0.load.bytes_out == 3e5 and p0.preferred_leader == 1
    assert p1.leader is None and p1.isr == ()
    # leader and isr absent: a healthy partition led by its preferred replica
    assert p2.leader == 3 and p2.isr == (3, 1) and p2.load is None


def test_snapshot_round_trip():
    snap = parse_snapshot(DOC)
    assert parse_snapshot(snapshot_to_json(snap)) == snap


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda d: d["partitions"][0].__setitem__("replicas", [1, 1, 2]), "partitions[0].replicas"),
        (lambda d: d["partitions"][2].__setitem__("replicas", [3, 9]), "partitions[2].replicas"),
        (lambda d: d["partitions"][1].__setitem__("replicas", "1,2"), "partitions[1].replicas"),
        (lambda d: d["partitions"][0].__setitem__("leader", 7), "partitions[0].leader"),
        (lambda d: d["partitions"][0].__setitem__("isr", [1, 5]), "partitions[0].isr"),
        (
            lambda d: d["partitions"][0]["load"].__setitem__("bytes_in", -1),
            "partitions[0].load.bytes_in",
        ),
        (lambda d: d["partitions"][0].__setitem__("partition", -1), "partitions[0].partition"),
        (lambda d: d["partitions"][1].__setitem__("partition", 0), "partitions[1]"),
        (lambda d: d["brokers"][1].__setitem__("id", 1), "brokers[1].id"),
        (lambda d: d["brokers"][0].__setitem__("alive", "yes"), "brokers[0].alive"),
        (lambda d: d["brokers"][0].__setitem__("colour", "red"), "brokers[0].colour"),
        (lambda d: d.pop("partitions"), "partitions"),
    ],
)
def test_bad_snapshot_names_the_field(mutate, field):
    import copy

    doc = copy.deepcopy(DOC)
    mutate(doc)
    with pytest.raises(InputError) as err:
        parse_snapshot(doc)
    assert err.value.field == field


DESCRIBE = """\
Topic: orders\tTopicId: sP5xX6QxQXa1mmd5KqfB4g\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: segment.bytes=1073741824
\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\tElr: \tLastKnownElr:
\tTopic: orders\tPartition: 1\tLeader: none\tReplicas: 3,1,2\tIsr: 3\tOffline: 3
\tTopic: orders\tPartition: 2\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,1\tOffline: 3
Topic:legacy	PartitionCount:1	ReplicationFactor:2	Configs:
	Topic: legacy	Partition: 0	Leader: -1	Replicas: 4,1	Isr:
"""


def test_parse_describe_text():
    snap = parse_describe_text(DESCRIBE)
    # 3 is listed Offline; 4 holds a replica but is in no ISR anywhere: that does not make it dead
    assert [(b.id, b.alive) for b in snap.brokers] == [(1, True), (2, True), (3, False), (4, True)]
    assert snap.alive_inferred == {1, 2, 4}  # 3's state was stated by the text
    ps = {p.tp: p for p in snap.partitions}
    assert ps[TopicPartition("orders", 0)].isr == (1, 2, 3)
    assert ps[TopicPartition("orders", 1)].leader is None
    assert ps[TopicPartition("orders", 2)].replicas == (2, 3, 1) and ps[
        TopicPartition("orders", 2)
    ].isr == (2, 1)
    assert (
        ps[TopicPartition("legacy", 0)].leader is None and ps[TopicPartition("legacy", 0)].isr == ()
    )
    assert parse_snapshot_text(DESCRIBE) == snap


@pytest.mark.parametrize(
    "text, field",
    [
        ("\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,x\tIsr: 1", "line 1: Replicas"),
        ("\tTopic: t\tPartition: 0\tLeader: 5\tReplicas: 1,2\tIsr: 1", "line 1: Leader"),
        ("\tTopic: t\tPartition: 0\tLeader: 1\tIsr: 1", "line 1: Replicas"),
        ("\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 3", "line 1: Isr"),
        ("x\n\tTopic: t\tPartition: zero\tLeader: 1\tReplicas: 1\tIsr: 1", "line 2: Partition"),
    ],
)
def test_bad_describe_text_names_the_line(text, field):
    with pytest.raises(InputError) as err:
        parse_describe_text(text)
    assert err.value.field == field


def test_describe_text_without_partitions_is_an_error():
    with pytest.raises(InputError):
        parse_describe_text("nothing here\n")


def test_kafka_json_round_trips_and_errors():
    tps = [TopicPartition("a", 0), TopicPartition("b", 3)]
    assert kafka_json.parse_election_json(kafka_json.election_json(tps)) == tps
    with pytest.raises(InputError) as err:
        kafka_json.parse_election_json({"partitions": [{"topic": "a", "partition": 0}] * 2})
    assert err.value.field == "partitions[1]"
    with pytest.raises(InputError) as err:
        kafka_json.parse_election_json({"partitions": [{"topic": "a"}]})
    assert err.value.field == "partitions[0].partition"

    entries = [
        kafka_json.Reassignment("a", 0, (1, 2, 3)),
        kafka_json.Reassignment("b", 1, (2, 1), ("/d1", "/d2")),
    ]
    doc = kafka_json.reassignment_json(entries)
    assert doc["version"] == 1 and doc["partitions"][0]["log_dirs"] == ["any", "any", "any"]
    back = kafka_json.parse_reassignment_json(doc)
    assert back[0].replicas == (1, 2, 3) and back[1].log_dirs == ("/d1", "/d2")
    for bad, field in [
        (
            {"version": 1, "partitions": [{"topic": "a", "partition": 0, "replicas": [1, 1]}]},
            "partitions[0].replicas",
        ),
        (
            {
                "version": 1,
                "partitions": [
                    {"topic": "a", "partition": 0, "replicas": [1, 2], "log_dirs": ["any"]}
                ],
            },
            "partitions[0].log_dirs",
        ),
        ({"version": 2, "partitions": []}, "version"),
    ]:
        with pytest.raises(InputError) as err:
            kafka_json.parse_reassignment_json(bad)
        assert err.value.field == field

    assert kafka_json.parse_topics_to_move_json(kafka_json.topics_to_move_json(["x", "y"])) == [
        "x",
        "y",
    ]
    with pytest.raises(InputError) as err:
        kafka_json.parse_topics_to_move_json({"version": 1, "topics": [{"name": "x"}]})
    assert err.value.field == "topics[0].topic"


def _lagging_line(p: int) -> str:
    reps = [1 + p % 4, 1 + (p + 1) % 4]
    isr = [r for r in reps if r != 3]
    return (
        f"\tTopic: t\tPartition: {p}\tLeader: {isr[0]}\tReplicas: {','.join(map(str, reps))}\t"
        f"Isr: {','.join(map(str, isr))}\tElr: \tLastKnownElr: \n"
    )


# 8 partitions spread evenly over brokers 1-4 (4 replicas each); broker 3 lags: it is in no ISR.
LAGGING = (
    "Topic: t\tTopicId: x\tPartitionCount: 8\tReplicationFactor: 2\tConfigs: min.insync.replicas=1\n"
    + "".join(_lagging_line(p) for p in range(8))
)


def test_a_broker_in_no_isr_is_not_taken_as_dead():
    """Broker 3 lags on every partition (in no ISR): the text does not say it is down."""
    snap = parse_describe_text(LAGGING)
    assert [(b.id, b.alive) for b in snap.brokers] == [(1, True), (2, True), (3, True), (4, True)]
    assert snap.alive_inferred == {1, 2, 3, 4}
    doc = snapshot_to_json(snap)
    assert [b.get("alive_inferred") for b in doc["brokers"]] == [True] * 4
    back = parse_snapshot(
        json.loads(json.dumps(doc))
    )  # the mark survives a describe --output round trip
    assert back == snap and back.alive_inferred == {1, 2, 3, 4}
    plain = parse_snapshot({"brokers": [{"id": 1}], "partitions": []})
    assert (
        type(plain) is ClusterSnapshot
        and "alive_inferred" not in snapshot_to_json(plain)["brokers"][0]
    )


def test_leaderless_partitions_name_their_dead_brokers():
    text = (
        "\tTopic: t\tPartition: 0\tLeader: none\tReplicas: 3,1,2\tIsr: 3\tElr: N/A\tLastKnownElr: N/A\n"
        "\tTopic: t\tPartition: 1\tLeader: none\tReplicas: 4,1\tIsr: \tElr: 4\tLastKnownElr: \n"
        "\tTopic: t\tPartition: 2\tLeader: 1\tReplicas: 1,2,5\tIsr: 1,2\n"
    )
    snap = parse_describe_text(text)
    # 3 kept as the last ISR member and 4 as the only ELR member of leaderless partitions: the controller
    # would have elected them if they were up. 5 is only out of sync.
    assert {b.id: b.alive for b in snap.brokers} == {1: True, 2: True, 3: False, 4: False, 5: True}


def test_plan_full_from_describe_text_keeps_a_lagging_brokers_replicas(tmp_path, capsys):
    from kafka_rebalance import cli

    sf, out = tmp_path / "describe.txt", tmp_path / "plan.json"
    sf.write_text(LAGGING)
    assert (
        cli.main(
            [
                "cluster",
                "plan",
                "--snapshot",
                str(sf),
                "--mode",
                "full",
                "--output",
                str(out),
                "--format",
                "json",
            ]
        )
        == 0
    )
    capsys.readouterr()
    after = {
        (e["topic"], e["partition"]): e["replicas"]
        for e in json.loads(out.read_text())["partitions"]
    }
    placement = {
        (p.topic, p.partition): list(p.replicas) for p in parse_describe_text(LAGGING).partitions
    }
    placement.update(after)
    assert (
        sum(3 in reps for reps in placement.values()) == 4
    )  # balanced already: nothing moved off broker 3
