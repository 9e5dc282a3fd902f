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

from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import attrgetter
from typing import Any

import numpy as np

from .. import native
from ..model import Assignment, GroupSpec, MemberSubscription, TopicPartition
from . import kernels
from .javacompat import string_key
from .tpcache import new_topic_partitions, partition_objects, topic_objects

__all__ = [
    "RangeAssignor",
    "group_by_owner",
    "member_info_order",
    "new_topic_partitions",
    "plain_ranges",
    "ranges_in_member_info_order",
    "sort_java_strings",
    "subscribed_topics",
    "subscriber_matrix",
]

# The compiled loop (assign/kernels.py built by mypyc) when the install built it; tests set this
# to compare both paths, whose numpy / plain-loop side is the reference.
USE_COMPILED = kernels.is_compiled()
# The Cython build of `kernels.ranges_in_rank_order` (assign/range_native.pyx) when the install
# built it and its stamp is fresh, else None; used on the compiled path before its twin, which
# takes what it declines (NotImplemented). Tests swap it.
NATIVE = native.cython_build(__package__ or "", "range_native")

_MEMBER_ID = attrgetter("member_id")
_INSTANCE_ID = attrgetter("instance_id")
_TOPICS = attrgetter("topics")


def _distinct_subscriptions(
    members: Iterable[MemberSubscription],
) -> dict[tuple[str, ...], list[int]]:
    """Member positions per distinct subscription; members sharing a tuple object are grouped without hashing it."""
    subs = list(map(_TOPICS, members))
    if not subs:
        return {}
    if len(set(map(id, subs))) == 1:
        return {subs[0]: list(range(len(subs)))}
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


def subscribed_topics(
    members: Iterable[MemberSubscription],
    groups: dict[tuple[str, ...], list[int]] | None = None,
) -> list[str]:
    """Every topic some member subscribes to, in first-seen order of the distinct subscriptions."""
    if groups is None:
        groups = _distinct_subscriptions(members)
    return list(dict.fromkeys(t for topics in groups for t in topics))


def subscriber_matrix(
    members: Sequence[MemberSubscription],
    topics: Sequence[str],
    groups: dict[tuple[str, ...], list[int]] | None = None,
) -> np.ndarray:
    """`M[i, j]`: member i subscribes to topics[j]. Members with equal subscriptions are filled together.

    `groups` is `_distinct_subscriptions(members)` when the caller has it.
    """
    col = {t: j for j, t in enumerate(topics)}
    m = np.zeros((len(members), len(topics)), dtype=bool)
    if groups is None:
        groups = _distinct_subscriptions(members)
    for subscription, rows in groups.items():
        cols = sorted({col[t] for t in subscription if t in col})
        if not cols:
            continue
        if len(groups) == 1:
            m[:, cols] = True
        else:
            m[np.ix_(sorted(rows), cols)] = True
    return m


def group_by_owner(
    member_ids: Sequence[str],
    owner: np.ndarray,
    flat: np.ndarray,
    table: np.ndarray,
) -> dict[str, list[TopicPartition]]:
    """Per member (owner = index into member_ids) its partitions `table[flat]`, in the order given."""
    n = len(member_ids)
    if not len(owner):
        return {mid: [] for mid in member_ids}
    order = np.argsort(owner, kind="stable")
    tps = table[flat[order]].tolist()
    counts = np.bincount(owner, minlength=n)
    ends = np.cumsum(counts)
    some = np.flatnonzero(counts)
    out: list[list[TopicPartition]] = [[] for _ in range(n)]
    for i, e, c in zip(some.tolist(), ends[some].tolist(), counts[some].tolist()):
        out[i] = tps[e - c : e]
    return dict(zip(member_ids, out))


