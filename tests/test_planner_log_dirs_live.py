"""Log dirs on the real broker: the live snapshot reads each replica's directory (DescribeLogDirs), the
plan balances directories inside each broker, `cluster execute --execute` applies its `log_dirs`
(AlterReplicaLogDirs), and kafka-log-dirs.sh --describe shows every replica where the plan put it.
Our executor also sets the starting placement (every replica in its broker's first directory)."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import replace

import pytest

from kafka_rebalance.cluster.kafka_json import reassignment_json
from kafka_rebalance.cluster.planner import plan
from kafka_rebalance.model import PartitionLoad


@pytest.fixture(scope="module")
def jbod_kafka(real_kafka):
    """A cluster of its own: 3 brokers of 2 log dirs each (the session cluster has one)."""
    import real_kafka as rk

    if real_kafka.home is None:
        pytest.skip("starting a 2-log-dir cluster needs ../shared/kafka")
    cluster = rk.start(brokers=3, log_dirs=2)
    try:
        yield cluster
    finally:
        cluster.stop()


def where(cluster, topic: str) -> dict[tuple[int, int], str]:
    """(broker, partition) -> log dir, from kafka-log-dirs.sh --describe."""
    out = cluster.tool(
        "kafka-log-dirs.sh",
        "--bootstrap-server",
        cluster.bootstrap,
        "--describe",
        "--topic-list",
        topic,
    ).stdout
    doc = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    found = {}
    for b in doc["brokers"]:
        for d in b["logDirs"]:
            for p in d["partitions"]:
                name, _, num = p["partition"].rpartition("-")
                if name == topic and not p.get("isFuture", False):
                    found[(b["broker"], int(num))] = d["logDir"]
    return found


def test_log_dir_moves_run_on_the_real_broker(jbod_kafka, tmp_path):
    from kafka_rebalance.kafka.admin import snapshot_from_bootstrap

    topic = f"jbod-{uuid.uuid4().hex[:8]}"
    jbod_kafka.tool(
        "kafka-topics.sh",
        "--bootstrap-server",
        jbod_kafka.bootstrap,
        "--create",
        "--topic",
        topic,
        "--partitions",
        "6",
        "--replication-factor",
        "2",
    )
    deadline = time.monotonic() + 60
    while True:  # until every replica has been created on its broker
        snap = snapshot_from_bootstrap(jbod_kafka.bootstrap)
        ours = [p for p in snap.partitions if p.topic == topic]
        done = len(ours) == 6 and all(
            p.log_dirs is not None and None not in p.log_dirs for p in ours
        )
        if done or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    # the live snapshot knows every replica's directory and each broker's two directories
    assert all(p.log_dirs is not None and None not in p.log_dirs for p in ours)
    assert all(len(b.log_dirs) == 2 for b in snap.brokers)
    before = where(jbod_kafka, topic)
    for p in ours:
        for r, d in zip(p.replicas, p.log_dirs):
            assert before[(r, p.partition)] == d
    heavy = {b.id: b.log_dirs[0].path for b in snap.brokers}
    # move every replica of the topic onto its broker's first directory first
    first = [
        {
            "topic": topic,
            "partition": p.partition,
            "replicas": list(p.replicas),
            "log_dirs": [heavy[r] for r in p.replicas],
        }
        for p in ours
    ]
    execute(jbod_kafka, tmp_path / "first.json", {"version": 1, "partitions": first})
    # read back live: every replica of the topic in its broker's first directory; give them equal sizes
    snap = snapshot_from_bootstrap(jbod_kafka.bootstrap)
    for p in snap.partitions:
        if p.topic == topic:
            assert p.log_dirs == tuple(heavy[r] for r in p.replicas)
    snap = replace(
        snap,
        partitions=tuple(
            replace(p, load=PartitionLoad(size_bytes=1e6 if p.topic == topic else 0.0))
            for p in snap.partitions
        ),
    )
    res = plan(snap, "full", goals="RackAwareGoal")
    assert res.replica_moves == 0
    ld = res.log_dirs
    n_on = {b.id: sum(b.id in p.replicas for p in ours) for b in snap.brokers}
    best = max(-(-n // 2) / (n / 2) for n in n_on.values() if n)  # equal-size replicas, two dirs
    assert ld is not None and ld.before == 2.0 and ld.moves > 0 and ld.after == pytest.approx(best)
    entries = [e for e in res.reassignments if e.topic == topic]
    assert entries and all(e.log_dirs is not None for e in entries)
    # the plan goes through our own executor (AlterReplicaLogDirs for the log_dirs)
    execute(jbod_kafka, tmp_path / "plan.json", reassignment_json(entries))
    after = where(jbod_kafka, topic)
    planned = {
        (r, p.partition): d
        for p in res.after_snapshot.partitions
        if p.topic == topic
        for r, d in zip(p.replicas, p.log_dirs)
    }
    assert after == planned
    moved = sum(1 for k, d in planned.items() if d != heavy[k[0]])
    assert moved == ld.moves
    for b in snap.brokers:  # each broker's replicas split evenly over its two directories
        on = [d for (r, _), d in after.items() if r == b.id]
        assert abs(on.count(b.log_dirs[0].path) - on.count(b.log_dirs[1].path)) <= 1


def execute(cluster, path, doc) -> None:
    """`cluster execute --execute` on a plan: reassignments, then AlterReplicaLogDirs for log_dirs."""
    from kafka_rebalance.cli import main

    path.write_text(json.dumps(doc))
    rc = main(
        [
            "cluster",
            "execute",
            "--bootstrap-server",
            cluster.bootstrap,
            "--reassignment-json-file",
            str(path),
            "--execute",
            "--output-dir",
            str(path.parent / (path.stem + "-exec")),
            "--format",
            "json",
        ]
    )
    assert rc == 0
