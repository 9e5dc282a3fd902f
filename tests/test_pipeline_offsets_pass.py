"""The single-pass offsets job gives exactly what the multi-pass derivation (decode + *_of) gives.

The reference is the previous job's plan: every record decoded into one wide
frame, each table derived from it by Spark (offsets.commits_of,
latest_offsets_of, group_metadata_of, quarantine_of, rebalances.rebalances_of
over commits). The job under test reads Parquet row groups in Python tasks,
writes commits.parquet from the tasks and the other tables from the pass's
side results; or, for a DataFrame, writes the commits through Spark.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_rebalance.assign.protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)
from kafka_rebalance.group.records import (
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_key,
    encode_record,
    encode_value,
    group_metadata_record,
    group_metadata_tombstone,
    offset_commit_record,
    offset_commit_tombstone,
)
from kafka_rebalance.model import TopicPartition
from kafka_rebalance.pipeline import offsets as off
from kafka_rebalance.pipeline import offsets_decode as dec
from kafka_rebalance.pipeline import offsets_files as of
from kafka_rebalance.pipeline import offsets_pass as op
from kafka_rebalance.pipeline import offsets_tables as tab
from kafka_rebalance.pipeline.io import read_parquet
from kafka_rebalance.pipeline.rebalances import rebalances_of

T0 = 1_700_000_000_000
TABLES = ("commits", "latest_offsets", "group_metadata", "quarantine", "rebalances")


def _member(mid, parts, instance=None):
    sub = encode_subscription(Subscription(("t", "u")))
    asg = encode_assignment(Assignment(tuple(TopicPartition(t, p) for t, p in parts)))
    return MemberMetadata(mid, "client", "/127.0.0.1", 45000, sub, asg, 300000, instance)


def _gm(group, gen, members, state_ts):
    return group_metadata_record(
        group,
        GroupMetadataValue(
            "consumer", gen, "range", members[0].member_id, tuple(members), state_ts
        ),
    )


def history() -> list[tuple]:
    """(key, value, ts) in log order: two groups rebalancing between commits, tombstones, corrupt records."""
    rows: list[tuple] = []

    def add(rec, ts):
        rows.append((*encode_record(rec), T0 + ts))

    bad_value = bytearray(
        encode_record(offset_commit_record("g1", "t", 0, 1, commit_timestamp=T0))[1]
    )
    bad_value[0:2] = struct.pack(">h", 7)
    for gen in range(1, 4):
        add(
            _gm(
                "g1",
                gen,
                [_member(f"a-{gen}", [("t", 0), ("t", gen % 2)]), _member("b", [("u", 0)], "b")],
                T0 + gen * 1000 - 50,
            ),
            gen * 1000,
        )
        add(_gm("g2-é", gen, [_member("x", [("t", 1)])], -1), gen * 1000 + 5)
        for i in range(12):
            ts = gen * 1000 + 10 + i * 7
            add(
                offset_commit_record(
                    "g1",
                    "t",
                    i % 3,
                    gen * 100 + i,
                    commit_timestamp=T0 + ts,
                    metadata="méta" if i == 4 else ("" if i % 2 else "m"),
                ),
                ts,
            )
            rows.append(
                (
                    encode_key(OffsetCommitKey("g2-é", "u", i % 2, 0)),
                    encode_value(
                        OffsetCommitValue(
                            gen * 10 + i,
                            "",
                            -1 if i == 3 else T0 + ts,
                            5,
                            T0 + ts + 60_000 if i % 4 else -1,
                            1 if i % 2 else 3,
                        )
                    ),
                    T0 + ts + 1,
                )
            )
        add(offset_commit_tombstone("g1", "t", 2), gen * 1000 + 99)
        rows.append((b"\x00\x01\x00", b"\x00\x03", T0 + gen * 1000 + 100))  # truncated key
        rows.append(
            (encode_key(OffsetCommitKey("g1", "t", 5)), bytes(bad_value), T0 + gen * 1000 + 101)
        )
        rows.append(
            (*encode_record(offset_commit_record("g1", "t", 6, 1, commit_timestamp=T0))[:2], None)
        )  # null timestamp
    add(group_metadata_tombstone("g2-é"), 9000)
    add(offset_commit_record("g1", "t", 2, 999, commit_timestamp=T0 + 9001), 9001)
    return rows


def write_records(rows, folder: Path, files: int = 2, row_group: int = 17) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    n = len(rows)
    table = pa.table(
        {
            "key": pa.array([r[0] for r in rows], pa.binary()),
            "value": pa.array([r[1] for r in rows], pa.binary()),
            "topic": pa.array(["__consumer_offsets"] * n),
            "partition": pa.array([3] * n, pa.int32()),
            "offset": pa.array(range(n), pa.int64()),
            "timestamp": pa.array([r[2] for r in rows], pa.timestamp("ms")),
            "timestampType": pa.array([0] * n, pa.int32()),
        }
    )
    step = (n + files - 1) // files
    for f in range(files):
        pq.write_table(
            table.slice(f * step, step), folder / f"part-{f}.parquet", row_group_size=row_group
        )
    return folder


def reference(spark, records: str) -> dict[str, list]:
    """The previous job's derivation, collected."""
    decoded = dec.decode(read_parquet(spark, records, dec.SOURCE_COLUMNS, "records")).cache()
    commits = tab.commits_of(decoded)
    out = {
        "commits": commits,
        "latest_offsets": tab.latest_offsets_of(decoded),
        "group_metadata": tab.group_metadata_of(decoded),
        "quarantine": tab.quarantine_of(decoded),
        "rebalances": rebalances_of(tab.group_metadata_of(decoded), commits),
    }
    result = {k: [tuple(r) for r in df.collect()] for k, df in out.items()}
    decoded.unpersist()
    return result


