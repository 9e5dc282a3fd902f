"""`kafka-rebalance cluster ...`: JSON shapes of docs/formats.md section 3, files written, exit 2 on bad input."""

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
    for key in (
        "replicas",
        "leaders",
        "preferred_leaders",
        "bytes_in",
        "bytes_out",
        "size_bytes",
        "leader_imbalance_ratio",
    ):
        assert key in b
    assert set(r["max_over_mean"]) >= {"replicas", "leaders", "bytes_in", "bytes_out", "size_bytes"}
    assert r["threshold"] == 1.10 and "replicas" in r["skewed"]


def test_plan_json_and_reassignment_file(capsys, snap_file, tmp_path):
    out = tmp_path / "plan.json"
    r = run_json(
        capsys,
        "cluster",
        "plan",
        "--snapshot",
        str(snap_file),
        "--mode",
        "full",
        "--output",
        str(out),
        "--compare-generate",
    )
    for key in (
        "replica_moves",
        "bytes_moved",
        "lower_bound_moves",
        "leader_changes",
        "before",
        "after",
    ):
        assert key in r
    assert max(r["after"].values()) <= 1.09 + 1e-9 < max(r["before"].values())
    doc = json.loads(out.read_text())
    assert doc["version"] == 1 and doc["partitions"]
    assert set(doc["partitions"][0]) == {"topic", "partition", "replicas", "log_dirs"}
    assert r["generate"]["replica_moves"] > r["replica_moves"]


def test_plan_remove_brokers(capsys, snap_file, tmp_path):
    r = run_json(
        capsys,
        "cluster",
        "plan",
        "--snapshot",
        str(snap_file),
        "--mode",
        "remove-brokers",
        "--brokers",
        "2",
        "--output",
        str(tmp_path / "p.json"),
    )
    assert r["replica_moves"] == r["lower_bound_moves"] > 0


def test_elect_writes_kafka_json_and_reports_skips(capsys, tmp_path):
    snap = ClusterSnapshot(
        (Broker(1), Broker(2), Broker(3, alive=False)),
        (
            PartitionReplicas("t", 0, (1, 2), 2, (1, 2)),
            PartitionReplicas("t", 1, (3, 1), 1, (1,)),
            PartitionReplicas("t", 2, (1, 2), 1, (1, 2)),
        ),
    )
    sf = tmp_path / "s.json"
    sf.write_text(json.dumps(snapshot_to_json(snap)))
    out = tmp_path / "elect.json"
    r = run_json(capsys, "cluster", "elect", "--snapshot", str(sf), "--output", str(out))
    assert json.loads(out.read_text()) == {"partitions": [{"topic": "t", "partition": 0}]}
    assert r["skipped"] == [
        {
            "topic": "t",
            "partition": 1,
            "reason": "PREFERRED_LEADER_NOT_AVAILABLE",
            "detail": "preferred replica 3 is not alive",
        }
    ]
    only = tmp_path / "only.json"
    only.write_text(json.dumps({"partitions": [{"topic": "t", "partition": 2}]}))
    r = run_json(
        capsys,
        "cluster",
        "elect",
        "--snapshot",
        str(sf),
        "--path-to-json-file",
        str(only),
        "--output",
        str(out),
    )
    assert r["elect"] == 0 and r["skipped"][0]["reason"] == "ELECTION_NOT_NEEDED"
    r = run_json(capsys, "cluster", "elect", "--snapshot", str(sf), "--auto", "kraft")
    assert r["elect"] == 1 and r["controller"] == "kraft"


def test_leaders_plan_after_rolling_restart_moves_no_data(capsys, tmp_path):
    snap = rolling_restart(synthetic_cluster(brokers=6, racks=3, partitions=120, topics=4, seed=1))
    sf = tmp_path / "s.json"
    sf.write_text(json.dumps(snapshot_to_json(snap)))
    r = run_json(
        capsys,
        "cluster",
        "plan",
        "--snapshot",
        str(sf),
        "--mode",
        "leaders",
        "--output",
        str(tmp_path / "p.json"),
        "--election-output",
        str(tmp_path / "e.json"),
    )
    assert r["replica_moves"] == 0 and r["bytes_moved"] == 0
    assert r["leader_changes"] == r["optimal_leader_changes"] > 0
    assert r["after"]["leaders"] < r["before"]["leaders"]
    assert len(json.loads((tmp_path / "e.json").read_text())["partitions"]) == r["leader_changes"]


