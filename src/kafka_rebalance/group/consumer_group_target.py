"""Target assignment of a KIP-848 group: subscription metadata and the server-side assignor call.

The coordinator, not a group leader, computes every member's target
assignment whenever the group epoch moves ahead of the assignment epoch
(Kafka's TargetAssignmentBuilder). Input: members in the group's join order
(the assignors emulate Kafka's HashMap iteration from it), each with its
subscribed topics (those present in the metadata), rack, instance id and its
current *target* assignment as `owned`, so sticky assignors keep it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import cast

from ..model import (
    DEFAULT_GENERATION,
    GroupSpec,
    MemberSubscription,
    TopicMetadata,
    TopicPartition,
)
from ..model_fields import MemberFields
from .consumer_group_model import (
    SERVER_ASSIGNORS,
    ConsumerGroupConfig,
    ConsumerGroupMember,
    sorted_partitions,
)


def subscription_metadata(
    members: Iterable[ConsumerGroupMember], topics: Mapping[str, TopicMetadata]
) -> dict[str, int]:
    """Subscribed topic -> partition count, for subscribed topics that exist (sorted by name)."""
    subscriptions: set[tuple[str, ...]] = set()  # (most members share one)
    last: tuple[str, ...] | None = None
    for m in members:
        s = m.subscribed_topics
        if s is not last:  # (a run of members with one tuple object: hashed once)
            subscriptions.add(s)
            last = s
    names = sorted({t for s in subscriptions for t in s if t in topics})
    return {t: topics[t].partitions for t in names}


def preferred_assignor(members: Iterable[ConsumerGroupMember], config: ConsumerGroupConfig) -> str:
    """The server assignor most members asked for, else the broker's default (the first configured)."""
    counts: dict[str, int] = {}
    for m in members:
        name = m.server_assignor
        if name:
            counts[name] = counts.get(name, 0) + 1
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
    # the maps as dicts (they are, from the group): compiled lookups, not generic method calls
    targets: dict[str, frozenset[TopicPartition]] = (
        cast(dict[str, frozenset[TopicPartition]], current_target)
        if type(current_target) is dict
        else dict(current_target)
    )
    hits: dict[str, TargetOrder] = (
        {}
        if orders is None
        else (cast(dict[str, TargetOrder], orders) if type(orders) is dict else dict(orders))
    )
    ids: list[str] = []
    curs: list[frozenset[TopicPartition] | None] = []
    subs: list[MemberSubscription] = []
    owned_of: list[tuple[TopicPartition, ...]] = []
    kept: list[TargetOrder | None] = []  # per member: its order from `orders`, when reused whole
    topics_of: dict[tuple[str, ...], tuple[str, ...]] = {}  # a subscription -> its existing topics
    last_subscribed: tuple[str, ...] | None = None
    names: tuple[str, ...] = ()
    for m in members:
        mid = m.member_id
        cur = targets.get(mid)
        ids.append(mid)
        curs.append(cur)
        subscribed = m.subscribed_topics
        if subscribed is not last_subscribed:  # (a run of members with one tuple: looked up once)
            found = topics_of.get(subscribed)
            if found is None:
                found = topics_of[subscribed] = tuple(t for t in subscribed if t in meta)
            names = found
            last_subscribed = subscribed
        if cur is not None and len(cur) > 0:
            hit = hits.get(mid)
            if hit is not None and hit[0] is cur:
                owned = hit[1]
                sub = hit[2]
                if sub is not None:
                    fields: object = sub
                    if isinstance(fields, MemberFields):  # (compiled storage: slots read directly)
                        rack, instance, sub_names = fields.rack, fields.instance_id, fields.topics
                    else:
                        rack, instance, sub_names = sub.rack, sub.instance_id, sub.topics
                    if (
                        (sub_names is names or sub_names == names)
                        and (rack is m.rack_id or rack == m.rack_id)
                        and (instance is m.instance_id or instance == m.instance_id)
                    ):
                        subs.append(sub)
                        owned_of.append(owned)
                        kept.append(hit)
                        continue
            else:
                owned = tuple(sorted_partitions(cur))
        else:
            owned = empty
        subs.append(
            MemberSubscription(mid, names, owned, DEFAULT_GENERATION, m.rack_id, m.instance_id)
        )
        owned_of.append(owned)
        kept.append(None)
    assignor = get_assignor(SERVER_ASSIGNORS.get(assignor_name, assignor_name))
    result = assignor.assign(GroupSpec(spec_topics, tuple(subs)))
    got_of: dict[str, Sequence[TopicPartition]] = (
        cast(dict[str, Sequence[TopicPartition]], result) if type(result) is dict else dict(result)
    )
    out: dict[str, frozenset[TopicPartition]] = {}
    for i in range(len(ids)):
        mid = ids[i]
        cur = curs[i]
        owned = owned_of[i]
        got = got_of.get(mid, empty)
        if cur is not None and (got is owned or (len(got) == len(owned) and tuple(got) == owned)):
            out[mid] = cur  # handed back as it was given: the same set
            if new_orders is not None:
                # (the order reused whole is the same triple: kept, not built again)
                hit = kept[i]
                new_orders[mid] = hit if hit is not None else (cur, owned, subs[i])
            continue
        target = frozenset(got)
        if cur is not None and target == cur:
            target = cur
            if new_orders is not None:
                new_orders[mid] = (cur, owned, subs[i])
        out[mid] = target
    return out
