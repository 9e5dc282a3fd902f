"""Partitions as the simulator sees them: what was produced, processed and committed.

Production is modelled in closed form (a topic's rate spread evenly over its
partitions: log-end offset = base + rate * elapsed, integer-exact), so no
event is spent per record. Processing is tracked per record but stored as
disjoint offset intervals per partition: duplicates and losses are exact
counts, memory stays proportional to the number of gaps and replays.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from math import gcd

import numpy as np

from ..fields import INT64_MAX
from ..model import TopicPartition


class ProcessedOffsets:
    """Offsets processed at least once, as sorted disjoint half-open intervals."""

    __slots__ = ("starts", "ends")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def add(self, a: int, b: int) -> int:
        """Record [a, b) as processed; return how many of them had been processed before."""
        if b <= a:
            return 0
        starts, ends = self.starts, self.ends
        if not starts or a > ends[-1]:
            starts.append(a)
            ends.append(b)
            return 0
        if a == ends[-1]:
            ends[-1] = b
            return 0
        # general case: merge with every interval overlapping or touching [a, b)
        i = bisect_right(ends, a - 1)  # first interval with end >= a
        if i == len(starts) or starts[i] > b:
            starts.insert(i, a)
            ends.insert(i, b)
            return 0
        j = i
        dup = 0
        new_s, new_e = min(a, starts[i]), b
        while j < len(starts) and starts[j] <= b:
            dup += max(0, min(b, ends[j]) - max(a, starts[j]))
            new_e = max(new_e, ends[j])
            j += 1
        starts[i:j] = [new_s]
        ends[i:j] = [new_e]
        return dup

    def covered_below(self, n: int) -> int:
        """How many distinct offsets < n were processed."""
        c = 0
        for s, e in zip(self.starts, self.ends):
            if s >= n:
                break
            c += min(e, n) - s
        return c


def per_partition_rate(rate: float, partitions: int) -> tuple[int, int]:
    """A topic's rate (records/s) spread over `partitions`, as records per ms num / den in lowest
    terms: rate_milli / (1e6 * partitions). The same floor quotients as the float; small integers keep
    every log end offset on CPython's fast int path. The parser bounds num * duration
    (`scenario._check_sizes`): `leo_all` multiplies in numpy's int64."""
    rate_milli = int(round(rate * 1000))
    den = 1_000_000 * partitions
    g = gcd(rate_milli, den)
    return rate_milli // g, den // g


def log_end_overflow(rate: float, partitions: int, grown: list[int], duration: int) -> int | None:
    """The first partition count (the topic's, then after each growth in `grown`) at which
    num * duration leaves int64, or None: `leo_all` and the native columns compute
    num * (now - base_t) in int64 (the parser refuses such a scenario)."""
    for n in itertools.accumulate(grown, initial=partitions):
        if per_partition_rate(rate, n)[0] * duration > INT64_MAX:
            return n
    return None


class PartitionTable:
    """Every partition of every topic, indexed 0..N-1 in creation order.

    Per-partition scalars are Python lists (cheap to read one at a time in the
    hot path); whole-table figures (lag) are computed with numpy.
    """

    def __init__(self) -> None:
        self.tps: list[TopicPartition] = []
        self.names: list[str] = []
        self.index: dict[TopicPartition, int] = {}
        self.topic_partitions: dict[str, list[int]] = {}
        self.topic_rate: dict[str, float] = {}
        # log-end offset at time t: base + (num * (t - base_t)) // den
        self.base: list[int] = []
        self.base_t: list[int] = []
        self.num: list[int] = []
        self.den: list[int] = []
        self.committed: list[int] = []
        self.processed: list[ProcessedOffsets] = []

    def __len__(self) -> int:
        return len(self.tps)

    def add_topic(self, name: str, partitions: int, rate: float, now_ms: int) -> list[int]:
        self.topic_partitions[name] = []
        self.topic_rate[name] = rate
        return self.add_partitions(name, partitions, now_ms)

    def add_partitions(self, topic: str, count: int, now_ms: int) -> list[int]:
        """Grow a topic; its produce rate is re-spread over the new partition count from now on."""
        existing = self.topic_partitions[topic]
        for p in existing:
            self.base[p] = self.leo(p, now_ms)
            self.base_t[p] = now_ms
        new = []
        for _ in range(count):
            p = len(self.tps)
            tp = TopicPartition(topic, len(existing))
            self.tps.append(tp)
            self.names.append(str(tp))
            self.index[tp] = p
            existing.append(p)
            self.processed.append(ProcessedOffsets())
            self.base.append(0)
            self.base_t.append(now_ms)
            self.num.append(0)
            self.den.append(1)
            self.committed.append(0)
            new.append(p)
        num, den = per_partition_rate(self.topic_rate[topic], len(existing))
        for p in existing:
            self.num[p] = num
            self.den[p] = den
        return new

    def leo(self, p: int, now_ms: int) -> int:
        return self.base[p] + (self.num[p] * (now_ms - self.base_t[p])) // self.den[p]

    def leo_all(self, now_ms: int) -> np.ndarray:
        base = np.asarray(self.base, dtype=np.int64)
        return base + (
            np.asarray(self.num, dtype=np.int64)
            * (now_ms - np.asarray(self.base_t, dtype=np.int64))
        ) // np.asarray(self.den, dtype=np.int64)

    def total_lag(self, now_ms: int) -> int:
        """Sum over partitions of log-end offset minus committed offset."""
        if not self.tps:
            return 0
        return int(
            np.maximum(self.leo_all(now_ms) - np.asarray(self.committed, dtype=np.int64), 0).sum()
        )