def written(spark, out: Path) -> dict[str, list]:
    return {
        k: [tuple(r) for r in spark.read.parquet(str(out / f"{k}.parquet")).collect()]
        for k in TABLES
    }


def assert_same(got: dict, want: dict) -> None:
    for k in TABLES:
        if k in ("latest_offsets", "rebalances"):  # written in order: compare the order too
            assert got[k] == want[k], k
        else:
            assert sorted(got[k], key=repr) == sorted(want[k], key=repr), k


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> Path:
    return write_records(history(), tmp_path_factory.mktemp("pass") / "records")


@pytest.fixture(scope="module")
def expected(spark, records):
    return reference(spark, str(records))


@pytest.fixture(scope="module")
def ours(spark, records, tmp_path_factory):
    out = tmp_path_factory.mktemp("ours") / "out"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(of, "TASK_ROWS", 20)  # two row groups a task, three tasks
        return off.run_offsets(spark, str(records), str(out)), out


def test_file_tasks_equal_the_reference(spark, records, expected, ours):
    summary, out = ours
    assert len(of.plan_files(str(records))) == 1  # 160 rows: one task at the default size
    assert_same(written(spark, out), expected)
    assert summary["commits"] == len(expected["commits"]) and summary["latest_offsets"] == len(
        expected["latest_offsets"]
    )
    assert summary["quarantined"] == len(expected["quarantine"]) == 9
    assert summary["rebalances"] == len(expected["rebalances"]) == 6
    assert summary["records"] == len(history())
    assert sum(summary["quarantine_reasons"].values()) == 9
    # record order: the part files, by name, hold the commits in log order
    parts = sorted((out / "commits.parquet").glob("part-*.parquet"))
    offsets = [o for f in parts for o in pq.read_table(f).column("record_offset").to_pylist()]
    assert offsets == sorted(offsets) and len(offsets) == summary["commits"]
    # quarantine and group metadata keep log order too
    for name in ("quarantine", "group_metadata"):
        t = pq.read_table(next((out / f"{name}.parquet").glob("part-*.parquet")))
        vals = t.column("detail" if name == "quarantine" else "record_offset").to_pylist()
        keys = (
            [int(v.split("offset=")[1].split()[0]) for v in vals] if name == "quarantine" else vals
        )
        assert keys == sorted(keys)


