# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The uniform assignor's homogeneous builder on unboxed data: Cython, built by setup.py when it can.

Its Python twin, and the reference, is `kernels.uniform_homogeneous` (same arguments, same result),
itself checked against the numpy path (`uniform_homogeneous.build_homogeneous`). Why a second
kernel: the mypyc one spends 30-50 ns per owned partition on generic object handling (a subclass
check on each TopicPartition, list reads through calls, boxed ints in the holder array); this one
reads each partition's fields from the object's own slots, keeps the holders in a C int array,
finds a topic by its str object's address in a table built for the call, and builds the result
lists from the input's own TopicPartition objects.

It takes only the usual shapes: members exactly `model.MemberSubscription`, owned partitions
exactly `model.TopicPartition` with an exact str topic and an exact int partition, `objects[j]`
tuples or lists. Anything else (or the layout probe below failing) declines: `NotImplemented`,
and the caller runs the mypyc kernel, which handles every input. Nothing is kept between calls.
"""

from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF
from cpython.list cimport PyList_New, PyList_SET_ITEM
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memcmp, memset

from kafka_rebalance.model import MemberSubscription, TopicPartition

cdef extern from "Python.h":
    int PyLong_CheckExact(PyObject *o)
    int PyUnicode_CheckExact(PyObject *o)
    int PyTuple_CheckExact(PyObject *o)
    int PyList_CheckExact(PyObject *o)
    Py_ssize_t PyList_GET_SIZE(PyObject *o)
    PyObject *PyList_GET_ITEM(PyObject *o, Py_ssize_t i)
    PyObject *PyTuple_GET_ITEM(PyObject *o, Py_ssize_t i)
    Py_ssize_t PyTuple_GET_SIZE(PyObject *o)
    PyTypeObject *Py_TYPE(PyObject *o)
    Py_ssize_t PyUnicode_GET_LENGTH(PyObject *o)
    int PyUnicode_KIND(PyObject *o)
    void *PyUnicode_DATA(PyObject *o)
    int PyUnicode_READY(PyObject *o)
    int PyUnicode_1BYTE_KIND
    int PyUnicode_2BYTE_KIND
    dict _PyDict_NewPresized(Py_ssize_t minused)
    int PyDict_SetItem(object d, object key, object value) except -1
    Py_hash_t PyObject_Hash(object o) except -1
    PyObject *PyDict_GetItemWithError(object d, object key) except? NULL
    long PyLong_AsLong_raw "PyLong_AsLong"(PyObject *o) except? -1
    long PyLong_AsLongAndOverflow(PyObject *o, int *overflow) except? -1


cdef extern from *:
    void __builtin_prefetch(const void *addr) nogil


cdef inline PyObject *_slot(PyObject *obj, Py_ssize_t offset) noexcept nogil:
    return (<PyObject **>((<char *>obj) + offset))[0]


def _slot_offset(obj, value):
    """Where in `obj`'s memory its slot holding `value` is (bytes from the start), or -1."""
    cdef PyObject *base = <PyObject *>obj
    cdef Py_ssize_t size = Py_TYPE(base).tp_basicsize
    cdef Py_ssize_t off = sizeof(PyObject)
    while off + <Py_ssize_t>sizeof(PyObject *) <= size:
        if _slot(base, off) == <PyObject *>value:
            return off
        off += sizeof(PyObject *)
    return -1


cdef Py_ssize_t TP_TOPIC = -1
cdef Py_ssize_t TP_PARTITION = -1
cdef Py_ssize_t M_ID = -1
cdef Py_ssize_t M_TOPICS = -1
cdef Py_ssize_t M_OWNED = -1
cdef PyTypeObject *TP_TYPE = NULL
cdef PyTypeObject *M_TYPE = NULL


