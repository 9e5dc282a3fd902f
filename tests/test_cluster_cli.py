"""`kafka-rebalance cluster ...`: JSON shapes of SCHEMAS.md section 3, files written, exit 2 on bad input."""

from __future__ import annotations

import json

import pytest

from kafka_rebalance.cli import main
from kafka_rebalance.cluster.snapshot import snapshot_to_json
from kafka_rebalance.cluster.synthetic import rolling_restart, synthetic_cluster
from kafka_rebalance.model import Broker, ClusterSnapshot, PartitionReplicas


@pytest.fixture()
def snap_file(tmp_path):
    snap = synthetic_cluster(brokers=6, racks=3, partitions=120, topics=4, seed=9, skew=0.4)
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snapshot_to_json(snap)))
    return path


def run_json(capsys, *argv) -> dict:
    rc = main(list(argv) + ["--format", "json"])
    out = capsys.readouterr().out
    assert rc == 0, out
    return json.loads(out)


def test_skew_json_shape(capsys, snap_file):
    r = run_json(capsys, "cluster", "skew", "--snapshot", str(snap_file))
    b = r["brokers"][0]
    for key in ("replicas", "leaders", "preferred_leaders", "bytes_in", "bytes_out", "size_bytes",
                "leader_imbalance_ratio"):
        assert key in b
    assert set(r["max_over_mean"]) >= {"replicas", "leaders", "bytes_in", "bytes_out", "size_bytes"}
    assert r["threshold"] == 1.10 and "replicas" in r["skewed"]


def test_plan_json_and_reassignment_file(capsys, snap_file, tmp_path):
    out = tmp_path / "plan.json"
    r = run_json(capsys, "cluster", "plan", "--snapshot", str(snap_file), "--mode", "full", "--output", str(out),
                 "--compare-generate")
    for key in ("replica_moves", "bytes_moved", "lower_bound_moves", "leader_changes", "before", "after"):
        assert key in r
    assert max(r["after"].values()) <= 1.09 + 1e-9 < max(r["before"].values())
    doc = json.loads(out.read_text())
    assert doc["version"] == 1 and doc["partitions"]
    assert set(doc["partitions"][0]) == {"topic", "partition", "replicas", "log_dirs"}
    assert r["generate"]["replica_moves"] > r["replica_moves"]


def test_plan_remove_brokers(capsys, snap_file, tmp_path):
    r = run_json(capsys, "cluster", "plan", "--snapshot", str(snap_file), "--mode", "remove-brokers",
                 "--brokers", "2", "--output", str(tmp_path / "p.json"))
    assert r["replica_moves"] == r["lower_bound_moves"] > 0


def test_elect_writes_kafka_json_and_reports_skips(capsys, tmp_path):
    snap = ClusterSnapshot((Broker(1), Broker(2), Broker(3, alive=False)),
                           (PartitionReplicas("t", 0, (1, 2), 2, (1, 2)),
                            PartitionReplicas("t", 1, (3, 1), 1, (1,)),
                            PartitionReplicas("t", 2, (1, 2), 1, (1, 2))))
    sf = tmp_path / "s.json"
    sf.write_text(json.dumps(snapshot_to_json(snap)))
    out = tmp_path / "elect.json"
    r = run_json(capsys, "cluster", "elect", "--snapshot", str(sf), "--output", str(out))
    assert json.loads(out.read_text()) == {"partitions": [{"topic": "t", "partition": 0}]}
    assert r["skipped"] == [{"topic": "t", "partition": 1, "reason": "PREFERRED_LEADER_NOT_AVAILABLE",
                             "detail": "preferred replica 3 is not alive"}]
    only = tmp_path / "only.json"
    only.write_text(json.dumps({"partitions": [{"topic": "t", "partition": 2}]}))
    r = run_json(capsys, "cluster", "elect", "--snapshot", str(sf), "--path-to-json-file", str(only),
                 "--output", str(out))
    assert r["elect"] == 0 and r["skipped"][0]["reason"] == "ELECTION_NOT_NEEDED"
    r = run_json(capsys, "cluster", "elect", "--snapshot", str(sf), "--auto", "kraft")
    assert r["elect"] == 1 and r["controller"] == "kraft"


def test_leaders_plan_after_rolling_restart_moves_no_data(capsys, tmp_path):
    snap = rolling_restart(synthetic_cluster(brokers=6, racks=3, partitions=120, topics=4, seed=1))
    sf = tmp_path / "s.json"
    sf.write_text(json.dumps(snapshot_to_json(snap)))
    r = run_json(capsys, "cluster", "plan", "--snapshot", str(sf), "--mode", "leaders",
                 "--output", str(tmp_path / "p.json"), "--election-output", str(tmp_path / "e.json"))
    assert r["replica_moves"] == 0 and r["bytes_moved"] == 0
    assert r["leader_changes"] == r["optimal_leader_changes"] > 0
    assert r["after"]["leaders"] < r["before"]["leaders"]
    assert len(json.loads((tmp_path / "e.json").read_text())["partitions"]) == r["leader_changes"]


