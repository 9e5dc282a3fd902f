# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Range assignment in rank order on C arrays: `kernels.ranges_in_rank_order`'s Cython build,
and the MemberInfo order (`range._member_info_indices`) for its usual case.

The Python twins (assign/kernels.py, mypyc-compiled or not; range.py) are the reference; this
gives the same dict, the same lists in the same order (tests/test_range_native.py). Used by
range.py's `ranges_in_member_info_order` (range without racks, server-range) when the install
built it and its stamp is fresh (`native.cython_build`). Why the rank order in C: sorting 2,000
member ids through a Python key function was 0.14 ms of server-range's 0.5 ms on 2,000 members.
"""

from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_GET_SIZE, PyTuple_GET_ITEM
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcmp, memset

cdef extern from "Python.h":
    int PyUnicode_CheckExact(PyObject *o)
    int PyUnicode_READY(PyObject *o)
    int PyUnicode_IS_ASCII(PyObject *o)
    Py_ssize_t PyUnicode_GET_LENGTH(PyObject *o)
    void *PyUnicode_DATA(PyObject *o)
    PyObject *PyList_GET_ITEM(PyObject *o, Py_ssize_t i)
    dict _PyDict_NewPresized(Py_ssize_t minused)
    PyObject *Py_None


cdef inline Py_ssize_t* _grow(Py_ssize_t* buf, Py_ssize_t* cap, Py_ssize_t need) except NULL:
    cdef Py_ssize_t new_cap = cap[0]
    cdef Py_ssize_t* out
    while new_cap < need:
        new_cap = new_cap * 2 + 16
    out = <Py_ssize_t*>realloc(buf, new_cap * sizeof(Py_ssize_t))
    if out == NULL:
        raise MemoryError()
    cap[0] = new_cap
    return out


cdef struct PtrTable:
    # open addressing on an object's address -> a value; keys borrowed (the caller's inputs hold
    # them for the call), at most half full (doubled past that)
    PyObject **keys
    Py_ssize_t *values
    Py_ssize_t mask
    Py_ssize_t used


cdef int _ptr_init(PtrTable *t, Py_ssize_t expected) except -1:
    t.mask = 63
    while t.mask + 1 < 2 * expected:
        t.mask = t.mask * 2 + 1
    t.used = 0
    t.keys = <PyObject **>malloc((t.mask + 1) * sizeof(PyObject *))
    t.values = <Py_ssize_t *>malloc((t.mask + 1) * sizeof(Py_ssize_t))
    if t.keys == NULL or t.values == NULL:
        raise MemoryError()
    memset(t.keys, 0, (t.mask + 1) * sizeof(PyObject *))
    return 0


cdef inline Py_ssize_t _ptr_slot(PtrTable *t, PyObject *key) noexcept:
    """The slot holding `key`, or the empty slot where it goes."""
    cdef size_t h = ((<size_t>key >> 4) * <size_t>11400714819323198485ULL) >> 24
    cdef Py_ssize_t i = <Py_ssize_t>(h & <size_t>t.mask)
    while t.keys[i] != NULL and t.keys[i] != key:
        i = (i + 1) & t.mask
    return i


cdef int _ptr_put(PtrTable *t, Py_ssize_t i, PyObject *key, Py_ssize_t value) except -1:
    """`key` -> `value` in the empty slot `i` (from _ptr_slot), the table doubled when half full."""
    cdef PyObject **old_keys = t.keys
    cdef Py_ssize_t *old_values = t.values
    cdef Py_ssize_t old_size = t.mask + 1, k
    t.keys[i] = key
    t.values[i] = value
    t.used += 1
    if 2 * t.used <= t.mask + 1:
        return 0
    t.mask = old_size * 2 - 1
    t.keys = <PyObject **>malloc((t.mask + 1) * sizeof(PyObject *))
    t.values = <Py_ssize_t *>malloc((t.mask + 1) * sizeof(Py_ssize_t))
    if t.keys == NULL or t.values == NULL:
        free(old_keys)
        free(old_values)
        raise MemoryError()
    memset(t.keys, 0, (t.mask + 1) * sizeof(PyObject *))
    for k in range(old_size):
        if old_keys[k] != NULL:
            i = _ptr_slot(t, old_keys[k])
            t.keys[i] = old_keys[k]
            t.values[i] = old_values[k]
    free(old_keys)
    free(old_values)
    return 0


cdef inline int _ascii_cmp(
    const char **data, Py_ssize_t *length, Py_ssize_t a, Py_ssize_t b
) noexcept:
    """str order of ids a and b (ASCII: byte order, a prefix first)."""
    cdef Py_ssize_t la = length[a], lb = length[b]
    cdef int r = memcmp(data[a], data[b], la if la < lb else lb)
    if r != 0:
        return r
    return (la > lb) - (la < lb)


cdef int _member_info_ranks(list ids, list instance_ids, Py_ssize_t *rank) except -1:
    """`range._member_info_indices` in C for its usual case (no static member, every id an exact
    ASCII str: code point order is String.compareTo order): the member positions sorted by id,
    stably (a merge sort; ids already in order cost n - 1 compares) into `rank` -> 1; 0 with
    nothing decided for any other input (the twin sorts those)."""
    cdef Py_ssize_t n = len(ids), i, width, lo, mid, hi, a, b, k
    cdef PyObject *o
    if len(instance_ids) != n:
        return 0
    for i in range(n):
        if PyList_GET_ITEM(<PyObject *>instance_ids, i) != Py_None:
            return 0
        o = PyList_GET_ITEM(<PyObject *>ids, i)
        if not PyUnicode_CheckExact(o) or PyUnicode_READY(o) < 0 or not PyUnicode_IS_ASCII(o):
            return 0
    cdef const char **data = <const char **>malloc((n + 1) * sizeof(char *))
    cdef Py_ssize_t *length = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t *tmp = NULL
    cdef Py_ssize_t *src
    cdef Py_ssize_t *dst
    cdef bint in_order = True
    try:
        if data == NULL or length == NULL:
            raise MemoryError()
        for i in range(n):
            o = PyList_GET_ITEM(<PyObject *>ids, i)
            data[i] = <const char *>PyUnicode_DATA(o)
            length[i] = PyUnicode_GET_LENGTH(o)
            rank[i] = i
            if i > 0 and in_order and _ascii_cmp(data, length, i - 1, i) > 0:
                in_order = False
        if in_order:
            return 1
        tmp = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))
        if tmp == NULL:
            raise MemoryError()
        src, dst = rank, tmp
        width = 1
        while width < n:
            lo = 0
            while lo < n:
                mid = lo + width if lo + width < n else n
                hi = lo + 2 * width if lo + 2 * width < n else n
                a, b, k = lo, mid, lo
                while a < mid and b < hi:  # the left one on ties: stable
                    if _ascii_cmp(data, length, src[b], src[a]) < 0:
                        dst[k] = src[b]
                        b += 1
                    else:
                        dst[k] = src[a]
                        a += 1
                    k += 1
                while a < mid:
                    dst[k] = src[a]
                    a += 1
                    k += 1
                while b < hi:
                    dst[k] = src[b]
                    b += 1
                    k += 1
                lo = hi
            src, dst = dst, src
            width *= 2
        if src != rank:
            for i in range(n):
                rank[i] = src[i]
        return 1
    finally:
        free(data)
        free(length)
        free(tmp)


def member_info_ranks(list ids, list instance_ids):
    """`range._member_info_indices(tuple(ids), tuple(instance_ids))` as a list, computed in C for
    its usual case (no static member, ASCII ids); NotImplemented for any other (the twin sorts)."""
    cdef Py_ssize_t n = len(ids), i
    cdef Py_ssize_t *rank = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))
    try:
        if rank == NULL:
            raise MemoryError()
        if not _member_info_ranks(ids, instance_ids, rank):
            return NotImplemented
        return [rank[i] for i in range(n)]
    finally:
        free(rank)


def ranges_in_member_info_order(
    list ids,
    list member_topics,
    list instance_ids,
    meta,
    bint with_empty_topics,
    objects_of,
):
    """`ranges_in_rank_order` with the rank list `range._member_info_indices` would give, computed
    in C (member_info_ranks' usual case); NotImplemented for anything else (the caller then sorts
    and calls ranges_in_rank_order or its twin)."""
    cdef Py_ssize_t n = len(ids)
    cdef Py_ssize_t *rank = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))
    try:
        if rank == NULL:
            raise MemoryError()
        if len(member_topics) != n or not _member_info_ranks(ids, instance_ids, rank):
            return NotImplemented
        return _ranges(ids, member_topics, rank, meta, with_empty_topics, objects_of)
    finally:
        free(rank)


def ranges_in_rank_order(
    list ids,
    list member_topics,
    list rank_list,
    meta,
    bint with_empty_topics,
    objects_of,
):
    """As `kernels.ranges_in_rank_order`: topic j's k-th subscriber in `rank_list` order takes
    `n // s` of its n partitions (the first `n % s` one more) in consecutive ranges; topics in
    first-seen order over the distinct subscriptions (members sharing one tuple object handled
    once), those with the same subscribers as one block in first-topic order. NotImplemented when
    a subscription is not a tuple or `rank_list` is not a permutation of the members (the twin
    takes those)."""
    cdef Py_ssize_t n = len(ids), i, k
    cdef object obj
    cdef Py_ssize_t *rank = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))
    cdef unsigned char *seen = <unsigned char *>malloc(n + 1)
    try:
        if rank == NULL or seen == NULL:
            raise MemoryError()
        if len(rank_list) != n or len(member_topics) != n:
            return NotImplemented
        memset(seen, 0, n + 1)
        for k in range(n):
            obj = rank_list[k]
            if type(obj) is not int:
                return NotImplemented
            i = obj
            if i < 0 or i >= n or seen[i]:
                return NotImplemented
            seen[i] = 1
            rank[k] = i
        return _ranges(ids, member_topics, rank, meta, with_empty_topics, objects_of)
    finally:
        free(seen)
        free(rank)


cdef object _ranges(
    list ids,
    list member_topics,
    Py_ssize_t *rank,
    meta,
    bint with_empty_topics,
    objects_of,
):
    """ranges_in_rank_order on a rank array (a permutation of the n members, checked by the
    caller). Subscription tuples and topic names are found by address first (members usually
    share them), by value (`col`, `skipped`) the first time an object is seen."""
    cdef Py_ssize_t n = len(ids)
    cdef Py_ssize_t n_meta = len(meta)
    cdef Py_ssize_t i, j, k, g, t_len, n_topics = 0, n_groups = 0, total, upto, start, size, s
    cdef Py_ssize_t c, q, extra, k0, b, e, n_cols = 0, cols_cap = 0, h_j, slot
    cdef unsigned long long h
    cdef object sub, name, tm, key_t, js, obj
    cdef PyObject* found
    cdef PyObject* p_sub
    cdef PyObject* p_name
    cdef list topics = []
    cdef dict col = {}
    cdef set skipped = set()
    cdef list out, lst, fetched
    cdef tuple objs
    cdef dict blocks
    cdef dict result
    cdef Py_ssize_t m = (n_meta if n_meta > 0 else 1)
    cdef Py_ssize_t* group_of = <Py_ssize_t*>malloc((n if n > 0 else 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t* group_start = <Py_ssize_t*>malloc((n + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t* stamp = <Py_ssize_t*>malloc(m * sizeof(Py_ssize_t))
    cdef Py_ssize_t* counts = <Py_ssize_t*>malloc(m * sizeof(Py_ssize_t))
    cdef Py_ssize_t* n_subs = <Py_ssize_t*>malloc(m * sizeof(Py_ssize_t))
    cdef Py_ssize_t* first = <Py_ssize_t*>malloc(m * sizeof(Py_ssize_t))
    cdef Py_ssize_t* held = <Py_ssize_t*>malloc((n + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t* cols = NULL
    cdef Py_ssize_t* subs = NULL
    cdef PtrTable by_object, by_name
    by_object.keys, by_object.values, by_name.keys, by_name.values = NULL, NULL, NULL, NULL
    try:
        if (group_of == NULL or group_start == NULL or stamp == NULL or counts == NULL
                or n_subs == NULL or first == NULL or held == NULL):
            raise MemoryError()
        _ptr_init(&by_object, 8)
        _ptr_init(&by_name, n_meta)
        # the distinct subscriptions (by tuple object) and their topic columns, end to end in cols
        group_start[0] = 0
        for i in range(n):
            p_sub = PyList_GET_ITEM(<PyObject *>member_topics, i)
            if type(<object>p_sub) is not tuple:
                return NotImplemented
            slot = _ptr_slot(&by_object, p_sub)
            if by_object.keys[slot] != NULL:
                group_of[i] = by_object.values[slot]
                continue
            g = n_groups
            n_groups += 1
            _ptr_put(&by_object, slot, p_sub, g)
            sub = <object>p_sub
            t_len = PyTuple_GET_SIZE(sub)
            if n_cols + t_len > cols_cap:
                cols = _grow(cols, &cols_cap, n_cols + t_len)
            for k in range(t_len):
                p_name = PyTuple_GET_ITEM(sub, k)
                slot = _ptr_slot(&by_name, p_name)
                if by_name.keys[slot] != NULL:
                    j = by_name.values[slot]  # this str object seen before: its column or -1
                else:
                    name = <object>p_name
                    found = PyDict_GetItem(col, name)
                    if found != NULL:
                        j = <Py_ssize_t><object>found
                    elif name in skipped:
                        j = -1
                    else:
                        tm = meta.get(name)
                        c = -1 if tm is None else int(tm.partitions)
                        if c < 0 or (c == 0 and not with_empty_topics):
                            skipped.add(name)
                            j = -1
                        else:
                            if n_topics >= n_meta:  # meta's keys are not what its values' names say
                                return NotImplemented
                            j = n_topics
                            n_topics += 1
                            PyDict_SetItem(col, name, j)
                            topics.append(name)
                            counts[j] = c
                            stamp[j] = -1
                    _ptr_put(&by_name, _ptr_slot(&by_name, p_name), p_name, j)
                if j < 0:
                    continue
                if stamp[j] == g:
                    continue  # a topic named twice: keep its first place
                stamp[j] = g
                cols[n_cols] = j
                n_cols += 1
            group_start[g + 1] = n_cols
            group_of[i] = g
        # each topic's subscribers in rank order, laid out end to end (one group: rank itself)
        if n_groups == 1:
            for j in range(n_topics):
                first[j] = 0
                n_subs[j] = n
            subs = rank
        else:
            for j in range(n_topics):
                n_subs[j] = 0
            for k in range(n):
                g = group_of[rank[k]]
                for b in range(group_start[g], group_start[g + 1]):
                    n_subs[cols[b]] += 1
            total = 0
            for j in range(n_topics):
                first[j] = total
                total += n_subs[j]
                n_subs[j] = 0
            subs = <Py_ssize_t*>malloc((total if total > 0 else 1) * sizeof(Py_ssize_t))
            if subs == NULL:
                raise MemoryError()
            for k in range(n):
                i = rank[k]
                g = group_of[i]
                for b in range(group_start[g], group_start[g + 1]):
                    j = cols[b]
                    subs[first[j] + n_subs[j]] = i
                    n_subs[j] += 1
        # topics with the same subscribers form one block, blocks in first-topic order; a block
        # is found by a hash of its subscribers, then compared in full (blocks: hash -> [first
        # topic of each block with that hash]; order kept in block_order)
        blocks = {}
        block_order = []
        for j in range(n_topics):
            if counts[j] <= 0 or n_subs[j] <= 0:
                continue
            h = <unsigned long long>n_subs[j]
            if n_groups > 1:
                for k in range(first[j], first[j] + n_subs[j]):
                    h = (h ^ <unsigned long long>subs[k]) * 1099511628211ULL
            key_t = <long long>(h >> 1)
            found = PyDict_GetItem(blocks, key_t)
            if found == NULL:
                lst = [j]
                blocks[key_t] = [lst]
                block_order.append(lst)
                continue
            for js in <list><object>found:
                h_j = <Py_ssize_t>(<list>js)[0]
                if n_subs[h_j] == n_subs[j] and (n_groups == 1 or memcmp(
                    &subs[first[h_j]], &subs[first[j]], n_subs[j] * sizeof(Py_ssize_t)
                ) == 0):
                    (<list>js).append(j)
                    break
            else:
                lst = [j]
                (<list><object>found).append(lst)
                block_order.append(lst)
        # each member's list made at its final size (counted first), then filled in block order
        for i in range(n):
            held[i] = 0
        fetched = []
        for js in block_order:
            j = <Py_ssize_t>(<list>js)[0]
            s = n_subs[j]
            k0 = first[j]
            for obj in <list>js:
                j = obj
                c = counts[j]
                objs = tuple(objects_of(topics[j], c))
                if len(objs) < c:
                    return NotImplemented  # the twin's slices would give fewer
                fetched.append(objs)
                q = c // s
                extra = c - q * s
                upto = s if s < c else c
                for k in range(upto):
                    held[subs[k0 + k]] += q + 1 if k < extra else q
        out = PyList_New(n)
        for i in range(n):
            lst = PyList_New(held[i])
            Py_INCREF(lst)
            PyList_SET_ITEM(out, i, lst)
            held[i] = 0  # now: how many are filled
        e = 0
        for js in block_order:
            j = <Py_ssize_t>(<list>js)[0]
            s = n_subs[j]
            k0 = first[j]
            for obj in <list>js:
                j = obj
                c = counts[j]
                objs = <tuple>fetched[e]
                e += 1
                q = c // s
                extra = c - q * s
                start = 0
                upto = s if s < c else c
                for k in range(upto):
                    size = q + 1 if k < extra else q
                    i = subs[k0 + k]
                    lst = <list>PyList_GET_ITEM(<PyObject *>out, i)
                    for b in range(start, start + size):
                        obj = <object>PyTuple_GET_ITEM(objs, b)
                        Py_INCREF(obj)
                        PyList_SET_ITEM(lst, held[i], obj)
                        held[i] += 1
                    start += size
        result = _PyDict_NewPresized(n)
        for k in range(n):
            PyDict_SetItem(
                result,
                <object>PyList_GET_ITEM(<PyObject *>ids, k),
                <object>PyList_GET_ITEM(<PyObject *>out, k),
            )
        return result
    finally:
        free(group_of)
        free(group_start)
        free(stamp)
        free(counts)
        free(n_subs)
        free(first)
        free(held)
        free(cols)
        if subs != rank:
            free(subs)
        free(by_object.keys)
        free(by_object.values)
        free(by_name.keys)
        free(by_name.values)
