"""Cruise Control capacity files, log dirs in snapshots and plans, and the `cluster plan` flags for goals."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from kafka_rebalance.cli import main
from kafka_rebalance.cluster.capacity_file import KB, MB, apply_capacities, parse_capacity
from kafka_rebalance.cluster.planner import plan
from kafka_rebalance.cluster.snapshot import parse_snapshot, snapshot_to_json
from kafka_rebalance.errors import InputError
from kafka_rebalance.model import Broker, ClusterSnapshot, LogDir, PartitionLoad, PartitionReplicas

PLAIN = {
    "brokerCapacities": [
        {
            "brokerId": "-1",
            "capacity": {"DISK": "2000", "CPU": "100", "NW_IN": "500", "NW_OUT": "600"},
            "doc": "default",
        },
        {"brokerId": "2", "capacity": {"DISK": 4000, "CPU": 80, "NW_IN": 700, "NW_OUT": 800}},
    ]
}
JBOD = {
    "brokerCapacities": [
        {
            "brokerId": "-1",
            "capacity": {
                "DISK": {"/data/a": "300", "/data/b": "100"},
                "CPU": "100",
                "NW_IN": "10",
                "NW_OUT": "10",
            },
        }
    ]
}
CORES = {
    "brokerCapacities": [
        {
            "brokerId": "-1",
            "capacity": {"DISK": "1", "CPU": {"num.cores": "8"}, "NW_IN": "1", "NW_OUT": "1"},
        },
        {
            "brokerId": "1",
            "capacity": {"DISK": "1", "CPU": {"num.cores": "24"}, "NW_IN": "1", "NW_OUT": "1"},
        },
    ]
}


def test_capacity_files_in_cruise_controls_units():
    c = parse_capacity(PLAIN)
    assert c.for_broker(7).disk_bytes == 2000 * MB and c.for_broker(7).nw_out_bytes == 600 * KB
    assert c.for_broker(2).cpu == 80.0 and c.for_broker(2).nw_in_bytes == 700 * KB
    j = parse_capacity(JBOD).for_broker(0)
    assert j.disk_bytes == 400 * MB
    assert j.disk_by_dir == (LogDir("/data/a", 300 * MB), LogDir("/data/b", 100 * MB))
    k = parse_capacity(CORES)
    assert (k.for_broker(0).cpu, k.for_broker(1).cpu, k.for_broker(1).num_cores) == (800, 2400, 24)


@pytest.mark.parametrize(
    "doc, field, text",
    [
        ({}, "brokerCapacities", "brokerCapacities"),
        (
            {"brokerCapacities": [{"brokerId": "x", "capacity": {}}]},
            "brokerCapacities[0].brokerId",
            '"x"',
        ),
        (
            {"brokerCapacities": [{"brokerId": 1, "capacity": {"DISK": 1, "CPU": 1, "NW_IN": 1}}]},
            "brokerCapacities[0].capacity.NW_OUT",
            "missing",
        ),
        (
            {
                "brokerCapacities": [
                    {
                        "brokerId": 1,
                        "capacity": {"DISK": {"rel/dir": 1}, "CPU": 1, "NW_IN": 1, "NW_OUT": 1},
                    }
                ]
            },
            "brokerCapacities[0].capacity.DISK",
            "absolute",
        ),
        (
            {
                "brokerCapacities": [
                    CORES["brokerCapacities"][0],
                    {"brokerId": 3, "capacity": {"DISK": 1, "CPU": 50, "NW_IN": 1, "NW_OUT": 1}},
                ]
            },
            "brokerCapacities[1].capacity.CPU",
            "all brokers or for none",
        ),
        (
            {
                "brokerCapacities": [
                    {"brokerId": 1, "capacity": {"DISK": -1, "CPU": 1, "NW_IN": 1, "NW_OUT": 1}}
                ]
            },
            "brokerCapacities[0].capacity.DISK",
            ">= 0",
        ),
    ],
)
def test_bad_capacity_files_name_the_field(doc, field, text):
    with pytest.raises(InputError) as e:
        parse_capacity(doc)
    assert e.value.field == field and text in e.value.message


def test_a_broker_without_capacity_and_no_default_is_an_error():
    c = parse_capacity({"brokerCapacities": [PLAIN["brokerCapacities"][1]]})
    snap = ClusterSnapshot((Broker(2), Broker(3)), ())
    with pytest.raises(InputError, match="broker 3 has no capacity"):
        apply_capacities(snap, c)


def test_jbod_capacities_and_log_dirs_round_trip_through_the_snapshot():
    snap = ClusterSnapshot(
        (Broker(0, log_dirs=(LogDir("/data/b"),)),),
        (PartitionReplicas("t", 0, (0,), 0, (0,), PartitionLoad(size_bytes=5.0), ("/data/b",)),),
    )
    snap = apply_capacities(snap, parse_capacity(JBOD))
    (b,) = snap.brokers
    # the directory the snapshot knew keeps its place; the file's other one is added
    assert b.log_dirs == (LogDir("/data/b", 100 * MB), LogDir("/data/a", 300 * MB))
    doc = snapshot_to_json(snap)
    assert doc["partitions"][0]["log_dirs"] == ["/data/b"]
    assert parse_snapshot(json.loads(json.dumps(doc))) == snap
    with pytest.raises(InputError) as e:
        parse_snapshot({**doc, "partitions": [{**doc["partitions"][0], "log_dirs": ["/a", "/b"]}]})
    assert e.value.field == "partitions[0].log_dirs"


def jbod_cluster() -> ClusterSnapshot:
    """Two brokers of two dirs each; every replica sits on /d1, /d2 is empty."""
    dirs = (LogDir("/d1", 1000.0), LogDir("/d2", 1000.0))
    brokers = (Broker(0, log_dirs=dirs), Broker(1, log_dirs=dirs), Broker(2, log_dirs=dirs))
    parts = tuple(
        PartitionReplicas(
            "t",
            i,
            (i % 2, 1 - i % 2),
            i % 2,
            (0, 1),
            PartitionLoad(1.0, 1.0, 1.0, 50.0),
            ("/d1", "/d1"),
        )
        for i in range(12)
    )
    return ClusterSnapshot(brokers, parts)


def test_plans_balance_disks_inside_brokers_and_write_log_dirs():
    snap = jbod_cluster()
    res = plan(snap, "full")
    ld = res.log_dirs
    assert ld is not None and ld.before == 2.0 and ld.after <= 1.09
    used: dict[tuple[int, str], float] = {}
    for p in res.after_snapshot.partitions:
        for r, d in zip(p.replicas, p.log_dirs):
            used[(r, d)] = used.get((r, d), 0.0) + 50.0
    for b in (0, 1, 2):
        on = [v for (r, _), v in used.items() if r == b]
        assert max(on) <= 1.09 * sum(on) / 2
    entries = {(e.topic, e.partition): e for e in res.reassignments}
    for i in ld.moved:
        e = entries[("t", i)]
        assert e.log_dirs is not None and "/d2" in e.log_dirs
    # new replicas on broker 2 get a directory chosen for them, never "any" where two exist
    for e in res.reassignments:
        before = snap.partitions[e.partition].replicas
        for r, d in zip(e.replicas, e.log_dirs or ("any",) * len(e.replicas)):
            if r not in before:
                assert d in ("/d1", "/d2")
    assert "replicas change log dir inside their broker" in res.headline()


def test_excluded_topics_stay_in_their_log_dir():
    res = plan(
        jbod_cluster(),
        "full",
        options=__import__("kafka_rebalance.cluster.planner", fromlist=["PlanOptions"]).PlanOptions(
            exclude_topics="t"
        ),
    )
    assert res.reassignments == () and res.log_dirs is not None and res.log_dirs.moves == 0


@pytest.fixture
def snap_file(tmp_path):
    brokers = tuple(Broker(i, f"r{i % 3}") for i in range(6))
    # every replica on brokers 0-2 or 3-5 (one per rack), all led from broker 0 or 3
    parts = tuple(
        PartitionReplicas(
            f"t{i % 3}",
            i,
            (0, 1, 2) if i % 4 else (3, 4, 5),
            0 if i % 4 else 3,
            (0, 1, 2) if i % 4 else (3, 4, 5),
            PartitionLoad(10.0, 30.0, 1.0, 100.0, 2.0),
        )
        for i in range(30)
    )
    f = tmp_path / "snap.json"
    f.write_text(json.dumps(snapshot_to_json(ClusterSnapshot(brokers, parts))))
    return f


def test_cli_capacity_goals_and_exclusions(capsys, tmp_path, snap_file):
    cap = tmp_path / "capacity.json"
    cap.write_text(json.dumps(PLAIN))
    out = tmp_path / "plan.json"
    rc = main(
        [
            "cluster",
            "plan",
            "--snapshot",
            str(snap_file),
            "--capacity",
            str(cap),
            "--goals",
            "RackAwareGoal,DiskCapacityGoal,ReplicaDistributionGoal,LeaderReplicaDistributionGoal",
            "--exclude-topics",
            "t0",
            "--exclude-brokers-for-replica-move",
            "5",
            "--output",
            str(out),
            "--format",
            "json",
        ]
    )
    r = json.loads(capsys.readouterr().out)
    assert rc == 0 and not r["refused"]
    assert [g["goal"] for g in r["goals"]] == [
        "RackAwareGoal",
        "DiskCapacityGoal",
        "OfflineReplicasGoal",
        "ReplicaDistributionGoal",
        "LeaderReplicaDistributionGoal",
    ]
    assert r["headline"].endswith("only reorder replicas")
    moved = json.loads(out.read_text())["partitions"]
    for e in moved:
        before = (0, 1, 2) if e["partition"] % 4 else (3, 4, 5)
        assert e["topic"] != "t0" and (5 not in e["replicas"] or 5 in before)
    assert any(
        set(e["replicas"]) != set((0, 1, 2) if e["partition"] % 4 else (3, 4, 5)) for e in moved
    )


def test_cli_refuses_a_plan_that_breaks_a_hard_goal_and_writes_nothing(capsys, tmp_path, snap_file):
    tiny = {
        "brokerCapacities": [
            {
                "brokerId": -1,
                "capacity": {"DISK": "0.0001", "CPU": "100", "NW_IN": "1e6", "NW_OUT": "1e6"},
            }
        ]
    }
    cap = tmp_path / "tiny.json"
    cap.write_text(json.dumps(tiny))
    out = tmp_path / "plan.json"
    rc = main(
        [
            "cluster",
            "plan",
            "--snapshot",
            str(snap_file),
            "--capacity",
            str(cap),
            "--output",
            str(out),
        ]
    )
    text = capsys.readouterr().out
    assert rc == 1 and not out.exists()
    assert "refused" in text and "not met: DiskCapacityGoal: disk at" in text
    assert "None" not in text and "True" not in text and "e+" not in text


def test_cli_demote_and_bad_goal_flags(capsys, tmp_path, snap_file):
    out = tmp_path / "demote.json"
    rc = main(
        [
            "cluster",
            "plan",
            "--snapshot",
            str(snap_file),
            "--demote-brokers",
            "0",
            "--output",
            str(out),
            "--format",
            "json",
        ]
    )
    r = json.loads(capsys.readouterr().out)
    assert rc == 0 and r["mode"] == "demote" and r["replica_moves"] == 0 and r["bytes_moved"] == 0
    for e in json.loads(out.read_text())["partitions"]:
        assert e["replicas"][-1] == 0
    rc = main(["cluster", "plan", "--snapshot", str(snap_file), "--goals", "DiskGoalz"])
    err = capsys.readouterr().err
    assert rc == 2 and "--goals" in err and "DiskGoalz" in err
    rc = main(["cluster", "plan", "--snapshot", str(snap_file), "--exclude-topics", "("])
    assert rc == 2 and "--exclude-topics" in capsys.readouterr().err
    rc = main(
        ["cluster", "plan", "--snapshot", str(snap_file), "--capacity", str(tmp_path / "none.json")]
    )
    assert rc == 2 and "none.json" in capsys.readouterr().err


def test_cli_table_names_unmet_goals(capsys, snap_file):
    rc = main(
        [
            "cluster",
            "plan",
            "--snapshot",
            str(snap_file),
            "--band",
            "1.0",
            "--goals",
            "ReplicaDistributionGoal",
        ]
    )
    text = capsys.readouterr().out
    assert rc == 0
    assert "replica moves in" in text and "goals (in priority order)" in text
    assert "None" not in text and "True" not in text and "e+" not in text


def test_intra_broker_goals_are_reported_and_an_overfull_disk_refuses_the_plan():
    res = plan(jbod_cluster(), "full")
    rep = {r.goal: r for r in res.reports}
    assert rep["IntraBrokerDiskCapacityGoal"].satisfied
    assert rep["IntraBrokerDiskUsageDistributionGoal"].before["value"] == 2.0
    assert rep["IntraBrokerDiskUsageDistributionGoal"].satisfied
    # 24 replicas of 50 bytes on 3 brokers: 400 bytes each, two directories of 200 (160 usable)
    small = (LogDir("/d1", 200.0), LogDir("/d2", 200.0))
    snap = jbod_cluster()
    snap = ClusterSnapshot(tuple(replace(b, log_dirs=small) for b in snap.brokers), snap.partitions)
    res = plan(snap, "full")
    rep = {r.goal: r for r in res.reports}
    assert not rep["IntraBrokerDiskCapacityGoal"].satisfied and res.refused
    assert "log dirs stay above 80% of their capacity" in rep["IntraBrokerDiskCapacityGoal"].reason
