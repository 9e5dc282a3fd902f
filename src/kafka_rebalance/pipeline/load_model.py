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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cluster.snapshot import parse_snapshot
from ..errors import InputError
from ..io_util import read_structured
from ..model import METRIC_SAMPLE_COLUMNS
from .io import (
    check_column_types,
    empty_quarantine,
    epoch_ms,
    quarantine_rows,
    read_parquet,
    staged_output,
    write_json,
    write_parquet,
)

RATES = ("bytes_in", "bytes_out", "messages_in", "cpu")
REQUIRED = tuple(c for c in METRIC_SAMPLE_COLUMNS if c != "cpu")  # cpu is optional

OUTPUTS = ("quarantine.parquet", "partition_load.parquet", "snapshot.json", "broker_load.parquet")


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


def admit_windows(
    mask_counts: dict[int, int], windows: int, total: int, min_valid_ratio: float
) -> list[int]:
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


SAMPLE_TYPES = {
    "ts": "time",
    "broker": "integral",
    "topic": "string",
    "partition": "integral",
    "is_leader": "boolean",
    "bytes_in": "numeric",
    "bytes_out": "numeric",
    "messages_in": "numeric",
    "size_bytes": "numeric",
    "cpu": "numeric",
}
METRICS = ("bytes_in", "bytes_out", "messages_in", "size_bytes", "cpu")


def _typed(raw):
    """The samples' columns in their model types, whether a row is usable, and why not.

    `ok` is one compact conjunction (it runs on every row: Spark orders NaN
    above every number, so `v >= 0 AND v < inf` is false for NaN, -0/+inf and
    negatives, null for null); `reason` is the long CASE, evaluated only on
    the quarantine pass. Reasons, first match wins: a null where a value is
    needed; an integer out of range; a negative partition; a metric that is
    NaN, infinite or negative (`cpu` may be null, being optional). NaN and
    infinity are checked on the rows themselves: Parquet footers count
    nulls, not NaN.
    """
    from pyspark.sql import functions as F

    inf = F.lit(float("inf"))
    cols = {
        "ts_ms": epoch_ms(raw, "ts"),
        "broker": F.col("broker").try_cast("int"),
        "topic": F.col("topic").cast("string"),
        "partition": F.col("partition").try_cast("int"),
        "is_leader": F.col("is_leader").cast("boolean"),
        **{c: F.col(c).cast("double") for c in METRICS},
    }
    ok = (
        F.col("ts").isNotNull()
        & cols["broker"].isNotNull()
        & F.col("topic").isNotNull()
        & (cols["partition"] >= 0)
        & F.col("is_leader").isNotNull()
    )
    for c in METRICS:
        finite = (cols[c] >= 0) & (cols[c] < inf)
        ok = ok & (F.coalesce(finite, F.lit(True)) if c == "cpu" else finite)
    ok = F.coalesce(ok, F.lit(False))

    checks = [(F.col("ts").isNull(), "null ts")]
    for c in ("broker", "partition"):
        checks += [(F.col(c).isNull(), f"null {c}"), (cols[c].isNull(), f"{c} out of int range")]
        if c == "partition":
            checks.append((cols[c] < 0, "negative partition"))
        if c == "broker":
            checks.append((F.col("topic").isNull(), "null topic"))
    checks.append((F.col("is_leader").isNull(), "null is_leader"))
    for c in METRICS:
        v = cols[c]
        if c != "cpu":
            checks.append((v.isNull(), f"null {c}"))
        checks += [
            (F.isnan(v), f"{c} is NaN"),
            (F.abs(v) == inf, f"{c} is infinite"),
            (v < 0, f"negative {c}"),
        ]
    reason = None
    for cond, label in reversed(checks):
        reason = (
            F.when(cond, F.lit(label))
            if reason is None
            else F.when(cond, F.lit(label)).otherwise(reason)
        )
    return cols, ok, reason


