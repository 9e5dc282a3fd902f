"""Kafka's `ConstrainedAssignmentBuilder`: the sticky algorithm when all members subscribe alike.

Steps, as in AbstractStickyAssignor:
1. Members (in consumerToOwnedPartitions HashMap order) keep owned partitions
   up to minQuota, or maxQuota while fewer than `total % members` members
   have taken maxQuota. Owned partitions are sorted by (partition, topic)
   first, so which ones are kept is deterministic.
2. Rack-aware round robin over unfilled members (KIP-881), if racks apply.
3. Round robin of the rest, members sorted by id, partitions by (topic, partition).
Partitions leaving one owner for another are recorded for the cooperative assignor.
"""

from __future__ import annotations

import itertools
from operator import itemgetter

import numpy as np

from .javacompat import string_key
from .sticky_common import TP, OwnedResolution, RackInfo, StickyContext, sorted_topics
from .tpcache import partition_tuples


def _partition_then_topic_key(topics):
    """Sort key for Comparator.comparing(partition).thenComparing(topic)."""
    if all(string_key(t) is t for t in topics):
        return itemgetter(1, 0)
    keys = {t: string_key(t) for t in topics}
    return lambda tp: (tp[1], keys.get(tp[0]) or string_key(tp[0]))


_FIRST = itemgetter(0)
_SECOND = itemgetter(1)


class _RackCount:
    """How many members of a list sit in each rack (members without a rack never match)."""

    __slots__ = ("counts",)

    def __init__(self, racks) -> None:
        self.counts: dict[str, int] = {}
        for r in racks:
            self.add(r)

    def add(self, r: str | None) -> None:
        if r is not None:
            self.counts[r] = self.counts.get(r, 0) + 1

    def drop(self, r: str | None) -> None:
        if r is not None:
            self.counts[r] -= 1
            if not self.counts[r]:
                del self.counts[r]

    def clear(self) -> None:
        self.counts.clear()

    def any_of(self, racks: frozenset[str] | None) -> bool:
        return racks is not None and any(r in self.counts for r in racks)


