"""Burrow's group purge in the lag pipeline: a group is purged only after the whole group was idle for
`expire_group` (one purge moment per group, not per partition), a purge deletes the group's state
until it commits again, the lag job writes nothing for a purged group, and bad options or inputs
are refused naming the file before anything is written."""

from __future__ import annotations

import pandas as pd
import pytest

from kafka_rebalance.errors import InputError
from kafka_rebalance.pipeline.burrow import (
    BurrowConfig,
    group_purges,
    purge_moment_ms,
)
from kafka_rebalance.pipeline.lag import LagConfig, replay_partition, run_lag

DAY = 86_400_000
WEEK_S = 604_800


def test_group_purges_only_after_the_whole_group_is_idle_for_expire_group():
    # Burrow: fetchConsumer purges when (now_s - expire_group) * 1000 > lastCommit (one per group).
    assert purge_moment_ms(1_500, WEEK_S) == (1 + WEEK_S + 1) * 1000
    commits = [DAY, 2 * DAY, 3 * DAY]  # any partitions: one lastCommit per group
    p = purge_moment_ms(3 * DAY, WEEK_S)
    assert (
        p == 10 * DAY + 1000
    )  # 7 days after the group's last commit, plus Burrow's strict ">" in seconds
    assert group_purges(commits, WEEK_S, 11 * DAY) == [p]
    assert group_purges(commits, WEEK_S, p) == [p]
    assert group_purges(commits, WEEK_S, p - 1) == []
    gap = [DAY, 9 * DAY + 1, 10 * DAY]  # idle 8 days in between: purged, then recreated
    assert group_purges(gap, WEEK_S, 10 * DAY) == [purge_moment_ms(DAY, WEEK_S)]


