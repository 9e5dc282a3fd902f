"""The offsets job's single decoding pass: commits out, everything small on the side.

Almost every `__consumer_offsets` record is an offset commit, and the commits
table is the only big output. So one Spark pass decodes the records and
produces only the commits (13 narrow columns); what the other outputs need is
small and leaves each task through an accumulator (`PassState`):

- the latest-offset candidates: per group/topic/partition the task's last
  record by log position (commit or tombstone), reduced as they come, so the
  driver holds about one row per key;
- every decoded row that is not an offset commit (GroupMetadata records and
  quarantined records) in DECODED_SCHEMA, tagged with its task and position
  so the driver can put them back in record order;
- commit segments for rebalances.py: per group, runs of commits between two
  GroupMetadata records of the same batch, as (first, last record offset,
  latest commit time);
- counts per kind, tombstones and quarantine reason.

Two ways in, one body (`PassDecoder`): `file_pass` reads Parquet row groups
with pyarrow inside the tasks (`spark.range(n).mapInArrow`, one task per row
group, small consecutive ones together), so the raw records never cross the JVM/Python boundary, and the tasks
write their commits as commits.parquet part files themselves (spark_files);
any Kafka-source DataFrame (official connector, kafka_source.py, Parquet
layouts `plan_files` does not take) goes through `frame_pass`, a
`mapInArrow` whose commits Spark writes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from .offsets_decode import arrow_schema, decode_slow
from .offsets_files import BATCH_ROWS, read_row_group
from .offsets_tables import commit_output

COMMIT_DDL = (
    "group string, topic string, partition int, offset long, leader_epoch int, metadata string, "
    "commit_timestamp long, expire_timestamp long, record_partition int, record_offset long, record_ts timestamp, "
    "key_version int, value_version int"
)
COMMIT_COLUMNS = tuple(f.strip().split(" ", 1)[0] for f in COMMIT_DDL.split(","))
LATEST_DDL = (
    "group string, topic string, partition int, pos long, tombstone boolean, offset long, leader_epoch int, "
    "metadata string, commit_timestamp long, record_offset long"
)
SEGMENT_DDL = "group string, topic string, partition int, c_lo long, c_hi long, ts_ms long"


# ---- what leaves a task besides its commits ----------------------------------------------


def _concat(tables: list) -> Any:
    import pyarrow as pa

    return pa.concat_tables(tables).combine_chunks() if len(tables) > 1 else tables[0]


def reduce_latest(table):
    """Keep each group/topic/partition's row with the largest log position (later rows win ties)."""
    import pyarrow.compute as pc

    n = table.num_rows
    if n < 2:
        return table
    table = table.combine_chunks()
    g = pc.dictionary_encode(table.column("group")).combine_chunks().indices.to_numpy()
    t = pc.dictionary_encode(table.column("topic")).combine_chunks().indices.to_numpy()
    p = table.column("partition").to_numpy()
    order = np.lexsort((table.column("pos").to_numpy(), p, t, g))
    g, t, p = g[order], t[order], p[order]
    last = np.ones(n, bool)
    last[:-1] = (g[1:] != g[:-1]) | (t[1:] != t[:-1]) | (p[1:] != p[:-1])
    return table.take(order[last])


