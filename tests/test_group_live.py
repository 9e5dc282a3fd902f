"""`kafka-rebalance group` against kafka-consumer-groups.sh on the real Kafka 4.0 broker.

Four groups, each driven by a different real client, share one setup: classic and KIP-848
confluent-kafka groups (two members each), a classic kafka-python group and a KIP-848 group
of Kafka's own Java console consumer. Everything produced is consumed first, so offsets are
frozen while both tools describe the groups; each view is compared text for text with
`--format kafka` (retried a few times: both tools read a live group one after the other).
"""

from __future__ import annotations

import json
import time

import pytest

from group_live import wait_for
from group_live_cli import (
    ALL,
    G_848,
    G_CLASSIC,
    G_JAVA,
    G_KP,
    RUNNING,
    T_A,
    T_B,
    four_groups,
    kafka_tool,
    ours,
    same_as_kafka,
    scrape_metrics,
)


@pytest.fixture(scope="module")
def live(real_kafka):
    with four_groups(real_kafka):
        yield real_kafka


# -- describe: every view, both protocols, four clients --------------------------------------


_TOOL_TEXT: dict[str, str] = {}
VIEWS = [[], ["--members"], ["--members", "--verbose"], ["--state"]]
_GROUP_ARGS = [a for g in ALL for a in ("--group", g)]


@pytest.mark.parametrize("view", VIEWS)
def test_describe_view_is_kafkas(live, capsys, view):
    groups = _GROUP_ARGS
    rc, out = same_as_kafka(
        capsys, live, ["--describe", *groups, *view], ["describe", *groups, *view]
    )
    assert rc == 0
    for g in ALL:
        assert g in out
    if not view:
        _TOOL_TEXT["offsets"] = out
        # --offsets is the same view as the default, in Kafka's tool and in ours
        rc, again, _ = ours(
            capsys,
            "describe",
            *groups,
            "--offsets",
            "--bootstrap-server",
            live.bootstrap,
            "--format",
            "kafka",
        )
        assert again == out


def test_describe_json_rows_are_the_tools_rows(live, capsys):
    """The JSON view carries the same rows as the tool's default table (raw numbers)."""
    theirs = (
        _TOOL_TEXT.get("offsets")
        or kafka_tool(live, "--describe", "--group", G_848, "--group", G_KP)[0]
    )
    their_rows = sorted(
        tuple(line.split())
        for line in theirs.splitlines()
        if line and not line.startswith("GROUP") and line.split()[0] in (G_848, G_KP)
    )
    rc, out, _ = ours(
        capsys,
        "describe",
        "--group",
        G_848,
        "--group",
        G_KP,
        "--bootstrap-server",
        live.bootstrap,
        "--format",
        "json",
    )
    assert rc == 0
    doc = json.loads(out)
    rows = sorted(
        tuple(
            "-" if r[k] is None else str(r[k])
            for k in (
                "group",
                "topic",
                "partition",
                "current_offset",
                "log_end_offset",
                "lag",
                "consumer_id",
                "host",
                "client_id",
            )
        )
        for g in doc["groups"]
        for r in g["offsets"]
    )
    assert rows == their_rows
    g848 = next(g for g in doc["groups"] if g["group"] == G_848)
    assert g848["type"] == "Consumer" and g848["state"] == "Stable"
    assert g848["group_epoch"] >= 1 and g848["assignment_epoch"] == g848["group_epoch"]


def test_kip848_members_carry_epochs_and_targets(live, capsys):
    """A Stable KIP-848 group: every member at the group epoch, target = current assignment."""
    for g in (G_848, G_JAVA):
        rc, out, _ = ours(
            capsys,
            "describe",
            "--group",
            g,
            "--members",
            "--verbose",
            "--bootstrap-server",
            live.bootstrap,
            "--format",
            "json",
        )
        assert rc == 0
        grp = json.loads(out)["groups"][0]
        assert grp["type"] == "Consumer"
        for m in grp["members_detail"]:
            assert m["member_epoch"] == grp["group_epoch"]
            assert sorted(map(tuple, m["target_assignment"])) == sorted(map(tuple, m["assignment"]))
    rc, table, _ = ours(
        capsys,
        "describe",
        "--group",
        G_848,
        "--members",
        "--verbose",
        "--bootstrap-server",
        live.bootstrap,
    )
    assert "MEMBER-EPOCH" in table and "TARGET-ASSIGNMENT" in table
    assert "None" not in table and "[" not in table


