"""Burrow's evaluation (ported from Burrow's own rule table), time lag, and the lag job."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from kafka_rebalance.pipeline.burrow import (
    BurrowConfig,
    ConsumerOffset,
    PartitionStatus,
    PartitionStore,
    Status,
    calculate_partition_status,
    check_if_lag_not_decreasing,
    check_if_offsets_rewind,
    check_if_offsets_stalled,
    check_if_offsets_stopped,
    check_if_recent_lag_zero,
    evaluate_partition,
    group_status,
    is_lag_always_not_zero,
)
from kafka_rebalance.pipeline.lag import LagConfig, replay_partition, run_lag
from kafka_rebalance.pipeline.timelag import LookupTable

# linkedin/Burrow core/internal/evaluator/caching_test.go `tests` (ced55ba), transcribed:
# offsets are (offset, timestamp_ms, lag or None, order).
BURROW_CASES = [
    {
        "n": 0,
        "offsets": [
            (1000, 100000, 0, 1),
            (2000, 200000, 50, 2),
            (3000, 300000, 100, 3),
            (4000, 400000, 150, 4),
            (5000, 500000, 200, 5),
        ],
        "broker": [5200],
        "current_lag": 200,
        "now": 600,
        "allowed": 0,
        "always": False,
        "rewind": -1,
        "stopped": False,
        "stalled": False,
        "notdec": True,
        "recent": False,
        "status": "OK",
    },
    {
        "n": 1,
        "offsets": [
            (1000, 100000, 0, 1),
            (2000, 200000, 50, 2),
            (3000, 300000, 100, 3),
            (4000, 400000, 150, 4),
            (5000, 500000, 200, 5),
        ],
        "broker": [5200],
        "current_lag": 200,
        "now": 900,
        "allowed": 0,
        "always": False,
        "rewind": -1,
        "stopped": False,
        "stalled": False,
        "notdec": True,
        "recent": False,
        "status": "OK",
    },
    {
        "n": 2,
        "offsets": [
            (1000, 100000, 0, 1),
            (2000, 200000, 50, 2),
            (3000, 300000, 100, 3),
            (4000, 400000, 150, 4),
            (5000, 500000, 200, 5),
        ],
        "broker": [5200],
        "current_lag": 200,
        "now": 1000,
        "allowed": 0,
        "always": False,
        "rewind": -1,
        "stopped": True,
        "stalled": False,
        "notdec": True,
        "recent": False,
        "status": "Stop",
    },
    {
        "n": 3,
        "offsets": [
            (1000, 100000, 50, 1),
            (2000, 200000, 100, 2),
            (3000, 300000, 150, 3),
            (4000, 400000, 200, 4),
            (5000, 500000, 250, 5),
        ],
        "broker": [5250],
        "current_lag": 250,
        "now": 1000,
        "allowed": 0,
        "always": True,
        "rewind": -1,
        "stopped": True,
        "stalled": False,
        "notdec": True,
        "recent": False,
        "status": "Stop",
    },
    {
        "n": 4,
        "offsets": [
            (1000, 100000, 0, 1),
            (1000, 200000, 50, 2),
            (1000, 300000, 100, 3),
            (1000, 400000, 150, 4),
            (1000, 500000, 200, 5),
        ],
        "broker": [1200],
        "current_lag": 200,
        "now": 600,
        "allowed": 0,
        "always": False,
        "rewind": -1,
        "stopped": False,
        "stalled": True,
        "notdec": True,
        "recent": False,
        "status": "OK",
    },
    {
        "n": 5,
        "offsets": [
            (1000, 100000, 100, 1),
            (1000, 200000, 150, 2),
            (1000, 300000, 200, 3),
            (1000, 400000, 250, 4),
            (1000, 500000, 300, 5),
        ],
        "broker": [1300],
        "current_lag": 300,
        "now": 600,
        "allowed": 0,
        "always": True,
        "rewind": -1,
        "stopped": False,
        "stalled": True,
        "notdec": True,
        "recent": False,
        "status": "Stall",
    },
    {
        "n": 6,
        "offsets": [
            (1000, 100000, 100, 1),
            (1000, 200000, 100, 2),
            (1000, 300000, 100, 3),
            (1000, 400000, 100, 4),
            (1000, 500000, 100, 5),
        ],
        "broker": [1100],
        "current_lag": 100,
        "now": 600,
        "allowed": 0,
        "always": True,
        "rewind": -1,
        "stopped": False,
        "stalled": True,
        "notdec": True,
        "recent": False,
        "status": "Stall",
    },
    {
        "n": 7,
        "offsets": [
            (1000, 100000, 100, 1),
            (2000, 200000, 150, 2),
            (3000, 300000, 200, 3),
            (2000, 400000, 1250, 4),
            (4000, 500000, 300, 5),
        ],
        "broker": [4300],
        "current_lag": 300,
        "now": 600,
        "allowed": 0,
        "always": True,
        "rewind": 3,
        "stopped": False,
        "stalled": False,
        "notdec": False,
        "recent": False,
        "status": "OK",
    },
    {
        "n": 8,
        "offsets": [
            (1000, 100000, 50, 1),
            (2000, 200000, 100, 2),
            (3000, 300000, 150, 3),
            (4000, 400000, 200, 4),
            (5000, 500000, 250, 5),
        ],
        "broker": [5250],
        "current_lag": 0,
        "now": 1000,
        "allowed": 0,
        "always": True,
        "rewind": -1,
        "stopped": True,
        "stalled": False,
        "notdec": True,
        "recent": False,
        "status": "OK",
    },
    {
        "n": 9,
        "offsets": [
            (792748079, 1512224618356, 0, 1),
            (792748080, 1512224619362, 0, 2),
            (792748081, 1512224620366, 0, 3),
            (792748082, 1512224621367, 0, 4),
            (792748083, 1512224622370, 0, 5),
            (792748084, 1512224623373, 0, 6),
            (792748085, 1512224624378, 0, 7),
            (792748086, 1512224625379, 0, 8),
            (792748087, 1512224626383, 0, 9),
            (792748088, 1512224627383, 0, 10),
            (792748089, 1512224628383, 0, 11),
            (792748090, 1512224629388, 0, 12),
            (792748091, 1512224630391, 0, 13),
            (792748092, 1512224631394, 0, 14),
            (792748093, 1512224632397, 0, 15),
        ],
        "broker": [792749024, 792749000, 792748800, 792748600, 792748500],
        "current_lag": 931,
        "now": 1512224650,
        "allowed": 0,
        "always": False,
        "rewind": -1,
        "stopped": True,
        "stalled": False,
        "notdec": True,
        "recent": False,
        "status": "Stop",
    },
    {
        "n": 10,
        "offsets": [
            (792748079, 1512224618356, 0, 1),
            (792748080, 1512224619362, 0, 2),
            (792748081, 1512224620366, 0, 3),
            (792748082, 1512224621367, 0, 4),
            (792748083, 1512224622370, 0, 5),
            (792748084, 1512224623373, 0, 6),
            (792748085, 1512224624378, 0, 7),
            (792748086, 1512224625379, 0, 8),
            (792748087, 1512224626383, 0, 9),
            (792748088, 1512224627383, 0, 10),
            (792748089, 1512224628383, 0, 11),
            (792748090, 1512224629388, 0, 12),
            (792748091, 1512224630391, 0, 13),
            (792748092, 1512224631394, 0, 14),
            (792748093, 1512224632397, 0, 15),
        ],
        "broker": [792748094, 792748093, 792748093, 792748093],
        "current_lag": 1,
        "now": 1512224650,
        "allowed": 0,
        "always": False,
        "rewind": -1,
        "stopped": True,
        "stalled": False,
        "notdec": True,
        "recent": True,
        "status": "OK",
    },
    {
        "n": 11,
        "offsets": [
            (1000, 100000, 0, 10),
            (1500, 150000, None, 15),
            (2000, 200000, 50, 20),
            (2500, 250000, None, 25),
            (3000, 300000, 100, 30),
            (3500, 350000, None, 35),
            (4000, 400000, 150, 40),
            (4500, 450000, None, 45),
            (5000, 500000, 200, 50),
            (5500, 550000, None, 55),
        ],
        "broker": [5700],
        "current_lag": 200,
        "now": 600,
        "allowed": 0,
        "always": False,
        "rewind": -1,
        "stopped": False,
        "stalled": False,
        "notdec": True,
        "recent": False,
        "status": "OK",
    },
    {
        "n": 12,
        "offsets": [(1000, 100000, 2, 1), (2000, 200000, 1, 2), (2000, 300000, 1, 2)],
        "broker": [2001],
        "current_lag": 1,
        "now": 550,
        "allowed": 1,
        "always": False,
        "rewind": -1,
        "stopped": True,
        "stalled": False,
        "notdec": False,
        "recent": False,
        "status": "OK",
    },
    {
        "n": 13,
        "offsets": [
            (1000, 100000, 100, 1),
            (1000, 200000, 150, 2),
            (1000, 300000, 200, 3),
            (1000, 400000, 250, 4),
            (1000, 500000, 300, 5),
        ],
        "broker": [1300],
        "current_lag": 300,
        "now": 600,
        "allowed": 99,
        "always": True,
        "rewind": -1,
        "stopped": False,
        "stalled": True,
        "notdec": True,
        "recent": False,
        "status": "Stall",
    },
    {
        "n": 14,
        "offsets": [
            (1000, 100000, 100, 1),
            (2000, 200000, 150, 2),
            (3000, 300000, 200, 3),
            (2000, 400000, 1250, 4),
            (4000, 500000, 300, 5),
        ],
        "broker": [4300],
        "current_lag": 300,
        "now": 600,
        "allowed": 99,
        "always": True,
        "rewind": 3,
        "stopped": False,
        "stalled": False,
        "notdec": False,
        "recent": False,
        "status": "OK",
    },
    {
        "n": 15,
        "offsets": [
            (1000, 100000, 100, 1),
            (2000, 200000, 150, 2),
            (3000, 300000, 200, 3),
            (2000, 400000, 1250, 4),
            (2500, 500000, 300, 5),
        ],
        "broker": [4300],
        "current_lag": 300,
        "now": 600,
        "allowed": 0,
        "always": True,
        "rewind": 3,
        "stopped": False,
        "stalled": False,
        "notdec": False,
        "recent": False,
        "status": "Rewind",
    },
]

STATUS = {
    "OK": Status.OK,
    "Warning": Status.WARN,
    "Stop": Status.STOP,
    "Stall": Status.STALL,
    "Rewind": Status.REWIND,
}


@pytest.mark.parametrize("case", BURROW_CASES, ids=lambda c: f"burrow-{c['n']}")
def test_burrows_own_rule_table(case):
    offsets = [ConsumerOffset(o, ts, lag, order) for o, ts, lag, order in case["offsets"]]
    assert is_lag_always_not_zero(offsets, case["allowed"]) == case["always"]
    assert check_if_offsets_rewind(offsets) == case["rewind"]
    assert check_if_offsets_stopped(offsets, case["now"]) == case["stopped"]
    assert check_if_offsets_stalled(offsets) == case["stalled"]
    assert check_if_lag_not_decreasing(offsets) == case["notdec"]
    assert check_if_recent_lag_zero(offsets, case["broker"]) == case["recent"]
    status = calculate_partition_status(
        offsets, case["broker"], case["current_lag"], case["now"], case["allowed"]
    )
    assert status == STATUS[case["status"]]


def commits(offsets, lags, start=100_000, step=100_000):
    return [
        ConsumerOffset(o, start + i * step, lag, i + 1)
        for i, (o, lag) in enumerate(zip(offsets, lags))
    ]


def test_warn_when_offsets_advance_but_lag_never_decreases():
    offs = commits([1000, 2000, 3000, 4000, 5000], [100, 100, 150, 200, 250])
    assert calculate_partition_status(offs, [5250], 250, 600) == Status.WARN


def test_hand_made_window_for_each_status():
    ok = commits([100, 200, 300], [5, 0, 7])
    stall = commits([100, 100, 100], [5, 9, 12])
    stop = commits([100, 200, 300], [5, 9, 12])
    rewind = commits([100, 200, 50], [5, 9, 200])
    assert calculate_partition_status(ok, [307], 7, 350) == Status.OK
    assert calculate_partition_status(stall, [112], 12, 350) == Status.STALL
    assert calculate_partition_status(stop, [312], 12, 10_000) == Status.STOP
    # caught up recently (#303): not STOP, and the other rules then see a lag that never decreased
    assert calculate_partition_status(stop, [300, 312], 12, 10_000) == Status.WARN
    assert calculate_partition_status(rewind, [250], 200, 350) == Status.REWIND
    assert (
        calculate_partition_status(stall, [100], 0, 10_000) == Status.OK
    )  # no current lag: never an error


def test_incomplete_ring_and_group_status_caps_at_err():
    ring = [None] * 5 + commits([1, 2, 3, 4, 5], [9, 9, 9, 9, 9])
    st = evaluate_partition(ring, [14], 9, 700)
    assert (
        st.complete == 0.5
        and st.status == Status.WARN
        and st.start.offset == 1
        and st.end.offset == 5
    )
    assert evaluate_partition(ring, [14], 9, 700, minimum_complete=0.6).status == Status.OK
    parts = [
        PartitionStatus(Status.OK, 0, 1.0),
        PartitionStatus(Status.STALL, 7, 1.0),
        PartitionStatus(Status.WARN, 3, 0.5),
    ]
    assert group_status(parts) == (Status.ERR, pytest.approx(2 / 3), 10)
    assert group_status([PartitionStatus(Status.WARN, 1, 1.0)])[0] == Status.WARN


def test_store_keeps_ten_commits_with_lag_at_arrival_and_min_distance():
    store = PartitionStore(BurrowConfig())
    assert not store.add_commit(5, 1000, 1)  # no broker offset yet: Burrow drops it
    store.add_broker_offset(100)
    for i in range(12):
        assert store.add_commit(10 * i, 2000 + 1000 * i, 10 + i)
    assert len(store.commits) == 10 and store.commits[0].offset == 20
    assert store.commits[-1].lag == 0 and store.commits[0].lag == 80
    merged = PartitionStore(BurrowConfig(min_distance_s=5))
    merged.add_broker_offset(100)
    merged.add_commit(10, 1000, 1)
    merged.add_commit(20, 3000, 2)  # within 5 s: replaces the previous, keeps its timestamp
    assert [(c.offset, c.timestamp) for c in merged.commits] == [(20, 1000)]


def test_time_lag_interpolates_and_extrapolates_like_kafka_lag_exporter():
    t = LookupTable(size=60)
    for off, ts in [(0, 0), (100, 10_000), (100, 20_000), (100, 30_000), (300, 40_000)]:
        t.add_point(off, ts)
    assert list(t.points) == [
        (0, 0),
        (100, 10_000),
        (100, 30_000),
        (300, 40_000),
    ]  # flat run compressed
    assert t.add_point(200, 50_000) == "NonMonotonic"
    assert t.time_lag_ms(300, 40_000) == 0.0
    assert t.time_lag_ms(200, 40_000) == pytest.approx(5_000)  # halfway between 30 s and 40 s
    assert t.time_lag_ms(50, 40_000) == pytest.approx(35_000)
    small = LookupTable(size=2)
    small.add_point(100, 1000)
    assert math.isnan(small.time_lag_ms(50, 2000))
    small.add_point(200, 2000)
    small.add_point(300, 3000)  # slides out the oldest point
    assert small.time_lag_ms(150, 3000) == pytest.approx(
        1500
    )  # extrapolated along the table's trend


def test_replay_partition_polls_at_each_log_end_sample():
    leo = [(1000 * i, 100 * i) for i in range(1, 13)]
    # group g commits an offset that never moves after t=3s while the log grows: STALL, then STOP at the end.
    rows = replay_partition(
        leo, [("g", 2500, 1, 150), ("g", 3500, 2, 150), ("g", 4500, 3, 150)], end_ms=60_000
    )
    polls = [r for r in rows if not r["final"]]
    assert [r["ts_ms"] for r in polls] == [3000 + 1000 * i for i in range(10)]
    assert polls[0]["lag"] == 150 and polls[0]["committed_offset"] == 150
    by_ts = {r["ts_ms"]: r for r in polls}
    assert by_ts[5000]["status"] == "STALL"  # same offset committed, lag never zero
    # 5.5 s since the last commit > the 2 s the window spans, but the broker ring still holds
    # log end 100 (<= 150, seen at 1 s): "recently caught up" (#303), so not STOP yet
    assert by_ts[10000]["status"] == "STALL"
    assert by_ts[11000]["status"] == "STOP"  # log end 100 slid out of the 10-slot ring
    assert polls[-1]["lag"] == 1200 - 150 and polls[-1]["status"] == "STOP"
    final = [r for r in rows if r["final"]]
    assert len(final) == 1 and final[0]["status"] == "STOP" and final[0]["ts_ms"] == 60_000


def test_live_source_stores_commits_older_than_its_one_log_end_sample():
    """A live run samples the log end now, after every commit: Burrow's rule alone drops them all."""
    leo = [(10_000, 500)]
    commits = [("g", 1000, 1, 120), ("g", 2000, 2, 200), ("h", 1500, 3, 500)]
    assert [r for r in replay_partition(leo, commits, end_ms=10_000) if not r["final"]] == []
    rows = replay_partition(leo, commits, 10_000, LagConfig(broker_offsets_first=True))
    polls = {r["group"]: r for r in rows if not r["final"]}
    assert {
        g: (r["committed_offset"], r["log_end_offset"], r["lag"]) for g, r in polls.items()
    } == {
        "g": (200, 500, 300),
        "h": (500, 500, 0),
    }
    assert polls["h"]["status"] == "OK" and all(r["ts_ms"] == 10_000 for r in polls.values())


