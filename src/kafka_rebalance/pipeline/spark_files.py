"""Parquet folders laid out as Spark's writer lays them out, written with pyarrow.

The offsets job's tasks write commits.parquet themselves (the records never
enter the JVM), and the driver writes its small tables from Arrow, so neither
pays Spark's row conversion and writer for data that is already columnar.
The files must read back exactly as Spark-written ones do: same Parquet
physical and logical types (INT96 or TIMESTAMP_MICROS timestamps, as
`spark.sql.parquet.outputTimestampType` says), required/optional as Spark's
nullability, the session's codec, Spark's schema JSON in the footer and no
Arrow schema (so pandas reads INT96 as naive timestamps, as it reads Spark's
files), `part-*` names and `_SUCCESS`.

`SparkFiles.for_frame` returns None for settings only Spark's writer matches
(legacy format, other codecs or timestamp types, nested timestamps); the
caller then writes through Spark.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..fields import INT64_MAX

MAX_MILLIS = INT64_MAX // 1000
ROW_GROUP_ROWS = 1 << 20
_CODECS = ("snappy", "gzip", "zstd", "none", "uncompressed")


class SparkFiles:
    """One Parquet folder in Spark's layout: part files from tasks or the driver, then finish()."""

    def __init__(
        self, folder: str, schema_json: str, arrow_schema, spark_version: str, codec: str
    ) -> None:
        self.folder, self.codec = folder, codec
        self.schema = arrow_schema.with_metadata(
            {
                "org.apache.spark.sql.parquet.row.metadata": schema_json,
                "org.apache.spark.version": spark_version,
            }
        )
        self.int96 = any(_is_naive_ts(f.type) for f in arrow_schema)
        self.job = uuid.uuid4().hex

    @classmethod
    def for_frame(cls, spark, folder: str, frame) -> SparkFiles | None:
        """A writer for `frame`'s schema (only analysed, not run) under the session's Parquet settings."""
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        conf = spark.conf
        codec = (conf.get("spark.sql.parquet.compression.codec", "snappy") or "snappy").lower()
        ts_type = (conf.get("spark.sql.parquet.outputTimestampType", "INT96") or "INT96").upper()
        legacy = (
            conf.get("spark.sql.parquet.writeLegacyFormat", "false") or "false"
        ).lower() == "true"
        if codec not in _CODECS or ts_type not in ("INT96", "TIMESTAMP_MICROS") or legacy:
            return None
        try:
            schema = to_arrow_schema(frame.schema)
        except Exception:
            return None
        fields = []
        for f in schema:
            if pa.types.is_timestamp(f.type):
                f = f.with_type(pa.timestamp("us", tz=None if ts_type == "INT96" else "UTC"))
            elif _has_timestamp(f.type):
                return None
            fields.append(f)
        return cls(folder, frame._jdf.schema().json(), pa.schema(fields), spark.version, codec)

    def part_name(self, task: int) -> str:
        ext = "" if self.codec in ("none", "uncompressed") else f".{self.codec}"
        return f"part-{task:05d}-{self.job}-c000{ext}.parquet"

    def write(self, task: int, batches: Iterator) -> int:
        """Write batches (already in self.schema) as part `task`; rows written, no file when none.

        A temporary file renamed to the part's final name, so a retried task
        replaces its earlier attempt.
        """
        import pyarrow as pa

        tmp = Path(self.folder) / "_temporary" / f"{task:05d}-{uuid.uuid4().hex}.parquet"
        tmp.parent.mkdir(parents=True, exist_ok=True)
        writer = None
        rows = 0
        pending: list = []
        pending_rows = 0
        try:
            for b in batches:
                pending.append(b)
                pending_rows += b.num_rows
                if pending_rows >= ROW_GROUP_ROWS:
                    writer = writer or self._open(tmp)
                    writer.write_table(
                        pa.Table.from_batches(pending, self.schema), row_group_size=pending_rows
                    )
                    rows += pending_rows
                    pending, pending_rows = [], 0
            if pending_rows:
                writer = writer or self._open(tmp)
                writer.write_table(
                    pa.Table.from_batches(pending, self.schema), row_group_size=pending_rows
                )
                rows += pending_rows
            if writer is not None:
                self._close(writer)
                writer = None
                os.replace(tmp, Path(self.folder) / self.part_name(task))
        finally:
            if writer is not None:
                writer.close()
            if tmp.exists():
                tmp.unlink()
        return rows

    def write_table(self, table) -> int:
        """The driver's whole (small) table as one part, in its row order."""
        table = table.cast(self.schema.remove_metadata()).replace_schema_metadata(
            self.schema.metadata
        )
        return self.write(0, table.to_batches())

    def _open(self, path: Path):
        import pyarrow.parquet as pq

        codec = "none" if self.codec == "uncompressed" else self.codec
        return pq.ParquetWriter(
            str(path),
            self.schema,
            compression=codec,
            version="1.0",
            store_schema=False,
            use_deprecated_int96_timestamps=self.int96,
            write_statistics=True,
        )

    def _close(self, writer) -> None:
        writer.add_key_value_metadata(self.schema.metadata)  # store_schema=False drops it otherwise
        writer.close()

    def finish(self) -> None:
        """After the job: drop attempt leftovers; an empty output still gets one file with the schema; _SUCCESS."""
        import shutil

        folder = Path(self.folder)
        folder.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(folder / "_temporary", ignore_errors=True)
        if not any(folder.glob("part-*.parquet")):
            writer = self._open(folder / self.part_name(0))
            writer.write_table(self.schema.empty_table())
            self._close(writer)
        (folder / "_SUCCESS").write_bytes(b"")


def millis_to_ts(col, ts_type, keep: np.ndarray | None = None):
    """Spark's timestamp_millis in Arrow: null where `col` is null or `keep` is False; fails on overflow as Spark does."""
    import pyarrow as pa

    nulls = (
        np.asarray(col.is_null().to_numpy(zero_copy_only=False), bool) if col.null_count else None
    )
    v = np.asarray((col.fill_null(0) if col.null_count else col).to_numpy(), np.int64)
    if keep is not None:
        nulls = ~keep if nulls is None else (nulls | ~keep)
    live = v if nulls is None else v[~nulls]
    if len(live) and (live.max() > MAX_MILLIS or live.min() < -MAX_MILLIS):
        raise ArithmeticError(
            "long overflow: a timestamp in milliseconds does not fit in microseconds"
        )
    return pa.array(v * 1000, ts_type, mask=nulls)


def as_ts(col, ts_type):
    """Microsecond timestamps in `ts_type` (the same instants; only the zone annotation changes)."""
    import pyarrow as pa

    if col.type == ts_type:
        return col
    return (
        col.view(pa.int64()).view(ts_type)
        if isinstance(col, pa.Array)
        else pa.chunked_array([c.view(pa.int64()).view(ts_type) for c in col.chunks], ts_type)
    )


def _is_naive_ts(t) -> bool:
    import pyarrow as pa

    return pa.types.is_timestamp(t) and t.tz is None


def _has_timestamp(t) -> bool:
    import pyarrow as pa

    if pa.types.is_timestamp(t):
        return True
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_timestamp(t.value_type)
    if pa.types.is_struct(t):
        return any(_has_timestamp(t.field(i).type) for i in range(t.num_fields))
    return False
