"""The `group` command's pure parts without a broker: Kafka's text, reset rules, Burrow over polls.

The Kafka texts below were printed by kafka-consumer-groups.sh (trunk 1eb7644349cb) for a
KIP-848 and a classic confluent-kafka group; our rows, built from the same description and
offsets, must print them byte for byte (row order is the tool's HashMap order).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pytest

from kafka_rebalance.errors import InputError
from kafka_rebalance.kafka import group_reset as gr
from kafka_rebalance.kafka import group_views as gv
from kafka_rebalance.kafka.group_lag import LagMonitor
from kafka_rebalance.kafka.groups import Group, GroupListing, Member, Node
from kafka_rebalance.model import TopicPartition as TP
from kafka_rebalance.pipeline.burrow import BurrowConfig, Status

KAFKA_848 = """
GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID            HOST            CLIENT-ID
gx-848          gx-t            2          25              25              0               NChkQiIATlKSXhszIwjkZA /127.0.0.1      cli-gx-848-1
gx-848          gx-t            1          25              25              0               NChkQiIATlKSXhszIwjkZA /127.0.0.1      cli-gx-848-1
gx-848          gx-t            0          25              25              0               NChkQiIATlKSXhszIwjkZA /127.0.0.1      cli-gx-848-1
gx-848          gx-t            3          25              25              0               SCl6MGRhS1awDkxJNWDMOA /127.0.0.1      cli-gx-848-0
gx-848          gx-u            1          50              50              0               SCl6MGRhS1awDkxJNWDMOA /127.0.0.1      cli-gx-848-0
gx-848          gx-u            0          50              50              0               SCl6MGRhS1awDkxJNWDMOA /127.0.0.1      cli-gx-848-0
"""

KAFKA_MEMBERS_CLASSIC = """
GROUP           CONSUMER-ID                                           HOST            CLIENT-ID        #PARTITIONS     ASSIGNMENT
gx-classic      cli-gx-classic-0-5b551152-a504-448d-b026-52f00ac8b744 /127.0.0.1      cli-gx-classic-0 3               (0), (0,1)
gx-classic      cli-gx-classic-1-38992767-c84c-4c49-b571-8762761e2a78 /127.0.0.1      cli-gx-classic-1 3               (1), (2,3)
"""

KAFKA_STATE = """
GROUP                     COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE           #MEMBERS
gx-848                    127.0.0.1:45957  (1)      uniform              Stable          2
"""

NODE = Node(1, "127.0.0.1", 45957)


def _tps(*pairs):
    return tuple(TP(t, p) for t, p in pairs)


def group_848() -> Group:
    a = Member(
        "NChkQiIATlKSXhszIwjkZA",
        "cli-gx-848-1",
        "/127.0.0.1",
        _tps(("gx-t", 0), ("gx-t", 1), ("gx-t", 2)),
        member_epoch=5,
    )
    b = Member(
        "SCl6MGRhS1awDkxJNWDMOA",
        "cli-gx-848-0",
        "/127.0.0.1",
        _tps(("gx-t", 3), ("gx-u", 0), ("gx-u", 1)),
        member_epoch=5,
    )
    return Group("gx-848", "Consumer", "Stable", "uniform", NODE, (a, b), 5, 5)


def test_offsets_text_and_row_order_are_kafkas():
    g = group_848()
    committed = {TP("gx-t", p): 25 for p in range(4)} | {TP("gx-u", p): 50 for p in range(2)}
    rows = gv.offset_rows(g, committed, dict(committed))
    assert gv.kafka_text_offsets(rows) == KAFKA_848


def test_members_verbose_and_state_text_are_kafkas():
    c0 = Member(
        "cli-gx-classic-0-5b551152-a504-448d-b026-52f00ac8b744",
        "cli-gx-classic-0",
        "/127.0.0.1",
        _tps(("gx-u", 0), ("gx-t", 0), ("gx-t", 1)),
    )
    c1 = Member(
        "cli-gx-classic-1-38992767-c84c-4c49-b571-8762761e2a78",
        "cli-gx-classic-1",
        "/127.0.0.1",
        _tps(("gx-u", 1), ("gx-t", 2), ("gx-t", 3)),
    )
    g = Group("gx-classic", "Classic", "Stable", "range", NODE, (c0, c1))
    assert gv.kafka_text_members(gv.member_rows(g), verbose=True) == KAFKA_MEMBERS_CLASSIC
    assert gv.kafka_text_state(group_848()) == KAFKA_STATE


def test_assignment_cell_sorts_as_strings_like_the_tool():
    # the tool sorts partition numbers as strings: 10 before 2
    assert gv.kafka_assignment_text(_tps(("t", 2), ("t", 10), ("u", 1))) == "(1), (10,2)"
    assert gv.kafka_assignment_text(()) == "-"


def test_unassigned_committed_partitions_and_missing_values():
    g = Group("g", "Classic", "Empty", "", NODE, ())
    rows = gv.offset_rows(g, {TP("t", 0): 5, TP("t", 1): 7}, {TP("t", 0): 9, TP("t", 1): None})
    by_p = {r.partition: r for r in rows}
    assert by_p[0].lag == 4 and by_p[0].consumer_id is None
    assert by_p[1].lag is None and by_p[1].log_end_offset is None
    text = gv.kafka_text_offsets(rows)
    assert (
        "\ng               t               1          7               -               -               -               -               -"
        in text
    )
    assert gv.group_notice(g, len(rows)) == (
        None,
        "Consumer group 'g' has no active members.",
        True,
    )
    dead = Group("x", "Classic", "Dead", "", NODE)
    assert gv.group_notice(dead, 0)[0] == "Consumer group 'x' does not exist."


def test_static_members_add_the_instance_column():
    m = Member("m-1", "c", "/h", _tps(("t", 0)), group_instance_id="inst-a")
    text = gv.kafka_text_members(
        gv.member_rows(Group("g", "Classic", "Stable", "range", NODE, (m,))), False
    )
    assert text.splitlines()[1].split() == [
        "GROUP",
        "CONSUMER-ID",
        "GROUP-INSTANCE-ID",
        "HOST",
        "CLIENT-ID",
        "#PARTITIONS",
    ]
    assert "inst-a" in text


def test_list_text():
    ls = [GroupListing("a-group", "Classic", "Stable"), GroupListing("b", "Consumer", "Empty")]
    assert gv.kafka_text_list(ls, False, False) == "a-group\nb\n"
    lines = gv.kafka_text_list(ls, True, True).splitlines()
    assert lines[0] == "GROUP".ljust(25) + " " + "TYPE".ljust(20) + " " + "STATE".ljust(20)
    assert gv.group_order(["b", "B", "a"]) == ["B", "a", "b"]


# -- reset-offsets rules ---------------------------------------------------------------------------


def test_datetime_as_kafka_parses_it():
    assert gr.parse_datetime_ms("2023-11-14T22:13:20.000") == 1_700_000_000_000  # no zone: UTC
    assert gr.parse_datetime_ms("2023-11-14T23:13:20.000+01:00") == 1_700_000_000_000
    assert gr.parse_datetime_ms("2023-11-14T23:13:20.000+01") == 1_700_000_000_000
    assert gr.parse_datetime_ms("2023-11-14T22:13:20.500Z") == 1_700_000_000_500
    for bad in ("2023-11-14", "2023-11-14T22:13:20", "2023-13-14T22:13:20.000", "yesterday"):
        with pytest.raises(InputError):
            gr.parse_datetime_ms(bad)


def test_durations_as_java_parses_them():
    assert gr.parse_duration_ms("PT1H") == 3_600_000
    assert gr.parse_duration_ms("P1DT2H3M4.5S") == 93_784_500
    assert gr.parse_duration_ms("PT-30M") == -1_800_000
    for bad in ("1h", "P", "PT", "P1H"):
        with pytest.raises(InputError):
            gr.parse_duration_ms(bad)


def test_topic_args():
    named, whole = gr.parse_topic_args(["a", "b:0,2"])
    assert whole == ["a"] and named == [TP("b", 0), TP("b", 2)]
    for bad in ("b:x", "b:1:2", ":1", "b:1,"):
        with pytest.raises(InputError):
            gr.parse_topic_args([bad])


def test_clamp_is_check_offsets_range():
    tp = TP("t", 0)
    assert gr.clamp({tp: 50}, {tp: 10}, {tp: 40})[0] == {tp: 40}
    assert gr.clamp({tp: 5}, {tp: 10}, {tp: 40})[0] == {tp: 10}
    out, warnings = gr.clamp({tp: 20}, {tp: 10}, {tp: 40})
    assert out == {tp: 20} and warnings == []


def test_csv_export_reads_back():
    plan = {"g1": {TP("t,x", 0): 5, TP("u", 1): 7}, "g2": {TP("u", 0): 1}}
    text = gr.export_csv(plan, single_group=False)
    assert text == 'g1,"t,x",0,5\ng1,u,1,7\ng2,u,0,1\n'
    assert gr.parse_csv_plan(text, ["g1", "g2"], "plan.csv") == plan
    one = gr.export_csv({"g1": {TP("u", 1): 7}}, single_group=True)
    assert one == "u,1,7\n"
    assert gr.parse_csv_plan(one, ["g1"], "plan.csv") == {"g1": {TP("u", 1): 7}}
    with pytest.raises(InputError):
        gr.parse_csv_plan("u,x,7\n", ["g1"], "plan.csv")


# -- Burrow over polls, with a scripted cluster ------------------------------------------------------


@dataclass
class FakeAdmin:
    """What LagMonitor asks a GroupAdmin, answered from scripted values."""

    committed_offset: int = 0
    end: int = 0
    members: bool = True
    calls: list = field(default_factory=list)

    def describe(self, ids, raw_metadata=False):
        ms = (Member("m", "c", "/h", (TP("t", 0),)),) if self.members else ()
        return {
            g: Group(g, "Classic", "Stable" if self.members else "Empty", "range", NODE, ms)
            for g in ids
        }

    def committed(self, g):
        return {TP("t", 0): self.committed_offset}

    def log_offsets(self, tps, spec):
        return {tp: self.end for tp in tps}


def _run(admin, steps, intervals=3):
    mon = LagMonitor(admin, ("g",), BurrowConfig(intervals=intervals))
    out = []
    for i, (committed, end, members) in enumerate(steps):
        admin.committed_offset, admin.end, admin.members = committed, end, members
        mon.sample(1_000_000 + i * 10_000)
        g = mon.evaluate()[0]
        out.append((g.status, g.partitions[0].status, g.partitions[0].lag))
    return out, mon


def test_stall_needs_a_full_window_of_equal_commits():
    steps = [(10, 10, True)] * 3 + [(10, 20, True)] * 3
    out, _ = _run(FakeAdmin(), steps)
    assert [s for s, _, _ in out] == [Status.OK] * 5 + [Status.ERR]
    assert out[-1][1] == Status.STALL and out[-1][2] == 10


def test_group_without_members_stops_not_stalls():
    """No members: no commits arrive; once the silence outlasts the window's span, STOP."""
    steps = [(10, 10, True), (12, 12, True), (14, 20, True)] + [(14, 20, False)] * 3
    out, mon = _run(FakeAdmin(), steps)
    assert out[2][0] == Status.OK
    assert out[-1][:2] == (Status.ERR, Status.STOP)
    assert len(mon.stores[("g", TP("t", 0))].commits) == 3  # the polls without members added none


