"""Log compaction of `__consumer_offsets` (pure): Kafka's cleaner rule, minus segments.

`compact(entries, now_ms, delete_retention_ms, dirty_offset, first_dirty_offset=0)`
follows LogCleaner.doClean with an offset map that never fills up:
- `dirty_offset` is Kafka's first *uncleanable* offset (the active segment's
  base offset): every record at or above it is kept as is, and it is not read
  into the offset map (None: the whole log is cleanable);
- the offset map holds each key's last offset in [`first_dirty_offset`,
  `dirty_offset`) - the dirty section since the previous cleaning (Kafka's
  cleaner checkpoint; 0 = all of it);
- a record below `dirty_offset` survives unless the map holds a newer offset
  for its key; so a record in the cleanable part is never dropped because of
  a newer one in the uncleanable part, and the clean section below
  `first_dirty_offset` (already deduplicated) is only thinned by the map;
  survivors keep their offsets (Kafka never renumbers);
- a surviving tombstone (null value) is kept while `now - its timestamp <
  delete.retention.ms`, so consumers reading the log see the delete, and is
  dropped afterwards. (Kafka counts the horizon from when the cleaner first
  saw the tombstone - KIP-534; the append timestamp is our stand-in.)
- With an empty dirty section the cleaner has nothing to map and cleans
  nothing: the log is returned unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

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


def compact(
    entries: Iterable[LogEntry],
    now_ms: int,
    delete_retention_ms: int = DEFAULT_DELETE_RETENTION_MS,
    dirty_offset: int | None = None,
    first_dirty_offset: int = 0,
) -> tuple[list[LogEntry], CompactionStats]:
    """The compacted log (in offset order) and what was removed."""
    log = list(entries)
    # LogCleaner.buildOffsetMap(log, firstDirtyOffset, firstUncleanableOffset): key -> last offset.
    offset_map: dict[bytes, int] = {}
    latest_offset = -1  # OffsetMap.latestOffset: the last offset read into the map
    for e in log:
        if e.offset >= first_dirty_offset and (dirty_offset is None or e.offset < dirty_offset):
            offset_map[e.key] = e.offset
            latest_offset = max(latest_offset, e.offset)
    out: list[LogEntry] = []
    superseded = dropped = 0
    for e in log:
        # shouldRetainRecord: past the map's last offset (here: the uncleanable part, or everything
        # when nothing was mapped) a record is kept untouched.
        if e.offset > latest_offset:
            out.append(e)
        elif offset_map.get(e.key, -1) > e.offset:
            superseded += 1
        elif e.is_tombstone and now_ms - e.timestamp_ms >= delete_retention_ms:
            dropped += 1
        else:
            out.append(e)
    return out, CompactionStats(len(log), len(out), superseded, dropped)
