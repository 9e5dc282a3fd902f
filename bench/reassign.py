"""Reassignment at size on a real 3-broker Kafka cluster: our plan + execute next to kafka-reassign-partitions.sh.

One topic set (TOPICS x PARTITIONS, RF 2, every replica on brokers 1 and 2, one small record in
each partition) is created. We time `kafka-rebalance cluster plan` (full mode: it moves replicas
onto the empty broker 3) and `kafka-rebalance cluster execute --execute --throttle` (which waits
for the moves, verifies, clears the throttles and elects the preferred leaders), then `--verify`.
The rollback JSON it printed puts everything back (our execute again, timed too), and then Kafka's
tool executes the same plan with the same throttle, with `--verify` run until it reports every
partition completed (the tool's way to finish: it then clears the throttles). Times are wall
clock, side by side in one run; the machine is shared, so only ratios mean much.

    .venv/bin/python bench/reassign.py [--topics 20] [--partitions 100] [--throttle 50000000]
        [--bootstrap-server HOST:PORT] [--json FILE]

Without --bootstrap-server a fresh cluster is started with ../shared/kafka/start-kafka.sh and
stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KAFKA = Path(os.environ.get("KAFKA_HOME_DIR", REPO.parent / "shared" / "kafka"))
CLI = [sys.executable, "-m", "kafka_rebalance"]


def sh(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "KAFKA_VENV": str(REPO / ".venv")}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, **kw)


def create_set(
    bootstrap: str, prefix: str, topics: int, partitions: int, record_bytes: int
) -> None:
    import confluent_kafka as ck
    from kafka.admin import KafkaAdminClient, NewTopic

    layout = {p: [1, 2] if p % 2 == 0 else [2, 1] for p in range(partitions)}
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=120000)
    try:
        admin.create_topics(
            [
                NewTopic(f"{prefix}-{t:02d}", -1, -1, replica_assignments=layout)
                for t in range(topics)
            ],
            timeout_ms=120000,
        )
    finally:
        admin.close()
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "acks": 1})
    value = b"r" * record_bytes
    for t in range(topics):
        for p in range(partitions):
            producer.produce(f"{prefix}-{t:02d}", value=value, partition=p)
            producer.poll(0)
    producer.flush(300)


def timed(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    out = sh(cmd)
    return time.perf_counter() - start, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topics", type=int, default=20)
    ap.add_argument("--partitions", type=int, default=100, help="per topic")
    ap.add_argument("--record-bytes", type=int, default=1024, help="data per partition")
    ap.add_argument("--throttle", type=int, default=50_000_000, help="bytes/s, both tools")
    ap.add_argument("--bootstrap-server", default=None)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-reassign-"))
    cluster_dir = None
    bootstrap = args.bootstrap_server
    if bootstrap is None:
        out = sh([str(KAFKA / "start-kafka.sh"), "-q", "-n", "3", "--venv", str(REPO / ".venv")])
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            return 1
        env = dict(
            line.replace("export ", "").split("=", 1)
            for line in out.stdout.splitlines()
            if "=" in line
        )
        bootstrap, cluster_dir = env["KAFKA_BOOTSTRAP"].strip("'\""), env["KAFKA_DIR"].strip("'\"")
    try:
        n = args.topics * args.partitions
        t0 = time.perf_counter()
        create_set(bootstrap, "set", args.topics, args.partitions, args.record_bytes)
        setup_s = time.perf_counter() - t0
        plan = work / "plan.json"
        snap = work / "snap.json"
        sh([*CLI, "cluster", "describe", "--bootstrap-server", bootstrap, "--output", str(snap)])
        doc = json.loads(snap.read_text())
        doc["partitions"] = [p for p in doc["partitions"] if p["topic"].startswith("set-")]
        snap.write_text(json.dumps(doc))
        plan_s, out = timed(
            [
                *CLI,
                "cluster",
                "plan",
                "--snapshot",
                str(snap),
                "--mode",
                "full",
                "--output",
                str(plan),
            ]
        )
        assert plan.exists(), out.stderr
        moves = json.loads(plan.read_text())["partitions"]
        theirs_plan = plan

        def ours(plan_path: Path) -> tuple[float, subprocess.CompletedProcess]:
            return timed(
                [
                    *CLI, "cluster", "execute", "--bootstrap-server", bootstrap,
                    "--reassignment-json-file", str(plan_path), "--execute",
                    "--throttle", str(args.throttle), "--max-moves-per-broker", str(n),
                    "--max-moves", str(n), "--poll-interval", "0.5", "--format", "json",
                    "--state-file", str(plan_path) + ".state",
                ]
            )  # fmt: skip

        ours_s, out = ours(plan)
        assert out.returncode == 0, out.stderr[-2000:]
        verify_s, vout = timed(
            [
                *CLI, "cluster", "execute", "--bootstrap-server", bootstrap,
                "--reassignment-json-file", str(plan), "--verify",
            ]
        )  # fmt: skip
        assert "still in progress" not in vout.stdout
        rollback = work / "plan.json.rollback.json"
        back_s, out = ours(rollback)
        assert out.returncode == 0, out.stderr[-2000:]
        tool = str(KAFKA / "bin" / "kafka-reassign-partitions.sh")
        start = time.perf_counter()
        out = sh(
            [
                tool, "--bootstrap-server", bootstrap, "--reassignment-json-file", str(theirs_plan),
                "--execute", "--throttle", str(args.throttle),
            ]
        )  # fmt: skip
        assert out.returncode == 0, out.stdout[-2000:]
        rounds = 0
        while True:
            rounds += 1
            v = sh(
                [
                    tool, "--bootstrap-server", bootstrap, "--reassignment-json-file",
                    str(theirs_plan), "--verify",
                ]
            )  # fmt: skip
            if "still in progress" not in v.stdout and "Clearing" in v.stdout:
                break
        kafka_s = time.perf_counter() - start
        result = {
            "partitions": n,
            "partitions_in_plan": len(moves),
            "replica_moves": sum(1 for m in moves for r in m["replicas"] if r == 3),
            "throttle": args.throttle,
            "setup_seconds": round(setup_s, 1),
            "plan_seconds": round(plan_s, 2),
            "ours_execute_seconds": round(ours_s, 2),
            "ours_verify_seconds": round(verify_s, 2),
            "ours_rollback_execute_seconds": round(back_s, 2),
            "kafka_execute_until_verified_seconds": round(kafka_s, 2),
            "kafka_verify_rounds": rounds,
            "ratio_ours_over_kafka": round(ours_s / kafka_s, 3),
        }
        print(json.dumps(result, indent=2))
        if args.json:
            args.json.write_text(json.dumps(result, indent=2))
    finally:
        if cluster_dir:
            sh([str(KAFKA / "stop-kafka.sh"), "--dir", cluster_dir])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
