"""A resumed preferred-leader election reports what the interrupted run elected (issue 17, class 7):
the run is killed after its election request reached the brokers and before it saw the answer; on
the simulated cluster and on the real broker."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from kill_and_disk_runs import (
    SNAPSHOT,
)


class LostElectionAnswer:
    """The admin of a run killed after its election request reached the brokers, before the
    answer was saved: the election happens, the state file still says it has not."""

    def __init__(self, admin) -> None:
        self.admin = admin

    def __getattr__(self, name):
        return getattr(self.admin, name)

    def elect_preferred(self, partitions):
        self.admin.elect_preferred(partitions)
        raise KeyboardInterrupt


def _interrupt_at_the_election(bootstrap: str, plan_file: Path, state_file: Path) -> dict:
    from kafka_rebalance.cluster.batches import parse_reassignment
    from kafka_rebalance.kafka.admin import KafkaAdmin
    from kafka_rebalance.kafka.execute import (
        Executor,
        load_state,
        plan_digest,
        plan_execution,
        state_from_plan,
    )

    doc = json.loads(plan_file.read_text())
    with KafkaAdmin(bootstrap) as admin:
        plan = plan_execution(
            parse_reassignment(doc),
            admin.snapshot(),
            throttle=None,
            max_moves_per_broker=5,
            max_moves=None,
            digest=plan_digest(doc),
        )
        ex = Executor(
            LostElectionAnswer(admin),
            state_from_plan(plan, bootstrap),
            state_file,
            poll_interval_s=0.05,
        )
        ex.save()
        with pytest.raises(KeyboardInterrupt):
            ex.run()
    state = load_state(state_file)
    assert state["phase"] == "election" and state["election"] is None
    preferred = {f"{e['topic']}-{e['partition']}": e["replicas"][0] for e in doc["partitions"]}
    before = state["leaders_before_election"]
    return {k: v for k, v in before.items() if v != preferred[k]}  # what the lost election elected


def _resume(plan_file: Path, state_file: Path, bootstrap: str, capsys) -> dict:
    from kafka_rebalance import cli

    rc = cli.main(
        [
            "cluster",
            "execute",
            "--reassignment-json-file",
            str(plan_file),
            "--bootstrap-server",
            bootstrap,
            "--state-file",
            str(state_file),
            "--execute",
            "--resume",
            "--poll-interval",
            "0.05",
            "--format",
            "json",
        ]
    )
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


def test_a_resumed_election_reports_what_the_interrupted_run_elected(tmp_path, capsys):
    from kafka_rebalance import cli
    from kafka_rebalance.kafka.sim_cluster import SimCluster
    from kafka_rebalance.ops.cluster_source import read_snapshot

    plan_file, state_file = tmp_path / "plan.json", tmp_path / "st.json"
    assert (
        cli.main(
            [
                "cluster",
                "plan",
                "--snapshot",
                str(SNAPSHOT),
                "--mode",
                "leaders",
                "--output",
                str(plan_file),
                "--format",
                "json",
            ]
        )
        == 0
    )
    capsys.readouterr()
    with SimCluster(read_snapshot(str(SNAPSHOT), None, None), speedup=500.0) as sim:
        elected = _interrupt_at_the_election(sim.bootstrap, plan_file, state_file)
        assert elected  # the plan changes leaders: a lost answer is not an empty election
        result = _resume(plan_file, state_file, sim.bootstrap, capsys)
        leaders = {f"{p.topic}-{p.partition}": p.leader for p in sim.snapshot().partitions}
    e = result["election"]
    assert result["phase"] == "finished"
    assert e["elected"] == len(elected) == e["elected_by_interrupted_run"], e
    assert e["elected"] + e["not_needed"] == e["partitions"] and not e["failed"]
    doc = json.loads(plan_file.read_text())
    assert all(
        leaders[f"{x['topic']}-{x['partition']}"] == x["replicas"][0] for x in doc["partitions"]
    )


def test_a_resumed_election_on_the_real_broker(real_kafka, tmp_path, capsys):
    """The same on Kafka 4.0: the partitions the lost election moved are reported as elected, and
    kafka-topics.sh shows each led by its preferred replica."""
    from kafka.admin import KafkaAdminClient, NewTopic

    topic = f"faults-elect-{os.getpid()}-{int(time.time())}"
    admin = KafkaAdminClient(bootstrap_servers=real_kafka.bootstrap, request_timeout_ms=30000)
    try:
        ids = sorted(b["node_id"] for b in admin.describe_cluster()["brokers"])[:3]
        start = {p: [ids[(p + i) % 3] for i in range(3)] for p in range(4)}
        admin.create_topics(
            [NewTopic(topic, num_partitions=-1, replication_factor=-1, replica_assignments=start)]
        )
    finally:
        admin.close()
    time.sleep(1.0)  # leaders elected
    # the plan: the same replicas, the last one first (leadership moves, no data)
    doc = {
        "version": 1,
        "partitions": [
            {"topic": topic, "partition": p, "replicas": [r[-1], *r[:-1]]} for p, r in start.items()
        ],
    }
    plan_file, state_file = tmp_path / "plan.json", tmp_path / "st.json"
    plan_file.write_text(json.dumps(doc))
    elected = _interrupt_at_the_election(real_kafka.bootstrap, plan_file, state_file)
    assert len(elected) == 4
    e = _resume(plan_file, state_file, real_kafka.bootstrap, capsys)["election"]
    assert (e["elected"], e["elected_by_interrupted_run"], e["not_needed"], e["failed"]) == (
        4,
        4,
        0,
        {},
    )
    if real_kafka.home is not None:
        out = real_kafka.tool(
            "kafka-topics.sh",
            "--bootstrap-server",
            real_kafka.bootstrap,
            "--describe",
            "--topic",
            topic,
        ).stdout
        rows = [ln for ln in out.splitlines() if "Partition:" in ln and "Leader:" in ln]
        assert len(rows) == 4
        for ln in rows:
            f = ln.split()
            part, leader = int(f[f.index("Partition:") + 1]), int(f[f.index("Leader:") + 1])
            assert leader == doc["partitions"][part]["replicas"][0], ln
