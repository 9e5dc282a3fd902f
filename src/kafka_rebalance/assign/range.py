"""Kafka's client-side `RangeAssignor`, with KIP-881 rack awareness.

Per topic, the sorted subscribers each take a contiguous range of
`partitions // consumers` partitions, the first `partitions % consumers`
one more. When consumer racks and partition racks are both known (and not
every partition is on every rack), a first pass gives each consumer the
partitions on its own rack within the same per-topic quota; topics with the
same subscribers and the same partition count stay co-partitioned (partition
p of each goes to one consumer). The rest is assigned by plain ranges.

Mirrors clients/.../consumer/RangeAssignor.java; the result's sets do not
depend on HashMap order, so none is emulated here.
"""

from __future__ import annotations

import gc
import itertools
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from ..model import Assignment, GroupSpec, MemberSubscription, TopicPartition
from .javacompat import string_key

_TP_NEW = TopicPartition.__new__
_TP_SET_TOPIC = TopicPartition.topic.__set__  # slot descriptors: C-level field stores
_TP_SET_PARTITION = TopicPartition.partition.__set__


def new_topic_partitions(
    topics: Sequence[str] | str, partitions: Sequence[int]
) -> list[TopicPartition]:
    """Many `TopicPartition(topic, p)` at once, built in C loops (about 2x faster than the constructor).

    `topics` is one topic for all, or one per partition. The objects are the
    same as the constructor's: TopicPartition is a frozen slotted dataclass
    without __post_init__, so storing its two slots is all __init__ does.
    """
    n = len(partitions)
    # A million fresh GC-tracked objects would trigger many cyclic collections that can
    # find nothing (the new objects hold only str and int); pause the collector meanwhile.
    collecting = gc.isenabled()
    gc.disable()
    try:
        objs = list(map(_TP_NEW, itertools.repeat(TopicPartition, n)))
        deque(
            map(
                _TP_SET_TOPIC,
                objs,
                itertools.repeat(topics, n) if isinstance(topics, str) else topics,
            ),
            0,
        )
        deque(map(_TP_SET_PARTITION, objs, partitions), 0)
    finally:
        if collecting:
            gc.enable()
    return objs


def _distinct_subscriptions(
    members: Iterable[MemberSubscription],
) -> dict[tuple[str, ...], list[int]]:
    """Member positions per distinct subscription; members sharing a tuple object are grouped without hashing it."""
    by_object: dict[int, tuple[tuple[str, ...], list[int]]] = {}
    for i, m in enumerate(members):
        entry = by_object.get(id(m.topics))
        if entry is None:
            by_object[id(m.topics)] = (m.topics, [i])
        else:
            entry[1].append(i)
    out: dict[tuple[str, ...], list[int]] = {}
    for topics, rows in by_object.values():
        out.setdefault(topics, []).extend(rows)
    return out


def subscribed_topics(members: Iterable[MemberSubscription]) -> list[str]:
    """Every topic some member subscribes to, in first-seen order of the distinct subscriptions."""
    return list(dict.fromkeys(t for topics in _distinct_subscriptions(members) for t in topics))


def subscriber_matrix(members: Sequence[MemberSubscription], topics: Sequence[str]) -> np.ndarray:
    """`M[i, j]`: member i subscribes to topics[j]. Members with equal subscriptions are filled together."""
    col = {t: j for j, t in enumerate(topics)}
    m = np.zeros((len(members), len(topics)), dtype=bool)
    for subscription, rows in _distinct_subscriptions(members).items():
        cols = sorted({col[t] for t in subscription if t in col})
        if cols:
            m[np.ix_(sorted(rows), cols)] = True
    return m


def group_by_owner(
    member_ids: Sequence[str],
    owner: np.ndarray,
    topic_index: np.ndarray,
    partition: np.ndarray,
    topics: Sequence[str],
) -> dict[str, list[TopicPartition]]:
    """Per member (owner = index into member_ids) its partitions, in the order given."""
    order = np.argsort(owner, kind="stable")
    names = np.array(list(topics), dtype=object)[topic_index[order]].tolist() if len(order) else []
    tps = new_topic_partitions(names, partition[order].tolist())
    counts = (
        np.bincount(owner, minlength=len(member_ids)).tolist()
        if len(owner)
        else [0] * len(member_ids)
    )
    out: dict[str, list[TopicPartition]] = {}
    pos = 0
    for mid, c in zip(member_ids, counts):
        out[mid] = tps[pos : pos + c]
        pos += c
    return out


