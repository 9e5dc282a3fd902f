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

from ..model import (
    DEFAULT_GENERATION,
    GroupSpec,
    MemberSubscription,
    TopicMetadata,
    TopicPartition,
)
from .consumer_group_model import (
    SERVER_ASSIGNORS,
    ConsumerGroupConfig,
    ConsumerGroupMember,
    sorted_partitions,
)

_subscribed = attrgetter("subscribed_topics")


def subscription_metadata(
    members: Iterable[ConsumerGroupMember], topics: Mapping[str, TopicMetadata]
) -> dict[str, int]:
    """Subscribed topic -> partition count, for subscribed topics that exist (sorted by name)."""
    subscriptions = set(map(_subscribed, members))  # (most members share one)
    names = sorted({t for s in subscriptions for t in s if t in topics})
    return {t: topics[t].partitions for t in names}


def preferred_assignor(members: Iterable[ConsumerGroupMember], config: ConsumerGroupConfig) -> str:
    """The server assignor most members asked for, else the broker's default (the first configured)."""
    counts = Counter(m.server_assignor for m in members if m.server_assignor)
    if not counts:
        return config.assignors[0]
    best = max(counts.values())
    return min(name for name, c in counts.items() if c == best)


# per member: its target set, that set sorted, and the assignor input made of them (or None)
TargetOrder = tuple[
    frozenset[TopicPartition], tuple[TopicPartition, ...], MemberSubscription | None
]


def compute_target_assignment(
    members: Iterable[ConsumerGroupMember],
    current_target: Mapping[str, frozenset[TopicPartition]],
    topics: Mapping[str, TopicMetadata],
    assignor_name: str,
    orders: Mapping[str, TargetOrder] | None = None,
    new_orders: dict[str, TargetOrder] | None = None,
) -> dict[str, frozenset[TopicPartition]]:
    """Run the named server-side assignor (Kafka's name: "uniform" or "range").

    `orders` (optional) holds, per member, a target set, its sorted tuple and the assignor input
    built from them in an earlier call; `new_orders` is filled with the same for this result. A
    member's sorted target is then not sorted again nor its input rebuilt, and a target the
    assignor hands back unchanged is the same frozenset object, not a new one: most members keep
    their target from one epoch to the next, so an epoch costs the partitions that moved, not
    every partition (the assignor's own pass aside)."""
    from ..assign.registry import get_assignor  # lazy: assign/ is built alongside

    members = list(members)
    meta = subscription_metadata(members, topics)
    spec_topics = {t: topics[t] for t in meta}
    empty: tuple[TopicPartition, ...] = ()
    subs: list[MemberSubscription] = []
    owned_of: list[tuple[TopicPartition, ...]] = []
    kept: list[TargetOrder | None] = []  # per member: its order from `orders`, when reused whole
    topics_of: dict[tuple[str, ...], tuple[str, ...]] = {}  # a subscription -> its existing topics
    get_target = current_target.get
    get_hit = (orders if orders is not None else {}).get
    add_sub, add_owned, add_kept = subs.append, owned_of.append, kept.append
    for m in members:
        mid = m.member_id
        cur = get_target(mid)
        subscribed = m.subscribed_topics
        names = topics_of.get(subscribed)
        if names is None:
            names = topics_of[subscribed] = tuple(t for t in subscribed if t in meta)
        if cur:
            hit = get_hit(mid)
            if hit is not None and hit[0] is cur:
                owned = hit[1]
                sub = hit[2]
                if (
                    sub is not None
                    and sub.topics == names
                    and sub.rack == m.rack_id
                    and sub.instance_id == m.instance_id
                ):
                    add_sub(sub)
                    add_owned(owned)
                    add_kept(hit)
                    continue
            else:
                owned = tuple(sorted_partitions(cur))
        else:
            owned = empty
        add_sub(MemberSubscription(mid, names, owned, DEFAULT_GENERATION, m.rack_id, m.instance_id))
        add_owned(owned)
        add_kept(None)
    assignor = get_assignor(SERVER_ASSIGNORS.get(assignor_name, assignor_name))
    result = assignor.assign(GroupSpec(spec_topics, tuple(subs)))
    out: dict[str, frozenset[TopicPartition]] = {}
    get_result = result.get
    for sub, owned, hit in zip(subs, owned_of, kept):
        mid = sub.member_id
        cur = get_target(mid)
        got = get_result(mid, empty)
        if cur is not None and len(got) == len(owned) and tuple(got) == owned:
            out[mid] = cur  # handed back as it was given: the same set
            if new_orders is not None:
                # (the order reused whole is the same triple: kept, not built again)
                new_orders[mid] = hit if hit is not None else (cur, owned, sub)
            continue
        target = frozenset(got)
        if cur is not None and target == cur:
            target = cur
            if new_orders is not None:
                new_orders[mid] = (cur, owned, sub)
        out[mid] = target
    return out
