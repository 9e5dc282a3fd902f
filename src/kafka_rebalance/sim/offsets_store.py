"""The simulator's view of the `__consumer_offsets` partition that holds its group.

Offset commits keyed by (group, topic, partition) and group metadata keyed by
group, kept compacted (last value per key), which is what a coordinator
taking over the partition ends up with after replaying it.
"""

from __future__ import annotations

from ..group.classic_group import ClassicGroupSnapshot
from ..model import TopicPartition


class SimOffsetsStore:
    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        # The compacted log: the last record per key. Kafka's cleaner gets there
        # eventually; recovery replaying the full log ends in the same state.
        self.offsets: dict[TopicPartition, tuple[int, int]] = {}  # tp -> (offset, commit time)
        self.group: tuple[ClassicGroupSnapshot, int] | None = None
        self.records_appended = 0

    def commit(self, tp: TopicPartition, offset: int, now_ms: int) -> None:
        self.offsets[tp] = (offset, now_ms)
        self.records_appended += 1

    def write_group(self, snapshot: ClassicGroupSnapshot, now_ms: int) -> None:
        self.group = (snapshot, now_ms)
        self.records_appended += 1

    def recover(self) -> tuple[ClassicGroupSnapshot | None, dict[TopicPartition, int]]:
        """What a coordinator loading the partition ends with: the last group metadata, the last offsets."""
        snap = self.group[0] if self.group is not None else None
        return snap, {tp: off for tp, (off, _) in self.offsets.items()}
