# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Range assignment in rank order on C arrays: `kernels.ranges_in_rank_order`'s Cython build.

The Python twin (assign/kernels.py, mypyc-compiled or not) is the reference; this gives the same
dict, the same lists in the same order (tests/test_range_native.py). Used by range.py's
`ranges_in_member_info_order` (range without racks, server-range) when the install built it and
its stamp is fresh (`native.cython_build`).
"""

from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.list cimport PyList_New, PyList_SET_ITEM, PyList_Append
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_GET_SIZE, PyTuple_GET_ITEM
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcmp


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
    cdef Py_ssize_t n = len(ids)
    cdef Py_ssize_t n_meta = len(meta)
    cdef Py_ssize_t i, j, k, g, t_len, n_topics = 0, n_groups = 0, total, upto, start, size, s
    cdef Py_ssize_t c, q, extra, k0, b, n_cols = 0, cols_cap = 0, h_j
    cdef unsigned long long h
    cdef object sub, name, tm, key_t, js, obj
    cdef PyObject* found
    cdef list topics = []
    cdef dict col = {}
    cdef set skipped = set()
    cdef dict by_object = {}
    cdef list out, lst
    cdef tuple objs
    cdef dict blocks
    cdef dict result
    cdef Py_ssize_t m = (n_meta if n_meta > 0 else 1)
    cdef Py_ssize_t* group_of = <Py_ssize_t*>malloc((n if n > 0 else 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t* group_start = <Py_ssize_t*>malloc((n + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t* rank = <Py_ssize_t*>malloc((n if n > 0 else 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t* stamp = <Py_ssize_t*>malloc(m * sizeof(Py_ssize_t))
    cdef Py_ssize_t* counts = <Py_ssize_t*>malloc(m * sizeof(Py_ssize_t))
    cdef Py_ssize_t* n_subs = <Py_ssize_t*>malloc(m * sizeof(Py_ssize_t))
    cdef Py_ssize_t* first = <Py_ssize_t*>malloc(m * sizeof(Py_ssize_t))
    cdef Py_ssize_t* cols = NULL
    cdef Py_ssize_t* subs = NULL
    cdef unsigned char* seen = NULL
    try:
        if (group_of == NULL or group_start == NULL or rank == NULL or stamp == NULL
                or counts == NULL or n_subs == NULL or first == NULL):
            raise MemoryError()
        if len(rank_list) != n:
            return NotImplemented
        seen = <unsigned char*>malloc(n if n > 0 else 1)
        if seen == NULL:
            raise MemoryError()
        for i in range(n):
            seen[i] = 0
        for k in range(n):
            obj = rank_list[k]
            if type(obj) is not int:
                return NotImplemented
            i = obj
            if i < 0 or i >= n or seen[i]:
                return NotImplemented
            seen[i] = 1
            rank[k] = i
        # the distinct subscriptions (by tuple object) and their topic columns, end to end in cols
        group_start[0] = 0
        for i in range(n):
            sub = member_topics[i]
            if type(sub) is not tuple:
                return NotImplemented
            key_t = id(sub)
            found = PyDict_GetItem(by_object, key_t)
            if found != NULL:
                group_of[i] = <Py_ssize_t><object>found
                continue
            g = n_groups
            n_groups += 1
            PyDict_SetItem(by_object, key_t, g)
            t_len = PyTuple_GET_SIZE(sub)
            if n_cols + t_len > cols_cap:
                cols = _grow(cols, &cols_cap, n_cols + t_len)
            for k in range(t_len):
                name = <object>PyTuple_GET_ITEM(sub, k)
                found = PyDict_GetItem(col, name)
                if found == NULL:
                    if name in skipped:
                        continue
                    tm = meta.get(name)
                    c = -1 if tm is None else int(tm.partitions)
                    if c < 0 or (c == 0 and not with_empty_topics):
                        skipped.add(name)
                        continue
                    if n_topics >= n_meta:  # meta's keys are not what its values' names say
                        return NotImplemented
                    j = n_topics
                    n_topics += 1
                    PyDict_SetItem(col, name, j)
                    topics.append(name)
                    counts[j] = c
                    stamp[j] = -1
                else:
                    j = <Py_ssize_t><object>found
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
            rank = NULL
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
        out = PyList_New(n)
        for i in range(n):
            lst = []
            Py_INCREF(lst)
            PyList_SET_ITEM(out, i, lst)
        for js in block_order:
            j = <Py_ssize_t>(<list>js)[0]
            s = n_subs[j]
            k0 = first[j]
            for obj in <list>js:
                j = obj
                c = counts[j]
                q = c // s
                extra = c - q * s
                objs = tuple(objects_of(topics[j], c))
                start = 0
                upto = s if s < c else c
                for k in range(upto):
                    size = q + 1 if k < extra else q
                    lst = <list>out[subs[k0 + k]]
                    if size == 1:
                        PyList_Append(lst, objs[start])
                    else:
                        lst.extend(objs[start : start + size])
                    start += size
        result = {}
        for k in range(n):
            result[ids[k]] = out[k]
        return result
    finally:
        free(group_of)
        free(group_start)
        free(rank)
        free(stamp)
        free(counts)
        free(n_subs)
        free(first)
        free(cols)
        free(subs)
        free(seen)