def _same_files(ours: Path, theirs: Path) -> None:
    a = pq.ParquetFile(next(f for f in sorted(ours.glob("part-*")) if pq.read_metadata(f).num_rows))
    b = pq.ParquetFile(
        next(f for f in sorted(theirs.glob("part-*")) if pq.read_metadata(f).num_rows)
    )
    assert a.metadata.metadata == b.metadata.metadata
    assert a.schema_arrow == b.schema_arrow
    kinds = lambda f: [(c.physical_type, str(c.logical_type), c.converted_type) for c in f.schema]  # noqa: E731
    assert kinds(a) == kinds(b)
    assert (
        a.metadata.row_group(0).column(0).compression
        == b.metadata.row_group(0).column(0).compression
    )
    assert (ours / "_SUCCESS").exists()


def test_commit_files_match_sparks_writer(spark, records, ours, tmp_path):
    """Footer schema, Parquet types and codec as Spark writes them, under the default and TIMESTAMP_MICROS."""
    decoded = dec.decode(read_parquet(spark, str(records), dec.SOURCE_COLUMNS, "records"))
    tab.commits_of(decoded).write.parquet(str(tmp_path / "spark-INT96"))
    _same_files(ours[1] / "commits.parquet", tmp_path / "spark-INT96")
    for name, derive in (
        ("latest_offsets", tab.latest_offsets_of),
        ("group_metadata", tab.group_metadata_of),
        ("quarantine", tab.quarantine_of),
    ):  # the driver's one-file tables
        derive(decoded).coalesce(1).write.parquet(str(tmp_path / f"spark-{name}"))
        _same_files(ours[1] / f"{name}.parquet", tmp_path / f"spark-{name}")
    small = write_records(history()[:30], tmp_path / "small", files=1)
    previous = spark.conf.get("spark.sql.parquet.outputTimestampType")
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    try:
        off.run_offsets(spark, str(small), str(tmp_path / "micros"))
        decoded = dec.decode(read_parquet(spark, str(small), dec.SOURCE_COLUMNS, "records"))
        tab.commits_of(decoded).write.parquet(str(tmp_path / "spark-micros"))
    finally:
        spark.conf.set("spark.sql.parquet.outputTimestampType", previous)
    _same_files(tmp_path / "micros" / "commits.parquet", tmp_path / "spark-micros")
    got = sorted(
        map(tuple, spark.read.parquet(str(tmp_path / "micros" / "commits.parquet")).collect()),
        key=repr,
    )
    want = sorted(
        map(tuple, spark.read.parquet(str(tmp_path / "spark-micros")).collect()), key=repr
    )
    assert got == want and len(got) > 10


def test_dataframe_input_equals_the_reference(spark, records, expected, tmp_path):
    """A Kafka-source DataFrame (as from the connector) goes through mapInArrow and Spark's writer."""
    df = spark.read.parquet(str(records))
    off.run_offsets(spark, None, str(tmp_path / "out"), source_df=df)
    assert_same(written(spark, tmp_path / "out"), expected)


def test_segments_straddling_a_group_metadata_record_fall_back(spark, tmp_path):
    """Offsets out of log order: a batch's commit run spans another batch's GroupMetadata record."""
    m = [_member("a", [("t", 0)])]
    rows = [
        (*encode_record(offset_commit_record("g", "t", 0, 1, commit_timestamp=T0 + 1)), T0 + 1),
        (*encode_record(offset_commit_record("g", "t", 0, 2, commit_timestamp=T0 + 50)), T0 + 50),
        (*encode_record(_gm("g", 1, m, -1)), T0 + 20),
        (*encode_record(_gm("g", 2, m, -1)), T0 + 60),
    ]
    folder = tmp_path / "records"
    folder.mkdir()
    n = len(rows)
    table = pa.table(
        {
            "key": pa.array([r[0] for r in rows], pa.binary()),
            "value": pa.array([r[1] for r in rows], pa.binary()),
            "topic": pa.array(["__consumer_offsets"] * n),
            "partition": pa.array([0] * n, pa.int32()),
            "offset": pa.array([0, 10, 5, 11], pa.int64()),
            "timestamp": pa.array([r[2] for r in rows], pa.timestamp("ms")),
        }
    )
    pq.write_table(table, folder / "a.parquet", row_group_size=2)
    want = reference(spark, str(folder))
    off.run_offsets(
        spark, str(folder), str(tmp_path / "out")
    )  # driver-side episodes give up, Spark's per-commit join
    assert_same(written(spark, tmp_path / "out"), want)
    # generation 1 is the group's first record: no earlier assignment to attribute the commit at offset 0 by, so its
    # start is unknown; a (owner of t-0 in generation 1) last committed at offset 10 before generation 2 (record at 11)
    assert [(r[2], r[6], r[5]) for r in want["rebalances"]] == [(1, None, None), (2, "commit", 10)]


