"""KIP-848 server-side `UniformAssignor`: sticky, balanced, racks ignored.

A homogeneous group (every member subscribed to the same topics) goes to
`uniform_homogeneous`, any other to `uniform_heterogeneous`, as in Kafka's
group-coordinator/.../assignor/UniformAssignor.java. Both read the group
through `uniform_group` (topic ids, member order, owned partitions as arrays).
"""

from __future__ import annotations

from operator import attrgetter

from ..model import Assignment, GroupSpec
from .uniform_group import UniformGroup, group_view, topic_id, topic_id_hash, topic_id_string
from .uniform_heterogeneous import build_heterogeneous
from .uniform_homogeneous import build_homogeneous

_MEMBER_ID = attrgetter("member_id")

__all__ = ["UniformAssignor", "is_homogeneous", "topic_id", "topic_id_hash", "topic_id_string"]


def is_homogeneous(group: UniformGroup) -> bool:
    """SubscriptionType.HOMOGENEOUS as the coordinator decides it (ModernGroup.subscriptionType): every
    subscribed topic name has every member. Names count whether or not the topic exists, so a member
    subscribed to a missing topic the others do not name makes the group heterogeneous. That is the
    same as every member naming the same set of topics."""
    distinct = {frozenset(s) for s in {id(s): s for s in group.subscribed_names}.values()}
    return len(distinct) <= 1


class UniformAssignor:
    """KIP-848 `uniform` assignor."""

    name = "uniform"

    def assign(self, spec: GroupSpec) -> Assignment:
        if not spec.members:
            return {}
        group = group_view(spec)
        if is_homogeneous(group):
            result = build_homogeneous(group)
        else:
            result = build_heterogeneous(group)
        ids = list(map(_MEMBER_ID, spec.members))
        if len(result) == len(ids):  # both builders list every member
            return dict(zip(ids, map(result.__getitem__, ids)))
        return {m: result.get(m, []) for m in ids}
