"""`__consumer_offsets` records (Spark's Kafka-source schema) -> commits, latest offsets, group history.

Records are decoded with the shared codecs (`group.records`, and
`assign.protocol` for the members' subscriptions and assignments), through
fast_decode's vectorised path for the common shapes and the exact per-record
path (`_decode_slow`) for the rest. A record that does not decode
(truncated, unknown key version, null key or timestamp) becomes a quarantine
row with the reason; the job goes on.

run_offsets makes one Spark pass over the records (offsets_pass.py): Parquet
input is read, decoded and its commits written by Python tasks, one per row
group; a DataFrame (Kafka source) goes through `mapInArrow` and Spark's
writer. Everything but the commits is small and comes back from the pass on
the side. `decode` (one wide DECODED_SCHEMA row per record) and the `*_of`
derivations below are the plain multi-pass definition of the same outputs;
the tests hold the pass to them.

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

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .io import publish_folder, read_parquet, staging_folder, write_parquet

LOCAL_REBALANCES = 20_000  # GroupMetadata records up to which episodes are built on the driver
SOURCE_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp")

MEMBER_TYPE = (
    "struct<member_id:string, group_instance_id:string, client_id:string, client_host:string, "
    "rebalance_timeout:int, session_timeout:int, topics:array<string>, "
    "assigned:array<struct<topic:string, partition:int>>, error:string>"
)
DECODED_SCHEMA = (
    "kind string, reason string, record_partition int, record_offset long, record_ts timestamp, "
    "key_version int, value_version int, tombstone boolean, "
    "group string, topic string, partition int, offset long, leader_epoch int, metadata string, "
    "commit_timestamp long, expire_timestamp long, "
    "protocol_type string, generation int, protocol string, leader string, current_state_timestamp long, "
    f"members array<{MEMBER_TYPE}>, detail string"
)
_FIELDS = [
    f.strip().split(" ", 1)[0]
    for f in DECODED_SCHEMA.replace(f"array<{MEMBER_TYPE}>", "M").split(",")
]


def _member(m) -> dict[str, Any]:
    """A member of a GroupMetadata value, its consumer-protocol bytes decoded when they parse."""
    from ..assign.protocol import SchemaException, decode_assignment, decode_subscription

    topics = assigned = None
    error = None
    try:
        if m.subscription:
            topics = list(decode_subscription(m.subscription).topics)
        if m.assignment:
            assigned = [
                {"topic": tp.topic, "partition": tp.partition}
                for tp in decode_assignment(m.assignment).partitions
            ]
    except (SchemaException, ValueError, UnicodeDecodeError) as exc:
        error = f"consumer protocol: {exc}"
    return {
        "member_id": m.member_id,
        "group_instance_id": m.group_instance_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "rebalance_timeout": m.rebalance_timeout,
        "session_timeout": m.session_timeout,
        "topics": topics,
        "assigned": assigned,
        "error": error,
    }


def decode_batches(batches: Iterator) -> Iterator:
    """mapInArrow body: Kafka-source batches in, decoded batches out.

    The common shapes (offset commits v0/v1 keys with v1/v3 values, tombstones)
    go through the vectorised fast path (fast_decode.split_fast); every other
    row through the exact per-record path, and the rows are put back in order.
    """
    import numpy as np
    import pyarrow as pa

    from .fast_decode import constant_strings, split_fast

    key_cache: dict[bytes, Any] = {}
    schemas: dict[Any, Any] = {}
    for batch in batches:
        ts_type = batch.column("timestamp").type
        schema = schemas.get(ts_type) or schemas.setdefault(ts_type, _arrow_schema(ts_type))
        fast_rows, cols, slow_rows = split_fast(batch)
        if len(fast_rows) == 0:
            yield _decode_slow(batch, schema, key_cache)
            continue
        m = len(fast_rows)
        arrays = []
        for f in schema.names:
            typ = schema.field(f).type
            c = cols.get(f)
            if f == "kind":
                arrays.append(constant_strings("offset_commit", m))
            elif c is None:
                arrays.append(pa.nulls(m, type=typ))
            elif isinstance(c, tuple):
                values, mask = c
                arrays.append(pa.array(values.astype(typ.to_pandas_dtype()), mask=mask, type=typ))
            else:
                arrays.append(c.cast(typ) if c.type != typ else c)
        fast = pa.RecordBatch.from_arrays(arrays, schema=schema)
        if len(slow_rows) == 0:
            yield fast
            continue
        slow = _decode_slow(batch.take(pa.array(slow_rows)), schema, key_cache)
        order = np.concatenate([fast_rows, slow_rows])
        inverse = np.empty(len(order), np.int64)
        inverse[order] = np.arange(len(order))
        both = pa.Table.from_batches([fast, slow]).take(pa.array(inverse)).combine_chunks()
        yield from both.to_batches(max_chunksize=len(order))


def decode_batches_slow(batches: Iterator) -> Iterator:
    """The exact per-record path alone (the reference the fast path is tested against)."""
    key_cache: dict[bytes, Any] = {}
    for batch in batches:
        yield _decode_slow(batch, _arrow_schema(batch.column("timestamp").type), key_cache)


def _decode_slow(batch, schema, key_cache: dict[bytes, Any]):
    """Decode one batch row by row with the shared codecs (group.records)."""
    import pyarrow as pa

    from ..group.records import OffsetCommitKey, RecordDecodeError, decode_key, decode_value

    # decode_record(key, value) is decode_key + decode_value; keys repeat (one per group/topic/partition),
    # so each distinct key is decoded once per task.
    n = batch.num_rows
    cols: dict[str, list] = {f: [None] * n for f in _FIELDS}
    cols["members"] = [None] * n
    keys = batch.column("key").to_pylist()
    values = batch.column("value").to_pylist()
    parts = batch.column("partition").to_pylist()
    offs = batch.column("offset").to_pylist()
    ts = batch.column("timestamp")
    ts_valid = ts.is_valid().to_pylist() if ts.null_count else None
    cols["record_partition"] = parts
    cols["record_offset"] = offs
    kind, reason, kv, vv, tomb = (
        cols["kind"],
        cols["reason"],
        cols["key_version"],
        cols["value_version"],
        cols["tombstone"],
    )
    group, topic, part, offset = cols["group"], cols["topic"], cols["partition"], cols["offset"]
    epoch, meta, cts, ets = (
        cols["leader_epoch"],
        cols["metadata"],
        cols["commit_timestamp"],
        cols["expire_timestamp"],
    )
    for i in range(n):
        key, value = keys[i], values[i]
        bad = None
        if ts_valid is not None and not ts_valid[i]:
            bad = "null timestamp"
        elif parts[i] is None or offs[i] is None:
            bad = "null partition or offset"
        if bad is None:
            try:
                if key is None:
                    raise RecordDecodeError("null key", part="key")
                k = key_cache.get(key)
                if k is None:
                    k = decode_key(key)
                    if len(key_cache) < 100_000:
                        key_cache[key] = k
                v = None if value is None else decode_value(k.version, value)
            except RecordDecodeError as exc:
                bad = f"{exc.part}: {exc.reason}"
        if bad is not None:
            kind[i] = "quarantine"
            reason[i] = bad
            cols["detail"][i] = (
                f"key={key.hex() if key is not None else None} value={value.hex() if value is not None else None}"
            )
            continue
        kv[i] = k.version
        tomb[i] = v is None
        group[i] = k.group
        if not isinstance(k, OffsetCommitKey):
            kind[i] = "group_metadata"
            if v is not None:
                vv[i] = v.version
                cols["protocol_type"][i] = v.protocol_type
                cols["generation"][i] = v.generation
                cols["protocol"][i] = v.protocol
                cols["leader"][i] = v.leader
                cols["current_state_timestamp"][i] = v.current_state_timestamp
                cols["members"][i] = [_member(m) for m in v.members]
        else:
            kind[i] = "offset_commit"
            topic[i] = k.topic
            part[i] = k.partition
            if v is not None:
                vv[i] = v.version
                offset[i] = v.offset
                epoch[i] = v.leader_epoch
                meta[i] = v.metadata
                cts[i] = v.commit_timestamp
                ets[i] = v.expire_timestamp
    arrays = [
        ts if f == "record_ts" else pa.array(cols[f], type=schema.field(f).type)
        for f in schema.names
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _arrow_schema(ts_type):
    import pyarrow as pa

    member = pa.struct(
        [
            ("member_id", pa.string()),
            ("group_instance_id", pa.string()),
            ("client_id", pa.string()),
            ("client_host", pa.string()),
            ("rebalance_timeout", pa.int32()),
            ("session_timeout", pa.int32()),
            ("topics", pa.list_(pa.string())),
            ("assigned", pa.list_(pa.struct([("topic", pa.string()), ("partition", pa.int32())]))),
            ("error", pa.string()),
        ]
    )
    types = {
        "kind": pa.string(),
        "reason": pa.string(),
        "record_partition": pa.int32(),
        "record_offset": pa.int64(),
        "record_ts": ts_type,
        "key_version": pa.int32(),
        "value_version": pa.int32(),
        "tombstone": pa.bool_(),
        "group": pa.string(),
        "topic": pa.string(),
        "partition": pa.int32(),
        "offset": pa.int64(),
        "leader_epoch": pa.int32(),
        "metadata": pa.string(),
        "commit_timestamp": pa.int64(),
        "expire_timestamp": pa.int64(),
        "protocol_type": pa.string(),
        "generation": pa.int32(),
        "protocol": pa.string(),
        "leader": pa.string(),
        "current_state_timestamp": pa.int64(),
        "members": pa.list_(member),
        "detail": pa.string(),
    }
    return pa.schema([(f, types[f]) for f in _FIELDS])


def source_frame(df):
    """Normalise a Kafka-source DataFrame (official connector, our data source or Parquet) for decoding."""
    from pyspark.sql import functions as F

    kinds = dict(df.dtypes)
    ts = F.col("timestamp")
    if not kinds["timestamp"].startswith("timestamp"):
        ts = F.timestamp_millis(F.col("timestamp").cast("long"))
    return df.select(
        F.col("key").cast("binary").alias("key"),
        F.col("value").cast("binary").alias("value"),
        F.col("topic").cast("string").alias("topic"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("long").alias("offset"),
        ts.alias("timestamp"),
    )


def decode(df):
    """The decoded DataFrame (DECODED_SCHEMA) of a Kafka-source DataFrame."""
    return source_frame(df).mapInArrow(decode_batches, DECODED_SCHEMA)


def commits_of(decoded):
    from pyspark.sql import functions as F

    return commits_select(decoded.where((F.col("kind") == "offset_commit") & ~F.col("tombstone")))


def commits_select(commits):
    """commits.parquet's columns from decoded offset-commit rows (DECODED_SCHEMA or offsets_pass.COMMIT_DDL)."""
    from pyspark.sql import functions as F

    return commits.select(
        "group",
        "topic",
        "partition",
        "offset",
        "leader_epoch",
        "metadata",
        F.timestamp_millis("commit_timestamp").alias("commit_ts"),
        F.when(F.col("expire_timestamp") >= 0, F.timestamp_millis("expire_timestamp")).alias(
            "expire_ts"
        ),
        "record_partition",
        "record_offset",
        "record_ts",
        "key_version",
        "value_version",
    )


