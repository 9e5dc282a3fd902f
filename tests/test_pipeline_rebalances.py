"""Rebalance episodes: the start is the first member's reaction, read from the members' commits.

Each commit between two GroupMetadata records is attributed to the owner of
its partition in the earlier record's assignment; a member's last such commit
is when it reacted (onJoinPrepare / close), and the earliest of them starts
the episode. The same answer from the driver (pass segments), from Spark over
commits and from Spark over segments; and, on the simulator's eager rolling
restart, durations that match the simulator's own event log.
"""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.assign.protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)
from kafka_rebalance.group.records import (
    GroupMetadataValue,
    MemberMetadata,
    encode_record,
    group_metadata_record,
    group_metadata_tombstone,
    offset_commit_record,
)
from kafka_rebalance.model import TopicPartition
from kafka_rebalance.pipeline import offsets as off
from kafka_rebalance.pipeline import offsets_decode as dec
from kafka_rebalance.pipeline import offsets_tables as tab
from kafka_rebalance.pipeline.io import read_parquet
from kafka_rebalance.pipeline.rebalances import (
    EPISODE_SCHEMA,
    episodes_from_records,
    rebalances_from_records,
    rebalances_of,
    segments_are_exact,
)

T0 = 1_700_000_000_000


def member(mid, parts, instance=None):
    asg = encode_assignment(Assignment(tuple(TopicPartition("t", p) for p in parts)))
    return MemberMetadata(
        mid,
        "client",
        "/127.0.0.1",
        45000,
        encode_subscription(Subscription(("t",))),
        asg,
        300000,
        instance,
    )


def gm(group, gen, members, ts):
    rec = group_metadata_record(
        group,
        GroupMetadataValue(
            "consumer",
            gen,
            "range",
            members[0].member_id if members else None,
            tuple(members),
            T0 + ts,
        ),
    )
    return (*encode_record(rec), ts)


def commit(group, p, ts, record_ts=None):
    return (
        *encode_record(offset_commit_record(group, "t", p, ts, commit_timestamp=T0 + ts)),
        ts if record_ts is None else record_ts,
    )


def source(rows) -> pa.Table:
    n = len(rows)
    return pa.table(
        {
            "key": pa.array([r[0] for r in rows], pa.binary()),
            "value": pa.array([r[1] for r in rows], pa.binary()),
            "topic": pa.array(["__consumer_offsets"] * n),
            "partition": pa.array([0] * n, pa.int32()),
            "offset": pa.array(range(n), pa.int64()),
            "timestamp": pa.array([T0 + r[2] for r in rows], pa.timestamp("ms")),
        }
    )


def decoded(rows) -> pa.Table:
    return pa.Table.from_batches(list(dec.decode_batches_slow(source(rows).to_batches())))


def tables(rows, runs: bool = False):
    """(GroupMetadata rows, commit segments): one segment per commit, or (runs) per partition the longest runs
    of consecutive commits with no GroupMetadata record of their group in between."""
    d = decoded(rows)
    gm_rows = d.filter(pc.equal(d.column("kind"), "group_metadata"))
    c = d.filter(
        pc.and_(pc.equal(d.column("kind"), "offset_commit"), pc.invert(d.column("tombstone")))
    )
    segs = {"group": [], "topic": [], "partition": [], "c_lo": [], "c_hi": [], "ts_ms": []}
    gm_at = {}
    for g, o in zip(
        gm_rows.column("group").to_pylist(), gm_rows.column("record_offset").to_pylist()
    ):
        gm_at.setdefault(g, []).append(o)
    open_: dict = {}
    for g, t, p, o, ts in zip(
        *(
            c.column(k).to_pylist()
            for k in ("group", "topic", "partition", "record_offset", "commit_timestamp")
        )
    ):
        era = sum(1 for x in gm_at.get(g, ()) if x < o)
        key = (g, t, p, era)
        if runs and key in open_:
            i = open_[key]
            segs["c_hi"][i], segs["ts_ms"][i] = o, max(segs["ts_ms"][i], ts)
            continue
        open_[key] = len(segs["group"])
        for k, v in zip(segs, (g, t, p, o, o, ts)):
            segs[k].append(v)
    return gm_rows, pa.table(
        segs,
        schema=pa.schema(
            [
                ("group", pa.string()),
                ("topic", pa.string()),
                ("partition", pa.int32()),
                ("c_lo", pa.int64()),
                ("c_hi", pa.int64()),
                ("ts_ms", pa.int64()),
            ]
        ),
    )