def test_list_is_kafkas(live, capsys):
    theirs, _ = kafka_tool(live, "--list", "--state", "--type")
    rc, out, _ = ours(capsys, "list", "--bootstrap-server", live.bootstrap, "--format", "kafka")
    assert rc == 0  # bare --list: the ids, one a line (the first column of the table)
    assert sorted(out.splitlines()) == sorted(x.split()[0] for x in theirs.splitlines()[1:])
    rc, out, _ = ours(
        capsys,
        "list",
        "--state",
        "--type",
        "--bootstrap-server",
        live.bootstrap,
        "--format",
        "kafka",
    )
    assert sorted(out.splitlines()) == sorted(theirs.splitlines())
    rc, out, _ = ours(
        capsys,
        "list",
        "--type",
        "consumer",
        "--bootstrap-server",
        live.bootstrap,
        "--format",
        "json",
    )
    mine = {g["group"] for g in json.loads(out)["groups"]}
    assert {G_848, G_JAVA} <= mine and not mine & {G_CLASSIC, G_KP}


def test_what_if_same_strategy_moves_nothing(live, capsys):
    """Our Kafka-exact range (kafka-python's leader) and uniform (the broker's) reproduce the live assignment.

    The classic confluent group has a static member: Java's range puts static members first
    (MemberInfo order), librdkafka's leader sorts by member id only, so Java's range would move
    every partition, and gives the static member the first partitions of each topic.
    """
    for g, strategy in ((G_KP, "range"), (G_848, "uniform"), (G_JAVA, "uniform")):
        rc, out, _ = ours(
            capsys,
            "describe",
            "--group",
            g,
            "--state",
            "--assignor",
            strategy,
            "--bootstrap-server",
            live.bootstrap,
            "--format",
            "json",
        )
        assert rc == 0
        w = json.loads(out)["groups"][0]["what_if"]
        assert w["partitions_moved"] == 0, w
    rc, out, _ = ours(
        capsys,
        "describe",
        "--group",
        G_CLASSIC,
        "--state",
        "--assignor",
        "range",
        "--bootstrap-server",
        live.bootstrap,
        "--format",
        "json",
    )
    w = json.loads(out)["groups"][0]["what_if"]
    static = next(m for m in w["members"] if m["member_id"].startswith("static-"))
    assert sorted(map(tuple, static["proposed"])) == [(T_A, 0), (T_A, 1), (T_B, 0)]
    assert sorted(map(tuple, static["live"])) == [(T_A, 2), (T_A, 3), (T_B, 1)]
    assert w["partitions_moved"] == 6
    rc, out, _ = ours(
        capsys,
        "describe",
        "--group",
        G_CLASSIC,
        "--state",
        "--assignor",
        "roundrobin",
        "--bootstrap-server",
        live.bootstrap,
        "--format",
        "json",
    )
    w = json.loads(out)["groups"][0]["what_if"]
    proposed = [tuple(tp) for m in w["members"] for tp in m["proposed"]]
    assert len(proposed) == len(set(proposed)) == 6
    live_owner = {tuple(tp): m["member_id"] for m in w["members"] for tp in m["live"]}
    new_owner = {tuple(tp): m["member_id"] for m in w["members"] for tp in m["proposed"]}
    assert w["partitions_moved"] == sum(live_owner[tp] != new_owner[tp] for tp in live_owner)
    rc, out, _ = ours(
        capsys,
        "describe",
        "--group",
        G_CLASSIC,
        "--assignor",
        "nope",
        "--bootstrap-server",
        live.bootstrap,
    )
    assert rc == 2