def test_describe_text_and_generate(capsys, tmp_path):
    text = (
        "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\n"
        "\tTopic: t\tPartition: 1\tLeader: 2\tReplicas: 2,3\tIsr: 2,3\n"
    )
    sf = tmp_path / "describe.txt"
    sf.write_text(text)
    out = tmp_path / "snap.json"
    r = run_json(capsys, "cluster", "describe", "--snapshot", str(sf), "--output", str(out))
    assert r["brokers"] == 3 and r["partitions"] == 2
    # the text never states liveness: the user is told which brokers were taken as alive, on stderr
    assert main(["cluster", "skew", "--snapshot", str(sf), "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert f"note: {sf}: brokers [1, 2, 3] are taken as alive" in captured.err
    json.loads(captured.out)
    assert json.loads(out.read_text())["partitions"][1]["replicas"] == [2, 3]
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": "t"}]}))
    gen = tmp_path / "gen.json"
    r = run_json(
        capsys,
        "cluster",
        "generate",
        "--snapshot",
        str(sf),
        "--topics-to-move-json-file",
        str(topics),
        "--broker-list",
        "1,2,3",
        "--output",
        str(gen),
        "--seed",
        "3",
    )
    assert r["partitions"] == 2
    assert len(json.loads(gen.read_text())["partitions"]) == 2


def test_liveness_note_names_only_brokers_taken_as_alive(capsys, tmp_path):
    """Broker 3 is the last ISR member of a leaderless partition: inferred dead, so not in the note."""
    sf = tmp_path / "describe.txt"
    sf.write_text(
        "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\n"
        "\tTopic: t\tPartition: 1\tLeader: none\tReplicas: 3,1\tIsr: 3\n"
    )
    assert main(["cluster", "skew", "--snapshot", str(sf), "--format", "json"]) == 0
    err = capsys.readouterr().err
    assert f"note: {sf}: brokers [1, 2] are taken as alive" in err


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["cluster", "skew", "--snapshot", "/nonexistent/x.json"], "file not found"),
        (["cluster", "plan", "--snapshot", "{bad}", "--mode", "add-brokers"], "brokers"),
        (
            [
                "cluster",
                "plan",
                "--snapshot",
                "{bad}",
                "--mode",
                "remove-brokers",
                "--brokers",
                "99",
            ],
            "broker 99",
        ),
        (
            [
                "cluster",
                "plan",
                "--snapshot",
                "{bad}",
                "--mode",
                "remove-brokers",
                "--brokers",
                "a,b",
            ],
            "--brokers",
        ),
        (["cluster", "skew", "--snapshot", "{badsnap}"], "partitions[0].replicas"),
        (
            ["cluster", "elect", "--snapshot", "{bad}", "--path-to-json-file", "{badelect}"],
            "partitions[0].partition",
        ),
    ],
)
def test_bad_input_exits_2(capsys, tmp_path, snap_file, argv, fragment):
    bad = tmp_path / "badsnap.json"
    bad.write_text(
        json.dumps(
            {
                "brokers": [{"id": 1}],
                "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1]}],
            }
        )
    )
    be = tmp_path / "be.json"
    be.write_text(json.dumps({"partitions": [{"topic": "t"}]}))
    argv = [
        a.replace("{bad}", str(snap_file))
        .replace("{badsnap}", str(bad))
        .replace("{badelect}", str(be))
        for a in argv
    ]
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
        assert r["leader_imbalance"]["kraft"]["imbalanced_partitions"] == sum(
            1 for p in snap.partitions if p.leader != p.replicas[0]
        )
    finally:
        sim.stop()


