"""Burrow's consumer lag evaluation, exactly as Burrow decides it (pure, no Spark).

Source: linkedin/Burrow at ced55ba (core/internal/evaluator/caching.go and
core/internal/storage/inmemory.go). Per group and partition Burrow keeps a
ring of the last `intervals` (10) commits, each stored with the lag against
the newest broker offset known when it arrived, and a ring of the last 10
broker (log-end) offsets. A partition is then:

- OK when its current lag is within `allowed_lag`, or none of the rules fire;
- STOP when the time since the last commit exceeds the span of the window,
  unless a recent broker offset shows it was caught up;
- REWIND when a commit went backwards and has not recovered yet;
- when the lag was never zero in the window: STALL if every commit has the
  same offset, WARN if the lag never decreased.

A group takes the worst partition status, with STOP, STALL and REWIND
reported as ERR for the group (`StatusError`).

Expiry is per group, not per partition: Burrow keeps one `lastCommit` for
the group, and once no partition of the group has had a commit for
expire-group (7 days) the whole group is purged; until then every partition
is evaluated, however old its own last commit (see `group_purges`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from ..errors import InputError


class Status(IntEnum):
    """Burrow's StatusConstant, ordered from least to most severe."""

    NOTFOUND = 0
    OK = 1
    WARN = 2
    ERR = 3
    STOP = 4
    STALL = 5
    REWIND = 6


@dataclass(frozen=True)
class ConsumerOffset:
    """One stored commit: Burrow's protocol.ConsumerOffset (timestamp in ms, lag None when unknown)."""

    offset: int
    timestamp: int
    lag: int | None
    order: int = 0


@dataclass(frozen=True)
class BurrowConfig:
    intervals: int = 10  # storage.intervals
    min_distance_s: int = 0  # storage.min-distance
    expire_group_s: int = 604_800  # storage.expire-group
    minimum_complete: float = 0.0  # evaluator.minimum-complete
    allowed_lag: int = 0  # evaluator.allowed-lag

    def check(self) -> None:
        """Burrow's own bounds: a ring needs a slot, minimum-complete is a fraction, lags are counts."""
        if self.intervals < 1:
            raise InputError(f"must be >= 1, got {self.intervals}", field="--intervals")
        if self.min_distance_s < 0:
            raise InputError(
                f"must be >= 0 (seconds), got {self.min_distance_s}", field="--min-distance"
            )
        if self.expire_group_s < 1:
            raise InputError(
                f"must be >= 1 (seconds), got {self.expire_group_s}", field="--expire-group"
            )
        if not 0.0 <= self.minimum_complete <= 1.0:  # NaN fails the comparison too
            raise InputError(
                f"must be a fraction between 0 and 1, got {self.minimum_complete}",
                field="--minimum-complete",
            )
        if self.allowed_lag < 0:
            raise InputError(
                f"must be >= 0 (messages), got {self.allowed_lag}", field="--allowed-lag"
            )


@dataclass(frozen=True)
class PartitionStatus:
    status: Status
    current_lag: int
    complete: float
    start: ConsumerOffset | None = None
    end: ConsumerOffset | None = None


# ---- the rules (caching.go) -------------------------------------------------


def is_lag_always_not_zero(offsets: Sequence[ConsumerOffset], allowed_lag: int) -> bool:
    """Rule 1: if the lag was ever (within allowed lag) zero in the window, the period is OK."""
    return not any(o.lag is not None and o.lag <= allowed_lag for o in offsets)


def check_if_offsets_rewind(offsets: Sequence[ConsumerOffset]) -> int:
    """Rule 2: index of the first commit lower than the one before it, or -1."""
    for i in range(1, len(offsets)):
        if offsets[i].offset < offsets[i - 1].offset:
            return i
    return -1


def check_if_rewind_recovered(offsets: Sequence[ConsumerOffset], reset_index: int) -> bool:
    """Rule 2, part 2: a later commit reached the offset from before the rewind."""
    previous = offsets[reset_index - 1].offset
    return any(o.offset >= previous for o in offsets[reset_index:])


def check_if_offsets_stopped(offsets: Sequence[ConsumerOffset], now_s: int) -> bool:
    """Rule 3: time since the last commit exceeds the time the window spans."""
    first, last = offsets[0].timestamp, offsets[-1].timestamp
    return (now_s * 1000 - last) > (last - first)


def check_if_offsets_stalled(offsets: Sequence[ConsumerOffset]) -> bool:
    """Rule 4: every commit in the window has the same offset."""
    return all(offsets[i].offset == offsets[i - 1].offset for i in range(1, len(offsets)))


def check_if_lag_not_decreasing(offsets: Sequence[ConsumerOffset]) -> bool:
    """Rule 5: the lag never went down from one known value to the next."""
    last = None
    for o in offsets:
        if o.lag is not None:
            if last is not None and o.lag < last:
                return False
            last = o.lag
    return True


def check_if_recent_lag_zero(
    offsets: Sequence[ConsumerOffset], broker_offsets: Sequence[int]
) -> bool:
    """Some stored broker offset is at or below the last commit: recently caught up."""
    last = offsets[-1].offset
    return any(b <= last for b in broker_offsets)


def calculate_partition_status(
    offsets: Sequence[ConsumerOffset],
    broker_offsets: Sequence[int],
    current_lag: int,
    now_s: int,
    allowed_lag: int = 0,
) -> Status:
    if current_lag > allowed_lag:
        if check_if_offsets_stopped(offsets, now_s) and not check_if_recent_lag_zero(
            offsets, broker_offsets
        ):
            return Status.STOP
        rewind = check_if_offsets_rewind(offsets)
        if rewind > 0 and not check_if_rewind_recovered(offsets, rewind):
            return Status.REWIND
        if is_lag_always_not_zero(offsets, allowed_lag):
            if check_if_offsets_stalled(offsets):
                return Status.STALL
            if check_if_lag_not_decreasing(offsets):
                return Status.WARN
    return Status.OK