def plain_ranges(
    member_ids: Sequence[str], subscribed: np.ndarray, topics: Sequence[str], counts: Sequence[int]
) -> dict[str, list[TopicPartition]]:
    """Contiguous ranges per topic: its k-th subscriber (in `member_ids` order) gets
    `n // s + (k < n % s)` partitions starting at `k * (n // s) + min(k, n % s)`.

    Topics with the same subscribers are computed together as one (subscriber x topic) grid.
    """
    by_subscribers: dict[bytes, list[int]] = {}
    for j, n in enumerate(counts):
        if n > 0:
            by_subscribers.setdefault(subscribed[:, j].tobytes(), []).append(j)
    ranks_l, topic_l, start_l, len_l = [], [], [], []
    for js in by_subscribers.values():
        ranks = np.flatnonzero(subscribed[:, js[0]])
        s = len(ranks)
        if s == 0:
            continue
        n = np.asarray([counts[j] for j in js], dtype=np.int64)
        q, extra = n // s, n % s
        k = np.arange(s, dtype=np.int64)[:, None]
        ranks_l.append(np.repeat(ranks, len(js)))
        topic_l.append(np.tile(np.asarray(js, dtype=np.int64), s))
        start_l.append((k * q + np.minimum(k, extra)).ravel())
        len_l.append((q + (k < extra)).ravel())
    if not ranks_l:
        return {mid: [] for mid in member_ids}
    ranks, tix, starts, lengths = (np.concatenate(x) for x in (ranks_l, topic_l, start_l, len_l))
    total = int(lengths.sum())
    offsets = np.cumsum(lengths) - lengths
    owner = np.repeat(ranks, lengths)
    partition = np.arange(total) - np.repeat(offsets - starts, lengths)
    return group_by_owner(member_ids, owner, np.repeat(tix, lengths), partition, topics)


def sort_java_strings(values: Iterable[str]) -> list[str]:
    """Strings sorted as Java's `String.compareTo` (UTF-16 code units) orders them."""
    return sorted(values, key=string_key)


def member_info_order(members: Iterable[MemberSubscription]) -> list[MemberSubscription]:
    """Kafka's `MemberInfo` order: static members first by group.instance.id, then the rest by member id."""
    return sorted(
        members,
        key=lambda m: (
            (0, string_key(m.instance_id))
            if m.instance_id is not None
            else (1, string_key(m.member_id))
        ),
    )


class _TopicState:
    """One topic's progress: who may still take how many, what is still free (TopicAssignmentState)."""

    __slots__ = (
        "topic",
        "consumers",
        "racks",
        "partition_racks",
        "unassigned",
        "assigned_count",
        "per_consumer",
        "extra_left",
        "needs_rack_aware",
        "n",
    )

    def __init__(
        self,
        topic: str,
        n: int,
        consumers: list[str],
        racks: Mapping[str, str],
        partition_racks: Callable[[int], frozenset[str]],
    ) -> None:
        self.topic = topic
        self.n = n
        self.consumers = consumers  # sorted, unique
        self.racks = {c: racks[c] for c in consumers if c in racks}
        self.unassigned: list[int] = list(range(n))
        self.assigned_count = dict.fromkeys(consumers, 0)
        self.per_consumer = n // len(consumers) if consumers else 0
        self.extra_left = n % len(consumers) if consumers else 0
        consumer_racks = set(self.racks.values())
        if consumer_racks:
            self.partition_racks = [partition_racks(p) for p in range(n)]
            all_partition_racks: set[str] = set().union(*self.partition_racks) if n else set()
        else:
            self.partition_racks = []
            all_partition_racks = set()
        # AbstractPartitionAssignor.useRackAwareAssignment
        self.needs_rack_aware = (
            bool(consumer_racks)
            and not consumer_racks.isdisjoint(all_partition_racks)
            and not all(r == all_partition_racks for r in self.partition_racks)
        )

    @property
    def rack_key_size(self) -> int:
        """`partitionRacks.size()`: the partition count when any consumer has a rack, else 0."""
        return len(self.partition_racks)

    def racks_match(self, consumer: str, p: int) -> bool:
        rack = self.racks.get(consumer)
        if rack is None:
            return True
        return p < len(self.partition_racks) and rack in self.partition_racks[p]

    def max_assignable(self, consumer: str) -> int:
        m = self.per_consumer + (1 if self.extra_left > 0 else 0) - self.assigned_count[consumer]
        return m if m > 0 else 0

    def on_assigned(self, consumer: str, partitions: list[int]) -> None:
        count = self.assigned_count[consumer] + len(partitions)
        self.assigned_count[consumer] = count
        if count > self.per_consumer:
            self.extra_left -= 1
        if len(partitions) == 1:
            self.unassigned.remove(partitions[0])
        else:
            taken = set(partitions)
            self.unassigned = [p for p in self.unassigned if p not in taken]


