# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The uniform assignor's group plans on unboxed data: Cython, built by setup.py beside
uniform_native.pyx (the homogeneous builder) when it can.

- `member_order`: the members' HashMap iteration order, computed in C on every call; its twin is
  uniform._iteration_plan (kernels_hashmap.hashmap_positions over member_id_hashes);
- `heterogeneous_plan`: kernels_heterogeneous._build_plan's fields before the topic order;
- `deal_and_balance`: kernels_heterogeneous._deal_and_balance with no leftovers (no partition kept
  by two members): assignRemainingPartitions and the balance pass with owners and sizes as C int
  arrays and Kafka's MemberAssignmentBalancer on C arrays.
What they cannot take they decline (NotImplemented, False), and the twin runs. Nothing is kept
between calls.
"""

from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF
from cpython.list cimport PyList_New, PyList_SET_ITEM
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memset

from kafka_rebalance.model import MemberSubscription

cdef extern from "Python.h":
    int PyLong_CheckExact(PyObject *o)
    int PyUnicode_CheckExact(PyObject *o)
    int PyTuple_CheckExact(PyObject *o)
    PyObject *PyTuple_GET_ITEM(PyObject *o, Py_ssize_t i)
    Py_ssize_t PyTuple_GET_SIZE(PyObject *o)
    PyObject *PyDict_GetItemWithError(object d, object key) except? NULL
    long PyLong_AsLong_raw "PyLong_AsLong"(PyObject *o) except? -1
    Py_ssize_t PyUnicode_GET_LENGTH(PyObject *o)
    int PyUnicode_KIND(PyObject *o)
    void *PyUnicode_DATA(PyObject *o)
    int PyUnicode_READY(PyObject *o)
    int PyUnicode_1BYTE_KIND
    int PyUnicode_2BYTE_KIND
    object PyBytes_FromStringAndSize(const char *v, Py_ssize_t size)
    PyTypeObject *Py_TYPE(PyObject *o)


cdef inline PyObject *_slot(PyObject *obj, Py_ssize_t offset) noexcept nogil:
    return (<PyObject **>((<char *>obj) + offset))[0]


def member_order(members, Py_ssize_t id_offset):
    """The members' HashMap iteration order, as uniform._iteration_plan gives it but computed in
    C on every call (Java's String.hashCode of each id, the table's final capacity, a stable
    counting sort by bin): (ids, order, position) lists; NotImplemented when a member is not
    exactly a MemberSubscription, an id not an exact str, ids repeat, or a bin could treeify (the
    caller's path handles those). `id_offset`: uniform_native.ID_OFFSET (the member_id slot)."""
    packed = member_order_packed(members, id_offset)
    if packed is NotImplemented:
        return packed
    cdef tuple group = <tuple>members
    cdef Py_ssize_t n = len(group), i
    cdef Py_ssize_t *at = <Py_ssize_t *>(<char *>(<bytes>packed))
    ids = [<object>_slot(PyTuple_GET_ITEM(<PyObject *>group, i), id_offset) for i in range(n)]
    return ids, [at[i] for i in range(n)], [at[n + i] for i in range(n)]


def member_order_packed(members, Py_ssize_t id_offset):
    """member_order's order and positions as one bytes object (2n C Py_ssize_t: the spec
    positions in iteration order, then each spec member's iteration position), for
    uniform_native.uniform_assign; NotImplemented as member_order."""
    if type(members) is not tuple or len(<tuple>members) == 0:
        return NotImplemented
    if id_offset < <Py_ssize_t>sizeof(PyObject) or id_offset + <Py_ssize_t>sizeof(PyObject *) > (
        <PyTypeObject *>MemberSubscription
    ).tp_basicsize:
        return NotImplemented  # not a slot of MemberSubscription
    cdef tuple group = <tuple>members
    cdef Py_ssize_t n = len(group)
    packed = PyBytes_FromStringAndSize(NULL, 2 * n * <Py_ssize_t>sizeof(Py_ssize_t))
    cdef Py_ssize_t *at = <Py_ssize_t *>(<char *>(<bytes>packed))
    if not _member_order(group, n, at, at + n, id_offset):
        return NotImplemented
    return packed


cdef inline unsigned int _string_hash(PyObject *s) except? 0:
    """Java's String.hashCode over the UTF-16 code units of an exact, ready str."""
    cdef unsigned int h = 0
    cdef Py_ssize_t i, length = PyUnicode_GET_LENGTH(s)
    cdef int kind = PyUnicode_KIND(s)
    cdef void *data = PyUnicode_DATA(s)
    cdef unsigned int c  # a code point as a plain C int (Cython's Py_UCS4 would coerce to str)
    if kind == PyUnicode_1BYTE_KIND:
        for i in range(length):
            h = 31 * h + (<unsigned char *>data)[i]
    elif kind == PyUnicode_2BYTE_KIND:
        for i in range(length):
            h = 31 * h + (<unsigned short *>data)[i]
    else:
        for i in range(length):
            c = (<unsigned int *>data)[i]
            if c >= 0x10000:
                c -= 0x10000
                h = 31 * h + (0xD800 + (c >> 10))
                h = 31 * h + (0xDC00 + (c & 0x3FF))
            else:
                h = 31 * h + c
    return h


cdef int _member_order(
    tuple group, Py_ssize_t n, Py_ssize_t *at, Py_ssize_t *position, Py_ssize_t id_offset
) except -1:
    """at[i]: the spec position of the i-th member a `new HashMap<>()` filled with `put` in spec
    order iterates; position[k]: where spec member k comes. 0 (decline) when an id is not an exact
    str, ids repeat, or a bin could treeify (kernels_hashmap.java_bin_order's None)."""
    cdef unsigned int *spreads = <unsigned int *>malloc((n + 1) * sizeof(unsigned int))
    cdef Py_ssize_t *bins = NULL
    cdef Py_ssize_t i, k, b, cap = 16, thr = 12, existing, start, size
    cdef unsigned int h
    cdef PyObject *m
    cdef PyObject *mid
    try:
        if spreads == NULL:
            raise MemoryError()
        for i in range(n):
            m = PyTuple_GET_ITEM(<PyObject *>group, i)
            if <PyObject *>Py_TYPE(m) != <PyObject *>MemberSubscription:
                return 0
            mid = _slot(m, id_offset)
            if mid == NULL or not PyUnicode_CheckExact(mid) or PyUnicode_READY(mid) < 0:
                return 0
            h = _string_hash(mid)
            spreads[i] = h ^ (h >> 16)
        # the table's capacity as Java's put grows it: doubled past 0.75 full, and when a bin
        # reaches the treeify threshold under 64 slots (treeifyBin resizes); a tree bin: decline
        bins = _bin_counts(spreads, 0, cap, NULL)
        for i in range(n):
            b = spreads[i] & (cap - 1)
            existing = bins[b]
            bins[b] = existing + 1
            if existing >= 8:
                if cap >= 64:
                    return 0
                cap <<= 1
                thr <<= 1
                bins = _bin_counts(spreads, i + 1, cap, bins)
            if i + 1 > thr:
                cap <<= 1
                thr <<= 1
                bins = _bin_counts(spreads, i + 1, cap, bins)
        # iteration order: by bin at the final capacity, then insertion order (a stable count sort)
        bins = _bin_counts(spreads, n, cap, bins)
        start = 0
        for b in range(cap):
            size = bins[b]
            bins[b] = start
            start += size
        for i in range(n):
            b = spreads[i] & (cap - 1)
            at[bins[b]] = i
            position[i] = bins[b]
            bins[b] += 1
        # repeated ids (equal hashes: neighbours within a bin) decline, as len(set(ids)) != n
        for i in range(n):
            k = i + 1
            while k < n and (spreads[at[k]] & (cap - 1)) == (spreads[at[i]] & (cap - 1)):
                if spreads[at[k]] == spreads[at[i]]:
                    if _same_id(group, at[i], at[k], id_offset):
                        return 0
                k += 1
        return 1
    finally:
        free(spreads)
        free(bins)


cdef inline bint _same_id(tuple group, Py_ssize_t a, Py_ssize_t b, Py_ssize_t id_offset) except -1:
    cdef PyObject *x = _slot(PyTuple_GET_ITEM(<PyObject *>group, a), id_offset)
    cdef PyObject *y = _slot(PyTuple_GET_ITEM(<PyObject *>group, b), id_offset)
    return x == y or <object>x == <object>y


cdef Py_ssize_t *_bin_counts(
    unsigned int *spreads, Py_ssize_t present, Py_ssize_t cap, Py_ssize_t *old
) except NULL:
    """Keys per bin of a `cap`-slot table holding the first `present` keys (`old` is freed)."""
    free(old)
    cdef Py_ssize_t *bins = <Py_ssize_t *>malloc(cap * sizeof(Py_ssize_t))
    if bins == NULL:
        raise MemoryError()
    memset(bins, 0, cap * sizeof(Py_ssize_t))
    cdef Py_ssize_t i
    for i in range(present):
        bins[spreads[i] & (cap - 1)] += 1
    return bins


def heterogeneous_plan(members, list order, meta):
    """kernels_heterogeneous._build_plan's fields before the topic order, from the members'
    subscriptions in iteration order (`members[order[i]]`) and the metadata: (topics, counts,
    index, member_cols, base, total, subscribers, subscribed), equal to what its twin builds
    (members sharing a subscription tuple share one column list); NotImplemented when a member is
    not exactly a MemberSubscription, a subscription not a tuple or a name not an exact str (the
    twin then runs, and raises where it raises)."""
    if type(members) is not tuple:
        return NotImplemented
    cdef tuple group = <tuple>members
    cdef Py_ssize_t n = len(order)
    cdef Py_ssize_t i, e, j, k, size, n_topics, row
    cdef PyObject *sub
    cdef PyObject *name
    cdef PyObject *found
    cdef list topics = []
    cdef list counts = []
    cdef dict index = {}
    cdef dict cols_of = {}
    cdef list member_cols = PyList_New(0)
    cdef list cols
    cdef Py_ssize_t *stamp = NULL
    cdef Py_ssize_t stamp_size = 0
    cdef Py_ssize_t *new_stamp
    try:
        for i in range(n):
            k = order[i]
            if k < 0 or k >= len(group):
                return NotImplemented
            member = <object>PyTuple_GET_ITEM(<PyObject *>group, k)
            if type(member) is not MemberSubscription:
                return NotImplemented
            topics_of = member.topics  # a hundred members: a plain attribute read will do
            sub = <PyObject *>topics_of
            if not PyTuple_CheckExact(sub):
                return NotImplemented
            key = <Py_ssize_t>sub
            got = cols_of.get(key)
            if got is not None:
                member_cols.append(got)
                continue
            cols = []
            size = PyTuple_GET_SIZE(sub)
            for e in range(size):
                name = PyTuple_GET_ITEM(sub, e)
                if not PyUnicode_CheckExact(name):
                    return NotImplemented
                found = PyDict_GetItemWithError(index, <object>name)
                if found == NULL:
                    tm = meta.get(<object>name)
                    if tm is None:
                        continue  # not in the metadata: nothing of it to assign
                    j = len(topics)
                    index[<object>name] = j
                    topics.append(<object>name)
                    counts.append(int(tm.partitions))
                    if j >= stamp_size:
                        stamp_size = 2 * stamp_size + 16
                        new_stamp = <Py_ssize_t *>realloc(stamp, stamp_size * sizeof(Py_ssize_t))
                        if new_stamp == NULL:
                            raise MemoryError()
                        stamp = new_stamp
                    stamp[j] = -1
                else:
                    j = PyLong_AsLong_raw(found)
                if stamp[j] == i:
                    continue  # a topic named twice: keep its first place
                stamp[j] = i
                cols.append(j)
            cols_of[key] = cols
            member_cols.append(cols)
        n_topics = len(topics)
        base = []
        total = 0
        for j in range(n_topics):
            base.append(total)
            total += counts[j]
        subscribers = [[] for _ in range(n_topics)]
        # subscribed[i * n_topics + j]: member i subscribes to topic j
        subscribed = PyList_New(n * n_topics)
        for e in range(n * n_topics):
            Py_INCREF(False)
            PyList_SET_ITEM(subscribed, e, False)
        for i in range(n):
            row = i * n_topics
            for jj in <list>member_cols[i]:
                j = jj
                (<list>subscribers[j]).append(i)
                subscribed[row + j] = True
        return topics, counts, index, member_cols, base, total, subscribers, subscribed
    finally:
        free(stamp)


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
