"""Hot loops of the assignors in plain typed Python, compiled by mypyc when the install can.

Why a separate module: on small groups (a few thousand members, ~10k partitions) the numpy
paths spend most of their time in per-call overheads, and warm Java finishes in under a
millisecond. These loops touch each member and partition once, with ints, lists and dicts.
`setup.py` compiles this module (optional: without a compiler, or with KAFKA_REBALANCE_PURE=1
at install, it stays Python); the assignors use it only when it is compiled (`COMPILED`), else
their numpy paths, which stay the reference. A test checks both give identical output.

No project imports but kafka_rebalance.native (which build runs) and model_fields (the model's
compiled storage, read directly): callers pass the objects in; no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from kafka_rebalance import model_fields, native
from kafka_rebalance.model_fields import MemberFields, PartitionFields

SlowMember = Callable[[Any, int], tuple[list[Any], list[Any], int]]


def is_compiled() -> bool:
    """True when this module is the mypyc-built extension and was built from the source now beside
    it (kafka_rebalance.native: a stale build is not used; the assignors then take their reference
    paths). kernels_heterogeneous.py and kernels_hashmap.py, which the assignors use on the same
    switch, must be fresh too, and so must model_fields.py: the loops read the model's fields as
    its compiled classes."""
    return native.siblings_fresh(
        __file__, "kernels_heterogeneous", "kernels_hashmap"
    ) and native.is_fresh_build(model_fields.__file__)


def sort_by_key(items: list[int], key: list[int]) -> list[int]:
    """`items` (indices into `key`) sorted by (key[i], i), through one int each (an int list sorts
    fast); shared by the heterogeneous and sticky kernels (one mypyc group: native calls)."""
    n = len(key)
    keyed: list[int] = []
    for i in items:
        keyed.append(key[i] * n + i)
    keyed.sort()
    out: list[int] = []
    for k in keyed:
        out.append(k % n)
    return out


def uniform_homogeneous(
    members: Any,
    order: Any,
    topics: list[str],
    counts: list[int],
    objects_of: Callable[[str, int], Any],
    slow_member: SlowMember,
) -> tuple[list[Any], bool] | None:
    """`UniformHomogeneousAssignmentBuilder`; members are taken as `members[order[i]]`, i = 0, 1, ...
    None when the group is not homogeneous (some member names another set of topics than the first).

    `topics`: the subscribed topics in the member's subscribed-topic-set iteration order, `counts`
    their partition counts, `objects_of(topics[j], counts[j])` a sequence of at least counts[j]
    TopicPartition objects of topics[j] (asked for only when the topic has a free partition). A member whose entries fit its quota keeps its valid entries (first occurrences,
    in the order given); one over quota, or holding a partition beyond its topic's count, goes to
    `slow_member(owned, quota)` -> (kept, revoked, quota left), which follows Java's hash
    iteration order. Then the partitions nobody holds (topics in order) and the revoked ones are
    dealt to members in order up to their quotas. Returns every member's partitions and False
    when some were left unassigned. A member whose owned tuple (exactly a tuple) is kept whole
    and that is dealt nothing gets that tuple itself (shared, as Kafka's builder shares an
    unchanged member's assignment: uniform.py says why); every other member a new list."""
    group: tuple[Any, ...] = members if isinstance(members, tuple) else tuple(members)
    at: list[int] = order if isinstance(order, list) else list(order)
    n = len(group)
    first = group[0].topics
    first_set: set[Any] | None = None
    n_topics = len(topics)
    index: dict[str, int] = {}
    base: list[int] = []
    total = 0
    for j in range(n_topics):
        index[topics[j]] = j
        base.append(total)
        total += counts[j]
    # tuples: compiled code indexes them inline (lists through a call)
    count_of: tuple[int, ...] = tuple(counts)
    base_of: tuple[int, ...] = tuple(base)
    min_quota = total // n
    extra = total - min_quota * n
    # owner[f]: the boxed index of the last member holding partition f (None: nobody); boxed
    # once per member, so marking a partition stores a reference instead of boxing an int
    owner: list[object] = [None] * total
    taken = 0  # partitions somebody holds
    touched: list[bool] = [False] * n_topics  # topics with an entry of some member
    targets: list[Any] = []
    remaining: list[int] = []
    revoked: list[Any] = []
    # members holding nothing share this placeholder until the deal gives them their slice
    # (one list each instead of an empty list and a slice); replaced by a fresh [] at the end
    nothing: list[Any] = []
    for i in range(n):
        m = group[at[i]]
        sub: Any
        owned: Any
        if isinstance(m, MemberFields):  # a MemberSubscription: its fields read directly
            sub = m.topics
            owned = m.owned
        else:
            sub = m.topics
            owned = m.owned
        if sub is not first and sub != first:  # another subscription: heterogeneous?
            if first_set is None:
                first_set = set(first)
            if set(sub) != first_set:
                return None
        entries: tuple[Any, ...] = owned if isinstance(owned, tuple) else tuple(owned)
        quota = min_quota + 1 if i < extra else min_quota
        if len(entries) == 0:
            targets.append(nothing)
            remaining.append(quota)
            continue
        held = 0
        odd = False
        me: object = i
        # the valid first occurrences, in order; built only once an entry is left out
        kept: list[Any] | None = None
        last_topic = ""
        j = -1
        c_j = 0  # counts[j] and base[j] of the current topic, read once per run of its entries
        b_j = 0
        for e in range(len(entries)):
            tp = entries[e]
            if isinstance(tp, PartitionFields):  # a TopicPartition: its fields read directly
                tv = tp.topic
                pv = tp.partition
            else:
                tv = tp.topic
                pv = tp.partition
            if j >= 0 and tv is last_topic:
                pass  # the same topic object as the entry before
            elif not isinstance(tv, str):
                j = -1  # not a topic name: no subscribed topic equals it
            else:  # entries usually come topic by topic, one str object per topic
                j = index.get(tv, -1)
                last_topic = tv
                if j >= 0:
                    c_j = count_of[j]
                    b_j = base_of[j]
                    touched[j] = True
            if j >= 0:
                p = cast(int, pv)  # an int, as before (a compiled cast checks it)
                if p < 0 or p >= c_j:
                    odd = True
                else:
                    f = b_j + p
                    was = owner[f]
                    if was is not me:
                        if was is None:
                            taken += 1
                        owner[f] = me
                        held += 1
                        if kept is not None:
                            kept.append(tp)
                        continue
            if kept is None:
                kept = list(entries[:e])
        if held > quota or odd:
            kept2, gone, left = slow_member(entries, quota)
            targets.append(kept2)
            revoked.extend(gone)
            remaining.append(left)
        else:
            if kept is not None:
                targets.append(kept)
            elif type(owned) is tuple:
                targets.append(owned)  # kept whole: shared (a new list if the deal adds to it)
            else:
                targets.append(list(entries))
            remaining.append(quota - held)
    queue: list[Any] = []
    for j in range(n_topics if taken < total else 0):  # some partition nobody holds
        c = counts[j]
        if not touched[j]:
            objs = objects_of(topics[j], c)
            queue.extend(objs if len(objs) == c else objs[:c])
            continue
        b = base[j]
        objs = None
        for p in range(c):
            if owner[b + p] is None:
                if objs is None:
                    objs = objects_of(topics[j], c)
                queue.append(objs[p])
    queue.extend(revoked)
    n_all = len(queue)
    pos = 0
    for i in range(n):
        if pos >= n_all:
            break
        q = remaining[i]
        if q <= 0:
            continue
        end = pos + q
        if end > n_all:
            end = n_all
        target = targets[i]
        if target is nothing:
            targets[i] = queue[pos:end]
        elif type(target) is tuple:
            targets[i] = list(target) + queue[pos:end]
        elif end - pos == 1:
            target.append(queue[pos])
        else:
            target.extend(queue[pos:end])
        pos = end
    for i in range(n):
        if targets[i] is nothing:
            targets[i] = []
    return targets, pos >= n_all


def member_ids(members: Any) -> tuple[Any, ...]:
    """Every member's id, in order (read directly from the compiled storage)."""
    out: list[Any] = []
    for m in members:
        if isinstance(m, MemberFields):
            out.append(m.member_id)
        else:
            out.append(m.member_id)
    return tuple(out)


def member_columns(members: Any) -> tuple[list[Any], list[Any], list[Any]]:
    """Every member's id, topics and instance id, in order (read directly, as member_ids)."""
    ids: list[Any] = []
    topics: list[Any] = []
    instances: list[Any] = []
    for m in members:
        if isinstance(m, MemberFields):
            ids.append(m.member_id)
            topics.append(m.topics)
            instances.append(m.instance_id)
        else:
            ids.append(m.member_id)
            topics.append(m.topics)
            instances.append(m.instance_id)
    return ids, topics, instances


def in_spec_order(ids: list[str], position: list[int], targets: list[Any]) -> dict[str, Any]:
    """`{ids[k]: targets[position[k]]}`: results listed in the spec's member order (a list each,
    or a shared owned tuple: uniform_homogeneous)."""
    out: dict[str, Any] = {}
    for k in range(len(ids)):
        out[ids[k]] = targets[position[k]]
    return out


def ranges_in_rank_order(
    ids: list[str],
    member_topics: list[Any],
    rank_list: list[int],
    meta: Any,
    with_empty_topics: bool,
    objects_of: Callable[[str, int], Any],
) -> dict[str, list[Any]]:
    """Range assignment over the subscribed topics in metadata, subscribers in rank order: topic
    j's k-th subscriber (in `rank_list` order) takes `n // s` of its n partitions (the first
    `n % s` subscribers one more) in consecutive ranges. Topics are taken in first-seen order over
    the distinct subscriptions, those with the same subscribers as one block (block order: its
    first topic), as `range.plain_ranges` does. Members sharing one subscription tuple object are
    handled once. Result in `ids` order."""
    n = len(ids)
    topics: list[str] = []
    counts: list[int] = []
    col: dict[str, int] = {}
    skipped: set[str] = set()
    by_object: dict[int, int] = {}
    group_of: list[int] = [0] * n
    group_cols: list[list[int]] = []
    stamp: list[int] = []  # stamp[j]: the last subscription that named topic j
    for i in range(n):
        sub = member_topics[i]
        key = id(sub)
        g = by_object.get(key, -1)
        if g < 0:
            g = len(group_cols)
            by_object[key] = g
            cols: list[int] = []
            for t in sub:
                name: str = t
                j = col.get(name, -1)
                if j < 0:
                    if name in skipped:
                        continue
                    tm = meta.get(name)
                    c = -1 if tm is None else int(tm.partitions)
                    if c < 0 or (c == 0 and not with_empty_topics):
                        skipped.add(name)
                        continue
                    j = len(topics)
                    col[name] = j
                    topics.append(name)
                    counts.append(c)
                    stamp.append(-1)
                if stamp[j] == g:
                    continue  # a topic named twice: keep its first place
                stamp[j] = g
                cols.append(j)
            group_cols.append(cols)
        group_of[i] = g
    n_groups = len(group_cols)
    # each topic's subscribers in rank order (one shared list when everyone subscribes alike)
    subscribers: list[list[int]] = []
    if n_groups == 1:
        for _ in range(len(topics)):
            subscribers.append(rank_list)
    else:
        for _ in range(len(topics)):
            subscribers.append([])
        for i in rank_list:
            for j in group_cols[group_of[i]]:
                subscribers[j].append(i)
    # topics with the same subscribers form one block, blocks in first-topic order
    blocks: dict[tuple[int, ...], list[int]] = {}
    for j in range(len(topics)):
        if counts[j] > 0 and len(subscribers[j]) > 0:
            key_t = tuple(subscribers[j]) if n_groups > 1 else ()
            js = blocks.get(key_t)
            if js is None:
                blocks[key_t] = [j]
            else:
                js.append(j)
    out: list[list[Any]] = []
    for _ in range(n):
        out.append([])
    for js in blocks.values():
        subs = subscribers[js[0]]
        s = len(subs)
        for j in js:
            c = counts[j]
            q = c // s
            extra = c - q * s
            objs = objects_of(topics[j], c)
            start = 0
            upto = s if s < c else c
            for k in range(upto):
                size = q + 1 if k < extra else q
                lst = out[subs[k]]
                if size == 1:
                    lst.append(objs[start])
                else:
                    lst.extend(objs[start : start + size])
                start += size
    result: dict[str, list[Any]] = {}
    for k in range(n):
        result[ids[k]] = out[k]
    return result


def round_robin(
    ids: list[str],
    member_topics: list[Any],
    ring: list[int],
    meta: Any,
    java_sorted: Callable[[list[str]], list[str]],
    objects_of: Callable[[str, int], Any],
) -> dict[str, list[Any]] | None:
    """Round robin: every partition of the subscribed topics (in metadata, with partitions; in
    Java String order) goes to the next member of `ring` (member positions in MemberInfo order)
    subscribed to its topic; the cursor runs on across topics. Result in `ids` order; None when
    member ids repeat. `java_sorted` sorts names that are not all ASCII."""
    n = len(ids)
    n_ring = len(ring)
    objects_seen: set[int] = set()
    distinct: list[Any] = []
    cells = 0
    for i in range(n):
        sub = member_topics[i]
        if id(sub) in objects_seen:
            continue
        objects_seen.add(id(sub))
        distinct.append(sub)
        cells += len(sub)
    names: Any
    if len(meta) <= cells:
        # no larger than the subscriptions: take every topic in the metadata (one without a
        # subscriber gets no taker below, and the deal skips it without moving the cursor)
        names = meta
    else:
        names = set()
        for sub in distinct:
            for t in sub:
                names.add(t)
    topics: list[str] = []
    counts: list[int] = []
    ascii_only = True
    for name in names:
        tm = meta.get(name)
        if tm is not None and int(tm.partitions) > 0:
            topics.append(name)
            if not name.isascii():
                ascii_only = False
    if ascii_only:
        topics.sort()  # code point order is String.compareTo order for ASCII
    else:
        topics = java_sorted(topics)
    for name in topics:
        counts.append(int(meta[name].partitions))
    index: dict[str, int] = {}
    for j in range(len(topics)):
        index[topics[j]] = j
    takers: list[list[int]] = []
    for _ in range(len(topics)):
        takers.append([])
    cols_of: dict[int, list[int]] = {}
    shared = n_ring > 0
    first_sub: Any = member_topics[ring[0]] if shared else ()
    for r in range(n_ring):
        if member_topics[ring[r]] is not first_sub:
            shared = False
            break
    if shared:
        everyone = list(range(n_ring))
        for t in first_sub:
            j = index.get(t, -1)
            if j >= 0:
                takers[j] = everyone
    else:
        for r in range(n_ring):
            sub = member_topics[ring[r]]
            key = id(sub)
            js = cols_of.get(key)
            if js is None:
                js = []
                ascending = True  # a subscription in topic order: its columns as read
                for t in sub:
                    j = index.get(t, -1)
                    if j >= 0:
                        if js and j <= js[-1]:
                            ascending = False
                        js.append(j)
                if not ascending:
                    js = sorted(set(js))
                cols_of[key] = js
            for j in js:
                takers[j].append(r)
    out: list[list[Any]] = []
    for _ in range(n):
        out.append([])
    pos = 0
    for j in range(len(topics)):
        who = takers[j]
        s = len(who)
        c = counts[j]
        if s == 0 or c <= 0:
            continue
        lo = 0
        hi = s
        while lo < hi:  # bisect_left(who, pos)
            mid = (lo + hi) // 2
            if who[mid] < pos:
                lo = mid + 1
            else:
                hi = mid
        k = lo % s
        objs = objects_of(topics[j], c)
        for p in range(c):
            out[ring[who[k]]].append(objs[p])
            k += 1
            if k == s:
                k = 0
        last = k - 1 if k > 0 else s - 1
        pos = (who[last] + 1) % n_ring
    result: dict[str, list[Any]] = {}
    for i in range(n):
        result[ids[i]] = out[i]
    if len(result) != n:
        return None
    return result
