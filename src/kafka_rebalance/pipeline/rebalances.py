"""Rebalance episodes from a group's GroupMetadata history and its commits.

The classic coordinator writes a GroupMetadata record when a rebalance
completes (the leader's SyncGroup stores the new generation and its
assignments) and when a group empties; it writes nothing when a rebalance
starts. So, per group, in log order, each record with a new generation ends an
episode (`end` = the record's timestamp) and its start is estimated from what
the log does show, the members' commits:

`start` is the first member's reaction. A consumer commits what it has
processed when it learns of a rebalance (auto-commit in `onJoinPrepare`, or
in `close()` before the LeaveGroup that starts it), and it learns of it at its
next heartbeat. Each commit between the previous GroupMetadata record and
this one is attributed to the member that owned its partition in the previous
record's assignment (the consumer-protocol assignment bytes, decoded by
`assign.protocol` when offsets.py reads the record); each member's last such
commit is when it reacted, and `start` is the earliest of them. `start_source`
is then "commit".

`start` (and `duration_ms`, `start_source`) is null when no member made one:
the group's first record, the first after a group tombstone (no previous
assignment to attribute commits to), or no commit in between. Commits on
partitions nobody owned, and members' last commits outside [previous record,
this record] (a client-supplied commit time, clock skew), are left out.
What the estimate is worth: exact to within a round trip when a member's
LeaveGroup starts the rebalance (its close() commit just precedes it); late
by at most `heartbeat.interval.ms` when a JoinGroup starts it (the first to
react is the first to heartbeat afterwards); early when a member of the
previous generation made no commit when it started (a crash, then the
session expiry; auto-commit off): its last commit, long before, counts.
On the simulator's eager rolling restart: LeaveGroup rebalances within 3 ms
of PreparingRebalance, JoinGroup ones 190-860 ms after it.

Members are identified by `group.instance.id` when they have one, else by
member id; a partition moved when its owner changed between the two
generations' assignments.

Each partition's last commit per interval comes from commits.parquet or from
the offsets pass's commit segments, when those carry topic and partition
(SEGMENT_KEY); segments without them cannot attribute anything, so
segments_are_exact says False and rebalances_from_records None, and
offsets.py falls back to the commits.
"""

from __future__ import annotations

EPISODE_SCHEMA = (
    "group string, generation_from int, generation_to int, start timestamp, end timestamp, duration_ms long, "
    "start_source string, protocol string, leader string, members_before int, members_after int, "
    "joined array<string>, left array<string>, partitions_moved int, partitions_assigned int, "
    "partitions_unassigned int"
)
EPISODE_COLUMNS = (
    "group",
    "generation_from",
    "generation_to",
    "start_ms",
    "end_ms",
    "duration_ms",
    "start_source",
    "protocol",
    "leader",
    "members_before",
    "members_after",
    "joined",
    "left",
    "partitions_moved",
    "partitions_assigned",
    "partitions_unassigned",
)
SEGMENT_KEY = (
    "topic",
    "partition",
)  # what segments need, besides (group, c_lo, c_hi, ts_ms), to stand in for commits

_SEP = "\u0001"


def episodes_for_group(group: str, meta: list[dict]) -> list[dict]:
    """Episodes of one group. `meta` rows (sorted by log order) have tombstone, generation, protocol, leader,
    ts_ms, order, identities, owners and member_last_commits: for each member of the previous record's
    assignment that committed between that record and this one, the time of its last such commit (any order;
    None or empty when there were none)."""
    out = []
    prev = None
    for m in meta:
        if m["tombstone"]:
            prev = None  # group deleted: the next record starts afresh
            continue
        if prev is not None and m["generation"] == prev["generation"]:
            prev = m
            continue
        end = int(m["ts_ms"])
        start = None
        if prev is not None:
            floor = int(prev["ts_ms"])
            reacted = [int(t) for t in (m["member_last_commits"] or ()) if floor <= int(t) <= end]
            start = min(reacted) if reacted else None
        before_ids: set[str] = set(prev["identities"]) if prev is not None else set()
        after_ids = set(m["identities"])
        before_owner: dict[tuple[str, str], str] = (
            _owners(prev["owners"]) if prev is not None else {}
        )
        after_owner = _owners(m["owners"])
        moved = sum(
            1 for tp, o in after_owner.items() if tp in before_owner and before_owner[tp] != o
        )
        out.append(
            {
                "group": group,
                "generation_from": prev["generation"] if prev is not None else None,
                "generation_to": m["generation"],
                "start_ms": start,
                "end_ms": end,
                "duration_ms": None if start is None else end - start,
                "start_source": None if start is None else "commit",
                "protocol": m["protocol"],
                "leader": m["leader"],
                "members_before": len(before_ids),
                "members_after": len(after_ids),
                "joined": sorted(after_ids - before_ids),
                "left": sorted(before_ids - after_ids),
                "partitions_moved": moved,
                "partitions_assigned": len(after_owner),
                "partitions_unassigned": sum(1 for tp in before_owner if tp not in after_owner),
            }
        )
        prev = m
    return out


