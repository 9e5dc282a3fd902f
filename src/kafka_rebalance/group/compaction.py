"""Log compaction of `__consumer_offsets` (pure): Kafka's cleaner rule, minus segments.

`compact(entries, now_ms, delete_retention_ms, dirty_offset)`:
- every record at or above `dirty_offset` (the active, not yet cleanable part
  of the log) is kept as is;
- below it, only the last record of each key survives, at its original offset
  (offsets are never renumbered, as in Kafka);
- a surviving tombstone (null value) is kept while `now - its timestamp <
  delete.retention.ms`, so consumers reading the log see the delete, and is
  dropped afterwards. (Kafka counts the horizon from when the cleaner first
  saw the tombstone - KIP-534; the append timestamp is our stand-in.)
A key whose latest record in the clean part is superseded in the dirty part is
dropped from the clean part too, as the cleaner's offset map covers both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

DEFAULT_DELETE_RETENTION_MS = 86_400_000  # delete.retention.ms: 1 day


@dataclass(frozen=True, slots=True)
class LogEntry:
    offset: int
    key: bytes
    value: bytes | None
    timestamp_ms: int

    @property
    def is_tombstone(self) -> bool:
        return self.value is None


@dataclass(frozen=True, slots=True)
class CompactionStats:
    before: int
    after: int
    superseded: int
    tombstones_dropped: int


def compact(entries: Iterable[LogEntry], now_ms: int, delete_retention_ms: int = DEFAULT_DELETE_RETENTION_MS,
            dirty_offset: int | None = None) -> tuple[list[LogEntry], CompactionStats]:
    """The compacted log (in offset order) and what was removed."""
    log = list(entries)
    latest: dict[bytes, int] = {}
    for e in log:
        latest[e.key] = e.offset
    out: list[LogEntry] = []
    superseded = dropped = 0
    for e in log:
        if dirty_offset is not None and e.offset >= dirty_offset:
            out.append(e)
        elif latest[e.key] != e.offset:
            superseded += 1
        elif e.is_tombstone and now_ms - e.timestamp_ms >= delete_retention_ms:
            dropped += 1
        else:
            out.append(e)
    return out, CompactionStats(len(log), len(out), superseded, dropped)
