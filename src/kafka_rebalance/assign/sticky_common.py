"""What Kafka's two sticky builders share (AbstractStickyAssignor minus the builders).

- `StickyContext`: the leader's view — partitions per topic (topics someone
  subscribes to that exist with at least one partition, as
  `AbstractPartitionAssignor.assign` builds it), members in `HashMap`
  iteration order, and each member's `MemberData` (owned partitions and
  generation as the concrete assignor reads them).
- `resolve_owned`: `allSubscriptionsEqual`, which also decides who keeps a
  partition claimed by several members (higher generation wins; equal
  generations lose it to `partitionsWithMultiplePreviousOwners`).
- `RackInfo`: KIP-881 rack matching.

Partitions are `(topic, partition)` tuples throughout; their Java hashCode is
`javacompat.tp_hash`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter

from ..model import GroupSpec, MemberSubscription, TopicMetadata
from .base import AssignorFailure
from .javacompat import insertion_order, insertion_order_twice, string_key

TP = tuple[str, int]
DEFAULT_GENERATION = -1
_MEMBER_ID = attrgetter("member_id")
_TOPICS = attrgetter("topics")
_PARTITIONS = attrgetter("partitions")
_FIRST = itemgetter(0)


class KafkaAssignorFailure(AssignorFailure):
    """Input on which Kafka's own assignor throws (e.g. a NullPointerException); we fail alike."""


@dataclass(slots=True)
class MemberData:
    """Owned partitions and generation as `AbstractStickyAssignor.memberData` returns them."""

    partitions: Sequence[TP]
    generation: int | None


@dataclass(slots=True)
class StickyContext:
    partitions_per_topic: dict[str, int]
    topics: Mapping[str, TopicMetadata]
    member_order: list[str]  # iteration order of the leader's subscriptions HashMap
    subs: dict[str, MemberSubscription]
    member_data: dict[str, MemberData]
    total_partitions: int = field(init=False)

    def __post_init__(self) -> None:
        self.total_partitions = sum(self.partitions_per_topic.values())


def java_key_order(keys: Sequence[str]) -> list[str]:
    """Iteration order of a default `new HashMap<>()` after putting `keys` in order.

    Remembered for the last few key lists: a group's members rarely change
    between rebalances, and the leader computes this order twice per run.
    """
    key = tuple(keys)
    order = _KEY_ORDERS.get(key)
    if order is None:
        order = tuple(insertion_order(list(key)))
        if len(_KEY_ORDERS) >= 16:
            _KEY_ORDERS.pop(next(iter(_KEY_ORDERS)))
        _KEY_ORDERS[key] = order
    return list(order)


def java_key_order_twice(keys: Sequence[str]) -> list[str]:
    """`java_key_order(java_key_order(keys))`, the hashes computed once
    (javacompat.insertion_order_twice), remembered as java_key_order remembers both."""
    key = tuple(keys)
    first = _KEY_ORDERS.get(key)
    if first is not None:
        return java_key_order(first)
    one, two = insertion_order_twice(list(key))
    for k, order in ((key, one), (tuple(one), two)):
        if len(_KEY_ORDERS) >= 16:
            _KEY_ORDERS.pop(next(iter(_KEY_ORDERS)))
        _KEY_ORDERS[k] = tuple(order)
    return two


_KEY_ORDERS: dict[tuple[str, ...], tuple[str, ...]] = {}


def build_context(spec: GroupSpec, member_data: dict[str, MemberData]) -> StickyContext:
    """Leader-side inputs as `AbstractPartitionAssignor.assign(Cluster, GroupSubscription)` prepares them."""
    ids = list(map(_MEMBER_ID, spec.members))
    order = java_key_order(ids)
    subs = dict(zip(ids, spec.members))
    ppt: dict[str, int] = {}
    # distinct subscription objects in member order (members usually share one)
    in_order = list(map(_TOPICS, map(subs.__getitem__, order)))
    for topics in dict(zip(map(id, in_order), in_order)).values():
        for t in topics:
            if t not in ppt:
                meta = spec.topics.get(t)
                if meta is not None and meta.partitions > 0:
                    ppt[t] = meta.partitions
    return StickyContext(ppt, spec.topics, order, subs, member_data)


def sorted_topics(topics) -> list[str]:
    """`Collections.sort` of topic names (String.compareTo)."""
    return sorted(topics, key=string_key)


@dataclass(slots=True)
class OwnedResolution:
    all_equal: bool
    owned: dict[str, list[TP]]  # consumerToOwnedPartitions
    owned_order: list[str]  # its HashMap iteration order
    multiple_owners: set[TP]  # partitionsWithMultiplePreviousOwners
    max_generation: int


def resolve_owned(ctx: StickyContext) -> OwnedResolution:
    """`allSubscriptionsEqual`: equal subscriptions? plus still-valid owned partitions per member."""
    all_topics = ctx.partitions_per_topic
    fast = resolve_without_conflicts(ctx)
    if fast is not None:
        return fast
    is_equal = True
    subscribed: set[str] = set()
    owner_of: dict[TP, str] = {}
    owned: dict[str, list[TP]] = {}
    multiple: set[TP] = set()
    max_gen = DEFAULT_GENERATION
    for consumer in ctx.member_order:
        sub = ctx.subs[consumer]
        if not subscribed:
            subscribed.update(sub.topics)
        elif is_equal and not (
            len(sub.topics) == len(subscribed) and subscribed.issuperset(sub.topics)
        ):
            is_equal = False
        md = ctx.member_data[consumer]
        gen = DEFAULT_GENERATION if md.generation is None else md.generation
        max_gen = max(max_gen, gen)
        mine: list[TP] = []
        owned[consumer] = mine
        for tp in md.partitions:
            if tp[0] not in all_topics:
                continue
            other = owner_of.get(tp)
            if other is None:
                mine.append(tp)
                owner_of[tp] = consumer
                continue
            other_gen = ctx.subs[other].generation
            if gen == other_gen:
                multiple.add(tp)
                _remove_first(owned[other], tp)
                owner_of[tp] = consumer
            elif gen > other_gen:
                mine.append(tp)
                _remove_first(owned[other], tp)
                owner_of[tp] = consumer
    # consumerToOwnedPartitions is a fresh HashMap filled in subscription order
    return OwnedResolution(is_equal, owned, java_key_order(ctx.member_order), multiple, max_gen)


