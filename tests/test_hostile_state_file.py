"""Hostile execute state files (issue 17, class 7): a hand-edited state file whose plan digest still
matches is refused on resume with one line naming the file, the field and the value (as JSON, not a
Python repr), and nothing written; an unedited one passes the checks; a cancel with an edited state
file cancels and says why the file stays."""

from __future__ import annotations

import json

import pytest

from execute_cli import execute_cmd
from hostile_cli import SNAPSHOT, fresh_state, one_line_error, tree
from kafka_rebalance import cli

STATE_EDITS = {
    # name: (edit, field the error names)
    "status-unknown": (lambda s: s["batches"][0].update(status="half-done"), "batches[0].status"),
    "partition-a-string": (
        lambda s: s["batches"][0]["moves"][0].update(partition="0"),
        "batches[0].moves[0].partition",
    ),
    "replica-a-string": (
        lambda s: s["batches"][0]["moves"][0].update(to=[1, "2", 3]),
        "batches[0].moves[0].to[1]",
    ),
    "replica-negative": (
        lambda s: s["batches"][0]["moves"][0].update(to=[1, -2, 3]),
        "batches[0].moves[0].to[1]",
    ),
    "replica-beyond-int32": (
        lambda s: s["batches"][0]["moves"][0].update(to=[1, 2**31, 3]),
        "batches[0].moves[0].to[1]",
    ),
    "moves-not-a-list": (lambda s: s["batches"][0].update(moves={"a": 1}), "batches[0].moves"),
    "batch-not-an-object": (lambda s: s["batches"].__setitem__(0, 7), "batches[0]"),
    "batches-not-a-list": (lambda s: s.update(batches="all"), "batches"),
    "index-out-of-order": (lambda s: s["batches"][0].update(index=5), "batches[0].index"),
    "throttle-a-string": (lambda s: s.update(throttle="fast"), "throttle"),
    "throttle-negative": (lambda s: s.update(throttle=-5), "throttle"),
    "throttle-a-bool": (lambda s: s.update(throttle=True), "throttle"),
    "phase-unknown": (lambda s: s.update(phase=3), "phase"),
    "size-nan-as-string": (
        lambda s: s["batches"][0]["moves"][0].update(size_bytes="NaN"),
        "batches[0].moves[0].size_bytes",
    ),
    "log-dirs-wrong-length": (
        lambda s: s["batches"][0]["moves"][0].update(log_dirs=["any"]),
        "batches[0].moves[0].log_dirs",
    ),
    "election-a-list": (lambda s: s.update(election=[1]), "election"),
    "election-count-a-string": (
        lambda s: s.update(
            election={"partitions": "3", "elected": 0, "not_needed": 0, "failed": {}}
        ),
        "election.partitions",
    ),
    "offline-brokers-strings": (lambda s: s.update(offline_brokers=["1"]), "offline_brokers[0]"),
    "max-moves-zero": (lambda s: s.update(max_moves=0), "max_moves"),
    "replica-repeated": (
        lambda s: s["batches"][0]["moves"][0].update(to=[1, 1]),
        "batches[0].moves[0].to",
    ),
    "leader-before-election-a-string": (
        lambda s: s.update(leaders_before_election={"t-0": "1"}),
        "leaders_before_election.t-0",
    ),
    "move-not-in-plan": (
        lambda s: s["batches"][0]["moves"][0].update(topic="other-topic"),
        "batches[0].moves[0]",
    ),
    "move-to-other-replicas": (
        lambda s: s["batches"][0]["moves"][0].update(
            to=list(reversed(s["batches"][0]["moves"][0]["to"]))
        ),
        "batches[0].moves[0].to",
    ),
    "partition-twice": (
        lambda s: s["batches"][-1]["moves"].append(dict(s["batches"][0]["moves"][0])),
        ".partition",
    ),
}


@pytest.mark.parametrize("case", sorted(STATE_EDITS))
def test_hand_edited_state_refused_on_resume(case, tmp_path, capsys):
    plan = tmp_path / "plan.json"
    assert cli.main(["cluster", "plan", "--snapshot", str(SNAPSHOT), "--output", str(plan)]) == 0
    capsys.readouterr()
    state = fresh_state(plan)
    assert len(state["batches"]) >= 2
    edit, field = STATE_EDITS[case]
    edit(state)
    st_file = tmp_path / "plan.json.state.json"
    st_file.write_text(json.dumps(state))
    before = tree(tmp_path)
    rc = cli.main(execute_cmd(plan, "--bootstrap-server", "127.0.0.1:1", "--execute", "--resume"))
    one_line_error(rc, 2, capsys.readouterr().err, str(st_file), field)
    assert tree(tmp_path) == before


def test_state_errors_show_values_as_json_not_python_reprs(tmp_path):
    """execute_state checks through fields.py: a string is "x", a missing value null."""
    from kafka_rebalance.errors import InputError
    from kafka_rebalance.kafka.execute_state import validate_state

    plan = tmp_path / "plan.json"
    assert cli.main(["cluster", "plan", "--snapshot", str(SNAPSHOT), "--output", str(plan)]) == 0
    state = fresh_state(plan)
    state["batches"][0]["status"] = "half-done"
    with pytest.raises(InputError, match='got "half-done"'):
        validate_state(json.loads(json.dumps(state)), "s")
    state = fresh_state(plan)
    state["batches"][0]["moves"][0]["partition"] = None
    with pytest.raises(InputError, match=r"batches\[0\]\.moves\[0\]\.partition.*got null"):
        validate_state(json.loads(json.dumps(state)), "s")


def test_unedited_state_passes_the_checks(tmp_path, capsys):
    """The checks accept what the executor writes (the edits above are what make them fail)."""
    from kafka_rebalance.cluster.batches import parse_log_dirs, parse_reassignment
    from kafka_rebalance.kafka.execute_state import check_state_matches_plan, validate_state

    plan = tmp_path / "plan.json"
    assert cli.main(["cluster", "plan", "--snapshot", str(SNAPSHOT), "--output", str(plan)]) == 0
    doc = json.loads(plan.read_text())
    state = json.loads(json.dumps(fresh_state(plan)))
    validate_state(state, "s")
    check_state_matches_plan(state, parse_reassignment(doc), parse_log_dirs(doc), "s")


def test_cancel_with_a_hand_edited_state_file_cancels_and_says_why_the_file_stays(tmp_path, capsys):
    from kafka_rebalance.kafka.sim_cluster import SimCluster
    from kafka_rebalance.ops.cluster_source import read_snapshot

    plan = tmp_path / "plan.json"
    assert cli.main(["cluster", "plan", "--snapshot", str(SNAPSHOT), "--output", str(plan)]) == 0
    state = fresh_state(plan)
    state["batches"][0]["status"] = "half-done"
    st_file = tmp_path / "plan.json.state.json"
    st_file.write_text(json.dumps(state))
    capsys.readouterr()
    with SimCluster(read_snapshot(str(SNAPSHOT), None, None), speedup=500.0) as sim:
        argv = execute_cmd(plan)
        rc = cli.main([*argv, "--bootstrap-server", sim.bootstrap, "--cancel"])
    err = capsys.readouterr().err
    assert rc == 0 and "Traceback" not in err, err
    assert "not marked cancelled" in err and "batches[0].status" in err and str(st_file) in err
    assert json.loads(st_file.read_text()) == state
