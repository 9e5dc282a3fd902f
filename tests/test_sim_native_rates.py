"""Fractional produce rates on the native core (review 10 F1).

A rate such as 1234.567 records/s becomes a per-partition fraction num/den with a large den
(`PartitionTable.add_topic`); the C columns' range check once multiplied num * horizon by den again
and refused ordinary runs, and the claim did not ask that check, so the default core raised
OverflowError instead of falling back. Here: such runs are claimed and equal the reference; a run
whose log end arithmetic truly leaves int64 is not claimed (auto falls back, native names why).
"""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from compiled_legs import require_build
from kafka_rebalance.errors import InputError
from kafka_rebalance.sim import classic_native
from kafka_rebalance.sim.api import simulate, simulate_scenario
from kafka_rebalance.sim.partitions import PartitionTable
from kafka_rebalance.sim.scenario import parse_simulation_scenario
from sim_native_runs import assert_same_run, require_native_build

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "rolling-restart.yaml"


def _members_build():
    return require_build("native_members")


def _example(rate: float) -> dict:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["topics"][0]["produce_rate"] = rate
    return doc


@pytest.mark.parametrize("rate", [1234.567, 1000.001, 0.3, 600.25])
def test_a_fractional_rate_is_claimed_and_equal_to_the_reference(rate: float) -> None:
    require_native_build()
    doc = _example(rate)
    assert classic_native.native_support(parse_simulation_scenario(copy.deepcopy(doc))) is None
    nat = simulate(copy.deepcopy(doc), core="native")
    ref = simulate(copy.deepcopy(doc), core="reference")
    assert_same_run(nat, ref)
    assert simulate(copy.deepcopy(doc)).core == "native"  # the default runs it


def test_arithmetic_beyond_int64_is_not_claimed() -> None:
    """num * duration past int64 (a Scenario built through the API, beyond what the parser takes):
    the claim names it, auto falls back to the reference, native is an InputError."""
    require_native_build()
    sc = parse_simulation_scenario(_example(600))
    topic = replace(sc.topics[0], produce_rate=999_999_999.999)
    big = replace(sc, topics=(topic,), duration_ms=10**8, events=())
    reason = classic_native.native_support(big)
    assert reason is not None and "beyond int64" in reason
    with pytest.raises(InputError, match="beyond int64"):
        simulate_scenario(big, collect_events=False, core="native")
    assert simulate_scenario(big, collect_events=False, core="auto").core == "reference"


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.integers(1, 10**9),  # the rate in thousandths of a record per second
    st.integers(1, 3000),  # partitions
    st.integers(0, 86_400_000),  # a day
)
def test_columns_accept_every_run_whose_arithmetic_fits(milli: int, partitions: int, horizon: int):
    """Up to 1,000,000 records/s over a day: every intermediate fits in int64 (num <= 1e9, times
    <= 8.64e7 ms), so the columns must accept the table and give the reference's log end offsets."""
    nm = _members_build()
    table = PartitionTable()
    table.add_topic("t", partitions, milli / 1000, 0)
    cols = nm.PartitionColumns.from_table(table, horizon)
    for p in {0, partitions - 1}:
        for now in {0, horizon // 3, horizon}:
            assert cols.leo(p, now) == table.leo(p, now)
    assert cols.produced(horizon) == int(table.leo_all(horizon).sum())