def _owners(owners) -> dict[tuple[str, str], str]:
    result: dict[tuple[str, str], str] = {}
    for s in owners if owners is not None else ():
        topic, partition, who = s.split(_SEP)
        result[(topic, partition)] = who
    return result


def segments_are_exact(group_metadata, segments) -> bool:
    """True when the commit segments can stand in for the commits: they carry each run's topic and partition
    (SEGMENT_KEY: without them no commit can be attributed to a member) and no segment (group, c_lo, c_hi)
    has one of its group's GroupMetadata records inside.

    Then every segment lies wholly between two consecutive GroupMetadata
    records of its group (or before the first, or after the last), so each
    partition's latest commit per interval is the latest of its segments'
    maxima, exactly as the per-commit join finds it.
    """
    from pyspark.sql import functions as F

    if any(c not in segments.columns for c in SEGMENT_KEY):
        return False
    gm = group_metadata.select("group", F.col("record_offset").alias("order"))
    inside = segments.join(F.broadcast(gm), "group").where(
        (F.col("order") >= F.col("c_lo")) & (F.col("order") <= F.col("c_hi"))
    )
    return not inside.limit(1).collect()


def rebalances_of(group_metadata, commits=None, segments=None):
    """Spark: episodes of every group, one pandas task per group over its (few) metadata records.

    The start estimate needs each member's last commit between consecutive
    GroupMetadata records: from `commits` (commits.parquet rows) or, cheaper,
    from `segments` (group, topic, partition, c_lo, c_hi, ts_ms: runs of one
    partition's commits by record offset with their latest commit time), valid
    when segments_are_exact.
    """
    meta = _meta(group_metadata, commits, segments)
    return meta.groupBy("group").applyInPandas(_per_group, EPISODE_SCHEMA).orderBy("group", "end")


