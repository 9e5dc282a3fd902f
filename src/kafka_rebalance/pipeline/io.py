"""Reading inputs and writing outputs for the Spark jobs: validated, never half-written, never silent.

Outputs are Parquet folders written by Spark into a hidden temporary folder
beside the target and then renamed into place, so a reader never sees a
partial `commits.parquet`. A URI (`hdfs://`, `s3a://`, `file://`) or a glob is
Spark's business: it goes to Spark untouched, local checks apply only to plain
local paths, and a URI output is staged and renamed through Hadoop's
FileSystem, nothing local created. After each write the driver counts the
rows it can see against the rows the executors wrote (an `Observation`): an
output with no data files, or fewer rows, is a RuntimeFailure (exit 1), the
usual cause being no file system shared by the driver and the executors. Quarantined rows share one schema across jobs:
`source` (which input), `reason` (why it was set aside), `detail` (the row,
as JSON or hex, for a person to look at).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..errors import InputError, RuntimeFailure
from ..io_publish import adopt, hidden_name, recover
from ..io_publish import publish_folder as switch_in  # the one folder switch

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:/")


def is_uri(path: Any) -> bool:
    """`scheme:/...` (hdfs://, s3a://, file:/, file:///); a Path object never is."""
    return isinstance(path, UriPath) or (isinstance(path, str) and bool(_URI.match(path)))


def is_glob(path: Any) -> bool:
    return isinstance(path, str) and any(c in path for c in "*?[{")


def is_local(path: Any) -> bool:
    """A plain local path: the only kind the jobs check, create or rename themselves."""
    return not is_uri(path) and not is_glob(path)


class UriPath(str):
    """An output location given as a URI; `/` joins like Path does (Path would fold `//`)."""

    def __truediv__(self, name: str) -> UriPath:
        return UriPath(self.rstrip("/") + "/" + name)

    @property
    def name(self) -> str:
        return self.rstrip("/").rsplit("/", 1)[-1]

    @property
    def parent(self) -> UriPath:
        return UriPath(self.rstrip("/").rsplit("/", 1)[0])


def location(path: Any) -> Path | UriPath:
    """An output location: a UriPath for a URI, else a local Path."""
    return UriPath(str(path)) if is_uri(path) else Path(path)


def _hadoop(path: str):
    """(FileSystem, hadoop Path) of a URI through the active session's JVM."""
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    if spark is None:
        raise RuntimeFailure(f"{path}: a URI output needs a running Spark session")
    jvm: Any = spark._jvm
    p = jvm.org.apache.hadoop.fs.Path(str(path))
    return p.getFileSystem(spark._jsc.hadoopConfiguration()), p


def path_exists(path: Path | UriPath) -> bool:
    """Whether a local path or a URI exists, as the driver sees it."""
    return _exists(path)


def _exists(path: Path | UriPath) -> bool:
    if isinstance(path, UriPath):
        fs, p = _hadoop(path)
        return bool(fs.exists(p))
    return path.exists()


def _remove(path: Path | UriPath) -> None:
    if isinstance(path, UriPath):
        fs, p = _hadoop(path)
        fs.delete(p, True)
    elif path.exists():
        shutil.rmtree(path, ignore_errors=True)


def _data_files(path: Path | UriPath) -> list[str]:
    """The Parquet data files of an output folder as the driver sees them (Spark's hidden names skipped)."""
    if isinstance(path, UriPath):
        fs, p = _hadoop(path)
        if not fs.exists(p):
            return []
        names = [str(st.getPath().getName()) for st in fs.listStatus(p)]
    else:
        names = [f.name for f in path.iterdir()] if path.is_dir() else []
    return sorted(n for n in names if not n.startswith((".", "_")))


def local_of(path: Path | UriPath) -> Path | None:
    """The local path of a plain path or a file: URI; None for other schemes."""
    if not isinstance(path, UriPath):
        return path
    m = re.match(r"^file:(//)?(/.*)$", path)
    return Path(m.group(2)) if m else None


def check_written(spark, path: Path | UriPath, expected: int | None, what: str) -> int:
    """Rows the driver sees in `path` (it just wrote), checked against the rows the executors wrote."""
    files = _data_files(path)
    local = local_of(path)
    if (
        local is None
    ):  # a remote file system: Spark reads the footers of the files the driver listed
        seen = spark.read.parquet(*[str(path / f) for f in files]).count() if files else 0
    else:
        import pyarrow.parquet as pq

        seen = sum(pq.ParquetFile(str(local / f)).metadata.num_rows for f in files)
    if not files or (expected is not None and seen != expected):
        found = "no data files" if not files else f"{seen:,} row(s)"
        wrote = "" if expected is None else f"the executors wrote {expected:,} row(s) but "
        raise RuntimeFailure(
            f"{what}: {wrote}the driver finds {found} in {path}: the driver and the executors "
            "likely share no file system; write --out to a location both see (a shared mount, "
            "hdfs://, s3a://)"
        )
    return seen


QUARANTINE_COLUMNS = ("source", "reason", "detail")


def read_parquet(
    spark,
    path: str | os.PathLike,
    required: Iterable[str],
    what: str,
    null_as: dict[str, str] | None = None,
):
    """Read a Parquet file or folder (or a URI or glob, Spark's to resolve) and check the columns a job needs.

    A required column of Parquet type null (no value at all) is refused, unless `null_as` gives
    the type it takes (a `value` column of tombstones only).
    """
    p = str(path)
    if is_local(path):
        if not Path(p).exists():
            raise InputError("file not found", source=p)
        nanos, nulls = _footer_columns(Path(p))
    else:
        nanos, nulls = _footer_columns(p)
    try:
        if nanos:
            # pandas writes timestamp[ns], which Spark only reads as a long of nanoseconds.
            spark.conf.set("spark.sql.legacy.parquet.nanosAsLong", "true")
        df = spark.read.parquet(p)
    except Exception as exc:  # AnalysisException and friends: unreadable input
        raise InputError(f"cannot read {what} as Parquet: {root_cause(exc)}", source=p) from None
    from pyspark.sql import functions as F

    if nanos:
        for c in nanos:
            if c in df.columns and dict(df.dtypes)[c] in ("bigint", "long"):
                df = df.withColumn(
                    c, F.timestamp_micros(F.expr(f"`{c}` div 1000 - IF(`{c}` % 1000 < 0, 1, 0)"))
                )
    for c in required:
        if c in nulls and c in (null_as or {}):
            df = df.withColumn(c, F.lit(None).cast((null_as or {})[c]))
        elif c in nulls:
            raise InputError(
                f"{what}: column {c} holds no value (Parquet type null)", source=p, field=c
            )
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise InputError(
            f"{what} lacks column(s) {', '.join(missing)}; has {', '.join(df.columns)}",
            source=str(p),
            field=missing[0],
        )
    return df


def _footer_columns(p: Path | str) -> tuple[list[str], list[str]]:
    """Columns stored as timestamp[ns] (as pandas writes them), and columns of type null, from one
    file's footer (Spark reads a null column as an all-null int: a job would quarantine every row).

    For a URI or glob the driver looks only when it can see the files locally (file: URIs, local globs).
    """
    try:
        import pyarrow as pa
        import pyarrow.dataset as ds

        if isinstance(p, str):
            import glob

            local = re.sub(r"^file:(//)?", "", p) if p.startswith("file:") else p
            if is_uri(local):
                return [], []
            matches = sorted(glob.glob(local)) if is_glob(local) else [local]
            if not matches:
                return [], []
            p = Path(matches[0])
        schema = ds.dataset(str(p), format="parquet").schema
    except Exception:
        return [], []
    nanos = [f.name for f in schema if pa.types.is_timestamp(f.type) and f.type.unit == "ns"]
    return nanos, [f.name for f in schema if pa.types.is_null(f.type)]


def write_parquet(df, path: str | os.PathLike, files: int | None = None) -> int:
    """Write `df` as a Parquet folder at `path`, replacing what was there only once complete and checked.

    Returns the rows written.
    """
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    target = location(path)
    tmp = staging_folder(target)
    rows = Observation()
    out = (df.coalesce(files) if files else df).observe(rows, F.count(F.lit(1)).alias("rows"))
    try:
        out.write.mode("overwrite").parquet(str(tmp))
        n = int(rows.get["rows"])
        check_written(df.sparkSession, tmp, n, f"writing {target.name}")
        publish_folder(tmp, target)
        return n
    finally:
        if _exists(tmp):
            _remove(tmp)


def staging_folder(path: Any) -> Any:
    """A fresh hidden folder name beside `path` (io_publish.hidden_name) to write an output into."""
    target = location(path)
    if not isinstance(target, UriPath):  # a remote folder is Spark's to create
        target.parent.mkdir(parents=True, exist_ok=True)
    return target.parent / hidden_name(target.name, "tmp")


def publish_folder(tmp: Any, target: Any) -> None:
    """Move a completely written folder to `target`, replacing what was there in one switch."""
    if isinstance(target, UriPath):
        fs, t = _hadoop(target)
        _, src = _hadoop(tmp)
        if fs.exists(t):
            fs.delete(t, True)
        if not fs.rename(src, t):
            raise RuntimeFailure(f"could not rename {tmp} to {target}")
        return
    switch_in(Path(tmp), target)


def empty_quarantine(spark):
    from pyspark.sql.types import StringType, StructField, StructType

    schema = StructType([StructField(c, StringType(), False) for c in QUARANTINE_COLUMNS])
    return spark.createDataFrame([], schema)


def root_cause(exc: BaseException) -> str:
    """The innermost cause's message of a Spark/py4j error ("... is not a Parquet file. Expected
    magic number at tail ..."), not py4j's opaque "An error occurred while calling o44.parquet"."""
    text = str(exc).strip()
    lines = [ln.strip() for ln in text.splitlines()]
    causes = [ln[len("Caused by:") :].strip() for ln in lines if ln.startswith("Caused by:")]
    if causes:
        last = causes[-1]
        # "java.lang.RuntimeException: message": the message, without the Java class
        head, sep, rest = last.partition(": ")
        return rest if sep and "." in head and " " not in head else last
    return text.splitlines()[0] if text else type(exc).__name__


def quarantine_rows(df, condition, source: str, reason_col):
    """Rows of `df` matching `condition`, as quarantine rows: the reason and the row itself as JSON.

    The JSON is valid: binary as hex, NaN and infinity as null (the reason names them).
    """
    from pyspark.sql import functions as F

    types = dict(df.dtypes)

    def shown(c: str):
        if types[c] == "binary":
            return F.hex(F.col(c)).alias(c)
        if types[c] in ("float", "double"):  # NaN and infinity have no JSON: null (the reason says)
            v = F.col(c)
            return (
                F.when(F.isnan(v) | (F.abs(v) == F.lit(float("inf"))), None).otherwise(v).alias(c)
            )
        return F.col(c)

    cols = [shown(c) for c in df.columns]
    return df.where(condition).select(
        F.lit(source).alias("source"),
        reason_col.alias("reason"),
        F.to_json(F.struct(*cols), {"ignoreNullFields": "false"}).alias("detail"),
    )


# Column types a job accepts, by kind: (Spark simple type names, how an error names the kind).
TYPE_KINDS = {
    "integral": ({"tinyint", "smallint", "int", "bigint"}, "an integer type"),
    "numeric": ({"tinyint", "smallint", "int", "bigint", "float", "double"}, "a numeric type"),
    "string": ({"string"}, "a string"),
    "boolean": ({"boolean"}, "a boolean"),
    "binary": ({"binary"}, "binary (a record's raw bytes)"),
    "binary_or_null": ({"binary", "void"}, "binary (a record's raw bytes)"),
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
def staged_output(out: str | os.PathLike, owned: Iterable[str] = ()) -> Iterator[Any]:
    """A hidden folder beside `out` to write a run's outputs into, switched in as one set at the end.

    A kill at any point leaves `out` with the old set or the new one, never a
    mix (io_publish.publish_folder). Entries of an existing `out` that the run does not
    write and that are not among the job's `owned` names (its outputs: an old
    output it did not write this time must go) are carried over by hard
    links. Before starting, what a killed run left is cleaned (io_publish.recover).
    On any error nothing is published and the staging folder is removed.
    """
    target = location(out)
    if isinstance(target, UriPath):
        yield from _staged_uri(target, set(owned))
        return
    if target.exists() and not target.is_dir():
        raise InputError("exists and is not a folder", source=str(target))
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                raise InputError(f"{parent} is a file, not a folder", source=str(target))
            break
    stage = None
    try:
        recover(target)
        stage = staging_folder(target)
        stage.mkdir()
        yield stage
        keep = set(owned) | {SPARK_LOG}
        adopt(stage, target, keep.__contains__)
        switch_in(stage, target)
    except OSError as exc:  # a full disk, a read-only or foreign folder: the user's path, not ours
        raise RuntimeFailure(f"{target}: cannot write: {exc.strerror or exc}") from None
    except Exception as exc:
        failure = write_failure(exc, target)
        if failure is None:
            raise
        raise failure from None
    finally:
        if stage is not None and stage.exists():
            shutil.rmtree(stage, ignore_errors=True)


# What a task's failure says when the file system refused a write (Java's and Python's texts).
_WRITE_ERRORS = (
    "No space left on device",
    "File too large",
    "Read-only file system",
    "Disk quota exceeded",
    "Permission denied",
)


def write_failure(exc: BaseException, target: Any) -> RuntimeFailure | None:
    """A RuntimeFailure naming `target` when a Spark write failed on the file system, else None."""
    if isinstance(exc, (InputError, RuntimeFailure)):
        return None
    text = str(exc)
    for known in _WRITE_ERRORS:
        if known in text:
            return RuntimeFailure(f"{target}: cannot write: {known}")
    return None


SPARK_LOG = "_spark.log"  # the CLI copies Spark's log into a local output folder after the run


def _staged_uri(target: UriPath, owned: set[str]) -> Iterator[UriPath]:
    """staged_output for a URI, through Hadoop's FileSystem (nothing local is created).

    Hadoop's FileSystem has no exchange: the old folder is renamed aside, the
    new one into place, then the entries to keep are moved over from the old.
    """
    stage = staging_folder(target)
    fs, st = _hadoop(stage)
    fs.mkdirs(st)
    try:
        yield stage
        _, t = _hadoop(target)
        if not fs.exists(t):
            if not fs.rename(st, t):
                raise RuntimeFailure(f"could not rename {stage} to {target}")
            return
        old = target.parent / hidden_name(target.name, "old")
        _, o = _hadoop(old)
        new_names = {str(e.getPath().getName()) for e in fs.listStatus(st)}
        if not fs.rename(t, o) or not fs.rename(st, t):
            raise RuntimeFailure(f"could not rename {stage} to {target}")
        for entry in fs.listStatus(o):
            name = str(entry.getPath().getName())
            if not name.startswith(".") and name not in owned and name not in new_names:
                fs.rename(entry.getPath(), _hadoop(target / name)[1])
        fs.delete(o, True)
    finally:
        if fs.exists(st):
            fs.delete(st, True)


def write_json(path: Any, doc: Any) -> None:
    """A JSON file at a local path (atomically) or a URI (through Hadoop's FileSystem)."""
    import json

    from ..io_util import atomic_write_json

    if not isinstance(path, UriPath):
        atomic_write_json(Path(path), doc)
        return
    fs, p = _hadoop(path)
    stream = fs.create(p, True)
    try:
        stream.write(bytearray(json.dumps(doc, indent=2).encode() + b"\n"))
    finally:
        stream.close()