def latest_offsets_of(decoded):
    """The committed offsets a coordinator would load: last record per key wins, tombstones delete.

    One hash aggregate over primitive columns picks the last record per key by
    log position (record partition, record offset); the metadata strings, which
    would force a slower sort-based aggregate, come from a second aggregate over
    the (usually few) commits that carry metadata.
    """
    from pyspark.sql import functions as F

    pos = (F.col("record_partition").cast("long") * F.lit(1 << 40) + F.col("record_offset")).alias(
        "pos"
    )
    commits = decoded.where(F.col("kind") == "offset_commit").select(
        "group",
        "topic",
        "partition",
        "tombstone",
        "offset",
        "leader_epoch",
        "metadata",
        "commit_timestamp",
        "record_offset",
        pos,
    )
    key = ["group", "topic", "partition"]
    last = commits.groupBy(*key).agg(
        F.max("pos").alias("pos"),
        *[
            F.max_by(c, "pos").alias(c)
            for c in ("tombstone", "offset", "leader_epoch", "commit_timestamp", "record_offset")
        ],
    )
    meta = (
        commits.where(F.col("metadata").isNotNull() & (F.col("metadata") != ""))
        .groupBy(*key)
        .agg(F.max("pos").alias("meta_pos"), F.max_by("metadata", "pos").alias("meta"))
    )
    return (
        last.where(~F.col("tombstone"))
        .join(meta, key, "left")
        .select(
            *key,
            "offset",
            "leader_epoch",
            F.when(F.col("meta_pos") == F.col("pos"), F.col("meta"))
            .otherwise(F.lit(""))
            .alias("metadata"),
            F.timestamp_millis("commit_timestamp").alias("commit_ts"),
            "record_offset",
        )
        .orderBy(*key)
    )


