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

from ..model import Assignment, GroupSpec
from .base import pause_gc, resume_gc
from .range import member_info_order, ranges_in_member_info_order


def sorted_member_ids(spec: GroupSpec) -> list[str]:
    """`sortMemberIds`: instance ids first (String order), then member ids (the client MemberInfo order)."""
    return [m.member_id for m in member_info_order(spec.members)]


class ServerRangeAssignor:
    """KIP-848 server-side range assignor."""

    name = "server-range"

    def assign(self, spec: GroupSpec) -> Assignment:
        if not spec.members:
            return {}
        # subscribed topic ids: only topics present in metadata
        enabled = pause_gc()  # gc_paused, allocating nothing first
        try:
            return ranges_in_member_info_order(spec, with_empty_topics=True)
        finally:
            resume_gc(enabled)