def _probe():
    """The slot offsets of TopicPartition.topic/partition and MemberSubscription.topics/owned,
    found by building objects with unique values and finding those values in their memory, then
    checked on a second pair. Layout-independent: mypyc's build or the plain slotted classes."""
    global TP_TOPIC, TP_PARTITION, M_ID, M_TOPICS, M_OWNED, TP_TYPE, M_TYPE
    a, b = object(), object()
    tp = TopicPartition(a, b)
    t_off, p_off = _slot_offset(tp, a), _slot_offset(tp, b)
    topics, owned = (a,), (b,)
    m = MemberSubscription(a, topics, owned)
    mi_off, mt_off, mo_off = _slot_offset(m, a), _slot_offset(m, topics), _slot_offset(m, owned)
    if min(t_off, p_off, mi_off, mt_off, mo_off) < 0:
        return False
    tp2 = TopicPartition("x", 7)
    m2 = MemberSubscription("y", ("x",), (tp2,))
    if (
        _slot(<PyObject *>tp2, t_off) != <PyObject *>tp2.topic
        or _slot(<PyObject *>tp2, p_off) != <PyObject *>tp2.partition
        or _slot(<PyObject *>m2, mi_off) != <PyObject *>m2.member_id
        or _slot(<PyObject *>m2, mt_off) != <PyObject *>m2.topics
        or _slot(<PyObject *>m2, mo_off) != <PyObject *>m2.owned
    ):
        return False
    TP_TOPIC, TP_PARTITION, M_ID, M_TOPICS, M_OWNED = t_off, p_off, mi_off, mt_off, mo_off
    TP_TYPE = <PyTypeObject *>TopicPartition
    M_TYPE = <PyTypeObject *>MemberSubscription
    return True


READY = _probe()


def is_ready():
    """The layout probe succeeded: the kernel reads the model's slots (else it always declines)."""
    return READY


cdef struct TopicTable:
    # open addressing on a topic name (its str hash, then address or text) -> its topic index
    # (-1: not subscribed); one slot per distinct name, not per str object (owned partitions
    # parsed from text carry a str object each); at most half full (doubled past that)
    PyObject **keys
    Py_hash_t *hashes
    int *values
    Py_ssize_t mask
    Py_ssize_t used


def uniform_homogeneous(members, order, list topics, list counts, list objects, slow_member):
    """`kernels.uniform_homogeneous` on unboxed data: (targets, complete) or None (heterogeneous)
    as that; NotImplemented when an input is not of the usual shape (the caller runs the twin)."""
    if not READY or type(members) is not tuple or type(order) is not list:
        return NotImplemented
    cdef tuple group = <tuple>members
    cdef list at_list = <list>order
    cdef Py_ssize_t n = len(group)
    if n == 0 or len(at_list) != n:
        return NotImplemented
    cdef Py_ssize_t i, k
    cdef PyObject *o
    cdef Py_ssize_t *at = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))
    if at == NULL:
        raise MemoryError()
    try:
        for i in range(n):
            o = PyList_GET_ITEM(<PyObject *>at_list, i)
            if not PyLong_CheckExact(o):
                return NotImplemented
            k = PyLong_AsLong_raw(o)
            if k < 0 or k >= n:
                return NotImplemented
            at[i] = k
        return _homogeneous(group, at, n, topics, counts, objects, slow_member)
    finally:
        free(at)


def member_order(members):
    """The members' HashMap iteration order, as uniform._iteration_plan gives it but computed in
    C on every call (Java's String.hashCode of each id, the table's final capacity, a stable
    counting sort by bin): (ids, order, position) lists; NotImplemented when an id is not an
    exact str, ids repeat, or a bin could treeify (the caller's path handles those)."""
    if not READY or type(members) is not tuple or len(<tuple>members) == 0:
        return NotImplemented
    cdef tuple group = <tuple>members
    cdef Py_ssize_t n = len(group)
    cdef Py_ssize_t i
    cdef Py_ssize_t *at = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t *position = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))
    try:
        if at == NULL or position == NULL:
            raise MemoryError()
        if not _member_order(group, n, at, position):
            return NotImplemented
        ids = [<object>_slot(PyTuple_GET_ITEM(<PyObject *>group, i), M_ID) for i in range(n)]
        return ids, [at[i] for i in range(n)], [position[i] for i in range(n)]
    finally:
        free(at)
        free(position)


