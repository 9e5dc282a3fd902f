"""The offsets job: `__consumer_offsets` records -> commits, latest offsets, group history.

run_offsets makes one Spark pass over the records (offsets_pass.py): Parquet
input is read, decoded and its commits written by Python tasks, one per row
group; a DataFrame (Kafka source) goes through `mapInArrow` and Spark's
writer. Everything but the commits is small and comes back from the pass on
the side. Decoding lives in offsets_decode.py; each output's definition
(in Spark over the decoded rows, and in Arrow from the pass) in
offsets_tables.py; the tests hold the pass to the Spark definitions.

Outputs (docs/formats.md section 5):
- commits.parquet: every offset commit (not tombstones), in record order;
- latest_offsets.parquet: per group/topic/partition the last commit, unless
  its last record is a tombstone (offset deleted or expired);
- group_metadata.parquet: every GroupMetadata record: generation, protocol,
  leader, members with their decoded subscriptions and assignments;
- rebalances.parquet: one episode per generation change (rebalances.py);
- quarantine.parquet: what could not be decoded, and why.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

from . import offsets_pass as op
from .io import (
    check_column_types,
    check_written,
    is_local,
    local_of,
    location,
    publish_folder,
    read_parquet,
    staged_output,
    staging_folder,
    write_parquet,
)
from .offsets_decode import DECODED_SCHEMA, SOURCE_COLUMNS, arrow_schema, source_frame
from .offsets_files import plan_files
from .offsets_tables import (
    commits_select,
    consumer_groups_of,
    group_metadata_arrow,
    group_metadata_of,
    latest_arrow,
    latest_select,
    quarantine_arrow,
    quarantine_of,
)

LOCAL_REBALANCES = 20_000  # GroupMetadata records up to which episodes are built on the driver


# What the Kafka source gives (Spark's Kafka connector, our data source): a string key or a float
# offset is not a dump of `__consumer_offsets`, refused by name instead of quarantining every row.
SOURCE_TYPES = {
    "key": "binary",
    "value": "binary_or_null",
    "topic": "string",
    "partition": "integral",
    "offset": "integral",
    "timestamp": "time",
}
OUTPUTS = (
    "commits.parquet",
    "latest_offsets.parquet",
    "group_metadata.parquet",
    "quarantine.parquet",
    "consumer_groups.parquet",
    "rebalances.parquet",
)


def run_offsets(spark, records: str | None, out: str, source_df=None) -> dict[str, Any]:
    """The offsets job: the input is read and checked, then every output is written into a staging
    folder switched in as one set (io.staged_output), so a kill never leaves two runs' tables mixed."""
    if source_df is None:
        if records is None:
            raise ValueError("run_offsets needs the records path or a source DataFrame")
        source_df = read_parquet(
            spark, records, SOURCE_COLUMNS, "Kafka-source records", null_as={"value": "binary"}
        )
        check_column_types(source_df, SOURCE_TYPES, str(records))
    else:
        records = None
    with staged_output(out, OUTPUTS) as stage:
        summary = _run_into(spark, records, stage, source_df)
    summary["out"] = str(location(out))
    return summary


