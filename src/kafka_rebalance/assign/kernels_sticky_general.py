"""The sticky assignors' general builder on ints, in plain typed Python compiled by mypyc.

`sticky_general` runs what sticky.py's reference path runs when the members
subscribe differently: the member data (StickyAssignor's user data order, or
the protocol field's), `allSubscriptionsEqual`'s resolution of the owned
partitions, `GeneralAssignmentBuilder` (sticky_general.py, the reference) and,
for cooperative-sticky, `adjustAssignment`. It takes the common case only:
member ids distinct, no member with a rack or an empty subscription, no topic
named twice in one subscription, and every owned entry of a subscribed topic a partition that
exists and is claimed once. Anything else returns None and the caller takes
the reference path (which also raises where Kafka throws).

Partitions are ints here: their place in `sortedAllPartitions` (topics by
subscriber count, then name; then partition). Members are their position in
the input; the builder's `TreeSet` of (assignment size, member id) is a
sorted list of size * n + rank. `PartitionMovements` keeps its per-topic sets
as the caller's Java HashSet (`new_set`), whose iteration order decides which
partition moves back, so that order is Kafka's as in the reference.

Like kernels.py: no I/O, no project imports but the model's compiled storage (model_fields, whose
fields it reads directly); `setup.py` compiles it.
"""

from __future__ import annotations

from typing import Any

from kafka_rebalance import native
from kafka_rebalance.assign.kernels_sticky_moves import Members, Reassignments, first_subscriber
from kafka_rebalance.model_fields import MemberFields, PartitionFields


def is_compiled() -> bool:
    """True when this module is the mypyc-built extension, built from the source now beside it,
    and so is kernels_sticky_moves.py, whose balancing it calls."""
    return native.siblings_fresh(__file__, "kernels_sticky_moves")


