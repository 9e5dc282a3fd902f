"""Rebalance episodes from a group's GroupMetadata history and its commits.

The classic coordinator writes a GroupMetadata record when a rebalance
completes (the leader's SyncGroup stores the new generation and its
assignments) and when a group empties; it writes nothing when a rebalance
starts. So, per group, in log order, each record with a new generation ends an
episode (`end` = the record's timestamp) and its start is estimated from what
the log does show:

- `commit`: the last offset commit of the group after the previous
  GroupMetadata record and before this one. Consumers with auto-commit (and
  the cooperative/eager revocation path) commit in `onJoinPrepare`, i.e. when
  the rebalance starts, so this is usually the start to within one commit;
- `state_timestamp`: otherwise the record's `currentStateTimestamp` (v2+,
  when the group entered the state it was stored in), if later than the
  previous record;
- `previous_record`: otherwise the previous record's time (or the end itself
  for a group's first record).

Members are identified by `group.instance.id` when they have one, else by
member id; a partition moved when its owner changed between the two
generations' assignments.
"""

from __future__ import annotations

EPISODE_SCHEMA = (
    "group string, generation_from int, generation_to int, start timestamp, end timestamp, duration_ms long, "
    "start_source string, protocol string, leader string, members_before int, members_after int, "
    "joined array<string>, left array<string>, partitions_moved int, partitions_assigned int, "
    "partitions_unassigned int"
)

_SEP = "\u0001"


def episodes_for_group(group: str, meta: list[dict]) -> list[dict]:
    """Episodes of one group. `meta` rows (sorted by log order) have tombstone, generation, protocol, leader,
    ts_ms, state_ms, order, identities, owners and last_commit_ms: the time of the group's last commit
    between the previous GroupMetadata record and this one (None if there was none)."""
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
        start, source = None, None
        if m["last_commit_ms"] is not None:
            last_commit = int(m["last_commit_ms"])
            floor = int(prev["ts_ms"]) if prev is not None else None
            if last_commit <= end and (floor is None or last_commit >= floor):
                start, source = last_commit, "commit"
        if start is None and m["state_ms"] is not None and m["state_ms"] >= 0 and m["state_ms"] <= end and (
                prev is None or m["state_ms"] >= prev["ts_ms"]):
            start, source = int(m["state_ms"]), "state_timestamp"
        if start is None:
            start, source = (int(prev["ts_ms"]), "previous_record") if prev is not None else (end, "previous_record")
        before_ids = set(prev["identities"]) if prev is not None else set()
        after_ids = set(m["identities"])
        before_owner = _owners(prev["owners"]) if prev is not None else {}
        after_owner = _owners(m["owners"])
        moved = sum(1 for tp, o in after_owner.items() if tp in before_owner and before_owner[tp] != o)
        out.append({
            "group": group, "generation_from": prev["generation"] if prev is not None else None,
            "generation_to": m["generation"], "start_ms": start, "end_ms": end, "duration_ms": end - start,
            "start_source": source, "protocol": m["protocol"], "leader": m["leader"],
            "members_before": len(before_ids), "members_after": len(after_ids),
            "joined": sorted(after_ids - before_ids), "left": sorted(before_ids - after_ids),
            "partitions_moved": moved, "partitions_assigned": len(after_owner),
            "partitions_unassigned": sum(1 for tp in before_owner if tp not in after_owner),
        })
        prev = m
    return out


def _owners(owners) -> dict[tuple[str, str], str]:
    result = {}
    for s in owners if owners is not None else ():
        topic, partition, who = s.split(_SEP)
        result[(topic, partition)] = who
    return result


def segments_are_exact(group_metadata, segments) -> bool:
    """True when no commit segment (group, c_lo, c_hi) has one of its group's GroupMetadata records inside.

    Then every segment lies wholly between two consecutive GroupMetadata
    records of its group (or before the first, or after the last), so the
    latest commit per interval is the latest of its segments' maxima, exactly
    as the per-commit join finds it.
    """
    from pyspark.sql import functions as F

    gm = group_metadata.select("group", F.col("record_offset").alias("order"))
    inside = segments.join(F.broadcast(gm), "group").where(
        (F.col("order") >= F.col("c_lo")) & (F.col("order") <= F.col("c_hi")))
    return not inside.limit(1).collect()


def rebalances_of(group_metadata, commits=None, segments=None):
    """Spark: episodes of every group, one pandas task per group over its (few) metadata records.

    The start estimate needs the last commit between consecutive GroupMetadata
    records: from `commits` (commits.parquet rows) or, cheaper, from
    `segments` (group, c_lo, c_hi, ts_ms: runs of a group's commits by record
    offset with their latest commit time), valid when segments_are_exact.
    """
    meta = _meta(group_metadata, commits, segments)
    return meta.groupBy("group").applyInPandas(_per_group, EPISODE_SCHEMA).orderBy("group", "end")