def test_lag_that_never_shrinks_warns_and_a_rewind_is_rewind():
    out, _ = _run(FakeAdmin(), [(10, 15, True), (12, 18, True), (14, 21, True)])
    assert out[-1][:2] == (Status.WARN, Status.WARN)
    out, _ = _run(FakeAdmin(), [(10, 10, True), (20, 25, True), (5, 25, True)])
    assert out[-1][:2] == (Status.ERR, Status.REWIND)


def test_time_lag_interpolates_log_end_points():
    """kafka-lag-exporter: the log end passed offset 15 halfway between polls at t0 (10) and t0+10 s (20)."""
    admin = FakeAdmin()
    mon = LagMonitor(admin, ("g",))
    for i, (c, e) in enumerate([(10, 10), (10, 20), (15, 30)]):
        admin.committed_offset, admin.end = c, e
        mon.sample(1_000_000 + i * 10_000)
    p = mon.evaluate()[0].partitions[0]
    assert p.lag == 15
    assert math.isclose(p.time_lag_s, 15.0)  # now (t0+20 s) minus t0+5 s


# -- bad input exits 2 before any request ----------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["describe"],  # no --group / --all-groups
        ["describe", "--group", "g", "--all-groups"],
        ["describe", "--group", "g", "--verbose"],  # --verbose without --members
        ["describe", "--group", "g", "--assignor", "nope"],
        ["list", "--state", "Nope"],
        ["list", "--type", "share"],
        ["reset-offsets", "--group", "g", "--all-topics"],  # no spec
        ["reset-offsets", "--group", "g", "--to-earliest"],  # no scope
        ["reset-offsets", "--group", "g", "--all-topics", "--to-datetime", "2024-01-01"],
        ["reset-offsets", "--group", "g", "--all-topics", "--from-file", "/nonexistent.csv"],
        ["lag", "--interval", "0"],
        ["lag", "--samples", "0"],
        ["lag", "--minimum-complete", "2"],
        ["lag", "--format", "kafka"],
        ["describe", "--group", "g", "--timeout", "0"],
    ],
)
def test_bad_input_exits_2(args, capsys):
    from kafka_rebalance.cli import main

    rc = main(["group", *args, "--bootstrap-server", "127.0.0.1:1"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "error:" in err and "Traceback" not in err
