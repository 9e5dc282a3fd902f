"""Kafka's client-side `RoundRobinAssignor`.

All partitions of all subscribed topics, topics in name order, are dealt one
by one to the members in `MemberInfo` order (static members first), skipping
members not subscribed to the partition's topic; the dealer does not restart
per topic. Mirrors clients/.../consumer/RoundRobinAssignor.java.
"""

from __future__ import annotations

from ..model import Assignment, GroupSpec, TopicPartition
from .range import member_info_order, sort_java_strings


class RoundRobinAssignor:
    """Kafka's `roundrobin` consumer assignor."""

    name = "roundrobin"

    def assign(self, spec: GroupSpec) -> Assignment:
        out: dict[str, list[TopicPartition]] = {m.member_id: [] for m in spec.members}
        ring = member_info_order(spec.members)
        if not ring:
            return out
        subs = [frozenset(m.topics) for m in ring]
        lists = [out[m.member_id] for m in ring]
        n = len(ring)
        all_topics = sort_java_strings({t for m in spec.members for t in m.topics})
        pos = 0  # the CircularIterator's cursor
        for topic in all_topics:
            meta = spec.topics.get(topic)
            if meta is None or meta.partitions <= 0:
                continue
            takers = [i for i in range(n) if topic in subs[i]]
            if len(takers) == n:
                # Everyone subscribes: the dealer simply cycles.
                for p in range(meta.partitions):
                    lists[pos].append(TopicPartition(topic, p))
                    pos += 1
                    if pos == n:
                        pos = 0
                continue
            is_taker = [topic in s for s in subs]
            for p in range(meta.partitions):
                while not is_taker[pos]:
                    pos = pos + 1 if pos + 1 < n else 0
                lists[pos].append(TopicPartition(topic, p))
                pos = pos + 1 if pos + 1 < n else 0
        return out