def plain_ranges(
    member_ids: Sequence[str],
    subscribed: np.ndarray,
    topics: Sequence[str],
    counts: Sequence[int],
    member_of_rank: np.ndarray | None = None,
    by_subscribers: dict[Any, list[int]] | None = None,
) -> dict[str, list[TopicPartition]]:
    """Contiguous ranges per topic: its k-th subscriber (in rank order) gets
    `n // s + (k < n % s)` partitions starting at `k * (n // s) + min(k, n % s)`.

    Row r of `subscribed` is the member of rank r; that member is
    `member_ids[member_of_rank[r]]` (default: the r-th). The result lists the
    members in `member_ids` order. Topics with the same subscribers are
    computed together as one (subscriber x topic) grid; `by_subscribers`
    groups the topics (with partitions) that way when the caller knows it.
    """
    n_members = subscribed.shape[0]
    if by_subscribers is None:
        by_subscribers = {}
        if len(counts):
            # one key per topic: its column of subscribers, packed to bits
            packed = np.ascontiguousarray(np.packbits(subscribed, axis=0).T)
            width = packed.shape[1]
            raw = packed.tobytes()
            for j, n in enumerate(counts):
                if n > 0:
                    by_subscribers.setdefault(raw[j * width : (j + 1) * width], []).append(j)
    ranks_l, topic_l, start_l, len_l = [], [], [], []
    for js in by_subscribers.values():
        ranks = np.flatnonzero(subscribed[:, js[0]])
        s = len(ranks)
        if s == 0:
            continue
        sizes = np.asarray([counts[j] for j in js], dtype=np.int64)
        q, extra = sizes // s, sizes % s
        # subscribers past the largest partition count get nothing: leave them out of the grid
        s = min(s, int(sizes.max()))
        ranks = ranks[:s]
        k = np.arange(s, dtype=np.int64)[:, None]
        ranks_l.append(np.repeat(ranks, len(js)))
        topic_l.append(np.tile(np.asarray(js, dtype=np.int64), s))
        start_l.append((k * q + np.minimum(k, extra)).ravel())
        len_l.append((q + (k < extra)).ravel())
    if not ranks_l or n_members == 0:
        return {mid: [] for mid in member_ids}
    ranks, tix, starts, lengths = (np.concatenate(x) for x in (ranks_l, topic_l, start_l, len_l))
    counts_arr = np.asarray(counts, dtype=np.int64)
    base = np.cumsum(counts_arr) - counts_arr
    total = int(lengths.sum())
    offsets = np.cumsum(lengths) - lengths
    if member_of_rank is not None:
        ranks = member_of_rank[ranks]
    owner = np.repeat(ranks, lengths)
    # flat index of each assigned partition: its topic's base + its partition number
    flat = np.arange(total) - np.repeat(offsets - starts - base[tix], lengths)
    return group_by_owner(member_ids, owner, flat, partition_objects(topics, counts))


def ranges_in_member_info_order(spec: GroupSpec, with_empty_topics: bool) -> Assignment:
    """`plain_ranges` over the subscribed topics in metadata (with or without those of no
    partitions), subscribers in MemberInfo order; members in spec order."""
    members = spec.members
    if USE_COMPILED:  # the members' fields read directly, once (attrgetter is ~40 ns a read)
        ids, topics_of, instance_ids = kernels.member_columns(members)
        if NATIVE is not None:  # the MemberInfo order too in C (no static member, ASCII ids)
            done = NATIVE.ranges_in_member_info_order(
                ids, topics_of, instance_ids, spec.topics, with_empty_topics, topic_objects
            )
            if done is not NotImplemented:
                return done
        args = (
            ids,
            topics_of,
            list(_member_info_indices(tuple(ids), tuple(instance_ids))),
            spec.topics,
            with_empty_topics,
            topic_objects,
        )
        if NATIVE is not None:
            done = NATIVE.ranges_in_rank_order(*args)
            if done is not NotImplemented:
                return done
        return kernels.ranges_in_rank_order(*args)
    groups = _distinct_subscriptions(members)
    meta = spec.topics
    topics = [
        t
        for t in subscribed_topics(members, groups)
        if t in meta and (with_empty_topics or meta[t].partitions > 0)
    ]
    rank_list = member_info_indices(members)
    if sum(len(sub) * len(rows) for sub, rows in groups.items()) <= _SMALL:
        return _small_ranges(spec, groups, topics, rank_list)
    rank_order = np.asarray(rank_list, dtype=np.int64)
    subscribed = subscriber_matrix(members, topics, groups)[rank_order]
    counts = [meta[t].partitions for t in topics]
    # topics subscribed by the same distinct subscriptions have the same subscribers
    holders: dict[str, list[int]] = {t: [] for t in topics}
    for g, sub in enumerate(groups):
        for t in set(sub):
            if t in holders:
                holders[t].append(g)
    by_subscribers: dict[Any, list[int]] = {}
    for j, t in enumerate(topics):
        if counts[j] > 0:
            by_subscribers.setdefault(tuple(holders[t]), []).append(j)
    return plain_ranges(
        list(map(_MEMBER_ID, members)), subscribed, topics, counts, rank_order, by_subscribers
    )


