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

from ..model import TopicPartition
from .uniform import UniformGroup, topic_id

MAX_ITERATION_COUNT = 16


class _Balancer:
    """Kafka's MemberAssignmentBalancer: a least loaded range growing right, a most loaded range growing left."""

    __slots__ = ("sizes", "sorted_members", "least_end", "least_count", "next_least",
                 "most_start", "most_end", "most_count", "next_most")

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
        if not members:
            raise ValueError("Cannot balance an empty subscriber list.")
        sizes = self.sizes
        sm = sorted(members, key=lambda i: (sizes[i], i))
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
    def __init__(self, group: UniformGroup) -> None:
        self.member_ids = list(group.member_ids)
        self.partitions = group.partitions
        self.subscriptions = group.subscriptions
        self.owned = group.owned
        n = len(self.member_ids)
        self.sizes = [0] * n
        self.subscribers: dict[str, list[int]] = {}
        for idx, m in enumerate(self.member_ids):
            for t in self.subscriptions[m]:
                self.subscribers.setdefault(t, []).append(idx)
        self.owners: dict[str, list[int]] = {t: [-1] * self.partitions[t] for t in self.subscribers}
        # target assignment: member index -> topic -> partitions
        self.target: list[dict[str, set[int]]] = [{} for _ in range(n)]

    # -- ordering ----------------------------------------------------------------

    def _topic_sort_key(self, t: str):
        n, s = self.partitions[t], len(self.subscribers[t])
        return (-(n / s), s, topic_id(t))

    def sorted_topics(self, topics) -> list[str]:
        return sorted(topics, key=self._topic_sort_key)

    # -- steps ---------------------------------------------------------------------

    def revoke_unsubscribed(self) -> None:
        """maybeRevokePartitions: keep current partitions of still-subscribed topics."""
        for idx, m in enumerate(self.member_ids):
            subs = set(self.subscriptions[m])
            tgt = self.target[idx]
            for tp in self.owned[m]:
                t = tp.topic
                if t not in subs:
                    continue
                owners = self.owners[t]
                p = tp.partition
                if p >= len(owners):
                    continue  # beyond the topic's partition count: not a partition any more
                parts = tgt.get(t)
                if parts is None:
                    parts = tgt[t] = set()
                if p in parts:
                    continue
                parts.add(p)
                self.sizes[idx] += 1
                owners[p] = idx

    def unassigned(self) -> dict[str, list[int]]:
        out = {}
        for t, owners in self.owners.items():
            free = [p for p, o in enumerate(owners) if o == -1]
            if free:
                out[t] = free
        return out

    def assign_partition(self, t: str, p: int, idx: int) -> None:
        owners = self.owners[t]
        old = owners[p]
        if old != -1:
            parts = self.target[old].get(t)
            if parts is not None:
                parts.discard(p)
                if not parts:
                    del self.target[old][t]
            self.sizes[old] -= 1
        tgt = self.target[idx]
        parts = tgt.get(t)
        if parts is None:
            parts = tgt[t] = set()
        parts.add(p)
        owners[p] = idx
        self.sizes[idx] += 1

    def assign_remaining(self, unassigned: dict[str, list[int]]) -> None:
        balancer = _Balancer(self.sizes)
        for t in self.sorted_topics(unassigned):
            balancer.initialize(self.subscribers[t])
            for p in unassigned[t]:
                self.assign_partition(t, p, balancer.next_least_loaded())

    def balance(self) -> None:
        topics = [t for t in self.subscribers if len(self.subscribers[t]) >= 2]
        if not topics:
            return
        ordered = self.sorted_topics(topics)
        last = -1
        balancer = _Balancer(self.sizes)
        for _ in range(MAX_ITERATION_COUNT):
            for i, t in enumerate(ordered):
                if i == last:
                    return
                moved = self.balance_topic(t, balancer)
                if moved > 0 or last == -1:
                    last = i

    def balance_topic(self, t: str, balancer: _Balancer) -> int:
        moved = 0
        if balancer.initialize(self.subscribers[t]) <= 1:
            return 0
        owners = self.owners[t]
        parts = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for i, p in enumerate(parts):
            o = owners[p]
            if o not in start:
                start[o] = i
            end[o] = i + 1
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
            self.assign_partition(t, p, least)
            moved += 1
        return moved


def build_heterogeneous(group: UniformGroup) -> dict[str, list[TopicPartition]]:
    b = _Builder(group)
    if not b.subscribers:
        return {m: [] for m in b.member_ids}
    b.revoke_unsubscribed()
    b.assign_remaining(b.unassigned())
    b.balance()
    return {m: [TopicPartition(t, p) for t, ps in b.target[idx].items() for p in sorted(ps)]
            for idx, m in enumerate(b.member_ids)}
