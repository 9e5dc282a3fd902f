"""`UniformHomogeneousAssignmentBuilder`: every member subscribes to the same topics.

Quota: `total // members`, one more for the first `total % members` members
in iteration order. Each member keeps its current partitions up to its quota
(topics and partitions in Java hash iteration order decide which ones go);
partitions beyond it, and partitions nobody owns, are then dealt in order to
the members still below quota. Mirrors Kafka's
group-coordinator/.../assignor/UniformHomogeneousAssignmentBuilder.java.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from ..model import TopicPartition
from .base import AssignorFailure
from .javacompat import JavaHashSet
from .uniform_group import UniformGroup, current_assignment, flatten_owned, topic_id_hash


class PartitionAssignorException(AssignorFailure):
    """Kafka's PartitionAssignorException: the assignor could not produce an assignment."""


def subscribed_topic_order(names: tuple[str, ...], known: dict[str, int]) -> list[str]:
    """Iteration order of `new HashSet<>(member.subscribedTopicIds())`.

    As in the coordinator, a member's subscribed topic ids are a view
    (`TopicIds`) over its `HashSet<String>` of subscribed topic names that
    resolves each name to its id and skips names not in metadata; its size()
    counts every name. The copy is presized from that size and filled in
    the view's order.
    """
    return list(_subscribed_topic_order(names, frozenset(t for t in names if t in known)))


@lru_cache(maxsize=64)
def _subscribed_topic_order(names: tuple[str, ...], known: frozenset[str]) -> tuple[str, ...]:
    name_set = JavaHashSet()
    for t in names:
        name_set.add(t)
    ids = [t for t in name_set if t in known]
    return tuple(JavaHashSet.copy_of(ids, size=len(name_set), hasher=topic_id_hash).to_list())


def build_homogeneous(group: UniformGroup) -> dict[str, Sequence[TopicPartition]]:
    members = group.member_ids
    n = len(members)
    topics = subscribed_topic_order(group.subscribed_names[0], group.topic_index)
    if not topics:
        return {m: [] for m in members}
    owned = flatten_owned(group)
    valid = owned.flat >= 0

    # groupSpec.isPartitionAssigned: some member's current assignment holds it
    taken = np.zeros(group.total, dtype=bool)
    taken[owned.flat[valid]] = True
    # every partition, topics in `topics` order, minus the taken ones
    js = np.fromiter(map(group.topic_index.__getitem__, topics), dtype=np.int64, count=len(topics))
    lens = group.counts[js]
    in_order = np.arange(int(lens.sum()), dtype=np.int64) - np.repeat(
        np.cumsum(lens) - lens - group.base[js], lens
    )
    fresh = in_order[~taken[in_order]]
    total = group.total
    min_quota, extra = divmod(total, n)

    # maybeRevokePartitions. A member whose current partitions all fit its quota
    # keeps them whatever the order; only a member over quota (or holding
    # partitions beyond a topic's count) needs Java's iteration order.
    held = np.bincount(owned.member[owned.first], minlength=n)
    odd = np.zeros(n, dtype=bool)
    odd[owned.member[(owned.topic >= 0) & ~valid]] = True
    quotas = np.full(n, min_quota, dtype=np.int64)
    quotas[:extra] += 1
    slow = (held > quotas) | odd
    kept_mask = owned.first & ~slow[owned.member]
    kept_count_arr = np.bincount(owned.member[kept_mask], minlength=n)
    owned_lens = np.fromiter(map(len, group.owned), dtype=np.int64, count=n)
    # a member that keeps every entry of its list (the usual case) keeps the list itself
    partly = np.flatnonzero(~slow & (kept_count_arr != owned_lens)).tolist()
    any_owned = len(owned.objects) > 0
    target: list[list[TopicPartition]] = list(map(list, group.owned)) if any_owned else []
    if partly:
        member_of = owned.member
        by_member: dict[int, list[TopicPartition]] = {i: [] for i in partly}
        objects = owned.objects
        for k in np.flatnonzero(kept_mask & np.isin(member_of, partly)).tolist():
            by_member[int(member_of[k])].append(objects[k])
        for i, kept_list in by_member.items():
            target[i] = kept_list
    remaining = (quotas - np.where(slow, 0, held)).tolist()

    revoked: list[tuple[str, int]] = []
    subscribed = set(topics)
    for i in np.flatnonzero(slow).tolist():
        quota = remaining[i]
        kept: list[TopicPartition] = []
        for t, parts in current_assignment(group.owned[i]):
            if t not in subscribed:
                continue  # the whole topic is revoked, not re-queued
            if len(parts) <= quota:
                quota -= len(parts)
                kept.extend(TopicPartition(t, p) for p in parts)
            else:
                for p in parts:
                    if quota > 0:
                        quota -= 1
                        kept.append(TopicPartition(t, p))
                    else:
                        revoked.append((t, p))
        remaining[i] = quota
        target[i] = kept

    # assignRemainingPartitions: deal the fresh, then the revoked partitions in order
    n_fresh, n_all = len(fresh), len(fresh) + len(revoked)
    fresh_tps = group.topic_partitions(fresh)
    # members in order take their remaining quota from the queue (fresh, then revoked)
    quota_arr = np.maximum(np.asarray(remaining, dtype=np.int64), 0)
    reach = np.cumsum(quota_arr)
    ends = np.minimum(reach, n_all)
    starts = np.minimum(reach - quota_arr, n_all)
    # every member's share of the fresh partitions is one slice (empty for most when few are free)
    shares = map(
        fresh_tps.__getitem__,
        map(slice, np.minimum(starts, n_fresh).tolist(), np.minimum(ends, n_fresh).tolist()),
    )
    target = list(map(operator.add, target, shares)) if any_owned else list(shares)
    past = np.flatnonzero(ends > np.maximum(starts, n_fresh))
    for i, at, end in zip(past.tolist(), starts[past].tolist(), ends[past].tolist()):
        target[i].extend(
            TopicPartition(t, p) for t, p in revoked[max(at, n_fresh) - n_fresh : end - n_fresh]
        )
    if (int(ends[-1]) if n else 0) < n_all:
        raise PartitionAssignorException("Partitions were left unassigned")
    # a member that keeps its owned tuple whole and is dealt nothing gets that tuple itself
    # (shared, as Kafka's builder shares an unchanged member's assignment; uniform.py says why)
    result: dict[str, Sequence[TopicPartition]] = dict(zip(members, target))
    whole = ~slow & (kept_count_arr == owned_lens) & (owned_lens > 0) & (ends == starts)
    for i in np.flatnonzero(whole).tolist():
        mine = group.owned[i]
        if type(mine) is tuple and result[members[i]] is target[i]:  # (ids repeat: the last)
            result[members[i]] = mine
    return result