class ConstrainedAssignmentBuilder:
    def __init__(
        self,
        ctx: StickyContext,
        res: OwnedResolution,
        rack: RackInfo,
        transferring: dict[TP, str] | None,
    ) -> None:
        self.ctx = ctx
        self.res = res
        self.rack = rack
        self.transferring = transferring
        n = len(res.owned)
        total = ctx.total_partitions
        self.min_quota = total // n
        self.max_quota = -(-total // n)
        self.expected_over = total % n
        self.current_over = 0
        self.maybe_revoked: dict[TP, str] = {}
        self.under: list[str] = []
        self.exact: list[str] = []
        self.assignment: dict[str, list[TP]] = {c: [] for c in res.owned_order}
        self.assigned_partitions: list[TP] = []

    def build(self) -> dict[str, list[TP]]:
        self._assign_owned_partitions()
        unassigned = self._unassigned_partitions()
        self.under.sort(key=string_key)
        self.exact.sort(key=string_key)
        unassigned = self.rack.sort_partitions_by_rack_consumers(unassigned)
        unassigned = self._assign_rack_aware_round_robin(unassigned)
        self._assign_round_robin(unassigned)
        self._verify_unfilled_members()
        return self.assignment

    def _assign_owned_partitions(self) -> None:
        if not self.rack.consumer_racks and not self.res.multiple_owners:
            self._assign_owned_partitions_in_bulk()
            return
        self._assign_owned_partitions_stepwise()

    def _assign_owned_partitions_stepwise(self) -> None:
        """Kafka's loop, member by member (racks, contested partitions; the reference)."""
        rack = self.rack
        multiple = self.res.multiple_owners
        min_q, max_q = self.min_quota, self.max_quota
        by_partition_then_topic = _partition_then_topic_key(self.ctx.partitions_per_topic)
        owned_of = self.res.owned
        for consumer in self.res.owned_order:
            if rack.consumer_racks:
                owned = []
                for tp in owned_of[consumer]:
                    if rack.racks_mismatch(consumer, tp):
                        self.maybe_revoked[tp] = consumer
                    else:
                        owned.append(tp)
                owned.sort(key=by_partition_then_topic)
            else:
                owned = sorted(owned_of[consumer], key=by_partition_then_topic)
            if multiple:
                for tp in multiple:
                    if tp in owned:
                        owned.remove(tp)
            mine = self.assignment[consumer]
            if len(owned) < min_q:
                mine.extend(owned)
                self.assigned_partitions.extend(owned)
                self.under.append(consumer)
            elif len(owned) >= max_q and self.current_over < self.expected_over:
                self.current_over += 1
                if self.current_over == self.expected_over:
                    self.exact.clear()
                mine.extend(owned[:max_q])
                self.assigned_partitions.extend(owned[:max_q])
                for tp in owned[max_q:]:
                    self.maybe_revoked[tp] = consumer
            else:
                mine.extend(owned[:min_q])
                self.assigned_partitions.extend(owned[:min_q])
                for tp in owned[min_q:]:
                    self.maybe_revoked[tp] = consumer
                if self.current_over < self.expected_over:
                    self.exact.append(consumer)

    def _assign_owned_partitions_in_bulk(self) -> None:
        """The same steps without racks or contested partitions: one sort of every owned
        partition by (member, partition, topic), then each member's quota decides."""
        order = self.res.owned_order
        lists = [self.res.owned[c] for c in order]
        lens = [len(x) for x in lists]
        flat = list(itertools.chain.from_iterable(lists))
        if flat:
            k = len(flat)
            rank = {t: i for i, t in enumerate(sorted_topics(self.ctx.partitions_per_topic))}
            by_topic = np.fromiter(
                map(rank.get, map(_FIRST, flat), itertools.repeat(-1, k)), np.int64, count=k
            )
            if (by_topic < 0).any():  # a topic outside the context: the stepwise path
                self._assign_owned_partitions_stepwise()
                return
            part = np.fromiter(map(_SECOND, flat), dtype=np.int64, count=k)
            member = np.repeat(np.arange(len(order), dtype=np.int64), lens)
            flat = list(map(flat.__getitem__, np.lexsort((by_topic, part, member)).tolist()))
        min_q, max_q = self.min_quota, self.max_quota
        expected = self.expected_over
        assignment, maybe_revoked = self.assignment, self.maybe_revoked
        under, exact = self.under, self.exact
        kept: list[list[TP]] = []
        pos = 0
        for consumer, n in zip(order, lens):
            if n < min_q:
                keep = n
                under.append(consumer)
            elif n >= max_q and self.current_over < expected:
                self.current_over += 1
                if self.current_over == expected:
                    exact.clear()
                keep = max_q
            else:
                keep = min_q
                if self.current_over < expected:
                    exact.append(consumer)
            mine = flat[pos : pos + keep]
            assignment[consumer] = mine
            kept.append(mine)
            for tp in flat[pos + keep : pos + n]:
                maybe_revoked[tp] = consumer
            pos += n
        self.assigned_partitions = list(itertools.chain.from_iterable(kept))

    def _unassigned_partitions(self) -> list[TP]:
        """All partitions (topics sorted, then partition) minus those kept.

        Kafka walks both sorted lists with two pointers; an owned partition
        number beyond the topic's count stalls the pointer, so only the kept
        partitions sorted before it count as assigned. Reproduced here.
        """
        ppt = self.ctx.partitions_per_topic
        topics = sorted_topics(ppt)
        assigned = self.assigned_partitions
        if not assigned:
            return partition_tuples(topics, [ppt[t] for t in topics]).tolist()
        offsets: dict[str, int] = {}
        total = 0
        for t in topics:
            offsets[t] = total
            total += ppt[t]
        # global index in (topic, partition) order; a topic or partition number out of
        # range takes the exact two-pointer path
        k = len(assigned)
        count_of = np.fromiter(
            map(ppt.get, map(_FIRST, assigned), itertools.repeat(-1, k)), dtype=np.int64, count=k
        )
        part = np.fromiter(map(_SECOND, assigned), dtype=np.int64, count=k)
        if (count_of >= 0).all() and ((part >= 0) & (part < count_of)).all():
            offs = np.fromiter(map(offsets.__getitem__, map(_FIRST, assigned)), np.int64, k)
            gids = offs + part
        else:
            gids = np.asarray(self._two_pointer_matches(assigned, offsets), dtype=np.int64)
        taken = np.zeros(total, dtype=bool)
        taken[gids] = True
        table = partition_tuples(topics, [ppt[t] for t in topics])
        return table[np.flatnonzero(~taken)].tolist()

    def _two_pointer_matches(self, assigned: list[TP], offsets: dict[str, int]) -> list[int]:
        """Kafka's walk stalls at the first kept partition that does not exist; only those before it match."""
        ppt = self.ctx.partitions_per_topic
        assigned.sort(key=lambda tp: (string_key(tp[0]), tp[1]))
        gids = []
        for t, p in assigned:
            n = ppt.get(t)
            if n is None or not (0 <= p < n):
                break
            gids.append(offsets[t] + p)
        return gids

    def _assign_rack_aware_round_robin(self, unassigned: list[TP]) -> list[TP]:
        rack = self.rack
        if not rack.consumer_racks:
            return unassigned
        under, exact, assignment = self.under, self.exact, self.assignment
        min_q, max_q = self.min_quota, self.max_quota
        racks_of = rack.consumer_racks
        # racks present in each list, so a partition no listed member can match skips the scan
        under_racks = _RackCount(racks_of.get(c) for c in under)
        exact_racks = _RackCount(racks_of.get(c) for c in exact)
        next_unfilled = 0
        remaining: list[TP] = []
        for tp in unassigned:
            consumer = None
            rs = rack.partition_racks(tp)
            nxt = (
                rack.next_rack_consumer(tp, under, next_unfilled) if under_racks.any_of(rs) else -1
            )
            if nxt >= 0:
                consumer = under[nxt]
                count = len(assignment[consumer]) + 1
                if count >= min_q:
                    under.remove(consumer)
                    under_racks.drop(racks_of.get(consumer))
                    if count < max_q and self.current_over < self.expected_over:
                        exact.append(consumer)
                        exact_racks.add(racks_of.get(consumer))
                else:
                    nxt += 1
                next_unfilled = 0 if not under else nxt % len(under)
            elif exact:
                first = rack.next_rack_consumer(tp, exact, 0) if exact_racks.any_of(rs) else -1
                if first >= 0:
                    consumer = exact[first]
                    if len(assignment[consumer]) + 1 == max_q:
                        del exact[first]
                        exact_racks.drop(racks_of.get(consumer))
                        self.current_over += 1
                        if self.current_over == self.expected_over:
                            exact.clear()
                            exact_racks.clear()
            if consumer is not None:
                self._assign_new_partition(tp, consumer)
            else:
                remaining.append(tp)
        return remaining

    def _assign_round_robin(self, unassigned: list[TP]) -> None:
        """Kafka's round robin, computed in bulk.

        The iterator over the members below minQuota makes passes over that
        list; in pass k every member still needing more than k partitions gets
        one, and a member reaching minQuota leaves it for the minQuota list.
        Once the list is empty, the minQuota list is polled first-in first-out,
        one partition each. So the picks are the pairs (pass, position) in
        order, then the queue.
        """
        under, exact, assignment = self.under, self.exact, self.assignment
        min_q, max_q = self.min_quota, self.max_quota
        needs = np.fromiter(
            (min_q - len(assignment[c]) for c in under), dtype=np.int64, count=len(under)
        )
        if len(unassigned) < 2 or (len(needs) and int(needs.min()) < 1) or min_q + 1 == min_q:
            self._assign_round_robin_stepwise(unassigned)
            return
        n = len(under)
        total = len(unassigned)
        pos = np.repeat(np.arange(n, dtype=np.int64), needs)
        starts = np.repeat(np.cumsum(needs) - needs, needs)
        passes = np.arange(len(pos), dtype=np.int64) - starts
        order = np.argsort(passes * max(n, 1) + pos, kind="stable")
        first = order[:total]
        picks = pos[first].tolist()  # phase one: member positions in `under`
        # members whose last pass falls within phase one join the minQuota list, in that order
        done = passes[first] == needs[pos[first]] - 1
        completed = [under[i] for i in pos[first][done].tolist()]
        remaining = total - len(picks)
        queue = exact + completed
        if remaining > len(queue):
            raise RuntimeError("No more unfilled consumers to be assigned.")
        finished = set(completed)
        self.under = [c for c in under if c not in finished]
        self.exact = queue[remaining:]
        if remaining and min_q + 1 == max_q:
            self.current_over += remaining
        # owner of each unassigned partition as an index into `takers` (under, then the
        # queue's members not in under)
        takers = list(under)
        index_of = {c: i for i, c in enumerate(takers)}
        for c in queue[:remaining]:
            if c not in index_of:
                index_of[c] = len(takers)
                takers.append(c)
        owner = np.concatenate(
            (
                pos[first],
                np.fromiter(
                    map(index_of.__getitem__, queue[:remaining]), dtype=np.int64, count=remaining
                ),
            )
        )
        transferring = self.transferring
        if transferring is not None:
            maybe_revoked = self.maybe_revoked
            multiple = self.res.multiple_owners
            if maybe_revoked or multiple:
                members = [takers[i] for i in owner.tolist()]
                for tp, c in zip(unassigned, members):
                    prev = maybe_revoked.get(tp)
                    if (prev is not None and prev != c) or tp in multiple:
                        transferring[tp] = c
        by_owner = np.argsort(owner, kind="stable")
        gathered = list(map(unassigned.__getitem__, by_owner.tolist()))
        counts = np.bincount(owner, minlength=len(takers))
        ends = np.cumsum(counts)
        some = np.flatnonzero(counts)
        for i, e, c in zip(some.tolist(), ends[some].tolist(), counts[some].tolist()):
            assignment[takers[i]] += gathered[e - c : e]

    def _assign_round_robin_stepwise(self, unassigned: list[TP]) -> None:
        """The same round robin one partition at a time, as Kafka loops (reference and fallback)."""
        under, exact = self.under, self.exact
        min_q, max_q = self.min_quota, self.max_quota
        cursor = 0  # the Java iterator over `under`: index of the next element
        transferring = self.transferring
        maybe_revoked = self.maybe_revoked
        multiple = self.res.multiple_owners
        assignment = self.assignment
        for tp in unassigned:
            from_under = True
            if cursor < len(under):
                consumer = under[cursor]
                cursor += 1
            elif not under and not exact:
                raise RuntimeError("No more unfilled consumers to be assigned.")
            elif not under:
                consumer = exact.pop(0)
                from_under = False
            else:
                consumer = under[0]
                cursor = 1
            mine = assignment[consumer]
            mine.append(tp)
            if transferring is not None:
                prev = maybe_revoked.get(tp)
                if (prev is not None and prev != consumer) or tp in multiple:
                    transferring[tp] = consumer
            count = len(mine)
            if count == min_q:
                if from_under:
                    cursor -= 1
                    del under[cursor]
                exact.append(consumer)
            elif count == max_q:
                self.current_over += 1

    def _assign_new_partition(self, tp: TP, consumer: str) -> int:
        mine = self.assignment[consumer]
        mine.append(tp)
        if self.transferring is not None:
            prev = self.maybe_revoked.get(tp)
            if (prev is not None and prev != consumer) or tp in self.res.multiple_owners:
                self.transferring[tp] = consumer
        return len(mine)

    def _verify_unfilled_members(self) -> None:
        if not self.under:
            return
        if self.current_over != self.expected_over:
            raise RuntimeError(
                "We haven't reached the expected number of members with more than the "
                "minQuota partitions, but no more partitions to be assigned"
            )
        for member in self.under:
            if len(self.assignment[member]) != self.min_quota:
                raise RuntimeError(
                    f"Consumer: [{member}] doesn't reach minQuota partitions, "
                    "and no more partitions to be assigned"
                )
