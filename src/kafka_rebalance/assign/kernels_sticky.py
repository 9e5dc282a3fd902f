"""The sticky assignors' constrained builder in plain typed Python, compiled by mypyc when it can.

`sticky_constrained` is `ConstrainedAssignmentBuilder` (sticky_constrained.py,
the reference) for the common case only: every member subscribes to the same
topics, no member has a rack, and every owned partition is a partition of a
subscribed topic, owned by one member once. Anything else returns None and
the caller takes the reference path. Partitions are ints here (their index in
topics-sorted, then partition order), so the owned lists are read once and no
tuple per partition is built.

A member that owns what it was given last time (the simulator's rolling restarts: every member
but one, at every rebalance) has its entries in the order the builder sorts them into; the
kernel then checks them in one pass and keeps no list of their indices, the partitions nobody
keeps are found by a C scan (`list.index`) instead of a Python loop over every partition, and
the member's result starts as a copy of its own entries (equal values of the same type, which
is checked) instead of one table lookup per partition. Session 12 (BENCHMARKS.md): 1,000
members, 10,000 partitions, the kernel in the simulator 3.9 -> 2.0-2.5 ms a call.

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
    """Each member's partitions (objects of `table`, or the member's own entries where they are
    `table`'s type with a str topic and an int number: equal values), members in `members`
    order, or None.

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
    # An owned entry that is a partition of `table`'s own type with a str topic and an int
    # number may stand for itself in the result (an equal value, as the reference gives); a
    # member whose entries all do and are already in the order the builder sorts them into
    # (Comparator.comparing(partition).thenComparing(topic): what it was given last time) keeps
    # them without a list of their indices: `sorted_g[i]` is None. Otherwise `sorted_g[i]` is
    # its indices in that order and the result takes `table`'s objects, as before.
    tp_type: object = type(table[0]) if total > 0 else None
    n_t = n_topics if n_topics > 0 else 1
    claimed: list[bool] = [False] * total  # owned and kept (revoked ones are set back below)
    sorted_g: list[Any] = [None] * n
    sizes: list[int] = [0] * n
    for i in range(n):
        last_topic: object = None
        j = -1
        k = 0
        prev = -1
        ordered = True
        reuse = isinstance(entries[i], tuple)
        for tp in entries[i]:
            if isinstance(tp, PartitionFields):
                tv = tp.topic
                pv = tp.partition
                if reuse and type(tp) is not tp_type:
                    reuse = False
            else:
                tv = tp.topic
                pv = tp.partition
                reuse = False
            # (the exact types are read before isinstance narrows them: mypyc would read a
            # narrowed bool back as an int)
            if reuse and (type(pv) is not int or type(tv) is not str):
                reuse = False
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
            key = p * n_t + j
            if key <= prev:
                ordered = False
            prev = key
            k += 1
        sizes[i] = k
        if k > 0 and not (reuse and ordered):
            gids = _gids(entries[i], topic_index, base)
            if not ordered:
                gids = _partition_order(gids, base, n_t)
            sorted_g[i] = gids
    min_q = total // n
    max_q = -(-total // n)
    expected_over = total - min_q * n
    current_over = 0
    kept: list[int] = [0] * n
    revoked_by: list[int] = [-1] * total
    under: list[int] = []
    exact: list[int] = []
    free = total
    for i in owned_order:
        k = sizes[i]
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
        if keep > k:
            keep = k
        kept[i] = keep
        free -= keep
        if keep < k:  # the first `keep` stay, the rest are revoked
            have: Any = sorted_g[i]
            tail: list[int] = _gids(entries[i], topic_index, base) if have is None else have
            for x in range(keep, k):
                g = tail[x]
                claimed[g] = False
                revoked_by[g] = i
    under = sort_by_key(under, rank)
    exact = sort_by_key(exact, rank)
    # round robin of the rest (topics in order, then partition) over the members below
    # minQuota in id order, then the minQuota members first in, first out
    added: list[Any] = [None] * n  # per member: the indices dealt to it, in order
    moving: list[bool] = [False] * n
    transfers: list[int] = []
    cursor = 0
    head = 0  # exact[head:] is the queue
    g = -1
    for _ in range(free):
        g = claimed.index(False, g + 1)  # the next partition nobody keeps (a C scan)
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
        mine = added[c]
        if mine is None:
            mine = []
            added[c] = mine
        mine.append(g)
        if cooperative:
            prev_owner = revoked_by[g]
            if prev_owner >= 0 and prev_owner != c:
                moving[c] = True
                transfers.append(g)
        count = kept[c] + len(mine)
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
            mine = added[c]
            if kept[c] + (0 if mine is None else len(mine)) != min_q:
                return None
    if transfers:
        gone: list[bool] = [False] * total
        for g in transfers:
            gone[g] = True
        for c in range(n):
            if moving[c]:
                added[c] = [g for g in added[c] if not gone[g]]
    out: list[list[Any]] = []
    for i in range(n):
        keep = kept[i]
        mine_sorted: Any = sorted_g[i]
        if mine_sorted is None:  # its own entries, in order
            own = entries[i]
            result: list[Any] = list(own) if keep >= sizes[i] else list(own[:keep])
        else:
            ordered_g: list[int] = mine_sorted
            result = [table[ordered_g[x]] for x in range(keep)]
        mine = added[i]
        if mine is not None:
            for g in mine:
                result.append(table[g])
        out.append(result)
    return out


def _gids(owned: Any, topic_index: dict[str, int], base: list[int]) -> list[int]:
    """The flat indices of a member's owned entries, in their order (already checked valid)."""
    out: list[int] = []
    last_topic: object = None
    b = 0
    tv: Any
    pv: Any
    for tp in owned:
        if isinstance(tp, PartitionFields):
            tv = tp.topic
            pv = tp.partition
        else:
            tv = tp.topic
            pv = tp.partition
        if tv is not last_topic:
            b = base[topic_index[tv]]
            last_topic = tv
        p: int = pv
        out.append(b + p)
    return out


def _partition_order(gids: list[int], base: list[int], n_t: int) -> list[int]:
    """`gids` sorted by Comparator.comparing(partition).thenComparing(topic)."""
    keys: list[int] = []
    for g in gids:
        j = _topic_of(base, g)
        keys.append((g - base[j]) * n_t + j)
    keys.sort()
    out: list[int] = []
    for key in keys:
        j = key % n_t
        out.append(base[j] + key // n_t)
    return out


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
