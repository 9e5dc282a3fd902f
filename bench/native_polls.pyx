# cython: language_level=3, boundscheck=False, wraparound=False
"""The poll kernels' cost per poll, driven from C: `poll_kernels` (its mypyc build, on lists and
dicts) against `sim/native_members.pyx` (C calls on arrays, and its Python-level methods). Built and
run by bench/native_polls.py; every loop does a poll's kernel steps in `SimMember._poll`'s order:
finish the batch in flight, the auto-commit's changed positions (marked sent), the fetch (rotating
start), the next arrival when nothing was fetched."""

from libc.stdint cimport int64_t

from kafka_rebalance.sim.native_members cimport OwnedPartitions, ProcessedTable, Triples


def run_reference(kernels, list owned, list positions, list sent, list batches, table,
                  list processed, int rounds, int64_t t0, int64_t step, int64_t budget):
    """`rounds` polls of every member through `kernels` (poll_kernels); returns the duplicates."""
    cdef Py_ssize_t r, m, members = len(owned), k
    cdef int64_t now, dup = 0, token
    base, base_t, num, den = table.base, table.base_t, table.num, table.den
    for r in range(rounds):
        now = t0 + r * step
        token = r + 1
        for m in range(members):
            batch = batches[m]
            if batch:
                dup += kernels.finish(batch, processed)
            changed = kernels.changed_positions(owned[m], positions[m], sent[m])
            sent[m].update(changed)
            batch = []
            k = len(owned[m])
            room, _ = kernels.fetch(owned[m], (token * 7) % k, positions[m], base, base_t, num, den,
                                    now, budget, batch)
            batches[m] = batch
            if room == budget:
                kernels.next_arrival(owned[m], positions[m], base, base_t, num, den)
    return dup


def run_native(list members, list batches, ProcessedTable processed, int rounds, int64_t t0,
               int64_t step, int64_t budget):
    """The same polls as C calls on the arrays."""
    cdef Py_ssize_t r, m, n = len(members)
    cdef int64_t now, dup = 0, token, room, last = 0
    cdef OwnedPartitions o
    cdef Triples b
    cdef Triples changed = Triples()
    for r in range(rounds):
        now = t0 + r * step
        token = r + 1
        for m in range(n):
            o = members[m]
            b = batches[m]
            if b.n:
                dup += processed.finish_c(b)
                b.n = 0
            changed.n = 0
            o.changed_c(changed)
            o.mark_sent_c(changed)
            room = o.fetch_c((token * 7) % o.k, now, budget, b, &last)
            if room == budget:
                o.next_arrival_c()
    return dup


def run_native_python(list members, list batches, ProcessedTable processed, int rounds,
                      int64_t t0, int64_t step, int64_t budget):
    """The same polls through the native classes' Python-level methods."""
    cdef Py_ssize_t r, m, n = len(members)
    cdef int64_t now, dup = 0, token
    for r in range(rounds):
        now = t0 + r * step
        token = r + 1
        for m in range(n):
            o = members[m]
            b = batches[m]
            if len(b):
                dup += processed.finish(b)
                b.clear()
            o.commit_changed()
            room, _ = o.fetch(token, now, budget, b)
            if room == budget:
                o.next_arrival()
    return dup