def test_load_from_the_load_model_parquet(capsys, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    text = (
        "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\n"
        "\tTopic: t\tPartition: 1\tLeader: 2\tReplicas: 2,1\tIsr: 2,1\n"
    )
    sf = tmp_path / "describe.txt"
    sf.write_text(text)
    lp = tmp_path / "partition_load.parquet"
    pq.write_table(
        pa.table(
            {
                "topic": ["t", "t"],
                "partition": [0, 1],
                "bytes_in": [10.0, 1.0],
                "bytes_out": [30.0, 3.0],
                "messages_in": [1.0, 1.0],
                "size_bytes": [5.0, 7.0],
                "cpu": [0.0, 0.0],
                "valid_windows": [5, 5],
            }
        ),
        lp,
    )
    r = run_json(capsys, "cluster", "skew", "--snapshot", str(sf), "--load", str(lp))
    b = {x["broker"]: x for x in r["brokers"]}
    assert b[1]["bytes_out"] == 30.0 and b[2]["bytes_out"] == 3.0 and b[1]["size_bytes"] == 12.0
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"topic": ["t"], "partition": [0]}), bad)
    assert main(["cluster", "skew", "--snapshot", str(sf), "--load", str(bad)]) == 2
    assert "bytes_in" in capsys.readouterr().err


def test_plan_that_cannot_empty_a_removed_broker_exits_1_and_says_incomplete(capsys, tmp_path):
    snap = ClusterSnapshot(
        (Broker(1, "a"), Broker(2, "b"), Broker(3, "c")),
        tuple(PartitionReplicas("t", i, (1, 2, 3), 1, (1, 2, 3)) for i in range(2)),
    )
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snapshot_to_json(snap)))
    rc = main(
        [
            "cluster",
            "plan",
            "--snapshot",
            str(path),
            "--mode",
            "remove-brokers",
            "--brokers",
            "3",
            "--output",
            str(tmp_path / "p.json"),
            "--format",
            "json",
        ]
    )
    r = json.loads(capsys.readouterr().out)
    assert rc == 1
    assert r["complete"] is False and len(r["violations"]) == 2
    assert r["replica_moves"] < r["lower_bound_moves"]