# -- reset-offsets --------------------------------------------------------------------------


def test_reset_refuses_active_group_naming_members(live, capsys):
    rc, out, err = ours(
        capsys,
        "reset-offsets",
        "--group",
        G_KP,
        "--all-topics",
        "--to-earliest",
        "--bootstrap-server",
        live.bootstrap,
    )
    assert rc == 1
    assert "Stable" in err and f"kp-{G_KP}" in err
    # (Kafka's tool prints "Error: Assignments can only be reset if the group ... is inactive"
    # and exits 0; the dry-run tests below compare the plans on inactive groups)


# One Kafka call per spec (a JVM start each): every path of prepareOffsetsToReset once.
RESET_SPECS = [
    ["--to-earliest"],
    ["--to-latest"],
    ["--to-current"],
    ["--to-offset", "1000"],  # clamped to the log end (a WARN each)
    ["--shift-by", "-3"],
    ["--shift-by", "-1000"],  # clamped to the log start
    ["--to-datetime", "2023-11-14T23:13:25.000+01:00"],
    ["--by-duration", "PT1H"],  # nothing that recent: falls back to the log end (a Warn each)
]


@pytest.fixture(scope="module")
def stopped(live):
    """The confluent groups, stopped: Empty, offsets at the log end."""
    from kafka_rebalance.kafka.groups import GroupAdmin

    RUNNING["c"].stop(G_CLASSIC)
    RUNNING["c"].stop(G_848)
    with GroupAdmin(live.bootstrap) as a:
        wait_for(
            lambda: all(d.state == "Empty" for d in a.describe([G_CLASSIC, G_848]).values()),
            timeout=60,
            what="the confluent groups Empty",
        )
    return live


def _reset_args(spec: list[str]) -> list[str]:
    """Both groups (classic and KIP-848) in one call; scopes alternate between the specs."""
    i = RESET_SPECS.index(spec)
    scope = ["--all-topics"] if i % 2 else ["--topic", T_A, "--topic", f"{T_B}:1"]
    return ["--group", G_CLASSIC, "--group", G_848, *scope, *spec]


@pytest.mark.parametrize("spec", RESET_SPECS, ids=lambda s: " ".join(s))
def test_reset_dry_run_is_kafkas(stopped, capsys, spec):
    args = _reset_args(spec)
    rc, out = same_as_kafka(
        capsys, stopped, ["--reset-offsets", *args, "--dry-run"], ["reset-offsets", *args]
    )
    assert rc == 0
    assert "NEW-OFFSET" in out and G_CLASSIC in out and G_848 in out


def test_reset_execute_export_and_from_file(stopped, capsys, tmp_path):
    k = stopped
    rc, out, _ = ours(
        capsys,
        "reset-offsets",
        "--group",
        G_848,
        "--topic",
        f"{T_A}:0,1",
        "--to-offset",
        "2",
        "--execute",
        "--bootstrap-server",
        k.bootstrap,
        "--format",
        "json",
    )
    assert rc == 0 and json.loads(out)["executed"] is True
    # --export: Kafka's CSV (this broker's tool cannot write it: its CSV library is a stand-in)
    rc, csv_text, _ = ours(
        capsys,
        "reset-offsets",
        "--group",
        G_CLASSIC,
        "--topic",
        T_B,
        "--shift-by",
        "-2",
        "--export",
        "--bootstrap-server",
        k.bootstrap,
    )
    assert rc == 0
    lines = [x for x in csv_text.splitlines() if x]
    assert sorted(lines) == [f"{T_B},0,8", f"{T_B},1,8"]
    plan = tmp_path / "plan.csv"
    plan.write_text(csv_text)
    rc, out, _ = ours(
        capsys,
        "reset-offsets",
        "--group",
        G_CLASSIC,
        "--from-file",
        str(plan),
        "--execute",
        "--bootstrap-server",
        k.bootstrap,
        "--format",
        "kafka",
    )
    assert rc == 0
    # what the broker now holds, as Kafka's own tool reads it
    theirs, _ = kafka_tool(k, "--describe", "--group", G_CLASSIC, "--group", G_848)
    got = {
        (r[0], r[1], r[2]): r[3]
        for r in (line.split() for line in theirs.splitlines())
        if r and r[0] in (G_CLASSIC, G_848)
    }
    assert got[(G_848, T_A, "0")] == got[(G_848, T_A, "1")] == "2"
    assert got[(G_848, T_A, "2")] == "10"
    assert got[(G_CLASSIC, T_B, "0")] == got[(G_CLASSIC, T_B, "1")] == "8"
    # multi-group export carries the group column and reads back the same
    rc, csv2, _ = ours(
        capsys,
        "reset-offsets",
        "--group",
        G_CLASSIC,
        "--group",
        G_848,
        "--topic",
        f"{T_B}:0",
        "--to-offset",
        "5",
        "--export",
        "--bootstrap-server",
        k.bootstrap,
    )
    assert sorted(x for x in csv2.splitlines() if x) == sorted(
        [f"{G_CLASSIC},{T_B},0,5", f"{G_848},{T_B},0,5"]
    )