def group_metadata_of(decoded):
    from pyspark.sql import functions as F

    return decoded.where(F.col("kind") == "group_metadata").select(
        "group",
        "tombstone",
        "generation",
        "protocol_type",
        "protocol",
        "leader",
        F.when(
            F.col("current_state_timestamp") >= 0, F.timestamp_millis("current_state_timestamp")
        ).alias("current_state_ts"),
        F.coalesce(F.size("members"), F.lit(0)).alias("member_count"),
        "members",
        "record_partition",
        "record_offset",
        "record_ts",
        "key_version",
        "value_version",
    )


def quarantine_of(decoded):
    from pyspark.sql import functions as F

    return decoded.where(F.col("kind") == "quarantine").select(
        F.lit("records").alias("source"),
        "reason",
        F.concat(
            F.lit("partition="),
            F.coalesce(F.col("record_partition").cast("string"), F.lit("null")),
            F.lit(" offset="),
            F.coalesce(F.col("record_offset").cast("string"), F.lit("null")),
            F.lit(" "),
            F.col("detail"),
        ).alias("detail"),
    )


def run_offsets(spark, records: str | None, out: str, source_df=None) -> dict[str, Any]:
    """Decode `__consumer_offsets` records from Parquet (`records`) or a DataFrame and write the tables.

    One Spark pass decodes every record and writes commits.parquet; the other
    outputs come from what that pass handed back on the side (offsets_pass:
    latest-offset candidates, GroupMetadata and quarantined rows, commit
    segments, counts), so the records are read and decoded once.
    """
    import shutil

    import pyarrow as pa
    import pyarrow.compute as pc

    from . import offsets_pass as op
    from .rebalances import rebalances_from_records, rebalances_of, segments_are_exact
    from .spark_files import SparkFiles

    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    phases: dict[str, float] = {}
    phase = _phase_clock(phases)

    if not spark.sparkContext.master.startswith("local"):
        # the single pass has tasks read and write files the driver reads back: one machine only
        return _run_in_spark(spark, records, outdir, source_df)
    restore = None
    tasks = None
    if source_df is None:
        source_df = read_parquet(spark, records, SOURCE_COLUMNS, "Kafka-source records")
        tasks = op.plan_files(records)
    acc = op.accumulator(spark)
    spill = outdir / f".pass-side-{uuid.uuid4().hex}"  # the tasks' side tables (PassState.spill)
    spill.mkdir()
    target = outdir / "commits.parquet"
    staging = staging_folder(target)
    writer = None
    if tasks is not None:
        writer = SparkFiles.for_frame(
            spark, str(staging), commits_select(spark.createDataFrame([], op.COMMIT_DDL))
        )
    phase("plan")
    try:
        if writer is not None:  # the tasks read, decode and write: the records never enter the JVM
            staging.mkdir()
            op.file_pass(spark, tasks, acc, writer, str(spill)).collect()
            writer.finish()
            publish_folder(staging, target)
        elif tasks is not None:
            write_parquet(
                commits_select(op.file_pass(spark, tasks, acc, spill_dir=str(spill))), target
            )
        else:
            if records is not None:
                restore = _split_finely(spark, records)
            write_parquet(
                commits_select(op.frame_pass(source_frame(source_df), acc, str(spill))), target
            )
        state = acc.value.load_spilled()
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(spill, ignore_errors=True)
        if restore is not None:
            spark.conf.set("spark.sql.files.maxPartitionBytes", restore)
    phase("decode_commits")

    latest = _latest_table(state)
    side = _side_table(state)
    empty = spark.createDataFrame([], DECODED_SCHEMA)  # for the output schemas; never run
    _write_small(
        spark,
        outdir / "latest_offsets.parquet",
        latest_select(spark.createDataFrame([], op.LATEST_DDL)),
        lambda f: _latest_arrow(latest, f.schema),
        lambda: latest_select(_from_arrow(spark, latest, op.LATEST_DDL)),
    )
    _write_small(
        spark,
        outdir / "group_metadata.parquet",
        group_metadata_of(empty),
        lambda f: _group_metadata_arrow(spark, side, f.schema),
        lambda: group_metadata_of(_from_arrow(spark, side, DECODED_SCHEMA)),
    )
    _write_small(
        spark,
        outdir / "quarantine.parquet",
        quarantine_of(empty),
        lambda f: _quarantine_arrow(side, f.schema),
        lambda: quarantine_of(_from_arrow(spark, side, DECODED_SCHEMA)),
    )
    phase("latest_group_metadata_quarantine")

    n_gm = sum(n for (kind, _, _), n in state.counts.items() if kind == "group_metadata")
    segments = pa.concat_tables(state.segments) if state.segments else None
    episodes = None
    if (
        n_gm <= LOCAL_REBALANCES
    ):  # a small history: episodes built on the driver from the pass's tables
        gm_rows = (
            side.filter(pc.equal(side.column("kind"), "group_metadata"))
            if side is not None
            else _empty_side()
        )
        episodes = rebalances_from_records(spark, gm_rows, segments)
    if episodes is None:
        gm = spark.read.parquet(str(outdir / "group_metadata.parquet"))
        seg_df = _from_arrow(spark, segments, op.SEGMENT_DDL)
        if segments_are_exact(gm, seg_df):
            episodes = rebalances_of(gm, segments=seg_df)
        else:  # a commit run straddles a GroupMetadata record of another batch: per commit, as before
            episodes = rebalances_of(gm, spark.read.parquet(str(outdir / "commits.parquet")))
    write_parquet(episodes, outdir / "rebalances.parquet", files=1)
    phase("rebalances")

    return _summary(
        state.counts.items(),
        0 if latest is None else latest.num_rows,
        _rows(outdir / "rebalances.parquet"),
        phases,
        outdir,
    )


