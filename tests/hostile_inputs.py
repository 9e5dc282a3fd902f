"""The valid inputs the hostile-input tests start from (the examples' group, scenario and cluster, a
plan, topics to move, a capacity file, describe text, a reset CSV) and how they run a command on
one: `set_path` changes one field, `write_input` writes the file, `argv_for` is the command line
of a format, `run_cli` runs it, `assert_refused` checks the one-line refusal and that nothing was
written (tests/test_hostile_limits.py, tests/test_hostile_limits_fuzz.py)."""

from __future__ import annotations

import contextlib
import copy
import io
import json
from pathlib import Path
from typing import Any

import yaml

from kafka_rebalance import cli

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"
GROUP = yaml.safe_load((EX / "group.yaml").read_text())
SCENARIO = yaml.safe_load((EX / "crash.yaml").read_text())
SNAPSHOT = json.loads((EX / "cluster.json").read_text())
PLAN = {
    "version": 1,
    "partitions": [
        {"topic": "topic-00000", "partition": 0, "replicas": [1, 2, 3]},
        {"topic": "topic-00000", "partition": 1, "replicas": [2, 3, 4], "log_dirs": ["any"] * 3},
    ],
}
TOPICS_TO_MOVE = {"version": 1, "topics": [{"topic": "topic-00000"}]}
CAPACITY = {
    "brokerCapacities": [
        {
            "brokerId": "-1",
            "capacity": {"DISK": "100000", "CPU": "100", "NW_IN": "10000", "NW_OUT": "10000"},
        }
    ]
}
DESCRIBE = (
    "Topic: orders\tTopicId: x\tPartitionCount: 2\tReplicationFactor: 2\tConfigs:\n"
    "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\n"
    "\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2,3\tIsr: 2,3\n"
)
RESET_CSV = "orders,0,5\norders,1,7\n"
BIG32 = 2**31  # one past Kafka's int32
NOWHERE = "127.0.0.1:1"  # nothing listens: a command that got past its input checks exits 1


def set_path(doc: Any, path: tuple, value: Any) -> Any:
    """A deep copy of `doc` with `path` set to `value` (or deleted when value is DELETE)."""
    out = copy.deepcopy(doc)
    node = out
    for k in path[:-1]:
        node = node[k]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


DELETE = object()


# -- the commands reading each format, outputs under tmp/out ---------------------------------------


def argv_for(fmt: str, f: Path, tmp: Path) -> list[str]:
    out = tmp / "out"
    snap = str(EX / "cluster.json")
    return {
        "group": ["assign", "--strategy", "cooperative-sticky", str(f)],
        "scenario": ["simulate", "--events-out", str(out / "ev.jsonl"), str(f)],
        "snapshot": ["cluster", "plan", "--snapshot", str(f), "--output", str(out / "p.json")],
        "describe": ["cluster", "skew", "--snapshot", str(f)],
        "plan": [
            "cluster",
            "execute",
            "--reassignment-json-file",
            str(f),
            "--snapshot",
            snap,
            "--output-dir",
            str(out),
        ],
        "topics": [
            "cluster",
            "generate",
            "--snapshot",
            snap,
            "--topics-to-move-json-file",
            str(f),
            "--broker-list",
            "0,1,2",
            "--output",
            str(out / "g.json"),
        ],
        "capacity": [
            "cluster",
            "plan",
            "--snapshot",
            snap,
            "--capacity",
            str(f),
            "--output",
            str(out / "p.json"),
        ],
        "csv": [
            "group",
            "reset-offsets",
            "--group",
            "g",
            "--from-file",
            str(f),
            "--bootstrap-server",
            NOWHERE,
            "--dry-run",
        ],
        "report": ["report", str(f), "--out", str(out / "r.html")],
        "election": [
            "cluster",
            "elect",
            "--execute",
            "--bootstrap-server",
            NOWHERE,
            "--election-type",
            "preferred",
            "--path-to-json-file",
            str(f),
        ],
    }[fmt]


SUFFIX = {"describe": ".txt", "csv": ".csv", "scenario": ".yaml"}


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(argv)
    return rc, out.getvalue(), err.getvalue()


def write_input(
    tmp: Path, fmt: str, content: Any, as_yaml: bool = False, suffix: str | None = None
) -> Path:
    suffix = suffix or (".yaml" if as_yaml else SUFFIX.get(fmt, ".json"))
    f = tmp / f"input-{fmt}{suffix}"
    if isinstance(content, str):
        f.write_text(content, encoding="utf-8")
    elif suffix == ".yaml":
        f.write_text(yaml.safe_dump(content, allow_unicode=True), encoding="utf-8")
    else:
        f.write_text(json.dumps(content), encoding="utf-8")
    return f


def assert_refused(rc: int, out: str, err: str, tmp: Path, names: list[str], code: int = 2):
    lines = err.strip().splitlines()
    assert rc == code, err
    assert len(lines) == 1, err
    assert "Traceback" not in err and out == "", err
    for n in names:
        assert n in lines[0], (n, lines[0])
    assert not (tmp / "out").exists()