def run_load_model(
    spark,
    samples: str,
    out: str,
    config: LoadModelConfig = LoadModelConfig(),
    snapshot: str | None = None,
) -> LoadModelResult:
    """Options, the given snapshot and the samples' schema are checked first; outputs appear together or not at all."""
    from pyspark.sql import functions as F

    config.check()
    snap_doc = _read_snapshot(snapshot) if snapshot else None
    raw = read_parquet(spark, samples, REQUIRED, "metric samples")
    check_column_types(raw, SAMPLE_TYPES, str(samples))
    if "cpu" not in raw.columns:
        raw = raw.withColumn("cpu", F.lit(None).cast("double"))
    cols, ok, reason = _typed(raw)
    bad = F.col("bad")
    df = raw.select(*[e.alias(n) for n, e in cols.items()], (~ok).alias("bad"))
    df = df.withColumn("window", F.floor(F.col("ts_ms") / F.lit(config.window_ms)).cast("long"))
    # The only pass over the samples: per window, broker and partition, sums and counts
    # (so means over several brokers' rows stay exact) and the last sizes; and how many
    # rows are unusable, so the quarantine costs a second pass only when there is one.
    lead = F.col("is_leader")
    agg = (
        df.groupBy("bad", "window", "broker", "topic", "partition")
        .agg(
            F.count(F.lit(1)).alias("n_rows"),
            F.sum(lead.cast("int")).alias("n_lead"),
            *[F.sum(F.when(lead, F.col(c))).alias(f"s_{c}") for c in RATES],
            F.count(F.when(lead, F.col("cpu"))).alias("n_cpu"),
            F.sum((~lead).cast("int")).alias("n_follow"),
            F.sum(F.when(~lead, F.col("bytes_in"))).alias("s_follow_bytes_in"),
            F.max(F.when(lead, F.col("ts_ms"))).alias("last_lead_ts"),
            F.max_by(F.col("size_bytes"), F.when(lead, F.col("ts_ms"))).alias("last_lead_size"),
            F.max_by(F.col("size_bytes"), F.col("ts_ms")).alias("last_size"),
        )
        .persist()
    )
    try:
        # One small job over the cached aggregate: how many rows are unusable, the newest usable window.
        counts = {
            bool(r["bad"]): r
            for r in agg.groupBy("bad")
            .agg(F.sum("n_rows").alias("n"), F.max("window").alias("last"))
            .collect()
        }
        n_bad = int(counts[True]["n"]) if True in counts else 0
        quarantine = (
            quarantine_rows(raw, ~ok, "samples", reason) if n_bad else empty_quarantine(spark)
        )
        fine = agg.where(~bad).drop("bad", "n_rows")
        if False not in counts:
            if n_bad:
                reasons = (
                    quarantine.groupBy("reason")
                    .count()
                    .orderBy(F.desc("count"), "reason")
                    .limit(5)
                    .collect()
                )
                why = ", ".join(f"{r['reason']}: {r['count']}" for r in reasons)
                raise InputError(
                    f"no usable metric samples: all {n_bad} row(s) are unusable ({why})",
                    source=str(samples),
                )
            raise InputError("no metric samples: the input has no rows", source=str(samples))
        last = int(counts[False]["last"])
        with staged_output(out, OUTPUTS) as stage:
            result = _model(
                spark, fine, last, quarantine, n_bad, stage, config, snap_doc, str(samples)
            )
        result.summary["out"] = str(out)
        return result
    finally:
        agg.unpersist()


