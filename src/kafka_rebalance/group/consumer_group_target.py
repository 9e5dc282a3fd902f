"""Target assignment of a KIP-848 group: subscription metadata and the server-side assignor call.

The coordinator, not a group leader, computes every member's target
assignment whenever the group epoch moves ahead of the assignment epoch
(Kafka's TargetAssignmentBuilder). Input: members in the group's join order
(the assignors emulate Kafka's HashMap iteration from it), each with its
subscribed topics (those present in the metadata), rack, instance id and its
current *target* assignment as `owned`, so sticky assignors keep it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from operator import attrgetter

from ..model import GroupSpec, MemberSubscription, TopicMetadata, TopicPartition
from .consumer_group_model import SERVER_ASSIGNORS, ConsumerGroupConfig, ConsumerGroupMember

_tp_key = attrgetter("topic", "partition")


def subscription_metadata(
    members: Iterable[ConsumerGroupMember], topics: Mapping[str, TopicMetadata]
) -> dict[str, int]:
    """Subscribed topic -> partition count, for subscribed topics that exist (sorted by name)."""
    names = sorted({t for m in members for t in m.subscribed_topics if t in topics})
    return {t: topics[t].partitions for t in names}


def preferred_assignor(members: Iterable[ConsumerGroupMember], config: ConsumerGroupConfig) -> str:
    """The server assignor most members asked for, else the broker's default (the first configured)."""
    counts = Counter(m.server_assignor for m in members if m.server_assignor)
    if not counts:
        return config.assignors[0]
    best = max(counts.values())
    return min(name for name, c in counts.items() if c == best)


def compute_target_assignment(
    members: Iterable[ConsumerGroupMember],
    current_target: Mapping[str, frozenset[TopicPartition]],
    topics: Mapping[str, TopicMetadata],
    assignor_name: str,
) -> dict[str, frozenset[TopicPartition]]:
    """Run the named server-side assignor (Kafka's name: "uniform" or "range")."""
    from ..assign.registry import get_assignor  # lazy: assign/ is built alongside

    members = list(members)
    meta = subscription_metadata(members, topics)
    spec_topics = {t: topics[t] for t in meta}
    subs = tuple(
        MemberSubscription(
            member_id=m.member_id,
            topics=tuple(t for t in m.subscribed_topics if t in meta),
            owned=tuple(sorted(current_target.get(m.member_id, ()), key=_tp_key)),
            rack=m.rack_id,
            instance_id=m.instance_id,
        )
        for m in members
    )
    assignor = get_assignor(SERVER_ASSIGNORS.get(assignor_name, assignor_name))
    result = assignor.assign(GroupSpec(spec_topics, subs))
    return {m.member_id: frozenset(result.get(m.member_id, ())) for m in members}