def _run_in_spark(spark, records: str | None, outdir: Path, source_df=None) -> dict[str, Any]:
    """Every table derived inside Spark from one decoded scratch folder (no data through the driver).

    For a cluster master, where tasks cannot share files with the driver. Same outputs as the single
    pass (tests/test_pipeline_offsets_pass.py checks it), several times slower.
    """
    import shutil

    from .rebalances import rebalances_of

    scratch = outdir / f".decoded-{uuid.uuid4().hex}.parquet"
    restore = None
    if source_df is None:
        source_df = read_parquet(spark, records, SOURCE_COLUMNS, "Kafka-source records")
        restore = _split_finely(spark, records)
    phases: dict[str, float] = {}
    phase = _phase_clock(phases)

    try:
        decode(source_df).write.mode("overwrite").parquet(str(scratch))
        phase("decode")
        decoded = spark.read.parquet(str(scratch))
        write_parquet(commits_of(decoded), outdir / "commits.parquet")
        phase("commits")
        write_parquet(latest_offsets_of(decoded), outdir / "latest_offsets.parquet", files=1)
        write_parquet(group_metadata_of(decoded), outdir / "group_metadata.parquet", files=1)
        write_parquet(quarantine_of(decoded), outdir / "quarantine.parquet", files=1)
        phase("latest_group_metadata_quarantine")
        gm = spark.read.parquet(str(outdir / "group_metadata.parquet"))
        cm = spark.read.parquet(str(outdir / "commits.parquet"))
        write_parquet(rebalances_of(gm, cm), outdir / "rebalances.parquet", files=1)
        phase("rebalances")
        stats = decoded.groupBy("kind", "tombstone", "reason").count().collect()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if restore is not None:
            spark.conf.set("spark.sql.files.maxPartitionBytes", restore)
    stats = [((r["kind"], r["tombstone"], r["reason"]), int(r["count"])) for r in stats]
    return _summary(
        stats,
        _rows(outdir / "latest_offsets.parquet"),
        _rows(outdir / "rebalances.parquet"),
        phases,
        outdir,
    )


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
    counted, latest_offsets: int, rebalances: int, phases: dict[str, float], outdir: Path
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
        "quarantined": counts.get("quarantine", 0),
        "quarantine_reasons": reasons,
        "phases_s": phases,
        "out": str(outdir),
    }


