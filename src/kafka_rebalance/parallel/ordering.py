"""Which buffered records may run now, under the ordering the user asked for.

Records are grouped into shards; a shard runs one record at a time, oldest
first, so records of a shard complete in offset order:

- `key`: one shard per (topic, partition, key) — same key in order (default);
  records without a key share one shard per partition;
- `partition`: one shard per partition — the classic consumer's order;
- `unordered`: one shard per record — anything may run.

A failed record stays at the head of its shard until its retry time, so it
holds back only its own key (or partition, in partition mode); every other
shard keeps running. Pure: time is a parameter.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from enum import Enum

TP = tuple[str, int]


class Ordering(str, Enum):
    KEY = "key"
    PARTITION = "partition"
    UNORDERED = "unordered"


@dataclass(frozen=True, slots=True)
class WorkItem:
    """One record as the scheduler sees it; `payload` is opaque (the client's message)."""

    topic: str
    partition: int
    offset: int
    key: bytes | str | None = None
    payload: object = None

    @property
    def tp(self) -> TP:
        return (self.topic, self.partition)


def shard_key(item: WorkItem, ordering: Ordering) -> Hashable:
    if ordering is Ordering.KEY:
        return (item.topic, item.partition, item.key)
    if ordering is Ordering.PARTITION:
        return (item.topic, item.partition)
    return (item.topic, item.partition, item.offset)


class _Shard:
    __slots__ = ("tp", "queue", "busy", "not_before")

    def __init__(self, tp: TP) -> None:
        self.tp = tp
        self.queue: deque[WorkItem] = deque()
        self.busy = False  # its head is running
        self.not_before = 0.0  # its head waits for a retry until then


class Scheduler:
    """Buffered records by shard; hands out runnable ones and takes back outcomes."""

    def __init__(self, ordering: Ordering | str = Ordering.KEY) -> None:
        self.ordering = Ordering(ordering)
        self._shards: dict[Hashable, _Shard] = {}
        self._ready: dict[
            TP, dict[Hashable, None]
        ] = {}  # per partition, shards whose head may start (FIFO)
        self._tp_shards: dict[TP, set[Hashable]] = {}
        self._delayed: list[tuple[float, int, Hashable]] = []
        self._seq = 0
        self._rotation = 0
        self.buffered = 0  # records held (waiting, delayed or running)
        self._tp_buffered: dict[
            TP, int
        ] = {}  # the same, per partition (backpressure reads it every turn)
        self.running = 0

    # -- intake -------------------------------------------------------------
    def add(self, item: WorkItem) -> None:
        """Buffer a record; records of one partition must arrive in offset order."""
        key = shard_key(item, self.ordering)
        shard = self._shards.get(key)
        if shard is None:
            shard = self._shards[key] = _Shard(item.tp)
            self._tp_shards.setdefault(item.tp, set()).add(key)
        shard.queue.append(item)
        self.buffered += 1
        self._tp_buffered[item.tp] = self._tp_buffered.get(item.tp, 0) + 1
        if len(shard.queue) == 1 and not shard.busy:
            self._ready.setdefault(item.tp, {})[key] = None

    # -- dispatch -----------------------------------------------------------
    def _promote(self, now: float) -> None:
        delayed = self._delayed
        while delayed and delayed[0][0] <= now:
            _, _, key = heapq.heappop(delayed)
            shard = self._shards.get(key)
            if shard is not None and not shard.busy and shard.queue and shard.not_before <= now:
                self._ready.setdefault(shard.tp, {})[key] = None

    def next_retry_at(self) -> float | None:
        """When the earliest delayed record becomes runnable (None: nothing delayed)."""
        return self._delayed[0][0] if self._delayed else None

    def take(
        self, limit: int, now: float, bound: Callable[[TP], int | None] | None = None
    ) -> list[WorkItem]:
        """Up to `limit` records that may start now, partitions taken in rotation.

        `bound(tp)` limits a partition to records below an offset (None: no
        limit). A partition whose commit metadata is near its budget may only
        run records below its highest completed offset: they fill holes in
        the map (shrinking it) instead of extending it. The rest stay ready.
        """
        self._promote(now)
        out: list[WorkItem] = []
        if limit <= 0:
            return out
        tps = [tp for tp, ready in self._ready.items() if ready]
        if not tps:
            return out
        self._rotation = (self._rotation + 1) % len(tps)
        tps = tps[self._rotation :] + tps[: self._rotation]
        limits = {tp: bound(tp) for tp in tps} if bound is not None else {}
        while len(out) < limit and tps:
            still = []
            for tp in tps:
                ready = self._ready[tp]
                if not ready:
                    continue
                below = limits.get(tp)
                if below is None:
                    key = next(iter(ready))
                else:
                    key = next((k for k in ready if self._shards[k].queue[0].offset < below), None)
                    if key is None:
                        continue
                del ready[key]
                shard = self._shards[key]
                shard.busy = True
                out.append(shard.queue[0])
                if ready:
                    still.append(tp)
                if len(out) >= limit:
                    break
            tps = still
        self.running += len(out)
        return out

    # -- outcomes -----------------------------------------------------------
    def _shard_of_running(self, item: WorkItem) -> tuple[Hashable, _Shard] | None:
        key = shard_key(item, self.ordering)
        shard = self._shards.get(key)
        if shard is None or not shard.busy or not shard.queue or shard.queue[0] is not item:
            return None  # its partition was removed meanwhile
        return key, shard

    def complete(self, item: WorkItem) -> bool:
        """A running record is done (success or dead-lettered); its shard's next record becomes ready."""
        found = self._shard_of_running(item)
        if found is None:
            return False
        key, shard = found
        shard.queue.popleft()
        shard.busy = False
        self.buffered -= 1
        self._tp_buffered[shard.tp] -= 1
        self.running -= 1
        if shard.queue:
            self._ready.setdefault(shard.tp, {})[key] = None
        else:
            del self._shards[key]
            self._tp_shards[shard.tp].discard(key)
        return True

    def retry(self, item: WorkItem, not_before: float) -> bool:
        """A running record failed and will run again at `not_before`, still ahead of its shard."""
        found = self._shard_of_running(item)
        if found is None:
            return False
        key, shard = found
        shard.busy = False
        shard.not_before = not_before
        self.running -= 1
        self._seq += 1
        heapq.heappush(self._delayed, (not_before, self._seq, key))
        return True

    # -- partitions ---------------------------------------------------------
    def remove_partition(self, tp: TP) -> list[WorkItem]:
        """Forget a revoked partition; returns its records that were running (their outcome is ignored)."""
        running: list[WorkItem] = []
        for key in self._tp_shards.pop(tp, set()):
            shard = self._shards.pop(key)
            if shard.busy:
                running.append(shard.queue[0])
                self.running -= 1
            self.buffered -= len(shard.queue)
        self._ready.pop(tp, None)
        self._tp_buffered.pop(tp, None)
        return running

    def buffered_in(self, tp: TP) -> int:
        """Records of `tp` held (waiting, delayed or running), in O(1)."""
        return self._tp_buffered.get(tp, 0)

    def partitions(self) -> Iterable[TP]:
        return [tp for tp, keys in self._tp_shards.items() if keys]