def uniform_assign(members, list topics, list counts, list objects, slow_member):
    """The homogeneous builder from the spec's members to the result: the members' HashMap order
    (as member_order), `uniform_homogeneous` on it, and the result dict in the spec's member
    order -> (result, complete); None when the group is heterogeneous; NotImplemented as the
    two above (the caller's path then runs)."""
    if not READY or type(members) is not tuple or len(<tuple>members) == 0:
        return NotImplemented
    cdef tuple group = <tuple>members
    cdef Py_ssize_t n = len(group)
    cdef Py_ssize_t k
    cdef Py_ssize_t *at = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t *position = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))
    cdef PyObject *m
    try:
        if at == NULL or position == NULL:
            raise MemoryError()
        if not _member_order(group, n, at, position):
            return NotImplemented
        done = _homogeneous(group, at, n, topics, counts, objects, slow_member)
        if done is None or done is NotImplemented:
            return done
        targets, complete = done
        result = _PyDict_NewPresized(n)
        for k in range(n):
            m = PyTuple_GET_ITEM(<PyObject *>group, k)
            PyDict_SetItem(result, <object>_slot(m, M_ID), targets[position[k]])
        return result, complete
    finally:
        free(at)
        free(position)


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


cdef int _member_order(tuple group, Py_ssize_t n, Py_ssize_t *at, Py_ssize_t *position) except -1:
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
            if Py_TYPE(m) != M_TYPE:
                return 0
            mid = _slot(m, M_ID)
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
                    if _same_id(group, at[i], at[k]):
                        return 0
                k += 1
        return 1
    finally:
        free(spreads)
        free(bins)


cdef inline bint _same_id(tuple group, Py_ssize_t a, Py_ssize_t b) except -1:
    cdef PyObject *x = _slot(PyTuple_GET_ITEM(<PyObject *>group, a), M_ID)
    cdef PyObject *y = _slot(PyTuple_GET_ITEM(<PyObject *>group, b), M_ID)
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


cdef object _homogeneous(
    tuple group, Py_ssize_t *at, Py_ssize_t n, list topics, list counts, list objects, slow_member
):
    """The twin's setup (topic bases, the holder array, the topic table), then _build."""
    cdef Py_ssize_t n_topics = len(topics)
    if len(counts) != n_topics or len(objects) != n_topics:
        return NotImplemented
    cdef Py_ssize_t j, c
    cdef PyObject *o
    for j in range(n_topics):
        o = PyList_GET_ITEM(<PyObject *>objects, j)
        if not (PyTuple_CheckExact(o) or PyList_CheckExact(o)):
            return NotImplemented
        if not PyLong_CheckExact(PyList_GET_ITEM(<PyObject *>counts, j)):
            return NotImplemented
    cdef int *owner = NULL
    cdef Py_ssize_t *count_of = NULL
    cdef Py_ssize_t *base_of = NULL
    cdef Py_ssize_t *remaining = NULL
    cdef TopicTable table
    table.keys = NULL
    table.hashes = NULL
    table.values = NULL
    table.used = 0
    cdef Py_ssize_t total = 0
    try:
        count_of = <Py_ssize_t *>malloc((n_topics + 1) * sizeof(Py_ssize_t))
        base_of = <Py_ssize_t *>malloc((n_topics + 1) * sizeof(Py_ssize_t))
        remaining = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))
        if count_of == NULL or base_of == NULL or remaining == NULL:
            raise MemoryError()
        index = {}
        for j in range(n_topics):
            index[topics[j]] = j
            c = PyLong_AsLong_raw(PyList_GET_ITEM(<PyObject *>counts, j))
            count_of[j] = c
            base_of[j] = total
            total += c
            o = PyList_GET_ITEM(<PyObject *>objects, j)
            if c < 0 or len(<object>o) < c:
                return NotImplemented
        # the table: 4x the subscribed topics (at least 64), by address
        table.mask = 63
        while table.mask + 1 < 4 * n_topics:
            table.mask = table.mask * 2 + 1
        table.keys = <PyObject **>malloc((table.mask + 1) * sizeof(PyObject *))
        table.hashes = <Py_hash_t *>malloc((table.mask + 1) * sizeof(Py_hash_t))
        table.values = <int *>malloc((table.mask + 1) * sizeof(int))
        owner = <int *>malloc((total + 1) * sizeof(int))
        if table.keys == NULL or table.hashes == NULL or table.values == NULL or owner == NULL:
            raise MemoryError()
        memset(table.keys, 0, (table.mask + 1) * sizeof(PyObject *))
        memset(owner, 0xFF, (total + 1) * sizeof(int))  # -1: nobody
        return _build(
            group, at, n, topics, count_of, base_of, objects, n_topics, total, index, &table,
            owner, remaining, slow_member,
        )
    finally:
        free(count_of)
        free(base_of)
        free(remaining)
        free(owner)
        free(table.keys)
        free(table.hashes)
        free(table.values)


