"""Kafka's client-side `RoundRobinAssignor`.

All partitions of all subscribed topics, topics in name order, are dealt one
by one to the members in `MemberInfo` order (static members first), skipping
members not subscribed to the partition's topic; the dealer does not restart
per topic. Mirrors clients/.../consumer/RoundRobinAssignor.java.
"""

from __future__ import annotations

from bisect import bisect_left

import numpy as np

from ..model import Assignment, GroupSpec, MemberSubscription, TopicPartition
from . import kernels
from .range import (
    group_by_owner,
    member_info_indices,
    member_info_order,
    sort_java_strings,
    subscribed_topics,
    subscriber_matrix,
)
from .tpcache import partition_objects, topic_objects

# The compiled loop (assign/kernels.py built by mypyc) when the install built it; tests set this
# to compare both paths, whose numpy / plain-loop side is the reference.
USE_COMPILED = kernels.is_compiled()

_SMALL = 20_000  # partitions (and member x topic cells) up to which plain loops beat numpy


def _small_round_robin(
    spec: GroupSpec, ring: list[MemberSubscription], topics: list[str], counts: list[int]
) -> Assignment:
    """The same deal in plain loops (same output, order included), for small groups."""
    n_members = len(ring)
    index = {t: j for j, t in enumerate(topics)}
    takers: list[list[int]] = [[] for _ in topics]
    cols: dict[int, list[int]] = {}
    for i, m in enumerate(ring):
        js = cols.get(id(m.topics))
        if js is None:
            js = cols[id(m.topics)] = sorted({index[t] for t in m.topics if t in index})
        for j in js:
            takers[j].append(i)
    out: list[list[TopicPartition]] = [[] for _ in ring]
    pos = 0  # the CircularIterator's cursor, as a ring position
    for j, t in enumerate(topics):
        n, who = counts[j], takers[j]
        s = len(who)
        first = bisect_left(who, pos) % s
        for p, tp in enumerate(topic_objects(t, n)[:n]):
            out[who[(first + p) % s]].append(tp)
        pos = (who[(first + n - 1) % s] + 1) % n_members
    by_member = dict(zip([m.member_id for m in ring], out))
    return {m.member_id: by_member[m.member_id] for m in spec.members}


class RoundRobinAssignor:
    """Kafka's `roundrobin` consumer assignor."""

    name = "roundrobin"

    def assign(self, spec: GroupSpec) -> Assignment:
        if USE_COMPILED and spec.members:
            fast = kernels.round_robin(
                [m.member_id for m in spec.members],
                [m.topics for m in spec.members],
                member_info_indices(spec.members),
                spec.topics,
                sort_java_strings,
                topic_objects,
            )
            if fast is not None:
                return fast
        ring = member_info_order(spec.members)
        if not ring:
            return {}
        n_members = len(ring)
        topics = [
            t
            for t in sort_java_strings(subscribed_topics(spec.members))
            if t in spec.topics and spec.topics[t].partitions > 0
        ]
        counts = [spec.topics[t].partitions for t in topics]
        if sum(counts) <= _SMALL and n_members * len(topics) <= _SMALL:
            return _small_round_robin(spec, ring, topics, counts)
        subscribed = subscriber_matrix(ring, topics)
        owners, flats = [], []
        base = 0
        pos = 0  # the CircularIterator's cursor, as a ring position
        for j, t in enumerate(topics):
            n = spec.topics[t].partitions
            takers = np.flatnonzero(subscribed[:, j])
            s = len(takers)
            if s == n_members:
                owner = (pos + np.arange(n)) % n_members
            else:
                # skip non-subscribers: the dealer resumes at the first subscriber at or after the cursor
                first = int(np.searchsorted(takers, pos))
                owner = takers[(first % s + np.arange(n)) % s]
            pos = (int(owner[-1]) + 1) % n_members
            owners.append(owner)
            flats.append(np.arange(base, base + n))
            base += n
        if not owners:
            return {m.member_id: [] for m in spec.members}
        by_member = group_by_owner(
            [m.member_id for m in ring],
            np.concatenate(owners),
            np.concatenate(flats),
            partition_objects(topics, [spec.topics[t].partitions for t in topics]),
        )
        return {m.member_id: by_member[m.member_id] for m in spec.members}