def _run_into(spark, records: str | None, outdir, source_df) -> dict[str, Any]:
    """Decode `__consumer_offsets` records from Parquet (`records`) or a DataFrame and write the tables.

    One Spark pass decodes every record and writes commits.parquet; the other
    outputs come from what that pass handed back on the side (offsets_pass:
    latest-offset candidates, GroupMetadata and quarantined rows, commit
    segments, counts), so the records are read and decoded once, on any master.
    When the output is a local folder as the driver sees it (a plain path or a
    `file:` URI) the tasks write commits.parquet themselves and the driver its
    small tables, with pyarrow in Spark's layout (spark_files), on any master:
    on a cluster the driver then checks what it finds against what the tasks
    wrote (io.check_written), which is how a cluster without a shared file
    system is caught. Spark's writer (Arrow into the JVM, rows, Parquet) cost a
    2-worker standalone cluster 2x the decoding itself (BENCHMARKS.md). On a
    local master the side tables come back through files (PassState.spill),
    elsewhere in the accumulator. Remote outputs (hdfs://, s3a://) and
    DataFrame inputs go through Spark's writer.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from .rebalances import (
        EPISODE_SCHEMA,
        episodes_from_records,
        rebalances_of,
        segments_are_exact,
    )
    from .spark_files import SparkFiles

    shared = _shares_files(spark, outdir)
    local_out = local_of(outdir) is not None  # pyarrow can write it; the tasks too if shared
    phases: dict[str, float] = {}
    phase = _phase_clock(phases)
    restore = None
    tasks = None
    if records is not None:
        tasks = plan_files(str(records)) if is_local(records) else None
    acc = op.accumulator(spark)
    spill = None
    if shared and isinstance(outdir, Path):  # the tasks' side tables (PassState.spill)
        spill = outdir / f".pass-side-{uuid.uuid4().hex}"
        spill.mkdir()
    target = outdir / "commits.parquet"
    staging = staging_folder(target)
    staging_dir = local_of(staging)
    writer = None
    if tasks is not None and staging_dir is not None:
        writer = SparkFiles.for_frame(
            spark, str(staging_dir), commits_select(spark.createDataFrame([], op.COMMIT_DDL))
        )
    phase("plan")
    try:
        if (
            writer is not None and tasks is not None and staging_dir is not None
        ):  # the tasks read, decode and write: the records never enter the JVM
            staging_dir.mkdir()
            written = op.file_pass(spark, tasks, acc, writer, _str(spill)).collect()
            writer.finish()
            check_written(spark, staging, sum(r["rows"] for r in written), "writing commits")
            publish_folder(staging, target)
        elif tasks is not None:
            write_parquet(
                commits_select(op.file_pass(spark, tasks, acc, spill_dir=_str(spill))), target
            )
        else:
            if records is not None and is_local(records):
                restore = _split_finely(spark, str(records))
            write_parquet(
                commits_select(op.frame_pass(source_frame(source_df), acc, _str(spill))), target
            )
        state = acc.value.load_spilled()
    finally:
        if staging_dir is not None:
            shutil.rmtree(staging_dir, ignore_errors=True)
        if spill is not None:
            shutil.rmtree(spill, ignore_errors=True)
        if restore is not None:
            spark.conf.set("spark.sql.files.maxPartitionBytes", restore)
    phase("decode_commits")

    latest = _latest_table(state)
    side = _side_table(state)
    empty = spark.createDataFrame([], DECODED_SCHEMA)  # for the output schemas; never run
    _write_small(
        spark,
        local_out,
        outdir / "latest_offsets.parquet",
        latest_select(spark.createDataFrame([], op.LATEST_DDL)),
        lambda f: latest_arrow(latest, f.schema),
        lambda: latest_select(_from_arrow(spark, latest, op.LATEST_DDL)),
    )
    _write_small(
        spark,
        local_out,
        outdir / "group_metadata.parquet",
        group_metadata_of(empty),
        lambda f: group_metadata_arrow(spark, side, f.schema),
        lambda: group_metadata_of(_from_arrow(spark, side, DECODED_SCHEMA)),
    )
    _write_small(
        spark,
        local_out,
        outdir / "quarantine.parquet",
        quarantine_of(empty),
        lambda f: quarantine_arrow(side, f.schema),
        lambda: quarantine_of(_from_arrow(spark, side, DECODED_SCHEMA)),
    )
    phase("latest_group_metadata_quarantine")

    n_gm = sum(n for (kind, _, _), n in state.counts.items() if kind == "group_metadata")
    segments = pa.concat_tables(state.segments) if state.segments else None
    episodes = None
    local_eps = None  # the episodes the driver built (pandas, rebalances.EPISODE_SCHEMA), if it did
    if n_gm <= LOCAL_REBALANCES:  # a small history: episodes built on the driver
        gm_rows = (
            side.filter(pc.equal(side.column("kind"), "group_metadata"))
            if side is not None
            else _empty_side()
        )
        local_eps = episodes_from_records(gm_rows, segments)
    consumer = (
        side.filter(pc.equal(side.column("kind"), "consumer_group")) if side is not None else None
    )
    has_consumer = consumer is not None and consumer.num_rows > 0
    if consumer is not None and has_consumer:
        write_parquet(
            consumer_groups_of(_from_arrow(spark, consumer, DECODED_SCHEMA)),
            outdir / "consumer_groups.parquet",
            files=1,
        )
    if local_eps is not None and not has_consumer and _utc_session(spark):
        # the driver's own table: written from Arrow like the other small ones (no Spark stage)
        eps = local_eps
        _write_small(
            spark,
            local_out,
            outdir / "rebalances.parquet",
            spark.createDataFrame([], EPISODE_SCHEMA),
            lambda f: pa.Table.from_pandas(eps, preserve_index=False),
            lambda: spark.createDataFrame(eps, EPISODE_SCHEMA),
        )
        n_episodes = len(local_eps)
    else:
        if local_eps is not None:
            episodes = spark.createDataFrame(local_eps, EPISODE_SCHEMA)
        else:
            gm = spark.read.parquet(str(outdir / "group_metadata.parquet"))
            seg_df = _from_arrow(spark, segments, op.SEGMENT_DDL)
            if segments_are_exact(gm, seg_df):
                episodes = rebalances_of(gm, segments=seg_df)
            else:  # a commit run straddles a GroupMetadata record of another batch: per commit
                episodes = rebalances_of(gm, spark.read.parquet(str(outdir / "commits.parquet")))
        if consumer is not None and has_consumer:
            episodes = episodes.unionByName(_consumer_episodes(spark, consumer))
        n_episodes = write_parquet(episodes, outdir / "rebalances.parquet", files=1)
    phase("rebalances")

    return _summary(
        state.counts.items(),
        0 if latest is None else latest.num_rows,
        n_episodes,
        phases,
        outdir,
    )


def _consumer_episodes(spark, consumer):
    """KIP-848 groups' episodes (consumer_rebalances.py) as a DataFrame of rebalances.EPISODE_SCHEMA."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .consumer_rebalances import consumer_episodes
    from .rebalances import EPISODE_SCHEMA, _frame

    cols = ["group", "key_version", "member_id", "tombstone", "epoch", "partitions"]
    consumer = consumer.sort_by([("record_partition", "ascending"), ("record_offset", "ascending")])
    micros = consumer.column("record_ts").cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
    ts_ms = pc.floor(pc.divide(micros.cast(pa.float64()), 1000)).cast(pa.int64()).to_pylist()
    rows = consumer.select(cols).to_pylist()
    for r, t in zip(rows, ts_ms):
        r["ts_ms"] = t
    eps = consumer_episodes(rows)
    if not eps:
        return spark.createDataFrame([], EPISODE_SCHEMA)
    return spark.createDataFrame(_frame(eps), EPISODE_SCHEMA)


