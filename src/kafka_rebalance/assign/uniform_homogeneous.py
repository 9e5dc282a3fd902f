"""`UniformHomogeneousAssignmentBuilder`: every member subscribes to the same topics.

Quota: `total // members`, one more for the first `total % members` members
in iteration order. Each member keeps its current partitions up to its quota
(topics and partitions in Java hash iteration order decide which ones go);
partitions beyond it, and partitions nobody owns, are then dealt in order to
the members still below quota. Mirrors Kafka's
group-coordinator/.../assignor/UniformHomogeneousAssignmentBuilder.java.
"""

from __future__ import annotations

from ..model import TopicPartition
from .javacompat import JavaHashSet
from .uniform import UniformGroup, current_assignment, topic_id_hash


class PartitionAssignorException(RuntimeError):
    """Kafka's PartitionAssignorException: the assignor could not produce an assignment."""


def subscribed_topic_order(names: list[str], partitions: dict[str, int]) -> list[str]:
    """Iteration order of `new HashSet<>(member.subscribedTopicIds())`.

    As in the coordinator, a member's subscribed topic ids are a view
    (`TopicIds`) over its `HashSet<String>` of subscribed topic names that
    resolves each name to its id and skips names not in metadata; its size()
    counts every name. The copy is presized from that size and filled in
    the view's order.
    """
    name_set = JavaHashSet()
    for t in names:
        name_set.add(t)
    ids = [t for t in name_set if t in partitions]
    return JavaHashSet.copy_of(ids, size=len(name_set), hasher=topic_id_hash).to_list()


def build_homogeneous(group: UniformGroup) -> dict[str, list[TopicPartition]]:
    members = group.member_ids
    first = members[0]
    topics = subscribed_topic_order(group.subscribed_names[first], group.partitions)
    if not topics:
        return {m: [] for m in members}
    subscribed = set(topics)
    partitions = group.partitions

    # groupSpec.isPartitionAssigned: owned by any member at all
    assigned: dict[str, set[int]] = {}
    for m in members:
        for tp in group.owned[m]:
            assigned.setdefault(tp.topic, set()).add(tp.partition)

    unassigned: list[tuple[str, int]] = []
    total = 0
    for t in topics:
        n = partitions[t]
        taken = assigned.get(t)
        if taken:
            unassigned.extend((t, p) for p in range(n) if p not in taken)
        else:
            unassigned.extend((t, p) for p in range(n))
        total += n

    min_quota, extra = divmod(total, len(members))

    # maybeRevokePartitions
    target: dict[str, list[tuple[str, int]]] = {}
    unfilled: list[tuple[str, int]] = []
    for m in members:
        quota = min_quota
        if extra > 0:
            quota += 1
            extra -= 1
        owned = group.owned[m]
        distinct = dict.fromkeys(owned)
        keep_all = all(tp.topic in subscribed for tp in distinct) and len(distinct) <= quota
        if keep_all:
            # Nothing to revoke: iteration order cannot matter.
            target[m] = [(tp.topic, tp.partition) for tp in distinct]
            quota -= len(distinct)
        else:
            kept: list[tuple[str, int]] = []
            for t, parts in current_assignment(owned):
                if t not in subscribed:
                    continue  # the whole topic is revoked, not re-queued
                if len(parts) <= quota:
                    quota -= len(parts)
                    kept.extend((t, p) for p in parts)
                else:
                    for p in parts:
                        if quota > 0:
                            quota -= 1
                            kept.append((t, p))
                        else:
                            unassigned.append((t, p))
            target[m] = kept
        if quota > 0:
            unfilled.append((m, quota))

    # assignRemainingPartitions
    i = 0
    n_unassigned = len(unassigned)
    for m, quota in unfilled:
        if i >= n_unassigned:
            break
        take = unassigned[i:i + quota]
        i += len(take)
        target[m].extend(take)
    if i < n_unassigned:
        raise PartitionAssignorException("Partitions were left unassigned")

    return {m: [TopicPartition(t, p) for t, p in target[m]] for m in members}
