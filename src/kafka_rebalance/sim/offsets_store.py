"""The simulator's view of the `__consumer_offsets` partition that holds its group.

An append-only log of (key, value) records, as Kafka keeps it: offset commits
keyed by (group, topic, partition) and group metadata keyed by group.
Recovery replays the log, keeping the last value per key, which is what a
coordinator taking over the partition does before it serves the group.
"""

from __future__ import annotations

from typing import Any

from ..group.classic_group import ClassicGroupSnapshot
from ..model import TopicPartition


class SimOffsetsStore:
    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.log: list[tuple[tuple, Any, int]] = []  # (key, value, append time)
        self._compact_every = 100_000

    def commit(self, tp: TopicPartition, offset: int, now_ms: int) -> None:
        self.log.append((("offset", self.group_id, tp.topic, tp.partition), offset, now_ms))
        if len(self.log) >= self._compact_every:
            self.compact()

    def write_group(self, snapshot: ClassicGroupSnapshot, now_ms: int) -> None:
        self.log.append((("group", self.group_id), snapshot, now_ms))

    def compact(self) -> None:
        """Keep the last record per key (log compaction), in the order they were last written."""
        last: dict[tuple, tuple] = {}
        for rec in self.log:
            last.pop(rec[0], None)
            last[rec[0]] = rec
        self.log = list(last.values())
        self._compact_every = max(100_000, 2 * len(self.log))

    def recover(self) -> tuple[ClassicGroupSnapshot | None, dict[TopicPartition, int]]:
        snap = None
        offsets: dict[TopicPartition, int] = {}
        for key, value, _ in self.log:
            if key[0] == "group":
                snap = value
            else:
                offsets[TopicPartition(key[2], key[3])] = value
        return snap, offsets