def test_reset_bad_input_exits_2(stopped, capsys):
    b = stopped.bootstrap
    for args in (
        ["--group", G_CLASSIC, "--to-earliest"],  # no scope
        ["--group", G_CLASSIC, "--all-topics"],  # no spec
        ["--group", G_CLASSIC, "--topic", f"{T_A}:x", "--to-earliest"],
        ["--group", G_CLASSIC, "--all-topics", "--to-datetime", "yesterday"],
        ["--group", G_CLASSIC, "--all-topics", "--by-duration", "1h"],
    ):
        rc, _, err = ours(capsys, "reset-offsets", *args, "--bootstrap-server", b)
        assert rc == 2, (args, err)


def test_unreachable_cluster_exits_1(capsys):
    rc, _, err = ours(
        capsys, "describe", "--group", "x", "--bootstrap-server", "127.0.0.1:1", "--timeout", "1500"
    )
    assert rc == 1
    assert "error" in err


def test_lag_once_and_prometheus_agree_with_the_broker(stopped, capsys):
    """Committed offsets, log ends and lag as kafka-consumer-groups.sh reports them (groups left lagging by the resets)."""
    import socket

    from kafka_rebalance.kafka.group_lag import LagCollector, LagMonitor, serve_metrics
    from kafka_rebalance.kafka.groups import GroupAdmin

    groups = [G_CLASSIC, G_848]
    theirs, _ = kafka_tool(stopped, "--describe", *[a for g in groups for a in ("--group", g)])
    tool = {
        (r[0], r[1], int(r[2])): (int(r[3]), int(r[4]), int(r[5]))
        for r in (line.split() for line in theirs.splitlines())
        if r and r[0] in groups
    }
    assert any(v[2] > 0 for v in tool.values())  # the resets left some lag
    rc, out, _ = ours(
        capsys,
        "lag",
        "--once",
        *[a for g in groups for a in ("--group", g)],
        "--bootstrap-server",
        stopped.bootstrap,
        "--format",
        "json",
    )
    assert rc == 0
    doc = json.loads(out)
    mine = {
        (g["group"], p["topic"], p["partition"]): (p["committed"], p["log_end_offset"], p["lag"])
        for g in doc["groups"]
        for p in g["partitions"]
    }
    assert mine == tool
    for g in doc["groups"]:
        assert g["max_lag"] == max(v[2] for k, v in tool.items() if k[0] == g["group"])
    rc, _, _ = ours(
        capsys,
        "lag",
        "--once",
        "--check",
        "--group",
        G_CLASSIC,
        "--bootstrap-server",
        stopped.bootstrap,
    )
    assert rc == 3  # a lagging group with no members: Burrow's STOP -> ERR

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with GroupAdmin(stopped.bootstrap) as admin:
        monitor = LagMonitor(admin, tuple(groups))
        collector = LagCollector(monitor, "test")
        server = serve_metrics(collector, port)
        try:
            monitor.sample(int(time.time() * 1000))
            collector.update(monitor.evaluate())
            metrics = scrape_metrics(port)
        finally:
            server.shutdown()
    for (g, t, p), (off, _end, lag) in tool.items():
        key = lambda name: next(
            v
            for (n, labels), v in metrics.items()
            if n == name
            and {("group", g), ("topic", t), ("partition", str(p)), ("cluster_name", "test")}
            <= labels
        )
        assert key("kafka_consumergroup_group_lag") == lag
        assert key("kafka_consumergroup_group_offset") == off
    for g in groups:
        labels = frozenset({("cluster_name", "test"), ("group", g)})
        assert metrics[("kafka_consumergroup_group_max_lag", labels)] == max(
            v[2] for k, v in tool.items() if k[0] == g
        )
        assert metrics[("kafka_consumergroup_group_sum_lag", labels)] == sum(
            v[2] for k, v in tool.items() if k[0] == g
        )
        assert metrics[("kafka_consumergroup_group_status", labels)] in (1.0, 3.0)

    # the command itself: `group lag --prometheus-port` serves the same figures until killed
    import subprocess
    import sys

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kafka_rebalance",
            "group",
            "lag",
            "--bootstrap-server",
            stopped.bootstrap,
            "--group",
            G_CLASSIC,
            "--interval",
            "1",
            "--prometheus-port",
            str(port),
            "--cluster-name",
            "cli",
            "--format",
            "json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        first = json.loads(proc.stdout.readline())  # printed after the first evaluation
        assert first["groups"][0]["group"] == G_CLASSIC
        metrics = scrape_metrics(port)
    finally:
        proc.kill()
        proc.wait()
    labels = frozenset({("cluster_name", "cli"), ("group", G_CLASSIC)})
    assert metrics[("kafka_consumergroup_group_max_lag", labels)] == max(
        v[2] for k, v in tool.items() if k[0] == G_CLASSIC
    )


