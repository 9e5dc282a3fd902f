"""The offsets job's output tables, each defined twice: in Spark over decoded rows, and in Arrow.

The `*_of` functions derive each output from the wide decoded rows
(offsets_decode.DECODED_SCHEMA): the plain definition, used when Spark
writes. The `*_arrow` functions build the same rows from what the single
pass hands back (offsets_pass.PassState), for outputs the driver writes
itself; the tests hold them to the Spark definitions.
"""

from __future__ import annotations

import numpy as np


def commits_of(decoded):
    from pyspark.sql import functions as F

    return commits_select(decoded.where((F.col("kind") == "offset_commit") & ~F.col("tombstone")))


def commits_select(commits):
    """commits.parquet's columns from decoded offset-commit rows (offsets_decode.DECODED_SCHEMA or offsets_pass.COMMIT_DDL)."""
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


def consumer_groups_of(decoded):
    """consumer_groups.parquet: every KIP-848 record, decoded (offsets_decode._consumer_group_row)."""
    from pyspark.sql import functions as F

    from .offsets_decode import CONSUMER_GROUP_RECORDS

    names = F.create_map(*[F.lit(x) for kv in CONSUMER_GROUP_RECORDS.items() for x in kv])
    return decoded.where(F.col("kind") == "consumer_group").select(
        "group",
        names[F.col("key_version")].alias("record"),
        "member_id",
        "tombstone",
        "epoch",
        "previous_epoch",
        "member_state",
        "partitions",
        "pending",
        F.col("detail").alias("value_json"),
        "record_partition",
        "record_offset",
        "record_ts",
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


def latest_arrow(latest, schema):
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


def group_metadata_arrow(spark, side, schema):
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


def quarantine_arrow(side, schema):
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


def commit_output(batch, schema):
    """commits_select in Arrow (`schema` from SparkFiles): millisecond times to timestamps,
    the expire time only when >= 0."""
    import pyarrow as pa

    from .spark_files import as_ts, millis_to_ts

    ts = schema.field("commit_ts").type
    expire = batch.column("expire_timestamp")
    keep = np.asarray(expire.fill_null(-1).to_numpy(), np.int64) >= 0
    cols = [
        batch.column(c)
        for c in ("group", "topic", "partition", "offset", "leader_epoch", "metadata")
    ]
    cols += [millis_to_ts(batch.column("commit_timestamp"), ts), millis_to_ts(expire, ts, keep)]
    cols += [
        batch.column("record_partition"),
        batch.column("record_offset"),
        as_ts(batch.column("record_ts"), schema.field("record_ts").type),
        batch.column("key_version"),
        batch.column("value_version"),
    ]
    return pa.RecordBatch.from_arrays(cols, schema=schema)