class RangeAssignor:
    """Kafka's `range` consumer assignor."""

    name = "range"

    def assign(self, spec: GroupSpec) -> Assignment:
        members = spec.members
        ordered = member_info_order(members)
        racks = {m.member_id: m.rack for m in members if m.rack}
        if not racks:
            # No consumer rack: rack-aware assignment cannot apply, plain ranges for every topic.
            return self._assign_without_racks(spec, ordered)
        # consumersPerTopic: subscribers of each topic, in MemberInfo order, deduplicated
        subscribers: dict[str, list[str]] = {}
        for m in ordered:
            for t in dict.fromkeys(m.topics):
                subscribers.setdefault(t, []).append(m.member_id)

        states: list[_TopicState] = []
        for topic, consumers in subscribers.items():
            meta = spec.topics.get(topic)
            if meta is None or meta.partitions <= 0:
                continue
            states.append(_TopicState(topic, meta.partitions, consumers, racks, meta.racks_of))

        out: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
        use_rack_aware = any(s.needs_rack_aware for s in states)
        if use_rack_aware:
            self._assign_with_rack_matching(states, out)
            for s in states:
                self._assign_ranges(s, None, out)
            for lst in out.values():
                lst.sort(key=lambda tp: (tp.topic, tp.partition))
        else:
            for s in states:
                self._assign_plain(s, out)
        return out

    @staticmethod
    def _assign_without_racks(spec: GroupSpec, ordered: list[MemberSubscription]) -> Assignment:
        topics = [
            t
            for t in subscribed_topics(spec.members)
            if t in spec.topics and spec.topics[t].partitions > 0
        ]
        subscribed = subscriber_matrix(ordered, topics)
        ids = [m.member_id for m in ordered]
        by_member = plain_ranges(
            ids, subscribed, topics, [spec.topics[t].partitions for t in topics]
        )
        return {m.member_id: by_member[m.member_id] for m in spec.members}

    @staticmethod
    def _assign_plain(s: _TopicState, out: dict[str, list[TopicPartition]]) -> None:
        """Range assignment without rack constraints: contiguous ranges in consumer order."""
        start = 0
        tps = new_topic_partitions(s.topic, range(s.n))
        for i, c in enumerate(s.consumers):
            take = s.per_consumer + (1 if i < s.extra_left else 0)
            if take:
                out[c].extend(tps[start : start + take])
            start += take

    @staticmethod
    def _give(
        s: _TopicState, consumer: str, partitions: list[int], out: dict[str, list[TopicPartition]]
    ) -> None:
        out[consumer].extend(TopicPartition(s.topic, p) for p in partitions)
        s.on_assigned(consumer, partitions)

    def _assign_ranges(
        self, s: _TopicState, rack_filter: bool | None, out: dict[str, list[TopicPartition]]
    ) -> None:
        for c in s.consumers:
            if not s.unassigned:
                break
            limit = s.max_assignable(c)
            if limit <= 0:
                continue
            if rack_filter:
                chosen = []
                for p in s.unassigned:
                    if s.racks_match(c, p):
                        chosen.append(p)
                        if len(chosen) >= limit:
                            break
            else:
                chosen = s.unassigned[:limit]
            if chosen:
                self._give(s, c, chosen, out)

    def _assign_with_rack_matching(
        self, states: list[_TopicState], out: dict[str, list[TopicPartition]]
    ) -> None:
        groups: dict[tuple, dict[int, list[_TopicState]]] = {}
        for s in states:
            key = tuple((c, s.racks.get(c)) for c in s.consumers)
            groups.setdefault(key, {}).setdefault(s.rack_key_size, []).append(s)
        for by_size in groups.values():
            for num_partitions, co in by_size.items():
                if len(co) > 1:
                    self._assign_co_partitioned(co[0].consumers, num_partitions, co, out)
                elif co[0].needs_rack_aware:
                    self._assign_ranges(co[0], True, out)

    def _assign_co_partitioned(
        self,
        consumers: list[str],
        num_partitions: int,
        co: list[_TopicState],
        out: dict[str, list[TopicPartition]],
    ) -> None:
        remaining = list(consumers)
        for p in range(num_partitions):
            match = next(
                (
                    c
                    for c in remaining
                    if all(s.racks_match(c, p) and s.max_assignable(c) > 0 for s in co)
                ),
                None,
            )
            if match is None:
                continue
            for s in co:
                self._give(s, match, [p], out)
            if not any(s.max_assignable(match) > 0 for s in co):
                remaining.remove(match)
                if not remaining:
                    break