def starts(eps: pd.DataFrame) -> list[tuple]:
    """(group, generation_to, start ms after T0 or None, duration_ms or None, start_source)."""
    out = []
    for _, r in eps.iterrows():
        s = None if pd.isna(r["start"]) else int(r["start"].value // 1_000_000) - T0
        out.append(
            (
                r["group"],
                int(r["generation_to"]),
                s,
                None if pd.isna(r["duration_ms"]) else int(r["duration_ms"]),
                r["start_source"],
            )
        )
    return out


def rolling_history():
    """Group g: a and b own t-0,t-1 and t-2; both auto-commit every 1000 ms, then b leaves (close commit at
    3000) and a reacts at its heartbeat (onJoinPrepare commit at 3400); generation 2 is stored at 3600."""
    return [
        gm("g", 1, [member("a", [0, 1]), member("b", [2])], 1000),
        commit("g", 0, 2000),
        commit("g", 1, 2000),
        commit("g", 2, 2001),
        commit("g", 2, 3000),  # b: close() before its LeaveGroup: the rebalance starts here
        commit("g", 0, 3400),
        commit("g", 1, 3400),  # a: onJoinPrepare, the last member to react
        gm("g", 2, [member("a", [0, 1, 2])], 3600),
    ]


def test_the_first_member_to_react_starts_the_rebalance():
    gm_rows, segs = tables(rolling_history())
    got = starts(episodes_from_records(gm_rows, segs))
    # generation 1: no earlier assignment to attribute commits to, so no start; generation 2: b's close commit
    # (the last commit before the record, a's, would say 200 ms)
    assert got == [("g", 1, None, None, None), ("g", 2, 3000, 600, "commit")]


def test_no_attributable_commit_leaves_the_start_null():
    rows = [
        gm("g", 1, [member("a", [0])], 1000),
        gm("g", 2, [member("a", [0])], 2000),  # nothing committed in between
        commit("g", 5, 2500),  # a partition nobody owned
        gm("g", 3, [member("a", [0])], 3000),
        (
            *encode_record(offset_commit_record("g", "t", 0, 9, commit_timestamp=T0 + 100)),
            3500,
        ),  # stamped earlier
        gm("g", 4, [member("a", [0])], 4000),
        commit("g", 0, 4500),
        (*encode_record(group_metadata_tombstone("g")), 4600),
        commit("g", 0, 4700),
        gm("g", 5, [member("a", [0])], 5000),  # after a tombstone: no previous assignment
    ]
    gm_rows, segs = tables(rows)
    assert starts(episodes_from_records(gm_rows, segs)) == [
        ("g", g, None, None, None) for g in (1, 2, 3, 4, 5)
    ]


def test_static_members_are_attributed_by_instance_id_and_a_same_generation_record_moves_the_floor():
    rows = [
        gm("g", 1, [member("a-1", [0], "a"), member("b-1", [1], "b")], 1000),
        commit("g", 0, 1500),
        gm(
            "g", 1, [member("a-2", [0], "a"), member("b-1", [1], "b")], 1800
        ),  # a rejoined: same generation
        commit("g", 1, 2100),
        commit("g", 0, 2300),
        gm("g", 2, [member("a-2", [0, 1], "a")], 2500),
    ]
    gm_rows, segs = tables(rows)
    eps = episodes_from_records(gm_rows, segs)
    assert starts(eps) == [("g", 1, None, None, None), ("g", 2, 2100, 400, "commit")]
    assert list(eps["left"].iloc[1]) == ["b"] and list(eps["joined"].iloc[1]) == []


def test_segments_without_partitions_cannot_stand_in_for_commits(spark):
    """The offsets pass's per-group segments cannot say whose commit a run was: driver and Spark decline them."""
    gm_rows, segs = tables(rolling_history())
    coarse = (
        segs.group_by(["group"])
        .aggregate([("c_lo", "min"), ("c_hi", "max"), ("ts_ms", "max")])
        .rename_columns(["group", "c_lo", "c_hi", "ts_ms"])
    )
    assert episodes_from_records(gm_rows, coarse) is None
    assert rebalances_from_records(spark, gm_rows, coarse) is None
    gm_df = tab.group_metadata_of(spark.createDataFrame(gm_rows.to_pandas(), dec.DECODED_SCHEMA))
    assert not segments_are_exact(
        gm_df,
        spark.createDataFrame(coarse.to_pandas(), "group string, c_lo long, c_hi long, ts_ms long"),
    )
    assert segments_are_exact(
        gm_df,
        spark.createDataFrame(
            segs.to_pandas(),
            "group string, topic string, partition int, c_lo long, c_hi long, ts_ms long",
        ),
    )


# ---- the driver's answer is the specification's, whatever the segmentation -----------------------------


@st.composite
def histories(draw):
    """Random log of two groups: GroupMetadata records (some same-generation, a tombstone) between commits."""
    rows, spec = [], []
    ts = 0
    gens = {"g": 0, "h": 0}
    for _ in range(draw(st.integers(1, 14))):
        ts += draw(st.integers(1, 300))
        g = draw(st.sampled_from(("g", "h")))
        kind = draw(st.sampled_from(("commit", "commit", "commit", "gm", "gm", "tomb")))
        if kind == "commit":
            p = draw(st.integers(0, 4))
            stamp = ts - draw(
                st.sampled_from((0, 0, 0, 5000))
            )  # now and then a commit time from the past
            rows.append(
                (
                    *encode_record(offset_commit_record(g, "t", p, 1, commit_timestamp=T0 + stamp)),
                    ts,
                )
            )
            spec.append(("commit", g, p, stamp))
        elif kind == "gm":
            gens[g] += draw(st.sampled_from((0, 1, 1)))
            parts = draw(st.lists(st.integers(0, 4), unique=True, max_size=5))
            cut = draw(st.integers(0, len(parts)))
            names = draw(st.sampled_from((("a", "b"), ("a", "c"))))
            members = [member(names[0], parts[:cut]), member(names[1], parts[cut:])]
            rows.append(gm(g, gens[g], members, ts))
            spec.append(
                (
                    "gm",
                    g,
                    gens[g],
                    {p: names[0] for p in parts[:cut]} | {p: names[1] for p in parts[cut:]},
                    ts,
                )
            )
        else:
            rows.append((*encode_record(group_metadata_tombstone(g)), ts))
            spec.append(("tomb", g))
    return rows, spec


def expected_starts(spec) -> list[tuple]:
    """The definition, literally: per episode, the earliest of the previous owners' last commits in between."""
    out = []
    for g in ("g", "h"):
        prev, last = None, {}
        for e in spec:
            if e[1] != g:
                continue
            if e[0] == "commit":
                if prev is not None and e[2] in prev[3]:
                    who = prev[3][e[2]]
                    last[who] = max(last.get(who, e[3]), e[3])
                continue
            if e[0] == "tomb":
                prev, last = None, {}
                continue
            if prev is None or e[2] != prev[2]:
                reacted = [t for t in last.values() if prev is not None and prev[4] <= t <= e[4]]
                s = min(reacted) if reacted else None
                out.append(
                    (g, e[2], s, None if s is None else e[4] - s, None if s is None else "commit")
                )
            prev, last = e, {}
    return out


@settings(max_examples=60, deadline=None)
@given(histories(), st.booleans())
def test_driver_episodes_follow_the_definition_for_any_segmentation(history, runs):
    rows, spec = history
    gm_rows, segs = tables(rows, runs=runs)
    eps = episodes_from_records(gm_rows, segs)
    assert sorted(starts(eps), key=repr) == sorted(expected_starts(spec), key=repr)


def test_driver_and_spark_agree_over_commits_and_segments(spark, tmp_path):
    """The three ways in give the same table, row for row: driver (segments), Spark (commits), Spark (segments)."""
    import random

    rng = random.Random(11)
    rows = []
    ts = 0
    for gen in range(1, 6):
        for g in ("g", "h"):
            rows.append(
                gm(g, gen, [member(f"{g}{gen % 2}", [0, 1]), member("s", [2, 3], "static")], ts)
            )
            for _ in range(rng.randint(0, 6)):
                ts += rng.randint(1, 40)
                rows.append(commit(g, rng.randint(0, 4), ts))
            ts += 7
    rows.append((*encode_record(group_metadata_tombstone("h")), ts + 1))
    folder = tmp_path / "records"
    folder.mkdir()
    pq.write_table(source(rows), folder / "a.parquet")
    wide = dec.decode(read_parquet(spark, str(folder), dec.SOURCE_COLUMNS, "records")).cache()
    gm_df, commits = tab.group_metadata_of(wide), tab.commits_of(wide)
    by_commits = [tuple(r) for r in rebalances_of(gm_df, commits).collect()]
    gm_rows, segs = tables(rows, runs=True)
    seg_df = spark.createDataFrame(
        segs.to_pandas(),
        "group string, topic string, partition int, c_lo long, c_hi long, ts_ms long",
    )
    by_segments = [tuple(r) for r in rebalances_of(gm_df, segments=seg_df).collect()]
    driver = [tuple(r) for r in rebalances_from_records(spark, gm_rows, segs).collect()]
    wide.unpersist()
    assert by_commits == by_segments == driver
    assert (
        len(driver) == 10 and sum(1 for r in driver if r[6] == "commit") == 3
    )  # and 7 without a start
    assert any(r[1] is not None and r[3] is None for r in driver)
    assert (
        rebalances_from_records(spark, gm_rows.slice(0, 0), None).schema
        == spark.createDataFrame([], EPISODE_SCHEMA).schema
    )


# ---- the simulator's eager rolling restart -------------------------------------------------------------


def rolling_restart(name: str = "eager", duration_ms: int = 260_000):
    from kafka_rebalance.demo.run import rolling_restart_scenario
    from kafka_rebalance.sim.api import parse_simulation_scenario, variant

    doc = {**rolling_restart_scenario(1, 7), "duration_ms": duration_ms}
    doc["events"] = [e for e in doc["events"] if e["kind"] != "pause"]
    return variant(parse_simulation_scenario(doc), name)


@pytest.mark.parametrize("source", ["coordinator records", "event log"])
def test_demo_rolling_restart_durations_match_the_simulators_event_log(spark, tmp_path, source):
    """Before: every episode lasted 9-14 ms (the last member's commit to the record). Now the start is within a
    few ms of the simulator's PreparingRebalance when a LeaveGroup starts the rebalance, and within a heartbeat
    interval after it when a JoinGroup does (the first member learns at its next heartbeat)."""
    from kafka_rebalance.demo.run import START_MS
    from kafka_rebalance.sim.offsets_topic import (
        consumer_offsets_records,
        simulate_recording_group_metadata,
    )

    sc = rolling_restart()
    res, writes = simulate_recording_group_metadata(sc)
    records = (
        consumer_offsets_records(res.events, START_MS, group_metadata=writes)
        if source == "coordinator records"
        else consumer_offsets_records(res.events, START_MS, protocol="range")
    )
    pq.write_table(records, tmp_path / "records.parquet")
    off.run_offsets(spark, str(tmp_path / "records.parquet"), str(tmp_path / "out"))
    eps = pd.read_parquet(tmp_path / "out" / "rebalances.parquet").sort_values("end")

    prep: dict[int, tuple[int, str]] = {}  # generation -> (PreparingRebalance time, why)
    pending = None
    for e in res.events:
        if e["kind"] == "group_state":
            d = json.loads(e["detail"])
            if d["to"] == "PreparingRebalance":
                pending = (e["ts_ms"], d["reason"])
            elif d["to"] == "CompletingRebalance":
                prep[e["generation"]] = pending
    checked = 0
    for _, r in eps.iterrows():
        if pd.isna(r["generation_from"]):
            assert pd.isna(r["start"]) and pd.isna(r["duration_ms"])  # the group's first record
            continue
        start = int(r["start"].value // 1_000_000) - START_MS
        t, why = prep[int(r["generation_to"])]
        if "LeaveGroup" in why:
            assert abs(start - t) <= 10, (r["generation_to"], start, t)
        else:
            assert t <= start <= t + sc.group.heartbeat_interval_ms, (
                r["generation_to"],
                start,
                t,
                why,
            )
        # the start checks above are what tell these from the old estimate (it started at the last
        # member's commit); members beat in phase (as Java's do after a join), so a rebalance that starts
        # just before their beat lasts only a few round trips
        assert r["duration_ms"] > 0 and r["start_source"] == "commit"
        checked += 1
    assert checked == 6


# ---- the demo's GroupMetadata records: the coordinator's leader and protocol -------------------------------


def _group_metadata_values(table: pa.Table) -> list:
    d = pa.Table.from_batches(list(dec.decode_batches_slow(table.to_batches())))
    return d.filter(pc.equal(d.column("kind"), "group_metadata")).to_pylist()


@pytest.mark.parametrize(
    "name,protocol", [("eager", "range"), ("cooperative", "cooperative-sticky")]
)
def test_demo_group_metadata_records_carry_the_coordinators_leader_and_protocol(name, protocol):
    from kafka_rebalance.sim.api import simulate_scenario
    from kafka_rebalance.sim.offsets_topic import (
        consumer_offsets_records,
        simulate_recording_group_metadata,
    )

    sc = rolling_restart(name, 200_000)
    res, writes = simulate_recording_group_metadata(sc)
    plain = simulate_scenario(sc)
    assert res.events == plain.events and res.summary == plain.summary  # recording changes nothing
    gms = _group_metadata_values(consumer_offsets_records(res.events, 0, group_metadata=writes))
    assert [g["generation"] for g in gms] == [w.value.generation for w in writes] and len(gms) >= 4
    stable = {}  # generation -> when the leader's SyncGroup made the group Stable (the record is stored then)
    first_added = None
    for e in res.events:
        d = json.loads(e["detail"])
        if e["kind"] == "group_state" and d["to"] == "Stable":
            stable[e["generation"]] = e["ts_ms"]
        if (
            e["kind"] == "group_state"
            and first_added is None
            and d["reason"].startswith("adding new member ")
        ):
            first_added = d["reason"].removeprefix("adding new member ")
    for g in gms:
        ids = [m["member_id"] for m in g["members"]]
        assert (
            g["protocol"] == protocol and g["leader"] in ids
        )  # the leader is a member, by its member id
        assert g["record_ts"].timestamp() * 1000 == stable[g["generation"]]
    # Kafka makes the first member added to an empty group its leader; the event log says who that was
    assert gms[0]["leader"] == first_added and not first_added.startswith("m0#")


def test_event_log_alone_leaves_the_leader_unknown():
    from kafka_rebalance.sim.api import simulate_scenario
    from kafka_rebalance.sim.offsets_topic import consumer_offsets_records

    res = simulate_scenario(rolling_restart("eager", 130_000))
    gms = _group_metadata_values(consumer_offsets_records(res.events, 0, protocol="range"))
    assert gms and all(g["leader"] is None and g["protocol"] == "range" for g in gms)
    assert all(
        g["protocol"] is None
        for g in _group_metadata_values(consumer_offsets_records(res.events, 0))
    )
