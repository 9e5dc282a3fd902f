"""Kafka's `GeneralAssignmentBuilder`: the sticky algorithm for differing subscriptions.

Steps, as in AbstractStickyAssignor:
1. Keep every owned partition the member still subscribes to (and, if
   rack-aware, whose racks match).
2. Assign the rest one by one to the member with the fewest partitions
   (ties by member id) that subscribes to the topic; rack-matched first.
3. Move partitions from members with more than one partition above another
   eligible member's count, preferring the previous owner of an older
   generation, and tracking movements so no partition ping-pongs
   (`PartitionMovements`, whose `HashSet` iteration order decides which
   partition of a topic moves back). Revert if the balance score did not improve.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left, insort
from operator import itemgetter
from typing import Any

import numpy as np

from .javacompat import JavaHashSet, string_key
from .sticky_common import (
    DEFAULT_GENERATION,
    TP,
    KafkaAssignorFailure,
    OwnedResolution,
    RackInfo,
    StickyContext,
)

_FIRST = itemgetter(0)
_SECOND = itemgetter(1)


class SortedMembers:
    """`TreeSet<String>` ordered by (current assignment size, member id).

    Entries remember the size they were inserted with, as a TreeSet node
    keeps its position; callers remove before changing a size, as Kafka does.
    With `rack_of`, the same entries are also kept per consumer rack (None:
    no rack), so the first member a rack-matched partition may go to is found
    without walking every member.
    """

    __slots__ = ("entries", "where", "sizes", "rack_of", "by_rack")

    def __init__(self, sizes: dict[str, list], rack_of: dict[str, str] | None = None) -> None:
        self.entries: list[tuple[int, str, str]] = []
        self.where: dict[str, tuple[int, str, str]] = {}
        self.sizes = sizes
        self.rack_of = rack_of
        self.by_rack: dict[str | None, list[tuple[int, str, str]]] = {}

    def add(self, c: str) -> None:
        if c in self.where:
            return
        e = (len(self.sizes[c]), string_key(c), c)
        insort(self.entries, e)
        self.where[c] = e
        if self.rack_of is not None:
            insort(self.by_rack.setdefault(self.rack_of.get(c), []), e)

    def remove(self, c: str) -> None:
        e = self.where.pop(c, None)
        if e is not None:
            del self.entries[bisect_left(self.entries, e)]
            if self.rack_of is not None:
                lst = self.by_rack[self.rack_of.get(c)]
                del lst[bisect_left(lst, e)]

    def first(self) -> str:
        return self.entries[0][2]

    def last(self) -> str:
        return self.entries[-1][2]

    def __iter__(self):
        return (e[2] for e in self.entries)

    def first_subscriber(self, topic: str, topics_of: dict[str, set[str]]) -> str | None:
        """The first member (in order) subscribed to `topic`."""
        for e in self.entries:
            if topic in topics_of[e[2]]:
                return e[2]
        return None

    def first_rack_match(
        self, topic: str, topics_of: dict[str, set[str]], racks: frozenset[str] | None
    ) -> str | None:
        """The first subscriber without a rack mismatch: no rack, or a rack among `racks`."""
        best = None
        for r in [None, *racks] if racks else [None]:
            for e in self.by_rack.get(r, ()):
                if topic in topics_of[e[2]]:
                    if best is None or e < best:
                        best = e
                    break
        return None if best is None else best[2]


class PartitionMovements:
    """Movement records per partition and per (topic, src->dst), as Kafka keeps them."""

    __slots__ = ("by_topic", "movements")

    def __init__(self) -> None:
        self.by_topic: dict[str, dict[tuple[str, str], JavaHashSet]] = {}
        self.movements: dict[TP, tuple[str, str]] = {}

    def _remove_record(self, tp: TP) -> tuple[str, str]:
        pair = self.movements.pop(tp)
        per_topic = self.by_topic[tp[0]]
        s = per_topic[pair]
        s.remove(tp)
        if not len(s):
            del per_topic[pair]
        if not per_topic:
            del self.by_topic[tp[0]]
        return pair

    def _add_record(self, tp: TP, pair: tuple[str, str]) -> None:
        self.movements[tp] = pair
        per_topic = self.by_topic.setdefault(tp[0], {})
        s = per_topic.get(pair)
        if s is None:
            s = per_topic[pair] = JavaHashSet()
        s.add(tp)

    def move(self, tp: TP, old: str, new: str) -> None:
        if tp in self.movements:
            src, _dst = self._remove_record(tp)
            if src != new:
                self._add_record(tp, (src, new))
        else:
            self._add_record(tp, (old, new))

    def actual_partition_to_move(self, tp: TP, old: str, new: str) -> TP:
        per_topic = self.by_topic.get(tp[0])
        if per_topic is None:
            return tp
        if tp in self.movements:
            old = self.movements[tp][0]
        s = per_topic.get((new, old))
        if s is None:
            return tp
        return next(iter(s))


class GeneralAssignmentBuilder:
    def __init__(self, ctx: StickyContext, res: OwnedResolution, rack: RackInfo) -> None:
        self.ctx = ctx
        self.res = res
        self.rack = rack
        ppt = ctx.partitions_per_topic
        self.topic_consumers: dict[str, list[str]] = {t: [] for t in ppt}
        self.consumer_topics: dict[str, list[str]] = {}
        self.consumer_topic_set: dict[str, set[str]] = {}
        for c in ctx.member_order:
            lst = [t for t in ctx.subs[c].topics if t in ppt]
            self.consumer_topics[c] = lst
            self.consumer_topic_set[c] = set(lst)
            for t in lst:
                self.topic_consumers[t].append(c)
        self.current: dict[str, list[TP]] = res.owned
        for c in ctx.member_order:
            self.current.setdefault(c, [])
        self.owner: dict[TP, str] = {}
        for c, parts in self.current.items():
            self.owner.update(zip(parts, itertools.repeat(c)))
        self.max_sizes: dict[str, int] = {}
        tc = self.topic_consumers
        # topics with the same subscriber set share a group id (bulk assignment runs)
        groups: dict[frozenset[str], int] = {}
        self.topic_group: dict[str, int] = {
            t: groups.setdefault(frozenset(cs), len(groups)) for t, cs in tc.items()
        }
        self.group_members: list[frozenset[str]] = list(groups)
        sorted_topics = sorted(tc, key=lambda t: (len(tc[t]), string_key(t)))
        self.topic_rank = {t: i for i, t in enumerate(sorted_topics)}
        self.topic_offset: dict[str, int] = {}
        sap: list[TP] = []
        for t in sorted_topics:
            self.topic_offset[t] = len(sap)
            sap.extend(zip([t] * ppt[t], range(ppt[t])))
        self.sorted_all_partitions = sap
        self.sorted_members = SortedMembers(
            self.current, rack.consumer_racks if rack.consumer_racks else None
        )
        self.revocation_required = False
        self.movements = PartitionMovements()
        self.own_topics: dict[str, dict[str, int]] | None = (
            None  # built by the first full isBalanced()
        )

    # -- build ------------------------------------------------------------------

    def build(self) -> dict[str, list[TP]]:
        prev: dict[TP, tuple[str, int]] = {}
        self._prepopulate(prev)
        assigned = self._assign_owned_partitions()
        unassigned = self._unassigned_partitions(assigned)
        for c in self.current:
            self.sorted_members.add(c)
        self._balance(prev, unassigned)
        return self.current

    def _prepopulate(self, prev: dict[TP, tuple[str, int]]) -> None:
        max_gen = self.res.max_generation
        for c in self.ctx.member_order:
            md = self.ctx.member_data[c]
            if md.generation is not None and md.generation < max_gen:
                gen = md.generation
            elif md.generation is None and max_gen > DEFAULT_GENERATION:
                gen = DEFAULT_GENERATION
            else:
                continue
            for tp in md.partitions:
                old = prev.get(tp)
                if old is None or gen > old[1]:
                    prev[tp] = (c, gen)

    def _assign_owned_partitions(self) -> list[TP]:
        assigned: list[TP] = []
        rack = self.rack
        cts = self.consumer_topic_set
        for c, parts in self.current.items():
            if not rack.consumer_racks and cts[c].issuperset(map(_FIRST, parts)):
                # every owned topic is known and still subscribed: all kept
                assigned += parts
                continue
            subscribed = set(self.ctx.subs[c].topics)
            keep = []
            for tp in parts:
                if tp[0] not in self.topic_consumers:
                    self.owner.pop(tp, None)
                elif tp[0] not in subscribed or (
                    rack.consumer_racks and rack.racks_mismatch(c, tp)
                ):
                    self.revocation_required = True
                else:
                    keep.append(tp)
                    assigned.append(tp)
            parts[:] = keep
        return assigned

    def _unassigned_partitions(self, assigned: list[TP]) -> list[TP]:
        """sortedAllPartitions minus the kept ones (two-pointer walk, see the constrained builder)."""
        if not assigned:
            return self.sorted_all_partitions
        ppt = self.ctx.partitions_per_topic
        offsets = self.topic_offset
        try:
            k = len(assigned)
            part = np.fromiter(map(_SECOND, assigned), dtype=np.int64, count=k)
            limit = np.fromiter(map(ppt.__getitem__, map(_FIRST, assigned)), np.int64, count=k)
            if not ((part >= 0) & (part < limit)).all():
                raise IndexError
            gids = np.fromiter(map(offsets.__getitem__, map(_FIRST, assigned)), np.int64, k) + part
        except IndexError:
            # Kafka's two-pointer walk stalls at the first kept partition that does not exist
            rank = self.topic_rank
            assigned.sort(key=lambda tp: (rank[tp[0]], tp[1]))
            walked: list[int] = []
            for t, p in assigned:
                if not (0 <= p < ppt[t]):
                    break
                walked.append(offsets[t] + p)
            gids = np.asarray(walked, dtype=np.int64)
        taken: Any = np.zeros(len(self.sorted_all_partitions), dtype=bool)
        taken[np.asarray(gids, dtype=np.int64)] = True
        sap = self.sorted_all_partitions
        return [sap[i] for i in np.flatnonzero(~taken).tolist()]

    # -- balance ----------------------------------------------------------------

    def _max_assignment_size(self, c: str) -> int:
        size = self.max_sizes.get(c)
        if size is None:
            topics = self.consumer_topics[c]
            ppt = self.ctx.partitions_per_topic
            if len(topics) == len(ppt):
                size = self.ctx.total_partitions
            else:
                size = sum(ppt[t] for t in topics)
            self.max_sizes[c] = size  # subscriptions do not change during a build
        return size

    def _is_balanced(self) -> bool:
        """Kafka's isBalanced(): sizes within one, or no member short of its maximum could
        take a partition (of a topic it subscribes to) from a member two or more larger.

        Evaluated from the larger members' side: a member c is fine unless some member
        with at least len(c) + 2 partitions owns a partition of one of c's topics.
        """
        entries = self.sorted_members.entries
        lo, hi = entries[0][0], entries[-1][0]
        if lo >= hi - 1:
            return True
        own = self._own_topics()
        cts = self.consumer_topic_set
        for count, _key, c in entries:
            if count == self._max_assignment_size(c):
                continue
            threshold = count + 2
            if hi < threshold:
                return True  # members further on are no smaller
            mine = cts[c]
            for j in range(len(entries) - 1, -1, -1):
                size, _k, o = entries[j]
                if size < threshold:
                    break
                theirs = own[o]
                if len(mine) <= len(theirs):
                    if any(t in theirs for t in mine):
                        return False
                elif any(t in mine for t in theirs):
                    return False
        return True

    def _own_topics(self) -> dict[str, dict[str, int]]:
        """Per participating member: how many partitions of each topic it holds (kept up to date by moves)."""
        if self.own_topics is None:
            own: dict[str, dict[str, int]] = {}
            for c, parts in self.current.items():
                d: dict[str, int] = {}
                for t, _p in parts:
                    d[t] = d.get(t, 0) + 1
                own[c] = d
            self.own_topics = own
        return self.own_topics

    def _balance_score(self, assignment: dict[str, list[TP]]) -> int:
        sizes = sorted(len(v) for v in assignment.values())
        score = 0
        acc = 0
        for i, s in enumerate(sizes):
            score += s * i - acc
            acc += s
        return score

    def _maybe_assign_partition(self, tp: TP, rack: RackInfo | None) -> bool:
        """Give `tp` to the first member (fewest partitions, then id) that subscribes to its
        topic and, with `rack`, has no rack mismatch."""
        sm = self.sorted_members
        if rack is None:
            c = sm.first_subscriber(tp[0], self.consumer_topic_set)
        else:
            c = sm.first_rack_match(tp[0], self.consumer_topic_set, rack.partition_racks(tp))
        if c is None:
            return False
        sm.remove(c)
        self.current[c].append(tp)
        self.owner[tp] = c
        sm.add(c)
        self.own_topics = None
        return True

    def _maybe_assign(
        self, partitions: list[TP], rack: RackInfo | None, remove_assigned: bool
    ) -> None:
        tc = self.topic_consumers
        if rack is None and not remove_assigned:
            # Without rack checks every partition with a subscriber is taken, and who takes
            # it depends only on the topic's subscriber set: do maximal runs of equal sets at once.
            group = self.topic_group
            i, n = 0, len(partitions)
            while i < n:
                g = group[partitions[i][0]]
                j = i + 1
                while j < n and group[partitions[j][0]] == g:
                    j += 1
                if tc[partitions[i][0]]:
                    self._assign_run(self.group_members[g], partitions[i:j])
                i = j
            return
        kept = []
        for tp in partitions:
            if not tc[tp[0]]:
                kept.append(tp)
                continue
            if not (self._maybe_assign_partition(tp, rack) and remove_assigned):
                kept.append(tp)
        if remove_assigned:
            partitions[:] = kept

    def _assign_run(self, members: frozenset[str], run: list[TP]) -> None:
        """`maybeAssignPartition` for consecutive partitions whose topics share a subscriber set.

        Each partition goes to the subscriber first in (size, member id) order,
        which then grows by one. The picks are therefore the k smallest
        "slots" (size + m, id rank), m = 0, 1, ..., taken in that order.
        """
        subs = [c for c in self.sorted_members if c in members]
        k = len(run)
        if k == 1 or len(subs) == 1:
            for tp in run:
                self._maybe_assign_partition(tp, None)
            return
        current = self.current
        by_key = sorted(range(len(subs)), key=lambda i: string_key(subs[i]))
        rank: Any = np.empty(len(subs), dtype=np.int64)
        rank[np.asarray(by_key, dtype=np.int64)] = np.arange(len(subs), dtype=np.int64)
        sizes = np.fromiter((len(current[c]) for c in subs), dtype=np.int64, count=len(subs))
        # level L: every slot below L is taken, then the lowest-ranked slots at L
        lo, hi = int(sizes.min()), int(sizes.min()) + k + 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if int(np.maximum(0, mid - sizes).sum()) <= k:
                lo = mid
            else:
                hi = mid - 1
        level = lo
        counts = np.maximum(0, level - sizes)
        extra = k - int(counts.sum())
        if extra:
            at_level = np.flatnonzero(sizes <= level)
            chosen = at_level[np.argsort(rank[at_level], kind="stable")[:extra]]
            counts[chosen] += 1
        cons: Any = np.repeat(np.arange(len(subs), dtype=np.int64), counts)
        starts: Any = np.repeat(np.cumsum(counts) - counts, counts)
        vals = np.repeat(sizes, counts) + (np.arange(k, dtype=np.int64) - starts)
        order = np.argsort(vals * len(subs) + rank[cons], kind="stable")
        picked = cons[order]  # member index for run[0], run[1], ...
        by_member = np.argsort(picked, kind="stable")
        bounds = np.cumsum(counts)
        sm = self.sorted_members
        owner = self.owner
        pos = 0
        by_member_list = by_member.tolist()
        for i, c in enumerate(subs):
            n = int(counts[i])
            if not n:
                continue
            mine = [run[j] for j in by_member_list[pos : pos + n]]
            pos = int(bounds[i])
            sm.remove(c)
            current[c].extend(mine)
            owner.update(zip(mine, [c] * n))
            sm.add(c)
        self.own_topics = None

    def _can_consumer_participate(self, c: str) -> bool:
        parts = self.current[c]
        if len(parts) < self._max_assignment_size(c):
            return True
        tc = self.topic_consumers
        return any(len(tc[tp[0]]) >= 2 for tp in parts)

    def _balance(self, prev: dict[TP, tuple[str, int]], unassigned: list[TP]) -> None:
        current = self.current
        initializing = not current[self.sorted_members.last()]
        to_assign = unassigned
        if self.rack.consumer_racks:
            to_assign = list(unassigned)
            self._maybe_assign(to_assign, self.rack, True)
        self._maybe_assign(to_assign, None, False)

        fixed_topics = {t for t, cs in self.topic_consumers.items() if len(cs) < 2}
        if fixed_topics:
            sap = self.sorted_all_partitions
            sap[:] = [tp for tp in sap if tp[0] not in fixed_topics]
            if unassigned is not sap:
                unassigned[:] = [tp for tp in unassigned if tp[0] not in fixed_topics]

        fixed: dict[str, list[TP]] = {}
        for c in self.consumer_topics:
            if not self._can_consumer_participate(c):
                self.sorted_members.remove(c)
                fixed[c] = current.pop(c)

        pre_assignment = {c: list(v) for c, v in current.items()}
        pre_owner = dict(self.owner)

        if not self.revocation_required:
            self._perform_reassignments(unassigned, prev)
        performed = self._perform_reassignments(self.sorted_all_partitions, prev)

        if (
            not initializing
            and performed
            and self._balance_score(current) >= self._balance_score(pre_assignment)
        ):
            current.clear()
            for c, v in pre_assignment.items():
                current[c] = list(v)
            self.owner = pre_owner
            self.own_topics = None

        for c, v in fixed.items():
            current[c] = v

    def _perform_reassignments(self, partitions: list[TP], prev: dict[TP, tuple[str, int]]) -> bool:
        performed = False
        current = self.current
        while True:
            modified = False
            balanced = None  # isBalanced() only changes when a partition moves
            for tp in partitions:
                if balanced is None:
                    balanced = self._is_balanced()
                if balanced:
                    break
                consumer = self.owner[tp]  # every partition walked here has an owner
                mine = len(current[consumer])
                p = prev.get(tp)
                if p is not None and p[0] not in current:
                    raise KafkaAssignorFailure(
                        f"previous owner {p[0]!r} of {tp[0]}-{tp[1]} (generation {p[1]}) takes no part in the "
                        "reassignment; Kafka's GeneralAssignmentBuilder throws NullPointerException here"
                    )
                if p is not None and mine > len(current[p[0]]) + 1:
                    self._reassign_partition_to(tp, p[0])
                    performed = modified = True
                    balanced = None
                    continue
                # Kafka looks for a smaller member among the topic's subscribers, rack-matched
                # ones first; either way it then moves the partition to the first subscriber
                # in order, and that one is the smallest: one test covers both loops
                first = self.sorted_members.first_subscriber(tp[0], self.consumer_topic_set)
                if first is not None and mine > len(current[first]) + 1:
                    self._reassign_partition_to(tp, first)
                    performed = modified = True
                    balanced = None
            if not modified:
                return performed

    def _reassign_partition_to(self, tp: TP, new: str) -> None:
        consumer = self.owner[tp]
        to_move = self.movements.actual_partition_to_move(tp, consumer, new)
        self._process_movement(to_move, new)

    def _process_movement(self, tp: TP, new: str) -> None:
        old = self.owner[tp]
        sm = self.sorted_members
        sm.remove(old)
        sm.remove(new)
        self.movements.move(tp, old, new)
        self.current[old].remove(tp)
        self.current[new].append(tp)
        self.owner[tp] = new
        sm.add(new)
        sm.add(old)
        own = self.own_topics
        if own is not None:
            t = tp[0]
            d = own[old]
            d[t] -= 1
            if not d[t]:
                del d[t]
            d = own[new]
            d[t] = d.get(t, 0) + 1
