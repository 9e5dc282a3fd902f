"""What if this live group used another assignor? Our Kafka-exact assignor on the same members.

The live group gives the members (in the order the coordinator lists them), their
subscriptions (classic: decoded from the JoinGroup metadata; KIP-848: the subscribed topic
names; else the topics of their current partitions), their racks and, as owned partitions,
their current assignment, so sticky strategies start from what the group holds now. A
cooperative strategy revokes before it moves: when its first round holds partitions back, a
second round (owned = the first round's result) gives where they land, as the group would do.
`moved` counts partitions whose owner would differ from the live owner.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..assign.registry import get_assignor
from ..assign.stats import round_stats
from ..model import GroupSpec, MemberSubscription, TopicMetadata, TopicPartition
from .groups import Group


@dataclass(frozen=True)
class WhatIf:
    strategy: str
    live: dict[str, tuple[TopicPartition, ...]]
    proposed: dict[str, tuple[TopicPartition, ...]]
    rounds: int
    moves: tuple[tuple[TopicPartition, str | None, str | None], ...]  # (tp, live owner, new owner)

    @property
    def moved(self) -> int:
        return len(self.moves)

    def to_json(self) -> dict:
        def pairs(tps):
            return [[tp.topic, tp.partition] for tp in tps]

        return {
            "strategy": self.strategy,
            "rounds": self.rounds,
            "partitions_moved": self.moved,
            "members": [
                {
                    "member_id": m,
                    "live": pairs(self.live.get(m, ())),
                    "proposed": pairs(self.proposed.get(m, ())),
                }
                for m in self.live
            ],
            "moves": [
                {"topic": tp.topic, "partition": tp.partition, "from": a, "to": b}
                for tp, a, b in self.moves
            ],
        }

    def kafka_text(self) -> str:
        """A plain block after Kafka's text (the tool has no such view)."""
        lines = [f"\nWHAT-IF {self.strategy}: {self.moved} partition(s) would move"]
        for m in self.live:
            lines.append(
                f"{m} live={_plain(self.live.get(m, ()))} {self.strategy}={_plain(self.proposed.get(m, ()))}"
            )
        return "\n".join(lines) + "\n"


def _plain(tps) -> str:
    return (
        ",".join(
            f"{tp.topic}-{tp.partition}" for tp in sorted(tps, key=lambda t: (t.topic, t.partition))
        )
        or "-"
    )


def what_if(group: Group, partition_counts: Mapping[str, int], strategy: str) -> WhatIf:
    """Run `strategy` on the live members; a second round when a cooperative first round held back."""
    members = []
    for m in group.members:
        subscribed = m.subscribed_topics or tuple(dict.fromkeys(tp.topic for tp in m.assignment))
        members.append(
            MemberSubscription(
                m.member_id,
                tuple(subscribed),
                owned=tuple(m.assignment),
                generation=m.generation if m.generation >= 0 else 1,
                rack=m.rack,
                instance_id=m.group_instance_id,
            )
        )
    topics = {
        t: TopicMetadata(t, n)
        for t, n in partition_counts.items()
        if any(t in s.topics for s in members)
    }
    spec = GroupSpec(topics, tuple(members))
    assignor = get_assignor(strategy)
    result = assignor.assign(spec)
    rounds = 1
    if round_stats(spec, result).held_back and strategy == "cooperative-sticky":
        spec = GroupSpec(
            topics,
            tuple(
                MemberSubscription(
                    s.member_id,
                    s.topics,
                    tuple(result.get(s.member_id, ())),
                    s.generation + 1,
                    s.rack,
                    s.instance_id,
                )
                for s in members
            ),
        )
        result = assignor.assign(spec)
        rounds = 2
    live = {m.member_id: tuple(m.assignment) for m in group.members}
    proposed = {m.member_id: tuple(result.get(m.member_id, ())) for m in group.members}
    live_owner = {tp: mid for mid, tps in live.items() for tp in tps}
    new_owner = {tp: mid for mid, tps in proposed.items() for tp in tps}
    moves = tuple(
        (tp, live_owner.get(tp), new_owner.get(tp))
        for tp in sorted(set(live_owner) | set(new_owner), key=lambda t: (t.topic, t.partition))
        if live_owner.get(tp) != new_owner.get(tp)
    )
    return WhatIf(strategy, live, proposed, rounds, moves)
