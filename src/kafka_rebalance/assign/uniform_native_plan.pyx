# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The uniform assignor's group plans on unboxed data: Cython, built by setup.py beside
uniform_native.pyx (the homogeneous builder) when it can.

- `member_order`: the members' HashMap iteration order, computed in C on every call; its twin is
  uniform._iteration_plan (kernels_hashmap.hashmap_positions over member_id_hashes);
- `heterogeneous_plan`: kernels_heterogeneous._build_plan's fields before the topic order.
The deal and balance that follow are uniform_native_balance.pyx's. What they cannot take they
decline (NotImplemented), and the twin runs. Nothing is kept between calls.
"""

from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF
from cpython.list cimport PyList_New, PyList_SET_ITEM
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memset

from kafka_rebalance.model import MemberSubscription

cdef extern from "Python.h":
    int PyLong_CheckExact(PyObject *o)
    int PyUnicode_CheckExact(PyObject *o)
    int PyTuple_CheckExact(PyObject *o)
    PyObject *PyTuple_GET_ITEM(PyObject *o, Py_ssize_t i)
    PyObject *PyList_GET_ITEM(PyObject *o, Py_ssize_t i)
    Py_hash_t PyObject_Hash(object o) except -1
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
    char *PyBytes_AS_STRING(object o)
    PyTypeObject *Py_TYPE(PyObject *o)


cdef extern from *:
    void __builtin_prefetch(const void *addr) nogil


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
    cdef Py_ssize_t i, k, cap
    cdef unsigned int h
    cdef PyObject *m
    cdef PyObject *mid
    try:
        if spreads == NULL:
            raise MemoryError()
        for i in range(n):
            # the members and their ids are usually cold: start their loads ahead
            if i + 8 < n:
                __builtin_prefetch(PyTuple_GET_ITEM(<PyObject *>group, i + 8))
            if i + 4 < n:
                m = PyTuple_GET_ITEM(<PyObject *>group, i + 4)
                if <PyObject *>Py_TYPE(m) == <PyObject *>MemberSubscription:
                    __builtin_prefetch(_slot(m, id_offset))
            m = PyTuple_GET_ITEM(<PyObject *>group, i)
            if <PyObject *>Py_TYPE(m) != <PyObject *>MemberSubscription:
                return 0
            mid = _slot(m, id_offset)
            if mid == NULL or not PyUnicode_CheckExact(mid) or PyUnicode_READY(mid) < 0:
                return 0
            h = _string_hash(mid)
            spreads[i] = h ^ (h >> 16)
        cap = java_put_order(spreads, n, at, position)
        if cap == 0:
            return 0  # a bin could treeify
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


cdef inline bint _same_id(tuple group, Py_ssize_t a, Py_ssize_t b, Py_ssize_t id_offset) except -1:
    cdef PyObject *x = _slot(PyTuple_GET_ITEM(<PyObject *>group, a), id_offset)
    cdef PyObject *y = _slot(PyTuple_GET_ITEM(<PyObject *>group, b), id_offset)
    return x == y or <object>x == <object>y


cdef Py_ssize_t java_put_order(
    unsigned int *spreads, Py_ssize_t n, Py_ssize_t *at, Py_ssize_t *position
) except -1:
    """kernels_hashmap.java_bin_order(spreads, head=False), the Cython kernels' one copy of Java's
    HashMap iteration rule (uniform_native_balance cimports it through uniform_native_plan.pxd):
    n keys, `HashMap.hash` values `spreads`, `put` in that order into a `new HashMap<>()`. Fills
    at[j] (the key iterated j-th) and, unless NULL, position[i] (where key i comes); returns the
    table's final capacity, or 0 when a bin would become a tree (the twin's None)."""
    cdef Py_ssize_t *bins = NULL
    cdef Py_ssize_t i, b, cap = 16, thr = 12, existing, start, size
    try:
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
        if position == NULL:
            for i in range(n):
                b = spreads[i] & (cap - 1)
                at[bins[b]] = i
                bins[b] += 1
        else:
            for i in range(n):
                b = spreads[i] & (cap - 1)
                at[bins[b]] = i
                position[i] = bins[b]
                bins[b] += 1
        return cap
    finally:
        free(bins)


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
    twin then runs, and raises where it raises). Names are found in a C table (hash, then text:
    parsed input has a str object per name) and every list is built at its final size."""
    if type(members) is not tuple:
        return NotImplemented
    cdef tuple group = <tuple>members
    cdef Py_ssize_t n = len(order), n_meta = len(meta)
    cdef Py_ssize_t i, e, j, k, size, n_topics, row, h, used = 0, cap = 64, mask = 63
    cdef PyObject *sub
    cdef PyObject *name
    cdef Py_hash_t hv
    cdef list topics = [], counts = [], cols, member_cols = PyList_New(0)
    cdef dict index = {}
    cdef Py_ssize_t sub_mask = 63, got
    while mask + 1 < 2 * n_meta + 2:  # at most half full: only names in the metadata go in
        mask = mask * 2 + 1
    while sub_mask + 1 < 2 * n + 2:  # the subscription tuples seen: at most n, half full
        sub_mask = sub_mask * 2 + 1
    # subscription tuple (by address) -> the first member (in order) that had it: a C table, where
    # a dict keyed by id() made a PyLong and probed a dict per member
    cdef PyObject **sub_keys = <PyObject **>malloc((sub_mask + 1) * sizeof(PyObject *))
    cdef Py_ssize_t *sub_first = <Py_ssize_t *>malloc((sub_mask + 1) * sizeof(Py_ssize_t))
    cdef int *slot = <int *>malloc((mask + 1) * sizeof(int))
    cdef Py_hash_t *hashes = <Py_hash_t *>malloc((mask + 1) * sizeof(Py_hash_t))
    cdef Py_ssize_t *stamp = <Py_ssize_t *>malloc((mask + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t *first = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))  # of its cells
    cdef Py_ssize_t *span = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))
    cdef int *flat = <int *>malloc(cap * sizeof(int))  # the distinct subscriptions' columns
    cdef Py_ssize_t *fill = NULL
    cdef char *cell = NULL
    try:
        if not (slot and hashes and stamp and first and span and flat and sub_keys and sub_first):
            raise MemoryError()
        memset(slot, 0xFF, (mask + 1) * sizeof(int))
        memset(sub_keys, 0, (sub_mask + 1) * sizeof(PyObject *))
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
            h = <Py_ssize_t>((((<size_t>sub) >> 4) * <size_t>11400714819323198485ULL) >> 24) & sub_mask
            while sub_keys[h] != NULL and sub_keys[h] != sub:
                h = (h + 1) & sub_mask
            if sub_keys[h] != NULL:  # the member (in order) that had this tuple first
                got = sub_first[h]
                member_cols.append(member_cols[got])
                first[i], span[i] = first[got], span[got]
                continue
            sub_keys[h] = sub
            sub_first[h] = i
            size = PyTuple_GET_SIZE(sub)
            if used + size > cap:
                cap = 2 * (used + size)
                flat = _grown(flat, cap)
            first[i] = used
            for e in range(size):
                name = PyTuple_GET_ITEM(sub, e)
                if not PyUnicode_CheckExact(name) or PyUnicode_READY(name) < 0:
                    return NotImplemented
                hv = PyObject_Hash(<object>name)
                h = <Py_ssize_t>(<size_t>hv & <size_t>mask)
                while slot[h] >= 0 and not (
                    hashes[h] == hv and _same_text(PyList_GET_ITEM(<PyObject *>topics, slot[h]), name)
                ):
                    h = (h + 1) & mask
                j = slot[h]
                if j < 0:
                    tm = meta.get(<object>name)
                    if tm is None:
                        continue  # not in the metadata: nothing of it to assign
                    j = len(topics)
                    if 2 * (j + 1) > mask + 1:
                        return NotImplemented  # more names than the metadata's length
                    slot[h], hashes[h], stamp[j] = <int>j, hv, -1
                    index[<object>name] = j
                    topics.append(<object>name)
                    counts.append(int(tm.partitions))
                if stamp[j] == i:
                    continue  # a topic named twice: keep its first place
                stamp[j] = i
                flat[used] = <int>j
                used += 1
            span[i] = used - first[i]
            cols = PyList_New(span[i])
            for e in range(span[i]):
                item = flat[first[i] + e]  # a small int: shared
                Py_INCREF(item)
                PyList_SET_ITEM(cols, e, item)
            member_cols.append(cols)
        n_topics = len(topics)
        base = []
        total = 0
        for j in range(n_topics):
            base.append(total)
            total += counts[j]
        # subscribed[i * n_topics + j]: 1 when member i subscribes to topic j (bytes, as the
        # twin's); subscribers[j]: its subscribers in order
        subscribed = PyBytes_FromStringAndSize(NULL, n * n_topics)
        cell = PyBytes_AS_STRING(subscribed)
        fill = <Py_ssize_t *>malloc((n_topics + 1) * sizeof(Py_ssize_t))
        if fill == NULL:
            raise MemoryError()
        memset(cell, 0, n * n_topics)
        memset(fill, 0, (n_topics + 1) * sizeof(Py_ssize_t))
        for i in range(n):
            for e in range(first[i], first[i] + span[i]):
                cell[i * n_topics + flat[e]] = 1
                fill[flat[e]] += 1
        subscribers = PyList_New(n_topics)
        for j in range(n_topics):
            item = PyList_New(fill[j])
            Py_INCREF(item)
            PyList_SET_ITEM(subscribers, j, item)
            fill[j] = 0
        for i in range(n):
            item = i  # its references (one a cell) counted once: not a chain on one refcount
            for e in range(first[i], first[i] + span[i]):
                PyList_SET_ITEM(<list>PyList_GET_ITEM(<PyObject *>subscribers, flat[e]), fill[flat[e]], item)
                fill[flat[e]] += 1
            (<PyObject *>item).ob_refcnt += span[i]
        return topics, counts, index, member_cols, base, total, subscribers, subscribed
    finally:
        free(slot)
        free(hashes)
        free(stamp)
        free(first)
        free(span)
        free(flat)
        free(fill)
        free(sub_keys)
        free(sub_first)


cdef int *_grown(int *old, Py_ssize_t cap) except NULL:
    cdef int *out = <int *>realloc(old, cap * sizeof(int))
    if out == NULL:  # `old` stays valid and the caller's finally frees it (review 5 F6)
        raise MemoryError()
    return out


cdef inline bint _same_text(PyObject *a, PyObject *b) noexcept:
    """Two exact, ready str with the same text (CPython keeps one representation per text)."""
    cdef Py_ssize_t length = PyUnicode_GET_LENGTH(a)
    cdef int kind = PyUnicode_KIND(a)
    return a == b or (
        length == PyUnicode_GET_LENGTH(b)
        and kind == PyUnicode_KIND(b)
        and memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), length * kind) == 0
    )
