"""Where a cluster snapshot comes from: a file (snapshot JSON or `kafka-topics --describe` text)
or a live cluster, optionally with per-partition loads from the load model's Parquet or a snapshot.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path

from .. import io_util
from ..cluster.capacity_file import CapacityConfig, parse_capacity
from ..cluster.snapshot import alive_inferred, parse_snapshot, parse_snapshot_text, with_loads
from ..errors import InputError
from ..model import ClusterSnapshot, PartitionLoad


def _stderr_note(message: str) -> None:
    # stderr: stdout stays one JSON object under --format json
    print(message, file=sys.stderr)


def read_snapshot_file(
    path: str | Path, note: Callable[[str], None] = _stderr_note
) -> ClusterSnapshot:
    """The cluster in a snapshot file (JSON or describe text); `note` hears about brokers taken as alive."""
    path = Path(path)
    text = io_util.read_text(path)
    try:
        # JSON goes through the bounded reader (depth, integer size, NaN refused with the field)
        snap = (
            parse_snapshot(io_util.loads_json(text, path))
            if text.lstrip().startswith(("{", "["))
            else parse_snapshot_text(text)
        )
    except InputError as exc:
        raise exc.in_file(str(path)) from None
    # the brokers inferred *alive* (the set also holds those inferred dead from leaderless partitions)
    guessed = [b.id for b in snap.brokers if b.alive and b.id in alive_inferred(snap)]
    if guessed:
        note(
            f"note: {path}: brokers {sorted(guessed)} are taken as alive: the describe text does not say "
            "(no Offline: list covers them); a plan would keep replicas on them"
        )
    return snap


def read_snapshot(
    snapshot: str | Path | None = None,
    bootstrap_server: str | None = None,
    command_config: str | None = None,
    note: Callable[[str], None] = _stderr_note,
) -> ClusterSnapshot:
    """The cluster of a snapshot file, or of the live cluster at `bootstrap_server`."""
    if snapshot:
        return read_snapshot_file(snapshot, note)
    if not bootstrap_server:
        raise InputError("give a snapshot file or a bootstrap server", field="snapshot")
    from ..kafka.admin import snapshot_from_bootstrap

    return snapshot_from_bootstrap(bootstrap_server, command_config)


def load_snapshot(
    snapshot: str | Path | None = None,
    bootstrap_server: str | None = None,
    command_config: str | None = None,
    load: str | Path | None = None,
    note: Callable[[str], None] = _stderr_note,
) -> ClusterSnapshot:
    """`read_snapshot`, then the partition loads of `load` (if given) replace the snapshot's."""
    snap = read_snapshot(snapshot, bootstrap_server, command_config, note)
    if load:
        snap = with_loads(snap, read_loads(load))
    return snap


def read_loads(path: str | Path) -> dict[tuple[str, int], PartitionLoad]:
    """Per-partition load from the pipeline's partition_load.parquet or from a snapshot JSON."""
    p = Path(path)
    if not p.exists():
        raise InputError("file not found", source=str(p))
    if p.suffix.lower() == ".json":
        try:
            snap = parse_snapshot(io_util.read_structured(p))
        except InputError as exc:
            raise exc.in_file(str(p)) from None
        return {(x.topic, x.partition): x.load for x in snap.partitions if x.load is not None}
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(str(p))
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the user's input error
        raise InputError(f"cannot read Parquet: {exc}", source=str(p)) from None
    cols = set(table.column_names)
    for need in ("topic", "partition", "bytes_in", "bytes_out", "messages_in", "size_bytes"):
        if need not in cols:
            raise InputError("missing column", source=str(p), field=need)
    _check_load_schema(table, str(p))
    d = table.to_pydict()
    cpu = d.get("cpu") or [0.0] * table.num_rows
    out: dict[tuple[str, int], PartitionLoad] = {}
    for i in range(table.num_rows):
        if d["topic"][i] is None or d["partition"][i] is None:
            field = "topic" if d["topic"][i] is None else "partition"
            raise InputError(f"null in row {i:,}", source=str(p), field=field)
        vals = [d[k][i] for k in ("bytes_in", "bytes_out", "messages_in", "size_bytes")]
        for k, v in zip(
            ("bytes_in", "bytes_out", "messages_in", "size_bytes", "cpu"), [*vals, cpu[i]]
        ):
            if v is not None and not math.isfinite(v):
                raise InputError(
                    f"{v} in row {i:,} ({d['topic'][i]}-{d['partition'][i]}): a load must be a "
                    "finite number",
                    source=str(p),
                    field=k,
                )
        if any(v is None for v in vals):
            continue
        bytes_in, bytes_out, messages_in, size_bytes = map(float, vals)
        out[(d["topic"][i], int(d["partition"][i]))] = PartitionLoad(
            bytes_in, bytes_out, messages_in, size_bytes, cpu=float(cpu[i] or 0.0)
        )
    return out


def _check_load_schema(table, source: str) -> None:
    """Column types of a partition-load Parquet file: one error naming the column and its type."""
    import pyarrow as pa

    want = {
        "topic": (pa.types.is_string, "a string"),
        "partition": (pa.types.is_integer, "an integer"),
    }
    for c in ("bytes_in", "bytes_out", "messages_in", "size_bytes", "cpu"):
        want[c] = (lambda t: pa.types.is_integer(t) or pa.types.is_floating(t), "a number")
    for name, (ok, expected) in want.items():
        if name not in table.column_names:
            continue
        t = table.schema.field(name).type
        if not (ok(t) or (pa.types.is_null(t) and name not in ("topic", "partition"))):
            col = table.column(name).drop_null()
            example = f", e.g. {col[0].as_py()!r}" if len(col) else ""
            raise InputError(
                f"expected {expected}, got column type {t}{example}", source=source, field=name
            )


def read_capacity_file(path: str | Path) -> CapacityConfig:
    """A Cruise Control capacity file (capacity.json, capacityJBOD.json, capacityCores.json)."""
    try:
        doc = io_util.read_structured(path)
    except InputError as exc:
        raise exc.in_file(str(path)) from None
    try:
        return parse_capacity(doc)
    except InputError as exc:
        raise exc.in_file(str(path)) from None
