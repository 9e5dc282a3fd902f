# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The uniform assignor's owned-partition passes on unboxed data: Cython, built by setup.py when it can.

Twins (the reference, mypyc): `uniform_assign` is `kernels.uniform_homogeneous` plus the result
dict, `keep_unshared` is `kernels_heterogeneous._keep_unshared`. Why: mypyc spends 30-50 ns per
owned partition on generic object handling (subclass checks, list reads through calls, boxed
ints); these read each partition's fields from its slots (offsets probed at import), keep holders
in C int arrays, find a topic by name in a table built for the call, and build the result from
the input's own objects. They take only the usual shapes (members exactly MemberSubscription,
partitions exactly TopicPartition with an exact str topic and int partition); anything else
declines (`NotImplemented`) and the twin runs. Nothing is kept between calls.
"""

from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF
from cpython.list cimport PyList_New, PyList_SET_ITEM
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memset

from kafka_rebalance.model import MemberSubscription, TopicPartition

cdef extern from "Python.h":
    ctypedef struct PyASCIIObject:
        Py_hash_t hash
    int PyLong_CheckExact(PyObject *o)
    int PyUnicode_CheckExact(PyObject *o)
    int PyTuple_CheckExact(PyObject *o)
    int PyList_CheckExact(PyObject *o)
    PyObject *PyList_GET_ITEM(PyObject *o, Py_ssize_t i)
    PyObject *PyTuple_GET_ITEM(PyObject *o, Py_ssize_t i)
    PyObject **PySequence_Fast_ITEMS(object o)
    Py_ssize_t PyTuple_GET_SIZE(PyObject *o)
    PyTypeObject *Py_TYPE(PyObject *o)
    Py_ssize_t PyUnicode_GET_LENGTH(PyObject *o)
    int PyUnicode_KIND(PyObject *o)
    void *PyUnicode_DATA(PyObject *o)
    int PyUnicode_READY(PyObject *o)
    dict _PyDict_NewPresized(Py_ssize_t minused)
    int PyDict_SetItem(object d, object key, object value) except -1
    Py_hash_t PyObject_Hash(object o) except -1
    PyObject *PyDict_GetItemWithError(object d, object key) except? NULL
    long PyLong_AsLong_raw "PyLong_AsLong"(PyObject *o) except? -1
    long PyLong_AsLongAndOverflow(PyObject *o, int *overflow) except? -1
    char *PyBytes_AS_STRING(object o)


cdef extern from *:
    void __builtin_prefetch(const void *addr) nogil


ctypedef PyObject *Ref  # (several on one line)


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


cdef Py_ssize_t TP_TOPIC = -1, TP_PARTITION = -1, M_ID = -1, M_TOPICS = -1, M_OWNED = -1
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


ID_OFFSET = M_ID  # for uniform_native_plan.member_order (a plain int: nothing kept per call)


def uniform_assign(members, bytes packed, list topics, list counts, objects_of, slow_member):
    """The homogeneous builder from the spec's members to the result, the members taken in
    `packed`'s order (uniform_native_plan.member_order_packed: n iteration-order spec positions,
    then each spec member's iteration position, as C Py_ssize_t): `_build` on it and the result
    dict in the spec's member order -> (result, complete); None when the group is heterogeneous;
    NotImplemented for an input not of the usual shape (the caller's path then runs)."""
    if not READY or type(members) is not tuple or len(<tuple>members) == 0:
        return NotImplemented
    cdef tuple group = <tuple>members
    cdef Py_ssize_t n = len(group)
    if len(packed) != 2 * n * <Py_ssize_t>sizeof(Py_ssize_t):
        return NotImplemented
    cdef Py_ssize_t *at = <Py_ssize_t *>PyBytes_AS_STRING(packed)
    cdef Py_ssize_t *position = at + n
    cdef Py_ssize_t k
    cdef PyObject *m
    done = _homogeneous(group, at, n, topics, counts, objects_of, slow_member)
    if done is None or done is NotImplemented:
        return done
    targets, complete = done
    result = _PyDict_NewPresized(n)
    for k in range(n):
        m = PyTuple_GET_ITEM(<PyObject *>group, k)
        PyDict_SetItem(result, <object>_slot(m, M_ID), targets[position[k]])
    return result, complete


cdef object _homogeneous(
    tuple group, Py_ssize_t *at, Py_ssize_t n, list topics, list counts, objects_of, slow_member
):
    """The twin's setup (topic bases, the holder array, the topic table), then _build."""
    cdef Py_ssize_t n_topics = len(topics)
    if len(counts) != n_topics:
        return NotImplemented
    cdef Py_ssize_t j, c
    for j in range(n_topics):
        if not PyLong_CheckExact(PyList_GET_ITEM(<PyObject *>counts, j)):
            return NotImplemented
    cdef int *owner = NULL
    cdef Py_ssize_t *count_of = NULL  # base_of: the second half of its block
    cdef Py_ssize_t *base_of
    cdef Py_ssize_t *remaining = NULL
    cdef TopicTable table
    table.keys, table.hashes, table.values, table.used = NULL, NULL, NULL, 0
    cdef Py_ssize_t total = 0
    try:
        count_of = <Py_ssize_t *>malloc(2 * (n_topics + 1) * sizeof(Py_ssize_t))
        remaining = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))
        if count_of == NULL or remaining == NULL:
            raise MemoryError()
        base_of = count_of + n_topics + 1
        index = {}
        for j in range(n_topics):
            index[topics[j]] = j
            c = PyLong_AsLong_raw(PyList_GET_ITEM(<PyObject *>counts, j))
            count_of[j] = c
            base_of[j] = total
            total += c
            if c < 0:
                return NotImplemented
        _table_init(&table, n_topics)
        owner = <int *>malloc((total + 1) * sizeof(int))
        if owner == NULL:
            raise MemoryError()
        memset(owner, 0xFF, (total + 1) * sizeof(int))  # -1: nobody
        return _build(
            group, at, n, topics, count_of, base_of, objects_of, n_topics, total, index, &table,
            owner, remaining, slow_member,
        )
    finally:
        free(count_of)
        free(remaining)
        free(owner)
        free(table.keys)
        free(table.hashes)
        free(table.values)


