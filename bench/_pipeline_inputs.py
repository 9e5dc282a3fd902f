"""The Spark pipeline benchmark's inputs (bench/pipeline.py), generated with numpy/pyarrow, not
Spark: 1-minute partition metric samples (`gen_samples`) and `__consumer_offsets` records encoded
by the shared codecs (`gen_records`: offset commits, tombstones, corrupt records, group metadata)."""

from __future__ import annotations

from pathlib import Path

DAY0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def gen_samples(path: Path, partitions: int, hours: int, brokers: int = 12) -> int:
    """One file per hour; every partition has one leader sample per minute."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(5)
    per_topic = 100
    topics = np.array([f"topic-{i:04d}" for i in range((partitions + per_topic - 1) // per_topic)])
    pid = np.arange(partitions)
    topic_idx = (pid // per_topic).astype(np.int32)
    part = (pid % per_topic).astype(np.int32)
    leader = ((pid * 7 + 3) % brokers + 1).astype(np.int32)
    base_in = rng.lognormal(10, 1.2, partitions)
    size0 = rng.uniform(1e8, 5e10, partitions)
    rows = 0
    for h in range(hours):
        m = np.repeat(np.arange(60), partitions)
        idx = np.tile(pid, 60)
        n = len(idx)
        noise = rng.normal(1.0, 0.05, n)
        bytes_in = base_in[idx] * noise
        table = pa.table(
            {
                "ts": pa.array(DAY0 + (h * 60 + m) * 60_000 + (idx % 50) * 100, pa.timestamp("ms")),
                "broker": pa.array(leader[idx]),
                "topic": pa.DictionaryArray.from_arrays(pa.array(topic_idx[idx]), pa.array(topics)),
                "partition": pa.array(part[idx]),
                "is_leader": pa.array(np.ones(n, dtype=bool)),
                "bytes_in": pa.array(bytes_in),
                "bytes_out": pa.array(bytes_in * 2.5),
                "messages_in": pa.array(bytes_in / 800.0),
                "size_bytes": pa.array(size0[idx] + bytes_in * (h * 3600 + m * 60)),
                "cpu": pa.array(bytes_in / 1e7),
            }
        )
        pq.write_table(table, path / f"hour-{h:02d}.parquet", row_group_size=1_000_000)
        rows += n
    return rows


def gen_records(
    path: Path, records: int, groups: int = 20, topics: int = 10, partitions: int = 50
) -> dict:
    """Offset commits built with numpy from keys and values encoded by the shared codecs."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kafka_rebalance.assign.protocol import (
        Assignment,
        Subscription,
        encode_assignment,
        encode_subscription,
    )
    from kafka_rebalance.group.records import (
        GroupMetadataValue,
        MemberMetadata,
        OffsetCommitKey,
        decode_record,
        encode_key,
        encode_record,
        group_metadata_record,
        offset_commit_record,
    )
    from kafka_rebalance.model import TopicPartition

    path.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(11)
    keys = [
        encode_key(OffsetCommitKey(f"group-{g:03d}", f"topic-{t:03d}", p))
        for g in range(groups)
        for t in range(topics)
        for p in range(partitions)
    ]
    assert len({len(k) for k in keys}) == 1
    klen = len(keys[0])
    key_mat = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), klen)
    # value v3 = version, offset, leaderEpoch, metadata "" (int16 0), commitTimestamp: 24 bytes.
    sample = encode_record(offset_commit_record("g", "t", 0, 7, commit_timestamp=DAY0))[1]
    assert len(sample) == 24
    vdt = np.dtype([("v", ">i2"), ("off", ">i8"), ("epoch", ">i4"), ("mlen", ">i2"), ("ts", ">i8")])
    chunk = 2_000_000
    written = 0
    tombstones = corrupt = 0
    file_no = 0
    while written < records:
        n = min(chunk, records - written)
        k = rng.integers(0, len(keys), n)
        vals = np.zeros(n, dtype=vdt)
        vals["v"] = 3
        vals["off"] = (written + np.arange(n)) // 7 + k
        vals["epoch"] = 5
        vals["ts"] = DAY0 + (written + np.arange(n)) * 5
        vbytes = vals.tobytes()
        voffsets = np.arange(0, 24 * (n + 1), 24, dtype=np.int32)
        value = pa.Array.from_buffers(
            pa.binary(), n, [None, pa.py_buffer(voffsets.tobytes()), pa.py_buffer(vbytes)]
        )
        kbytes = key_mat[k].tobytes()
        koffsets = np.arange(0, klen * (n + 1), klen, dtype=np.int32)
        key = pa.Array.from_buffers(
            pa.binary(), n, [None, pa.py_buffer(koffsets.tobytes()), pa.py_buffer(kbytes)]
        )
        # a few tombstones and corrupt (truncated) values
        vlist = value
        tomb = rng.random(n) < 0.001
        bad = rng.random(n) < 0.0005
        if tomb.any() or bad.any():
            py = value.to_pylist()
            for i in np.flatnonzero(tomb):
                py[i] = None
            for i in np.flatnonzero(bad & ~tomb):
                py[i] = py[i][:5]
            vlist = pa.array(py, pa.binary())
            tombstones += int(tomb.sum())
            corrupt += int((bad & ~tomb).sum())
        table = pa.table(
            {
                "key": key,
                "value": vlist,
                "topic": pa.array(["__consumer_offsets"] * n),
                "partition": pa.array(np.zeros(n, dtype=np.int32)),
                "offset": pa.array(written + np.arange(n, dtype=np.int64)),
                "timestamp": pa.array(DAY0 + (written + np.arange(n)) * 5, pa.timestamp("ms")),
                "timestampType": pa.array(np.zeros(n, dtype=np.int32)),
            }
        )
        pq.write_table(table, path / f"part-{file_no:03d}.parquet")
        written += n
        file_no += 1
    # group metadata: one rebalance per group every ~10 % of the log
    rows = []
    sub = encode_subscription(Subscription(tuple(f"topic-{t:03d}" for t in range(topics))))
    for g in range(groups):
        for gen in range(1, 11):
            members = []
            for m in range(5):
                parts = tuple(
                    TopicPartition(f"topic-{t:03d}", p)
                    for t in range(topics)
                    for p in range(partitions)
                    if (t * partitions + p + gen) % 5 == m
                )
                members.append(
                    MemberMetadata(
                        f"m{m}-{gen}",
                        "c",
                        "/127.0.0.1",
                        45000,
                        sub,
                        encode_assignment(Assignment(parts)),
                        300000,
                        f"i{m}",
                    )
                )
            rec = group_metadata_record(
                f"group-{g:03d}",
                GroupMetadataValue(
                    "consumer", gen, "range", members[0].member_id, tuple(members), DAY0
                ),
            )
            kb, vb = encode_record(rec)
            off = records + len(rows)
            rows.append((kb, vb, off, DAY0 + gen * records // 2))
    decode_record(rows[0][0], rows[0][1])
    meta = pa.table(
        {
            "key": pa.array([r[0] for r in rows], pa.binary()),
            "value": pa.array([r[1] for r in rows], pa.binary()),
            "topic": pa.array(["__consumer_offsets"] * len(rows)),
            "partition": pa.array(np.zeros(len(rows), dtype=np.int32)),
            "offset": pa.array([r[2] for r in rows], pa.int64()),
            "timestamp": pa.array([r[3] for r in rows], pa.timestamp("ms")),
            "timestampType": pa.array(np.zeros(len(rows), dtype=np.int32)),
        }
    )
    pq.write_table(meta, path / "group-metadata.parquet")
    return {
        "records": written + len(rows),
        "tombstones": tombstones,
        "corrupt": corrupt,
        "group_metadata": len(rows),
    }
