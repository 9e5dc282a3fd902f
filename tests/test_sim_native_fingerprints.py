"""The native classic core against the reference's fingerprints (docs/sim-native.md, "Testing").

Every fingerprint scenario of tests/sim_fingerprint_set.py that `classic_native.native_support` claims
runs on the native core and must give the fingerprint in tests/sim_fingerprints.json (the file the
reference is checked against); the claimed set must hold at least milestone M2's scenarios, so a
claim cannot silently shrink; every other scenario falls back to the reference with a reason. Without
the native build the tests skip (fail under KAFKA_REBALANCE_REQUIRE_COMPILED=1).
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sim_fingerprint_set as fps  # noqa: E402
from kafka_rebalance.errors import InputError  # noqa: E402
from kafka_rebalance.sim import classic_native  # noqa: E402
from kafka_rebalance.sim.api import simulate_scenario  # noqa: E402
from kafka_rebalance.sim.scenario import parse_simulation_scenario  # noqa: E402
from sim_native_runs import assert_same_run, require_native_build  # noqa: E402

M2 = {
    "rolling-range",
    "rolling-roundrobin",
    "rolling-range-40",
    "example-rolling-restart-seed1",
    "example-rolling-restart-seed7",
}
# milestone M3's claimed so far (session 16): sticky's user data, cooperative-sticky's withholding and
# follow-up rebalance; static membership and the joins of example-scale-out are not claimed yet
M3 = {"rolling-sticky", "rolling-cooperative-sticky", "rolling-cooperative-sticky-40"}
KNOWN = json.loads(fps.FINGERPRINTS.read_text())
SCENARIOS = dict(fps.scenarios())


def _fingerprint(res) -> str:
    h = hashlib.sha256()
    for ev in res.events:
        h.update(json.dumps(ev, sort_keys=True, separators=(",", ":")).encode())
        h.update(b"\n")
    h.update(json.dumps(res.summary, sort_keys=True, separators=(",", ":")).encode())
    h.update(f"\n{res.simulated_events}".encode())
    return h.hexdigest()


def test_the_claim_holds_milestones_m2_and_m3():
    require_native_build()
    claimed = {
        name
        for name, doc in SCENARIOS.items()
        if classic_native.native_support(parse_simulation_scenario(doc)) is None
    }
    assert M2 | M3 <= claimed, sorted((M2 | M3) - claimed)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_claimed_scenario_is_the_reference(name):
    require_native_build()
    sc = parse_simulation_scenario(SCENARIOS[name])
    reason = classic_native.native_support(sc)
    if reason is not None:
        # not claimed: auto runs the reference and says why; native refuses, naming the reason
        res = simulate_scenario(sc, collect_events=False, core="auto")
        assert res.core == "reference" and res.core_reason == reason
        with pytest.raises(InputError, match="does not claim"):
            simulate_scenario(sc, collect_events=False, core="native")
        return
    res = simulate_scenario(sc, collect_events=True, core="native")
    assert res.core == "native" and res.core_reason is None
    assert _fingerprint(res) == KNOWN[name]


@pytest.mark.parametrize(
    "name", ["example-rolling-restart-seed7", "rolling-cooperative-sticky", "rolling-sticky"]
)
def test_event_rows_and_summary_equal_the_reference(name):
    require_native_build()
    sc = parse_simulation_scenario(SCENARIOS[name])
    ref = simulate_scenario(sc, collect_events=True, core="reference")
    nat = simulate_scenario(sc, collect_events=True, core="native")
    assert_same_run(nat, ref)
    if name == "rolling-cooperative-sticky":
        # KIP-429's partial revocation at a join completion ran (and the follow-up rebalance)
        reasons = [e["detail"] for e in nat.events if e["kind"] == "revoked"]
        assert '{"reason":"cooperative"}' in reasons


def test_without_a_sink_the_summary_is_the_same():
    require_native_build()
    sc = parse_simulation_scenario(SCENARIOS["rolling-range"])
    ref = simulate_scenario(sc, collect_events=False, core="reference")
    nat = simulate_scenario(sc, collect_events=False, core="native")
    assert nat.summary == ref.summary and nat.events == [] == ref.events


def test_an_unknown_core_is_refused():
    sc = parse_simulation_scenario(SCENARIOS["rolling-range"])
    with pytest.raises(InputError, match="unknown core"):
        simulate_scenario(sc, core="fast")


def test_native_support_is_conservative():
    sc = parse_simulation_scenario(SCENARIOS["rolling-static-cooperative"])
    assert classic_native.native_support(sc) == "static membership"
    sc = parse_simulation_scenario(SCENARIOS["example-scale-out-seed1"])
    assert classic_native.native_support(sc) == "join events"
    sc = parse_simulation_scenario(SCENARIOS["rolling-consumer-uniform"])
    assert classic_native.native_support(sc) == "protocol consumer"
    sc = parse_simulation_scenario(SCENARIOS["example-crash-seed1"])
    assert classic_native.native_support(sc) == "crash events"


@pytest.mark.parametrize(
    ("where", "value"),
    [("group", 2**63 - 1), ("group", 2**70), ("group", -(2**60)), ("scenario", 2**62)],
)
def test_ints_beyond_64_bits_are_not_claimed(where, value):
    """A Scenario built through the API (YAML caps these) with an interval the native member's int64
    fields cannot hold with a time added falls back, naming the field: review 8 F1 found
    auto_commit_interval_ms=2**63-1 claimed and a different summary on core="native"."""
    sc = parse_simulation_scenario(SCENARIOS["rolling-range"])
    if where == "group":
        sc = replace(sc, group=replace(sc.group, auto_commit_interval_ms=value))
        field = "group.auto_commit_interval_ms"
    else:
        sc = replace(sc, poll_idle_ms=value)
        field = "poll_idle_ms"
    reason = classic_native.native_support(sc)
    assert reason == f"{field} {value} beyond the native core's 64-bit range"
    if value == 2**63 - 1:
        res = simulate_scenario(sc, collect_events=False, core="auto")
        assert res.core == "reference" and res.core_reason == reason


def test_without_the_build_auto_runs_the_reference(monkeypatch):
    """A missing or stale build is a reason like any other: auto falls back, native refuses."""
    monkeypatch.setattr(classic_native, "_build", lambda: None)
    sc = parse_simulation_scenario(SCENARIOS["rolling-range"])
    reason = classic_native.native_support(sc)
    assert reason is not None and "native build missing or stale" in reason
    res = simulate_scenario(sc, collect_events=False, core="auto")
    assert res.core == "reference" and res.core_reason == reason
    with pytest.raises(InputError, match="native build missing or stale"):
        simulate_scenario(sc, collect_events=False, core="native")


@pytest.mark.parametrize(
    ("where", "field", "value", "reference_error"),
    [
        ("group", "heartbeat_interval_ms", 0, ZeroDivisionError),
        ("group", "session_timeout_ms", -5, None),
        ("group", "max_poll_records", 0, None),
        ("group", "rebalance_timeout_ms", 0, None),
        ("scenario", "network_latency_ms", -1, None),
        ("scenario", "network_jitter_ms", -3, None),
        ("scenario", "poll_idle_ms", 0, None),
        ("scenario", "lag_sample_ms", 1.5, None),
    ],
)
def test_settings_the_parser_refuses_are_not_claimed(where, field, value, reference_error):
    """Review 9 F1: a Scenario built through the API with heartbeat_interval_ms=0 was claimed and the
    native coordinator divided by zero in C (SIGFPE: the interpreter died) where the reference raises
    ZeroDivisionError; a negative latency failed with OverflowError. What the YAML parser refuses is
    not claimed: auto runs the reference, which does what it does."""
    sc = parse_simulation_scenario(SCENARIOS["rolling-range"])
    if where == "group":
        sc = replace(sc, group=replace(sc.group, **{field: value}))
        name = f"group.{field}"
    else:
        sc = replace(sc, **{field: value})
        name = field
    reason = classic_native.native_support(sc)
    assert reason is not None and reason.startswith(
        f"{name} {value!r} outside the scenario's range"
    )
    with pytest.raises(InputError, match="does not claim"):
        simulate_scenario(sc, collect_events=False, core="native")
    if reference_error is not None:
        with pytest.raises(reference_error):
            simulate_scenario(sc, collect_events=False)  # auto: the reference, not a crash


def test_a_heartbeat_not_below_the_session_timeout_is_not_claimed():
    sc = parse_simulation_scenario(SCENARIOS["rolling-range"])
    sc = replace(sc, group=replace(sc.group, heartbeat_interval_ms=sc.group.session_timeout_ms))
    assert classic_native.native_support(sc) == (
        "group.heartbeat_interval_ms not below group.session_timeout_ms"
    )
