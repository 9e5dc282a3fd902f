"""Per-partition progress: what was received, what completed, what to commit.

The committed offset is the lowest incomplete offset; completed offsets above
it travel in the commit metadata (`offset_map`). Offsets Kafka never delivers
(compaction holes, transaction markers) are never "incomplete": only received
records can pin the commit point. On assignment the map read back from the
committed metadata marks records to skip.

A restored offset leaves the map once the commit point passes it, but it is
refused by `receive` until the fetch passes it: with nothing received pending,
the commit point runs ahead of the fetch through restored completions, and
those records arrive later (a fetch batch that ended inside the restored map).

The map's size is needed after every completion (past 3/4 of the budget the
partition stops taking records), so it is bounded in O(1) from the highest
completed offset and the number of runs of completed offsets, both kept
incrementally; the map is encoded only when those bounds cannot decide.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from .budget import OFFSET_METADATA_MAX_BYTES, BudgetVerdict, judge, pause_threshold
from .offset_map import HEADER_LEN, b64_len, encode_offset_map, varint_len


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
    """Offsets of one assigned partition, from the committed offset on.

    Invariants (after every public call):
    - `_done` is the map: exactly the completed offsets above the lowest
      incomplete one (restored ones the commit point passes are pruned);
      `_runs` counts its maximal runs of consecutive offsets, `_max_done` is
      its maximum;
    - `_restored` (sorted) from index `_unfetched` on are the restored
      offsets at or above `_next`: `receive` refuses them whether or not they
      are still in the map; from index `_in_map` on, those not yet pruned;
    - every offset in [`_next`, `_floor`) is a restored completion, so the
      walk for the commit point starts at max(`_next`, `_floor`), and every
      restored offset from there on is still in `_done`.
    """

    __slots__ = (
        "committed",
        "_pending",
        "_done",
        "_restored",
        "_unfetched",
        "_in_map",
        "_floor",
        "_next",
        "_max_done",
        "_runs",
        "_version",
        "_cached",
        "max_metadata_bytes",
        "last_committed",
    )

    def __init__(
        self,
        committed: int,
        restored_completed: Iterable[int] = (),
        max_metadata_bytes: int = OFFSET_METADATA_MAX_BYTES,
    ) -> None:
        if committed < 0:
            raise ValueError(f"committed offset must be >= 0, got {committed}")
        self.committed = committed  # offset the group had committed at assignment
        self._pending: deque[int] = (
            deque()
        )  # received offsets, oldest first, not yet popped as done
        self._done: set[int] = set()
        self._runs = 0
        self._max_done = -1
        restored = sorted({o for o in restored_completed if o > committed})
        for o in restored:
            self._add_done(o)
        self._restored: list[int] = (
            restored  # refused until fetched past; pruned from the map once passed
        )
        self._unfetched = 0  # index of the first restored offset >= _next
        self._in_map = 0  # index of the first restored offset not pruned from the map
        self._next = committed  # one past the highest offset received (or the start)
        self._floor = committed  # [_next, _floor) are restored completions (see the invariants)
        self._version = 0
        self._cached: tuple[int, CommitPoint] | None = None
        self.max_metadata_bytes = max_metadata_bytes
        self.last_committed: CommitPoint | None = None

    # -- the completed set, with its run count ------------------------------
    def _add_done(self, o: int) -> None:
        done = self._done
        self._runs += 1 - ((o - 1) in done) - ((o + 1) in done)
        done.add(o)
        if o > self._max_done:
            self._max_done = o

    def _remove_done(self, o: int) -> None:
        done = self._done
        done.discard(o)
        self._runs -= 1 - ((o - 1) in done) - ((o + 1) in done)
        if not done:
            self._max_done = -1

    # -- records ----------------------------------------------------------
    def rewinds(self, offset: int) -> bool:
        """True when `offset` goes back past what this state can vouch for (a seek or an offset reset).

        An offset below the next expected one that is in the completed map is
        a record known done (skipping it is right); any other is not known
        done, and this state's view of the partition is stale.
        """
        return offset < self._next and offset not in self._done

    def receive(self, offset: int) -> bool:
        """Note a fetched record; False when it must not be processed (restored as completed).

        The caller checks `rewinds` first and rebuilds the state on a rewind;
        an offset below the next expected one is otherwise refused here.
        """
        if offset < self._next:
            return False
        self._next = offset + 1
        self._version += 1
        # at or past the fetch position only restored completions can be done, and every one the fetch has
        # not passed is in restored[_unfetched:] (complete() ignores offsets not received yet)
        known_done = False
        restored, i = self._restored, self._unfetched
        while (
            i < len(restored) and restored[i] <= offset
        ):  # the fetch passed these (skipped, or holes)
            known_done = known_done or restored[i] == offset
            i += 1
        self._unfetched = i
        if not known_done:
            self._pending.append(offset)
        self._prune()
        return not known_done

    def complete(self, offset: int) -> None:
        """A received record finished (succeeded, or given up on and dead-lettered).

        An offset this state never received, or one it already counts as done
        (a stale outcome from before a rewind), is ignored: marking it done
        could skip a record nobody ran, or put an offset below the commit
        point into the map.
        """
        if offset in self._done or offset >= self._next or offset < self.lowest_incomplete():
            return
        self._version += 1
        pending = self._pending
        if pending and pending[0] == offset:
            pending.popleft()
            while pending and pending[0] in self._done:
                self._remove_done(pending.popleft())
        else:
            self._add_done(offset)
        self._prune()

    def _prune(self) -> None:
        """Drop restored completions below the commit point from the map.

        Only from the map: one the fetch has not reached yet stays refused by
        `receive` (dropping it there would run a completed record again).
        """
        restored, i = self._restored, self._in_map
        if i < len(restored):
            low = self.lowest_incomplete()
            while i < len(restored) and restored[i] < low:
                if restored[i] in self._done:
                    self._remove_done(restored[i])
                i += 1
            self._in_map = i
        if restored and i == len(restored) == self._unfetched:
            self._restored, self._in_map, self._unfetched = [], 0, 0  # all passed: free the list

    @property
    def in_progress(self) -> int:
        """Received records not completed yet."""
        return sum(1 for o in self._pending if o not in self._done)

    def lowest_incomplete(self) -> int:
        """The offset to commit: first received record not done, else the next offset not known done.

        Nondecreasing. The walk over restored completions resumes where the
        last one stopped (`_floor`), so skipping a long restored run is linear.
        """
        if self._pending:
            return self._pending[0]
        x = max(self._next, self._floor)
        done = self._done
        while x in done:
            x += 1
        self._floor = x
        return x

    def completed_above(self) -> list[int]:
        self._prune()
        return sorted(self._done)

    # -- commits ----------------------------------------------------------
    def commit_point(self) -> CommitPoint:
        """Offset + metadata to commit now, judged against the metadata budget (cached per change)."""
        if self._cached is not None and self._cached[0] == self._version:
            return self._cached[1]
        low = self.lowest_incomplete()
        done_above = self.completed_above()
        metadata = encode_offset_map(low, done_above)
        verdict = judge(len(metadata), self.max_metadata_bytes)
        point = CommitPoint(
            low, "" if verdict is BudgetVerdict.DROP else metadata, verdict, len(done_above)
        )
        self._cached = (self._version, point)
        return point

    def map_len_bounds(self) -> tuple[int, int]:
        """(lower, upper) bounds of the metadata length, in O(1); equal when they decide it exactly."""
        if not self._done:
            return 0, 0
        low = self.lowest_incomplete()
        span = self._max_done - low  # relative offsets 0 .. span-1
        bitset_raw = HEADER_LEN + varint_len(span) + (span + 7) // 8
        runs = self._runs
        rle_lower = HEADER_LEN + 2 * runs
        if rle_lower >= bitset_raw:  # the bitset is chosen, and its length is exact
            exact = b64_len(bitset_raw)
            return exact, exact
        rle_upper = HEADER_LEN + 2 * runs * varint_len(span)
        return b64_len(rle_lower), b64_len(min(bitset_raw, rle_upper))

    def takes_new_records(self) -> bool:
        """False while the map is past 3/4 of the budget (O(1) bounds first, exact encoding if they cannot tell)."""
        lower, upper = self.map_len_bounds()
        threshold = pause_threshold(self.max_metadata_bytes)
        if upper <= threshold:
            return True
        if lower > threshold:
            return False
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