def sort_java_strings(values: Iterable[str]) -> list[str]:
    """Strings sorted as Java's `String.compareTo` (UTF-16 code units) orders them."""
    return sorted(values, key=string_key)


_SMALL = 20_000  # subscriptions (member x topic) up to which plain loops beat numpy's per-call cost


def _small_ranges(
    spec: GroupSpec,
    groups: dict[tuple[str, ...], list[int]],
    topics: Sequence[str],
    rank_list: list[int],
) -> Assignment:
    """`plain_ranges` in plain Python loops, same output (order included), for small groups."""
    members = spec.members
    col = {t: j for j, t in enumerate(topics)}
    cols_of = {sub: sorted({col[t] for t in sub if t in col}) for sub in groups}
    subscribers: list[list[int]] = [[] for _ in topics]
    for i in rank_list:
        for j in cols_of[members[i].topics]:
            subscribers[j].append(i)
    counts = [spec.topics[t].partitions for t in topics]
    by_subscribers: dict[tuple[int, ...], list[int]] = {}
    for j, n in enumerate(counts):
        if n > 0 and subscribers[j]:
            by_subscribers.setdefault(tuple(subscribers[j]), []).append(j)
    out: list[list[TopicPartition]] = [[] for _ in members]
    for subs, js in by_subscribers.items():
        s = len(subs)
        for j in js:
            n = counts[j]
            q, extra = divmod(n, s)
            objs = topic_objects(topics[j], n)
            start = 0
            for k in range(min(s, n)):
                end = start + q + (k < extra)
                out[subs[k]] += objs[start:end]
                start = end
    return dict(zip(map(_MEMBER_ID, members), out))


def member_info_order(members: Sequence[MemberSubscription]) -> list[MemberSubscription]:
    """Kafka's `MemberInfo` order: static members first by group.instance.id, then the rest by member id."""
    return [members[i] for i in member_info_indices(members)]


def member_info_indices(members: Sequence[MemberSubscription]) -> list[int]:
    """Positions of `members` in `MemberInfo` order (see `member_info_order`)."""
    return list(
        _member_info_indices(tuple(map(_MEMBER_ID, members)), tuple(map(_INSTANCE_ID, members)))
    )


def _member_info_indices(
    ids: tuple[str, ...], instance_ids: tuple[str | None, ...]
) -> tuple[int, ...]:
    """Member positions in MemberInfo order. Computed on every call (no cache between calls: a
    rebalance after a join or a leave would miss it, only a benchmark repeating one group hits
    it; on 2,000 members it costs about 0.13 ms)."""
    if set(instance_ids) <= {None} and all(map(str.isascii, ids)):
        # no static member, and ASCII ids: code point order is String.compareTo order
        return tuple(sorted(range(len(ids)), key=ids.__getitem__))
    # static members first, by group.instance.id; then the others by member id
    keys = [
        (1, string_key(mid)) if iid is None else (0, string_key(iid))
        for mid, iid in zip(ids, instance_ids)
    ]
    return tuple(sorted(range(len(ids)), key=keys.__getitem__))


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
        racks = {m.member_id: m.rack for m in members if m.rack}
        if not racks:
            # No consumer rack: rack-aware assignment cannot apply, plain ranges for every topic.
            return self._assign_without_racks(spec)
        ordered = member_info_order(members)
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
    def _assign_without_racks(spec: GroupSpec) -> Assignment:
        return ranges_in_member_info_order(spec, with_empty_topics=False)

    @staticmethod
    def _assign_plain(s: _TopicState, out: dict[str, list[TopicPartition]]) -> None:
        """Range assignment without rack constraints: contiguous ranges in consumer order."""
        start = 0
        tps = topic_objects(s.topic, s.n)
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