cdef inline bint _same_text(PyObject *a, PyObject *b) noexcept:
    """Two exact, ready str with the same text (CPython keeps one representation per text)."""
    cdef Py_ssize_t length = PyUnicode_GET_LENGTH(a)
    cdef int kind = PyUnicode_KIND(a)
    return (
        length == PyUnicode_GET_LENGTH(b)
        and kind == PyUnicode_KIND(b)
        and memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), length * kind) == 0
    )


cdef inline int _topic_index(PyObject *tv, Py_hash_t hv, dict index, TopicTable *table) except -2:
    """The subscribed index of topic `tv` (an exact, ready str; `hv` its hash), -1 when not
    subscribed."""
    cdef Py_ssize_t h = <Py_ssize_t>(<size_t>hv & <size_t>table.mask)
    cdef PyObject *key
    while True:
        key = table.keys[h]
        if key == NULL:
            break
        if key == tv or (table.hashes[h] == hv and _same_text(key, tv)):
            return table.values[h]
        h = (h + 1) & table.mask
    found = PyDict_GetItemWithError(index, <object>tv)
    cdef int j = -1 if found == NULL else <int>PyLong_AsLong_raw(found)
    if 2 * (table.used + 1) > table.mask + 1:  # many names not subscribed: a bigger table
        _grow(table)
        h = <Py_ssize_t>(<size_t>hv & <size_t>table.mask)
        while table.keys[h] != NULL:
            h = (h + 1) & table.mask
    table.keys[h] = tv  # borrowed: the TopicPartition holding it outlives the call
    table.hashes[h] = hv
    table.values[h] = j
    table.used += 1
    return j


cdef int _grow(TopicTable *table) except -1:
    """Double the table, its entries re-placed."""
    cdef Py_ssize_t old_size = table.mask + 1, i, h
    cdef PyObject **old_keys = table.keys
    cdef Py_hash_t *old_hashes = table.hashes
    cdef int *old_values = table.values
    cdef Py_ssize_t mask = old_size * 2 - 1
    cdef PyObject **keys = <PyObject **>malloc((mask + 1) * sizeof(PyObject *))
    cdef Py_hash_t *hashes = <Py_hash_t *>malloc((mask + 1) * sizeof(Py_hash_t))
    cdef int *values = <int *>malloc((mask + 1) * sizeof(int))
    if keys == NULL or hashes == NULL or values == NULL:
        free(keys)
        free(hashes)
        free(values)
        raise MemoryError()
    memset(keys, 0, (mask + 1) * sizeof(PyObject *))
    for i in range(old_size):
        if old_keys[i] != NULL:
            h = <Py_ssize_t>(<size_t>old_hashes[i] & <size_t>mask)
            while keys[h] != NULL:
                h = (h + 1) & mask
            keys[h] = old_keys[i]
            hashes[h] = old_hashes[i]
            values[h] = old_values[i]
    table.keys, table.hashes, table.values, table.mask = keys, hashes, values, mask
    free(old_keys)
    free(old_hashes)
    free(old_values)
    return 0


cdef inline void _prefetch_owned(PyObject *m) noexcept:
    cdef PyObject *owned
    if Py_TYPE(m) == M_TYPE:
        owned = _slot(m, M_OWNED)
        if owned != NULL:
            __builtin_prefetch(owned)
            __builtin_prefetch((<char *>owned) + 64)


cdef inline void _prefetch_partitions(PyObject *m, bint topics) noexcept:
    """The member's first 16 partition objects (topics=False), or their topic str objects (a
    step later: the partitions are in cache by then; parsed input has a str object each)."""
    cdef PyObject *owned
    cdef PyObject *tp
    cdef Py_ssize_t e, size
    if Py_TYPE(m) == M_TYPE:
        owned = _slot(m, M_OWNED)
        if owned != NULL and PyTuple_CheckExact(owned):
            size = PyTuple_GET_SIZE(owned)
            for e in range(size if size < 16 else 16):
                tp = PyTuple_GET_ITEM(owned, e)
                if not topics:
                    __builtin_prefetch(tp)
                elif Py_TYPE(tp) == TP_TYPE and _slot(tp, TP_TOPIC) != NULL:
                    __builtin_prefetch(_slot(tp, TP_TOPIC))


