"""What one rebalance round did: balance, stickiness, hand-overs held back, rack alignment.

Pure: computed from the round's input spec (who owned what) and its output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model import AssignmentView, GroupSpec, TopicPartition


@dataclass(frozen=True, slots=True)
class RoundStats:
    """Counts for one round; `to_json` is the `stats` object of `kafka-rebalance assign`."""

    member_counts: dict[str, int]  # partitions per member, every member of the group
    partitions: int  # partitions of subscribed topics that exist in metadata
    assigned: int  # distinct partitions assigned to someone
    kept: int  # assigned to a member that owned it before the round
    moved: int  # assigned to a member other than its previous owner(s)
    new: int  # assigned, and nobody owned it before
    held_back: int  # subscribed but unassigned (e.g. a cooperative round one)
    revoked: int  # (member, partition) ownerships that ended this round
    rack_mismatches: int  # member rack known, replica racks known, member rack not among them

    @property
    def min_partitions(self) -> int:
        return min(self.member_counts.values(), default=0)

    @property
    def max_partitions(self) -> int:
        return max(self.member_counts.values(), default=0)

    def to_json(self) -> dict[str, Any]:
        return {
            "members": dict(self.member_counts),
            "balance": {
                "min": self.min_partitions,
                "max": self.max_partitions,
                "spread": self.max_partitions - self.min_partitions,
            },
            "partitions": self.partitions,
            "assigned": self.assigned,
            "kept": self.kept,
            "moved": self.moved,
            "new": self.new,
            "held_back": self.held_back,
            "revoked": self.revoked,
            "rack_mismatches": self.rack_mismatches,
        }


def round_stats(spec: GroupSpec, result: AssignmentView) -> RoundStats:
    """Stats of `result`, an assignment computed for `spec`."""
    previous: dict[TopicPartition, set[str]] = {}
    for m in spec.members:
        for tp in m.owned:
            previous.setdefault(tp, set()).add(m.member_id)

    subscribed = {t for m in spec.members for t in m.topics if t in spec.topics}
    total = sum(spec.topics[t].partitions for t in subscribed)

    racks = {m.member_id: m.rack for m in spec.members if m.rack}
    counts = {m.member_id: 0 for m in spec.members}
    assigned: set[TopicPartition] = set()
    kept = moved = new = mismatches = 0
    for member, tps in result.items():
        counts[member] = len(tps)
        rack = racks.get(member)
        for tp in tps:
            assigned.add(tp)
            owners = previous.get(tp)
            if not owners:
                new += 1
            elif member in owners:
                kept += 1
            else:
                moved += 1
            if rack is not None:
                meta = spec.topics.get(tp.topic)
                replica_racks = meta.racks_of(tp.partition) if meta is not None else frozenset()
                if replica_racks and rack not in replica_racks:
                    mismatches += 1

    held_back = total - sum(
        1
        for tp in assigned
        if tp.topic in subscribed and 0 <= tp.partition < spec.topics[tp.topic].partitions
    )
    now = {(member, tp) for member, tps in result.items() for tp in tps}
    revoked = sum(1 for m in spec.members for tp in set(m.owned) if (m.member_id, tp) not in now)
    return RoundStats(
        counts, total, len(assigned), kept, moved, new, held_back, revoked, mismatches
    )