def test_tasks_keep_row_groups_whole_and_in_order(records, monkeypatch):
    monkeypatch.setattr(of, "TASK_ROWS", 20)
    tasks = of.plan_files(str(records))
    flat = [t for task in tasks for t in task]
    assert len(tasks) == 3 and [len(t) for t in tasks] == [
        2,
        2,
        2,
    ]  # row groups of 17, 17, 12 rows per file
    assert flat == sorted(flat) and len(set(flat)) == len(flat)


def test_unusual_layouts_take_the_dataframe_path(tmp_path):
    rows = history()[:10]
    plain = write_records(rows, tmp_path / "plain", files=1)
    assert of.plan_files(str(plain)) is not None
    (tmp_path / "nested" / "sub").mkdir(parents=True)
    write_records(rows, tmp_path / "nested" / "sub", files=1)
    assert of.plan_files(str(tmp_path / "nested")) is None
    t = pq.read_table(plain / "part-0.parquet")
    pq.write_table(
        t.set_column(5, "timestamp", t.column("timestamp").cast(pa.timestamp("ns"))),
        tmp_path / "int96.parquet",
        use_deprecated_int96_timestamps=True,
    )
    assert of.plan_files(str(tmp_path / "int96.parquet")) is None
    pq.write_table(
        t.set_column(3, "partition", t.column("partition").cast(pa.int64())),
        tmp_path / "long.parquet",
    )
    assert of.plan_files(str(tmp_path / "long.parquet")) is None


def test_nanosecond_input_and_spark_side_rebalances(spark, tmp_path, monkeypatch):
    """pandas-style timestamp[ns] (floored to microseconds, as read_parquet does); above LOCAL_REBALANCES
    the episodes come from Spark over the commit segments."""
    rows = history()[:40]
    t = pq.read_table(write_records(rows, tmp_path / "ms", files=1) / "part-0.parquet")
    ns = t.column("timestamp").cast(pa.timestamp("ns"))
    ns = pa.array(
        [None if v is None else v - 1_234 for v in ns.cast(pa.int64()).to_pylist()],
        pa.timestamp("ns"),
    )
    folder = tmp_path / "ns"
    folder.mkdir()
    pq.write_table(t.set_column(5, "timestamp", ns), folder / "a.parquet", row_group_size=9)
    assert of.plan_files(str(folder)) is not None
    want = reference(spark, str(folder))
    monkeypatch.setattr(off, "LOCAL_REBALANCES", 0)
    off.run_offsets(spark, str(folder), str(tmp_path / "out"))
    assert_same(written(spark, tmp_path / "out"), want)
    assert len(want["rebalances"]) >= 2 and len(want["commits"]) > 10


def test_sessions_only_sparks_writer_matches_write_through_spark(spark, tmp_path):
    """With spark.sql.parquet.writeLegacyFormat the tasks hand their commits to Spark's writer, and the small
    tables go through Spark too; the tables are the same."""
    small = write_records(history()[:45], tmp_path / "small", files=1, row_group=10)
    want = reference(spark, str(small))
    spark.conf.set("spark.sql.parquet.writeLegacyFormat", "true")
    try:
        off.run_offsets(spark, str(small), str(tmp_path / "out"))
    finally:
        spark.conf.unset("spark.sql.parquet.writeLegacyFormat")
    assert_same(written(spark, tmp_path / "out"), want)
    assert pq.ParquetFile(
        next((tmp_path / "out" / "commits.parquet").glob("part-*"))
    ).metadata.created_by.startswith("parquet-mr")


