"""Synthetic telemetry for the demo: a day of metric samples and log-end offsets.

Generated column-wise with numpy (seeded) so a day of samples for thousands
of partitions takes a fraction of a second; written as Parquet in the
docs/formats.md section 4 layout.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import METRIC_SAMPLE_COLUMNS, ClusterSnapshot

DAY_MS = 24 * 3600 * 1000


def metric_samples(
    snapshot: ClusterSnapshot,
    start_ms: int,
    duration_ms: int = DAY_MS,
    step_ms: int = 60_000,
    seed: int = 7,
) -> pa.Table:
    """One sample per replica per step; rates follow a diurnal curve around the partition's load.

    Leaders report producer bytes in, consumer bytes out and messages; followers
    report the replicated bytes in only. Size grows with what was written, up
    to the snapshot's size at the end of the day (retention trims the rest).
    """
    rng = np.random.default_rng(seed)
    steps = np.arange(start_ms, start_ms + duration_ms, step_ms, dtype=np.int64)
    phase = 2 * np.pi * (steps % DAY_MS) / DAY_MS
    diurnal = 1.0 + 0.35 * np.sin(phase - np.pi / 2)
    cols: dict[str, list[np.ndarray]] = {k: [] for k in METRIC_SAMPLE_COLUMNS}
    n = len(steps)
    for part in snapshot.partitions:
        load = part.load
        if load is None or not part.replicas:
            continue
        noise = rng.lognormal(0.0, 0.08, size=n)
        bin_ = load.bytes_in * diurnal * noise
        bout = load.bytes_out * diurnal * noise
        msgs = load.messages_in * diurnal * noise
        # Retention keeps the log near its size: it grows through the day by what is written
        # and ends at the snapshot's size.
        written = np.cumsum(bin_ * (step_ms / 1000.0))
        size = load.size_bytes * (0.9 + 0.1 * written / max(written[-1], 1.0))
        leader = part.leader if part.leader is not None else part.replicas[0]
        for broker in part.replicas:
            is_leader = broker == leader
            cols["ts"].append(steps)
            cols["broker"].append(np.full(n, broker, dtype=np.int32))
            cols["topic"].append(np.full(n, part.topic, dtype=object))
            cols["partition"].append(np.full(n, part.partition, dtype=np.int32))
            cols["is_leader"].append(np.full(n, is_leader))
            cols["bytes_in"].append(bin_)
            cols["bytes_out"].append(bout if is_leader else np.zeros(n))
            cols["messages_in"].append(msgs if is_leader else np.zeros(n))
            cols["size_bytes"].append(size)
            cols["cpu"].append((bin_ + bout) / 5e7 * (1.0 if is_leader else 0.4))
    arrays = {k: np.concatenate(v) if v else np.array([]) for k, v in cols.items()}
    return pa.table(
        {
            "ts": pa.array(
                arrays["ts"].astype("datetime64[ms]"), type=pa.timestamp("ms", tz="UTC")
            ),
            "broker": pa.array(arrays["broker"], type=pa.int32()),
            "topic": pa.array(arrays["topic"], type=pa.string()),
            "partition": pa.array(arrays["partition"], type=pa.int32()),
            "is_leader": pa.array(arrays["is_leader"], type=pa.bool_()),
            "bytes_in": pa.array(arrays["bytes_in"], type=pa.float64()),
            "bytes_out": pa.array(arrays["bytes_out"], type=pa.float64()),
            "messages_in": pa.array(arrays["messages_in"], type=pa.float64()),
            "size_bytes": pa.array(arrays["size_bytes"], type=pa.float64()),
            "cpu": pa.array(arrays["cpu"], type=pa.float64()),
        }
    )


def write_parquet(table: pa.Table, path: Path) -> Path:
    """Write beside, then rename: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, tmp)
    tmp.replace(path)
    return path
