"""`pipeline offsets|lag --bootstrap-server` on the real Kafka cluster (real_kafka).

Two groups commit offsets on a fresh topic: a classic group and a KIP-848 consumer-protocol group.
The committed offsets the offsets job derives from the live cluster, and the committed offsets,
log-end offsets and lag the lag job derives, equal what Kafka's own
`kafka-consumer-groups.sh --describe` reports; the consumer group's KIP-848 records decode (nothing
quarantined) and its group epochs show as consumer-protocol episodes with their partitions.
"""

from __future__ import annotations

import json
import time
import uuid

import pyarrow.parquet as pq
import pytest

from kafka_rebalance.cli import main

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def live(real_kafka):
    """A topic with records and two groups' commits on it: (bootstrap, topic, {group: protocol})."""
    b = real_kafka.bootstrap
    topic = f"live-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": b})
    for f in admin.create_topics([NewTopic(topic, 3, 1)], request_timeout=20).values():
        f.result(timeout=30)
    producer = ck.Producer({"bootstrap.servers": b, "linger.ms": 0})
    for i in range(60):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % 3)
    producer.flush(30)
    groups = {f"{topic}-classic": "classic", f"{topic}-consumer": "consumer"}
    for group, protocol in groups.items():
        c = ck.Consumer(
            {
                "bootstrap.servers": b,
                "group.id": group,
                "group.protocol": protocol,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        c.subscribe([topic])
        seen = 0
        deadline = time.monotonic() + 240  # joining takes seconds, minutes on a busy machine
        while seen < 25 and time.monotonic() < deadline:  # read part of the topic, then commit
            m = c.poll(1.0)
            if m is not None and m.error() is None:
                seen += 1
        assert seen, f"{group}: no record consumed in 240 s"
        c.commit(asynchronous=False)
        c.close()
    return b, topic, groups


def describe(real_kafka, group: str) -> dict[tuple[str, int], tuple[int, int, int]]:
    """(topic, partition) -> (CURRENT-OFFSET, LOG-END-OFFSET, LAG) from kafka-consumer-groups.sh."""
    out = real_kafka.tool(
        "kafka-consumer-groups.sh",
        "--bootstrap-server",
        real_kafka.bootstrap,
        "--describe",
        "--group",
        group,
    )
    lines = [ln.split() for ln in out.stdout.splitlines() if ln.strip()]
    header = next((ln for ln in lines if "CURRENT-OFFSET" in ln), None)
    assert header is not None, f"no offsets table for {group}:\n{out.stdout}\n{out.stderr}"
    rows = {}
    for ln in lines[lines.index(header) + 1 :]:
        r = dict(zip(header, ln))
        if r.get("GROUP") == group and r["CURRENT-OFFSET"] != "-":
            rows[(r["TOPIC"], int(r["PARTITION"]))] = (
                int(r["CURRENT-OFFSET"]),
                int(r["LOG-END-OFFSET"]),
                int(r["LAG"]),
            )
    return rows


def run(capsys, argv) -> dict:
    capsys.readouterr()
    assert main(["pipeline", *argv, "--shuffle-partitions", "4", "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_offsets_from_a_live_cluster_equal_kafka_consumer_groups(
    spark, real_kafka, live, capsys, tmp_path
):
    b, topic, groups = live
    summary = run(capsys, ["offsets", "--bootstrap-server", b, "--out", str(tmp_path / "o")])
    latest = pq.read_table(tmp_path / "o" / "latest_offsets.parquet").to_pylist()
    for group in groups:
        want = {k: v[0] for k, v in describe(real_kafka, group).items()}
        got = {(r["topic"], r["partition"]): r["offset"] for r in latest if r["group"] == group}
        assert want and got == want, group
    # the consumer-protocol group's KIP-848 records decode (none quarantined), and its rebalance shows
    assert summary["quarantined"] == 0 and summary["consumer_group_records"] > 0
    consumer = f"{topic}-consumer"
    cg = pq.read_table(tmp_path / "o" / "consumer_groups.parquet").to_pylist()
    mine = {r["record"] for r in cg if r["group"] == consumer}
    assert {"ConsumerGroupMetadata", "ConsumerGroupCurrentMemberAssignment"} <= mine, mine
    eps = pq.read_table(tmp_path / "o" / "rebalances.parquet").to_pylist()
    ep = [e for e in eps if e["group"] == consumer]
    assert ep and all(e["protocol"] == "consumer" for e in ep)
    assert [e["generation_to"] for e in ep] == sorted(e["generation_to"] for e in ep)
    # the member's join assigned it every partition; its leave (tombstones written before the
    # epoch bump) unassigned them: neither reads as an empty group (the old bug showed 0 and 0)
    assert ep[0]["members_after"] == 1 and ep[0]["partitions_assigned"] == 3, ep[0]
    assert ep[-1]["members_after"] == 0 and ep[-1]["partitions_unassigned"] == 3, ep[-1]


def test_lag_from_a_live_cluster_equals_kafka_consumer_groups(
    spark, real_kafka, live, capsys, tmp_path
):
    """Committed offset, log-end offset and lag per partition: the job's rows are the tool's.

    The log-end offsets are sampled before the commits are replayed (as Burrow starts): with one
    sample taken after every commit, Burrow's rule dropped each commit and the job had no rows.
    """
    b, _topic, groups = live
    summary = run(capsys, ["lag", "--bootstrap-server", b, "--out", str(tmp_path / "l")])
    lag = pq.read_table(tmp_path / "l" / "lag.parquet").to_pylist()
    for group in groups:
        want = describe(real_kafka, group)
        got = {
            (r["topic"], r["partition"]): (r["committed_offset"], r["log_end_offset"], r["lag"])
            for r in lag
            if r["group"] == group
        }
        assert want and got == want, group
        mine = summary["groups"][group]
        assert mine["partitions"] == len(want)
        assert mine["total_lag"] == sum(v[2] for v in want.values())