def _shares_files(spark, outdir) -> bool:
    """Whether the tasks and the driver share the output's file system for sure: a local master, a local path."""
    return spark.sparkContext.master.startswith("local") and isinstance(outdir, Path)


def _utc_session(spark) -> bool:
    """Whether Spark reads the driver's naive episode times (pandas) as UTC, as the Arrow path writes them."""
    tz = spark.conf.get("spark.sql.session.timeZone", "UTC") or "UTC"
    return tz in ("UTC", "Etc/UTC", "GMT", "Etc/GMT", "Z", "+00:00")


def _str(path) -> str | None:
    return None if path is None else str(path)


def _phase_clock(phases: dict[str, float]):
    """phase(name) records the seconds since the previous call (or since this one was made)."""
    import time

    clock = [time.perf_counter()]

    def phase(name: str) -> None:
        now = time.perf_counter()
        phases[name] = round(now - clock[0], 3)
        clock[0] = now

    return phase


def _summary(
    counted, latest_offsets: int, rebalances: int, phases: dict[str, float], outdir: Any
) -> dict[str, Any]:
    """The job's summary from ((kind, tombstone, reason), rows) counts, either path's."""
    counts: dict[str, int] = {}
    tombstones: dict[str, int] = {}
    reasons: dict[str, int] = {}
    for (kind, tomb, reason), n in counted:
        counts[kind] = counts.get(kind, 0) + n
        if tomb:
            tombstones[kind] = tombstones.get(kind, 0) + n
        if kind == "quarantine":
            reasons[reason] = reasons.get(reason, 0) + n
    return {
        "records": sum(counts.values()),
        "commits": counts.get("offset_commit", 0) - tombstones.get("offset_commit", 0),
        "offset_tombstones": tombstones.get("offset_commit", 0),
        "latest_offsets": latest_offsets,
        "group_metadata": counts.get("group_metadata", 0),
        "group_tombstones": tombstones.get("group_metadata", 0),
        "rebalances": rebalances,
        "consumer_group_records": counts.get("consumer_group", 0),
        "quarantined": counts.get("quarantine", 0),
        "quarantine_reasons": reasons,
        "phases_s": phases,
        "out": str(outdir),
    }


