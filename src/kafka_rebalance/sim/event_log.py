"""The simulator's event log on disk: JSON lines, or Parquet with a fixed schema (what the Spark pipeline reads)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import io_util
from .api import EVENT_COLUMNS


def write_events(events: Sequence[dict[str, Any]], path: str | Path) -> None:
    """Write the event log atomically: `.jsonl` as JSON lines, anything else as Parquet."""
    p = Path(path)
    if p.suffix == ".jsonl":
        io_util.atomic_write_text(
            p, "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events)
        )
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [
            ("ts_ms", pa.int64()),
            ("group", pa.string()),
            ("member", pa.string()),
            ("kind", pa.string()),
            ("generation", pa.int32()),
            ("partitions", pa.list_(pa.string())),
            ("detail", pa.string()),
        ]
    )
    table = pa.table({c: [e[c] for e in events] for c in EVENT_COLUMNS}, schema=schema)
    # a temporary the next run can tell is a dead run's (io_util), renamed once whole
    io_util.write_file_with(p, lambda tmp: pq.write_table(table, tmp))
