"""A crash-safe, compacted `__consumer_offsets` log on disk (shell around group/compaction).

File layout: an 8-byte header `b"KRLOG\\x00\\x01\\n"`, then one frame per record:

    u32 body_length | u32 crc32(body) | body
    body = i64 offset | i64 timestamp_ms | i32 key_length | key | i32 value_length (-1 = tombstone) | value

Integers are big-endian. A frame is written with one `write`, flushed, and
(with `fsync=True`) fsynced before `append` returns, so an acknowledged record
survives a crash. A crash mid-write leaves a torn tail: on open the file is
scanned and cut at the first frame that is short or fails its CRC (bytes after
it cannot be trusted: its length field may itself be garbage); `recovery`
says how many bytes were dropped and why. Compaction writes the compacted log
to a temporary file, fsyncs it, renames it over the log and fsyncs the
directory: a crash leaves either the old or the new log, never a mix.

    store = OffsetsLogStore.open(path)
    store.append_record(record, timestamp_ms)        # group.records.OffsetsRecord
    store.append(key, value, timestamp_ms)           # raw bytes
    store.compact(now_ms, delete_retention_ms)       # -> CompactionStats
    rebuilt = store.rebuild()                         # group.offsets.Rebuilt after a failover
    store.append_consumer_group_records(recs, ts)     # KIP-848 records (consumer_group_records.diff_records)
    groups = store.rebuild_consumer_groups(topics)    # KIP-848 groups after a failover
    for entry in store.entries(): ...                 # compaction.LogEntry
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..group.compaction import DEFAULT_DELETE_RETENTION_MS, CompactionStats, LogEntry, compact
from ..group.consumer_group_model import ConsumerGroup
from ..group.consumer_group_records import ConsumerGroupRecord, decode_any, replay_consumer_groups
from ..group.offsets import Rebuilt, rebuild_from_records
from ..group.records import (
    GroupMetadataRecord,
    OffsetCommitRecord,
    OffsetsRecord,
    RecordDecodeError,
    encode_record,
)
from ..io_util import fsync_dir
from ..model import TopicMetadata

MAGIC = b"KRLOG\x00\x01\n"
_FRAME = struct.Struct(">II")
_BODY_HEAD = struct.Struct(">qqi")
_I32 = struct.Struct(">i")
MAX_FRAME = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Recovery:
    records: int
    truncated_bytes: int
    reason: str  # "" when the file was clean


def _frame(entry: LogEntry) -> bytes:
    value = b"" if entry.value is None else entry.value
    body = (
        _BODY_HEAD.pack(entry.offset, entry.timestamp_ms, len(entry.key))
        + entry.key
        + _I32.pack(-1 if entry.value is None else len(value))
        + value
    )
    return _FRAME.pack(len(body), zlib.crc32(body)) + body


def _parse_body(body: bytes) -> LogEntry | None:
    if len(body) < _BODY_HEAD.size:
        return None
    offset, ts, klen = _BODY_HEAD.unpack_from(body)
    pos = _BODY_HEAD.size
    if klen < 0 or pos + klen + 4 > len(body):
        return None
    key = body[pos : pos + klen]
    pos += klen
    (vlen,) = _I32.unpack_from(body, pos)
    pos += 4
    if vlen == -1:
        return LogEntry(offset, key, None, ts) if pos == len(body) else None
    if vlen < 0 or pos + vlen != len(body):
        return None
    return LogEntry(offset, key, body[pos : pos + vlen], ts)


def scan(data: bytes) -> tuple[list[LogEntry], int, str]:
    """Entries of a log image, the length of its valid prefix, and why the rest is invalid."""
    if len(data) < len(MAGIC):
        return [], 0, "missing header" if data else ""
    if data[: len(MAGIC)] != MAGIC:
        raise ValueError("not an offsets log (bad header)")
    pos = len(MAGIC)
    out: list[LogEntry] = []
    while pos < len(data):
        if pos + _FRAME.size > len(data):
            return out, pos, "torn frame header"
        length, crc = _FRAME.unpack_from(data, pos)
        start = pos + _FRAME.size
        if length > MAX_FRAME or start + length > len(data):
            return out, pos, "torn frame body"
        body = data[start : start + length]
        if zlib.crc32(body) != crc:
            return out, pos, "crc mismatch"
        entry = _parse_body(body)
        if entry is None:
            return out, pos, "malformed body"
        if out and entry.offset <= out[-1].offset:
            return out, pos, "offsets not increasing"
        out.append(entry)
        pos = start + length
    return out, pos, ""


class OffsetsLogStore:
    """Append-only log file with per-record CRC, torn-tail recovery and atomic compaction."""

    def __init__(
        self, path: Path, entries: list[LogEntry], recovery: Recovery, fsync: bool
    ) -> None:
        self.path = path
        self.fsync = fsync
        self.recovery = recovery
        self._entries = entries
        self.next_offset = entries[-1].offset + 1 if entries else 0
        self._fh = open(path, "ab")

    @classmethod
    def open(cls, path: str | os.PathLike, *, fsync: bool = True) -> OffsetsLogStore:
        """Open (creating if absent) and recover: a torn or corrupt tail is truncated away."""
        p = Path(path)
        leftover = p.with_name(p.name + ".compacting")
        if leftover.exists():  # a compaction that crashed before its rename: the old log is intact
            leftover.unlink()
        if not p.exists() or p.stat().st_size == 0:
            p.parent.mkdir(parents=True, exist_ok=True)
            with open(p, "wb") as fh:
                fh.write(MAGIC)
                fh.flush()
                os.fsync(fh.fileno())
            fsync_dir(p.parent)
            return cls(p, [], Recovery(0, 0, ""), fsync)
        data = p.read_bytes()
        entries, valid, reason = scan(data)
        if valid == 0:  # not even a header survived: start over
            with open(p, "wb") as fh:
                fh.write(MAGIC)
                fh.flush()
                os.fsync(fh.fileno())
            return cls(p, [], Recovery(0, len(data), reason), fsync)
        if valid < len(data):
            with open(p, "r+b") as fh:
                fh.truncate(valid)
                fh.flush()
                os.fsync(fh.fileno())
        return cls(p, entries, Recovery(len(entries), len(data) - valid, reason), fsync)

    # --- writing -------------------------------------------------------------------------

    def append(self, key: bytes, value: bytes | None, timestamp_ms: int) -> int:
        """Append one record durably; returns its offset."""
        return self.append_many([(key, value, timestamp_ms)])[0]

    def append_many(self, items: Iterable[tuple[bytes, bytes | None, int]]) -> list[int]:
        """Append several records with one flush/fsync (a batch, as the coordinator writes one)."""
        entries = []
        for key, value, ts in items:
            entries.append(
                LogEntry(self.next_offset, bytes(key), None if value is None else bytes(value), ts)
            )
            self.next_offset += 1
        if not entries:
            return []
        self._fh.write(b"".join(_frame(e) for e in entries))
        self._fh.flush()
        if self.fsync:
            os.fsync(self._fh.fileno())
        self._entries.extend(entries)
        return [e.offset for e in entries]

    def append_record(self, record: OffsetsRecord, timestamp_ms: int) -> int:
        key, value = encode_record(record)
        return self.append(key, value, timestamp_ms)

    def append_records(self, records: Iterable[OffsetsRecord], timestamp_ms: int) -> list[int]:
        return self.append_many((*encode_record(r), timestamp_ms) for r in records)

    # --- reading -------------------------------------------------------------------------

    def entries(self) -> Iterator[LogEntry]:
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def records(self) -> Iterator[tuple[LogEntry, OffsetsRecord | ConsumerGroupRecord | None, str]]:
        """Each entry with its decoded record, or None and the reason it could not be decoded."""
        for e in self._entries:
            try:
                yield e, decode_any(e.key, e.value), ""
            except RecordDecodeError as exc:
                yield e, None, str(exc)

    def rebuild(self) -> Rebuilt:
        """Classic groups and all offsets as a coordinator loading this log rebuilds them
        (undecodable records skipped)."""
        return rebuild_from_records(
            r
            for _, r, _ in self.records()
            if isinstance(r, (OffsetCommitRecord, GroupMetadataRecord))
        )

    def rebuild_consumer_groups(
        self, topics: Mapping[str, TopicMetadata]
    ) -> dict[str, ConsumerGroup]:
        """KIP-848 groups from their records (then arm timers with consumer_group.on_loaded)."""
        return replay_consumer_groups(
            (r for _, r, _ in self.records() if isinstance(r, ConsumerGroupRecord)), topics
        )

    def append_consumer_group_records(
        self, records: Iterable[ConsumerGroupRecord], timestamp_ms: int
    ) -> list[int]:
        from ..group.consumer_group_records import encode_consumer_group_record

        return self.append_many((*encode_consumer_group_record(r), timestamp_ms) for r in records)

    # --- compaction ----------------------------------------------------------------------

    def compact(
        self,
        now_ms: int,
        delete_retention_ms: int = DEFAULT_DELETE_RETENTION_MS,
        dirty_offset: int | None = None,
    ) -> CompactionStats:
        """Rewrite the log compacted: temp file, fsync, rename over the log, fsync the directory."""
        # The last record stays (like Kafka's active segment) so the log end offset survives a reopen.
        last = self.next_offset - 1
        dirty = last if dirty_offset is None else min(dirty_offset, last)
        kept, stats = compact(self._entries, now_ms, delete_retention_ms, dirty)
        tmp = self.path.with_name(self.path.name + ".compacting")
        with open(tmp, "wb") as fh:
            fh.write(MAGIC)
            fh.write(b"".join(_frame(e) for e in kept))
            fh.flush()
            os.fsync(fh.fileno())
        self._fh.close()
        os.replace(tmp, self.path)
        fsync_dir(self.path.parent)
        self._entries = kept
        self._fh = open(self.path, "ab")
        return stats

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> OffsetsLogStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
