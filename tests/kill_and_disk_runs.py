"""How the kill and full-disk tests run a command (tests/test_kill_and_disk*.py): `run` in a subprocess
(`RUNNER`) under a file size limit or a self-kill before its K-th file operation; `writers` names
each command that writes and its outputs; `prepare`, `write_old`, `files` and `hidden` make and
read a work folder; `placement` and `target_of` read a cluster's replicas."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = ROOT / "examples" / "cluster.json"

RUNNER = r"""
import json, os, resource, signal, sys
mode, argv = sys.argv[1], json.loads(sys.argv[2])
from kafka_rebalance import cli
cli.build_parser()
if mode.startswith("fsize:"):
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    limit = int(mode.split(":")[1])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
elif mode.startswith("kill:") or mode == "count":
    stop_at = int(mode.split(":")[1]) if mode != "count" else -1
    seen = [0]
    kill, getpid = os.kill, os.getpid
    def counted(fn):
        def call(*a, **k):
            seen[0] += 1
            if seen[0] == stop_at:
                kill(getpid(), signal.SIGKILL)
            return fn(*a, **k)
        return call
    for name in ("open", "fsync", "replace"):
        setattr(os, name, counted(getattr(os, name)))
rc = cli.main(argv)
if mode == "count":
    sys.stderr.write(f"OPS {seen[0]}\n")
sys.exit(rc)
"""


def run(mode: str, argv: list[str], sim=None, timeout: float = 120):
    """The command in a subprocess; "SIM" in argv stands for `sim`'s bootstrap (a SimCluster here)."""
    args = [str(a).replace("SIM", sim.bootstrap) if sim is not None else str(a) for a in argv]
    return subprocess.run(
        [sys.executable, "-c", RUNNER, mode, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class sim_for:
    """A simulated cluster (kafka/sim_cluster.py) for the writers that need one, else nothing."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.sim = None

    def __enter__(self):
        if self.name != "execute-state":
            return None
        from kafka_rebalance.kafka.sim_cluster import SimCluster
        from kafka_rebalance.ops.cluster_source import read_snapshot

        self.sim = SimCluster(read_snapshot(str(SNAPSHOT), None, None), speedup=500.0).start()
        return self.sim

    def __exit__(self, *exc) -> None:
        if self.sim is not None:
            self.sim.stop()


def hidden(d: Path) -> list[str]:
    """The writers' temporaries, journals and staging folders left anywhere under `d`."""
    return sorted(str(p.relative_to(d)) for p in d.rglob("*") if ".kr-" in p.name)


def files(d: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(d)): p.read_bytes()
        for p in sorted(d.rglob("*"))
        if p.is_file() and ".kr-" not in str(p)
    }


# -- the writers: argv for a workdir `w` and the outputs each writes -----------------------------


def writers(w: Path) -> dict[str, tuple[list[str], list[str]]]:
    """name -> (argv, outputs relative to w). Inputs: w/in/plan.json (made by `prepare`)."""
    snap = str(SNAPSHOT)
    plan = str(w / "in" / "plan.json")
    return {
        "plan": (
            [
                "cluster",
                "plan",
                "--snapshot",
                snap,
                "--output",
                w / "out" / "p.json",
                "--election-output",
                w / "out" / "e.json",
            ],
            ["out/p.json", "out/e.json"],
        ),
        "elect": (
            ["cluster", "elect", "--snapshot", snap, "--output", w / "out" / "e.json"],
            ["out/e.json"],
        ),
        "generate": (
            [
                "cluster",
                "generate",
                "--snapshot",
                snap,
                "--broker-list",
                "0,1,2",
                "--topics-to-move-json-file",
                w / "in" / "topics.json",
                "--output",
                w / "out" / "g.json",
            ],
            ["out/g.json"],
        ),
        "describe": (
            ["cluster", "describe", "--snapshot", snap, "--output", w / "out" / "s.json"],
            ["out/s.json"],
        ),
        "report": (["report", plan, "--out", w / "out" / "r.html"], ["out/r.html"]),
        "execute-batch-files": (
            [
                "cluster",
                "execute",
                "--reassignment-json-file",
                plan,
                "--snapshot",
                snap,
                "--max-moves-per-broker",
                "1",
                "--output-dir",
                w / "out",
            ],
            [f"out/batch-{i:03d}.json" for i in range(1, 4)],
        ),
        "simulate-events": (
            [
                "simulate",
                ROOT / "examples" / "crash.yaml",
                "--events-out",
                w / "out" / "ev.parquet",
            ],
            ["out/ev.parquet"],
        ),
        "execute-state": (
            [
                "cluster",
                "execute",
                "--reassignment-json-file",
                plan,
                "--bootstrap-server",
                "SIM",
                "--state-file",
                w / "out" / "st.json",
                "--execute",
                "--poll-interval",
                "0.01",
                "--max-moves-per-broker",
                "1",
                "--throttle",
                "100000000",
                "--format",
                "json",
            ],
            ["out/st.json", "out/plan.json.rollback.json"],
        ),
    }


def prepare(w: Path) -> None:
    (w / "in").mkdir(parents=True)
    (w / "out").mkdir()
    (w / "in" / "topics.json").write_text('{"version": 1, "topics": [{"topic": "topic-00000"}]}')
    from kafka_rebalance import cli

    assert (
        cli.main(
            [
                "cluster",
                "plan",
                "--snapshot",
                str(SNAPSHOT),
                "--output",
                str(w / "in" / "plan.json"),
                "--format",
                "json",
            ]
        )
        == 0
    )


OLD = b'{"old": "an earlier run\'s output"}\n'


def write_old(w: Path, outputs: list[str]) -> None:
    for o in outputs:
        (w / o).parent.mkdir(parents=True, exist_ok=True)
        (w / o).write_bytes(OLD)


def placement(snap) -> dict:
    return {(p.topic, p.partition): tuple(p.replicas) for p in snap.partitions}


def target_of(w: Path) -> dict:
    doc = json.loads((w / "in" / "plan.json").read_text())
    want = {(e["topic"], e["partition"]): tuple(e["replicas"]) for e in doc["partitions"]}
    from kafka_rebalance.ops.cluster_source import read_snapshot

    return {**placement(read_snapshot(str(SNAPSHOT), None, None)), **want}


# -- full disk -------------------------------------------------------------------------------------
