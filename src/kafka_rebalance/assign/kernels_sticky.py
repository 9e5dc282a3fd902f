"""The sticky assignors' constrained builder in plain typed Python, compiled by mypyc when it can.

`sticky_constrained` is `ConstrainedAssignmentBuilder` (sticky_constrained.py,
the reference) for the common case only: every member subscribes to the same
topics, no member has a rack, and every owned partition is a partition of a
subscribed topic, owned by one member once. Anything else returns None and
the caller takes the reference path. Partitions are ints here (their index in
topics-sorted, then partition order), so the owned lists are read once and no
tuple per partition is built.

Like kernels.py: no I/O, no project imports but kernels.py's shared helper and the model's
compiled storage (model_fields, whose fields it reads directly);
`setup.py` compiles it.
"""

from __future__ import annotations

from typing import Any

from kafka_rebalance import native
from kafka_rebalance.assign.kernels import sort_by_key
from kafka_rebalance.model_fields import MemberFields, PartitionFields


def is_compiled() -> bool:
    """True when this module is the mypyc-built extension and was built from the source now beside
    it (kafka_rebalance.native: a stale build is not used; the assignors then take their reference
    paths). kernels.py, whose sort_by_key it calls, must be fresh too."""
    return native.siblings_fresh(__file__, "kernels")


def sticky_constrained(
    members: Any,
    owned_order: list[int],
    rank: list[int],
    topic_index: dict[str, int],
    counts: list[int],
    table: list[Any],
    cooperative: bool,
) -> list[list[Any]] | None:
    """Each member's partitions (objects of `table`, members in `members` order), or None.

    `owned_order`: member positions in consumerToOwnedPartitions HashMap order;
    `rank[i]`: member i's place in member id (String.compareTo) order;
    `topic_index`: the subscribed topics with partitions, numbered in String
    order, `counts` their partition counts; `table[g]`: the TopicPartition of
    flat index g = (partitions of the topics before) + partition.
    With `cooperative`, partitions moving from one owner to another are left
    out (CooperativeStickyAssignor.adjustAssignment).
    None: subscriptions differ, a member has a rack, or an owned entry is not
    a partition of a subscribed topic or is claimed twice.
    """
    n = len(members)
    n_topics = len(counts)
    base: list[int] = []
    total = 0
    for j in range(n_topics):
        base.append(total)
        total += counts[j]
    # the members' fields and their owned partitions' fields: read directly from the model's
    # compiled storage (model_fields) when they are model objects, else generically
    subs: list[Any] = []
    entries: list[Any] = []
    for i in range(n):
        m = members[i]
        if isinstance(m, MemberFields):
            subs.append(m.topics)
            entries.append(m.owned)
            rack: object = m.rack
        else:
            subs.append(m.topics)
            entries.append(m.owned)
            rack = m.rack
        if rack is not None:
            return None
    first = subs[0]
    for i in range(n):
        sub = subs[i]
        if sub is not first and sub != first:
            return None
    claimed: list[bool] = [False] * total
    owned: list[list[int]] = []
    for i in range(n):
        mine: list[int] = []
        last_topic: object = None
        j = -1
        for tp in entries[i]:
            if isinstance(tp, PartitionFields):
                tv = tp.topic
                pv = tp.partition
            else:
                tv = tp.topic
                pv = tp.partition
            if j < 0 or tv is not last_topic:
                if not isinstance(tv, str):
                    return None
                j = topic_index.get(tv, -1)
                if j < 0:
                    return None
                last_topic = tv
            if not isinstance(pv, int):
                return None
            p: int = pv
            if p < 0 or p >= counts[j]:
                return None
            g = base[j] + p
            if claimed[g]:
                return None
            claimed[g] = True
            mine.append(g)
        owned.append(mine)
    min_q = total // n
    max_q = -(-total // n)
    expected_over = total - min_q * n
    current_over = 0
    assignment: list[list[int]] = [[] for _ in range(n)]
    revoked_by: list[int] = [-1] * total
    taken: list[bool] = [False] * total
    under: list[int] = []
    exact: list[int] = []
    n_t = n_topics if n_topics > 0 else 1
    for i in owned_order:
        gids = owned[i]
        k = len(gids)
        if k > 1 and not _in_partition_order(gids, base, n_t):
            # Comparator.comparing(partition).thenComparing(topic)
            keys: list[int] = []
            for g in gids:
                j = _topic_of(base, g)
                keys.append((g - base[j]) * n_t + j)
            keys.sort()
            gids = []
            for key in keys:
                j = key % n_t
                gids.append(base[j] + key // n_t)
        if k < min_q:
            keep = k
            under.append(i)
        elif k >= max_q and current_over < expected_over:
            current_over += 1
            if current_over == expected_over:
                exact.clear()
            keep = max_q
        else:
            keep = min_q
            if current_over < expected_over:
                exact.append(i)
        # the first `keep` stay (the list itself when all do: no copy), the rest are revoked
        assignment[i] = gids if keep >= k else gids[:keep]
        for x in range(k):
            g = gids[x]
            if x < keep:
                taken[g] = True
            else:
                revoked_by[g] = i
    under = sort_by_key(under, rank)
    exact = sort_by_key(exact, rank)
    # round robin of the rest (topics in order, then partition) over the members below
    # minQuota in id order, then the minQuota members first in, first out
    moving: list[bool] = [False] * n
    transfers: list[int] = []
    cursor = 0
    head = 0  # exact[head:] is the queue
    for g in range(total):
        if taken[g]:
            continue
        from_under = True
        if cursor < len(under):
            c = under[cursor]
            cursor += 1
        elif not under and head >= len(exact):
            return None  # Kafka throws; the reference path raises the same error
        elif not under:
            c = exact[head]
            head += 1
            from_under = False
        else:
            c = under[0]
            cursor = 1
        mine = assignment[c]
        mine.append(g)
        if cooperative:
            prev = revoked_by[g]
            if prev >= 0 and prev != c:
                moving[c] = True
                transfers.append(g)
        count = len(mine)
        if count == min_q:
            if from_under:
                cursor -= 1
                del under[cursor]
            exact.append(c)
        elif count == max_q:
            current_over += 1
    if under:
        if current_over != expected_over:
            return None
        for c in under:
            if len(assignment[c]) != min_q:
                return None
    if transfers:
        gone: list[bool] = [False] * total
        for g in transfers:
            gone[g] = True
        for c in range(n):
            if moving[c]:
                assignment[c] = [g for g in assignment[c] if not gone[g]]
    return [[table[g] for g in assignment[i]] for i in range(n)]


def _in_partition_order(gids: list[int], base: list[int], n_t: int) -> bool:
    """Are `gids` already in (partition, topic) order, the order the builder sorts them into?
    (A member usually owns what it was given: its partitions in that order.)"""
    prev = -1
    if n_t == 1:
        for g in gids:
            if g <= prev:
                return False
            prev = g
        return True
    for g in gids:
        j = _topic_of(base, g)
        key = (g - base[j]) * n_t + j
        if key <= prev:
            return False
        prev = key
    return True


def _topic_of(base: list[int], g: int) -> int:
    """The topic number of flat index g: the last j with base[j] <= g."""
    lo = 0
    hi = len(base) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if base[mid] <= g:
            lo = mid
        else:
            hi = mid - 1
    return lo
