"""Commits + log-end-offset samples -> lag per group and partition over time, Burrow statuses.

Each topic-partition is one Spark group (cogroup of its commits and its
log-end samples), replayed in time order in a pandas task: every log-end
sample is a poll, as Burrow's broker-offset refresh and kafka-lag-exporter's
collector poll are. At each poll, for every group that has committed on the
partition: committed offset, offset lag, time lag (timelag.py) and Burrow's
partition status (burrow.py). A final evaluation at the end of the data gives
each group's Burrow status. Burrow's expire-group is a group's, not a
partition's: the instants each group is purged are found first over all its
partitions (`_purges`), and every partition's replay drops the group's state
at them.

Options and input column types are checked before anything is read in bulk;
the three outputs are written into a staging folder and published together.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from .burrow import BurrowConfig, PartitionStatus, PartitionStore, Status, group_status
from .io import (
    check_column_types,
    empty_quarantine,
    epoch_ms,
    is_glob,
    location,
    path_exists,
    quarantine_rows,
    read_parquet,
    staged_output,
    write_parquet,
)
from .timelag import LookupTable

OUTPUTS = ("lag.parquet", "group_status.parquet", "quarantine.parquet")
COMMIT_COLUMNS = ("group", "topic", "partition", "offset", "commit_ts")
LEO_COLUMNS = ("ts", "topic", "partition", "log_end_offset")

LAG_SCHEMA = (
    "ts timestamp, group string, topic string, partition int, log_end_offset long, committed_offset long, "
    "lag long, time_lag_ms double, status string, current_lag long, complete double, final boolean"
)


@dataclass(frozen=True)
class LagConfig:
    burrow: BurrowConfig = BurrowConfig()
    lookup_table_size: int = 60
    group_interval_ms: int = 60_000
    # A live source (live.py): the log-end offsets were sampled before the commits were read, as
    # Burrow fetches broker offsets at startup before it reads the offsets topic from the start.
    # Every commit is then stored against the first sample, however old; without this, a commit
    # arriving before any log-end sample of its partition is dropped (Burrow's rule), and a live
    # run, whose one sample is taken now, after every commit, would have no rows at all.
    broker_offsets_first: bool = False

    def check(self) -> None:
        self.burrow.check()
        if self.lookup_table_size < 2:
            raise InputError(
                f"must be >= 2, got {self.lookup_table_size}", field="lookup-table-size"
            )
        if self.group_interval_ms < 1:
            raise InputError(
                f"must be >= 1 (ms), got {self.group_interval_ms}", field="--group-interval-ms"
            )


def replay_partition(
    leo: list[tuple[int, int]],
    commits: list[tuple[str, int, int, int]],
    end_ms: int,
    config: LagConfig = LagConfig(),
    purges: dict[str, list[int]] | None = None,
) -> list[dict[str, Any]]:
    """One partition's lag rows.

    `leo` is [(ts_ms, log_end_offset)], `commits` [(group, ts_ms, order, offset)].
    Log-end samples at the same ms as a commit are seen first. `purges` maps a
    group to the instants Burrow purges it (`burrow.group_purges`, computed
    over all its partitions): a purge deletes the group's state here too, so
    it has no rows until it commits on this partition again.
    """
    events = [(ts, 0, 0, None, off) for ts, off in leo] + [
        (ts, 1, order, g, off) for g, ts, order, off in commits
    ]
    events.sort(key=lambda e: (e[0], e[1], e[2]))
    purges = purges or {}
    table = LookupTable(config.lookup_table_size)
    stores: dict[str, PartitionStore] = {}
    broker_ring: list[int] = []
    rows: list[dict[str, Any]] = []
    latest_leo: int | None = None
    if config.broker_offsets_first and leo:
        broker_ring.append(min(leo)[1])

    def purged(g: str, store: PartitionStore, now: int) -> bool:
        ps = purges.get(g)
        if not ps or store.born_ms is None:
            return False
        i = bisect.bisect_right(ps, store.born_ms)  # first purge after the state was created
        return i < len(ps) and ps[i] <= now

    def drop_purged(now: int, only: str | None = None) -> None:
        for g in [only] if only is not None else list(stores):
            store = stores.get(g)
            if store is not None and purged(g, store, now):
                del stores[g]

    for ts, kind, order, group, offset in events:
        if kind == 0:
            drop_purged(ts)
            latest_leo = offset
            table.add_point(offset, ts)
            for store in stores.values():
                store.add_broker_offset(offset)
            broker_ring.append(offset)
            del broker_ring[: -config.burrow.intervals]
            for g, store in stores.items():
                if store.commits:
                    rows.append(_row(ts, g, store, latest_leo, table, False))
        else:
            assert group is not None  # a commit always names its group
            drop_purged(ts, group)
            found = stores.get(group)
            if found is None:
                found = stores[group] = PartitionStore(config.burrow)
                for b in broker_ring:
                    found.add_broker_offset(b)
            found.add_commit(offset, ts, order)
    if latest_leo is not None:
        drop_purged(end_ms)
        for g, store in stores.items():
            if store.commits:
                rows.append(_row(end_ms, g, store, latest_leo, table, True))
    return rows


def _row(
    ts: int, group: str, store: PartitionStore, leo: int, table: LookupTable, final: bool
) -> dict[str, Any]:
    committed = store.commits[-1].offset
    st: PartitionStatus = store.evaluate(ts)
    return {
        "ts_ms": ts,
        "group": group,
        "log_end_offset": leo,
        "committed_offset": committed,
        "lag": max(0, leo - committed),
        "time_lag_ms": table.time_lag_ms(committed, ts),
        "status": st.status.name,
        "current_lag": st.current_lag,
        "complete": st.complete,
        "final": final,
    }


COMMIT_TYPES = {
    "group": "string",
    "topic": "string",
    "partition": "integral",
    "offset": "integral",
    "commit_ts": "time",
    "record_offset": "integral",
}
LEO_TYPES = {"ts": "time", "topic": "string", "partition": "integral", "log_end_offset": "integral"}


def run_lag(
    spark,
    offsets_dir: str,
    log_end: str,
    out: str,
    config: LagConfig = LagConfig(),
    commits=None,
    leo_raw=None,
) -> dict[str, Any]:
    """Options and inputs are checked before anything is written; the outputs appear together.

    `commits` and `leo_raw` are DataFrames to use instead of reading `offsets_dir` and `log_end`
    (which then only name the source in messages): a live cluster's (live.py).
    """
    import pandas as pd
    from pyspark.sql import functions as F

    config.check()
    commits_src = str(offsets_dir)
    if commits is None:
        if not is_glob(offsets_dir):
            commits_path = location(offsets_dir) / "commits.parquet"
            commits_src = str(commits_path if path_exists(commits_path) else offsets_dir)
        commits = read_parquet(spark, commits_src, COMMIT_COLUMNS, "commits")
    check_column_types(commits, COMMIT_TYPES, commits_src)
    if leo_raw is None:
        leo_raw = read_parquet(spark, log_end, LEO_COLUMNS, "log-end offsets")
    check_column_types(leo_raw, LEO_TYPES, str(log_end))
    order_col = (
        F.col("record_offset").cast("long")
        if "record_offset" in commits.columns
        else F.lit(0).cast("long")
    )
    c = commits.select(
        F.col("group").cast("string").alias("group"),
        F.col("topic").cast("string").alias("topic"),
        F.col("partition").try_cast("int").alias("partition"),
        F.col("offset").cast("long").alias("offset"),
        epoch_ms(commits, "commit_ts").alias("ts_ms"),
        order_col.alias("order"),
    )
    part = F.col("partition").try_cast("int")
    leo_value = F.col("log_end_offset").cast("long")
    bad_leo = (
        F.col("ts").isNull()
        | F.col("topic").isNull()
        | part.isNull()
        | (part < 0)
        | leo_value.isNull()
        | (leo_value < 0)
    )
    reason = (
        F.when(F.col("ts").isNull(), F.lit("null ts"))
        .when(F.col("topic").isNull(), F.lit("null topic"))
        .when(F.col("partition").isNull(), F.lit("null partition"))
        .when(part.isNull(), F.lit("partition out of range"))
        .when(part < 0, F.lit("negative partition"))
        .when(leo_value.isNull(), F.lit("null log_end_offset"))
        .otherwise(F.lit("negative log_end_offset"))
    )
    quarantine = quarantine_rows(leo_raw, bad_leo, "log_end", reason)
    bad_commit = (
        F.col("ts_ms").isNull()
        | F.col("offset").isNull()
        | F.col("group").isNull()
        | F.col("topic").isNull()
        | F.col("partition").isNull()
    )
    quarantine = quarantine.unionByName(
        quarantine_rows(c, bad_commit, "commits", F.lit("null field in commit"))
    )
    leo = leo_raw.where(~bad_leo).select(
        epoch_ms(leo_raw, "ts").alias("ts_ms"),
        F.col("topic").cast("string").alias("topic"),
        part.alias("partition"),
        F.col("log_end_offset").cast("long").alias("log_end_offset"),
    )
    c = c.where(~bad_commit)
    leo_end = leo.agg(F.max("ts_ms")).first()[0]
    if leo_end is None:
        raise InputError(
            "no usable log-end samples (no rows, or every row has a null field)",
            source=str(log_end),
        )
    commit_end = c.agg(F.max("ts_ms")).first()[0]
    if commit_end is None:
        raise InputError(
            "no usable commits (no rows, or every row has a null field)", source=commits_src
        )
    end_ms = max(leo_end, commit_end, 0)
    purges = _purges(c, leo, config.burrow.expire_group_s, end_ms, config.broker_offsets_first)
    cfg = config

    def per_partition(key, leo_pdf: pd.DataFrame, commits_pdf: pd.DataFrame) -> pd.DataFrame:
        topic, partition = key
        rows = replay_partition(
            list(zip(leo_pdf["ts_ms"].tolist(), leo_pdf["log_end_offset"].tolist())),
            list(
                zip(
                    commits_pdf["group"].tolist(),
                    commits_pdf["ts_ms"].tolist(),
                    commits_pdf["order"].tolist(),
                    commits_pdf["offset"].tolist(),
                )
            ),
            end_ms,
            cfg,
            purges,
        )
        out = pd.DataFrame(
            rows,
            columns=[
                "ts_ms",
                "group",
                "log_end_offset",
                "committed_offset",
                "lag",
                "time_lag_ms",
                "status",
                "current_lag",
                "complete",
                "final",
            ],
        )
        out.insert(0, "ts", pd.to_datetime(out.pop("ts_ms"), unit="ms"))
        out.insert(2, "topic", topic)
        out.insert(3, "partition", partition)
        return out.astype(
            {
                "partition": "int32",
                "log_end_offset": "int64",
                "committed_offset": "int64",
                "lag": "int64",
                "time_lag_ms": "float64",
                "current_lag": "int64",
                "complete": "float64",
                "final": "bool",
            }
        )

    lag = (
        leo.groupBy("topic", "partition")
        .cogroup(c.groupBy("topic", "partition"))
        .applyInPandas(per_partition, LAG_SCHEMA)
    ).persist()
    try:
        with staged_output(out, OUTPUTS) as stage:
            write_parquet(
                lag.where(~F.col("final"))
                .drop("final")
                .orderBy("group", "topic", "partition", "ts"),
                stage / "lag.parquet",
            )
            final = lag.where(F.col("final")).collect()
            n_rows = lag.where(~F.col("final")).count()
            groups = _group_statuses(final, config)
            timeline = _group_timeline(lag.where(~F.col("final")), config.group_interval_ms)
            write_parquet(timeline, stage / "group_status.parquet", files=1)
            n_q = quarantine.count()
            write_parquet(
                quarantine if n_q else empty_quarantine(spark),
                stage / "quarantine.parquet",
                files=1,
            )
    finally:
        lag.unpersist()
    return {
        "lag_rows": n_rows,
        "groups": groups,
        "partitions_evaluated": len(final),
        "quarantined": n_q,
        "evaluated_at_ms": end_ms,
        "out": str(out),
    }


def _purges(
    c, leo, expire_group_s: int, end_ms: int, broker_offsets_first: bool = False
) -> dict[str, list[int]]:
    """Per group, when Burrow purges it (burrow.group_purges), from the commits Burrow stores.

    Burrow sets the group's lastCommit on each commit it appends to a ring:
    not one arriving before any log-end offset of its partition is known,
    nor one whose order is not past the ring's newest. Only the instants up
    to `end_ms` are kept, and only groups that have one: usually few.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    first_leo = leo.groupBy("topic", "partition").agg(F.min("ts_ms").alias("first_leo_ms"))
    eligible = F.col("first_leo_ms").isNotNull() & (
        F.lit(broker_offsets_first) | (F.col("ts_ms") >= F.col("first_leo_ms"))
    )
    before = (
        Window.partitionBy("group", "topic", "partition")
        .orderBy("ts_ms", "order")
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    stored = (
        c.join(first_leo, ["topic", "partition"], "left")
        .withColumn("prev_order", F.max(F.when(eligible, F.col("order"))).over(before))
        .where(eligible & (F.col("prev_order").isNull() | (F.col("order") > F.col("prev_order"))))
        .select("group", "ts_ms")
    )
    nxt = F.lead("ts_ms").over(Window.partitionBy("group").orderBy("ts_ms"))
    purge = ((F.floor(F.col("ts_ms") / 1000) + F.lit(expire_group_s) + 1) * 1000).cast("long")
    rows = (
        stored.withColumn("next_ms", nxt)
        .withColumn("purge_ms", purge)
        .where(
            (F.col("purge_ms") <= F.lit(end_ms))
            & (F.col("next_ms").isNull() | (F.col("purge_ms") <= F.col("next_ms")))
        )
        .select("group", "purge_ms")
        .collect()
    )
    out: dict[str, list[int]] = {}
    for r in rows:
        out.setdefault(r["group"], []).append(int(r["purge_ms"]))
    return {g: sorted(v) for g, v in out.items()}


def _group_statuses(final_rows, config: LagConfig) -> dict[str, Any]:
    by_group: dict[str, list] = {}
    for r in final_rows:
        by_group.setdefault(r["group"], []).append(r)
    result = {}
    for g, rows in sorted(by_group.items()):
        parts = [
            PartitionStatus(Status[r["status"]], int(r["current_lag"]), float(r["complete"]))
            for r in rows
        ]
        status, complete, total = group_status(parts)
        worst = max(rows, key=lambda r: (int(r["current_lag"]), r["topic"], -int(r["partition"])))
        counts: dict[str, int] = {}
        for r in rows:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        result[g] = {
            "status": status.name,
            "complete": complete,
            "total_lag": total,
            "partitions": len(rows),
            "partition_statuses": counts,
            "maxlag": {
                "topic": worst["topic"],
                "partition": int(worst["partition"]),
                "current_lag": int(worst["current_lag"]),
                "status": worst["status"],
            },
        }
    return result


def _group_timeline(lag, interval_ms: int):
    """Per group and interval: Burrow's group status from each partition's last evaluation in it."""
    from pyspark.sql import functions as F

    sev = F.create_map(*[x for s in Status for x in (F.lit(s.name), F.lit(int(s)))])
    bucket = (F.floor(F.unix_micros("ts") / 1000 / interval_ms) * interval_ms).cast("long")
    last = (
        lag.withColumn("bucket_ms", bucket)
        .groupBy("group", "bucket_ms", "topic", "partition")
        .agg(F.max_by(F.struct("status", "current_lag", "time_lag_ms"), "ts").alias("s"))
    )
    worst = F.max(sev[F.col("s.status")])
    names = F.create_map(*[x for s in Status for x in (F.lit(int(s)), F.lit(s.name))])
    return (
        last.groupBy("group", "bucket_ms")
        .agg(
            F.least(worst, F.lit(int(Status.ERR))).alias("sev"),
            F.sum("s.current_lag").alias("total_lag"),
            F.max("s.time_lag_ms").alias("max_time_lag_ms"),
            F.count(F.lit(1)).alias("partitions"),
        )
        .select(
            "group",
            F.timestamp_millis("bucket_ms").alias("ts"),
            names[F.col("sev")].alias("status"),
            "total_lag",
            "max_time_lag_ms",
            "partitions",
        )
        .orderBy("group", "ts")
    )