def _meta(group_metadata, commits, segments):
    """Per GroupMetadata record: what episodes_for_group reads, with its members' last commits before it."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    ident = "coalesce(m.group_instance_id, m.member_id)"
    meta = group_metadata.select(
        "group",
        "tombstone",
        "generation",
        "protocol",
        "leader",
        F.floor(F.unix_micros("record_ts") / 1000).cast("long").alias("ts_ms"),
        F.col("record_offset").alias("order"),
        F.expr(f"transform(coalesce(members, array()), m -> {ident})").alias("identities"),
        F.expr(
            f"flatten(transform(coalesce(members, array()), m -> transform(coalesce(m.assigned, array()), "
            f"a -> concat_ws('{_SEP}', a.topic, cast(a.partition as string), {ident}))))"
        ).alias("owners"),
    )
    # Each partition's last commit between consecutive GroupMetadata records. Segments (few): the intervals
    # are broadcast and range-joined with them in the JVM. Commits (many): each task finds its commits'
    # intervals by binary search over the records' offsets and reduces them per partition before the shuffle.
    if segments is not None:
        w = Window.partitionBy("group").orderBy("order")
        intervals = meta.select("group", "order", F.lag("order").over(w).alias("lo")).where(
            F.col("lo").isNotNull()
        )
        spans = segments.select("group", "topic", "partition", "c_lo", "c_hi", "ts_ms")
        spans = spans.join(F.broadcast(intervals), "group").where(
            (F.col("c_hi") < F.col("order")) & (F.col("c_lo") > F.col("lo"))
        )
    else:
        orders: dict = {}
        for r in group_metadata.select("group", "record_offset").collect():
            if r["group"] is not None and r["record_offset"] is not None:
                orders.setdefault(r["group"], []).append(int(r["record_offset"]))
        spans = commits.select(
            "group",
            "topic",
            "partition",
            "record_offset",
            F.floor(F.unix_micros("commit_ts") / 1000).cast("long").alias("ts_ms"),
        ).mapInArrow(_interval_tagger({g: sorted(o) for g, o in orders.items()}), _TAGGED_DDL)
    per_partition = spans.groupBy("group", "order", "lo", "topic", "partition").agg(
        F.max("ts_ms").alias("ts_ms")
    )
    # who owned each partition in the previous record (the one at `lo`)
    owned = (
        group_metadata.select(
            "group", F.col("record_offset").alias("lo"), F.explode("members").alias("m")
        )
        .select("group", "lo", F.expr(ident).alias("who"), F.explode("m.assigned").alias("a"))
        .select(
            "group",
            "lo",
            "who",
            F.col("a.topic").alias("topic"),
            F.col("a.partition").alias("partition"),
        )
        .where(F.col("topic").isNotNull() & F.col("partition").isNotNull())
        .distinct()
    )
    reacted = (
        per_partition.join(owned, ["group", "lo", "topic", "partition"])
        .groupBy("group", "order", "who")
        .agg(F.max("ts_ms").alias("ts_ms"))
        .groupBy("group", "order")
        .agg(F.collect_list("ts_ms").alias("member_last_commits"))
    )
    return meta.join(reacted, ["group", "order"], "left")


_TAGGED_DDL = "group string, order long, lo long, topic string, partition int, ts_ms long"


def _interval_tagger(orders: dict[str, list[int]]):
    """mapInArrow body: commits (group, topic, partition, record_offset, ts_ms) -> per partition and interval
    (lo, order) between consecutive GroupMetadata records of its group, the batch's latest commit time.

    The same rows as the range join `lo < record_offset < order`: commits before a group's first record, after
    its last, at a record's offset, of a group without records or without a time belong to no interval."""

    def run(batches):
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        sorted_orders = {g: np.asarray(o, np.int64) for g, o in orders.items()}
        for b in batches:
            b = b.filter(
                pc.and_(
                    pc.and_(pc.is_valid(b.column("group")), pc.is_valid(b.column("record_offset"))),
                    pc.and_(
                        pc.is_valid(b.column("ts_ms")),
                        pc.and_(pc.is_valid(b.column("topic")), pc.is_valid(b.column("partition"))),
                    ),
                )
            )
            if b.num_rows == 0:
                continue
            enc = pc.dictionary_encode(b.column("group"))
            code = enc.indices.to_numpy(zero_copy_only=False)
            off = b.column("record_offset").to_numpy(zero_copy_only=False)
            lo = np.full(len(off), -1, np.int64)
            hi = np.full(len(off), -1, np.int64)
            keep = np.zeros(len(off), bool)
            for c, g in enumerate(enc.dictionary.to_pylist()):
                o = sorted_orders.get(g)
                if o is None or len(o) < 2:
                    continue
                sel = np.flatnonzero(code == c)
                k = np.searchsorted(o, off[sel], side="left")
                inside = (k >= 1) & (k < len(o))
                inside[inside] &= o[k[inside]] != off[sel][inside]
                sel, k = sel[inside], k[inside]
                lo[sel], hi[sel], keep[sel] = o[k - 1], o[k], True
            if not keep.any():
                continue
            mask = pa.array(keep)
            t = pa.table(
                {
                    "group": b.column("group").filter(mask),
                    "order": pa.array(hi[keep]),
                    "lo": pa.array(lo[keep]),
                    "topic": b.column("topic").filter(mask),
                    "partition": b.column("partition").filter(mask),
                    "ts_ms": b.column("ts_ms").filter(mask),
                }
            )
            agg = t.group_by(["group", "order", "lo", "topic", "partition"]).aggregate(
                [("ts_ms", "max")]
            )
            yield from (
                agg.select(["group", "order", "lo", "topic", "partition", "ts_ms_max"])
                .rename_columns(["group", "order", "lo", "topic", "partition", "ts_ms"])
                .to_batches()
            )

    return run


def _per_group(key, m):
    """applyInPandas body: one group's records (any order) -> its episodes (EPISODE_SCHEMA)."""
    import pandas as pd

    (group,) = key
    m = m.sort_values("order")
    rows = m.to_dict("records")
    for r in rows:
        r["generation"] = None if pd.isna(r["generation"]) else int(r["generation"])
        lasts = r["member_last_commits"]
        r["member_last_commits"] = (
            []
            if lasts is None or (not hasattr(lasts, "__len__") and pd.isna(lasts))
            else [int(t) for t in lasts]
        )
    return _frame(episodes_for_group(group, rows))


def _frame(eps: list[dict]):
    import pandas as pd

    df = pd.DataFrame(eps, columns=list(EPISODE_COLUMNS))
    for i, c in (
        (3, "start"),
        (4, "end"),
    ):  # integers all the way (a float would round the nanoseconds)
        df.insert(
            i,
            c,
            pd.to_datetime(df.pop(f"{c}_ms").astype("Int64"), unit="ms").astype("datetime64[ns]"),
        )
    return df.astype({"generation_from": "Int32", "generation_to": "Int32", "duration_ms": "Int64"})


def rebalances_from_records(spark, group_metadata, segments):
    """rebalances_of computed on the driver from the offsets pass's in-memory tables, or None.

    See episodes_from_records.
    """
    out = episodes_from_records(group_metadata, segments)
    return None if out is None else spark.createDataFrame(out, EPISODE_SCHEMA)