# -- delete-offsets and delete: last, they change the groups ------------------------------------------


def test_delete_offsets_and_delete_are_kafkas(stopped, capsys):
    k = stopped
    # refused on an active group: same group, same moment, nothing changes
    same_as_kafka(
        capsys,
        k,
        ["--delete-offsets", "--group", G_KP, "--topic", T_A],
        ["delete-offsets", "--group", G_KP, "--topic", T_A],
    )
    same_as_kafka(capsys, k, ["--delete", "--group", G_JAVA], ["delete", "--group", G_JAVA])
    rc, _, _ = ours(capsys, "delete", "--group", G_JAVA, "--bootstrap-server", k.bootstrap)
    assert rc == 1  # NON_EMPTY_GROUP
    # on the two Empty groups: ours on one, Kafka's on the other, texts equal but for the name
    theirs, _ = kafka_tool(k, "--delete-offsets", "--group", G_848, "--topic", f"{T_B}:0,1")
    rc, out, _ = ours(
        capsys,
        "delete-offsets",
        "--group",
        G_CLASSIC,
        "--topic",
        f"{T_B}:0,1",
        "--bootstrap-server",
        k.bootstrap,
        "--format",
        "kafka",
    )
    assert rc == 0 and out == theirs.replace(G_848, G_CLASSIC)
    assert "Successful" in out
    theirs, _ = kafka_tool(k, "--delete", "--group", G_848)
    rc, out, _ = ours(
        capsys,
        "delete",
        "--group",
        G_CLASSIC,
        "--bootstrap-server",
        k.bootstrap,
        "--format",
        "kafka",
    )
    assert rc == 0 and out == theirs.replace(G_848, G_CLASSIC)
    rc, out, _ = ours(capsys, "list", "--bootstrap-server", k.bootstrap, "--format", "json")
    assert not {G_CLASSIC, G_848} & {g["group"] for g in json.loads(out)["groups"]}