cdef int _table_init(TopicTable *table, Py_ssize_t n_topics) except -1:
    """An empty table for the call: 4x the subscribed topics, at least 64 slots."""
    table.mask = 63
    while table.mask + 1 < 4 * n_topics:
        table.mask = table.mask * 2 + 1
    table.keys = <PyObject **>malloc((table.mask + 1) * sizeof(PyObject *))
    table.hashes = <Py_hash_t *>malloc((table.mask + 1) * sizeof(Py_hash_t))
    table.values = <int *>malloc((table.mask + 1) * sizeof(int))
    if table.keys == NULL or table.hashes == NULL or table.values == NULL:
        raise MemoryError()
    memset(table.keys, 0, (table.mask + 1) * sizeof(PyObject *))
    return 0


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


cdef inline void _prefetch(PyObject *m, int what) noexcept:
    """A member's owned tuple (what 0), its first 16 partition objects (1), or their topic str
    objects (2: a step later, the partitions are in cache by then; parsed input has one each)."""
    cdef Ref owned, tp
    cdef Py_ssize_t e, size
    if Py_TYPE(m) == M_TYPE:
        owned = _slot(m, M_OWNED)
        if owned != NULL and what == 0:
            __builtin_prefetch(owned)
            __builtin_prefetch((<char *>owned) + 64)
        elif owned != NULL and PyTuple_CheckExact(owned):
            size = PyTuple_GET_SIZE(owned)
            for e in range(size if size < 16 else 16):
                tp = PyTuple_GET_ITEM(owned, e)
                if what == 1:
                    __builtin_prefetch(tp)
                elif Py_TYPE(tp) == TP_TYPE and _slot(tp, TP_TOPIC) != NULL:
                    __builtin_prefetch(_slot(tp, TP_TOPIC))