def episodes_from_records(group_metadata, segments):
    """The episodes (pandas, EPISODE_SCHEMA columns, ordered as rebalances_of orders them) or None.

    `group_metadata`: the pass's GroupMetadata rows (pyarrow, offsets_decode.DECODED_SCHEMA
    columns); `segments`: its commit segments (group, topic, partition, c_lo,
    c_hi, ts_ms). The columns are derived as _meta derives them in Spark; None
    when segments_are_exact would say False (no topic/partition to attribute
    commits by, or a segment with one of its group's GroupMetadata records
    inside), so the caller falls back to Spark.
    """
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    if (
        segments is not None
        and segments.num_rows
        and any(c not in segments.column_names for c in SEGMENT_KEY)
    ):
        return None
    rows = group_metadata.select(
        [
            "group",
            "tombstone",
            "generation",
            "protocol",
            "leader",
            "record_ts",
            "record_offset",
            "members",
        ]
    ).to_pylist()
    ts_us = []
    if (
        rows
    ):  # microseconds whatever the unit (the pass hands microseconds; floored, as Spark reads them)
        rts = group_metadata.column("record_ts")
        ts_us = (
            pc.cast(rts, pa.timestamp("us", rts.type.tz), safe=False)
            .cast(pa.int64())
            .to_numpy(zero_copy_only=False)
        )
    by_group: dict = {}
    for r, us in zip(rows, ts_us):
        members = r["members"] or []
        ident = [
            m["group_instance_id"] if m["group_instance_id"] is not None else m["member_id"]
            for m in members
        ]
        owners = [
            _SEP.join(
                s
                for s in (a["topic"], None if a["partition"] is None else str(a["partition"]), who)
                if s is not None
            )
            for m, who in zip(members, ident)
            for a in (m["assigned"] or [])
        ]
        owned: dict = {}
        for m, who in zip(members, ident):
            for a in m["assigned"] or []:
                if a["topic"] is not None and a["partition"] is not None:
                    owned.setdefault((a["topic"], a["partition"]), set()).add(who)
        by_group.setdefault(r["group"], []).append(
            {
                "tombstone": r["tombstone"],
                "generation": r["generation"],
                "protocol": r["protocol"],
                "leader": r["leader"],
                "ts_ms": int(us) // 1000,
                "order": r["record_offset"],
                "identities": ident,
                "owners": owners,
                "owned": owned,
                "member_last_commits": [],
            }
        )
    for meta in by_group.values():
        meta.sort(key=lambda x: x["order"])
    if segments is not None and segments.num_rows:
        seg = segments.select(["group", "topic", "partition", "c_lo", "c_hi", "ts_ms"])
        seg = seg.filter(
            pc.and_(pc.is_valid(seg.column("topic")), pc.is_valid(seg.column("partition")))
        )
        groups = seg.column("group").to_pylist()
        c_lo, c_hi = (seg.column(c).to_numpy() for c in ("c_lo", "c_hi"))
        k_all = np.full(len(groups), -1, np.int64)
        idx_by_group: dict = {}
        for i, g in enumerate(groups):
            idx_by_group.setdefault(g, []).append(i)
        for g, idx in idx_by_group.items():
            meta = by_group.get(g)
            if not meta:
                continue
            orders = np.array([m["order"] for m in meta], np.int64)
            idx = np.asarray(idx)
            k = np.searchsorted(orders, c_lo[idx], side="left")
            if (k < np.searchsorted(orders, c_hi[idx], side="right")).any():
                return None  # a GroupMetadata record inside a segment
            # the interval (orders[k-1], orders[k]): commits before the first record or after the last end none
            k_all[idx] = np.where((k >= 1) & (k < len(orders)), k, -1)
        keep = k_all >= 0
        last = (
            pa.table(
                {
                    "group": seg.column("group"),
                    "k": k_all,
                    "topic": seg.column("topic"),
                    "partition": seg.column("partition"),
                    "ts": seg.column("ts_ms"),
                }
            )
            .filter(pa.array(keep))
            .group_by(["group", "k", "topic", "partition"])
            .aggregate([("ts", "max")])
        )
        reacted: dict = {}  # (group, k) -> {member: last commit}
        for g, k, topic, part, ts in zip(
            *(last.column(c).to_pylist() for c in ("group", "k", "topic", "partition", "ts_max"))
        ):
            whos = by_group[g][k - 1]["owned"].get((topic, part), ())
            mine = reacted.setdefault((g, k), {})
            for who in whos:
                mine[who] = max(mine.get(who, ts), ts)
        for (g, k), mine in reacted.items():
            by_group[g][k]["member_last_commits"] = list(mine.values())
    frames = []
    for g in sorted(by_group, key=lambda x: (x is not None, x)):
        f = _frame(episodes_for_group(g, by_group[g]))
        if len(f):
            frames.append(f)
    if not frames:
        return _frame([])
    return pd.concat(frames, ignore_index=True).sort_values(
        ["group", "end"], kind="stable", na_position="first"
    )