def test_lag_job_end_to_end(spark, tmp_path):
    offsets_dir = tmp_path / "offsets"
    offsets_dir.mkdir()
    ts = lambda ms: pd.Timestamp(1_700_000_000_000 + ms, unit="ms")
    c_rows = []
    for i in range(10):
        c_rows.append(
            {
                "group": "fast",
                "topic": "t",
                "partition": 0,
                "offset": 100 * (i + 1),
                "commit_ts": ts(1000 * i + 500),
                "record_offset": i,
            }
        )
        c_rows.append(
            {
                "group": "slow",
                "topic": "t",
                "partition": 0,
                "offset": 10 * (i + 1),
                "commit_ts": ts(1000 * i + 500),
                "record_offset": 100 + i,
            }
        )
    pd.DataFrame(c_rows).to_parquet(offsets_dir / "commits.parquet", index=False)
    leo = pd.DataFrame(
        {
            "ts": [ts(1000 * i) for i in range(11)] + [None, ts(5), ts(6)],
            "topic": ["t"] * 14,
            "partition": [0] * 12 + [-1, 0],
            "log_end_offset": [100 * i + 50 for i in range(11)] + [5, 7, -3],
        }
    )
    leo.to_parquet(tmp_path / "leo.parquet", index=False)
    summary = run_lag(spark, str(offsets_dir), str(tmp_path / "leo.parquet"), str(tmp_path / "out"))
    # a null ts, a negative partition and a negative log end offset: each quarantined, with why
    assert summary["quarantined"] == 3
    q = pd.read_parquet(tmp_path / "out" / "quarantine.parquet")
    assert sorted(q["reason"]) == ["negative log_end_offset", "negative partition", "null ts"]
    assert summary["groups"]["fast"]["status"] == "OK"
    assert summary["groups"]["slow"]["status"] == "WARN"
    assert summary["groups"]["slow"]["total_lag"] == 1050 - 100
    lag = pd.read_parquet(tmp_path / "out" / "lag.parquet")
    slow = lag[lag.group == "slow"].sort_values("ts")
    assert list(slow["lag"])[-1] == 950 and slow["time_lag_ms"].iloc[-1] == pytest.approx(
        10_000 - 500
    )
    gs = pd.read_parquet(tmp_path / "out" / "group_status.parquet")
    assert set(gs["group"]) == {"fast", "slow"} and "WARN" in set(gs[gs.group == "slow"]["status"])