def evaluate_partition(
    ring: Sequence[ConsumerOffset | None],
    broker_offsets: Sequence[int],
    current_lag: int,
    now_s: int,
    minimum_complete: float = 0.0,
    allowed_lag: int = 0,
) -> PartitionStatus:
    """evaluatePartitionStatus: `ring` is the commit ring oldest first, None for empty slots."""
    if len(ring) == 0:
        return PartitionStatus(Status.OK, current_lag, 0.0)
    first = len(ring) - 1
    for i, o in enumerate(ring):
        if o is not None:
            first = i
            break
    offsets = [o for o in ring[first:] if o is not None]
    complete = len(offsets) / len(ring) if len(offsets) < len(ring) else 1.0
    if not offsets:
        return PartitionStatus(Status.OK, current_lag, complete)
    status = Status.OK
    if complete >= minimum_complete:
        status = calculate_partition_status(
            offsets, broker_offsets, current_lag, now_s, allowed_lag
        )
    return PartitionStatus(status, current_lag, complete, offsets[0], offsets[-1])


def group_status(partitions: Iterable[PartitionStatus]) -> tuple[Status, float, int]:
    """evaluateConsumerStatus: (worst status capped at ERR, fraction of complete partitions, total lag)."""
    status, total, complete, lag = Status.OK, 0, 0, 0
    for p in partitions:
        total += 1
        lag += p.current_lag
        if p.status > status:
            status = Status.ERR if p.status > Status.ERR else p.status
        if p.complete == 1.0:
            complete += 1
    return status, (complete / total if total else 0.0), lag


# ---- storage (inmemory.go), replayed in time order ---------------------------


@dataclass
class PartitionStore:
    """Burrow's in-memory state for one (group, topic, partition) plus its broker offset ring."""

    config: BurrowConfig = field(default_factory=BurrowConfig)
    commits: deque = field(default_factory=deque)
    broker: deque = field(default_factory=deque)
    born_ms: int | None = None  # arrival of the commit that created this state (a purge deletes it)

    def add_broker_offset(self, offset: int) -> None:
        self.broker.append(int(offset))
        while len(self.broker) > self.config.intervals:
            self.broker.popleft()

    def add_commit(
        self, offset: int, timestamp_ms: int, order: int, now_ms: int | None = None
    ) -> bool:
        """addConsumerOffset for commits arriving in order; False when Burrow drops it."""
        if (
            now_ms is not None
            and timestamp_ms < (now_ms // 1000 - self.config.expire_group_s) * 1000
        ):
            return False  # old offset
        if not self.broker:
            return False  # no broker offset known yet for this partition
        if self.commits and self.commits[-1].order >= order:
            return False  # backfill / duplicate order: replayed input is in order, keep the first
        leo = self.broker[-1]
        lag = leo - offset if leo > offset else 0
        if self.born_ms is None:
            self.born_ms = timestamp_ms
        if self.commits:
            prev = self.commits[-1]
            if timestamp_ms - prev.timestamp < self.config.min_distance_s * 1000:
                # mergeFrequentCommitIntoPrevious: replace the previous, keep its timestamp
                self.commits[-1] = ConsumerOffset(offset, prev.timestamp, lag, order)
                return True
        self.commits.append(ConsumerOffset(offset, timestamp_ms, lag, order))
        while len(self.commits) > self.config.intervals:
            self.commits.popleft()
        return True

    def ring(self) -> list[ConsumerOffset | None]:
        pad = self.config.intervals - len(self.commits)
        return [None] * pad + list(self.commits)

    def current_lag(self) -> int:
        if not self.commits or not self.broker:
            return 0
        leo, last = self.broker[-1], self.commits[-1].offset
        return 0 if leo < last else leo - last

    def evaluate(self, now_ms: int) -> PartitionStatus:
        return evaluate_partition(
            self.ring(),
            list(self.broker),
            self.current_lag(),
            now_ms // 1000,
            self.config.minimum_complete,
            self.config.allowed_lag,
        )


def purge_moment_ms(last_commit_ms: int, expire_group_s: int) -> int:
    """The first instant at which fetchConsumer purges a group whose last commit is `last_commit_ms`.

    fetchConsumer deletes the whole group when `(now_s - expire_group) * 1000 > lastCommit`,
    `now_s` whole seconds; the smallest such now in ms is returned.
    """
    return (last_commit_ms // 1000 + expire_group_s + 1) * 1000


def group_purges(commit_ts_ms: Sequence[int], expire_group_s: int, end_ms: int) -> list[int]:
    """When Burrow purges a group, given the times of all its stored commits on every partition.

    Burrow keeps one `lastCommit` per group (consumerGroup.lastCommit in inmemory.go), set by
    every commit it appends on any of the group's partitions, and fetchConsumer purges the
    whole group, every partition, once that is older than expire-group. A partition whose own
    last commit is old stays while the group commits elsewhere. The evaluator is taken to look
    at every group continuously (the notifier's interval is seconds against a 7-day expiry), so
    a purge happens in every gap between consecutive commits longer than expire-group, and at
    `end_ms` if the last commit is that old then. Returns the purge instants <= end_ms, sorted.
    """
    ts = sorted(commit_ts_ms)
    purges = []
    for i, c in enumerate(ts):
        p = purge_moment_ms(c, expire_group_s)
        if p > end_ms:
            continue
        if i + 1 == len(ts) or p <= ts[i + 1]:
            purges.append(p)
    return purges
