"""Shared by the `cluster execute` tests: the example cluster and plan, the CLI run (`run_cli`), the
execute command lines (`execute_cmd`, `execute_argv`), a run interrupted at a batch
(`interrupted_run`), a cluster with a dead broker and plan files, and the `sim` and `files` fixtures.

A test module imports the fixtures (`from execute_cli import files_fixture, sim_fixture`), which
pytest then finds as `files` and `sim`; they are not in conftest.py, where `sim` would reach every
module (tests/test_sim_cluster_wire.py has a `sim` of its own)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_rebalance.cluster.snapshot import snapshot_to_json
from kafka_rebalance.errors import InputError
from kafka_rebalance.kafka.admin import KafkaAdmin
from kafka_rebalance.kafka.execute import Executor
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


def start_sim() -> SimCluster:
    """The example cluster, simulated and started (the `sim` fixture stops it)."""
    return SimCluster(cluster(), speedup=200.0, broker_bandwidth=50 * MB).start()


@pytest.fixture(name="sim")
def sim_fixture() -> Iterator[SimCluster]:
    """The example cluster, simulated, for one test."""
    s = start_sim()
    yield s
    s.stop()


@pytest.fixture(name="files")
def files_fixture(tmp_path: Path) -> tuple[Path, Path, Path]:
    """`example_files` under the test's tmp_path: plan, snapshot, state file."""
    return example_files(tmp_path)


def example_files(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The example plan and snapshot written under `tmp_path`, and where the state file goes."""
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(plan_doc()))
    snap = tmp_path / "snapshot.json"
    snap.write_text(json.dumps(snapshot_to_json(cluster())))
    return plan, snap, tmp_path / "state.json"


def placement(s: ClusterSnapshot) -> dict:
    return {(p.topic, p.partition): p.replicas for p in s.partitions}


def target() -> dict:
    return {(e["topic"], e["partition"]): tuple(e["replicas"]) for e in plan_doc()["partitions"]}


def execute_cmd(plan, *args: str) -> list[str]:
    """`cluster execute --reassignment-json-file PLAN ARGS...`."""
    return ["cluster", "execute", "--reassignment-json-file", str(plan), *args]


def execute_argv(plan, state, bootstrap, *extra) -> list[str]:
    """The example run against `bootstrap`: 10 MB/s, 2 moves per broker, JSON out, then `extra`."""
    return execute_cmd(
        plan,
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
    )


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


def write_plan(tmp_path: Path, partitions: list, name: str = "p.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"version": 1, "partitions": partitions}))
    return path