def _subscriptions_equal(ctx: StickyContext) -> bool:
    is_equal = True
    subscribed: set[str] = set()
    # members sharing one subscription object are checked once (unless it names a topic twice:
    # Kafka compares the list's size with the set's, so two members of such a list differ)
    if len(set(map(id, map(_TOPICS, ctx.subs.values())))) == 1:
        topics = next(iter(ctx.subs.values())).topics
        return len(ctx.subs) == 1 or len(set(topics)) == len(topics)
    for consumer in ctx.member_order:
        topics = ctx.subs[consumer].topics
        if not subscribed:
            subscribed.update(topics)
        elif not (len(topics) == len(subscribed) and subscribed.issuperset(topics)):
            is_equal = False
            break
    return is_equal


def resolve_without_conflicts(ctx: StickyContext) -> OwnedResolution | None:
    """The common case, in bulk: no partition claimed twice, so no generation contest.

    None when some partition is claimed twice (then `resolve_owned` decides).
    The result does not depend on the order of each member's partitions
    beyond keeping it in `owned`.
    """
    all_topics = ctx.partitions_per_topic
    mds = list(map(ctx.member_data.__getitem__, ctx.member_order))
    lists = list(map(_PARTITIONS, mds))
    flat = list(itertools.chain.from_iterable(lists))
    gens = {md.generation for md in mds if md.generation is not None}
    max_gen = max(max(gens, default=DEFAULT_GENERATION), DEFAULT_GENERATION)
    if len(set(flat)) != len(flat):
        return None
    if all_topics.keys() >= set(map(_FIRST, flat)):
        owned = dict(zip(ctx.member_order, map(list, lists)))
    else:
        owned = {
            c: [tp for tp in parts if tp[0] in all_topics]
            for c, parts in zip(ctx.member_order, lists)
        }
    return OwnedResolution(
        _subscriptions_equal(ctx), owned, java_key_order(ctx.member_order), set(), max_gen
    )


def _remove_first(lst: list, item) -> None:
    try:
        lst.remove(item)
    except ValueError:
        pass


class RackInfo:
    """`AbstractStickyAssignor.RackInfo`: consumer racks, partition racks, rack-aware or not."""

    __slots__ = ("consumer_racks", "rack_aware", "_racks", "_num_consumers", "_has_num")

    def __init__(self, ctx: StickyContext) -> None:
        consumers_by_rack: dict[str, list[str]] = {}
        for mid in ctx.member_order:
            rack = ctx.subs[mid].rack
            if rack:
                consumers_by_rack.setdefault(rack, []).append(mid)
        racks: dict[str, tuple[frozenset[str], ...]] = {}
        all_racks: set[str] = set()
        if consumers_by_rack:
            for topic, n in ctx.partitions_per_topic.items():
                meta = ctx.topics[topic]
                per = tuple(meta.racks_of(p) for p in range(n))
                racks[topic] = per
                for rs in per:
                    all_racks.update(rs)
        rack_aware = False
        if consumers_by_rack and not all_racks.isdisjoint(consumers_by_rack):
            rack_aware = any(rs != all_racks for per in racks.values() for rs in per)
        self.rack_aware = rack_aware
        self.consumer_racks: dict[str, str] = {}
        if rack_aware:
            for rack, members in consumers_by_rack.items():
                for c in members:
                    self.consumer_racks[c] = rack
        self._racks = racks if rack_aware else {}
        # numConsumersByPartition is built from every partition's racks whenever any consumer has a rack
        sizes = {r: len(ms) for r, ms in consumers_by_rack.items()}
        self._num_consumers = {
            t: [sum(sizes.get(r, 0) for r in rs) for rs in per] for t, per in racks.items()
        }
        self._has_num = any(len(per) for per in racks.values())

    def partition_racks(self, tp: TP) -> frozenset[str] | None:
        per = self._racks.get(tp[0])
        if per is None or not (0 <= tp[1] < len(per)):
            return None
        return per[tp[1]]

    def racks_mismatch(self, consumer: str, tp: TP) -> bool:
        rack = self.consumer_racks.get(consumer)
        if rack is None:
            return False
        rs = self.partition_racks(tp)
        return rs is None or rack not in rs

    def sort_partitions_by_rack_consumers(self, partitions: list[TP]) -> list[TP]:
        if not self._has_num:
            return partitions
        num = self._num_consumers

        def key(tp: TP) -> int:
            per = num.get(tp[0])
            return per[tp[1]] if per is not None and 0 <= tp[1] < len(per) else 0

        return sorted(partitions, key=key)

    def next_rack_consumer(self, tp: TP, consumers: list[str], first_index: int) -> int:
        rs = self.partition_racks(tp)
        if not rs:
            return -1
        n = len(consumers)
        cr = self.consumer_racks
        for i in range(n):
            index = (first_index + i) % n
            rack = cr.get(consumers[index])
            if rack is not None and rack in rs:
                return index
        return -1
