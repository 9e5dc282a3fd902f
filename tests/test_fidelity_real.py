"""A short run of the fidelity comparison (bench/fidelity): one member leaves a 6-member cooperative group
of real Java consumers on the real broker, and the same in the simulator. Generation counts and
per-member moves must be equal; the rebalance duration within the stated tolerance (a heartbeat
interval, as both sides learn of the rebalance at heartbeat phases they draw independently, plus the
real side's request latencies on a shared machine)."""

from __future__ import annotations

import dataclasses
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "fidelity"))

import real_cluster as rc  # noqa: E402

import fidelity as fd  # noqa: E402

TOLERANCE_MS = 3_000 + fd.LATENCY_SLACK_MS


@pytest.mark.skipif(shutil.which("javac") is None, reason="no JDK (javac) for the Java consumers")
def test_a_member_leaving_a_cooperative_group_matches_real_kafka(real_kafka):
    if real_kafka.home is None:
        pytest.skip("Kafka's clients jar is not available (no ../shared/kafka)")
    sc = dataclasses.replace(
        next(s for s in fd.SCENARIOS if s.name == "leave-cooperative"), observe_ms=8_000
    )
    real, t_event, raw = rc.run_real(
        sc,
        real_kafka.bootstrap,
        real_kafka.home,
        real_kafka.state_dir,
        lambda *a: real_kafka.tool(
            "kafka-topics.sh", "--bootstrap-server", real_kafka.bootstrap, *a
        ),
    )
    sim = fd.run_sim(sc, t_event, seed=1)
    assert real.generations == sim.generations == 1, (real, raw["log"][-20:])
    # the leaver gives up its 4 partitions; 4 of the 5 others take one each, nobody else moves
    assert real.moves == sim.moves == [(0, 1), (0, 1), (0, 1), (0, 1), (4, 0)]
    assert real.members_per_generation == sim.members_per_generation == [5]
    assert real.partitions_per_generation == sim.partitions_per_generation == [24]
    assert real.duration_ms is not None and sim.duration_ms is not None
    assert abs(real.duration_ms - sim.duration_ms) <= TOLERANCE_MS, (
        real.duration_ms,
        sim.duration_ms,
    )
