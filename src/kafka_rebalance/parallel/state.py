"""Per-partition progress: what was received, what completed, what to commit.

The committed offset is the lowest incomplete offset; completed offsets above
it travel in the commit metadata (`offset_map`). Offsets Kafka never delivers
(compaction holes, transaction markers) are never "incomplete": only received
records can pin the commit point. On assignment the map read back from the
committed metadata marks records to skip.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Iterable

from .budget import OFFSET_METADATA_MAX_BYTES, BudgetVerdict, judge, pause_threshold
from .offset_map import bitset_metadata_len, encode_offset_map


@dataclass(frozen=True, slots=True)
class CommitPoint:
    """What to commit for one partition: the offset, the map (maybe dropped), and the verdict."""

    offset: int
    metadata: str
    verdict: BudgetVerdict
    completed_above: int  # how many completed offsets the (undropped) map holds

    @property
    def map_dropped(self) -> bool:
        return self.verdict is BudgetVerdict.DROP


class PartitionState:
    """Offsets of one assigned partition, from the committed offset on."""

    __slots__ = ("committed", "_pending", "_done", "_next", "_max_done", "_version", "_cached",
                 "max_metadata_bytes", "last_committed")

    def __init__(self, committed: int, restored_completed: Iterable[int] = (),
                 max_metadata_bytes: int = OFFSET_METADATA_MAX_BYTES) -> None:
        if committed < 0:
            raise ValueError(f"committed offset must be >= 0, got {committed}")
        self.committed = committed              # offset the group had committed at assignment
        self._pending: deque[int] = deque()     # received offsets, oldest first, not yet popped as done
        self._done: set[int] = {o for o in restored_completed if o > committed}
        self._next = committed                  # one past the highest offset received (or the start)
        self._max_done = max(self._done, default=-1)
        self._version = 0
        self._cached: tuple[int, CommitPoint] | None = None
        self.max_metadata_bytes = max_metadata_bytes
        self.last_committed: CommitPoint | None = None

    # -- records ----------------------------------------------------------
    def receive(self, offset: int) -> bool:
        """Note a fetched record; False when it must not be processed (done before, or a replay)."""
        if offset < self._next:
            return False
        self._next = offset + 1
        self._version += 1
        if offset in self._done:
            return False
        self._pending.append(offset)
        return True

    def complete(self, offset: int) -> None:
        """A received record finished (succeeded, or given up on and dead-lettered)."""
        if offset in self._done:
            return
        self._done.add(offset)
        if offset > self._max_done:
            self._max_done = offset
        self._version += 1
        pending = self._pending
        while pending and pending[0] in self._done:
            self._done.discard(pending.popleft())

    @property
    def in_progress(self) -> int:
        """Received records not completed yet."""
        return sum(1 for o in self._pending if o not in self._done)

    def lowest_incomplete(self) -> int:
        """The offset to commit: first received record not done, else the next offset not known done."""
        if self._pending:
            return self._pending[0]
        x = self._next
        while x in self._done:
            x += 1
        return x

    def completed_above(self) -> list[int]:
        low = self.lowest_incomplete()
        stale = [o for o in self._done if o < low]
        for o in stale:  # restored completions the commit point has passed
            self._done.discard(o)
        return sorted(o for o in self._done if o > low)

    # -- commits ----------------------------------------------------------
    def commit_point(self) -> CommitPoint:
        """Offset + metadata to commit now, judged against the metadata budget (cached per change)."""
        if self._cached is not None and self._cached[0] == self._version:
            return self._cached[1]
        low = self.lowest_incomplete()
        done_above = self.completed_above()
        metadata = encode_offset_map(low, done_above)
        verdict = judge(len(metadata), self.max_metadata_bytes)
        point = CommitPoint(low, "" if verdict is BudgetVerdict.DROP else metadata, verdict, len(done_above))
        self._cached = (self._version, point)
        return point

    def takes_new_records(self) -> bool:
        """False while the map is past 3/4 of the budget (cheap bound first, exact encoding if close)."""
        low = self.lowest_incomplete()
        span = self._max_done - low
        if span <= 0 or bitset_metadata_len(span) <= pause_threshold(self.max_metadata_bytes):
            return True
        return self.commit_point().verdict is BudgetVerdict.OK

    def start_bound(self) -> int | None:
        """None while the map is within 3/4 of its budget; else only records below this offset may start.

        Those fill holes in the map (the lowest incomplete record among them),
        so running them never grows it; records above would.
        """
        return None if self.takes_new_records() else self._max_done

    def needs_commit(self) -> bool:
        """True when the commit point moved since the last commit."""
        point = self.commit_point()
        last = self.last_committed
        return last is None or (point.offset, point.metadata) != (last.offset, last.metadata)

    def committed_now(self, point: CommitPoint) -> None:
        self.last_committed = point
