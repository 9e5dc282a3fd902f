"""`cluster execute` end to end against the simulated cluster, through the real kafka-python client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from execute_cli import (
    MB,
    WRITE_APIS,
    cluster,
    cluster_replicas,
    dead_broker_cluster,
    execute_argv,
    execute_cmd,
    files_fixture,  # noqa: F401 (the fixture `files`)
    interrupted_run,
    placement,
    plan_doc,
    run_cli,
    sim_fixture,  # noqa: F401 (the fixture `sim`)
    target,
)
from kafka_rebalance.cluster.snapshot import snapshot_to_json
from kafka_rebalance.errors import InputError
from kafka_rebalance.kafka.admin import KafkaAdmin
from kafka_rebalance.kafka.execute import load_state
from kafka_rebalance.kafka.sim_cluster import SimCluster
from kafka_rebalance.kafka.wire import messages as M


def test_dry_run_from_snapshot_prints_batches_and_writes_nothing(files, capsys, tmp_path):
    plan, snap, state = files
    out_dir = tmp_path / "batches"
    rc = run_cli(
        execute_cmd(
            plan,
            "--snapshot",
            str(snap),
            "--throttle",
            "1000000",
            "--max-moves-per-broker",
            "2",
            "--output-dir",
            str(out_dir),
            "--format",
            "json",
        )
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mode"] == "dry-run" and out["plan"]["partitions"] == 12
    assert out["plan"]["replica_moves"] == 8  # each orders partition gains one replica
    batches = out["plan"]["batches"]
    assert all(max(b["broker_slots"].values()) <= 2 for b in batches)
    assert sorted(
        (p["topic"], p["partition"]) for b in batches for p in b["reassignment"]["partitions"]
    ) == sorted(target())
    assert batches[0]["throttle"]["brokers"]["1"] == {
        "leader.replication.throttled.rate": "1000000",
        "follower.replication.throttled.rate": "1000000",
    }
    assert len(list(out_dir.iterdir())) == len(batches)
    assert not state.exists() and not Path(str(plan) + ".state.json").exists()


def test_dry_run_against_the_cluster_sends_no_writes(sim, files, capsys):
    plan, _, state = files
    before = placement(sim.snapshot())
    rc = run_cli(
        execute_cmd(
            plan, "--bootstrap-server", sim.bootstrap, "--throttle", "1000000", "--format", "json"
        )
    )
    assert rc == 0
    assert json.loads(capsys.readouterr().out)["mode"] == "dry-run"
    assert not {k for _, k, _ in sim.requests} & WRITE_APIS
    assert placement(sim.snapshot()) == before and not sim.state.reassignments
    assert all(not c for c in sim.state.broker_configs.values())
    assert not Path(str(plan) + ".state.json").exists()


def test_execute_moves_replicas_clears_throttles_and_elects(sim, files, capsys):
    plan, _, state = files
    rc = run_cli(execute_argv(plan, state, sim.bootstrap))
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["phase"] == "finished" and set(out["status"].values()) == {"done"}
    assert len(out["plan"]["batches"]) > 1
    snap = sim.snapshot()
    assert placement(snap) == target()
    assert all(p.leader == p.replicas[0] for p in snap.partitions)  # preferred leaders elected
    assert all(not c for c in sim.state.broker_configs.values())
    assert all(not c for c in sim.state.topic_configs.values())
    assert out["election"]["failed"] == {}
    apis = [k for _, k, _ in sim.requests]
    assert M.INCREMENTAL_ALTER_CONFIGS in apis and M.ELECT_LEADERS in apis
    assert load_state(state)["phase"] == "finished"
    # Copies took virtual time at the throttled rate: batches run one after another, and each lasts at least
    # as long as its biggest copy at 10 MB/s.
    bound = sum(
        max((m["size_bytes"] for m in b["moves"] if set(m["to"]) - set(m["from"])), default=0.0)
        for b in out["plan"]["batches"]
    ) / (10 * MB)
    assert sim.state.completed and sim.state.completed[-1][0] >= bound * 0.999


def test_stop_after_one_batch_then_resume(sim, files, capsys):
    plan, _, state = files
    assert run_cli(execute_argv(plan, state, sim.bootstrap, "--max-batches", "1")) == 0
    capsys.readouterr()
    st = load_state(state)
    statuses = [b["status"] for b in st["batches"]]
    assert statuses[0] == "done" and set(statuses[1:]) == {"pending"}
    moved = {(m["topic"], m["partition"]) for m in st["batches"][0]["moves"]}
    now = placement(sim.snapshot())
    for key, reps in target().items():
        assert (now[key] == reps) == (key in moved or cluster_replicas(key) == reps)
    # Starting afresh is refused while the state file is unfinished.
    assert run_cli(execute_argv(plan, state, sim.bootstrap)) == 2
    capsys.readouterr()
    assert run_cli(execute_argv(plan, state, sim.bootstrap, "--resume")) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["phase"] == "finished"
    assert placement(sim.snapshot()) == target()


def test_interrupt_mid_batch_and_resume(sim, files, capsys):
    plan, _, state = files
    interrupted_run(sim, state, 1)
    st = load_state(state)
    assert [b["status"] for b in st["batches"]][:2] == ["done", "submitted"]
    # Throttles of the interrupted batch are still set: the resume must clear them.
    assert any(sim.state.broker_configs.values())
    assert run_cli(execute_argv(plan, state, sim.bootstrap, "--resume")) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["phase"] == "finished"
    assert placement(sim.snapshot()) == target()
    assert all(not c for c in sim.state.broker_configs.values())


def test_refusals(sim, files, capsys, tmp_path):
    plan, snap, state = files
    # --execute on a snapshot
    assert run_cli(execute_cmd(plan, "--snapshot", str(snap), "--execute")) == 2
    # a plan naming a broker the cluster does not have
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [{"topic": "orders", "partition": 0, "replicas": [1, 2, 99]}],
            }
        )
    )
    assert run_cli(execute_cmd(bad, "--snapshot", str(snap))) == 2
    # resuming with a state file of another plan
    assert run_cli(execute_argv(plan, state, sim.bootstrap, "--max-batches", "1")) == 0
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"version": 1, "partitions": plan_doc()["partitions"][:3]}))
    assert run_cli(execute_argv(other, state, sim.bootstrap, "--resume")) == 2
    capsys.readouterr()


def test_plan_refuses_dead_and_unknown_brokers():
    from dataclasses import replace

    from kafka_rebalance.kafka.execute import plan_execution

    snap = cluster()
    dead = replace(snap, brokers=tuple(replace(b, alive=b.id != 6) for b in snap.brokers))
    with pytest.raises(InputError, match="broker 6 is not alive") as err:
        plan_execution(
            {("orders", 1): (2, 3, 4), ("orders", 0): (4, 5, 6)},
            dead,
            throttle=None,
            max_moves_per_broker=None,
            max_moves=None,
            source="plan.json",
        )
    assert (err.value.source, err.value.field) == (
        "plan.json",
        "partitions[1].replicas",
    )  # the entry in the file
    with pytest.raises(InputError, match="Unknown broker id 60") as err:
        plan_execution(
            {("orders", 0): (4, 5, 60)},
            snap,
            throttle=None,
            max_moves_per_broker=None,
            max_moves=None,
        )
    assert err.value.field == "partitions[0].replicas"
    with pytest.raises(InputError, match="Unable to find partition: nope-0") as err:
        plan_execution(
            {("orders", 0): (4, 5, 3), ("nope", 0): (4,)},
            snap,
            throttle=None,
            max_moves_per_broker=None,
            max_moves=None,
            source="plan.json",
        )
    assert (err.value.source, err.value.field) == ("plan.json", "partitions[1]")
    ok = plan_execution(
        {("orders", 0): (4, 5, 3)}, dead, throttle=5, max_moves_per_broker=1, max_moves=1
    )
    assert [len(b.moves) for b in ok.batches] == [1] and ok.batches[0].moves[0].adding == (4, 5)


def test_execute_a_decommission_plan_that_moves_replicas_off_a_dead_broker(tmp_path, capsys):
    from kafka_rebalance import cli

    snap_file, plan = tmp_path / "snap.json", tmp_path / "plan.json"
    snap_file.write_text(json.dumps(snapshot_to_json(dead_broker_cluster())))
    assert (
        cli.main(
            [
                "cluster",
                "plan",
                "--snapshot",
                str(snap_file),
                "--mode",
                "remove-brokers",
                "--brokers",
                "1",
                "--output",
                str(plan),
                "--format",
                "json",
            ]
        )
        == 0
    )
    capsys.readouterr()
    planned = {
        (e["topic"], e["partition"]): tuple(e["replicas"])
        for e in json.loads(plan.read_text())["partitions"]
    }
    assert ("t", 3) in planned and 5 not in planned[("t", 3)]
    with SimCluster(dead_broker_cluster(), speedup=200.0, broker_bandwidth=50 * MB) as s:
        rc = run_cli(execute_argv(plan, tmp_path / "state.json", s.bootstrap))
        out = json.loads(capsys.readouterr().out)
        assert rc == 0 and out["error"] is None and out["phase"] == "finished"
        # No throttle on the dead broker, in the plan or in the cluster; the live ones were set and cleared.
        assert all("5" not in b["throttle"]["brokers"] for b in out["plan"]["batches"])
        assert "1" in out["plan"]["batches"][0]["throttle"]["brokers"]
        assert all(not c for c in s.state.broker_configs.values())
        assert {b for b, _, _ in s.requests} <= {1, 2, 3, 4, 6}
        now = placement(s.snapshot())
    assert all(now[k] == v for k, v in planned.items())
    assert not any(1 in reps for reps in now.values())


def test_an_unreachable_broker_is_an_admin_error_naming_it(sim, monkeypatch):
    import functools

    from kafka.client_async import KafkaClient

    from kafka_rebalance.kafka.admin import AdminError

    # kafka-python waits a fixed 30 s (KafkaClient.await_ready) for a node it cannot connect to
    # before the send fails: the same path, with a shorter wait
    wait = functools.partialmethod(KafkaClient.await_ready, timeout_ms=1000)
    monkeypatch.setattr(KafkaClient, "await_ready", wait)
    with KafkaAdmin(sim.bootstrap, request_timeout_ms=2000) as admin:
        with pytest.raises(AdminError, match="broker 42"):
            admin.incremental_alter_configs(
                4, "42", [("leader.replication.throttled.rate", 0, "1")]
            )


def test_a_kafka_error_while_executing_exits_1_without_a_traceback(sim, files, capsys, monkeypatch):
    import kafka.errors

    plan, _, state = files

    def refuse(self, targets):
        raise kafka.errors.NodeNotReadyError(3)

    monkeypatch.setattr(KafkaAdmin, "alter_partition_reassignments", refuse)
    assert run_cli(execute_argv(plan, state, sim.bootstrap)) == 1
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err and "NodeNotReadyError" in cap.err
    out = json.loads(cap.out)
    assert "NodeNotReadyError" in out["error"] and out["status"]["0"] == "throttled"


def test_a_broker_that_stops_answering_is_named_and_the_run_exits_1(files, capsys, tmp_path):
    # Broker 6 crashed after the metadata was cached: the cluster still lists it, its port refuses.
    plan, _, state = files
    cfg = tmp_path / "client.properties"
    cfg.write_text("request.timeout.ms=3000\n")
    with SimCluster(cluster(), speedup=200.0, broker_bandwidth=50 * MB) as s:
        s._loop.call_soon_threadsafe(s._servers[sorted(s.ports).index(6)].close)
        rc = run_cli(execute_argv(plan, state, s.bootstrap, "--command-config", str(cfg)))
    cap = capsys.readouterr()
    assert rc == 1 and "Traceback" not in cap.err
    assert "to broker 6 failed" in " ".join(cap.err.split())  # rich may wrap the line
    out = json.loads(cap.out)
    assert "IncrementalAlterConfigs" in out["error"] and "broker 6" in out["error"]
    assert load_state(state)["batches"][0]["status"] == "pending"  # --resume starts the batch again
