"""The fidelity table of docs/fidelity.md, held without a broker: the simulator against the Kafka run stored
in bench/fidelity/kafka-2026-11-26.json (real Java consumers on a real 4.0 broker). Generations and per-member
moves equal (two known exceptions, docs/fidelity.md says why), durations within one heartbeat interval."""

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
# timing-dependent on both sides (a close landing while the member's own rejoin is parked) / the KIP-848
# reconciliation order, not modelled exactly yet
GENERATIONS_MAY_DIFFER = {"rolling-cooperative"}
MOVES_MAY_DIFFER = {"rolling-cooperative", "rolling-consumer"}


def test_every_scenario_of_the_issue_was_run_on_the_broker():
    assert set(STORED) == set(SCENARIOS)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_simulator_matches_the_stored_kafka_run(name):
    k = STORED[name]["kafka"]
    sc = SCENARIOS[name]
    sim = fd.run_sim(sc, STORED[name]["t_event_ms"], seed=1)
    if name in GENERATIONS_MAY_DIFFER:
        assert abs(sim.generations - k["generations"]) <= 1
    else:
        assert sim.generations == k["generations"]
    if name not in MOVES_MAY_DIFFER:
        assert [list(m) for m in sim.moves] == k["moves"]
    heartbeat = 5_000 if sc.protocol == "consumer" else 3_000
    if k["duration_ms"] is None:
        assert sim.duration_ms is None
    else:
        assert abs(sim.duration_ms - k["duration_ms"]) <= heartbeat, (
            sim.duration_ms,
            k["duration_ms"],
        )