def latest_select(candidates):
    """latest_offsets.parquet from the last record per key (offsets_pass.LATEST_DDL), as latest_offsets_of.

    `candidates` come sorted by group, topic, partition (_latest_table sorts
    them in Arrow, whose byte-wise string order is Spark's); written with one
    file, the order stays.
    """
    from pyspark.sql import functions as F

    key = ["group", "topic", "partition"]
    return candidates.where(~F.col("tombstone")).select(
        *key,
        "offset",
        "leader_epoch",
        F.when(F.col("metadata").isNotNull() & (F.col("metadata") != ""), F.col("metadata"))
        .otherwise(F.lit(""))
        .alias("metadata"),
        F.timestamp_millis("commit_timestamp").alias("commit_ts"),
        "record_offset",
    )


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


def _write_small(spark, target: Path, frame, arrow, spark_df) -> None:
    """One-file output: from Arrow in Spark's layout (spark_files) when the session allows, else through Spark.

    `frame` is the output's (analysed, never run) DataFrame, for its schema;
    `arrow(files)` builds the rows as a pyarrow table; `spark_df()` the
    equivalent DataFrame for Spark's writer.
    """
    import shutil

    from .spark_files import SparkFiles

    staging = staging_folder(target)
    files = SparkFiles.for_frame(spark, str(staging), frame)
    if files is None:
        write_parquet(spark_df(), target, files=1)
        return
    try:
        table = arrow(files)
        if table is not None:
            files.write_table(table)
        files.finish()
        publish_folder(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _latest_arrow(latest, schema):
    """latest_select in Arrow."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .spark_files import millis_to_ts

    if latest is None:
        return None
    meta = latest.column("metadata")
    meta = pc.if_else(pc.fill_null(pc.not_equal(meta, ""), False), meta, "")
    return pa.table(
        [latest.column(c) for c in ("group", "topic", "partition", "offset", "leader_epoch")]
        + [
            meta,
            millis_to_ts(
                latest.column("commit_timestamp").combine_chunks(), schema.field("commit_ts").type
            ),
            latest.column("record_offset"),
        ],
        schema=schema.remove_metadata(),
    )


def _group_metadata_arrow(spark, side, schema):
    """group_metadata_of in Arrow: the state time only when >= 0; member_count as coalesce(size(members), 0)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from .spark_files import as_ts, millis_to_ts

    if side is None:
        return None
    gm = side.filter(pc.equal(side.column("kind"), "group_metadata")).combine_chunks()
    cst = gm.column("current_state_timestamp").combine_chunks()
    keep = np.asarray(cst.fill_null(-1).to_numpy(), np.int64) >= 0
    members = gm.column("members").combine_chunks()
    sizes = pc.list_value_length(members)
    legacy = (spark.conf.get("spark.sql.legacy.sizeOfNull", "true") or "true").lower() == "true"
    ansi = (spark.conf.get("spark.sql.ansi.enabled", "true") or "true").lower() == "true"
    sizes = pc.fill_null(
        sizes, -1 if legacy and not ansi else 0
    )  # Spark's size(null), then coalesce(.., 0)
    ts = schema.field("current_state_ts").type
    cols = [
        gm.column(c)
        for c in ("group", "tombstone", "generation", "protocol_type", "protocol", "leader")
    ]
    cols += [
        millis_to_ts(cst, ts, keep),
        sizes.cast(pa.int32()),
        members.cast(schema.field("members").type),
    ]
    cols += [
        gm.column("record_partition"),
        gm.column("record_offset"),
        as_ts(gm.column("record_ts"), schema.field("record_ts").type),
        gm.column("key_version"),
        gm.column("value_version"),
    ]
    return pa.table(cols, schema=schema.remove_metadata())


def _quarantine_arrow(side, schema):
    """quarantine_of in Arrow: detail = 'partition=P offset=O ' + the record's detail (null if that is null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if side is None:
        return None
    q = side.filter(pc.equal(side.column("kind"), "quarantine"))
    detail = [
        None
        if d is None
        else f"partition={'null' if p is None else p} offset={'null' if o is None else o} {d}"
        for p, o, d in zip(
            q.column("record_partition").to_pylist(),
            q.column("record_offset").to_pylist(),
            q.column("detail").to_pylist(),
        )
    ]
    return pa.table(
        [
            pa.array(["records"] * q.num_rows, pa.string()),
            q.column("reason"),
            pa.array(detail, pa.string()),
        ],
        schema=schema.remove_metadata(),
    )


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

    return _arrow_schema(pa.timestamp("us", tz="UTC")).empty_table()


def _rows(path: Path) -> int:
    """Rows of a Parquet folder we just wrote, from the footers (no Spark job)."""
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(str(f)).metadata.num_rows for f in sorted(path.glob("*.parquet")))


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
