"""A run without its event log (`collect_events=False`, what bench/simulate.py and the 1,000-member
runs use) is the same run: the same summary and the same number of engine events as the run that
keeps the log (the one the fingerprints hash). The branches that only a run without events takes
(`wants_events` off: the KIP-848 commit fast path, the members' and world's skipped emits) are
otherwise run by no fingerprint (review 4 F7)."""

from __future__ import annotations

import pytest

from kafka_rebalance.sim.api import simulate
from sim_fingerprint_set import scenarios

NAMES = (
    "rolling-range",
    "rolling-cooperative-sticky",
    "rolling-static-range",
    "rolling-consumer-uniform",
    "rolling-consumer-static-12",
    "example-coordinator-failover-consumer-seed1",
    "example-crash-seed7",
)
SET = {name: doc for name, doc in scenarios() if name in NAMES}


def test_the_set_names_these_scenarios() -> None:
    assert sorted(SET) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_a_run_without_events_is_the_same_run(name: str) -> None:
    kept = simulate(SET[name], collect_events=True)
    bare = simulate(SET[name], collect_events=False)
    assert kept.events and not bare.events
    assert bare.summary == kept.summary
    assert bare.simulated_events == kept.simulated_events
