"""`cluster execute` end to end against the simulated cluster, through the real kafka-python client."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from kafka_rebalance.cluster.snapshot import snapshot_to_json
from kafka_rebalance.errors import InputError
from kafka_rebalance.kafka.admin import KafkaAdmin
from kafka_rebalance.kafka.execute import Executor, load_state
from kafka_rebalance.kafka.sim_cluster import SimCluster
from kafka_rebalance.kafka.wire import messages as M
from kafka_rebalance.model import Broker, ClusterSnapshot, PartitionLoad, PartitionReplicas

MB = 1_000_000
WRITE_APIS = {
    M.ALTER_CONFIGS,
    M.INCREMENTAL_ALTER_CONFIGS,
    M.ALTER_PARTITION_REASSIGNMENTS,
    M.ELECT_LEADERS,
}


def cluster() -> ClusterSnapshot:
    brokers = tuple(Broker(i, rack="abc"[i % 3]) for i in range(1, 7))
    parts = []
    for t, n in (("orders", 8), ("payments", 4)):
        for p in range(n):
            reps = (1 + p % 6, 1 + (p + 1) % 6, 1 + (p + 2) % 6)
            load = PartitionLoad(size_bytes=float((1 + p % 3) * MB))
            parts.append(PartitionReplicas(t, p, reps, reps[0], reps, load))
    return ClusterSnapshot(brokers, tuple(parts))


def plan_doc() -> dict:
    """Shift every orders replica one broker up, reverse payments' replica lists (leadership-only change)."""
    parts = []
    for p in cluster().partitions:
        if p.topic == "orders":
            new = [1 + (r % 6) for r in p.replicas]
        else:
            new = list(reversed(p.replicas))
        parts.append({"topic": p.topic, "partition": p.partition, "replicas": new})
    return {"version": 1, "partitions": parts}


def run_cli(argv: list[str]) -> int:
    """`kafka-rebalance cluster execute ...` in-process: through cli.main when cluster_cmd registers execute."""
    from kafka_rebalance import cli

    parser = cli.build_parser()
    try:
        ns = parser.parse_args(argv)
        wired = getattr(ns, "func", None) is not None
    except SystemExit:
        wired = False
    if wired:
        return cli.main(argv)
    from kafka_rebalance.commands.cluster_execute import register as register_execute

    top = argparse.ArgumentParser(prog="kafka-rebalance")
    sub = top.add_subparsers(dest="command")
    cluster_parser = sub.add_parser("cluster")
    register_execute(cluster_parser.add_subparsers(dest="cluster_command"))
    args = top.parse_args(argv)
    try:
        return args.func(args)
    except InputError as exc:
        print(f"error: {exc}")
        return 2


@pytest.fixture()
def sim():
    s = SimCluster(cluster(), speedup=200.0, broker_bandwidth=50 * MB).start()
    yield s
    s.stop()


@pytest.fixture()
def files(tmp_path: Path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(plan_doc()))
    snap = tmp_path / "snapshot.json"
    snap.write_text(json.dumps(snapshot_to_json(cluster())))
    return plan, snap, tmp_path / "state.json"


def placement(s: ClusterSnapshot) -> dict:
    return {(p.topic, p.partition): p.replicas for p in s.partitions}


def target() -> dict:
    return {(e["topic"], e["partition"]): tuple(e["replicas"]) for e in plan_doc()["partitions"]}


def execute_argv(plan, state, bootstrap, *extra) -> list[str]:
    return [
        "cluster",
        "execute",
        "--reassignment-json-file",
        str(plan),
        "--bootstrap-server",
        bootstrap,
        "--throttle",
        str(10 * MB),
        "--max-moves-per-broker",
        "2",
        "--state-file",
        str(state),
        "--poll-interval",
        "0.02",
        "--batch-timeout",
        "60",
        "--format",
        "json",
        "--execute",
        *extra,
    ]