def _model(
    spark,
    fine,
    last: int,
    quarantine,
    n_quarantined: int,
    outdir: Path,
    config: LoadModelConfig,
    snap_doc: dict | None,
    samples: str,
) -> LoadModelResult:
    from pyspark.sql import functions as F

    write_parquet(quarantine, outdir / "quarantine.parquet", files=1)
    first = last - config.windows + 1

    # Per partition and window, over the leader's samples: count, means, last size.
    recent = fine.where(F.col("window") >= first)
    per_window = (
        recent.where(F.col("n_lead") > 0)
        .groupBy("topic", "partition", "window")
        .agg(
            F.sum("n_lead").alias("samples"),
            *[(F.sum(f"s_{c}") / F.sum("n_lead")).alias(c) for c in RATES if c != "cpu"],
            (F.sum("s_cpu") / F.sum("n_cpu")).alias("cpu"),
            F.max_by("last_lead_size", "last_lead_ts").alias("size_bytes"),
        )
        .withColumn("bit", F.expr(f"shiftleft(CAST(1 AS BIGINT), CAST(window - {first} AS INT))"))
        .persist()
    )
    universe = recent.select("topic", "partition").distinct()
    if snap_doc is not None:
        snap_parts = spark.createDataFrame(
            [(p["topic"], int(p["partition"])) for p in snap_doc["partitions"]],
            "topic string, partition int",
        )
        universe = universe.unionByName(snap_parts).distinct()
    masks = (
        universe.join(
            per_window.where(F.col("samples") >= config.min_samples)
            .groupBy("topic", "partition")
            .agg(F.sum("bit").alias("mask")),
            ["topic", "partition"],
            "left",
        )
        .fillna(0, ["mask"])
        .persist()
    )
    try:
        mask_counts = {
            int(r["mask"]): int(r["n"])
            for r in masks.groupBy("mask").agg(F.count(F.lit(1)).alias("n")).collect()
        }
        total = sum(mask_counts.values())
        admitted = admit_windows(mask_counts, config.windows, total, config.min_valid_ratio)
        required = sum(1 << k for k in admitted)
        valid_partitions = sum(
            n for m, n in mask_counts.items() if admitted and m & required == required
        )
        ratio = valid_partitions / total if total else 0.0
        ready = len(admitted) >= config.min_valid_windows and ratio >= config.min_valid_ratio

        # Valid partitions use the admitted windows; the others whatever valid windows they have.
        used = masks.select(
            "topic",
            "partition",
            "mask",
            F.when(
                (F.lit(required) > 0)
                & ((F.col("mask").bitwiseAND(F.lit(required))) == F.lit(required)),
                True,
            )
            .otherwise(False)
            .alias("valid"),
        )
        used = used.withColumn(
            "used", F.when(F.col("valid"), F.lit(required)).otherwise(F.col("mask"))
        )
        load = (
            per_window.join(used, ["topic", "partition"])
            .where(F.col("bit").bitwiseAND(F.col("used")) != 0)
            .groupBy("topic", "partition")
            .agg(
                *[F.avg(c).alias(c) for c in RATES],
                F.max_by("size_bytes", "window").alias("size_bytes"),
                F.count(F.lit(1)).alias("windows_used"),
            )
        )
        bits = F.lit(0)
        for k in range(config.windows):
            bits = bits + F.when(F.col("mask").bitwiseAND(F.lit(1 << k)) != 0, 1).otherwise(0)
        table = (
            used.join(load, ["topic", "partition"], "left")
            .select(
                "topic",
                "partition",
                *[F.col(c) for c in ("bytes_in", "bytes_out", "messages_in", "size_bytes", "cpu")],
                bits.cast("int").alias("valid_windows"),
                F.coalesce("windows_used", F.lit(0)).cast("int").alias("windows_used"),
                "valid",
            )
            .orderBy("topic", "partition")
        )
        write_parquet(table, outdir / "partition_load.parquet", files=1)
        written = spark.read.parquet(str(outdir / "partition_load.parquet"))
        rows = written.collect()
        not_ready = [(r["topic"], int(r["partition"])) for r in rows if not r["valid"]]
        loads = {(r["topic"], int(r["partition"])): r for r in rows if r["windows_used"] > 0}
        snap = _snapshot(fine, loads, snap_doc, first)
        try:
            parse_snapshot(snap)  # what `cluster ...` will read: never publish one it refuses
        except InputError as exc:
            raise InputError(
                f"the samples give an invalid cluster snapshot: {exc}", source=samples
            ) from None
        write_json(outdir / "snapshot.json", snap)
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
    """The --snapshot file, validated as the cluster commands validate it (before any Spark work)."""
    doc = read_structured(path)
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("partitions"), list)
        or not isinstance(doc.get("brokers"), list)
    ):
        raise InputError("expected an object with 'brokers' and 'partitions' lists", source=path)
    try:
        parse_snapshot(doc)
    except InputError as exc:
        raise exc.in_file(path) from None
    return doc


def _load_of(row) -> dict[str, float]:
    load = {
        k: float(row[k]) if row[k] is not None else 0.0
        for k in ("bytes_in", "bytes_out", "messages_in", "size_bytes")
    }
    if row["cpu"] is not None:
        load["cpu"] = float(row["cpu"])
    return load


def _snapshot(fine, loads: dict, snap_doc: dict | None, first_window: int) -> dict:
    """The cluster snapshot (docs/formats.md section 3) with `load` filled in."""
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
        .agg(
            F.sum("n_lead").alias("led"),
            F.max("last_lead_ts").alias("last_led"),
            F.max("window").alias("last_window"),
        )
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
        leader = (
            max(led, key=lambda r: (r["last_led"], -int(r["broker"])))["broker"] if led else None
        )
        newest = max(int(r["last_window"]) for r in rows)
        isr = [int(r["broker"]) for r in rows if int(r["last_window"]) == newest]
        entry: dict[str, Any] = {
            "topic": topic,
            "partition": partition,
            "replicas": replicas,
            "leader": int(leader) if leader is not None else None,
            "isr": isr,
        }
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
        .agg(
            *[F.sum(mean(c)).alias(c) for c in ("bytes_in", "bytes_out", "messages_in")],
            F.sum(F.when(F.col("n_cpu") > 0, F.col("s_cpu") / F.col("n_cpu"))).alias("cpu"),
            F.sum(
                F.when(F.col("n_follow") > 0, F.col("s_follow_bytes_in") / F.col("n_follow"))
            ).alias("replication_bytes_in"),
            F.sum("last_size").alias("size_bytes"),
            F.sum(led.cast("int")).alias("leaders"),
            F.count(F.lit(1)).alias("replicas"),
        )
        .select(
            (F.col("window") * F.lit(window_ms)).alias("window_start_ms"),
            F.timestamp_millis(F.col("window") * F.lit(window_ms)).alias("window_start"),
            "broker",
            "leaders",
            "replicas",
            *[
                F.coalesce(F.col(c), F.lit(0.0)).alias(c)
                for c in (
                    "bytes_in",
                    "bytes_out",
                    "messages_in",
                    "replication_bytes_in",
                    "size_bytes",
                )
            ],
            "cpu",
        )
        .orderBy("window_start_ms", "broker")
    )