cdef list _list_of(PyObject **a, Py_ssize_t n_a, PyObject **b, Py_ssize_t n_b):
    """A new list of `a`'s n_a items, then `b`'s n_b (new references)."""
    cdef list out = PyList_New(n_a + n_b)
    cdef Py_ssize_t e
    for e in range(n_a + n_b):
        item = <object>(a[e] if e < n_a else b[e - n_a])
        Py_INCREF(item)
        PyList_SET_ITEM(out, e, item)
    return out


cdef object _build(
    tuple group, Py_ssize_t *at, Py_ssize_t n, list topics, Py_ssize_t *count_of,
    Py_ssize_t *base_of, objects_of, Py_ssize_t n_topics, Py_ssize_t total, dict index,
    TopicTable *table, int *owner, Py_ssize_t *remaining, slow_member,
):
    cdef Ref m, sub, owned, tp, tv, pv, item
    cdef Ref first = NULL, last_topic = NULL
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
            if i + 8 < n:
                __builtin_prefetch(PyTuple_GET_ITEM(<PyObject *>group, at[i + 8]))
            if i + 6 < n:
                _prefetch(PyTuple_GET_ITEM(<PyObject *>group, at[i + 6]), 0)
            if i + 4 < n:
                _prefetch(PyTuple_GET_ITEM(<PyObject *>group, at[i + 4]), 1)
            if i + 2 < n:
                _prefetch(PyTuple_GET_ITEM(<PyObject *>group, at[i + 2]), 2)
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
                    hv = (<PyASCIIObject *>tv).hash  # cached in the str after its first use
                    hv = hv if hv != -1 else PyObject_Hash(<object>tv)
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
            else:  # its kept entries; all of them (no gap): its owned tuple, shared (uniform.py)
                remaining[i] = quota - held
                if not gap:
                    targets.append(<object>owned)
                    continue
                result = PyList_New(held)
                k = 0
                for e in range(n_entries):
                    if keep[e]:
                        item = PyTuple_GET_ITEM(owned, e)
                        Py_INCREF(<object>item)
                        PyList_SET_ITEM(result, k, <object>item)
                        k += 1
                targets.append(result)
        # the queue: the partitions nobody holds (topics in order), then the revoked ones
        n_all = total - taken + len(revoked)
        queue = <PyObject **>malloc((n_all + 1) * sizeof(PyObject *))
        if queue == NULL:
            raise MemoryError()
        k = 0
        fetched = []  # each topic's partition objects (objects_of), asked for once it has a free one
        if taken < total:
            for j in range(n_topics):
                objs = NULL
                c_j = count_of[j]
                b_j = base_of[j]
                for p in range(c_j):
                    if owner[b_j + p] < 0:
                        if objs == NULL:
                            got = objects_of(topics[j], c_j)
                            fetched.append(got)  # kept alive: the queue borrows its items
                            objs, is_tuple = <PyObject *>got, PyTuple_CheckExact(<PyObject *>got)
                            if not (is_tuple or PyList_CheckExact(objs)) or len(got) < c_j:
                                return NotImplemented
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
                targets[i] = _list_of(NULL, 0, queue + pos, end - pos)
            elif PyTuple_CheckExact(<PyObject *>target):  # a shared owned tuple: copied, then extended
                k = PyTuple_GET_SIZE(<PyObject *>target)
                targets[i] = _list_of(PySequence_Fast_ITEMS(target), k, queue + pos, end - pos)
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