def test_dry_run_from_snapshot_prints_batches_and_writes_nothing(files, capsys, tmp_path):
    plan, snap, state = files
    out_dir = tmp_path / "batches"
    rc = run_cli(
        [
            "cluster",
            "execute",
            "--reassignment-json-file",
            str(plan),
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
        ]
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
        [
            "cluster",
            "execute",
            "--reassignment-json-file",
            str(plan),
            "--bootstrap-server",
            sim.bootstrap,
            "--throttle",
            "1000000",
            "--format",
            "json",
        ]
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


def cluster_replicas(key):
    return placement(cluster())[key]


def interrupted_run(sim, state, batch: int):
    """Run the plan (10 MB/s, 2 moves per broker per batch) and stop it once batch `batch` is submitted."""
    from kafka_rebalance.cluster.batches import parse_reassignment
    from kafka_rebalance.kafka.execute import plan_digest, plan_execution, state_from_plan

    def interrupt(index: int, status: str) -> None:
        if index == batch and status == "submitted":
            raise KeyboardInterrupt

    with KafkaAdmin(sim.bootstrap) as admin:
        xplan = plan_execution(
            parse_reassignment(plan_doc()),
            admin.snapshot(),
            throttle=10 * MB,
            max_moves_per_broker=2,
            max_moves=None,
            digest=plan_digest(plan_doc()),
        )
        ex = Executor(
            admin,
            state_from_plan(xplan, sim.bootstrap),
            state,
            poll_interval_s=0.02,
            on_step=interrupt,
        )
        ex.save()
        with pytest.raises(KeyboardInterrupt):
            ex.run()
    return xplan


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
    assert (
        run_cli(
            [
                "cluster",
                "execute",
                "--reassignment-json-file",
                str(plan),
                "--snapshot",
                str(snap),
                "--execute",
            ]
        )
        == 2
    )
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
    assert (
        run_cli(
            ["cluster", "execute", "--reassignment-json-file", str(bad), "--snapshot", str(snap)]
        )
        == 2
    )
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


def dead_broker_cluster() -> ClusterSnapshot:
    """Broker 5 is down; t-3 has replicas [5, 1, 2]; every partition's ISR lacks 5."""
    brokers = tuple(Broker(i, rack="abc"[i % 3], alive=i != 5) for i in range(1, 7))
    parts = []
    for p in range(6):
        reps = (5, 1, 2) if p == 3 else (1 + p % 6, 1 + (p + 1) % 6, 1 + (p + 2) % 6)
        isr = tuple(r for r in reps if r != 5)
        parts.append(
            PartitionReplicas("t", p, reps, isr[0], isr, PartitionLoad(size_bytes=float(MB)))
        )
    return ClusterSnapshot(brokers, tuple(parts))


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


# ---------------------------------------------------------------------------
# Reviewed defects: log_dirs, empty plans, flags on --resume, error wording.


def write_plan(tmp_path: Path, partitions: list, name: str = "p.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"version": 1, "partitions": partitions}))
    return path


def test_dry_run_keeps_log_dirs_in_the_batch_files(files, capsys, tmp_path):
    _, snap, _ = files
    plan = write_plan(
        tmp_path,
        [
            {
                "topic": "orders",
                "partition": 0,
                "replicas": [2, 1, 3],
                "log_dirs": ["/data/d2", "any", "any"],
            },
            # same replicas, only a log dir move: the tool still moves it, so it is a change
            {
                "topic": "orders",
                "partition": 1,
                "replicas": [2, 3, 4],
                "log_dirs": ["any", "/data/d1", "any"],
            },
            {"topic": "orders", "partition": 2, "replicas": [4, 5, 3]},
        ],
    )
    out_dir = tmp_path / "batches"
    assert (
        run_cli(
            [
                "cluster",
                "execute",
                "--reassignment-json-file",
                str(plan),
                "--snapshot",
                str(snap),
                "--output-dir",
                str(out_dir),
                "--max-moves",
                "1",
                "--format",
                "json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    written = {}
    for f in sorted(out_dir.iterdir()):
        for e in json.loads(f.read_text())["partitions"]:
            written[(e["topic"], e["partition"])] = (e["replicas"], e["log_dirs"])
    assert written == {
        ("orders", 0): ([2, 1, 3], ["/data/d2", "any", "any"]),
        ("orders", 1): ([2, 3, 4], ["any", "/data/d1", "any"]),
        ("orders", 2): ([4, 5, 3], ["any", "any", "any"]),
    }
    moves = {(m["topic"], m["partition"]): m for b in out["plan"]["batches"] for m in b["moves"]}
    assert (
        moves[("orders", 0)]["log_dirs"] == ["/data/d2", "any", "any"]
        and "log_dirs" not in moves[("orders", 2)]
    )


@pytest.mark.parametrize(
    "log_dirs, why",
    [
        (["data/d2", "any"], "absolute"),
        (["any"], "one per replica"),
        ([1, "any"], "list of log dirs"),
    ],
)
def test_bad_log_dirs_name_the_file_and_the_entry(files, capsys, tmp_path, log_dirs, why):
    _, snap, _ = files
    plan = write_plan(
        tmp_path,
        [
            {"topic": "orders", "partition": 0, "replicas": [1, 2, 3]},
            {"topic": "orders", "partition": 1, "replicas": [2, 1], "log_dirs": log_dirs},
        ],
    )
    assert (
        run_cli(
            ["cluster", "execute", "--reassignment-json-file", str(plan), "--snapshot", str(snap)]
        )
        == 2
    )
    cap = capsys.readouterr()
    msg = " ".join((cap.out + cap.err).split())
    assert str(plan) in msg and "field 'partitions[1].log_dirs" in msg and why in msg


@pytest.mark.parametrize(
    "mode", [["--snapshot", "SNAP"], ["--bootstrap-server", "127.0.0.1:1", "--execute"]]
)
def test_an_empty_plan_is_refused_as_the_tool_does(files, capsys, tmp_path, mode):
    _, snap, _ = files
    plan = write_plan(tmp_path, [])
    argv = [
        "cluster",
        "execute",
        "--reassignment-json-file",
        str(plan),
        *[str(snap) if a == "SNAP" else a for a in mode],
    ]
    assert run_cli(argv) == 2
    cap = capsys.readouterr()
    msg = " ".join((cap.out + cap.err).split())
    assert "Partition reassignment list cannot be empty" in msg and str(plan) in msg
    assert cap.out.strip() == "" or "error" in cap.out  # no run printed


def test_cli_errors_name_the_plan_entry_and_the_flag(files, capsys, tmp_path):
    _, snap, _ = files
    dead = tmp_path / "dead.json"
    dead.write_text(json.dumps(snapshot_to_json(dead_broker_cluster())))
    plan = write_plan(
        tmp_path,
        [
            {"topic": "t", "partition": 0, "replicas": [1, 2, 3]},
            {"topic": "t", "partition": 1, "replicas": [2, 5, 4]},
        ],
    )
    assert (
        run_cli(
            ["cluster", "execute", "--reassignment-json-file", str(plan), "--snapshot", str(dead)]
        )
        == 2
    )
    msg = " ".join("".join(capsys.readouterr()).split())
    assert f"{plan}: field 'partitions[1].replicas'" in msg and "broker 5 is not alive" in msg
    for flag in (
        "--max-moves-per-broker",
        "--max-moves",
        "--max-batches",
        "--poll-interval",
        "--batch-timeout",
    ):
        assert (
            run_cli(
                [
                    "cluster",
                    "execute",
                    "--reassignment-json-file",
                    str(plan),
                    "--snapshot",
                    str(dead),
                    flag,
                    "0",
                ]
            )
            == 2
        )
        msg = " ".join("".join(capsys.readouterr()).split())
        assert f"field '{flag}'" in msg and "got 0" in msg


def test_resume_with_a_new_throttle_applies_and_records_it(sim, files, capsys, monkeypatch):
    plan, _, state = files
    xplan = interrupted_run(sim, state, 0)
    in_flight = {str(b) for b in xplan.batches[0].throttle.brokers}
    # A different split on --resume is refused, naming the flag.
    assert (
        run_cli(execute_argv(plan, state, sim.bootstrap, "--resume", "--max-moves-per-broker", "3"))
        == 2
    )
    assert "field '--max-moves-per-broker'" in " ".join("".join(capsys.readouterr()).split())

    sets: list[tuple[str, str]] = []
    original = KafkaAdmin.incremental_alter_configs

    def spy(self, resource_type, name, ops):
        ops = list(ops)
        sets.extend(
            (name, v) for k, op, v in ops if op == 0 and k == "leader.replication.throttled.rate"
        )
        return original(self, resource_type, name, ops)

    monkeypatch.setattr(KafkaAdmin, "incremental_alter_configs", spy)
    argv = execute_argv(plan, state, sim.bootstrap, "--resume")
    argv[argv.index("--throttle") + 1] = str(20 * MB)
    assert run_cli(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["phase"] == "finished" and out["plan"]["throttle"] == 20 * MB
    assert out["throttle_changes"] == [{"from": 10 * MB, "to": 20 * MB}]
    st = load_state(state)
    assert st["throttle"] == 20 * MB and st["throttle_changes"] == [
        {"from": 10 * MB, "to": 20 * MB}
    ]
    # the batch in flight got the new rate at once, before the later batches started
    assert {n for n, _ in sets[: len(in_flight)]} == in_flight and {v for _, v in sets} == {
        str(20 * MB)
    }
    assert placement(sim.snapshot()) == target()
    assert all(not c for c in sim.state.broker_configs.values())


# ---------------------------------------------------------------------------
# --command-config: Kafka's SASL default and numeric properties.


def test_sasl_without_a_mechanism_defaults_to_gssapi_as_kafka_does(monkeypatch, tmp_path, capsys):
    import sys
    import types

    from kafka_rebalance.kafka.admin import admin_kwargs

    props = {"security.protocol": "SASL_SSL", "sasl.kerberos.service.name": "kafka"}
    monkeypatch.setitem(
        sys.modules, "gssapi", types.ModuleType("gssapi")
    )  # as if the package were installed
    assert admin_kwargs(props)["sasl_mechanism"] == "GSSAPI"
    monkeypatch.setitem(sys.modules, "gssapi", None)  # not installed: import fails
    with pytest.raises(InputError, match="gssapi") as err:
        admin_kwargs(props, source="client.properties")
    assert (err.value.source, err.value.field) == ("client.properties", "sasl.mechanism")
    # Through the CLI: exit 2 and a message naming the file and the property, no KeyError traceback.
    cfg = tmp_path / "client.properties"
    cfg.write_text("security.protocol=SASL_SSL\n")
    plan = write_plan(tmp_path, [{"topic": "orders", "partition": 0, "replicas": [2, 1, 3]}])
    for extra in ([], ["--execute", "--state-file", str(tmp_path / "st.json")]):
        assert (
            run_cli(
                [
                    "cluster",
                    "execute",
                    "--reassignment-json-file",
                    str(plan),
                    "--bootstrap-server",
                    "127.0.0.1:1",
                    "--command-config",
                    str(cfg),
                    *extra,
                ]
            )
            == 2
        )
        cap = capsys.readouterr()
        msg = " ".join((cap.out + cap.err).split())
        assert (
            f"{cfg}: field 'sasl.mechanism'" in msg and "GSSAPI" in msg and "Traceback" not in msg
        )


@pytest.mark.parametrize(
    "props, field, words",
    [
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"},
            "sasl.jaas.config",
            "username",
        ),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "KERBEROS"},
            "sasl.mechanism",
            "unknown",
        ),
        (
            {"request.timeout.ms": "30s"},
            "request.timeout.ms",
            "Invalid value 30s for configuration request.timeout.ms: Not a number of type INT",
        ),
        ({"request.timeout.ms": "-5"}, "request.timeout.ms", "Value must be at least 0"),
        ({"request.timeout.ms": "3000000000"}, "request.timeout.ms", "Not a number of type INT"),
        ({"metadata.max.age.ms": "1.5"}, "metadata.max.age.ms", "Not a number of type LONG"),
        ({"default.api.timeout.ms": "soon"}, "default.api.timeout.ms", "Not a number of type INT"),
        ({"retry.backoff.ms": ""}, "retry.backoff.ms", "Not a number of type LONG"),
    ],
)
def test_bad_command_config_names_the_file_property_and_value(props, field, words):
    from kafka_rebalance.kafka.admin import admin_kwargs

    with pytest.raises(InputError) as err:
        admin_kwargs(props, source="c.properties")
    assert (err.value.source, err.value.field) == (
        "c.properties",
        field,
    ) and words in err.value.message


def test_numeric_command_config_properties_map_to_kafka_python():
    from kafka_rebalance.kafka.admin import admin_kwargs

    kw = admin_kwargs(
        {
            "request.timeout.ms": " 5000 ",
            "metadata.max.age.ms": "+60000",
            "send.buffer.bytes": "-1",
            "receive.buffer.bytes": "65536",
            "retries": "3",
            "security.protocol": "sasl_plaintext",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.jaas.config": 'x required username="u" password="p";',
        }
    )
    assert kw == {
        "request_timeout_ms": 5000,
        "metadata_max_age_ms": 60000,
        "receive_buffer_bytes": 65536,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": "u",
        "sasl_plain_password": "p",
    }