class PassState:
    """What one task (or, merged, the whole pass) hands back besides the commit rows."""

    def __init__(self) -> None:
        self.latest: Any = None  # reduced latest-offset candidates (pyarrow Table)
        self.pending: list = []  # not yet reduced
        self.pending_rows = 0
        self.side: list = []  # non-commit decoded rows (pyarrow Tables)
        self.segments: list = []
        self.counts: dict[tuple, int] = {}  # (kind, tombstone, reason) -> rows
        # tasks merged in: Spark may apply a task's accumulator update twice when a stage is re-run
        # (speculation, a lost executor), so a task already counted is skipped, not added again
        self.tasks: set[int] = set()
        # side tables a task wrote to files instead of shipping them (spill): only names travel
        self.spilled: list[tuple[str, str]] = []  # (latest | side | segments, Parquet file)

    def add_latest(self, table) -> None:
        if table.num_rows == 0:
            return
        self.pending.append(table)
        self.pending_rows += table.num_rows
        base = self.latest.num_rows if self.latest is not None else 0
        if self.pending_rows > max(BATCH_ROWS, 2 * base):
            self._reduce()

    def _reduce(self) -> None:
        if self.pending:
            parts = ([self.latest] if self.latest is not None else []) + self.pending
            self.latest = reduce_latest(_concat(parts))
            self.pending, self.pending_rows = [], 0

    def count(self, key: tuple, n: int) -> None:
        if n:
            self.counts[key] = self.counts.get(key, 0) + n

    def merge(self, other: PassState) -> PassState:
        if other.tasks & self.tasks:
            return self
        self.tasks |= other.tasks
        self.spilled += other.spilled
        if other.latest is not None:
            self.add_latest(other.latest)
        for t in other.pending:
            self.add_latest(t)
        self.side += other.side
        self.segments += other.segments
        for k, v in other.counts.items():
            self.count(k, v)
        return self

    def finish(self) -> PassState:
        self._reduce()
        return self

    def spill(self, folder: str | None, task: int) -> PassState:
        """Write this task's side tables to `folder` (a local master's shared disk) and keep only their names.

        What an accumulator ships counts against spark.driver.maxResultSize and grows with the input (one
        latest-offset row per key, every quarantined record), so on a local master it goes through files.
        """
        if folder is None:
            return self.finish()
        import pyarrow.parquet as pq

        self._reduce()
        kinds = (
            ("latest", [self.latest] if self.latest is not None else []),
            ("side", self.side),
            ("segments", self.segments),
        )
        for kind, tables in kinds:
            for i, t in enumerate(tables):
                path = os.path.join(folder, f"task-{task:06d}-{kind}-{i:04d}.parquet")
                pq.write_table(t, path)
                self.spilled.append((kind, path))
        self.latest, self.side, self.segments = None, [], []
        return self

    def load_spilled(self) -> PassState:
        """On the driver: read the spilled side tables back (reducing latest offsets as they come)."""
        import pyarrow.parquet as pq

        for kind, path in sorted(self.spilled, key=lambda e: e[1]):
            t = pq.read_table(path)
            if kind == "latest":
                self.add_latest(t)
            elif kind == "side":
                self.side.append(t)
            else:
                self.segments.append(t)
        self.spilled = []
        return self.finish()

    def __getstate__(self):
        self._reduce()  # ship one reduced table
        return self.__dict__


def accumulator(spark):
    from pyspark.accumulators import AccumulatorParam

    class Param(AccumulatorParam):
        def zero(self, value):
            return PassState()

        def addInPlace(self, a, b):
            return a.merge(b)

    return spark.sparkContext.accumulator(PassState(), Param())


# ---- one batch ----------------------------------------------------------------------------


