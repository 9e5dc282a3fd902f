"""Hostile inputs, classes 3, 4 and 11 of issue 17: wrong types in nested fields, ids beyond
Kafka's int32, negative sizes, duplicate ids, inputs above the documented limits, jobs that would
not fit in memory; in every non-pipeline input format.

Each hand-made case runs the real command and asserts: exit 2, one error line naming the file (or
flag), the field path and the value, no traceback, nothing on stdout, no output created. The fuzz
layer (tests/test_hostile_limits_fuzz.py) mutates valid inputs of each format (type swaps, huge
numbers, deletions, unicode and control characters) and asserts the same whenever the command
refuses the input. Time and peak memory per case are measured by bench/hostile.py (BENCHMARKS.md),
never asserted here.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hostile_inputs import (
    BIG32,
    CAPACITY,
    DESCRIBE,
    EX,
    GROUP,
    PLAN,
    RESET_CSV,
    SCENARIO,
    SNAPSHOT,
    argv_for,
    assert_refused,
    run_cli,
    set_path,
    write_input,
)
from kafka_rebalance import cli, limits
from kafka_rebalance.errors import InputError


@dataclass(frozen=True)
class Case:
    fmt: str
    content: Any  # a document, or the file's text
    says: tuple[str, ...]  # what the error line must hold besides the file: field path, value
    flags: tuple[str, ...] = ()
    as_yaml: bool = False
    suffix: str | None = None


def G(path: tuple, value: Any, *says: str, **kw: Any) -> Case:
    return Case("group", set_path(GROUP, path, value), says, **kw)


def S(path: tuple, value: Any, *says: str, **kw: Any) -> Case:
    return Case("scenario", set_path(SCENARIO, path, value), says, **kw)


def C(path: tuple, value: Any, *says: str, **kw: Any) -> Case:
    return Case("snapshot", set_path(SNAPSHOT, path, value), says, **kw)


def P(path: tuple, value: Any, *says: str, **kw: Any) -> Case:
    return Case("plan", set_path(PLAN, path, value), says, **kw)


def D(old: str, new: str, *says: str, **kw: Any) -> Case:
    assert old in DESCRIBE
    return Case("describe", DESCRIBE.replace(old, new, 1), says, **kw)


LIMIT = "is above the limit of"
MEM = "needs about"
CASES: dict[str, Case] = {
    # group scenario (assign), JSON and YAML
    "group-rack-list": G(("members", 1, "rack"), ["a"], "members[1].rack", '["a"]'),
    "group-rack-list-yaml": G(
        ("members", 1, "rack"), ["a"], "members[1].rack", '["a"]', as_yaml=True
    ),
    "group-partitions-string": G(("topics", 0, "partitions"), "6", "topics[0].partitions", '"6"'),
    "group-partitions-null": G(("topics", 0, "partitions"), None, "topics[0].partitions", "null"),
    "group-partitions-bool": G(("topics", 0, "partitions"), True, "topics[0].partitions", "true"),
    "group-partitions-float": G(
        ("topics", 0, "partitions"), 1e12, "topics[0].partitions", "1000000000000.0"
    ),
    "group-partitions-1e12": G(
        ("topics", 0, "partitions"), 10**12, "topics[0].partitions", "1000000000000"
    ),
    "group-partitions-1e12-yaml": G(
        ("topics", 0, "partitions"), 10**12, "topics[0].partitions", "<= 2147483647", as_yaml=True
    ),
    "group-partitions-limit": G(
        ("topics", 0, "partitions"), 2_000_000, "topics[0].partitions", "2,000,000", LIMIT
    ),
    "group-partitions-negative": G(("topics", 0, "partitions"), -1, "topics[0].partitions", "-1"),
    "group-owned-beyond-int32": G(
        ("members", 0, "owned", 0, 1), BIG32, "members[0].owned[0][1]", str(BIG32)
    ),
    "group-owned-string": G(("members", 0, "owned", 0, 1), "0", "members[0].owned[0][1]", '"0"'),
    "group-owned-not-pair": G(("members", 0, "owned", 0), ["orders"], "members[0].owned[0]"),
    "group-generation-beyond-int32": G(
        ("members", 0, "generation"), 2**40, "members[0].generation", str(2**40)
    ),
    "group-generation-bool": G(("members", 0, "generation"), False, "members[0].generation"),
    "group-topic-name-int": G(("members", 0, "topics", 0), 5, "members[0].topics[0]", "5"),
    "group-member-id-list": G(("members", 2, "id"), ["c2"], "members[2].id", '["c2"]'),
    "group-duplicate-member": G(("members", 2, "id"), "c1", "members[2].id", "duplicate"),
    "group-duplicate-topic": G(("topics", 1, "name"), "orders", "topics[1].name", "duplicate"),
    "group-name-list": G(("name",), [1], "'name'", "[1]"),
    "group-rounds-bool": G(("rounds",), True, "'rounds'", "true"),
    "group-rounds-limit": G(("rounds",), 10**9, "'rounds'", "1,000,000,000", LIMIT),
    "group-rf-huge": G(("topics", 0, "rf"), 10**12, "topics[0].rf", "1000000000000"),
    "group-racks-ints": G(("topics", 0, "racks"), [1, 2], "topics[0].racks[0]", "1"),
    "group-members-limit": G(
        ("rounds",), 1, "'members'", "3", LIMIT, flags=("--limit", "members=2")
    ),
    "group-memory": G(("rounds",), 1, MEM, "1.00 MiB allowed", flags=("--limit", "memory=1MiB")),
    "group-input-bytes": G(
        ("rounds",), 1, "B is above the limit of 10 B", flags=("--limit", "input_bytes=10")
    ),
    # simulation scenario (simulate), YAML and JSON
    "scenario-rack-list": S(("members", "rack"), ["a"], "members.rack", '["a"]'),
    "scenario-count-string": S(("members", "count"), "4", "members.count", '"4"'),
    "scenario-count-bool": S(("members", "count"), True, "members.count", "true"),
    "scenario-members-limit": S(("members", "count"), 10**6, "members.count", "1,000,000", LIMIT),
    "scenario-partitions-1e12": S(
        ("topics", 0, "partitions"), 10**12, "topics[0].partitions", "1000000000000"
    ),
    "scenario-partitions-float-json": Case(
        "scenario",
        '{"duration_ms": 1000, "topics": [{"name": "t", "partitions": 1e12}], "members": {"count": 1}}',
        ("topics[0].partitions", "1000000000000.0"),
        suffix=".json",
    ),
    "scenario-partitions-limit": S(
        ("topics", 0, "partitions"), 2_000_000, "topics[0].partitions", LIMIT
    ),
    "scenario-ms-per-record-denormal": S(
        ("members", "processing_ms_per_record"),
        1e-320,
        "members.processing_ms_per_record",
        "1e-320",
        ">= 0.000001",
    ),
    "scenario-rate-huge": S(
        ("topics", 0, "produce_rate"), 1e300, "topics[0].produce_rate", "1e+300"
    ),
    "scenario-rate-string": S(
        ("topics", 0, "produce_rate"), "600", "topics[0].produce_rate", '"600"'
    ),
    "scenario-duration-limit": S(("duration_ms",), 10**15, "duration_ms", LIMIT),
    "scenario-duration-bool": S(("duration_ms",), True, "duration_ms", "true"),
    "scenario-seed-huge": S(("seed",), 10**30, "'seed'", "1" + "0" * 30),
    "scenario-timeout-beyond-int32": S(
        ("group", "session_timeout_ms"), BIG32, "group.session_timeout_ms", str(BIG32)
    ),
    "scenario-static-string": S(
        ("group", "static_membership"), "yes", "group.static_membership", '"yes"'
    ),
    "scenario-assignors-dict": S(("group", "assignors"), {"a": 1}, "group.assignors"),
    "scenario-event-at-negative": S(("events", 0, "at_ms"), -1, "events[0].at_ms", "-1"),
    "scenario-event-at-huge": S(("events", 0, "at_ms"), 10**30, "events[0].at_ms"),
    "scenario-event-member-list": S(("events", 0, "member"), ["m1"], "events[0].member", '["m1"]'),
    "scenario-add-partitions-huge": S(
        ("events",),
        [{"at_ms": 1000, "kind": "add_partitions", "topic": "orders", "count": 10**12}],
        "events[0].count",
    ),
    "scenario-add-partitions-limit": S(
        ("events",),
        [{"at_ms": 1000, "kind": "add_partitions", "topic": "orders", "count": 2_000_000}],
        "events[0].count",
        LIMIT,
    ),
    "scenario-events-limit": S(("seed",), 1, "'events'", LIMIT, flags=("--limit", "events=1")),
    "scenario-name-list": S(("name",), ["a"], "'name'", '["a"]'),
    "scenario-description-dict": S(("description",), {"a": 1}, "'description'"),
    "scenario-member-list-name-int": S(
        ("members",), {"list": [{"name": 5}]}, "members.list[0].name", "5"
    ),
    "scenario-member-list-duplicate": S(
        ("members",), {"list": [{"name": "a"}, {"name": "a"}]}, "members.list", "duplicate"
    ),
    "scenario-memory": S(("seed",), 1, MEM, "event log", flags=("--limit", "memory=1MiB")),
    # cluster snapshot JSON
    "snapshot-broker-id-beyond-int32": C(("brokers", 0, "id"), BIG32, "brokers[0].id", str(BIG32)),
    "snapshot-broker-id-string": C(("brokers", 0, "id"), "0", "brokers[0].id", '"0"'),
    "snapshot-broker-id-bool": C(("brokers", 0, "id"), False, "brokers[0].id", "false"),
    "snapshot-broker-id-negative": C(("brokers", 0, "id"), -1, "brokers[0].id", "-1"),
    "snapshot-broker-duplicate": C(("brokers", 1, "id"), 0, "brokers[1].id", "duplicate"),
    "snapshot-rack-list": C(("brokers", 0, "rack"), ["r0"], "brokers[0].rack", '["r0"]'),
    "snapshot-alive-string": C(("brokers", 0, "alive"), "yes", "brokers[0].alive", '"yes"'),
    "snapshot-capacity-bool": C(
        ("brokers", 0, "capacity", "disk_bytes"), True, "brokers[0].capacity.disk_bytes", "true"
    ),
    "snapshot-capacity-huge": C(
        ("brokers", 0, "capacity", "disk_bytes"), 1e300, "brokers[0].capacity.disk_bytes"
    ),
    "snapshot-partition-beyond-int32": C(
        ("partitions", 0, "partition"), BIG32, "partitions[0].partition", str(BIG32)
    ),
    "snapshot-partition-null": C(
        ("partitions", 0, "partition"), None, "partitions[0].partition", "null"
    ),
    "snapshot-partition-string": C(
        ("partitions", 0, "partition"), "0", "partitions[0].partition", '"0"'
    ),
    "snapshot-duplicate-partition": C(
        ("partitions", 1, "partition"),
        SNAPSHOT["partitions"][0]["partition"],
        "duplicate partition",
    ),
    "snapshot-replica-beyond-int32": C(
        ("partitions", 0, "replicas", 0), BIG32, "partitions[0].replicas[0]", str(BIG32)
    ),
    "snapshot-replicas-string": C(
        ("partitions", 0, "replicas"), "1,2", "partitions[0].replicas", '"1,2"'
    ),
    "snapshot-replica-duplicate": C(
        ("partitions", 0, "replicas"), [1, 1], "partitions[0].replicas", "duplicate"
    ),
    "snapshot-leader-beyond-int32": C(
        ("partitions", 0, "leader"), BIG32, "partitions[0].leader", str(BIG32)
    ),
    "snapshot-leader-bool": C(("partitions", 0, "leader"), True, "partitions[0].leader", "true"),
    "snapshot-isr-string": C(("partitions", 0, "isr"), ["1"], "partitions[0].isr[0]", '"1"'),
    "snapshot-size-negative": C(
        ("partitions", 0, "load"), {"size_bytes": -1}, "partitions[0].load.size_bytes", "-1"
    ),
    "snapshot-size-huge": C(
        ("partitions", 0, "load"), {"size_bytes": 1e300}, "partitions[0].load.size_bytes", "1e+300"
    ),
    "snapshot-size-string": C(
        ("partitions", 0, "load"), {"size_bytes": "big"}, "partitions[0].load.size_bytes", '"big"'
    ),
    "snapshot-partitions-limit": C(
        ("brokers", 0, "rack"), "r0", "'partitions'", LIMIT, flags=("--limit", "partitions=10")
    ),
    "snapshot-replicas-limit": C(
        ("brokers", 0, "rack"), "r0", "replicas", LIMIT, flags=("--limit", "replicas=10")
    ),
    "snapshot-brokers-limit": C(
        ("brokers", 0, "rack"), "r0", "'brokers'", LIMIT, flags=("--limit", "brokers=2")
    ),
    "snapshot-memory": C(("brokers", 0, "rack"), "r0", MEM, flags=("--limit", "memory=1MiB")),
    # `kafka-topics --describe` text
    "describe-partition-beyond-int32": D(
        "Partition: 1", "Partition: 99999999999", "line 3: Partition", "99999999999"
    ),
    "describe-partition-word": D("Partition: 1", "Partition: one", "line 3: Partition", '"one"'),
    "describe-partition-negative": D("Partition: 1", "Partition: -1", "line 3: Partition", '"-1"'),
    "describe-replica-beyond-int32": D(
        "Replicas: 2,3", "Replicas: 2,4294967296", "line 3: Replicas", "4294967296"
    ),
    "describe-replica-duplicate": D(
        "Replicas: 2,3", "Replicas: 2,2", "line 3: Replicas", "duplicate"
    ),
    "describe-leader-beyond-int32": D(
        "Leader: 2", "Leader: 2147483648", "line 3: Leader", "2147483648"
    ),
    "describe-isr-word": D("Isr: 2,3", "Isr: 2,x", "line 3: Isr", '"2,x"'),
    "describe-unicode-digit": D("Partition: 1", "Partition: \u0663", "line 3: Partition"),
    "describe-partitions-limit": D(
        "Isr: 2,3", "Isr: 2,3", "line 3", LIMIT, flags=("--limit", "partitions=1")
    ),
    # reassignment JSON (cluster execute)
    "plan-replica-beyond-int32": P(
        ("partitions", 0, "replicas", 0), BIG32, "partitions[0].replicas[0]", str(BIG32)
    ),
    "plan-replicas-string": P(
        ("partitions", 0, "replicas"), "1,2", "partitions[0].replicas", '"1,2"'
    ),
    "plan-replicas-empty": P(("partitions", 0, "replicas"), [], "partitions[0].replicas", "[]"),
    "plan-replica-duplicate": P(
        ("partitions", 0, "replicas"), [3, 3], "partitions[0].replicas", "duplicate"
    ),
    "plan-partition-null": P(
        ("partitions", 0, "partition"), None, "partitions[0].partition", "null"
    ),
    "plan-partition-beyond-int32": P(
        ("partitions", 0, "partition"), BIG32, "partitions[0].partition", str(BIG32)
    ),
    "plan-topic-int": P(("partitions", 0, "topic"), 7, "partitions[0].topic", "7"),
    "plan-version-bool": P(("version",), True, "'version'", "true"),
    "plan-log-dirs-ints": P(
        ("partitions", 1, "log_dirs"), [1, 2, 3], "partitions[1].log_dirs[0]", "1"
    ),
    "plan-duplicate-partition": P(("partitions", 1, "partition"), 0, "partitions[1]", "duplicate"),
    "plan-partitions-dict": P(("partitions",), {"a": 1}, "'partitions'"),
    "plan-partitions-limit": P(
        ("version",), 1, "'partitions'", LIMIT, flags=("--limit", "partitions=1")
    ),
    # topics to move (cluster generate), capacity files (cluster plan --capacity)
    "topics-name-int": Case(
        "topics", {"version": 1, "topics": [{"topic": 5}]}, ("topics[0].topic", "5")
    ),
    "topics-not-list": Case("topics", {"version": 1, "topics": "t"}, ("'topics'", '"t"')),
    "topics-duplicate": Case(
        "topics",
        {"version": 1, "topics": [{"topic": "a"}, {"topic": "a"}]},
        ("topics[1]", "duplicate"),
    ),
    "topics-limit": Case(
        "topics",
        {"version": 1, "topics": [{"topic": "topic-00000"}, {"topic": "topic-00001"}]},
        ("'topics'", LIMIT),
        flags=("--limit", "topics=1"),
    ),
    "capacity-broker-beyond-int32": Case(
        "capacity",
        set_path(CAPACITY, ("brokerCapacities", 0, "brokerId"), "99999999999"),
        ("brokerCapacities[0].brokerId", "99999999999"),
    ),
    "capacity-disk-negative": Case(
        "capacity",
        set_path(CAPACITY, ("brokerCapacities", 0, "capacity", "DISK"), "-5"),
        ("brokerCapacities[0].capacity.DISK", '"-5"'),
    ),
    "capacity-disk-bool": Case(
        "capacity",
        set_path(CAPACITY, ("brokerCapacities", 0, "capacity", "DISK"), True),
        ("brokerCapacities[0].capacity.DISK", "true"),
    ),
    # a hand-edited result given to `report`
    "report-timeline-object": Case(
        "report",
        {"rebalances": 1, "unavailable_partition_ms": 0, "records": {}, "timeline": {"a": 1}},
        ("field 'timeline'", '{"a": 1}'),
    ),
    "report-not-an-output": Case("report", {"what": 1}, ("not an output of kafka-rebalance",)),
    # election JSON and the reset-offsets CSV: refused before any connection is tried
    "election-partition-beyond-int32": Case(
        "election",
        {"partitions": [{"topic": "t", "partition": BIG32}]},
        ("partitions[0].partition", str(BIG32)),
    ),
    "election-duplicate": Case(
        "election",
        {"partitions": [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 0}]},
        ("partitions[1]", "duplicate"),
    ),
    "csv-partition-beyond-int32": Case(
        "csv", "orders,2147483648,5\n", ("line 1: partition", "2147483648")
    ),
    "csv-partition-negative": Case("csv", "orders,-1,5\n", ("line 1: partition", "-1")),
    "csv-offset-beyond-int64": Case("csv", f"orders,0,{2**63}\n", ("line 1: offset", str(2**63))),
    "csv-stray-carriage-return": Case("csv", "orders,1\r2,5\n", ("line 1", 'got "orders,1"')),
    "csv-offset-word": Case("csv", "orders,0,five\n", ("line 1: offset", '"five"')),
    "csv-partitions-limit": Case(
        "csv", RESET_CSV, ("line 2", LIMIT), flags=("--limit", "partitions=1")
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_case_exits_2_naming_file_field_and_value(name, tmp_path):
    case = CASES[name]
    f = write_input(tmp_path, case.fmt, case.content, case.as_yaml, case.suffix)
    rc, out, err = run_cli([*argv_for(case.fmt, f, tmp_path), *case.flags])
    assert_refused(rc, out, err, tmp_path, [str(f), *case.says])


# -- flags and the environment -------------------------------------------------------------------


def _flag_cases(tmp: Path) -> dict[str, tuple[list[str], list[str]]]:
    snap, group = str(EX / "cluster.json"), str(EX / "group.yaml")
    out = str(tmp / "out" / "p.json")
    return {
        "assign-rounds-limit": (
            ["assign", "--strategy", "range", "--rounds", "1000000000", group],
            ["--rounds", "1,000,000,000", LIMIT],
        ),
        "plan-brokers-beyond-int32": (
            [
                "cluster",
                "plan",
                "--snapshot",
                snap,
                "--brokers",
                "0,1,99999999999",
                "--output",
                out,
            ],
            ["--brokers", "99999999999"],
        ),
        "plan-broker-racks-beyond-int32": (
            [
                "cluster",
                "plan",
                "--snapshot",
                snap,
                "--broker-racks",
                "99999999999:r",
                "--output",
                out,
            ],
            ["--broker-racks", "99999999999"],
        ),
        "plan-brokers-limit": (
            [
                "cluster",
                "plan",
                "--snapshot",
                snap,
                "--brokers",
                "0,1,2",
                "--output",
                out,
                "--limit",
                "brokers=2",
            ],
            ["--brokers", LIMIT],
        ),
        "demo-scale-limit": (
            ["demo", "--scale", "1000000", "--out", str(tmp / "out")],
            ["--scale", "1,000,000", LIMIT],
        ),
        "demo-memory": (
            ["demo", "--out", str(tmp / "out"), "--limit", "memory=100MiB"],
            ["--scale", MEM],
        ),
        "limit-unknown-name": (
            ["assign", "--strategy", "range", group, "--limit", "bogus=1"],
            ["--limit", "bogus=1"],
        ),
        "limit-not-a-number": (
            ["assign", "--strategy", "range", group, "--limit", "rounds=many"],
            ["--limit", "many"],
        ),
        "sweep-grid-limit": (
            ["pipeline", "sweep", str(tmp / "grid.yaml"), "--out", str(tmp / "out")],
            ["grid.seeds", "1,000,000", LIMIT],
        ),
    }


FLAG_CASES = sorted(_flag_cases(Path("/x")))


@pytest.mark.parametrize("name", FLAG_CASES)
def test_hostile_flag_exits_2_naming_the_flag(name, tmp_path):
    argv, says = _flag_cases(tmp_path)[name]
    (tmp_path / "grid.yaml").write_text(
        f"base_file: {EX / 'crash.yaml'}\ngrid:\n  seeds: 1000000\n"
    )
    rc, out, err = run_cli(argv)
    assert_refused(rc, out, err, tmp_path, says)


def test_environment_limits_apply_and_the_flag_wins(tmp_path, monkeypatch):
    group = str(EX / "group.yaml")  # 3 members, 2 rounds
    monkeypatch.setenv(limits.ENV, "members=2")
    rc, _, err = run_cli(["assign", "--strategy", "range", group])
    assert rc == 2 and "'members'" in err and limits.ENV in err
    rc, _, err = run_cli(["assign", "--strategy", "range", group, "--limit", "members=3"])
    assert rc == 0, err
    monkeypatch.setenv(limits.ENV, "members=lots")
    rc, _, err = run_cli(["assign", "--strategy", "range", group])
    assert rc == 2 and limits.ENV in err and len(err.strip().splitlines()) == 1


def test_raising_a_limit_lets_the_input_through(tmp_path):
    f = write_input(tmp_path, "group", set_path(GROUP, ("rounds",), 3))
    argv = ["assign", "--strategy", "range", str(f), "--format", "json", "--limit"]
    assert run_cli([*argv, "rounds=2"])[0] == 2
    rc, out, err = run_cli([*argv, "rounds=3"])
    assert rc == 0 and len(json.loads(out)["rounds"]) == 3, err


def test_memory_refusal_reads_mem_available_from_the_shell(tmp_path, monkeypatch):
    """The CLI takes MemAvailable from /proc/meminfo: a machine with 1 MiB free refuses."""
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       25000000 kB\nMemAvailable:       1024 kB\n")
    from kafka_rebalance import io_util

    assert io_util.mem_available(meminfo) == 1 << 20
    assert io_util.mem_available(tmp_path / "absent") is None
    monkeypatch.setattr(cli, "mem_available", lambda: 1 << 20)
    rc, _, err = run_cli(["assign", "--strategy", "range", str(EX / "group.yaml")])
    assert rc == 2 and "needs about" in err and "1.00 MiB available" in err, err


def test_limits_inside_the_library_without_the_cli():
    """A library caller gets the defaults (no memory check) and may set its own with `use`."""
    from kafka_rebalance.model import parse_group_scenario

    doc = {"topics": [{"name": "t", "partitions": 5}], "members": [{"id": "a", "topics": ["t"]}]}
    assert parse_group_scenario(doc).spec.topics["t"].partitions == 5
    with limits.use(limits.Limits(overrides={"partitions": 4})):
        with pytest.raises(InputError, match="is above the limit of 4 partitions"):
            parse_group_scenario(doc)
    assert parse_group_scenario(doc).spec.topics["t"].partitions == 5


# -- the fuzz layer: mutations of valid inputs of each format ------------------------------------


def test_case_count():
    """The hand-made table: every non-pipeline input format, every class (3, 4, 11)."""
    formats = {c.fmt for c in CASES.values()}
    assert formats == {
        "report",
        "group",
        "scenario",
        "snapshot",
        "describe",
        "plan",
        "topics",
        "capacity",
        "election",
        "csv",
    }
    assert len(CASES) + len(FLAG_CASES) == HOSTILE_CASES


HOSTILE_CASES = 127


def test_int32_and_finite_bounds_in_fields():
    from kafka_rebalance import fields as F

    assert F.broker_id(F.INT32_MAX, "b") == F.INT32_MAX
    with pytest.raises(InputError, match="field 'b': must be <= 2147483647, got 2147483648"):
        F.broker_id(BIG32, "b")
    with pytest.raises(InputError, match="got true"):
        F.partition(True, "p")
    with pytest.raises(InputError, match="got NaN"):
        F.number(math.nan, "x")
    assert F.show("x" * 500).endswith('..."') or F.show("x" * 500).endswith("...")
    assert len(F.show(list(range(10**6)))) <= 60


def test_optional_integers_and_fixed_names_in_fields():
    """The readers execute_state's checks use: null or an int in range; one of a few names."""
    from kafka_rebalance import fields as F

    assert F.optional_integer(None, "t", lo=0) is None
    assert F.optional_integer(5, "t", lo=0) == 5
    with pytest.raises(InputError, match="field 't': expected an integer or null, got \"5\""):
        F.optional_integer("5", "t", lo=0)
    with pytest.raises(InputError, match="field 't': must be >= 0, got -1"):
        F.optional_integer(-1, "t", lo=0)
    assert F.one_of("done", "s", ("pending", "done")) == "done"
    for bad, shown in ((3, "3"), (["done"], '["done"]'), ("Done", '"Done"')):
        with pytest.raises(
            InputError, match=rf"field 's': expected one of pending, done, got {re.escape(shown)}"
        ):
            F.one_of(bad, "s", ("pending", "done"))
