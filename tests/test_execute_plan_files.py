"""`cluster execute` and the reviewed defects of its plan files: log dirs kept in the batch files and
refused naming the file and entry, an empty plan refused as the tool does, CLI errors naming the
plan entry and the flag, and a new throttle on --resume applied and recorded."""

from __future__ import annotations

import json

import pytest

from execute_cli import (
    MB,
    dead_broker_cluster,
    execute_argv,
    execute_cmd,
    files_fixture,  # noqa: F401 (the fixture `files`)
    interrupted_run,
    placement,
    run_cli,
    sim_fixture,  # noqa: F401 (the fixture `sim`)
    target,
    write_plan,
)
from kafka_rebalance.cluster.snapshot import snapshot_to_json
from kafka_rebalance.kafka.admin import KafkaAdmin
from kafka_rebalance.kafka.execute import load_state


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
            execute_cmd(
                plan,
                "--snapshot",
                str(snap),
                "--output-dir",
                str(out_dir),
                "--max-moves",
                "1",
                "--format",
                "json",
            )
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
    assert run_cli(execute_cmd(plan, "--snapshot", str(snap))) == 2
    cap = capsys.readouterr()
    msg = " ".join((cap.out + cap.err).split())
    assert str(plan) in msg and "field 'partitions[1].log_dirs" in msg and why in msg


@pytest.mark.parametrize(
    "mode", [["--snapshot", "SNAP"], ["--bootstrap-server", "127.0.0.1:1", "--execute"]]
)
def test_an_empty_plan_is_refused_as_the_tool_does(files, capsys, tmp_path, mode):
    _, snap, _ = files
    plan = write_plan(tmp_path, [])
    argv = execute_cmd(plan, *[str(snap) if a == "SNAP" else a for a in mode])
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
    assert run_cli(execute_cmd(plan, "--snapshot", str(dead))) == 2
    msg = " ".join("".join(capsys.readouterr()).split())
    assert f"{plan}: field 'partitions[1].replicas'" in msg and "broker 5 is not alive" in msg
    for flag in (
        "--max-moves-per-broker",
        "--max-moves",
        "--max-batches",
        "--poll-interval",
        "--batch-timeout",
    ):
        assert run_cli(execute_cmd(plan, "--snapshot", str(dead), flag, "0")) == 2
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