class PassDecoder:
    """Decodes Kafka-source Arrow batches into commit batches, collecting a PassState on the side."""

    def __init__(self, task: int) -> None:
        self.task = task
        self.seq = 0  # rows seen by this task, to order side rows
        self.state = PassState()
        self.state.tasks.add(task)
        self.key_cache: dict[bytes, Any] = {}
        self.schemas: dict[Any, Any] = {}
        self._batch_gm: list[
            tuple[str, int]
        ] = []  # this batch's GroupMetadata records (group, record offset)
        self._batch_commits: list = []  # this batch's commit batches, for _segment_batch

    def decode(self, batch):
        """The batch's offset commits (tombstones left out) in record order, or None if it has none."""
        import pyarrow as pa

        from .fast_decode import split_fast

        ts_type = batch.column("timestamp").type
        wide = self.schemas.get(ts_type) or self.schemas.setdefault(ts_type, arrow_schema(ts_type))
        fast_rows, cols, slow_rows = split_fast(batch)
        pieces = []  # (row indices in batch, commit batch)
        if len(fast_rows):
            pieces.append(self._fast(fast_rows, cols, ts_type))
        if len(slow_rows):
            pieces.append(self._slow(batch.take(pa.array(slow_rows)), slow_rows, wide))
        self.seq += batch.num_rows
        pieces = [p for p in pieces if p[1].num_rows]
        if not pieces:
            return None
        if len(pieces) == 1:
            return pieces[0][1]
        order = np.argsort(np.concatenate([p[0] for p in pieces]), kind="stable")
        both = pa.Table.from_batches([p[1] for p in pieces]).combine_chunks()
        return both.take(pa.array(order)).to_batches(max_chunksize=len(order))[0]

    def _fast(self, rows: np.ndarray, cols: dict, ts_type):
        """Commit batch and side results of the rows split_fast decoded (offset commits and tombstones)."""
        import pyarrow as pa

        tomb = cols["tombstone"][0]
        m = len(rows)
        n_tomb = int(tomb.sum())
        self.state.count(("offset_commit", True, None), n_tomb)
        self.state.count(("offset_commit", False, None), m - n_tomb)
        part = cols["partition"][0].astype(np.int32)
        rpart = cols["record_partition"]
        roff = cols["record_offset"]
        pos = _pos(rpart, roff)

        def num(name, dtype, mask=True):
            values, nulls = cols[name]
            return pa.array(values.astype(dtype, copy=False), mask=nulls if mask else None)

        self.state.add_latest(
            reduce_latest(
                pa.table(
                    {
                        "group": cols["group"],
                        "topic": cols["topic"],
                        "partition": pa.array(part),
                        "pos": pa.array(pos),
                        "tombstone": pa.array(tomb),
                        "offset": num("offset", np.int64),
                        "leader_epoch": num("leader_epoch", np.int32),
                        "metadata": cols["metadata"],
                        "commit_timestamp": num("commit_timestamp", np.int64),
                        "record_offset": roff,
                    }
                )
            )
        )
        live = ~tomb
        arrays = [
            cols["group"],
            cols["topic"],
            pa.array(part),
            num("offset", np.int64),
            num("leader_epoch", np.int32),
            cols["metadata"],
            num("commit_timestamp", np.int64),
            num("expire_timestamp", np.int64),
            rpart,
            roff,
            cols["record_ts"],
            num("key_version", np.int32, False),
            num("value_version", np.int32),
        ]
        out = pa.RecordBatch.from_arrays(arrays, schema=_commit_schema(ts_type))
        if n_tomb:
            out = out.filter(pa.array(live))
            rows = rows[live]
        self._batch_commits.append(out)
        return rows, out

    def _slow(self, sub, rows: np.ndarray, wide):
        """The exact per-record path for the other rows: commits back, the rest to the side state."""
        import pyarrow as pa
        import pyarrow.compute as pc

        dec = decode_slow(sub, wide, self.key_cache)
        kind = dec.column("kind")
        tomb = dec.column("tombstone").fill_null(False)
        for r in (
            pa.table({"k": kind, "t": tomb, "r": dec.column("reason")})
            .group_by(["k", "t", "r"])
            .aggregate([("k", "count")])
            .to_pylist()
        ):
            self.state.count((r["k"], bool(r["t"]), r["r"]), r["k_count"])
        is_oc = pc.equal(kind, "offset_commit")
        other = pc.invert(is_oc)
        if pc.any(other).as_py():
            side = dec.filter(other)
            seq = pa.array(self.seq + rows[np.asarray(other.to_numpy(zero_copy_only=False), bool)])
            self.state.side.append(
                pa.Table.from_batches([side])
                .append_column("_task", pa.array(np.full(side.num_rows, self.task, np.int64)))
                .append_column("_seq", seq)
            )
            gm = side.filter(pc.equal(side.column("kind"), "group_metadata"))
            self._batch_gm.extend(
                zip(gm.column("group").to_pylist(), gm.column("record_offset").to_pylist())
            )
        oc = dec.filter(is_oc)
        if oc.num_rows:
            self.state.add_latest(
                reduce_latest(
                    pa.table(
                        {
                            "group": oc.column("group"),
                            "topic": oc.column("topic"),
                            "partition": oc.column("partition"),
                            "pos": pa.array(
                                _pos(oc.column("record_partition"), oc.column("record_offset"))
                            ),
                            "tombstone": oc.column("tombstone"),
                            "offset": oc.column("offset"),
                            "leader_epoch": oc.column("leader_epoch"),
                            "metadata": oc.column("metadata"),
                            "commit_timestamp": oc.column("commit_timestamp"),
                            "record_offset": oc.column("record_offset"),
                        }
                    )
                )
            )
        live = pc.and_(is_oc, pc.invert(tomb))
        commits = dec.filter(live).select(list(COMMIT_COLUMNS))
        if commits.num_rows:
            self._batch_commits.append(commits)
        return rows[np.asarray(live.to_numpy(zero_copy_only=False), bool)], commits

    def _segment_batch(self) -> None:
        """This batch's commit segments: per group, the runs between its GroupMetadata records of this batch.

        Any split is correct as long as no GroupMetadata record of the group
        falls inside a run (rebalances.segments_are_exact checks that against
        all of them); within one batch of one log that holds by construction.
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        commits, self._batch_commits = self._batch_commits, []
        gms, self._batch_gm = self._batch_gm, []
        if not commits:
            return
        t = (
            pa.Table.from_batches(commits).combine_chunks()
            if len(commits) > 1
            else pa.Table.from_batches(commits)
        )
        enc = pc.dictionary_encode(t.column("group")).combine_chunks()
        code = enc.indices.to_numpy()
        order = t.column("record_offset").to_numpy()
        seg = np.zeros(len(code), np.int64)
        if gms:
            names = {s: i for i, s in enumerate(enc.dictionary.to_pylist())}
            by_group: dict[int, list] = {}
            for g, o in gms:
                if g in names:
                    by_group.setdefault(names[g], []).append(o)
            for c, orders in by_group.items():
                sel = code == c
                seg[sel] = np.searchsorted(
                    np.sort(np.asarray(orders, np.int64)), order[sel], side="left"
                )
        topics = pc.dictionary_encode(t.column("topic")).combine_chunks()
        agg = (
            pa.table(
                {
                    "code": code,
                    "tcode": topics.indices,
                    "partition": t.column("partition"),
                    "seg": seg,
                    "order": order,
                    "ts": t.column("commit_timestamp"),
                }
            )
            .group_by(["code", "tcode", "partition", "seg"])
            .aggregate([("order", "min"), ("order", "max"), ("ts", "max")])
        )
        self.state.segments.append(
            pa.table(
                {
                    "group": enc.dictionary.take(agg.column("code")),
                    "topic": topics.dictionary.take(agg.column("tcode")),
                    "partition": agg.column("partition"),
                    "c_lo": agg.column("order_min"),
                    "c_hi": agg.column("order_max"),
                    "ts_ms": agg.column("ts_max"),
                }
            )
        )

    def batches(self, batches: Iterator) -> Iterator:
        for batch in batches:
            out = self.decode(batch)
            self._segment_batch()
            if out is not None:
                yield out


def _pos(rpart, roff) -> np.ndarray:
    """Log position as latest_offsets_of orders records: partition * 2^40 + offset."""
    return np.asarray(rpart.to_numpy(zero_copy_only=False), np.int64) * (1 << 40) + np.asarray(
        roff.to_numpy(zero_copy_only=False), np.int64
    )


def _commit_schema(ts_type):
    """COMMIT_COLUMNS of the decoded row's schema (offsets_decode.arrow_schema), in that order."""
    import pyarrow as pa

    wide = arrow_schema(ts_type)
    return pa.schema([wide.field(c) for c in COMMIT_COLUMNS])


