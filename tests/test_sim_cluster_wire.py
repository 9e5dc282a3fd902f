"""The simulated cluster through the real kafka-python KafkaAdminClient and through our own wire codec."""

from __future__ import annotations

import socket
import time

import pytest

from kafka_rebalance.kafka.admin import (
    APPEND,
    BROKER,
    DELETE,
    SET,
    TOPIC,
    AdminError,
    KafkaAdmin,
    snapshot_from_bootstrap,
)
from kafka_rebalance.kafka.sim_cluster import SimCluster
from kafka_rebalance.kafka.wire import Reader, WireClient, frame
from kafka_rebalance.kafka.wire import messages as M
from kafka_rebalance.kafka.wire.protocol import frame_size
from kafka_rebalance.model import Broker, ClusterSnapshot, PartitionLoad, PartitionReplicas

MB = 1_000_000


class FakeClock:
    """Virtual time the test moves by hand: copies progress only when we say so."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def make_snapshot() -> ClusterSnapshot:
    brokers = tuple(Broker(i, rack="abc"[i % 3]) for i in range(1, 7)) + (
        Broker(7, None, alive=False),
    )
    parts = []
    for p in range(6):
        reps = (1 + p % 6, 1 + (p + 1) % 6, 1 + (p + 2) % 6)
        parts.append(
            PartitionReplicas(
                "orders", p, reps, reps[0], reps, PartitionLoad(size_bytes=float((p + 1) * MB))
            )
        )
    # Led by a non-preferred replica (the leader skew an election fixes).
    parts.append(
        PartitionReplicas(
            "payments", 0, (1, 2, 3), 2, (1, 2, 3), PartitionLoad(size_bytes=4.0 * MB)
        )
    )
    # Preferred replica out of the ISR: the election must fail as Kafka's does.
    parts.append(
        PartitionReplicas("payments", 1, (4, 5, 6), 5, (5, 6), PartitionLoad(size_bytes=4.0 * MB))
    )
    # A replica on the dead broker 7.
    parts.append(
        PartitionReplicas("payments", 2, (2, 7), 2, (2,), PartitionLoad(size_bytes=3.0 * MB))
    )
    return ClusterSnapshot(brokers, tuple(parts))


def observable(s: ClusterSnapshot):
    """What the wire carries: broker id/rack/alive and placement, leader, ISR and size per partition."""
    return (
        [(b.id, b.rack, b.alive) for b in sorted(s.brokers, key=lambda b: b.id)],
        [
            (
                p.topic,
                p.partition,
                p.replicas,
                p.leader,
                p.isr,
                p.load.size_bytes if p.load else None,
            )
            for p in sorted(s.partitions, key=lambda p: (p.topic, p.partition))
        ],
    )


@pytest.fixture()
def sim():
    clock = FakeClock()
    cluster = SimCluster(make_snapshot(), clock=clock, broker_bandwidth=10 * MB).start()
    cluster.clock = clock
    yield cluster
    cluster.stop()


def test_snapshot_through_kafka_python_equals_backing_snapshot(sim):
    got = snapshot_from_bootstrap(sim.bootstrap)
    assert observable(got) == observable(make_snapshot())


def test_kafka_python_sees_every_broker_rack_and_controller(sim):
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=sim.bootstrap, request_timeout_ms=5000)
    try:
        cluster = admin.describe_cluster()
        assert [(b["node_id"], b["rack"], b["port"]) for b in cluster["brokers"]] == [
            (i, "abc"[i % 3], sim.ports[i]) for i in range(1, 7)
        ]
        assert cluster["controller_id"] == 1
        topics = {t["topic"]: t for t in admin.describe_topics(["payments"])}
        p2 = [p for p in topics["payments"]["partitions"] if p["partition"] == 2][0]
        assert p2["offline_replicas"] == [7] and p2["isr"] == [2]
        # Each broker reports only its own replicas in DescribeLogDirs.
        dirs = admin.describe_log_dirs()
        assert all(d[0] == 0 for d in dirs.log_dirs)
    finally:
        admin.close()
    assert {k for _, k, _ in sim.requests} >= {M.API_VERSIONS, M.METADATA, M.DESCRIBE_LOG_DIRS}


def test_own_codec_describe_cluster_and_api_versions(sim):
    with WireClient("127.0.0.1", sim.ports[3]) as c:
        for v in (0, 3, 4):
            resp = c.call(
                M.API_VERSIONS, v, {"client_software_name": "t", "client_software_version": "1"}
            )
            assert resp["error_code"] == 0
            assert {
                k["api_key"]: (k["min_version"], k["max_version"]) for k in resp["api_keys"]
            } == M.SUPPORTED
        for v in (0, 1):
            dc = c.call(M.DESCRIBE_CLUSTER, v, {"include_cluster_authorized_operations": False})
            assert dc["error_code"] == 0 and dc["controller_id"] == 1
            assert [(b["broker_id"], b["rack"]) for b in dc["brokers"]] == [
                (i, "abc"[i % 3]) for i in range(1, 7)
            ]
        md = c.call(M.METADATA, 1, {"topics": [{"name": "nope"}]})
        assert md["topics"][0]["error_code"] == 3
        # IncrementalAlterConfigs v1 is flexible (compact strings, tagged fields): Java's admin would send it.
        ia = c.call(
            M.INCREMENTAL_ALTER_CONFIGS,
            1,
            {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": "orders",
                        "configs": [
                            {
                                "name": "follower.replication.throttled.replicas",
                                "config_operation": 0,
                                "value": "1:4",
                            }
                        ],
                    }
                ]
            },
        )
        assert ia["responses"][0]["error_code"] == 0
        assert sim.state.topic_configs["orders"] == {
            "follower.replication.throttled.replicas": "1:4"
        }
        logs = c.call(
            M.DESCRIBE_LOG_DIRS, 1, {"topics": [{"topic": "orders", "partitions": [0, 1, 5]}]}
        )
        sizes = {
            p["partition_index"]: p["partition_size"]
            for p in logs["results"][0]["topics"][0]["partitions"]
        }
        assert sizes == {0: 1 * MB, 1: 2 * MB}  # broker 3 holds orders-0 and orders-1, not orders-5
    # An ApiVersions version the broker does not know: v0 body with UNSUPPORTED_VERSION, as Kafka answers.
    with socket.create_connection(("127.0.0.1", sim.ports[1]), timeout=5) as s:
        head = M.REQUEST_HEADER.encode(
            2,
            {
                "request_api_key": 18,
                "request_api_version": 9,
                "correlation_id": 5,
                "client_id": "x",
            },
        )
        s.sendall(frame(head + M.API_VERSIONS_REQUEST.encode(4, {})))
        r = Reader(s.recv(frame_size(s.recv(4, socket.MSG_WAITALL)), socket.MSG_WAITALL))
        assert r.int32() == 5
        assert M.API_VERSIONS_RESPONSE.decode(0, r)["error_code"] == 35


def test_elect_leaders_as_kafka(sim):
    from kafka import KafkaAdminClient
    from kafka.errors import PreferredLeaderNotAvailableError

    with KafkaAdmin(sim.bootstrap) as admin:
        res = admin.elect_preferred(
            [("payments", 0), ("payments", 1), ("orders", 0), ("orders", 99)]
        )
        assert res[("payments", 0)][0] == 0  # elected
        assert res[("payments", 1)][0] == 80  # PREFERRED_LEADER_NOT_AVAILABLE (not in ISR)
        assert res[("orders", 0)][0] == 84  # ELECTION_NOT_NEEDED
        assert res[("orders", 99)][0] == 3  # UNKNOWN_TOPIC_OR_PARTITION
    snap = sim.snapshot()
    lead = {(p.topic, p.partition): p.leader for p in snap.partitions}
    assert lead[("payments", 0)] == 1 and lead[("payments", 1)] == 5
    # kafka-python's own call: ELECTION_NOT_NEEDED passes, PREFERRED_LEADER_NOT_AVAILABLE raises.
    client = KafkaAdminClient(bootstrap_servers=sim.bootstrap, request_timeout_ms=5000)
    try:
        resp = client.perform_leader_election(0, {"payments": [0]})
        assert resp.replication_election_results[0][1][0][1] == 84
        with pytest.raises(PreferredLeaderNotAvailableError):
            client.perform_leader_election(0, {"payments": [1]})
    finally:
        client.close()


def test_alter_and_list_reassignments_copy_at_the_throttled_rate(sim):
    with KafkaAdmin(sim.bootstrap) as admin:
        # orders-2 (3 MB) moves from [3,4,5] to [6,4,1]: adds 6 and 1, removes 3 and 5; leader 3 leaves.
        res = admin.alter_partition_reassignments(
            {
                ("orders", 2): [6, 4, 1],
                ("orders", 3): [1, 1, 2],
                ("orders", 4): [5, 9, 1],
                ("ghost", 0): [1],
            }
        )
        assert res[("orders", 2)] == (0, None)
        assert (
            res[("orders", 3)][0] == 39 and res[("orders", 4)][0] == 39
        )  # INVALID_REPLICA_ASSIGNMENT
        assert res[("ghost", 0)][0] == 3
        ongoing = admin.list_partition_reassignments()
        assert set(ongoing) == {("orders", 2)}
        r = ongoing[("orders", 2)]
        assert r.replicas == (6, 4, 1, 3, 5) and r.adding == (6, 1) and r.removing == (3, 5)
        # Throttle exactly as the reassign tool would: 1 MB/s on the leader 3 and on the followers 6 and 1.
        for b in (1, 3, 4, 5, 6):
            admin.incremental_alter_configs(
                BROKER,
                str(b),
                [
                    ("leader.replication.throttled.rate", SET, str(MB)),
                    ("follower.replication.throttled.rate", SET, str(MB)),
                ],
            )
        admin.incremental_alter_configs(
            TOPIC,
            "orders",
            [
                ("leader.replication.throttled.replicas", SET, "2:3,2:4,2:5"),
                ("follower.replication.throttled.replicas", SET, "2:1,2:6"),
            ],
        )
        # Two copies leave broker 3 and share its 1 MB/s: 0.5 MB/s each, 3 MB take 6 virtual seconds.
        sim.clock.t = 2.0
        snap = sim.snapshot()
        assert sim.state.reassignments[("orders", 2)].copied == {6: 1.0 * MB, 1: 1.0 * MB}
        assert [p for p in snap.partitions if (p.topic, p.partition) == ("orders", 2)][
            0
        ].replicas == (6, 4, 1, 3, 5)
        sim.clock.t = 5.9
        assert set(admin.list_partition_reassignments()) == {("orders", 2)}
        sim.clock.t = 6.1
        assert admin.list_partition_reassignments() == {}
    p = [p for p in sim.snapshot().partitions if (p.topic, p.partition) == ("orders", 2)][0]
    assert p.replicas == (6, 4, 1) and set(p.isr) == {6, 4, 1}
    assert p.leader == 6  # the old leader 3 left: the first target replica in the ISR leads


def test_cancel_reassignment_reverts(sim):
    with KafkaAdmin(sim.bootstrap) as admin:
        assert admin.alter_partition_reassignments({("orders", 0): None})[("orders", 0)][0] == 85
        admin.alter_partition_reassignments({("orders", 0): [4, 5, 6]})
        sim.clock.t = 0.01
        assert set(admin.list_partition_reassignments()) == {("orders", 0)}
        assert admin.alter_partition_reassignments({("orders", 0): None})[("orders", 0)] == (
            0,
            None,
        )
        assert admin.list_partition_reassignments() == {}
    p = [p for p in sim.snapshot().partitions if (p.topic, p.partition) == ("orders", 0)][0]
    assert p.replicas == (1, 2, 3) and p.leader == 1


def test_throttle_configs_through_both_alter_apis(sim):
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    with KafkaAdmin(sim.bootstrap) as admin:
        admin.incremental_alter_configs(
            BROKER, "2", [("leader.replication.throttled.rate", SET, "5000")]
        )
        admin.incremental_alter_configs(
            TOPIC, "orders", [("leader.replication.throttled.replicas", SET, "0:1")]
        )
        admin.incremental_alter_configs(
            TOPIC, "orders", [("leader.replication.throttled.replicas", APPEND, "1:2")]
        )
        assert admin.describe_configs(TOPIC, "orders")["leader.replication.throttled.replicas"] == (
            "0:1,1:2",
            False,
        )
        assert admin.describe_configs(BROKER, "2")["leader.replication.throttled.rate"] == (
            "5000",
            False,
        )
        assert admin.describe_configs(BROKER, "2")["follower.replication.throttled.rate"][1] is True
        with pytest.raises(AdminError, match="InvalidConfiguration"):
            admin.incremental_alter_configs(
                TOPIC, "orders", [("leader.replication.throttled.replicas", SET, "x")]
            )
        admin.incremental_alter_configs(
            BROKER, "2", [("leader.replication.throttled.rate", DELETE, None)]
        )
        assert sim.state.broker_configs[2] == {}
    # kafka-python's legacy AlterConfigs replaces the topic's whole dynamic set.
    client = KafkaAdminClient(bootstrap_servers=sim.bootstrap, request_timeout_ms=5000)
    try:
        resp = client.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, "orders", configs={"retention.ms": "1000"})]
        )
        assert resp.resources[0][0] == 0
        assert sim.state.topic_configs["orders"] == {"retention.ms": "1000"}
        described = client.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, "orders", configs={"retention.ms": None})]
        )
        entries = described[0].resources[0][4]
        assert [(e[0], e[1]) for e in entries] == [("retention.ms", "1000")]
    finally:
        client.close()


def test_sim_refuses_non_loopback():
    with pytest.raises(ValueError):
        SimCluster(make_snapshot(), host="0.0.0.0")


# ---------------------------------------------------------------------------
# The codec on its own: round trips, compact encodings, tagged fields, and agreement with kafka-python.

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kafka_rebalance.kafka.wire.codec import F, Message, Versions, Writer  # noqa: E402

_names = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=0x2FF), max_size=12)
_ints = st.lists(st.integers(-(2**31), 2**31 - 1), max_size=5)


@settings(max_examples=60, deadline=None)
@given(
    _names,
    st.one_of(st.none(), _ints),
    st.lists(st.tuples(st.integers(0, 2**31 - 1), _ints), max_size=4),
)
def test_list_reassignments_response_round_trips(name, maybe, parts):
    msg = M.LIST_PARTITION_REASSIGNMENTS_RESPONSE
    body = {
        "throttle_time_ms": 7,
        "error_code": 0,
        "error_message": None,
        "topics": [
            {
                "name": name,
                "partitions": [
                    {
                        "partition_index": i,
                        "replicas": r,
                        "adding_replicas": r[:1],
                        "removing_replicas": [],
                    }
                    for i, r in parts
                ],
            }
        ],
    }
    assert msg.decode(0, msg.encode(0, body)) == body
    req = M.ALTER_PARTITION_REASSIGNMENTS_REQUEST
    rbody = {
        "timeout_ms": 1,
        "topics": [{"name": name, "partitions": [{"partition_index": 0, "replicas": maybe}]}],
    }
    assert req.decode(0, req.encode(0, rbody)) == rbody


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(-(2**31), 2**31 - 1))
def test_varints_round_trip(u, s):
    from kafka_rebalance.kafka.wire.codec import Reader

    w = Writer()
    w.uvarint(u)
    w.varint(s)
    r = Reader(w.getvalue())
    assert r.uvarint() == u and r.varint() == s


def test_tagged_fields_known_and_unknown():
    msg = Message(
        "T",
        0,
        Versions.parse("0+"),
        Versions.parse("0+"),
        (F("a", "int32"), F("note", "string", tag=3), F("b", "[]string")),
    )
    raw = msg.encode(0, {"a": 1, "note": "hi", "b": ["x", "y"]})
    assert msg.decode(0, raw) == {"a": 1, "note": "hi", "b": ["x", "y"]}
    # A peer with an older schema skips the tag it does not know and keeps the bytes.
    old = Message(
        "T", 0, Versions.parse("0+"), Versions.parse("0+"), (F("a", "int32"), F("b", "[]string"))
    )
    decoded = old.decode(0, raw)
    assert (
        decoded["a"] == 1 and decoded["b"] == ["x", "y"] and 3 in decoded["_unknown_tagged_fields"]
    )
    # Compact string: length + 1 as an unsigned varint; null is 0.
    s = Message(
        "S", 0, Versions.parse("0+"), Versions.parse("1+"), (F("s", "string", nullable="0+"),)
    )
    assert s.encode(1, {"s": "ab"}) == b"\x03ab\x00" and s.encode(1, {"s": None}) == b"\x00\x00"
    assert s.encode(0, {"s": "ab"}) == b"\x00\x02ab" and s.encode(0, {"s": None}) == b"\xff\xff"


def test_our_responses_decode_with_kafka_pythons_classes():
    from kafka.protocol.admin import (
        DescribeConfigsResponse,
        ElectLeadersResponse,
        ListPartitionReassignmentsResponse,
    )

    body = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "replica_election_results": [
            {
                "topic": "t",
                "partition_result": [{"partition_id": 1, "error_code": 84, "error_message": "x"}],
            }
        ],
    }
    got = ElectLeadersResponse[1].decode(M.ELECT_LEADERS_RESPONSE.encode(1, body))
    assert got.replication_election_results == [("t", [(1, 84, "x")])]
    lbody = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {
                        "partition_index": 2,
                        "replicas": [1, 2],
                        "adding_replicas": [2],
                        "removing_replicas": [],
                    }
                ],
            }
        ],
    }
    got = ListPartitionReassignmentsResponse[0].decode(
        M.LIST_PARTITION_REASSIGNMENTS_RESPONSE.encode(0, lbody)
    )
    assert got.topics == [("t", [(2, [1, 2], [2], [], {})], {})]
    dbody = {
        "throttle_time_ms": 0,
        "results": [
            {
                "error_code": 0,
                "error_message": None,
                "resource_type": 2,
                "resource_name": "t",
                "configs": [{"name": "a", "value": "b", "config_source": 1}],
            }
        ],
    }
    got = DescribeConfigsResponse[1].decode(M.DESCRIBE_CONFIGS_RESPONSE.encode(1, dbody))
    assert got.resources[0][4] == [("a", "b", False, 1, False, [])]


def test_launcher_serves_a_snapshot_file_and_stops_by_pid(tmp_path):
    import json
    import os
    import signal
    import subprocess
    import sys

    from kafka_rebalance.cluster.snapshot import snapshot_to_json

    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(snapshot_to_json(make_snapshot())))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kafka_rebalance.kafka.sim_cluster",
            "--snapshot",
            str(snap),
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        info = json.loads(line)
        assert set(info["brokers"]) == {"1", "2", "3", "4", "5", "6"}
        got = snapshot_from_bootstrap(info["bootstrap"])
        assert observable(got) == observable(make_snapshot())
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=10) == 0


def test_admin_against_a_real_kafka_cluster(real_kafka):
    """The admin paths the fake serves, against real Kafka: snapshot with sizes, config writes."""
    import uuid

    from kafka.admin import KafkaAdminClient, NewTopic

    topic = f"wire-{uuid.uuid4().hex[:8]}"
    client = KafkaAdminClient(bootstrap_servers=real_kafka.bootstrap, request_timeout_ms=10000)
    try:
        client.create_topics([NewTopic(topic, 3, 2)])
    finally:
        client.close()
    want = [(0, 2, True, True), (1, 2, True, True), (2, 2, True, True)]
    # a new topic reaches every broker's metadata (and its log dirs) through the metadata log a
    # moment after CreateTopics answers: wait for it, as for the config change below
    deadline = time.monotonic() + 30
    while True:
        snap = snapshot_from_bootstrap(real_kafka.bootstrap)
        mine = sorted(
            (p.partition, len(p.replicas), p.leader is not None, p.load is not None)
            for p in snap.partitions
            if p.topic == topic
        )
        if mine == want or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert mine == want
    assert [b.id for b in snap.brokers if b.alive] == [1, 2, 3]
    with KafkaAdmin(real_kafka.bootstrap) as admin:
        # Our IncrementalAlterConfigs v0 (built from kafka-python's protocol types) is accepted.
        admin.incremental_alter_configs(TOPIC, topic, [("retention.ms", SET, "3600000")])
        # a config change reaches every broker through the metadata log: wait for it
        deadline = time.monotonic() + 30
        while admin.describe_configs(TOPIC, topic)["retention.ms"] != ("3600000", False):
            assert time.monotonic() < deadline, admin.describe_configs(TOPIC, topic)
            time.sleep(0.2)
        assert not {k for k in admin.list_partition_reassignments() if k[0] == topic}
