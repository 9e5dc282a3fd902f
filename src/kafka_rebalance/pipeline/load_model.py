"""Partition metric samples -> per-partition load, with Cruise Control's sampling rules.

The rules (linkedin/cruise-control, monitor/sampling/aggregator):
- Time is cut into windows aligned to multiples of `window_ms` since the epoch;
  the model looks at the `windows` most recent windows of the data.
- A partition's window is valid when it holds at least `min_samples` samples
  (`min.samples.per.partition.metrics.window`). Only the leader's samples count.
- Windows are admitted newest first, as `WindowState.maybeInclude` does: a
  window joins the model only if the partitions valid in *every* admitted
  window still make up at least `min_valid_ratio` (`min.valid.partition.ratio`)
  of all partitions. A partition "has enough valid windows" when it is valid in
  all admitted windows; the others are listed as not ready.
- The model is ready when at least `min_valid_windows` windows were admitted
  (Cruise Control's `NotEnoughValidWindowsException` otherwise) and the valid
  partitions reach `min_valid_ratio`.
- Rates (bytes in/out, messages in, cpu) are the mean over the partition's
  admitted valid windows of each window's mean; `size_bytes` is the last
  sample of the latest such window (disk is a level, not a rate).

Deliberate difference: Cruise Control leaves its still-filling current window
out; a batch job sees finished data, so the newest window of the data counts.
Cruise Control's extrapolations (AVG_AVAILABLE, AVG_ADJACENT) are not applied:
a window below `min_samples` is simply invalid.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..io_util import atomic_write_json, read_structured
from .io import quarantine_rows, read_parquet, write_parquet

RATES = ("bytes_in", "bytes_out", "messages_in", "cpu")
REQUIRED = ("ts", "broker", "topic", "partition", "is_leader", "bytes_in", "bytes_out", "messages_in", "size_bytes")


@dataclass(frozen=True)
class LoadModelConfig:
    window_ms: int = 3_600_000
    windows: int = 5
    min_samples: int = 3
    min_valid_ratio: float = 0.995
    min_valid_windows: int = 1

    def check(self) -> None:
        if self.window_ms <= 0:
            raise InputError("must be > 0", field="window-ms")
        if not 1 <= self.windows <= 62:
            raise InputError("must be between 1 and 62", field="windows")
        if self.min_samples < 1:
            raise InputError("must be >= 1", field="min-samples")
        if not 0.0 <= self.min_valid_ratio <= 1.0:
            raise InputError("must be between 0 and 1", field="min-valid-ratio")
        if not 1 <= self.min_valid_windows <= self.windows:
            raise InputError("must be between 1 and --windows", field="min-valid-windows")


@dataclass
class LoadModelResult:
    summary: dict[str, Any]
    not_ready: list[tuple[str, int]] = field(default_factory=list)


def admit_windows(mask_counts: dict[int, int], windows: int, total: int, min_valid_ratio: float) -> list[int]:
    """Cruise Control's greedy window admission, newest window first.

    `mask_counts` maps a bit mask of valid windows (bit k = k-th window, oldest
    first) to how many partitions have exactly that mask. Returns the admitted
    window indices, newest first.
    """
    admitted: list[int] = []
    required = 0
    for k in range(windows - 1, -1, -1):
        trial = required | (1 << k)
        valid = sum(n for m, n in mask_counts.items() if m & trial == trial)
        if valid > 0 and total > 0 and valid / total >= min_valid_ratio:
            admitted.append(k)
            required = trial
    return admitted


def _ts_ms(df):
    """Sample time in epoch milliseconds, whether `ts` is a timestamp or a number of ms."""
    from pyspark.sql import functions as F

    kind = dict(df.dtypes)["ts"]
    if kind.startswith("timestamp"):
        return F.floor(F.unix_micros(F.col("ts").cast("timestamp")) / 1000).cast("long")
    if kind == "date":
        return (F.unix_date(F.col("ts")).cast("long") * 86_400_000)
    return F.col("ts").cast("long")


def _clean(df):
    """Split samples into good rows and quarantined ones (nulls where a value is needed)."""
    from pyspark.sql import functions as F

    checks = [(c, F.col(c).isNull()) for c in REQUIRED]
    checks.append(("negative partition", F.col("partition") < 0))
    reason = None
    for name, cond in reversed(checks):
        label = F.lit(name if " " in name else f"null {name}")
        reason = F.when(cond, label) if reason is None else F.when(cond, label).otherwise(reason)
    bad = reason.isNotNull()
    return df.where(~bad), quarantine_rows(df, bad, "samples", reason)


def _clean_by_statistics(path: str, columns) -> bool:
    """True when the Parquet footers prove no row needs quarantine (no nulls, no negative partition).

    Saves a full scan of the samples in the common case; any doubt (no
    statistics, unreadable footer) answers False and the rows are checked.
    """
    try:
        import pyarrow.dataset as ds
        import pyarrow.parquet as pq

        files = ds.dataset(path, format="parquet").files
        for f in files:
            md = pq.ParquetFile(f).metadata
            names = [md.schema.column(i).name for i in range(md.num_columns)]
            for rg in range(md.num_row_groups):
                group = md.row_group(rg)
                for c in columns:
                    if c not in names:
                        return False
                    st = group.column(names.index(c)).statistics
                    if st is None or not st.has_null_count or st.null_count != 0:
                        return False
                    if c == "partition" and (not st.has_min_max or st.min < 0):
                        return False
        return bool(files)
    except Exception:
        return False


def run_load_model(spark, samples: str, out: str, config: LoadModelConfig = LoadModelConfig(),
                   snapshot: str | None = None) -> LoadModelResult:
    from pyspark.sql import functions as F

    config.check()
    raw = read_parquet(spark, samples, REQUIRED, "metric samples")
    if "cpu" not in raw.columns:
        raw = raw.withColumn("cpu", F.lit(None).cast("double"))
    if _clean_by_statistics(samples, REQUIRED):
        good, quarantine = raw, quarantine_rows(raw, F.lit(False), "samples", F.lit(None).cast("string"))
    else:
        good, quarantine = _clean(raw)
    df = good.select(
        _ts_ms(good).alias("ts_ms"), F.col("broker").cast("int").alias("broker"), F.col("topic").cast("string").alias("topic"),
        F.col("partition").cast("int").alias("partition"), F.col("is_leader").cast("boolean").alias("is_leader"),
        *[F.col(c).cast("double").alias(c) for c in ("bytes_in", "bytes_out", "messages_in", "size_bytes", "cpu")],
    ).withColumn("window", F.floor(F.col("ts_ms") / F.lit(config.window_ms)).cast("long"))
    # The only pass over the samples: per window, broker and partition, sums and counts
    # (so means over several brokers' rows stay exact) and the last sizes.
    lead = F.col("is_leader")
    fine = (
        df.groupBy("window", "broker", "topic", "partition")
        .agg(F.sum(lead.cast("int")).alias("n_lead"),
             *[F.sum(F.when(lead, F.col(c))).alias(f"s_{c}") for c in RATES],
             F.count(F.when(lead, F.col("cpu"))).alias("n_cpu"),
             F.sum((~lead).cast("int")).alias("n_follow"),
             F.sum(F.when(~lead, F.col("bytes_in"))).alias("s_follow_bytes_in"),
             F.max(F.when(lead, F.col("ts_ms"))).alias("last_lead_ts"),
             F.max_by(F.col("size_bytes"), F.when(lead, F.col("ts_ms"))).alias("last_lead_size"),
             F.max_by(F.col("size_bytes"), F.col("ts_ms")).alias("last_size"))
        .persist()
    )
    try:
        return _model(spark, fine, quarantine, out, config, snapshot)
    finally:
        fine.unpersist()


def _model(spark, fine, quarantine, out: str, config: LoadModelConfig, snapshot: str | None) -> LoadModelResult:
    from pyspark.sql import functions as F

    outdir = Path(out)
    write_parquet(quarantine, outdir / "quarantine.parquet", files=1)
    n_quarantined = spark.read.parquet(str(outdir / "quarantine.parquet")).count()
    last = fine.agg(F.max("window")).first()[0]
    if last is None:
        raise InputError("no usable metric samples", source=str(out))
    first = last - config.windows + 1

    # Per partition and window, over the leader's samples: count, means, last size.
    recent = fine.where(F.col("window") >= first)
    per_window = (
        recent.where(F.col("n_lead") > 0)
        .groupBy("topic", "partition", "window")
        .agg(F.sum("n_lead").alias("samples"),
             *[(F.sum(f"s_{c}") / F.sum("n_lead")).alias(c) for c in RATES if c != "cpu"],
             (F.sum("s_cpu") / F.sum("n_cpu")).alias("cpu"),
             F.max_by("last_lead_size", "last_lead_ts").alias("size_bytes"))
        .withColumn("bit", F.expr(f"shiftleft(CAST(1 AS BIGINT), CAST(window - {first} AS INT))"))
        .persist()
    )
    universe = recent.select("topic", "partition").distinct()
    snap_doc = _read_snapshot(snapshot) if snapshot else None
    if snap_doc is not None:
        snap_parts = spark.createDataFrame(
            [(p["topic"], int(p["partition"])) for p in snap_doc["partitions"]], "topic string, partition int")
        universe = universe.unionByName(snap_parts).distinct()
    masks = (
        universe.join(
            per_window.where(F.col("samples") >= config.min_samples)
            .groupBy("topic", "partition").agg(F.sum("bit").alias("mask")),
            ["topic", "partition"], "left")
        .fillna(0, ["mask"]).persist()
    )
    try:
        mask_counts = {int(r["mask"]): int(r["n"]) for r in masks.groupBy("mask").agg(F.count(F.lit(1)).alias("n")).collect()}
        total = sum(mask_counts.values())
        admitted = admit_windows(mask_counts, config.windows, total, config.min_valid_ratio)
        required = sum(1 << k for k in admitted)
        valid_partitions = sum(n for m, n in mask_counts.items() if admitted and m & required == required)
        ratio = valid_partitions / total if total else 0.0
        ready = len(admitted) >= config.min_valid_windows and ratio >= config.min_valid_ratio

        # Valid partitions use the admitted windows; the others whatever valid windows they have.
        used = masks.select(
            "topic", "partition", "mask",
            F.when((F.lit(required) > 0) & ((F.col("mask").bitwiseAND(F.lit(required))) == F.lit(required)), True)
            .otherwise(False).alias("valid"))
        used = used.withColumn("used", F.when(F.col("valid"), F.lit(required)).otherwise(F.col("mask")))
        load = (
            per_window.join(used, ["topic", "partition"])
            .where(F.col("bit").bitwiseAND(F.col("used")) != 0)
            .groupBy("topic", "partition")
            .agg(*[F.avg(c).alias(c) for c in RATES],
                 F.max_by("size_bytes", "window").alias("size_bytes"),
                 F.count(F.lit(1)).alias("windows_used"))
        )
        bits = F.lit(0)
        for k in range(config.windows):
            bits = bits + F.when(F.col("mask").bitwiseAND(F.lit(1 << k)) != 0, 1).otherwise(0)
        table = (
            used.join(load, ["topic", "partition"], "left")
            .select("topic", "partition", *[F.col(c) for c in ("bytes_in", "bytes_out", "messages_in", "size_bytes", "cpu")],
                    bits.cast("int").alias("valid_windows"), F.coalesce("windows_used", F.lit(0)).cast("int").alias("windows_used"),
                    "valid")
            .orderBy("topic", "partition")
        )
        write_parquet(table, outdir / "partition_load.parquet", files=1)
        written = spark.read.parquet(str(outdir / "partition_load.parquet"))
        rows = written.collect()
        not_ready = [(r["topic"], int(r["partition"])) for r in rows if not r["valid"]]
        loads = {(r["topic"], int(r["partition"])): r for r in rows if r["windows_used"] > 0}
        snap = _snapshot(fine, loads, snap_doc, first)
        atomic_write_json(outdir / "snapshot.json", snap)
        write_parquet(_broker_load(fine, config.window_ms), outdir / "broker_load.parquet", files=1)
    finally:
        per_window.unpersist()
        masks.unpersist()

    summary = {
        "partitions": total,
        "valid_partitions": valid_partitions,
        "valid_ratio": ratio,
        "ready": ready,
        "windows": len(admitted),
        "windows_considered": config.windows,
        "window_ms": config.window_ms,
        "admitted_window_starts_ms": sorted((first + k) * config.window_ms for k in admitted),
        "not_ready_partitions": [{"topic": t, "partition": p} for t, p in sorted(not_ready)],
        "quarantined": n_quarantined,
        "brokers": len(snap["brokers"]),
        "out": str(outdir),
    }
    return LoadModelResult(summary, sorted(not_ready))


def _read_snapshot(path: str) -> dict:
    doc = read_structured(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("partitions"), list) or not isinstance(doc.get("brokers"), list):
        raise InputError("expected an object with 'brokers' and 'partitions' lists", source=path)
    for i, p in enumerate(doc["partitions"]):
        if not isinstance(p, dict) or not isinstance(p.get("topic"), str) or not isinstance(p.get("partition"), int):
            raise InputError("expected {topic: str, partition: int, ...}", source=path, field=f"partitions[{i}]")
    return doc


def _load_of(row) -> dict[str, float]:
    load = {k: float(row[k]) if row[k] is not None else 0.0 for k in ("bytes_in", "bytes_out", "messages_in", "size_bytes")}
    if row["cpu"] is not None:
        load["cpu"] = float(row["cpu"])
    return load


def _snapshot(fine, loads: dict, snap_doc: dict | None, first_window: int) -> dict:
    """The cluster snapshot (SCHEMAS.md section 3) with `load` filled in."""
    if snap_doc is not None:
        parts = []
        for p in snap_doc["partitions"]:
            q = dict(p)
            row = loads.get((p["topic"], p["partition"]))
            if row is not None:
                q["load"] = _load_of(row)
            parts.append(q)
        return {**snap_doc, "partitions": parts}
    return _inferred_snapshot(fine, loads, first_window)


def _inferred_snapshot(fine, loads: dict, first_window: int) -> dict:
    """Brokers and replicas as the samples show them.

    Replicas are the brokers reporting the partition in the model's windows,
    ordered by how long each led it (the broker that led longest is taken as
    the preferred leader, so leadership moved by a restart shows as skew).
    The leader is the broker whose leader sample is the newest; the ISR is the
    replicas reporting in the newest window.
    """
    from pyspark.sql import functions as F

    recent = fine.where(F.col("window") >= first_window)
    per = (
        recent.groupBy("topic", "partition", "broker")
        .agg(F.sum("n_lead").alias("led"), F.max("last_lead_ts").alias("last_led"), F.max("window").alias("last_window"))
        .collect()
    )
    brokers = sorted({int(r["broker"]) for r in fine.select("broker").distinct().collect()})
    by_tp: dict[tuple[str, int], list] = {}
    for r in per:
        by_tp.setdefault((r["topic"], int(r["partition"])), []).append(r)
    parts = []
    for (topic, partition), rows in sorted(by_tp.items()):
        rows.sort(key=lambda r: (-int(r["led"]), int(r["broker"])))
        replicas = [int(r["broker"]) for r in rows]
        led = [r for r in rows if r["last_led"] is not None]
        leader = max(led, key=lambda r: (r["last_led"], -int(r["broker"])))["broker"] if led else None
        newest = max(int(r["last_window"]) for r in rows)
        isr = [int(r["broker"]) for r in rows if int(r["last_window"]) == newest]
        entry: dict[str, Any] = {"topic": topic, "partition": partition, "replicas": replicas,
                                 "leader": int(leader) if leader is not None else None, "isr": isr}
        row = loads.get((topic, partition))
        if row is not None:
            entry["load"] = _load_of(row)
        parts.append(entry)
    return {"brokers": [{"id": b, "alive": True} for b in brokers], "partitions": parts}


def _broker_load(fine, window_ms: int):
    """Per broker and window (over all the data): what it led and what it replicated.

    Per partition the window's mean is taken, then summed over the broker's
    partitions: leader rates from leader samples, `replication_bytes_in` from
    follower samples' `bytes_in`, `size_bytes` the last size of every replica.
    """
    from pyspark.sql import functions as F

    led = F.col("n_lead") > 0
    mean = lambda c: F.when(led, F.col(f"s_{c}") / F.col("n_lead"))  # noqa: E731
    return (
        fine.groupBy("window", "broker")
        .agg(*[F.sum(mean(c)).alias(c) for c in ("bytes_in", "bytes_out", "messages_in")],
             F.sum(F.when(F.col("n_cpu") > 0, F.col("s_cpu") / F.col("n_cpu"))).alias("cpu"),
             F.sum(F.when(F.col("n_follow") > 0, F.col("s_follow_bytes_in") / F.col("n_follow"))).alias("replication_bytes_in"),
             F.sum("last_size").alias("size_bytes"),
             F.sum(led.cast("int")).alias("leaders"),
             F.count(F.lit(1)).alias("replicas"))
        .select((F.col("window") * F.lit(window_ms)).alias("window_start_ms"),
                F.timestamp_millis(F.col("window") * F.lit(window_ms)).alias("window_start"),
                "broker", "leaders", "replicas",
                *[F.coalesce(F.col(c), F.lit(0.0)).alias(c) for c in ("bytes_in", "bytes_out", "messages_in", "replication_bytes_in", "size_bytes")],
                "cpu")
        .orderBy("window_start_ms", "broker")
    )