# ---- the two ways in ----------------------------------------------------------------------


def frame_pass(source, acc, spill_dir: str | None = None):
    """mapInArrow over a normalised Kafka-source DataFrame (offsets_decode.source_frame)."""

    def run(batches):
        from pyspark import TaskContext

        ctx = TaskContext.get()
        dec = PassDecoder(ctx.partitionId() if ctx is not None else 0)
        yield from dec.batches(batches)
        acc.add(dec.state.finish().spill(spill_dir, dec.task))

    return source.mapInArrow(run, COMMIT_DDL)


def file_pass(
    spark, tasks: list[list[tuple[str, int]]], acc, writer=None, spill_dir: str | None = None
):
    """One Spark task per plan_files task, its row groups read and decoded in Python; state in `acc`.

    Without `writer` the frame is the commits (COMMIT_DDL) for Spark to write;
    with it (spark_files.SparkFiles) each task writes its commits itself and
    the frame is one (task, rows) row per task, to collect.
    """

    def run(batches):
        import pyarrow as pa

        for b in batches:
            for i in b.column("id").to_pylist():
                dec = PassDecoder(i)
                source = (b for path, rg in tasks[i] for b in read_row_group(path, rg))
                if writer is None:
                    yield from dec.batches(source)
                else:
                    rows = writer.write(
                        i, (commit_output(c, writer.schema) for c in dec.batches(source))
                    )
                    yield pa.record_batch(
                        {"task": pa.array([i], pa.int64()), "rows": pa.array([rows], pa.int64())}
                    )
                acc.add(dec.state.finish().spill(spill_dir, i))

    n = max(1, len(tasks))
    return spark.range(0, len(tasks), 1, n).mapInArrow(
        run, COMMIT_DDL if writer is None else "task long, rows long"
    )