def _meta(group_metadata, commits, segments):
    """Per GroupMetadata record: what episodes_for_group reads, with the last commit before it."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    ident = "coalesce(m.group_instance_id, m.member_id)"
    meta = group_metadata.select(
        "group", "tombstone", "generation", "protocol", "leader",
        F.floor(F.unix_micros("record_ts") / 1000).cast("long").alias("ts_ms"),
        F.floor(F.unix_micros("current_state_ts") / 1000).cast("long").alias("state_ms"),
        F.col("record_offset").alias("order"),
        F.expr(f"transform(coalesce(members, array()), m -> {ident})").alias("identities"),
        F.expr(f"flatten(transform(coalesce(members, array()), m -> transform(coalesce(m.assigned, array()), "
               f"a -> concat_ws('{_SEP}', a.topic, cast(a.partition as string), {ident}))))").alias("owners"),
    )
    # The last commit between consecutive GroupMetadata records, in the JVM: the (few) metadata
    # intervals are broadcast and range-joined with the (many) commits or their segments.
    w = Window.partitionBy("group").orderBy("order")
    intervals = meta.select("group", "order", F.lag("order").over(w).alias("lo"))
    if segments is not None:
        spans = segments.select("group", "c_lo", "c_hi", "ts_ms")
    else:
        spans = commits.select("group", F.col("record_offset").alias("c_lo"), F.col("record_offset").alias("c_hi"),
                               F.floor(F.unix_micros("commit_ts") / 1000).cast("long").alias("ts_ms"))
    last_commit = (
        spans.join(F.broadcast(intervals), "group")
        .where((F.col("c_hi") < F.col("order")) & (F.col("lo").isNull() | (F.col("c_lo") > F.col("lo"))))
        .groupBy("group", "order").agg(F.max("ts_ms").alias("last_commit_ms"))
    )
    return meta.join(last_commit, ["group", "order"], "left")


def _per_group(key, m):
    """applyInPandas body: one group's records (any order) -> its episodes (EPISODE_SCHEMA)."""
    import pandas as pd

    (group,) = key
    m = m.sort_values("order")
    rows = m.to_dict("records")
    for r in rows:
        for c in ("state_ms", "generation", "last_commit_ms"):
            r[c] = None if pd.isna(r[c]) else int(r[c])
    eps = episodes_for_group(group, rows)
    df = pd.DataFrame(eps, columns=["group", "generation_from", "generation_to", "start_ms", "end_ms", "duration_ms",
                                    "start_source", "protocol", "leader", "members_before", "members_after", "joined",
                                    "left", "partitions_moved", "partitions_assigned", "partitions_unassigned"])
    df.insert(3, "start", pd.to_datetime(df.pop("start_ms"), unit="ms"))
    df.insert(4, "end", pd.to_datetime(df.pop("end_ms"), unit="ms"))
    return df.astype({"generation_from": "Int32", "generation_to": "Int32"})


def rebalances_from_records(spark, group_metadata, segments):
    """rebalances_of computed on the driver from the offsets pass's in-memory tables, or None.

    `group_metadata`: the pass's GroupMetadata rows (pyarrow, offsets.DECODED_SCHEMA
    columns); `segments`: its commit segments (group, c_lo, c_hi, ts_ms). The
    columns are derived as _meta derives them in Spark; None when a segment
    has one of its group's GroupMetadata records inside (segments_are_exact
    would say False), so the caller falls back to the per-commit join.
    """
    import numpy as np
    import pandas as pd

    rows = group_metadata.select(["group", "tombstone", "generation", "protocol", "leader", "record_ts",
                                  "current_state_timestamp", "record_offset", "members"]).to_pylist()
    ts_us = group_metadata.column("record_ts").cast("int64").to_numpy(zero_copy_only=False) if rows else []
    by_group: dict = {}
    for r, us in zip(rows, ts_us):
        members = r["members"] or []
        ident = [m["group_instance_id"] if m["group_instance_id"] is not None else m["member_id"] for m in members]
        owners = [_SEP.join(s for s in (a["topic"], None if a["partition"] is None else str(a["partition"]), who)
                            if s is not None)
                  for m, who in zip(members, ident) for a in (m["assigned"] or [])]
        cst = r["current_state_timestamp"]
        by_group.setdefault(r["group"], []).append({
            "tombstone": r["tombstone"], "generation": r["generation"], "protocol": r["protocol"],
            "leader": r["leader"], "ts_ms": int(us) // 1000, "state_ms": cst if cst is not None and cst >= 0 else None,
            "order": r["record_offset"], "identities": ident, "owners": owners, "last_commit_ms": None})
    seg_group = segments.column("group").to_pylist() if segments is not None else []
    if seg_group:
        c_lo, c_hi, ts = (segments.column(c).to_numpy() for c in ("c_lo", "c_hi", "ts_ms"))
        idx_by_group: dict = {}
        for i, g in enumerate(seg_group):
            idx_by_group.setdefault(g, []).append(i)
        for g, idx in idx_by_group.items():
            meta = by_group.get(g)
            if not meta:
                continue
            orders = np.sort(np.array([m["order"] for m in meta], np.int64))
            idx = np.asarray(idx)
            k = np.searchsorted(orders, c_lo[idx], side="left")
            if (k < np.searchsorted(orders, c_hi[idx], side="right")).any():
                return None  # a GroupMetadata record inside a segment
            last: dict[int, int] = {}
            for kk, t in zip(k.tolist(), ts[idx].tolist()):
                if kk < len(orders):  # commits after the last record end no interval
                    o = int(orders[kk])
                    last[o] = max(last.get(o, t), t)
            for m in meta:
                m["last_commit_ms"] = last.get(m["order"])
    frames = []
    for g in sorted(by_group, key=lambda x: (x is not None, x)):
        f = _per_group((g,), pd.DataFrame(by_group[g]))
        if len(f):
            frames.append(f)
    if not frames:
        return spark.createDataFrame([], EPISODE_SCHEMA)
    out = pd.concat(frames, ignore_index=True).sort_values(["group", "end"], kind="stable",
                                                                   na_position="first")
    return spark.createDataFrame(out, EPISODE_SCHEMA)
