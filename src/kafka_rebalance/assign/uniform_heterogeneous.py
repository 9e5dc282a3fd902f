"""`UniformHeterogeneousAssignmentBuilder`: members subscribe to different topics.

1. Keep every member's current partitions of topics it still subscribes to.
2. Deal the partitions nobody holds, topic by topic (most partitions per
   subscriber first), to the topic's least loaded subscribers.
3. Rebalance: per topic, move partitions from its most loaded subscribers to
   its least loaded ones until their counts differ by at most one; repeat
   over the topics until a full pass moves nothing (at most 16 passes).

Members are numbered in the group's iteration order; ties between equally
loaded members go to the lower number. Mirrors Kafka's
group-coordinator/.../assignor/UniformHeterogeneousAssignmentBuilder.java,
including its `MemberAssignmentBalancer` ranges.
"""

from __future__ import annotations

import numpy as np

from ..model import TopicPartition
from .uniform_group import UniformGroup, flatten_owned, topic_id

MAX_ITERATION_COUNT = 16


class _Balancer:
    """Kafka's MemberAssignmentBalancer: a least loaded range growing right, a most loaded range growing left."""

    __slots__ = (
        "sizes",
        "sorted_members",
        "least_end",
        "least_count",
        "next_least",
        "most_start",
        "most_end",
        "most_count",
        "next_most",
    )

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.sorted_members: list[int] = []
        self.least_end = 0
        self.least_count = -1
        self.next_least = 0
        self.most_start = 0
        self.most_end = 0
        self.most_count = 1
        self.next_most = -1

    def initialize(self, members: list[int]) -> int:
        if len(members) == 0:
            raise ValueError("Cannot balance an empty subscriber list.")
        sizes = self.sizes
        if len(members) <= 64:
            sm = sorted(members, key=lambda m: (sizes[m], m))
        else:
            arr = np.asarray(members)
            sm = arr[np.lexsort((arr, np.asarray(sizes)[arr]))].tolist()
        self.sorted_members = sm
        self.least_end = 0
        self.least_count = sizes[sm[0]] - 1
        self.next_least = 0
        self.most_start = len(sm)
        self.most_end = len(sm)
        self.most_count = sizes[sm[-1]] + 1
        self.next_most = len(sm) - 1
        return sizes[sm[-1]] - sizes[sm[0]]

    def next_least_loaded(self) -> int:
        if self.next_least >= self.least_end:
            self.least_count += 1
            sm, sizes, count = self.sorted_members, self.sizes, self.least_count
            end, n = self.least_end, len(self.sorted_members)
            while end < n and sizes[sm[end]] == count:
                end += 1
            self.least_end = end
            self.next_least = 0
        member = self.sorted_members[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int:
        if self.next_most < self.most_start:
            sm, sizes = self.sorted_members, self.sizes
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = sizes[sm[self.most_start - 1]]
            else:
                self.most_count -= 1
            start, count = self.most_start, self.most_count
            while start > 0 and sizes[sm[start - 1]] == count:
                start -= 1
            self.most_start = start
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = self.sorted_members[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        sm = self.sorted_members
        i = self.next_most + 1
        member = sm[i]
        sm[i] = sm[self.most_end - 1]
        sm[self.most_end - 1] = member
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


class _Builder:
    """The builder's state: partition owners and member sizes as arrays over flat partition indices."""

    def __init__(self, group: UniformGroup) -> None:
        self.group = group
        n = len(group.member_ids)
        self.sizes = np.zeros(n, dtype=np.int64)
        self.owners = np.full(group.total, -1, dtype=np.int64)
        self.subscribers = [
            np.flatnonzero(group.subscribed[:, j]) for j in range(len(group.topics))
        ]
        # Conflicts (one partition in two members' current assignments): the later
        # member becomes its owner, the earlier one keeps it in its target too.
        self.leftovers: dict[int, set[int]] = {}
        self.owned = flatten_owned(group)
        self.keep = np.zeros(0, dtype=bool)
        self.size_list: list[int] = []
        self.subscriber_lists: list[list[int]] = []

    # -- ordering ----------------------------------------------------------------

    def _topic_sort_key(self, j: int):
        n, s = int(self.group.counts[j]), len(self.subscribers[j])
        return (-(n / s), s, topic_id(self.group.topics[j]))

    def sorted_topics(self, topics) -> list[int]:
        return sorted(topics, key=self._topic_sort_key)

    # -- steps ---------------------------------------------------------------------

    def revoke_unsubscribed(self) -> None:
        """maybeRevokePartitions: keep current partitions of still-subscribed topics.

        Entries beyond a topic's partition count are dropped (Kafka would fail on them).
        """
        ow = self.owned
        keep = ow.first.copy()
        keep[keep] = self.group.subscribed[ow.member[keep], ow.topic[keep]]
        self.keep = keep
        km, kf = ow.member[keep], ow.flat[keep]
        self.sizes += np.bincount(km, minlength=len(self.sizes))
        if len(kf):
            # members are in order, so the last entry for a partition is its owner
            uniq, pos = np.unique(kf[::-1], return_index=True)
            self.owners[uniq] = km[::-1][pos]
            lost = self.owners[kf] != km
            for m, f in zip(km[lost].tolist(), kf[lost].tolist()):
                self.leftovers.setdefault(m, set()).add(f)

    def assign_remaining(self) -> None:
        """assignRemainingPartitions: deal each topic's free partitions to its least loaded subscribers."""
        g = self.group
        free_by_topic = {}
        for j in range(len(g.topics)):
            seg = self.owners[g.base[j] : g.base[j] + g.counts[j]]
            free = np.flatnonzero(seg == -1)
            if len(free):
                free_by_topic[j] = free + g.base[j]
        sizes, owners = self.sizes, self.owners
        for j in self.sorted_topics(free_by_topic):
            subs = self.subscribers[j]
            sm = subs[np.lexsort((subs, sizes[subs]))]
            level_sizes = sizes[sm]
            parts = free_by_topic[j]
            # MemberAssignmentBalancer.nextLeastLoadedMember, a whole pass over the range at a time
            level = int(level_sizes[0]) - 1
            end = nxt = i = 0
            k = len(parts)
            while i < k:
                if nxt >= end:
                    level += 1
                    end = int(np.searchsorted(level_sizes, level, side="right"))
                    nxt = 0
                take = min(end - nxt, k - i)
                chunk = sm[nxt : nxt + take]
                owners[parts[i : i + take]] = chunk
                sizes[chunk] += 1
                nxt += take
                i += take

    def move_partition(self, flat: int, idx: int) -> None:
        """assignPartition for an owned partition: revoke from its owner, give to idx."""
        old = int(self.owners[flat])
        if old != -1:
            self.sizes[old] -= 1
            self.size_list[old] -= 1
            if self.leftovers and old in self.leftovers:
                self.leftovers[old].discard(flat)
        self.owners[flat] = idx
        self.sizes[idx] += 1
        self.size_list[idx] += 1

    def balance(self) -> None:
        topics = [j for j in range(len(self.group.topics)) if len(self.subscribers[j]) >= 2]
        if not topics:
            return
        ordered = self.sorted_topics(topics)
        last = -1
        # the balancer reads sizes one at a time: a list (kept equal to `sizes`) is faster
        self.size_list = self.sizes.tolist()
        self.subscriber_lists = [subs.tolist() for subs in self.subscribers]
        balancer = _Balancer(self.size_list)
        for _ in range(MAX_ITERATION_COUNT):
            for i, j in enumerate(ordered):
                if i == last:
                    return
                moved = self.balance_topic(j, balancer)
                if moved > 0 or last == -1:
                    last = i

    def balance_topic(self, j: int, balancer: _Balancer) -> int:
        subs = self.subscriber_lists[j]
        sz = list(map(self.size_list.__getitem__, subs))
        if max(sz) - min(sz) <= 1:
            return 0  # what balancer.initialize would report; nothing to move
        balancer.initialize(subs)
        base = int(self.group.base[j])
        seg = self.owners[base : base + int(self.group.counts[j])]
        order = np.argsort(seg, kind="stable")  # partitions grouped by owner, ascending
        parts = order.tolist()
        owners_sorted = seg[order]
        uniq, first = np.unique(owners_sorted, return_index=True)
        counts = np.diff(np.append(first, len(parts)))
        start = dict(zip(uniq.tolist(), first.tolist()))
        end = dict(zip(uniq.tolist(), (first + counts).tolist()))
        moved = 0
        while not balancer.is_balanced():
            most = -1
            while True:
                most = balancer.next_most_loaded()
                if most == -1:
                    break
                if most not in end or end[most] - start[most] <= 0:
                    balancer.exclude_most_loaded()
                    continue
                break
            if most == -1:
                break
            p = parts[end[most] - 1]
            end[most] -= 1
            least = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self.move_partition(base + p, least)
            moved += 1
        return moved

    def result(self) -> dict[str, list[TopicPartition]]:
        """Kept partitions as the members' own TopicPartition objects, then the new ones."""
        g, ow = self.group, self.owned
        km, kf = ow.member[self.keep], ow.flat[self.keep]
        still = self.owners[kf] == km
        if self.leftovers:
            for e in np.flatnonzero(~still).tolist():
                if kf[e] in self.leftovers.get(int(km[e]), ()):
                    still[e] = True
        entries = np.flatnonzero(self.keep)[still]
        out: list[list[TopicPartition]] = [[] for _ in g.member_ids]
        for m, k in zip(ow.member[entries].tolist(), entries.tolist()):
            out[m].append(ow.objects[k])
        known = np.zeros(len(self.owners), dtype=bool)
        known[kf[still & (self.owners[kf] == km)]] = True
        new = np.flatnonzero((self.owners >= 0) & ~known)
        if len(new):
            new = new[np.argsort(self.owners[new], kind="stable")]
            tps = g.topic_partitions(new)
            counts = np.bincount(self.owners[new], minlength=len(out)).tolist()
            pos = 0
            for m, c in enumerate(counts):
                if c:
                    out[m].extend(tps[pos : pos + c])
                    pos += c
        return dict(zip(g.member_ids, out))


def build_heterogeneous(group: UniformGroup) -> dict[str, list[TopicPartition]]:
    b = _Builder(group)
    if not group.topics:
        return {m: [] for m in group.member_ids}
    b.revoke_unsubscribed()
    b.assign_remaining()
    b.balance()
    return b.result()