def keep_unshared(members, list order, dict index, list counts, list base, bytes subscribed,
                  list owners, list sizes, list mine):
    """kernels_heterogeneous._keep_unshared (its twin) on unboxed data: each member's kept entries
    (valid, subscribed, first occurrences, in the order given) into `mine`, and `owners`/`sizes`
    filled -> True; False at the first partition an earlier member kept too; NotImplemented, with
    nothing written, for an input not of the usual shape (the twin then runs)."""
    if not READY or type(members) is not tuple:
        return NotImplemented
    cdef tuple group = <tuple>members
    cdef Py_ssize_t n = len(order), n_topics = len(counts), total = len(owners)
    if len(sizes) != n or len(base) != n_topics or len(subscribed) != n * n_topics:
        return NotImplemented
    cdef int *own = <int *>malloc((total + 1) * sizeof(int))
    cdef Py_ssize_t *held = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))
    cdef TopicTable table
    table.keys, table.hashes, table.values, table.used = NULL, NULL, NULL, 0
    cdef Py_ssize_t i, e, k, j = -1, c_j = 0, b_j = 0, p, f, size, count
    cdef bint ok_j = False, same
    cdef int overflow
    cdef Ref m, owned, tp, tv, pv, last = NULL
    cdef Py_hash_t hv, last_hash = -1
    cdef list kept
    cdef list out = []
    cdef const unsigned char *cells = <const unsigned char *>PyBytes_AS_STRING(subscribed)
    try:
        _table_init(&table, n_topics)
        if own == NULL or held == NULL:
            raise MemoryError()
        memset(own, 0xFF, (total + 1) * sizeof(int))
        for i in range(n):
            k = order[i]
            if k < 0 or k >= len(group):
                return NotImplemented
            m = PyTuple_GET_ITEM(<PyObject *>group, k)
            if Py_TYPE(m) != M_TYPE:
                return NotImplemented
            owned = _slot(m, M_OWNED)
            if owned == NULL or not PyTuple_CheckExact(owned):
                return NotImplemented
            kept = []
            out.append(kept)
            held[i] = 0
            size = PyTuple_GET_SIZE(owned)
            last = NULL  # the twin reads the topic afresh for each member (its row differs)
            for e in range(size):
                tp = PyTuple_GET_ITEM(owned, e)
                if Py_TYPE(tp) != TP_TYPE:
                    return NotImplemented
                tv = _slot(tp, TP_TOPIC)
                pv = _slot(tp, TP_PARTITION)
                if tv == NULL or pv == NULL:
                    return NotImplemented
                if tv != last:
                    if not PyUnicode_CheckExact(tv) or PyUnicode_READY(tv) < 0:
                        return NotImplemented
                    hv = (<PyASCIIObject *>tv).hash  # the same name as the entry before: j's
                    hv = hv if hv != -1 else PyObject_Hash(<object>tv)
                    same = last != NULL and hv == last_hash and _same_text(tv, last)
                    last, last_hash = tv, hv
                    if not same:
                        j = _topic_index(tv, hv, index, &table)
                        if j >= n_topics:
                            return NotImplemented
                        if j >= 0:
                            c_j, b_j, ok_j = counts[j], base[j], cells[i * n_topics + j] != 0
                if j < 0:
                    continue
                if not PyLong_CheckExact(pv):
                    return NotImplemented
                p = PyLong_AsLongAndOverflow(pv, &overflow)
                if overflow != 0 or p < 0 or p >= c_j or not ok_j:
                    continue
                f = b_j + p
                if f >= total:
                    return NotImplemented
                if own[f] == i:
                    continue  # named twice by this member
                if own[f] >= 0:
                    return False  # an earlier member kept it too (the caller starts over)
                own[f] = <int>i
                kept.append(<object>tp)
                held[i] += 1
        for f in range(total):
            if own[f] >= 0:
                owners[f] = own[f]
        for i in range(n):
            sizes[i] = held[i]
        mine.extend(out)
        return True
    finally:
        free(own)
        free(held)
        free(table.keys)
        free(table.hashes)
        free(table.values)
