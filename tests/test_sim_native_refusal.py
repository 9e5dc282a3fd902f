"""The native coordinator's own guard (`native_coordinator.refusal`) and the native core's claim
(`classic_native.native_support`) read one list of the group settings the native core does not run,
`classic_native.group_refusal` (review 9 D8: the coordinator restated the claim's checks, a second
list to keep in step). Pure: `group_refusal` asks nothing of the builds, so the coordinator can call
it without loading itself."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from compiled_legs import require_build
from kafka_rebalance.sim import classic_native
from kafka_rebalance.sim.scenario import Scenario, SimEvent, parse_simulation_scenario

DOC: dict[str, Any] = {
    "name": "refusal",
    "seed": 1,
    "duration_ms": 60_000,
    "group": {"id": "g", "assignors": ["range"]},
    "topics": [{"name": "t", "partitions": 4, "produce_rate": 10.0}],
    "members": {"count": 2, "processing_ms_per_record": 0.5},
    "events": [{"at_ms": 20_000, "kind": "rolling_restart", "down_ms": 1_000, "every_ms": 5_000}],
}
UNPORTED = [
    ({"protocol": "consumer"}, "protocol consumer"),
    ({"group": {"static_membership": True}}, "static membership"),
    ({"group": {"assignors": ("uniform",)}}, "assignor uniform"),  # not a client-side assignor
    ({"group": {"assignors": ("cooperative-sticky", "range")}}, None),  # claimed since session 16
    ({"group": {"assignors": ("sticky",)}}, None),
    ({"group": {"assignors": ("roundrobin", "sticky")}}, None),  # a listed one: the claim's own
    # through the API only (the parser refuses it): the group twin holds 8 protocols per member,
    # and nine would be claimed and then refused at the first JoinGroup (review 11 F1)
    ({"group": {"assignors": ("roundrobin",) + ("range",) * 8}}, "an assignor listed twice"),
    ({"group": {"assignors": ("range", "range")}}, "an assignor listed twice"),
    ({"group": {"group_max_size": 10}}, "group_max_size"),
    ({"log_append_ms": (1, 2)}, "log_append_ms"),
    ({}, None),
]


def _scenario(changes: dict[str, Any]) -> Scenario:
    changes = dict(changes)
    sc = parse_simulation_scenario(DOC)
    group = changes.pop("group", {})
    return replace(sc, group=replace(sc.group, **group), **changes)


def _coordinator() -> Any:
    return require_build("native_coordinator")


@pytest.mark.parametrize(("changes", "why"), UNPORTED)
def test_the_claim_and_the_coordinator_refuse_the_same_group_settings(
    changes: dict[str, Any], why: str | None
) -> None:
    sc = _scenario(changes)
    assert classic_native.group_refusal(sc) == why
    assert _coordinator().refusal(sc) == why
    if why is not None:
        assert classic_native.native_support(sc) == why


def test_a_heartbeat_it_cannot_divide_by_is_refused_by_both() -> None:
    """The coordinator divides by the heartbeat interval in C: it refuses 0 on its own; the claim
    refuses it earlier, as the parser does (below the parser's minimum)."""
    sc = _scenario({"group": {"heartbeat_interval_ms": 0}})
    assert _coordinator().refusal(sc) == "heartbeat_interval_ms 0"
    reason = classic_native.native_support(sc)
    assert reason is not None and reason.startswith("group.heartbeat_interval_ms 0 outside")


def test_coordinator_failover_is_the_coordinators_own_refusal() -> None:
    sc = _scenario({"events": (SimEvent(at_ms=1000, kind="coordinator_failover", down_ms=5),)})
    assert classic_native.group_refusal(sc) is None
    assert _coordinator().refusal(sc) == "coordinator_failover events"
    assert classic_native.native_support(sc) == "coordinator_failover events"


def test_a_reason_added_to_the_shared_list_reaches_the_coordinator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One list, not two: a group setting refused by `group_refusal` is refused by the coordinator
    and the claim alike (the coordinator's restated checks did not see it)."""
    mod = _coordinator()
    sc = _scenario({})
    assert mod.refusal(sc) is None
    monkeypatch.setattr(classic_native, "group_refusal", lambda sc: "a new unported setting")
    assert mod.refusal(sc) == "a new unported setting"
    assert classic_native.native_support(sc) == "a new unported setting"


def test_auto_runs_the_reference_for_an_assignor_listed_twice() -> None:
    """Review 11 F1: nine listed assignors were claimed and the native group twin raised
    NotImplementedError at the first JoinGroup; now `auto` falls back and the reference runs (it
    selects roundrobin: the duplicated range is never a candidate of every member)."""
    from kafka_rebalance.sim.api import simulate_scenario

    sc = _scenario({"group": {"assignors": ("roundrobin",) + ("range",) * 8}})
    result = simulate_scenario(sc)
    assert result.core == "reference"
    assert result.core_reason == "an assignor listed twice"
    assert result.summary["rebalances"] > 0
