"""KIP-848 server-side `UniformAssignor`: sticky, balanced, racks ignored.

A homogeneous group (every member subscribed to the same topics) goes to
`uniform_homogeneous`, any other to `uniform_heterogeneous`, as in Kafka's
group-coordinator/.../assignor/UniformAssignor.java. Both read the group
through `uniform_group` (topic ids, member order, owned partitions as arrays).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from operator import attrgetter
from types import ModuleType
from typing import Any, NamedTuple

from .. import native
from ..model import AssignmentView, GroupSpec, TopicPartition
from . import kernels, kernels_hashmap, kernels_heterogeneous
from .base import pause_gc, resume_gc
from .tpcache import topic_objects
from .uniform_group import (
    UniformGroup,
    current_assignment,
    group_view,
    hashmap_order,
    member_id_hashes,
    topic_id,
    topic_id_hash,
    topic_id_string,
)
from .uniform_heterogeneous import build_heterogeneous
from .uniform_homogeneous import (
    PartitionAssignorException,
    build_homogeneous,
    subscribed_topic_order,
)

_MEMBER_ID = attrgetter("member_id")

# The compiled loops (assign/kernels.py built by mypyc) when the install built them; tests set
# this to compare both paths. The numpy path is the reference.
USE_COMPILED = kernels.is_compiled()


class NativeKernels(NamedTuple):
    """The Cython kernels (assign/uniform_native.pyx, uniform_native_plan.pyx and
    uniform_native_balance.pyx), used together."""

    uniform_assign: Callable[..., Any]
    member_order: Callable[..., Any]
    member_order_packed: Callable[..., Any]
    heterogeneous_plan: Callable[..., Any]
    deal_and_balance: Callable[..., Any]
    keep_unshared: Callable[..., Any]
    owned_over_quota: Callable[..., Any]
    id_offset: int
    modules: tuple[ModuleType, ...]


def native_kernels() -> NativeKernels | None:
    """The Cython kernels when the install built all three and their builds are fresh (else None: the
    mypyc path, their twins, runs)."""
    kernel = native.cython_build(__package__ or "", "uniform_native")
    plan = native.cython_build(__package__ or "", "uniform_native_plan")
    balance = native.cython_build(__package__ or "", "uniform_native_balance")
    if kernel is None or plan is None or balance is None or not kernel.is_ready():
        return None
    return NativeKernels(
        kernel.uniform_assign,
        plan.member_order,
        plan.member_order_packed,
        plan.heterogeneous_plan,
        balance.deal_and_balance,
        kernel.keep_unshared,
        balance.owned_over_quota,
        kernel.ID_OFFSET,
        (kernel, plan, balance),
    )


# Used on the compiled path only, before their twins (kernels.uniform_homogeneous, _iteration_plan,
# kernels_heterogeneous), which take every group they decline (NotImplemented). Tests swap it.
NATIVE = native_kernels()

__all__ = ["UniformAssignor", "is_homogeneous", "topic_id", "topic_id_hash", "topic_id_string"]


def is_homogeneous(group: UniformGroup) -> bool:
    """SubscriptionType.HOMOGENEOUS as the coordinator decides it (ModernGroup.subscriptionType): every
    subscribed topic name has every member. Names count whether or not the topic exists, so a member
    subscribed to a missing topic the others do not name makes the group heterogeneous. That is the
    same as every member naming the same set of topics."""
    distinct = {frozenset(s) for s in {id(s): s for s in group.subscribed_names}.values()}
    return len(distinct) <= 1


class UniformAssignor:
    """KIP-848 `uniform` assignor.

    An unchanged member shares its input: a member that keeps every partition it owns (its
    `owned` tuple, valid, first occurrences, within its quota) and is dealt nothing more gets
    that very tuple as its value, as Kafka's UniformHomogeneousAssignmentBuilder puts the
    member's own (immutable) assignment map into the target (`new MemberAssignmentImpl(
    oldAssignment)`) instead of a copy. Every other member gets a new list. Why: in a steady
    group nearly every member is unchanged, and a list per member (two allocations, a reference
    per partition, and freeing the previous result's) was a third of the call (case 1 owned in
    process: 0.31 -> 0.22 ms). The tuple is immutable, so sharing it is safe, and its
    elements, order and equality (as a sequence) are the list's; but it is not a `list`, so the
    result's values are read-only sequences here. The public surface keeps lists: run_rounds
    (hence `assign_partitions` and AssignResult) copies a shared tuple into a list; the
    KIP-848 coordinator (group/consumer_group_target.py) only reads them. Every path does the
    same (the numpy reference, the mypyc twin, the Cython kernel), so their results are equal,
    values by type too; the heterogeneous builder builds lists as before.
    """

    name = "uniform"

    def assign(self, spec: GroupSpec) -> AssignmentView:
        if not spec.members:
            return {}
        enabled = pause_gc()  # gc_paused, allocating nothing first
        try:
            return self._assign(spec)
        finally:
            resume_gc(enabled)

    @staticmethod
    def _assign(spec: GroupSpec) -> AssignmentView:
        if USE_COMPILED:
            fast = uniform_compiled(spec)
            if fast is not None:
                return fast
        group = group_view(spec)
        result: Mapping[str, Sequence[TopicPartition]]
        if is_homogeneous(group):
            result = build_homogeneous(group)
        else:
            result = build_heterogeneous(group)
        ids = list(map(_MEMBER_ID, spec.members))
        if len(result) == len(ids):  # both builders list every member
            return dict(zip(ids, map(result.__getitem__, ids)))
        return {m: result.get(m, []) for m in ids}  # shared tuples: class doc


def _iteration_plan(ids: tuple[str, ...]) -> tuple[list[int], list[int]] | None:
    """Spec positions in HashMap iteration order, and each spec member's iteration position;
    None when member ids repeat (the numpy path handles that). Computed on every call (no cache
    between calls: a KIP-848 target is recomputed after the members changed, and the harness's
    repeated group would hit what a rebalance misses); the ids' hashes come from
    member_id_hashes, as a Java String caches its own, and the order from the compiled bin sort.
    The Cython kernel computes the same in C (uniform_native.member_order)."""
    if len(set(ids)) != len(ids):
        return None
    order = kernels_hashmap.hashmap_positions(member_id_hashes(ids))
    if order is None:  # a bin may treeify: emulate the map
        at = {mid: k for k, mid in enumerate(ids)}
        order = [at[mid] for mid in hashmap_order(ids)]
    position = [0] * len(ids)
    for i, k in enumerate(order):
        position[k] = i
    return order, position


@lru_cache(maxsize=64)
def _topic_plan(
    names: tuple[str, ...], sizes: tuple[int | None, ...]
) -> tuple[list[str], list[int], frozenset[str], dict[str, int]]:
    """The first member's subscribed topics in metadata (`sizes`: their partition counts, None
    when absent) in subscribed-topic-set order, their counts, set and positions. Cached: a group's
    subscriptions and partition counts rarely change between rebalances. Names and counts only:
    the TopicPartition objects stay tpcache's, which bounds them (review F8)."""
    known = {t: n for t, n in zip(names, sizes) if n is not None}
    topics = subscribed_topic_order(names, known)
    return (
        topics,
        [known[t] for t in topics],
        frozenset(topics),
        {t: j for j, t in enumerate(topics)},
    )


def uniform_compiled(spec: GroupSpec) -> AssignmentView | None:
    """Both builders through the compiled loops; None when member ids repeat (the numpy path
    takes those). The Cython kernel (NATIVE), when built, runs the homogeneous builder from the
    members to the result, and the members' order for the heterogeneous one; what it declines
    (NotImplemented) takes the mypyc path."""
    members = spec.members
    names = members[0].topics
    meta = spec.topics
    sizes = tuple([meta[t].partitions if t in meta else None for t in names])
    topics, counts, subscribed, index = _topic_plan(names, sizes)
    # each topic's partition objects, asked for when needed (a kept group needs none)
    objects: list[Any] = []

    def slow(owned: tuple[TopicPartition, ...], quota: int) -> tuple[list[Any], list[Any], int]:
        if not objects:
            objects.extend(map(topic_objects, topics, counts))
        if NATIVE is not None and len(counts) == 1:  # (one topic: its twin takes what it declines)
            done = NATIVE.owned_over_quota(owned, quota, index, counts, objects)
            if done is not NotImplemented:
                return done
        fast = kernels_hashmap.owned_over_quota(
            owned, quota, index, counts, objects, topic_id_hash, TopicPartition
        )
        if fast is not None:
            return fast
        kept: list[TopicPartition] = []
        revoked: list[TopicPartition] = []
        for t, parts in current_assignment(owned):
            if t not in subscribed:
                continue  # the whole topic is revoked, not re-queued
            if len(parts) <= quota:
                quota -= len(parts)
                kept.extend(TopicPartition(t, p) for p in parts)
                continue
            for p in parts:
                if quota > 0:
                    quota -= 1
                    kept.append(TopicPartition(t, p))
                else:
                    revoked.append(TopicPartition(t, p))
        return kept, revoked, quota

    packed = (
        NotImplemented if NATIVE is None else NATIVE.member_order_packed(members, NATIVE.id_offset)
    )
    if NATIVE is not None and packed is not NotImplemented:
        native_done = NATIVE.uniform_assign(members, packed, topics, counts, topic_objects, slow)
        if native_done is None:  # heterogeneous
            native_plan = NATIVE.member_order(members, NATIVE.id_offset)
            if native_plan is not NotImplemented:
                ids_list, order, position = native_plan
                built = NATIVE.heterogeneous_plan(members, order, meta)
                targets = kernels_heterogeneous.uniform_heterogeneous(
                    members,
                    order,
                    meta,
                    topic_id,
                    topic_objects,
                    None if built is NotImplemented else built,
                    NATIVE.deal_and_balance,
                    NATIVE.keep_unshared,
                )
                return kernels.in_spec_order(ids_list, position, targets)
        elif native_done is not NotImplemented:
            result, complete = native_done
            if not complete:
                raise PartitionAssignorException("Partitions were left unassigned")
            return result
    ids = kernels.member_ids(members)
    plan = _iteration_plan(ids)
    if plan is None:
        return None
    order, position = plan
    done = kernels.uniform_homogeneous(members, order, topics, counts, topic_objects, slow)
    if done is None:  # heterogeneous
        targets = kernels_heterogeneous.uniform_heterogeneous(
            members, order, meta, topic_id, topic_objects
        )
        return kernels.in_spec_order(list(ids), position, targets)
    targets, complete = done
    if not complete:
        raise PartitionAssignorException("Partitions were left unassigned")
    return kernels.in_spec_order(list(ids), position, targets)
