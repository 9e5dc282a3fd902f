"""The classic group's native twin (sim/native_group*.pyx) answers every call the reference
coordinator makes in the classic fingerprint scenarios as `ClassicGroup` answered it.

Each classic scenario of tests/sim_fingerprint_set.py without a coordinator failover (the twin does
not port `load`) runs on the reference path (the sources, as the pure leg of
tests/test_sim_fingerprint_legs.py runs them) with its group recording every call and answer; the
run must still give the reference fingerprint (the recording changes nothing), and the twin, fed the
same calls in order, must give every answer equal: effects, responses, errors, commit validations.
"""

from __future__ import annotations

import pytest

from kafka_rebalance.sim.reference_sources import PURE_COORDINATOR, RecordingGroup
from sim_fingerprint_set import fingerprint, scenarios
from sim_native_group_pair import native_group
from test_sim_fingerprint_legs import REFERENCE, _use_pure


def _classic_without_failover(doc: dict) -> bool:
    return doc.get("protocol", "classic") == "classic" and not any(
        e.get("kind") == "coordinator_failover" for e in doc.get("events", ())
    )


SET = {name: doc for name, doc in scenarios() if _classic_without_failover(doc)}


def test_the_set_holds_the_classic_scenarios_the_brief_names() -> None:
    for name in (
        "rolling-range",
        "rolling-roundrobin",
        "rolling-cooperative-sticky",
        "rolling-static-range",
        "rolling-range-40",
        "rolling-cooperative-sticky-40",
        "rolling-static-range-40",
        "example-rolling-restart-seed1",
        "example-crash-seed7",
        "example-scale-out-seed1",
        "example-partition-growth-seed7",
    ):
        assert name in SET
    assert "example-coordinator-failover-seed1" not in SET
    assert not any("consumer" in name for name in SET)


@pytest.mark.parametrize("name", sorted(SET))
def test_the_twin_answers_the_reference_coordinators_calls(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    twin_module = native_group()
    _use_pure(monkeypatch)
    monkeypatch.setattr(PURE_COORDINATOR, "ClassicGroup", RecordingGroup)
    RecordingGroup.made = []
    assert fingerprint(SET[name]) == REFERENCE[name]
    (recorded,) = RecordingGroup.made
    kinds = {method for method, _, _ in recorded.calls}
    assert {"join", "sync", "on_timer", "validate_offset_commit"} <= kinds
    group_id, config, kw = recorded.init
    twin = twin_module.NativeClassicGroup(group_id, config, **kw)
    for i, (method, args, answer) in enumerate(recorded.calls):
        got = getattr(twin, method)(*args)
        if isinstance(answer, list):
            assert [type(e).__name__ for e in got] == [type(e).__name__ for e in answer], i
        assert got == answer, (i, method, args)
