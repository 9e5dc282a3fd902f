"""Kafka's client-side `RoundRobinAssignor`.

All partitions of all subscribed topics, topics in name order, are dealt one
by one to the members in `MemberInfo` order (static members first), skipping
members not subscribed to the partition's topic; the dealer does not restart
per topic. Mirrors clients/.../consumer/RoundRobinAssignor.java.
"""

from __future__ import annotations

import numpy as np

from ..model import Assignment, GroupSpec
from .range import (
    group_by_owner,
    member_info_order,
    sort_java_strings,
    subscribed_topics,
    subscriber_matrix,
)
from .tpcache import partition_objects


class RoundRobinAssignor:
    """Kafka's `roundrobin` consumer assignor."""

    name = "roundrobin"

    def assign(self, spec: GroupSpec) -> Assignment:
        ring = member_info_order(spec.members)
        if not ring:
            return {}
        n_members = len(ring)
        topics = [
            t
            for t in sort_java_strings(subscribed_topics(spec.members))
            if t in spec.topics and spec.topics[t].partitions > 0
        ]
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