def test_describe_text_and_generate(capsys, tmp_path):
    text = "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\n" \
           "\tTopic: t\tPartition: 1\tLeader: 2\tReplicas: 2,3\tIsr: 2,3\n"
    sf = tmp_path / "describe.txt"
    sf.write_text(text)
    out = tmp_path / "snap.json"
    r = run_json(capsys, "cluster", "describe", "--snapshot", str(sf), "--output", str(out))
    assert r["brokers"] == 3 and r["partitions"] == 2
    assert json.loads(out.read_text())["partitions"][1]["replicas"] == [2, 3]
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": "t"}]}))
    gen = tmp_path / "gen.json"
    r = run_json(capsys, "cluster", "generate", "--snapshot", str(sf), "--topics-to-move-json-file", str(topics),
                 "--broker-list", "1,2,3", "--output", str(gen), "--seed", "3")
    assert r["partitions"] == 2
    assert len(json.loads(gen.read_text())["partitions"]) == 2


@pytest.mark.parametrize("argv, fragment", [
    (["cluster", "skew", "--snapshot", "/nonexistent/x.json"], "file not found"),
    (["cluster", "plan", "--snapshot", "{bad}", "--mode", "add-brokers"], "brokers"),
    (["cluster", "plan", "--snapshot", "{bad}", "--mode", "remove-brokers", "--brokers", "99"], "broker 99"),
    (["cluster", "plan", "--snapshot", "{bad}", "--mode", "remove-brokers", "--brokers", "a,b"], "--brokers"),
    (["cluster", "skew", "--snapshot", "{badsnap}"], "partitions[0].replicas"),
    (["cluster", "elect", "--snapshot", "{bad}", "--path-to-json-file", "{badelect}"], "partitions[0].partition"),
])
def test_bad_input_exits_2(capsys, tmp_path, snap_file, argv, fragment):
    bad = tmp_path / "badsnap.json"
    bad.write_text(json.dumps({"brokers": [{"id": 1}], "partitions": [{"topic": "t", "partition": 0,
                                                                       "replicas": [1, 1]}]}))
    be = tmp_path / "be.json"
    be.write_text(json.dumps({"partitions": [{"topic": "t"}]}))
    argv = [a.replace("{bad}", str(snap_file)).replace("{badsnap}", str(bad)).replace("{badelect}", str(be))
            for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert fragment in err


def test_bootstrap_server_reads_a_live_cluster(capsys):
    """--bootstrap-server goes through kafka-python against the simulated Kafka-protocol cluster."""
    from kafka_rebalance.kafka.sim_cluster import SimCluster

    snap = rolling_restart(synthetic_cluster(brokers=3, racks=3, partitions=12, topics=2, seed=1))
    sim = SimCluster(snap).start()
    try:
        r = run_json(capsys, "cluster", "skew", "--bootstrap-server", sim.bootstrap)
        assert sorted(b["broker"] for b in r["brokers"]) == [0, 1, 2]
        assert sum(b["replicas"] for b in r["brokers"]) == 36
        assert r["leader_imbalance"]["kraft"]["imbalanced_partitions"] == \
            sum(1 for p in snap.partitions if p.leader != p.replicas[0])
    finally:
        sim.stop()


def test_load_from_the_load_model_parquet(capsys, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    text = "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\n" \
           "\tTopic: t\tPartition: 1\tLeader: 2\tReplicas: 2,1\tIsr: 2,1\n"
    sf = tmp_path / "describe.txt"
    sf.write_text(text)
    lp = tmp_path / "partition_load.parquet"
    pq.write_table(pa.table({"topic": ["t", "t"], "partition": [0, 1], "bytes_in": [10.0, 1.0],
                             "bytes_out": [30.0, 3.0], "messages_in": [1.0, 1.0], "size_bytes": [5.0, 7.0],
                             "cpu": [0.0, 0.0], "valid_windows": [5, 5]}), lp)
    r = run_json(capsys, "cluster", "skew", "--snapshot", str(sf), "--load", str(lp))
    b = {x["broker"]: x for x in r["brokers"]}
    assert b[1]["bytes_out"] == 30.0 and b[2]["bytes_out"] == 3.0 and b[1]["size_bytes"] == 12.0
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"topic": ["t"], "partition": [0]}), bad)
    assert main(["cluster", "skew", "--snapshot", str(sf), "--load", str(bad)]) == 2
    assert "bytes_in" in capsys.readouterr().err


def test_plan_that_cannot_empty_a_removed_broker_exits_1_and_says_incomplete(capsys, tmp_path):
    snap = ClusterSnapshot((Broker(1, "a"), Broker(2, "b"), Broker(3, "c")),
                           tuple(PartitionReplicas("t", i, (1, 2, 3), 1, (1, 2, 3)) for i in range(2)))
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snapshot_to_json(snap)))
    rc = main(["cluster", "plan", "--snapshot", str(path), "--mode", "remove-brokers", "--brokers", "3",
               "--output", str(tmp_path / "p.json"), "--format", "json"])
    r = json.loads(capsys.readouterr().out)
    assert rc == 1
    assert r["complete"] is False and len(r["violations"]) == 2
    assert r["replica_moves"] < r["lower_bound_moves"]


def test_add_brokers_refuses_an_unknown_broker_without_a_rack(capsys, snap_file, tmp_path):
    rc = main(["cluster", "plan", "--snapshot", str(snap_file), "--mode", "add-brokers", "--brokers", "77",
               "--format", "json"])
    err = capsys.readouterr().err
    assert rc == 2 and "--brokers" in err and "77" in err
    r = run_json(capsys, "cluster", "plan", "--snapshot", str(snap_file), "--mode", "add-brokers", "--brokers",
                 "77", "--broker-racks", "77:r1")
    assert r["complete"] is True and r["replica_moves"] > 0
    assert main(["cluster", "plan", "--snapshot", str(snap_file), "--mode", "add-brokers", "--brokers", "77",
                 "--broker-racks", "77"]) == 2
