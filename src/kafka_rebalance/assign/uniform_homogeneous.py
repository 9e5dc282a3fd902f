"""`UniformHomogeneousAssignmentBuilder`: every member subscribes to the same topics.

Quota: `total // members`, one more for the first `total % members` members
in iteration order. Each member keeps its current partitions up to its quota
(topics and partitions in Java hash iteration order decide which ones go);
partitions beyond it, and partitions nobody owns, are then dealt in order to
the members still below quota. Mirrors Kafka's
group-coordinator/.../assignor/UniformHomogeneousAssignmentBuilder.java.
"""

from __future__ import annotations

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


def build_homogeneous(group: UniformGroup) -> dict[str, list[TopicPartition]]:
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
    fresh_parts = []
    for t in topics:
        j = group.topic_index[t]
        r = np.arange(group.base[j], group.base[j] + group.counts[j])
        fresh_parts.append(r[~taken[r]])
    fresh = np.concatenate(fresh_parts)
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
    kept_entries = np.flatnonzero(owned.first & ~slow[owned.member])
    kept_objects = [owned.objects[k] for k in kept_entries.tolist()]
    kept_count = np.bincount(owned.member[kept_entries], minlength=n).tolist()
    remaining = (quotas - np.where(slow, 0, held)).tolist()

    target: list[list[TopicPartition]] = []
    revoked: list[tuple[str, int]] = []
    pos = 0
    subscribed = set(topics)
    for i in range(n):
        if not slow[i]:
            target.append(kept_objects[pos : pos + kept_count[i]])
            pos += kept_count[i]
            continue
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
        target.append(kept)

    # assignRemainingPartitions: deal the fresh, then the revoked partitions in order
    n_fresh, n_all = len(fresh), len(fresh) + len(revoked)
    fresh_tps = group.topic_partitions(fresh)
    at = 0
    for i in range(n):
        quota = remaining[i]
        if quota <= 0 or at >= n_all:
            continue
        end = min(at + quota, n_all)
        if at < n_fresh:
            target[i].extend(fresh_tps[at : min(end, n_fresh)])
        if end > n_fresh:
            target[i].extend(
                TopicPartition(t, p) for t, p in revoked[max(at, n_fresh) - n_fresh : end - n_fresh]
            )
        at = end
    if at < n_all:
        raise PartitionAssignorException("Partitions were left unassigned")
    return dict(zip(members, target))