def test_add_brokers_refuses_an_unknown_broker_without_a_rack(capsys, snap_file, tmp_path):
    rc = main(
        [
            "cluster",
            "plan",
            "--snapshot",
            str(snap_file),
            "--mode",
            "add-brokers",
            "--brokers",
            "77",
            "--format",
            "json",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "--brokers" in err and "77" in err
    r = run_json(
        capsys,
        "cluster",
        "plan",
        "--snapshot",
        str(snap_file),
        "--mode",
        "add-brokers",
        "--brokers",
        "77",
        "--broker-racks",
        "77:r1",
    )
    assert r["complete"] is True and r["replica_moves"] > 0
    assert (
        main(
            [
                "cluster",
                "plan",
                "--snapshot",
                str(snap_file),
                "--mode",
                "add-brokers",
                "--brokers",
                "77",
                "--broker-racks",
                "77",
            ]
        )
        == 2
    )


@pytest.mark.parametrize(
    "argv, flag, value",
    [
        (["plan", "--band", "nan"], "--band", "nan"),
        (["plan", "--band", "inf"], "--band", "inf"),
        (["plan", "--band", "-1"], "--band", "-1.0"),
        (["plan", "--band", "0.9"], "--band", "0.9"),
        (["plan", "--capacity-threshold", "-2"], "--capacity-threshold", "-2.0"),
        (["plan", "--capacity-threshold", "0"], "--capacity-threshold", "0.0"),
        (["plan", "--capacity-threshold", "1.5"], "--capacity-threshold", "1.5"),
        (["plan", "--capacity-threshold", "nan"], "--capacity-threshold", "nan"),
        (["plan", "--compare-generate", "--seed", str(1 << 63)], "--seed", str(1 << 63)),
        (
            ["plan", "--mode", "add-brokers", "--brokers=-1", "--broker-racks=-1:r0"],
            "--brokers",
            "-1",
        ),
        (
            ["plan", "--mode", "add-brokers", "--brokers", "6,6", "--broker-racks", "6:r0"],
            "--brokers",
            "twice",
        ),
        (["generate", "--seed", str(-(1 << 63) - 1)], "--seed", str(-(1 << 63) - 1)),
        (["generate", "--broker-list", "1,1"], "--broker-list", "1"),
        (["skew", "--threshold", "nan"], "--threshold", "nan"),
        (["skew", "--threshold", "0.5"], "--threshold", "0.5"),
        (
            ["skew", "--leader-imbalance-per-broker-percentage", "-5"],
            "--leader-imbalance-per-broker-percentage",
            "-5",
        ),
        (
            ["skew", "--leader-imbalance-per-broker-percentage", "inf"],
            "--leader-imbalance-per-broker-percentage",
            "inf",
        ),
        (
            ["elect", "--auto", "zk", "--leader-imbalance-per-broker-percentage", "101"],
            "--leader-imbalance-per-broker-percentage",
            "101",
        ),
    ],
)
def test_numbers_out_of_range_name_the_flag_and_value(
    capsys, snap_file, tmp_path, argv, flag, value
):
    out = tmp_path / "out.json"
    rc = main(
        ["cluster", *argv, "--snapshot", str(snap_file), "--format", "json"]
        + (["--output", str(out)] if argv[0] in ("plan", "generate") else [])
    )
    cap = capsys.readouterr()
    assert rc == 2 and cap.out == "" and "Traceback" not in cap.err
    assert flag in cap.err and value in cap.err
    assert not out.exists()


def test_numbers_at_the_edges_of_their_ranges_are_accepted(capsys, snap_file):
    run_json(
        capsys,
        "cluster",
        "plan",
        "--snapshot",
        str(snap_file),
        "--band",
        "1",
        "--capacity-threshold",
        "1",
        "--compare-generate",
        "--seed",
        str((1 << 63) - 1),
    )
    run_json(
        capsys,
        "cluster",
        "skew",
        "--snapshot",
        str(snap_file),
        "--threshold",
        "1",
        "--leader-imbalance-per-broker-percentage",
        "0",
    )
    run_json(capsys, "cluster", "generate", "--snapshot", str(snap_file), "--seed", str(-(1 << 63)))


@pytest.mark.parametrize("mode", ["full", "leaders", "fix-offline"])
def test_brokers_outside_add_and_remove_modes_are_refused(capsys, snap_file, mode):
    rc = main(
        [
            "cluster",
            "plan",
            "--snapshot",
            str(snap_file),
            "--mode",
            mode,
            "--brokers",
            "1",
            "--format",
            "json",
        ]
    )
    cap = capsys.readouterr()
    assert rc == 2 and cap.out == ""
    assert "--brokers" in cap.err and f"mode {mode}" in cap.err and "add-brokers" in cap.err


def test_compare_generate_places_on_a_broker_given_only_by_its_rack(capsys, snap_file, tmp_path):
    """--generate's broker list is the plan's: an added broker the snapshot does not list counts too."""
    doc = json.loads(snap_file.read_text())
    assert 6 not in {b["id"] for b in doc["brokers"]}
    listed = tmp_path / "listed.json"
    listed.write_text(json.dumps(dict(doc, brokers=doc["brokers"] + [{"id": 6, "rack": "r0"}])))
    by_rack = run_json(
        capsys,
        "cluster",
        "plan",
        "--snapshot",
        str(snap_file),
        "--mode",
        "add-brokers",
        "--brokers",
        "6",
        "--broker-racks",
        "6:r0",
        "--compare-generate",
    )
    in_snap = run_json(
        capsys,
        "cluster",
        "plan",
        "--snapshot",
        str(listed),
        "--mode",
        "add-brokers",
        "--brokers",
        "6",
        "--compare-generate",
    )
    assert by_rack["generate"] == in_snap["generate"]
    assert by_rack["replica_moves"] == in_snap["replica_moves"]
    gen = tmp_path / "gen.json"
    run_json(
        capsys,
        "cluster",
        "generate",
        "--snapshot",
        str(listed),
        "--broker-list",
        "0,1,2,3,4,5,6",
        "--output",
        str(gen),
    )
    placed = {b for p in json.loads(gen.read_text())["partitions"] for b in p["replicas"]}
    assert 6 in placed  # (so the count above includes moves onto broker 6)
