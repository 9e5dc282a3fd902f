"""A measured environment in the simulator (docs/formats.md section 2: network.latency_samples_ms,
simulation.member_startup_ms / member_close_ms / log_append_ms): each draw is one of the given samples,
with the seed; bench/fidelity feeds them what the real runs measured."""

from __future__ import annotations

import json

import pytest

from kafka_rebalance.errors import InputError
from kafka_rebalance.sim.api import parse_simulation_scenario, simulate

JOIN_AT, LEAVE_AT = 10_000, 20_000


def _doc(network: dict | None = None, **simulation) -> dict:
    doc: dict = {
        "seed": 3,
        "duration_ms": 30_000,
        "group": {"assignors": ["cooperative-sticky"], "group_initial_rebalance_delay_ms": 0},
        "topics": [{"name": "t", "partitions": 6, "produce_rate": 60}],
        "members": {"count": 2},
        "events": [
            {"at_ms": JOIN_AT, "kind": "join", "member": "m2"},
            {"at_ms": LEAVE_AT, "kind": "leave", "member": "m0"},
        ],
    }
    if network:
        doc["network"] = network
    if simulation:
        doc["simulation"] = simulation
    return doc


def _first(res, pred) -> int:
    return next(e["ts_ms"] for e in res.events if pred(e))


def _reason(e: dict) -> str:
    return json.loads(e["detail"]).get("reason", "") if e["kind"] == "group_state" else ""


def _new_member_at(res) -> int:
    return _first(res, lambda e: e["ts_ms"] >= JOIN_AT and "adding new member m2" in _reason(e))


def test_a_joining_member_sends_its_first_join_group_its_startup_time_later():
    base = simulate(_doc())
    slow = simulate(_doc(member_startup_ms=300))
    assert _first(slow, lambda e: e["kind"] == "start" and e["member"] == "m2") == JOIN_AT + 300
    assert (
        300 - 10 <= _new_member_at(slow) - _new_member_at(base) <= 300 + 10
    )  # jitter: 0-4 ms a trip
    # the group's own members start at their start_ms: the setting is for joins and restarts
    assert _first(slow, lambda e: e["kind"] == "start") == 0


def test_a_closing_member_stops_at_once_and_its_leave_group_arrives_its_close_time_later():
    res = simulate(_doc(member_close_ms=400))
    assert _first(res, lambda e: e["kind"] == "stop" and e["member"] == "m0") == LEAVE_AT
    removed = _first(res, lambda e: e["kind"] == "member_removed" and e["member"] == "m0")
    assert LEAVE_AT + 400 <= removed <= LEAVE_AT + 400 + 10
    base = simulate(_doc())
    assert _first(base, lambda e: e["kind"] == "member_removed" and e["member"] == "m0") < (
        LEAVE_AT + 10
    )


def _sync_to_rejoin(res) -> int:
    """From the leader's assignment (SyncGroup) to a revoking member's JoinGroup (cooperative join)."""
    synced = _first(
        res, lambda e: e["ts_ms"] >= JOIN_AT and "leader's assignment received" in _reason(e)
    )
    rejoin = _first(
        res,
        lambda e: (
            e["ts_ms"] > synced
            and ("re-joining" in _reason(e) or "updating metadata" in _reason(e))
        ),
    )
    return rejoin - synced


def test_replicated_writes_hold_the_sync_group_and_commit_answers():
    # the SyncGroup answers wait for the group's record (and a pre-rejoin commit, when there is one to
    # send, for its own)
    still = {"latency_ms": 1, "jitter_ms": 0}
    fast = _sync_to_rejoin(simulate(_doc(network=still)))
    slow = _sync_to_rejoin(simulate(_doc(network=still, log_append_ms=50)))
    assert slow - fast >= 50


def test_latency_samples_replace_latency_plus_jitter():
    # a new member: JoinGroup, MEMBER_ID_REQUIRED back, JoinGroup again: three one-way trips of 30 ms
    res = simulate(_doc(network={"latency_samples_ms": [30]}))
    assert _new_member_at(res) == JOIN_AT + 3 * 30


def test_draws_are_seeded():
    doc = _doc(
        network={"latency_samples_ms": [0, 1, 2, 20]},
        member_startup_ms=[10, 300],
        member_close_ms=[20, 500],
        log_append_ms=[14, 30],
    )
    a, b = simulate(doc), simulate(doc)
    assert a.summary == b.summary and a.events == b.events
    other = simulate({**doc, "seed": 4})
    assert other.events != a.events


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("network", "latency_samples_ms", []),
        ("network", "latency_samples_ms", ["1"]),
        ("simulation", "member_startup_ms", -1),
        ("simulation", "member_close_ms", [1, -5]),
        ("simulation", "log_append_ms", [True]),
        ("simulation", "log_append_ms", 1.5),
    ],
)
def test_bad_samples_name_the_field(section, key, value):
    doc = _doc()
    doc[section] = {key: value}
    with pytest.raises(InputError) as e:
        parse_simulation_scenario(doc)
    assert f"{section}.{key}" in str(e.value)