def test_a_purge_deletes_the_groups_state_until_it_commits_here_again():
    leo = [(DAY * i, 100 * i) for i in range(21)]
    commits = [("g", DAY // 2, 1, 10), ("g", 15 * DAY + DAY // 2, 2, 1500)]
    purges = {"g": [purge_moment_ms(DAY // 2, WEEK_S)]}  # the group commits nowhere for 15 days
    rows = replay_partition(leo, commits, end_ms=20 * DAY, purges=purges)
    polls = [r["ts_ms"] // DAY for r in rows if not r["final"]]
    assert polls == [1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20]
    assert [r["committed_offset"] for r in rows if r["final"]] == [1500]
    kept = replay_partition(
        leo, commits[:1], end_ms=20 * DAY, purges={"h": [DAY]}
    )  # other groups' purges: no effect
    assert [r["ts_ms"] // DAY for r in kept if not r["final"]] == list(range(1, 21)) and kept[-1][
        "final"
    ]


def _lag_inputs(tmp_path, commit_rows, leo_rows):
    offsets_dir = tmp_path / "offsets"
    offsets_dir.mkdir(exist_ok=True)
    pd.DataFrame(commit_rows).to_parquet(offsets_dir / "commits.parquet", index=False)
    pd.DataFrame(leo_rows).to_parquet(tmp_path / "leo.parquet", index=False)
    return str(offsets_dir), str(tmp_path / "leo.parquet")


def test_expire_group_is_per_group_not_per_partition(spark, tmp_path):
    """Group g commits on partition 0 on day 1 only and on partition 1 until day 10: Burrow keeps
    partition 0 (the group's lastCommit is recent) and its STOP makes the group ERR. Group `gone`
    committed on day 1 only: purged at the end."""
    t0 = 1_700_000_000_000
    ts = lambda ms: pd.Timestamp(t0 + ms, unit="ms")
    six_h = DAY // 4
    leo_rows, commit_rows, order = [], [], 0
    for i in range(41):
        for p in (0, 1):
            leo_rows.append(
                {
                    "ts": ts(i * six_h),
                    "topic": "t",
                    "partition": p,
                    "log_end_offset": 1000 + 100 * i,
                }
            )
        order += 1
        commit_rows.append(
            {
                "group": "g",
                "topic": "t",
                "partition": 1,
                "offset": 1000 + 100 * i,
                "commit_ts": ts(i * six_h + 1000),
                "record_offset": order,
            }
        )
    for k in range(5):
        for g in ("g", "gone"):
            order += 1
            commit_rows.append(
                {
                    "group": g,
                    "topic": "t",
                    "partition": 0,
                    "offset": 1400 + 100 * k,
                    "commit_ts": ts(DAY + k * six_h + 1000),
                    "record_offset": order,
                }
            )
    offsets_dir, leo = _lag_inputs(tmp_path, commit_rows, leo_rows)
    summary = run_lag(spark, offsets_dir, leo, str(tmp_path / "out"))
    g = summary["groups"]["g"]
    assert (
        g["status"] == "ERR"
        and g["partitions"] == 2
        and g["partition_statuses"] == {"OK": 1, "STOP": 1}
    )
    assert g["maxlag"] == {
        "topic": "t",
        "partition": 0,
        "current_lag": 5000 - 1800,
        "status": "STOP",
    }
    assert "gone" not in summary["groups"]
    lag = pd.read_parquet(tmp_path / "out" / "lag.parquet")
    gone = lag[lag.group == "gone"]
    # polls up to the purge 7 days after its last commit (day 2), none after
    assert gone["ts"].max() == ts(9 * DAY) and not gone.empty


@pytest.mark.parametrize(
    "cfg,field",
    [
        (LagConfig(group_interval_ms=0), "--group-interval-ms"),
        (LagConfig(BurrowConfig(minimum_complete=5)), "--minimum-complete"),
        (LagConfig(BurrowConfig(allowed_lag=-3)), "--allowed-lag"),
        (LagConfig(BurrowConfig(intervals=0)), "--intervals"),
        (LagConfig(BurrowConfig(min_distance_s=-1)), "--min-distance"),
    ],
)
def test_bad_options_are_refused_before_anything_is_written(spark, tmp_path, cfg, field):
    with pytest.raises(InputError) as e:
        run_lag(
            spark,
            str(tmp_path / "offsets"),
            str(tmp_path / "leo.parquet"),
            str(tmp_path / "out"),
            cfg,
        )
    assert e.value.field == field
    assert not (tmp_path / "out").exists()


def test_bad_inputs_name_the_file_and_write_nothing(spark, tmp_path):
    t = pd.Timestamp(1_700_000_000_000, unit="ms")
    commit = {
        "group": "g",
        "topic": "t",
        "partition": 0,
        "offset": 5,
        "commit_ts": t,
        "record_offset": 1,
    }
    leo_row = {"ts": t, "topic": "t", "partition": 0, "log_end_offset": 9}
    offsets_dir, leo = _lag_inputs(tmp_path, [commit], [dict(leo_row, ts=None)])
    with pytest.raises(InputError) as e:
        run_lag(spark, offsets_dir, leo, str(tmp_path / "out"))
    # the one row's ts is null: pandas writes a column of Parquet type null, refused by name
    assert (e.value.source, e.value.field) == (leo, "ts") and "holds no value" in e.value.message
    bad_rows = [dict(leo_row, ts=None), dict(leo_row, topic=None)]  # typed columns, no good row
    offsets_dir, leo = _lag_inputs(tmp_path, [commit], bad_rows)
    with pytest.raises(InputError) as e:
        run_lag(spark, offsets_dir, leo, str(tmp_path / "out"))
    assert e.value.source == leo and "no usable log-end samples" in e.value.message
    offsets_dir, leo = _lag_inputs(tmp_path, [dict(commit, offset="5")], [leo_row])
    with pytest.raises(InputError) as e:
        run_lag(spark, offsets_dir, leo, str(tmp_path / "out"))
    assert (e.value.source, e.value.field) == (
        str(tmp_path / "offsets" / "commits.parquet"),
        "offset",
    )
    assert "string" in e.value.message
    assert not (tmp_path / "out").exists()


def test_the_jobs_purge_instants_are_burrows_rule(spark):
    """The lag job computes purge instants in Spark (`_purges`); they must be exactly burrow.group_purges over
    the commits Burrow stores (here every commit is stored: each partition has a log-end offset from time 0 and
    every commit's order is past the previous one)."""
    import random

    from kafka_rebalance.pipeline.lag import _purges

    rng = random.Random(7)
    end_ms = 40 * DAY
    commits = []  # (group, topic, partition, ts_ms, order)
    for g in ("a", "b", "c", "d"):
        t = rng.randrange(0, 3 * DAY)
        for order in range(rng.randrange(1, 12)):
            commits.append((g, "t", rng.randrange(3), t, order))
            t += rng.choice([DAY // 24, DAY, 6 * DAY, 8 * DAY, 15 * DAY])
    c = spark.createDataFrame(
        commits, "group string, topic string, partition int, ts_ms long, order long"
    )
    leo = spark.createDataFrame(
        [("t", p, 0) for p in range(3)], "topic string, partition int, ts_ms long"
    )
    want = {}
    for g in {row[0] for row in commits}:
        p = group_purges([row[3] for row in commits if row[0] == g], WEEK_S, end_ms)
        if p:
            want[g] = p
    assert want  # the draw includes gaps longer than a week
    assert _purges(c, leo, WEEK_S, end_ms) == want
