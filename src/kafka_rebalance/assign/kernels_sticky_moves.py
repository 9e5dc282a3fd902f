"""The sticky general builder's balancing on ints: `performReassignments`, `isBalanced` and
`PartitionMovements` for kernels_sticky_general.py (which see), compiled with it by mypyc.

Members are positions, partitions their place in `sortedAllPartitions`; the builder's `TreeSet`
of (assignment size, member id) is `Members`, a sorted list of size * n + rank. Movement records
per topic and (source, destination) are the caller's Java HashSets of (topic, partition), whose
iteration order decides which partition moves back, as in the reference
(sticky_general.PartitionMovements). No I/O, no project imports.
"""

from __future__ import annotations

from typing import Any


def _find(keys: list[int], key: int) -> int:
    """Index of the first element >= key in the sorted `keys`."""
    lo = 0
    hi = len(keys)
    while lo < hi:
        mid = (lo + hi) >> 1
        if keys[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


class Members:
    """The builder's `sortedCurrentSubscriptions`: members by (size when added, id rank), as
    keys size * n + rank; `member[rank]` is the member."""

    def __init__(self, n: int, rank: list[int]) -> None:
        self.n = n
        self.rank = rank
        self.member: list[int] = [0] * n  # by rank
        for i in range(n):
            self.member[rank[i]] = i
        self.keys: list[int] = []
        self.key_of: list[int] = [-1] * n

    def add(self, c: int, size: int) -> None:
        if self.key_of[c] >= 0:
            return
        key = size * self.n + self.rank[c]
        self.keys.insert(_find(self.keys, key), key)
        self.key_of[c] = key

    def remove(self, c: int) -> None:
        key = self.key_of[c]
        if key < 0:
            return
        del self.keys[_find(self.keys, key)]
        self.key_of[c] = -1


def first_subscriber(sm: Members, flag: list[bool], n_topics: int, j: int) -> int:
    """The first member in (size, id) order subscribed to topic j; -1: none."""
    n = sm.n
    member = sm.member
    for key in sm.keys:
        c = member[key % n]
        if flag[c * n_topics + j]:
            return c
    return -1


class Reassignments:
    """performReassignments and what it needs: sizes, owners, per-topic counts, movements."""

    def __init__(
        self,
        n: int,
        n_topics: int,
        sm: Members,
        current: list[list[int]],
        owner: list[int],
        topic_of: list[int],
        flag: list[bool],
        own: list[int],
        max_size: list[int],
        subs: list[list[int]],
        in_current: list[bool],
        prev_owner: list[int],
        base: list[int],
        names: list[str],
        tix: dict[str, int],
        new_set: Any,
    ) -> None:
        self.n = n
        self.n_topics = n_topics
        self.sm = sm
        self.current = current
        self.owner = owner
        self.topic_of = topic_of
        self.flag = flag
        self.own = own
        self.max_size = max_size
        self.subs = subs
        self.in_current = in_current
        self.prev_owner = prev_owner
        self.base = base
        self.names = names
        self.tix = tix
        self.new_set = new_set
        total = len(topic_of)
        self.move_src: list[int] = [-1] * total
        self.move_dst: list[int] = [-1] * total
        self.by_topic: dict[int, dict[int, Any]] = {}

    def perform(self, partitions: list[int]) -> int:
        """1 if a partition moved, 0 if none did, -1: Kafka throws (the reference path raises)."""
        performed = 0
        current = self.current
        owner = self.owner
        prev_owner = self.prev_owner
        while True:
            modified = False
            balanced = -1
            for g in partitions:
                if balanced < 0:
                    balanced = 1 if self.is_balanced() else 0
                if balanced == 1:
                    break
                consumer = owner[g]
                mine = len(current[consumer])
                p = prev_owner[g]
                if p >= 0:
                    if not self.in_current[p]:
                        return -1
                    if mine > len(current[p]) + 1:
                        self.reassign(g, p)
                        performed = 1
                        modified = True
                        balanced = -1
                        continue
                first = first_subscriber(self.sm, self.flag, self.n_topics, self.topic_of[g])
                if first >= 0 and mine > len(current[first]) + 1:
                    self.reassign(g, first)
                    performed = 1
                    modified = True
                    balanced = -1
            if not modified:
                return performed

    def is_balanced(self) -> bool:
        """isBalanced(), from the larger members' side (see the reference's _is_balanced)."""
        keys = self.sm.keys
        if not keys:
            return True
        n = self.n
        nt = self.n_topics
        lo = keys[0] // n
        hi = keys[len(keys) - 1] // n
        if lo >= hi - 1:
            return True
        own = self.own
        member = self.sm.member
        for key in keys:
            count = key // n
            c = member[key % n]
            if count == self.max_size[c]:
                continue
            threshold = count + 2
            if hi < threshold:
                return True
            mine = self.subs[c]
            for x in range(len(keys) - 1, -1, -1):
                k2 = keys[x]
                if k2 // n < threshold:
                    break
                row = member[k2 % n] * nt
                for j in mine:
                    if own[row + j] > 0:
                        return False
        return True

    def reassign(self, g: int, new: int) -> None:
        """reassignPartition: the partition to move may be one that came the other way."""
        old = self.owner[g]
        self.process(self.actual_to_move(g, old, new), new)

    def _tp(self, g: int) -> tuple[str, int]:
        j = self.topic_of[g]
        return (self.names[j], g - self.base[j])

    def actual_to_move(self, g: int, old: int, new: int) -> int:
        j = self.topic_of[g]
        per_topic = self.by_topic.get(j)
        if per_topic is None:
            return g
        if self.move_src[g] >= 0:
            old = self.move_src[g]
        s = per_topic.get(new * self.n + old)
        if s is None:
            return g
        for tp in s:
            name: str = tp[0]
            part: int = tp[1]
            return self.base[self.tix[name]] + part
        return g

    def _remove_record(self, g: int) -> int:
        src = self.move_src[g]
        dst = self.move_dst[g]
        self.move_src[g] = -1
        self.move_dst[g] = -1
        j = self.topic_of[g]
        per_topic = self.by_topic[j]
        pair = src * self.n + dst
        s = per_topic[pair]
        s.remove(self._tp(g))
        if not len(s):
            del per_topic[pair]
        if not per_topic:
            del self.by_topic[j]
        return src

    def _add_record(self, g: int, src: int, dst: int) -> None:
        self.move_src[g] = src
        self.move_dst[g] = dst
        j = self.topic_of[g]
        per_topic = self.by_topic.get(j)
        if per_topic is None:
            per_topic = {}
            self.by_topic[j] = per_topic
        pair = src * self.n + dst
        s = per_topic.get(pair)
        if s is None:
            s = self.new_set()
            per_topic[pair] = s
        s.add(self._tp(g))

    def process(self, g: int, new: int) -> None:
        """processPartitionMovement."""
        old = self.owner[g]
        sm = self.sm
        sm.remove(old)
        sm.remove(new)
        if self.move_src[g] >= 0:
            src = self._remove_record(g)
            if src != new:
                self._add_record(g, src, new)
        else:
            self._add_record(g, old, new)
        self.current[old].remove(g)
        self.current[new].append(g)
        self.owner[g] = new
        sm.add(new, len(self.current[new]))
        sm.add(old, len(self.current[old]))
        j = self.topic_of[g]
        nt = self.n_topics
        self.own[old * nt + j] -= 1
        self.own[new * nt + j] += 1
