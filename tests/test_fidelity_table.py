"""The fidelity table of docs/fidelity.md, held without a broker: the simulator against the Kafka runs stored
in bench/fidelity/kafka-2026-11-26.json (real Java consumers on a real 4.0 broker).

Where Kafka's outcome is the same in every run, the simulator's is that one, whatever the seed and the
heartbeat phase at the event: generations and per-member moves equal, durations within one heartbeat
interval (plus 0.5 s). Where it is not (a race in Kafka itself, or the KIP-848 member ids the broker draws), every
outcome Kafka gave is one the simulator gives over its runs (docs/fidelity.md says why, and the one
exception)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "fidelity"
sys.path.insert(0, str(BENCH))

import fidelity as fd  # noqa: E402

STORED = json.loads((BENCH / "kafka-2026-11-26.json").read_text(encoding="utf-8"))
SCENARIOS = {s.name: s for s in fd.SCENARIOS}
# the outcome depends on the heartbeat phase at the event (rolling-cooperative: does a member's close land
# before it rejoins for the previous member's rebalance?) or on the member ids the KIP-848 coordinator
# draws (which members the uniform assignor takes from): compared as distributions
VARIES = {"rolling-cooperative": 60, "rolling-consumer": 30, "join-consumer": 10}
# the one Kafka outcome the simulator does not give (docs/fidelity.md): a member revoked one partition
# more than it was assigned, in the first run (its callbacks were not stored)
NOT_REPRODUCED = {("rolling-consumer", 12, ((5, 5), (7, 7), (9, 9), (9, 9), (9, 9), (10, 9)))}


def test_every_scenario_of_the_issue_was_run_on_the_broker():
    assert set(STORED) == set(SCENARIOS)
    for name in VARIES:
        if name != "join-consumer":
            assert len(STORED[name]["kafka_runs"]) >= 3  # Kafka's side re-run to see its spread


@pytest.mark.parametrize("name", sorted(set(SCENARIOS) - set(VARIES)))
def test_the_simulator_matches_the_stored_kafka_run(name):
    k = STORED[name]["kafka"]
    sc = SCENARIOS[name]
    heartbeat = fd.heartbeat_ms(sc)
    # both sides learn of the rebalance at a heartbeat whose phase each draws: a duration may be anywhere in
    # one interval, plus the real side's request latencies on a shared machine (up to 0.5 s seen)
    tolerance = heartbeat + fd.LATENCY_SLACK_MS
    for i in range(3):  # three seeds, the event a third of a heartbeat interval apart
        sim = fd.run_sim(sc, STORED[name]["t_event_ms"], seed=i + 1, phase_ms=i * heartbeat // 3)
        assert sim.generations == k["generations"], i
        assert [list(m) for m in sim.moves] == k["moves"], i
        if k["duration_ms"] is None:
            assert sim.duration_ms is None
        else:
            assert abs(sim.duration_ms - k["duration_ms"]) <= tolerance, (
                i,
                sim.duration_ms,
                k["duration_ms"],
            )


@pytest.mark.parametrize("name", sorted(VARIES))
def test_every_outcome_kafka_gave_is_one_the_simulator_gives(name):
    sc = SCENARIOS[name]
    runs = STORED[name].get("kafka_runs") or [STORED[name]["kafka"]]
    sim = fd.outcomes(sc, STORED[name]["t_event_ms"], VARIES[name])
    for k in runs:
        outcome = (k["generations"], tuple(tuple(m) for m in k["moves"]))
        if (name, *outcome) in NOT_REPRODUCED:
            assert outcome not in sim  # still not: docs/fidelity.md says so
            continue
        assert outcome in sim, (k, sim)