cdef object _build(
    tuple group, Py_ssize_t *at, Py_ssize_t n, list topics, Py_ssize_t *count_of,
    Py_ssize_t *base_of, list objects, Py_ssize_t n_topics, Py_ssize_t total, dict index,
    TopicTable *table, int *owner, Py_ssize_t *remaining, slow_member,
):
    cdef PyObject *m
    cdef PyObject *sub
    cdef PyObject *first = NULL
    cdef PyObject *owned
    cdef PyObject *tp
    cdef PyObject *tv
    cdef PyObject *pv
    cdef PyObject *last_topic = NULL
    cdef PyObject *item
    cdef Py_ssize_t i, e, k, j, c_j, b_j, f, p, held, quota, n_entries, pos, end, n_all, q
    cdef Py_ssize_t min_quota = total // n
    cdef Py_ssize_t extra = total - min_quota * n
    cdef Py_ssize_t taken = 0
    cdef Py_hash_t hv, last_hash = -1
    j = -1  # the topic of the entry before (last_topic), across members
    c_j = 0
    b_j = 0
    cdef bint odd, gap
    cdef int me, was, overflow
    cdef object first_set = None
    cdef list targets = PyList_New(0)
    cdef list revoked = []
    cdef list result
    cdef char *keep = NULL
    cdef Py_ssize_t keep_size = 0
    cdef PyObject **queue = NULL
    cdef PyObject *objs
    cdef bint is_tuple
    m = PyTuple_GET_ITEM(<PyObject *>group, 0)
    if Py_TYPE(m) != M_TYPE:
        return NotImplemented
    first = _slot(m, M_TOPICS)
    if first == NULL:
        return NotImplemented
    try:
        for i in range(n):
            # the caches are usually cold (members and partitions read once): start the loads
            # ahead, one level of the member -> owned tuple -> partitions chain per step
            if i + 4 < n:
                __builtin_prefetch(PyTuple_GET_ITEM(<PyObject *>group, at[i + 4]))
            if i + 3 < n:
                _prefetch_owned(PyTuple_GET_ITEM(<PyObject *>group, at[i + 3]))
            if i + 2 < n:
                _prefetch_partitions(PyTuple_GET_ITEM(<PyObject *>group, at[i + 2]), False)
            if i + 1 < n:
                _prefetch_partitions(PyTuple_GET_ITEM(<PyObject *>group, at[i + 1]), True)
            m = PyTuple_GET_ITEM(<PyObject *>group, at[i])
            if Py_TYPE(m) != M_TYPE:
                return NotImplemented
            sub = _slot(m, M_TOPICS)
            owned = _slot(m, M_OWNED)
            if sub == NULL or owned == NULL or not PyTuple_CheckExact(owned):
                return NotImplemented
            if sub != first and <object>sub != <object>first:  # another subscription
                if first_set is None:
                    first_set = set(<object>first)
                if set(<object>sub) != first_set:
                    return None
            quota = min_quota + 1 if i < extra else min_quota
            n_entries = PyTuple_GET_SIZE(owned)
            if n_entries == 0:
                targets.append(None)  # filled by the deal, or [] at the end
                remaining[i] = quota
                continue
            if n_entries > keep_size:
                free(keep)
                keep_size = n_entries if n_entries > 64 else 64
                keep = <char *>malloc(keep_size)
                if keep == NULL:
                    raise MemoryError()
            held = 0
            odd = False
            gap = False
            me = <int>i
            for e in range(n_entries):
                tp = PyTuple_GET_ITEM(owned, e)
                if Py_TYPE(tp) != TP_TYPE:
                    return NotImplemented
                tv = _slot(tp, TP_TOPIC)
                pv = _slot(tp, TP_PARTITION)
                if tv == NULL or pv == NULL or not PyLong_CheckExact(pv):
                    return NotImplemented
                if tv == last_topic:
                    pass  # the same topic object as the entry before (j, c_j, b_j are its)
                elif not PyUnicode_CheckExact(tv) or PyUnicode_READY(tv) < 0:
                    return NotImplemented
                else:
                    hv = PyObject_Hash(<object>tv)  # cached in the str after its first use
                    if hv == last_hash and last_topic != NULL and _same_text(tv, last_topic):
                        last_topic = tv  # the same name in another str object (parsed input)
                    else:
                        j = _topic_index(tv, hv, index, table)
                        last_topic = tv
                        last_hash = hv
                        if j >= 0:
                            c_j = count_of[j]
                            b_j = base_of[j]
                keep[e] = 0
                if j >= 0:
                    p = PyLong_AsLongAndOverflow(pv, &overflow)
                    if overflow != 0 or p < 0 or p >= c_j:
                        odd = True
                    else:
                        f = b_j + p
                        was = owner[f]
                        if was != me:
                            if was < 0:
                                taken += 1
                            owner[f] = me
                            held += 1
                            keep[e] = 1
                            continue
                gap = True
            if held > quota or odd:
                kept2, gone, left = slow_member(<object>owned, quota)
                targets.append(kept2)
                revoked.extend(gone)
                remaining[i] = left
            elif not gap:
                result = PyList_New(n_entries)
                for e in range(n_entries):
                    item = PyTuple_GET_ITEM(owned, e)
                    Py_INCREF(<object>item)
                    PyList_SET_ITEM(result, e, <object>item)
                targets.append(result)
                remaining[i] = quota - held
            else:
                result = PyList_New(held)
                k = 0
                for e in range(n_entries):
                    if keep[e]:
                        item = PyTuple_GET_ITEM(owned, e)
                        Py_INCREF(<object>item)
                        PyList_SET_ITEM(result, k, <object>item)
                        k += 1
                targets.append(result)
                remaining[i] = quota - held
        # the queue: the partitions nobody holds (topics in order), then the revoked ones
        n_all = total - taken + len(revoked)
        queue = <PyObject **>malloc((n_all + 1) * sizeof(PyObject *))
        if queue == NULL:
            raise MemoryError()
        k = 0
        if taken < total:
            for j in range(n_topics):
                objs = PyList_GET_ITEM(<PyObject *>objects, j)
                c_j = count_of[j]
                b_j = base_of[j]
                is_tuple = PyTuple_CheckExact(objs)
                for p in range(c_j):
                    if owner[b_j + p] < 0:
                        if is_tuple:
                            queue[k] = PyTuple_GET_ITEM(objs, p)
                        else:
                            queue[k] = PyList_GET_ITEM(objs, p)
                        k += 1
        for p in range(len(revoked)):
            queue[k] = PyList_GET_ITEM(<PyObject *>revoked, p)
            k += 1
        n_all = k
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
            if target is None:
                result = PyList_New(end - pos)
                for e in range(pos, end):
                    item = queue[e]
                    Py_INCREF(<object>item)
                    PyList_SET_ITEM(result, e - pos, <object>item)
                targets[i] = result
            else:
                for e in range(pos, end):
                    target.append(<object>queue[e])
            pos = end
        for i in range(n):
            if targets[i] is None:
                targets[i] = []
        return targets, pos >= n_all
    finally:
        free(keep)
        free(queue)


def heterogeneous_plan(members, list order, meta):
    """kernels_heterogeneous._build_plan's fields before the topic order, from the members'
    subscriptions in iteration order (`members[order[i]]`) and the metadata: (topics, counts,
    index, member_cols, base, total, subscribers, subscribed), equal to what its twin builds
    (members sharing a subscription tuple share one column list); NotImplemented when a member is
    not exactly a MemberSubscription, a subscription not a tuple or a name not an exact str (the
    twin then runs, and raises where it raises)."""
    if not READY or type(members) is not tuple:
        return NotImplemented
    cdef tuple group = <tuple>members
    cdef Py_ssize_t n = len(order)
    cdef Py_ssize_t i, e, j, k, size, n_topics, row
    cdef PyObject *m
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
            m = PyTuple_GET_ITEM(<PyObject *>group, k)
            if Py_TYPE(m) != M_TYPE:
                return NotImplemented
            sub = _slot(m, M_TOPICS)
            if sub == NULL or not PyTuple_CheckExact(sub):
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
