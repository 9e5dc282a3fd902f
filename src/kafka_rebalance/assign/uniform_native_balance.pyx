# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The uniform assignor's heterogeneous deal and balance on C int arrays: Cython, built by setup.py
beside uniform_native.pyx and uniform_native_plan.pyx when it can.

`deal_and_balance`: kernels_heterogeneous._deal_and_balance (its twin) with no leftovers (no
partition kept by two members): assignRemainingPartitions and the balance pass with owners and
sizes as C int arrays, and Kafka's MemberAssignmentBalancer on C arrays. Split from
uniform_native_plan.pyx (the group's plans: the members' order, the subscription plan), which it
follows in a call. What it cannot take it declines (False), and the twin runs. Nothing is kept
between calls. Java's HashMap iteration order is uniform_native_plan's `java_put_order`, cimported
through uniform_native_plan.pxd: one C copy of the rule (review 11 S7).
"""

from libc.stdlib cimport free, malloc, qsort
from libc.string cimport memset

from kafka_rebalance.assign.uniform_native_plan cimport java_put_order


cdef struct Balancer:
    # kernels_heterogeneous.Balancer (Kafka's MemberAssignmentBalancer) on C arrays
    int *sizes
    int *sm
    Py_ssize_t n
    Py_ssize_t least_end
    Py_ssize_t least_count
    Py_ssize_t next_least
    Py_ssize_t most_start
    Py_ssize_t most_end
    Py_ssize_t most_count
    Py_ssize_t next_most


cdef int *_SORT_SIZES  # the sizes _by_size compares (set just before each qsort, read only there)


cdef int _by_size(const void *a, const void *b) noexcept nogil:
    cdef int x = (<const int *>a)[0]
    cdef int y = (<const int *>b)[0]
    cdef int sx = _SORT_SIZES[x]
    cdef int sy = _SORT_SIZES[y]
    if sx != sy:
        return -1 if sx < sy else 1
    return -1 if x < y else (1 if x > y else 0)


cdef inline void _sort_by_size(int *items, Py_ssize_t count, int *sizes) noexcept:
    """kernels.sort_by_key(items, sizes): by (sizes[m], m)."""
    global _SORT_SIZES
    _SORT_SIZES = sizes
    qsort(items, count, sizeof(int), _by_size)


cdef inline void _bal_init(Balancer *bal, int *members, Py_ssize_t count) noexcept:
    cdef Py_ssize_t i
    for i in range(count):
        bal.sm[i] = members[i]
    _sort_by_size(bal.sm, count, bal.sizes)
    bal.n = count
    bal.least_end = 0
    bal.least_count = bal.sizes[bal.sm[0]] - 1
    bal.next_least = 0
    bal.most_start = count
    bal.most_end = count
    bal.most_count = bal.sizes[bal.sm[count - 1]] + 1
    bal.next_most = count - 1


cdef inline int _bal_next_least(Balancer *bal) noexcept:
    """The next least loaded member, -2 past the end (where the twin's list read would fail)."""
    cdef Py_ssize_t end
    if bal.next_least >= bal.least_end:
        bal.least_count += 1
        end = bal.least_end
        while end < bal.n and bal.sizes[bal.sm[end]] == bal.least_count:
            end += 1
        bal.least_end = end
        bal.next_least = 0
    if bal.next_least >= bal.n:
        return -2
    cdef int member = bal.sm[bal.next_least]
    bal.next_least += 1
    return member


cdef inline int _bal_next_most(Balancer *bal) noexcept:
    cdef Py_ssize_t start
    if bal.next_most < bal.most_start:
        if bal.most_end <= bal.most_start and bal.most_start > 0:
            bal.most_count = bal.sizes[bal.sm[bal.most_start - 1]]
        else:
            bal.most_count -= 1
        start = bal.most_start
        while start > 0 and bal.sizes[bal.sm[start - 1]] == bal.most_count:
            start -= 1
        bal.most_start = start
        bal.next_most = bal.most_end - 1
    if bal.next_most < 0:
        return -1
    cdef int member = bal.sm[bal.next_most]
    bal.next_most -= 1
    return member


cdef inline void _bal_exclude_most(Balancer *bal) noexcept:
    cdef Py_ssize_t i = bal.next_most + 1
    cdef int member = bal.sm[i]
    bal.sm[i] = bal.sm[bal.most_end - 1]
    bal.sm[bal.most_end - 1] = member
    bal.most_end -= 1


def deal_and_balance(list ranked_topics, list counts, list base, list subscribers, list owners, list sizes):
    """kernels_heterogeneous._deal_and_balance with no leftovers (the unshared path): the free
    partitions of each topic (in `ranked_topics` order) to its least loaded subscribers, then
    the balance pass; `owners` and `sizes` updated in place. False (nothing changed) where the
    twin's list reads would fail; the caller then runs the twin."""
    cdef Py_ssize_t n = len(sizes)
    cdef Py_ssize_t total = len(owners)
    cdef Py_ssize_t n_topics = len(counts)
    cdef Py_ssize_t n_ranked = len(ranked_topics)
    cdef int *own = <int *>malloc((total + 1) * sizeof(int))
    cdef int *sz = <int *>malloc((n + 1) * sizeof(int))
    cdef Py_ssize_t *sub_start = <Py_ssize_t *>malloc((n_topics + 1) * sizeof(Py_ssize_t))
    cdef int *sub_flat = NULL
    cdef int *ranked_m = <int *>malloc((n + 1) * sizeof(int))
    cdef int *at_start = <int *>malloc((n + 1) * sizeof(int))
    cdef int *ordered = <int *>malloc((n_ranked + 1) * sizeof(int))
    cdef int *top = <int *>malloc((n + 1) * sizeof(int))
    cdef int *mark = <int *>malloc((n + 1) * sizeof(int))
    cdef int *below = <int *>malloc((total + 1) * sizeof(int))
    cdef Balancer bal
    bal.sm = <int *>malloc((n + 1) * sizeof(int))
    bal.sizes = sz
    cdef Py_ssize_t i, j, k, f, b, c, s, m, end, nxt, level, n_ordered, last, p, old, total_subs
    cdef int most, least, moved, lo, hi
    cdef int call = 0  # a stamp per _balance_topic call: its owners' stacks are marked with it
    cdef bint done, free_partition
    try:
        if (own == NULL or sz == NULL or sub_start == NULL or ranked_m == NULL or at_start == NULL
                or ordered == NULL or top == NULL or mark == NULL or below == NULL or bal.sm == NULL):
            raise MemoryError()
        for f in range(total):
            own[f] = owners[f]
        for i in range(n):
            sz[i] = sizes[i]
            mark[i] = -1
        total_subs = 0
        for j in range(n_topics):
            sub_start[j] = total_subs
            total_subs += len(<list>subscribers[j])
        sub_start[n_topics] = total_subs
        sub_flat = <int *>malloc((total_subs + 1) * sizeof(int))
        if sub_flat == NULL:
            raise MemoryError()
        for j in range(n_topics):
            k = sub_start[j]
            for m in <list>subscribers[j]:
                if m < 0 or m >= n:
                    return False
                sub_flat[k] = m
                k += 1
        # assignRemainingPartitions: each topic's free partitions to its least loaded subscribers
        for k in range(n_ranked):
            j = ranked_topics[k]
            b = base[j]
            c = counts[j]
            free_partition = False
            for f in range(b, b + c):
                if own[f] < 0:
                    free_partition = True
                    break
            if not free_partition:
                continue
            s = sub_start[j + 1] - sub_start[j]
            if s == 0:
                return False
            for i in range(s):
                ranked_m[i] = sub_flat[sub_start[j] + i]
            _sort_by_size(ranked_m, s, sz)
            for i in range(s):
                at_start[i] = sz[ranked_m[i]]
            level = at_start[0] - 1
            end = 0
            nxt = 0
            for f in range(b, b + c):
                if own[f] >= 0:
                    continue
                if nxt >= end:
                    level += 1
                    while end < s and at_start[end] <= level:
                        end += 1
                    nxt = 0
                if nxt >= s:
                    return False
                m = ranked_m[nxt]
                own[f] = <int>m
                sz[m] += 1
                nxt += 1
        # balance: per topic, most loaded to least loaded, until a full pass moves nothing
        n_ordered = 0
        for k in range(n_ranked):
            j = ranked_topics[k]
            if sub_start[j + 1] - sub_start[j] >= 2:
                ordered[n_ordered] = <int>j
                n_ordered += 1
        if n_ordered > 0:
            last = -1
            done = False
            for _ in range(16):
                for k in range(n_ordered):
                    if k == last:
                        done = True
                        break
                    call += 1
                    moved = _balance_topic(
                        call, sub_flat + sub_start[ordered[k]],
                        sub_start[ordered[k] + 1] - sub_start[ordered[k]], sz, own,
                        base[ordered[k]], counts[ordered[k]], &bal, top, mark, below,
                    )
                    if moved < 0:
                        return False
                    if moved > 0 or last == -1:
                        last = k
                if done:
                    break
        for f in range(total):
            if own[f] != owners[f]:
                owners[f] = own[f]
        for i in range(n):
            if sz[i] != sizes[i]:
                sizes[i] = sz[i]
        return True
    finally:
        free(own)
        free(sz)
        free(sub_start)
        free(sub_flat)
        free(ranked_m)
        free(at_start)
        free(ordered)
        free(top)
        free(mark)
        free(below)
        free(bal.sm)


cdef int _balance_topic(
    int call, int *subs, Py_ssize_t s, int *sizes, int *owners, Py_ssize_t b, Py_ssize_t c,
    Balancer *bal, int *top, int *mark, int *below,
) noexcept:
    """kernels_heterogeneous._balance_topic without leftovers: partitions moved, -1 where the
    twin's list reads would fail. Each owner's partitions are a stack (`top`, `below`): the
    twin's per-owner lists, popped from the end."""
    cdef Py_ssize_t i, p, f
    cdef int lo = sizes[subs[0]], hi = lo, x, o, most, least, old, moved = 0
    for i in range(s):
        x = sizes[subs[i]]
        if x < lo:
            lo = x
        if x > hi:
            hi = x
    if hi - lo <= 1:
        return 0
    _bal_init(bal, subs, s)
    # the topic's partitions grouped by owner, partition order within an owner (mark: stacks of
    # this call; a member marked by another call holds none here)
    for p in range(c):
        o = owners[b + p]
        if o < 0:
            continue
        if mark[o] != call:
            mark[o] = call
            top[o] = -1
        below[b + p] = top[o]
        top[o] = <int>p
    while not (bal.most_count - bal.least_count <= 1):
        most = -1
        while True:
            most = _bal_next_most(bal)
            if most == -1:
                break
            if mark[most] != call or top[most] < 0:
                _bal_exclude_most(bal)
                continue
            break
        if most == -1:
            break
        p = top[most]
        top[most] = below[b + p]
        least = _bal_next_least(bal)
        if least == -2:
            return -1
        if bal.most_count - bal.least_count <= 1:
            break
        f = b + p
        old = owners[f]
        if old != -1:
            sizes[old] -= 1
        owners[f] = least
        sizes[least] += 1
        moved += 1
    return moved


def owned_over_quota(entries, Py_ssize_t quota, dict index, list counts, list objects):
    """kernels_hashmap.owned_over_quota (its twin) for a member whose entries are all of one
    subscribed topic (a one-topic group's every member): its distinct partitions in the order
    Java's HashSet<Integer> (filled with add in the owned order) iterates them, the first
    `quota` kept, the rest revoked -> (kept, revoked, quota left). The topics' own order (the
    Map<Uuid, ...> of one key) is that key. Declines (NotImplemented) anything else: entries of
    two topics or of a topic not in `index`, a topic that is not a str or a partition that is
    not an int in 0..count-1, a bin that could treeify; the twin then runs. Why: the initial
    join of a large group calls it for nearly every member at every join (each new member
    lowers the quota), about 0.6 us per partition through the twin's lists and sets."""
    if type(entries) is not tuple or len(entries) == 0:
        return NotImplemented
    cdef Py_ssize_t n = len(entries)
    cdef Py_ssize_t e, k, j, c, p, d
    cdef object first = None
    cdef Py_ssize_t *order = NULL
    cdef unsigned int *spreads = NULL
    cdef int *parts = NULL
    cdef char *seen = NULL
    try:
        for e in range(n):
            tv = entries[e].topic
            if first is None:
                if type(tv) is not str:
                    return NotImplemented
                first = tv
            elif tv is not first and (type(tv) is not str or tv != first):
                return NotImplemented
        got = index.get(first)
        if got is None:
            return NotImplemented
        j = got
        c = counts[j]
        objs = objects[j]
        if c < 0 or len(objs) < c:
            return NotImplemented
        parts = <int *>malloc(n * sizeof(int))
        seen = <char *>malloc(c + 1)
        if parts == NULL or seen == NULL:
            raise MemoryError()
        memset(seen, 0, c + 1)
        d = 0  # distinct partitions, first occurrences in the owned order
        for e in range(n):
            pv = entries[e].partition
            if type(pv) is not int or not 0 <= pv < c:
                return NotImplemented
            p = pv
            if not seen[p]:
                seen[p] = 1
                parts[d] = <int>p
                d += 1
        # Java's iteration order of a HashMap the partitions were `put` in (owned order); the
        # spread of an int32 key p is p ^ (p >>> 16)
        spreads = <unsigned int *>malloc((d + 1) * sizeof(unsigned int))
        order = <Py_ssize_t *>malloc((d + 1) * sizeof(Py_ssize_t))
        if spreads == NULL or order == NULL:
            raise MemoryError()
        for k in range(d):
            spreads[k] = <unsigned int>(parts[k] ^ (parts[k] >> 16))
        if java_put_order(spreads, d, order, NULL) == 0:
            return NotImplemented  # a real tree bin: the twin declines too (None)
        keep = d if d < quota else (quota if quota > 0 else 0)
        kept = [objs[parts[order[k]]] for k in range(keep)]
        revoked = [objs[parts[order[k]]] for k in range(keep, d)]
        return kept, revoked, quota - keep
    finally:
        free(order)
        free(spreads)
        free(parts)
        free(seen)

