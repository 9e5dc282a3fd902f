"""KIP-848 server-side `RangeAssignor` (Kafka's "range" in group-coordinator; "server-range" here).

Members are sorted (static members first by group.instance.id, then by
member id); for each topic, its subscribers in that order take consecutive
ranges of `partitions // subscribers`, the first `partitions % subscribers`
one more. No stickiness: the current assignment is not consulted, so equal
partition counts stay co-partitioned. Topics absent from metadata are not
part of a member's subscribed topic ids (the coordinator resolves names to
ids through the metadata image), so they are skipped; racks are ignored.

Mirrors group-coordinator/.../assignor/RangeAssignor.java. Its homogeneous
and heterogeneous paths give the same result (in a homogeneous group every
member subscribes to every topic), so one path serves both.
"""

from __future__ import annotations

from ..model import Assignment, GroupSpec, TopicPartition
from .range import member_info_order


def sorted_member_ids(spec: GroupSpec) -> list[str]:
    """`sortMemberIds`: instance ids first (String order), then member ids (the client MemberInfo order)."""
    return [m.member_id for m in member_info_order(spec.members)]


class ServerRangeAssignor:
    """KIP-848 server-side range assignor."""

    name = "server-range"

    def assign(self, spec: GroupSpec) -> Assignment:
        out: dict[str, list[TopicPartition]] = {m.member_id: [] for m in spec.members}
        if not spec.members:
            return out
        order = sorted_member_ids(spec)
        subs = {m.member_id: [t for t in dict.fromkeys(m.topics) if t in spec.topics] for m in spec.members}
        subscribers: dict[str, int] = {}
        for mid in order:
            for t in subs[mid]:
                subscribers[t] = subscribers.get(t, 0) + 1
        # topic -> [next range start, min quota, extra partitions left]
        state = {t: [0, spec.topics[t].partitions // n, spec.topics[t].partitions % n]
                 for t, n in subscribers.items()}
        for mid in order:
            lst = out[mid]
            for t in subs[mid]:
                st = state[t]
                start, quota = st[0], st[1]
                if st[2] > 0:
                    quota += 1
                    st[2] -= 1
                end = min(start + quota, spec.topics[t].partitions)
                st[0] = end
                if start < end:
                    lst.extend(TopicPartition(t, p) for p in range(start, end))
        return out
