"""Kafka's `StickyAssignor` ("sticky") and `CooperativeStickyAssignor` ("cooperative-sticky").

Both run AbstractStickyAssignor: the constrained builder when every member
subscribes to the same topics, the general builder otherwise. They differ in
how they read a member's state and in what they hand back:

- sticky (eager) reads owned partitions and generation from its own user
  data (StickyAssignor V1, or V0 without a generation), so the owned list
  arrives grouped by topic in HashMap order; `userdata` has the byte-exact
  codec and `grouped_partitions` gives what decoding those bytes yields.
- cooperative-sticky reads them from the protocol fields, then removes every
  partition that moves from one member to another (`adjustAssignment`): the
  owner revokes it first and the follow-up rebalance hands it over.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from functools import lru_cache
from operator import attrgetter, itemgetter

import numpy as np

from .. import native
from ..model import Assignment, GroupSpec, MemberSubscription, TopicPartition
from . import kernels_sticky, kernels_sticky_general, sticky_general
from .base import pause_gc, resume_gc
from .javacompat import JavaHashSet, string_key
from .sticky_common import (
    DEFAULT_GENERATION,
    TP,
    MemberData,
    OwnedResolution,
    RackInfo,
    StickyContext,
    _subscriptions_equal,
    build_context,
    java_key_order_twice,
    resolve_owned,
    resolve_without_conflicts,
    sorted_topics,
)
from .sticky_constrained import ConstrainedAssignmentBuilder
from .tpcache import partition_object_list, partition_objects
from .userdata import grouped_partitions, grouped_topic_order

_TP_FIELDS = attrgetter("topic", "partition")
_MEMBER_ID = attrgetter("member_id")
_OWNED = attrgetter("owned")
_RACK = attrgetter("rack")
_FIRST = itemgetter(0)
_SECOND = itemgetter(1)

# The compiled constrained builder (assign/kernels_sticky.py built by mypyc) when the install
# built it; tests set this to compare both paths. The builders in sticky_*.py are the reference.
USE_COMPILED = kernels_sticky.is_compiled()
# The general builder (sticky_general.py) compiled by mypyc when the install built it and the
# build is fresh; its source, loaded as plain Python, is the reference (taken with USE_COMPILED
# off). Same code, so the same output, order included (tests/test_assign_compiled.py).
GENERAL_REFERENCE = native.source_module(sticky_general)
GENERAL_COMPILED = native.is_fresh_build(sticky_general.__file__)
general_compiled = sticky_general if GENERAL_COMPILED else GENERAL_REFERENCE
# The whole general path on ints (assign/kernels_sticky_general.py) when the install built it
# fresh; taken with USE_COMPILED, like the constrained kernel. The reference path above is the spec.
GENERAL_KERNEL = kernels_sticky_general.is_compiled()


def _owned_tuples(m: MemberSubscription) -> list[TP]:
    return list(map(_TP_FIELDS, m.owned))


def run_sticky(
    ctx: StickyContext,
    res: OwnedResolution | None = None,
) -> tuple[dict[str, list[TP]], dict[TP, str] | None, OwnedResolution]:
    """AbstractStickyAssignor.assignPartitions: the builder's result and, for the
    constrained builder, the partitions it moved between owners."""
    if res is None:
        res = resolve_owned(ctx)
    rack = RackInfo(ctx)
    if res.all_equal:
        transferring: dict[TP, str] | None = {}
        result = ConstrainedAssignmentBuilder(ctx, res, rack, transferring).build()
    else:
        transferring = None
        general = general_compiled if USE_COMPILED else GENERAL_REFERENCE
        result = general.GeneralAssignmentBuilder(ctx, res, rack).build()
    return result, transferring, res


_new = TopicPartition.__new__  # its compiled base allocates it (object.__new__ refuses)
# slot descriptors: skip the frozen __setattr__
_set_topic: Callable[[TopicPartition, str], None] = TopicPartition.__dict__["topic"].__set__
_set_partition: Callable[[TopicPartition, int], None] = TopicPartition.__dict__["partition"].__set__


def _make_tp(topic: str, partition: int) -> TopicPartition:
    o = _new(TopicPartition)
    _set_topic(o, topic)
    _set_partition(o, partition)
    return o


def _to_assignment(
    spec: GroupSpec, result: dict[str, list[TP]], ctx: StickyContext | None = None
) -> Assignment:
    """Model objects for the result: the shared objects of `tpcache` (every assigned
    partition is one of the context's topics), else the members' own objects."""
    if ctx is not None:
        ids = list(map(_MEMBER_ID, spec.members))
        lists = [result.get(mid, []) for mid in ids]
        ppt = ctx.partitions_per_topic
        # one slot more, 0: an unknown topic (index -1) has no partition
        counts = np.fromiter(itertools.chain(ppt.values(), (0,)), np.int64, count=len(ppt) + 1)
        base = np.cumsum(counts) - counts
        index_of = {t: j for j, t in enumerate(ppt)}
        tps = list(itertools.chain.from_iterable(lists))
        n = len(tps)
        tix = np.fromiter(
            map(index_of.get, map(_FIRST, tps), itertools.repeat(-1, n)), np.int64, count=n
        )
        part = np.fromiter(map(_SECOND, tps), dtype=np.int64, count=n)
        # an owned partition number past its topic's count is kept as Kafka does: no shared object
        if ((part >= 0) & (part < counts[tix])).all():
            flat = base[tix] + part
            objs = partition_objects(list(ppt), counts[:-1].tolist())[flat].tolist()
            ends = np.cumsum(np.fromiter(map(len, lists), dtype=np.int64, count=len(lists)))
            starts = ends - np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
            return dict(zip(ids, map(objs.__getitem__, map(slice, starts.tolist(), ends.tolist()))))
    known: dict[TP, TopicPartition] = {}
    for m in spec.members:
        known.update(zip(map(_TP_FIELDS, m.owned), m.owned))
    out: Assignment = {}
    get = known.get
    for m in spec.members:
        mine = result.get(m.member_id) or ()
        out[m.member_id] = [get(tp) or _make_tp(tp[0], tp[1]) for tp in mine]
    return out


def _assign_gc_paused(assign: Callable[[GroupSpec], Assignment], spec: GroupSpec) -> Assignment:
    """Both sticky assignors' assign(): nothing for no members, else `assign` with the cyclic GC
    paused (an assignment allocates acyclic objects only)."""
    if not spec.members:
        return {}
    enabled = pause_gc()  # gc_paused, allocating nothing first
    try:
        return assign(spec)
    finally:
        resume_gc(enabled)


def _compiled_result(spec: GroupSpec, cooperative: bool) -> Assignment | None:
    """The compiled kernels' result (the constrained one, else the general one), when built and
    fresh and when they take the group; None: the reference path runs."""
    if not USE_COMPILED:
        return None
    fast = constrained_compiled(spec, cooperative=cooperative)
    if fast is None and GENERAL_KERNEL:
        fast = general_kernel(spec, cooperative=cooperative)
    return fast


class StickyAssignor:
    """Eager sticky assignor; state travels in StickyAssignor user data."""

    name = "sticky"

    @staticmethod
    def member_data(m: MemberSubscription, grouped: bool = True) -> MemberData:
        """What `StickyAssignor.memberData` decodes from the member's user data.

        The member writes V1 (V0 without a generation); decoding that gives the
        owned partitions grouped by topic and the generation, which is what
        `grouped_partitions` returns without the byte round trip
        (tests/test_sticky_properties.py checks decode(encode(x)) equals it).
        """
        gen = None if m.generation == DEFAULT_GENERATION else m.generation
        if not m.owned:
            return MemberData([], gen)
        if not grouped:  # the same partitions in the protocol field's order
            return MemberData(_owned_tuples(m), gen)
        return MemberData(grouped_partitions(_owned_tuples(m)), gen)

    def assign(self, spec: GroupSpec) -> Assignment:
        return _assign_gc_paused(self._assign, spec)

    def _assign(self, spec: GroupSpec) -> Assignment:
        fast = _compiled_result(spec, cooperative=False)
        if fast is not None:
            return fast
        # The order of a member's owned partitions (its user data groups them by
        # topic) matters only when partitions have several claimants or the
        # subscriptions differ; otherwise the constrained builder sorts them
        # anyway, so the grouping is skipped.
        ctx = build_context(
            spec, {m.member_id: self.member_data(m, grouped=False) for m in spec.members}
        )
        dealt = fresh_deal(spec, ctx)
        if dealt is not None:
            return dealt
        res = resolve_without_conflicts(ctx)
        if res is None or not res.all_equal:
            ctx.member_data = {m.member_id: self.member_data(m) for m in spec.members}
            res = None
        result, _, _ = run_sticky(ctx, res)
        return _to_assignment(spec, result, ctx)


class CooperativeStickyAssignor:
    """Cooperative sticky assignor: sticky result minus partitions that must be revoked first."""

    name = "cooperative-sticky"

    @staticmethod
    def member_data(m: MemberSubscription) -> MemberData:
        return MemberData(_owned_tuples(m), m.generation)

    def assign(self, spec: GroupSpec) -> Assignment:
        return _assign_gc_paused(self._assign, spec)

    def _assign(self, spec: GroupSpec) -> Assignment:
        fast = _compiled_result(spec, cooperative=True)
        if fast is not None:
            return fast
        ctx = build_context(spec, {m.member_id: self.member_data(m) for m in spec.members})
        dealt = fresh_deal(spec, ctx)
        if dealt is not None:
            return dealt
        result, transferring, _ = run_sticky(ctx)
        if transferring is None:
            transferring = partitions_transferring_ownership(ctx, result)
        if transferring:
            by_member: dict[str, set[TP]] = {}
            for tp, consumer in transferring.items():
                by_member.setdefault(consumer, set()).add(tp)
            for consumer, gone in by_member.items():
                result[consumer] = [tp for tp in result[consumer] if tp not in gone]
        return _to_assignment(spec, result, ctx)


def constrained_compiled(spec: GroupSpec, cooperative: bool) -> Assignment | None:
    """The constrained builder through the compiled kernel, for a group where some member owns
    partitions; None when the kernel does not take the group (see kernels_sticky) or member ids
    repeat: the reference path then runs."""
    members = spec.members
    if not any(map(_OWNED, members)):
        return None  # fresh_deal's case
    ids = tuple(map(_MEMBER_ID, members))
    plan = _member_plan(ids)
    if plan is None:
        return None
    names = members[0].topics
    meta = spec.topics
    sizes = tuple(meta[t].partitions if t in meta else 0 for t in names)
    topics, counts, topic_index = _topic_plan(names, sizes)
    if len(set(names)) != len(names):
        return None  # a topic named twice: Kafka's allSubscriptionsEqual says they differ
    lists = kernels_sticky.sticky_constrained(
        members,
        plan[0],
        plan[1],
        topic_index,
        counts,
        partition_object_list(topics, counts),
        cooperative,
    )
    return None if lists is None else dict(zip(ids, lists))


def general_kernel(spec: GroupSpec, cooperative: bool) -> Assignment | None:
    """The general path through the compiled kernel (kernels_sticky_general); None when it does
    not take the group (equal subscriptions, racks, owned entries the reference resolves, ids
    that repeat or compare equal): the reference path then runs."""
    members = spec.members
    ids = tuple(map(_MEMBER_ID, members))
    rank = _id_ranks(ids)
    if rank is None:
        return None
    lists = kernels_sticky_general.sticky_general(
        members,
        rank,
        spec.topics,
        string_key,
        grouped_topic_order,
        partition_object_list,
        JavaHashSet,
        cooperative,
    )
    return None if lists is None else dict(zip(ids, lists))


def _id_ranks(ids: tuple[str, ...]) -> list[int] | None:
    """Each member's place in (String.compareTo of the id) order; None when two ids compare
    equal (repeated, or equal as UTF-16): the builder's TreeSet then decides. Computed on every
    call: no member-keyed cache between calls (a rebalance after a join or leave misses it)."""
    keys = list(map(string_key, ids))
    if len(set(keys)) != len(keys):
        return None
    rank = [0] * len(ids)
    for r, k in enumerate(sorted(range(len(ids)), key=keys.__getitem__)):
        rank[k] = r
    return rank


def _member_plan(ids: tuple[str, ...]) -> tuple[list[int], list[int]] | None:
    """Member positions in consumerToOwnedPartitions order (a HashMap filled in the leader's
    HashMap order) and each member's rank by id; None when ids repeat. Computed on every call,
    as _id_ranks."""
    if len(set(ids)) != len(ids):
        return None
    at = dict(zip(ids, range(len(ids))))
    owned_order = list(map(at.__getitem__, java_key_order_twice(ids)))
    keys = list(map(string_key, ids))
    rank = [0] * len(ids)
    for r, k in enumerate(sorted(range(len(ids)), key=keys.__getitem__)):
        rank[k] = r
    return owned_order, rank


@lru_cache(maxsize=64)
def _topic_plan(
    names: tuple[str, ...], sizes: tuple[int, ...]
) -> tuple[list[str], list[int], dict[str, int]]:
    """The subscribed topics with partitions in String order, their counts, their numbers."""
    present = {t: n for t, n in zip(names, sizes) if n > 0}
    topics = sorted_topics(present)
    return topics, [present[t] for t in topics], {t: j for j, t in enumerate(topics)}


def fresh_deal(spec: GroupSpec, ctx: StickyContext) -> Assignment | None:
    """The constrained builder's result when nobody owns a partition, in bulk; None otherwise.

    With equal subscriptions, no racks, no owned partitions and at least one
    partition per member, every member is below minQuota and the builder's
    round robin deals the partitions (topics in name order) to the members
    sorted by id: partition i goes to member i mod n, and the
    `total % n` left after minQuota passes go to the first members, one
    each. Nothing moves, so cooperative-sticky gives the same.
    """
    members = spec.members
    n = len(members)
    ppt = ctx.partitions_per_topic
    total = ctx.total_partitions
    if (
        not ppt
        or total < n
        or any(map(_OWNED, members))
        or any(map(_RACK, members))
        or not _subscriptions_equal(ctx)
    ):
        return None
    topics = sorted_topics(ppt)
    table = partition_objects(topics, [ppt[t] for t in topics])
    min_quota, extra = divmod(total, n)
    # row r: member r's partitions r, r + n, r + 2n, ... (one per round robin pass)
    lists = table[: n * min_quota].reshape(min_quota, n).T.tolist()
    for r, tp in enumerate(table[n * min_quota :].tolist()):
        lists[r].append(tp)
    by_rank = sorted(map(_MEMBER_ID, members), key=string_key)
    out = dict(zip(by_rank, lists))
    return {mid: out[mid] for mid in map(_MEMBER_ID, members)}


def partitions_transferring_ownership(
    ctx: StickyContext, result: dict[str, list[TP]]
) -> dict[TP, str]:
    """`computePartitionsTransferringOwnership`: added to one member while revoked from another."""
    owned_of = {c: _owned_tuples(ctx.subs[c]) for c in result}
    revoked: set[TP] = set()
    for consumer, assigned in result.items():
        owned = owned_of[consumer]
        if owned:
            revoked.update(set(owned).difference(assigned))
    if not revoked:
        return {}
    out: dict[TP, str] = {}
    for consumer, assigned in result.items():
        hit = revoked.intersection(assigned)
        if hit:
            hit.difference_update(owned_of[consumer])
            for tp in hit:
                out[tp] = consumer
    return out