def sticky_general(
    members: Any,
    rank: list[int],
    topics: Any,
    string_key: Any,
    topic_order: Any,
    table_for: Any,
    new_set: Any,
    cooperative: bool,
) -> list[list[Any]] | None:
    """Each member's partitions (members in `members` order), or None (the reference path runs).

    `rank[i]`: member i's place in member id (String.compareTo) order;
    `topics`: topic name -> TopicMetadata (the group's metadata);
    `string_key(name)`: a sort key ordering names as String.compareTo;
    `topic_order(names, trailing)`: the topics of a member's owned list in the
    order StickyAssignor's user data groups them (eager sticky only);
    `table_for(names, counts)`: the TopicPartition objects, flat, topics in
    that order; `new_set()`: an empty Java HashSet of (topic, partition).
    """
    n = len(members)
    # the members' fields: read directly from the model's compiled storage (model_fields) when
    # they are model objects, else generically
    msubs: list[Any] = []
    entries: list[Any] = []
    gens: list[int] = []
    for i in range(n):
        m = members[i]
        if isinstance(m, MemberFields):
            msubs.append(m.topics)
            entries.append(m.owned)
            rack: object = m.rack
            gv: object = m.generation
        else:
            msubs.append(m.topics)
            entries.append(m.owned)
            rack = m.rack
            gv = m.generation
        if rack is not None or not isinstance(gv, int):
            return None
        gens.append(gv)
    first_sub = msubs[0]
    for i in range(1, n):
        sub0 = msubs[i]
        if sub0 is not first_sub and sub0 != first_sub:
            break
    else:
        return None  # one subscription for all (the usual group): the constrained builder's
    # -- subscriptions: topic numbers (first seen), and whether all are equal
    tix: dict[str, int] = {}
    names: list[str] = []
    counts0: list[int] = []
    subs: list[list[int]] = []
    first_set: set[str] = set()
    all_equal = True
    for i in range(n):
        sub = msubs[i]
        if not sub:
            # allSubscriptionsEqual skips empty subscriptions until the first topic: its
            # answer then depends on the HashMap order (the reference path knows it)
            return None
        mine: list[int] = []
        seen: set[str] = set()
        for t in sub:
            if not isinstance(t, str):
                return None
            name: str = t
            if name in seen:
                return None
            seen.add(name)
            j = tix.get(name, -1)
            if j < 0:
                meta = topics.get(name)
                if meta is None:
                    continue
                cv: object = meta.partitions
                if not isinstance(cv, int):
                    return None
                count: int = cv
                if count <= 0:
                    continue
                j = len(names)
                tix[name] = j
                names.append(name)
                counts0.append(count)
            mine.append(j)
        if i == 0:
            first_set = seen
        elif all_equal and seen != first_set:
            all_equal = False
        subs.append(mine)
    if all_equal:
        return None  # the constrained builder's group
    n_topics = len(names)
    consumers: list[int] = [0] * n_topics
    for i in range(n):
        for j in subs[i]:
            consumers[j] += 1
    # -- sortedAllPartitions: topics by (subscriber count, name)
    order_keys: list[tuple[int, Any, int]] = []
    for j in range(n_topics):
        order_keys.append((consumers[j], string_key(names[j]), j))
    order_keys.sort()
    for x in range(1, n_topics):
        a = order_keys[x - 1]
        b2 = order_keys[x]
        if a[0] == b2[0] and a[1] == b2[1]:
            return None  # two names String.compareTo calls equal: the reference's order decides
    base: list[int] = [0] * n_topics
    sorted_names: list[str] = []
    sorted_counts: list[int] = []
    total = 0
    for entry in order_keys:
        j = entry[2]
        base[j] = total
        total += counts0[j]
        sorted_names.append(names[j])
        sorted_counts.append(counts0[j])
    topic_of: list[int] = [0] * total
    for j in range(n_topics):
        b = base[j]
        for p in range(counts0[j]):
            topic_of[b + p] = j
    flag: list[bool] = [False] * (n * n_topics)
    max_size: list[int] = [0] * n
    for i in range(n):
        s = 0
        row = i * n_topics
        for j in subs[i]:
            flag[row + j] = True
            s += counts0[j]
        max_size[i] = s
    # -- member data: owned partitions (valid, claimed once) and generations
    first_owner: list[int] = [-1] * total
    owned: list[list[int]] = []
    max_gen = -1
    for i in range(n):
        gen = gens[i]
        if gen > max_gen:
            max_gen = gen
        tps = entries[i]
        mine = []
        if cooperative or len(tps) < 2:
            for tp in tps:
                if isinstance(tp, PartitionFields):
                    tv: object = tp.topic
                    pv: object = tp.partition
                else:
                    tv = tp.topic
                    pv = tp.partition
                if not isinstance(tv, str) or not isinstance(pv, int):
                    return None
                g = _gid(tv, pv, tix, base, counts0)
                if g == -2:
                    return None
                if g >= 0:
                    if first_owner[g] >= 0:
                        return None
                    first_owner[g] = i
                    mine.append(g)
        else:
            # StickyAssignor's user data: grouped by topic in its HashMap's order
            by_topic: dict[str, list[int]] = {}
            seen_topics: list[str] = []
            calls = 0
            last_new = -1
            for tp in tps:
                if isinstance(tp, PartitionFields):
                    tv = tp.topic
                    pv = tp.partition
                else:
                    tv = tp.topic
                    pv = tp.partition
                if not isinstance(tv, str) or not isinstance(pv, int):
                    return None
                lst = by_topic.get(tv)
                if lst is None:
                    lst = []
                    by_topic[tv] = lst
                    seen_topics.append(tv)
                    last_new = calls
                lst.append(pv)
                calls += 1
            grouped: Any = seen_topics
            if len(seen_topics) > 1:
                grouped = topic_order(tuple(seen_topics), calls - 1 > last_new)
            for t3 in grouped:
                for part in by_topic[t3]:
                    g = _gid(t3, part, tix, base, counts0)
                    if g == -2:
                        return None
                    if g >= 0:
                        if first_owner[g] >= 0:
                            return None
                        first_owner[g] = i
                        mine.append(g)
        owned.append(mine)
    # -- prepopulate: partitions of members of an older generation
    prev_owner: list[int] = [-1] * total
    prev_gen: list[int] = [0] * total
    for i in range(n):
        if gens[i] < max_gen:
            for g in owned[i]:
                prev_owner[g] = i
                prev_gen[g] = gens[i]
    # -- keep the owned partitions each member still subscribes to
    current: list[list[int]] = owned
    owner: list[int] = [-1] * total
    revocation_required = False
    for i in range(n):
        mine = current[i]
        row = i * n_topics
        keep_all = True
        for g in mine:
            if not flag[row + topic_of[g]]:
                keep_all = False
                break
        if not keep_all:
            revocation_required = True
            kept: list[int] = []
            for g in mine:
                if flag[row + topic_of[g]]:
                    kept.append(g)
            current[i] = kept
            mine = kept
        for g in mine:
            owner[g] = i
    sm = Members(n, rank)
    largest = 0
    for i in range(n):
        size = len(current[i])
        sm.add(i, size)
        if size > largest:
            largest = size
    initializing = largest == 0
    unassigned: list[int] = []
    for g in range(total):
        if owner[g] < 0:
            unassigned.append(g)
    # -- the rest, one by one, to the first subscriber in (size, id) order
    for g in unassigned:
        j = topic_of[g]
        c = first_subscriber(sm, flag, n_topics, j)
        if c < 0:
            continue
        sm.remove(c)
        current[c].append(g)
        owner[g] = c
        sm.add(c, len(current[c]))
    # -- topics with one subscriber and members that cannot move anything stay out
    movable: list[int] = []
    for g in range(total):
        if consumers[topic_of[g]] >= 2:
            movable.append(g)
    movable_unassigned: list[int] = []
    for g in unassigned:
        if consumers[topic_of[g]] >= 2:
            movable_unassigned.append(g)
    in_current: list[bool] = [True] * n
    for i in range(n):
        mine = current[i]
        if len(mine) < max_size[i]:
            continue
        can = False
        for g in mine:
            if consumers[topic_of[g]] >= 2:
                can = True
                break
        if not can:
            sm.remove(i)
            in_current[i] = False
    pre: list[list[int]] = []
    for i in range(n):
        pre.append(list(current[i]) if in_current[i] else current[i])
    pre_owner = list(owner)
    own: list[int] = [0] * (n * n_topics)
    for i in range(n):
        if in_current[i]:
            row = i * n_topics
            for g in current[i]:
                own[row + topic_of[g]] += 1
    st = Reassignments(
        n,
        n_topics,
        sm,
        current,
        owner,
        topic_of,
        flag,
        own,
        max_size,
        subs,
        in_current,
        prev_owner,
        base,
        names,
        tix,
        new_set,
    )
    if not revocation_required:
        if st.perform(movable_unassigned) < 0:
            return None
    performed = st.perform(movable)
    if performed < 0:
        return None
    if (
        not initializing
        and performed > 0
        and _score(current, in_current) >= _score(pre, in_current)
    ):
        for i in range(n):
            if in_current[i]:
                current[i] = pre[i]
        owner = pre_owner
    # -- the result, and cooperative-sticky's adjustAssignment
    table: list[Any] = table_for(sorted_names, sorted_counts)
    out: list[list[Any]] = []
    for i in range(n):
        objs: list[Any] = []
        for g in current[i]:
            if cooperative:
                o = first_owner[g]
                if o >= 0 and o != i:
                    continue  # the owner revokes it first
            objs.append(table[g])
        out.append(objs)
    return out


def _gid(
    topic: str, partition: int, tix: dict[str, int], base: list[int], counts: list[int]
) -> int:
    """The partition's number; -1: a topic nobody subscribes to (dropped, as the reference
    does); -2: not a partition of a subscribed topic's (the reference path decides)."""
    j = tix.get(topic, -1)
    if j < 0:
        return -1
    if partition < 0 or partition >= counts[j]:
        return -2
    return base[j] + partition


def _score(assignment: list[list[int]], in_current: list[bool]) -> int:
    """AbstractStickyAssignor's balance score over the participating members."""
    sizes: list[int] = []
    for i in range(len(assignment)):
        if in_current[i]:
            sizes.append(len(assignment[i]))
    sizes.sort()
    score = 0
    acc = 0
    for i in range(len(sizes)):
        s = sizes[i]
        score += s * i - acc
        acc += s
    return score