def _from_arrow(spark, table, ddl: str):
    from pyspark.sql.types import _parse_datatype_string

    schema = _parse_datatype_string(ddl)
    if table is None or table.num_rows == 0:
        return spark.createDataFrame([], schema)
    return spark.createDataFrame(table, schema=schema)


def _latest_table(state):
    """Keys whose last record is not a tombstone (offsets_pass.LATEST_DDL), sorted by key, or None."""
    import pyarrow.compute as pc

    table = state.latest
    if table is None:
        return None
    return table.filter(pc.invert(table.column("tombstone"))).sort_by(
        [("group", "ascending"), ("topic", "ascending"), ("partition", "ascending")]
    )


def _write_small(spark, local_out: bool, target, frame, arrow, spark_df) -> None:
    """One-file output: from Arrow in Spark's layout (spark_files) when the driver can write it (a local
    folder) and the session's Parquet settings allow, else through Spark's writer.

    `frame` is the output's (analysed, never run) DataFrame, for its schema;
    `arrow(files)` builds the rows as a pyarrow table; `spark_df()` the
    equivalent DataFrame for Spark's writer.
    """
    from .spark_files import SparkFiles

    staging = staging_folder(target)
    staging_dir = local_of(staging)
    files = (
        SparkFiles.for_frame(spark, str(staging_dir), frame)
        if local_out and staging_dir is not None
        else None
    )
    if files is None or staging_dir is None:
        write_parquet(spark_df(), target, files=1)
        return
    try:
        table = arrow(files)
        if table is not None:
            files.write_table(table)
        files.finish()
        check_written(spark, staging, None if table is None else table.num_rows, target.name)
        publish_folder(staging, target)
    finally:
        shutil.rmtree(staging_dir, ignore_errors=True)


def _side_table(state):
    """GroupMetadata and quarantined rows (DECODED_SCHEMA, pyarrow) in record order, or None."""
    import pyarrow as pa

    if not state.side:
        return None
    table = pa.concat_tables(
        [
            t.cast(
                t.schema.set(
                    t.schema.get_field_index("record_ts"),
                    pa.field("record_ts", pa.timestamp("us", tz="UTC")),
                )
            )
            for t in state.side
        ]
    )
    return table.sort_by([("_task", "ascending"), ("_seq", "ascending")]).drop_columns(
        ["_task", "_seq"]
    )


def _empty_side():
    import pyarrow as pa

    return arrow_schema(pa.timestamp("us", tz="UTC")).empty_table()


def _split_finely(spark, path: str) -> str:
    """Decoding is CPU-bound Python: cut the input into ~4 splits per core so no core idles at the end.

    Returns the previous `spark.sql.files.maxPartitionBytes` to restore.
    """
    previous = spark.conf.get("spark.sql.files.maxPartitionBytes")
    p = Path(path)
    total = (
        p.stat().st_size
        if p.is_file()
        else sum(f.stat().st_size for f in p.rglob("*.parquet") if f.is_file())
    )
    cores = max(1, spark.sparkContext.defaultParallelism)
    split = max(1 << 20, min(128 << 20, total // (4 * cores) + 1))
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(split))
    return previous
