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

Like kernels.py: no I/O, no project imports; `setup.py` compiles it.
"""

from __future__ import annotations

from typing import Any

from kafka_rebalance import native


def is_compiled() -> bool:
    """True when this module is the mypyc-built extension, built from the source now beside it."""
    return native.is_fresh_build(__file__)


def _find(keys: list[int], key: int) -> int:
    """Index of the first element >= key in the sorted `keys`."""
    lo = 0
    hi = len(keys)
    while lo < hi:
        mid = (lo + hi) >> 1
        if keys[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


class _Members:
    """The builder's `sortedCurrentSubscriptions`: members by (size when added, id rank), as
    keys size * n + rank; `member[rank]` is the member."""

    def __init__(self, n: int, rank: list[int]) -> None:
        self.n = n
        self.rank = rank
        self.member: list[int] = [0] * n  # by rank
        for i in range(n):
            self.member[rank[i]] = i
        self.keys: list[int] = []
        self.key_of: list[int] = [-1] * n

    def add(self, c: int, size: int) -> None:
        if self.key_of[c] >= 0:
            return
        key = size * self.n + self.rank[c]
        self.keys.insert(_find(self.keys, key), key)
        self.key_of[c] = key

    def remove(self, c: int) -> None:
        key = self.key_of[c]
        if key < 0:
            return
        del self.keys[_find(self.keys, key)]
        self.key_of[c] = -1


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
    first_sub = members[0].topics
    for i in range(1, n):
        sub0 = members[i].topics
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
        m = members[i]
        if m.rack is not None:
            return None
        sub = m.topics
        if not sub:
            # allSubscriptionsEqual skips empty subscriptions until the first topic: its
            # answer then depends on the HashMap order (the reference path knows it)
            return None
        mine: list[int] = []
        seen: set[str] = set()
        for t in sub:
            name: str = t
            if name in seen:
                return None
            seen.add(name)
            j = tix.get(name, -1)
            if j < 0:
                meta = topics.get(name)
                if meta is None:
                    continue
                count: int = meta.partitions
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
    gens: list[int] = []
    max_gen = -1
    for i in range(n):
        m = members[i]
        gen: int = m.generation
        gens.append(gen)
        if gen > max_gen:
            max_gen = gen
        tps = m.owned
        mine = []
        if cooperative or len(tps) < 2:
            for tp in tps:
                g = _gid(tp.topic, tp.partition, tix, base, counts0)
                if g == -2:
                    return None
                if g >= 0:
                    if first_owner[g] >= 0:
                        return None
                    first_owner[g] = i
                    mine.append(g)
        else:
            # StickyAssignor's user data: grouped by topic in its HashMap's order
            by_topic: dict[str, list[Any]] = {}
            seen_topics: list[str] = []
            calls = 0
            last_new = -1
            for tp in tps:
                t2: str = tp.topic
                lst = by_topic.get(t2)
                if lst is None:
                    lst = []
                    by_topic[t2] = lst
                    seen_topics.append(t2)
                    last_new = calls
                lst.append(tp)
                calls += 1
            grouped: Any = seen_topics
            if len(seen_topics) > 1:
                grouped = topic_order(tuple(seen_topics), calls - 1 > last_new)
            for t3 in grouped:
                for tp in by_topic[t3]:
                    g = _gid(tp.topic, tp.partition, tix, base, counts0)
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
    sm = _Members(n, rank)
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
        c = _first_subscriber(sm, flag, n_topics, j)
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
    st = _State(
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


def _first_subscriber(sm: _Members, flag: list[bool], n_topics: int, j: int) -> int:
    n = sm.n
    member = sm.member
    for key in sm.keys:
        c = member[key % n]
        if flag[c * n_topics + j]:
            return c
    return -1


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


class _State:
    """performReassignments and what it needs: sizes, owners, per-topic counts, movements."""

    def __init__(
        self,
        n: int,
        n_topics: int,
        sm: _Members,
        current: list[list[int]],
        owner: list[int],
        topic_of: list[int],
        flag: list[bool],
        own: list[int],
        max_size: list[int],
        subs: list[list[int]],
        in_current: list[bool],
        prev_owner: list[int],
        base: list[int],
        names: list[str],
        tix: dict[str, int],
        new_set: Any,
    ) -> None:
        self.n = n
        self.n_topics = n_topics
        self.sm = sm
        self.current = current
        self.owner = owner
        self.topic_of = topic_of
        self.flag = flag
        self.own = own
        self.max_size = max_size
        self.subs = subs
        self.in_current = in_current
        self.prev_owner = prev_owner
        self.base = base
        self.names = names
        self.tix = tix
        self.new_set = new_set
        total = len(topic_of)
        self.move_src: list[int] = [-1] * total
        self.move_dst: list[int] = [-1] * total
        self.by_topic: dict[int, dict[int, Any]] = {}

    def perform(self, partitions: list[int]) -> int:
        """1 if a partition moved, 0 if none did, -1: Kafka throws (the reference path raises)."""
        performed = 0
        current = self.current
        owner = self.owner
        prev_owner = self.prev_owner
        while True:
            modified = False
            balanced = -1
            for g in partitions:
                if balanced < 0:
                    balanced = 1 if self.is_balanced() else 0
                if balanced == 1:
                    break
                consumer = owner[g]
                mine = len(current[consumer])
                p = prev_owner[g]
                if p >= 0:
                    if not self.in_current[p]:
                        return -1
                    if mine > len(current[p]) + 1:
                        self.reassign(g, p)
                        performed = 1
                        modified = True
                        balanced = -1
                        continue
                first = _first_subscriber(self.sm, self.flag, self.n_topics, self.topic_of[g])
                if first >= 0 and mine > len(current[first]) + 1:
                    self.reassign(g, first)
                    performed = 1
                    modified = True
                    balanced = -1
            if not modified:
                return performed

    def is_balanced(self) -> bool:
        """isBalanced(), from the larger members' side (see the reference's _is_balanced)."""
        keys = self.sm.keys
        if not keys:
            return True
        n = self.n
        nt = self.n_topics
        lo = keys[0] // n
        hi = keys[len(keys) - 1] // n
        if lo >= hi - 1:
            return True
        own = self.own
        member = self.sm.member
        for key in keys:
            count = key // n
            c = member[key % n]
            if count == self.max_size[c]:
                continue
            threshold = count + 2
            if hi < threshold:
                return True
            mine = self.subs[c]
            for x in range(len(keys) - 1, -1, -1):
                k2 = keys[x]
                if k2 // n < threshold:
                    break
                row = member[k2 % n] * nt
                for j in mine:
                    if own[row + j] > 0:
                        return False
        return True

    def reassign(self, g: int, new: int) -> None:
        """reassignPartition: the partition to move may be one that came the other way."""
        old = self.owner[g]
        self.process(self.actual_to_move(g, old, new), new)

    def _tp(self, g: int) -> tuple[str, int]:
        j = self.topic_of[g]
        return (self.names[j], g - self.base[j])

    def actual_to_move(self, g: int, old: int, new: int) -> int:
        j = self.topic_of[g]
        per_topic = self.by_topic.get(j)
        if per_topic is None:
            return g
        if self.move_src[g] >= 0:
            old = self.move_src[g]
        s = per_topic.get(new * self.n + old)
        if s is None:
            return g
        for tp in s:
            name: str = tp[0]
            part: int = tp[1]
            return self.base[self.tix[name]] + part
        return g

    def _remove_record(self, g: int) -> int:
        src = self.move_src[g]
        dst = self.move_dst[g]
        self.move_src[g] = -1
        self.move_dst[g] = -1
        j = self.topic_of[g]
        per_topic = self.by_topic[j]
        pair = src * self.n + dst
        s = per_topic[pair]
        s.remove(self._tp(g))
        if not len(s):
            del per_topic[pair]
        if not per_topic:
            del self.by_topic[j]
        return src

    def _add_record(self, g: int, src: int, dst: int) -> None:
        self.move_src[g] = src
        self.move_dst[g] = dst
        j = self.topic_of[g]
        per_topic = self.by_topic.get(j)
        if per_topic is None:
            per_topic = {}
            self.by_topic[j] = per_topic
        pair = src * self.n + dst
        s = per_topic.get(pair)
        if s is None:
            s = self.new_set()
            per_topic[pair] = s
        s.add(self._tp(g))

    def process(self, g: int, new: int) -> None:
        """processPartitionMovement."""
        old = self.owner[g]
        sm = self.sm
        sm.remove(old)
        sm.remove(new)
        if self.move_src[g] >= 0:
            src = self._remove_record(g)
            if src != new:
                self._add_record(g, src, new)
        else:
            self._add_record(g, old, new)
        self.current[old].remove(g)
        self.current[new].append(g)
        self.owner[g] = new
        sm.add(new, len(self.current[new]))
        sm.add(old, len(self.current[old]))
        j = self.topic_of[g]
        nt = self.n_topics
        self.own[old * nt + j] -= 1
        self.own[new * nt + j] += 1
