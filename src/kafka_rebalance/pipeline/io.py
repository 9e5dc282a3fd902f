"""Reading inputs and writing outputs for the Spark jobs: validated, never half-written.

Outputs are Parquet folders written by Spark into a hidden temporary folder
beside the target and then renamed into place, so a reader never sees a
partial `commits.parquet`. Quarantined rows share one schema across jobs:
`source` (which input), `reason` (why it was set aside), `detail` (the row,
as JSON or hex, for a person to look at).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..errors import InputError

QUARANTINE_COLUMNS = ("source", "reason", "detail")


def read_parquet(spark, path: str | os.PathLike, required: Iterable[str], what: str):
    """Read a Parquet file or folder and check the columns a job needs are there."""
    p = Path(path)
    if not p.exists():
        raise InputError("file not found", source=str(p))
    nanos = _nanosecond_columns(p)
    try:
        if nanos:
            # pandas writes timestamp[ns], which Spark only reads as a long of nanoseconds.
            spark.conf.set("spark.sql.legacy.parquet.nanosAsLong", "true")
        df = spark.read.parquet(str(p))
    except Exception as exc:  # AnalysisException and friends: unreadable input
        raise InputError(
            f"cannot read {what} as Parquet: {str(exc).splitlines()[0]}", source=str(p)
        ) from None
    if nanos:
        from pyspark.sql import functions as F

        for c in nanos:
            if c in df.columns and dict(df.dtypes)[c] in ("bigint", "long"):
                df = df.withColumn(
                    c, F.timestamp_micros(F.expr(f"`{c}` div 1000 - IF(`{c}` % 1000 < 0, 1, 0)"))
                )
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise InputError(
            f"{what} lacks column(s) {', '.join(missing)}; has {', '.join(df.columns)}",
            source=str(p),
            field=missing[0],
        )
    return df


def _nanosecond_columns(p: Path) -> list[str]:
    """Columns stored as timestamp[ns] (as pandas writes them), read from one file's footer."""
    try:
        import pyarrow as pa
        import pyarrow.dataset as ds

        schema = ds.dataset(str(p), format="parquet").schema
    except Exception:
        return []
    return [f.name for f in schema if pa.types.is_timestamp(f.type) and f.type.unit == "ns"]


def write_parquet(df, path: str | os.PathLike, files: int | None = None) -> None:
    """Write `df` as a Parquet folder at `path`, replacing what was there only once complete."""
    target = Path(path)
    tmp = staging_folder(target)
    out = df.coalesce(files) if files else df
    try:
        out.write.mode("overwrite").parquet(str(tmp))
        publish_folder(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def staging_folder(path: str | os.PathLike) -> Path:
    """A fresh hidden folder beside `path` to write an output into before publish_folder."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    return target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:8]}"


def publish_folder(tmp: Path, target: Path) -> None:
    """Move a completely written folder to `target`, replacing what was there."""
    if target.exists():
        old = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:8]}"
        os.replace(target, old)
        os.replace(tmp, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, target)


def empty_quarantine(spark):
    from pyspark.sql.types import StringType, StructField, StructType

    schema = StructType([StructField(c, StringType(), False) for c in QUARANTINE_COLUMNS])
    return spark.createDataFrame([], schema)


def quarantine_rows(df, condition, source: str, reason_col):
    """Rows of `df` matching `condition`, as quarantine rows: the reason and the row itself as JSON."""
    from pyspark.sql import functions as F

    types = dict(df.dtypes)
    cols = [F.hex(F.col(c)).alias(c) if types[c] == "binary" else F.col(c) for c in df.columns]
    return df.where(condition).select(
        F.lit(source).alias("source"),
        reason_col.alias("reason"),
        F.to_json(F.struct(*cols)).alias("detail"),
    )


# Column types a job accepts, by kind: (Spark simple type names, how an error names the kind).
TYPE_KINDS = {
    "integral": ({"tinyint", "smallint", "int", "bigint"}, "an integer type"),
    "numeric": ({"tinyint", "smallint", "int", "bigint", "float", "double"}, "a numeric type"),
    "string": ({"string"}, "a string"),
    "boolean": ({"boolean"}, "a boolean"),
    "time": (
        {"timestamp", "timestamp_ntz", "date", "tinyint", "smallint", "int", "bigint"},
        "a timestamp (or an integer of epoch ms)",
    ),
}


def epoch_ms(df, col_name: str):
    """Column `col_name` as epoch milliseconds, for any type the "time" kind admits: a timestamp (floored
    exactly from microseconds), a date (its midnight) or a number of ms."""
    from pyspark.sql import functions as F

    dtype = dict(df.dtypes)[col_name]
    if dtype.startswith("timestamp"):
        return F.floor(F.unix_micros(F.col(col_name).cast("timestamp")) / 1000).cast("long")
    if dtype == "date":
        return F.unix_date(F.col(col_name)).cast("long") * 86_400_000
    return F.col(col_name).cast("long")


def check_column_types(df, spec: dict[str, str], source: str) -> None:
    """InputError naming the file, the column, its type and a value when a column has the wrong type.

    Checked from the schema before any row is read: a string `bytes_in` would
    otherwise end the job in a cast error deep inside Spark.
    """
    types = dict(df.dtypes)
    for col, kind in spec.items():
        if col not in types:
            continue
        allowed, expected = TYPE_KINDS[kind]
        dtype = types[col]
        if dtype in allowed or (kind == "numeric" and dtype.startswith("decimal")):
            continue
        example = ""
        try:
            from pyspark.sql import functions as F

            first = (
                df.where(F.col(col).isNotNull())
                .select(F.col(col).cast("string"))
                .limit(1)
                .collect()
            )
            if first:
                example = f", e.g. {first[0][0]!r}"
        except Exception:  # the type alone is enough to report
            pass
        raise InputError(
            f"expected {expected}, got column type {dtype}{example}", source=source, field=col
        )


@contextlib.contextmanager
def staged_output(out: str | os.PathLike) -> Iterator[Path]:
    """A hidden folder beside `out` to write every output into; published only when all are written.

    A new `out` appears by one rename; into an existing folder each output is
    moved in by rename (each complete) after all were written. On any error
    nothing is published and the staging folder is removed.
    """
    target = Path(out)
    if target.exists() and not target.is_dir():
        raise InputError("exists and is not a folder", source=str(target))
    stage = staging_folder(target)
    stage.mkdir()
    try:
        yield stage
        if not target.exists():
            os.replace(stage, target)
        else:
            for entry in sorted(stage.iterdir()):
                if entry.is_dir():
                    publish_folder(entry, target / entry.name)
                else:
                    os.replace(entry, target / entry.name)
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)