@pytest.mark.parametrize("remote", [False, True], ids=["cluster-master", "remote-output"])
def test_unshared_path_for_cluster_masters_equals_the_reference(
    spark, records, expected, ours, tmp_path, monkeypatch, remote
):
    """On a cluster master the side tables travel in the accumulator while the tasks still write commits
    (the driver checks what it sees); for a remote output (hdfs://, s3a://: nothing pyarrow writes
    here) Spark writes every table. Same tables, same summary either way."""
    monkeypatch.setattr(off, "_shares_files", lambda spark, outdir: False)
    if remote:
        monkeypatch.setattr(off, "local_of", lambda path: None)
    summary = off.run_offsets(spark, str(records), str(tmp_path / "out"))
    assert_same(written(spark, tmp_path / "out"), expected)
    ours_summary = ours[0]
    keep = (
        "records",
        "commits",
        "offset_tombstones",
        "latest_offsets",
        "group_metadata",
        "group_tombstones",
        "rebalances",
        "quarantined",
        "quarantine_reasons",
    )
    assert {k: summary[k] for k in keep} == {k: ours_summary[k] for k in keep}
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".")]
    for table in ("commits", "latest_offsets", "group_metadata"):  # who wrote them
        part = next((tmp_path / "out" / f"{table}.parquet").glob("part-*"))
        made_by = pq.ParquetFile(str(part)).metadata.created_by
        assert made_by.startswith("parquet-mr" if remote else "parquet-cpp-arrow"), made_by


def test_side_tables_travel_as_files_and_are_cleaned_up(spark, records, ours):
    """Tasks spill their side tables (no rows through the accumulator) and the folder is removed."""
    _, out = ours
    assert not [p for p in out.iterdir() if p.name.startswith(".")]
    dec = op.PassDecoder(5)
    batches = list(pq.ParquetFile(str(next(records.glob("*.parquet")))).iter_batches())
    for _ in dec.batches(iter(of._normalise(b) for b in batches)):
        pass
    spill = out.parent / "spill"
    spill.mkdir()
    state = dec.state.finish()
    counts = dict(state.counts)
    latest_rows = state.latest.num_rows
    shipped = state.spill(str(spill), 5)
    assert shipped.latest is None and not shipped.side and not shipped.segments and shipped.spilled
    back = op.PassState().merge(shipped).load_spilled()
    assert back.counts == counts and back.latest.num_rows == latest_rows


def test_files_named_like_partitions_are_read_as_spark_reads_them(spark, tmp_path):
    """Spark hides `_x` and `.x` but reads `_b=1.parquet`; the planner follows the same rule."""
    rows = history()[:60]
    t = pq.read_table(write_records(rows, tmp_path / "src", files=1) / "part-0.parquet")
    folder = tmp_path / "in"
    folder.mkdir()
    pq.write_table(t.slice(0, 30), folder / "a.parquet")
    pq.write_table(t.slice(30), folder / "_b=1.parquet")
    pq.write_table(t.slice(0, 5), folder / "_hidden.parquet")
    pq.write_table(t.slice(0, 5), folder / ".also-hidden.parquet")
    assert spark.read.parquet(str(folder)).count() == 60
    summary = off.run_offsets(spark, str(folder), str(tmp_path / "out"))
    assert summary["records"] == 60


def test_nanoseconds_floor_the_same_on_both_paths(spark, tmp_path):
    """Near 1.7e18 ns a double loses the last digits: both read paths floor exactly."""
    rows = history()[:30]
    t = pq.read_table(write_records(rows, tmp_path / "ms", files=1) / "part-0.parquet")
    base = 1_700_000_000_018_000_000
    ns = pa.array([base + i * 1_000_001 for i in range(t.num_rows)], pa.timestamp("ns"))
    folder = tmp_path / "ns"
    folder.mkdir()
    pq.write_table(t.set_column(5, "timestamp", ns), folder / "a.parquet")
    from pyspark.sql import functions as F

    df = read_parquet(spark, str(folder), dec.SOURCE_COLUMNS, "records")
    micros = sorted(r[0] for r in df.select(F.unix_micros("timestamp")).collect())
    assert micros == sorted((base + i * 1_000_001) // 1000 for i in range(t.num_rows))
    # and the job's file path and DataFrame path agree record for record
    assert of.plan_files(str(folder)) is not None
    off.run_offsets(spark, str(folder), str(tmp_path / "files"))
    off.run_offsets(spark, None, str(tmp_path / "frame"), source_df=df)
    files, frame = written(spark, tmp_path / "files"), written(spark, tmp_path / "frame")
    assert len(files["commits"]) > 5
    assert_same(files, frame)
