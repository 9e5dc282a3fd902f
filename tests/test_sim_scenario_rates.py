"""A topic's rate times the run's length must fit the log end arithmetic (review 10, side note).

`PartitionTable.leo_all` (lag samples, the summary's produced records) computes
num * (now - base_t) in numpy's int64, num being the per-partition rate in records per ms over den
(`partitions.per_partition_rate`). The parser checked only rate * duration (the log end offset
itself), so 999,999,999.999 records/s on 7 partitions for 27.8 h was accepted and the reference
reported a negative number of produced records. Such a scenario is now an input error naming the
field and the value.
"""

from __future__ import annotations

import pytest

from kafka_rebalance.errors import InputError
from kafka_rebalance.fields import INT64_MAX
from kafka_rebalance.sim.partitions import PartitionTable, log_end_overflow, per_partition_rate
from kafka_rebalance.sim.scenario import parse_simulation_scenario


def _doc(rate: float, duration: int, partitions: int = 7) -> dict:
    return {
        "name": "big",
        "seed": 1,
        "duration_ms": duration,
        "group": {"id": "g", "assignors": ["range"]},
        "topics": [{"name": "t", "partitions": partitions, "produce_rate": rate}],
        "members": {"count": 1},
    }


def test_a_rate_whose_arithmetic_wraps_is_refused_naming_the_field() -> None:
    with pytest.raises(InputError) as e:
        parse_simulation_scenario(_doc(999_999_999.999, 100_000_000))
    assert e.value.field == "topics[0].produce_rate"
    assert "999,999,999.999 records/s on 7 partitions" in str(e.value)


def test_the_largest_accepted_run_does_not_wrap() -> None:
    """Just inside the bound the parser accepts, and leo_all equals the exact (Python int) offsets."""
    num, _ = per_partition_rate(999_999_999.999, 7)
    duration = INT64_MAX // num
    sc = parse_simulation_scenario(_doc(999_999_999.999, duration))
    with pytest.raises(InputError):
        parse_simulation_scenario(_doc(999_999_999.999, duration + 1))
    table = PartitionTable()
    table.add_topic("t", 7, sc.topics[0].produce_rate, 0)
    assert [int(x) for x in table.leo_all(duration)] == [table.leo(p, duration) for p in range(7)]


def test_every_partition_count_of_a_growing_topic_is_checked() -> None:
    """Growth re-spreads the rate: 1e4 * 2**40 records/s is num 2**40 on 10 partitions (fits over
    2e6 ms) but 10 * 2**40 on 13 (does not)."""
    rate = 1e4 * 2**40
    assert per_partition_rate(rate, 10)[0] == 2**40
    assert per_partition_rate(rate, 13)[0] == 10 * 2**40
    assert log_end_overflow(rate, 10, [], 2_000_000) is None
    assert log_end_overflow(rate, 10, [3], 2_000_000) == 13
    assert log_end_overflow(rate, 10, [3, 7], 2_000_000) == 13  # the first count that wraps


@pytest.mark.parametrize("rate", [0, 0.001, 1234.567, 10_000.0])
def test_ordinary_rates_are_accepted(rate: float) -> None:
    parse_simulation_scenario(_doc(rate, 86_400_000, partitions=1000))
