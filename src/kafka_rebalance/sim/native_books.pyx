# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The world's books and the network's arrival times by member index, for the native classic core
(docs/sim-native.md, "Data layout" and the exactness checklist's items 2, 3 and 10).

The reference is `sim/world_core.py` (`WorldCore`: `set_available_many`, `set_unavailable_many`,
`add_paused`, `revoke`, `lose`, `assigned`, `on_generation`, `_arrival`) and the books that
`world.Simulation.run` and `summary` read; tests/test_sim_native_members.py compares them over random
operation sequences. Members are indices (0..N-1, a later member the next one); a partition's
owner is a member index or -1 (the reference's None). Not used by any run yet.

The reference's counters are unbounded ints; these are int64 and every addition is checked:
one that would leave int64 raises OverflowError (the native core refuses, never wraps).
"""

from libc.stdint cimport INT64_MIN, int64_t
from libc.stdlib cimport free

from .native_checked cimport add64 as add, grow, sub64

cdef int64_t NONE = INT64_MIN  # no arrival yet on a connection
cdef int64_t LIMIT = 1 << 61  # times, latencies and samples stay below this (their sums fit int64)


cdef inline int64_t* _grow(int64_t* data, Py_ssize_t cap) except NULL:
    return <int64_t*>grow(data, cap, sizeof(int64_t))


cdef class Books:
    """`WorldCore`'s books: per partition its last owner, who processes it now and since when it is
    unavailable; per member its paused time; the group-wide counts the summary reads."""

    def __cinit__(self, Py_ssize_t partitions):
        cdef Py_ssize_t p
        self.partitions = partitions
        self.last_owner = _grow(NULL, partitions + 1)
        self.avail_owner = _grow(NULL, partitions + 1)
        self.unavail_since = _grow(NULL, partitions + 1)
        for p in range(partitions):
            self.last_owner[p] = -1
            self.avail_owner[p] = -1
            self.unavail_since[p] = 0
        self.timeline = []
        self.pause_order = []
        self.pending_cause = "initial join"

    def __dealloc__(self):
        free(self.last_owner)
        free(self.avail_owner)
        free(self.unavail_since)
        free(self.paused_ms)

    cdef int ensure_member(self, int64_t m) except -1:
        """Member m's paused time exists (a member started later is the next index)."""
        cdef Py_ssize_t i, cap
        if m < 0:
            raise IndexError(f"member {m}")
        if m >= self.member_cap:
            cap = m + 1 if m + 1 > 2 * self.member_cap else 2 * self.member_cap
            self.paused_ms = _grow(self.paused_ms, cap)
            self.member_cap = cap
        for i in range(self.members, m + 1):
            self.paused_ms[i] = 0
        if m >= self.members:
            self.members = m + 1
        return 0

    cdef int check(self, int64_t p) except -1:
        if not 0 <= p < self.partitions:
            raise IndexError(f"partition {p} outside 0..{self.partitions - 1}")
        return 0

    cdef int set_available_c(self, const int64_t* ps, Py_ssize_t n, int64_t now, int64_t m) except -1:
        """`set_available_many(ps, now, name)`: member m processes ps again from now."""
        cdef Py_ssize_t i
        cdef int64_t p, gone = 0
        for i in range(n):
            p = ps[i]
            if self.avail_owner[p] == -1:
                gone = add(gone, now - self.unavail_since[p])
            self.avail_owner[p] = m
        if gone:
            self.unavailable_ms = add(self.unavailable_ms, gone)
        return 0

    cdef void set_unavailable_c(self, const int64_t* ps, Py_ssize_t n, int64_t now) noexcept:
        """`set_unavailable_many(ps, now)`: nobody processes ps from now."""
        cdef Py_ssize_t i
        cdef int64_t p
        for i in range(n):
            p = ps[i]
            if self.avail_owner[p] != -1:
                self.avail_owner[p] = -1
                self.unavail_since[p] = now

    cdef int revoke_c(self, const int64_t* ps, Py_ssize_t n, int64_t now) except -1:
        """`revoke` (the event row aside): counted, then unavailable."""
        self.revocations = add(self.revocations, n)
        self.set_unavailable_c(ps, n, now)
        return 0

    cdef int assigned_c(self, int64_t m, const int64_t* added, Py_ssize_t n) except -1:
        """`assigned`: a move for each added partition whose last owner was another member."""
        cdef Py_ssize_t i
        cdef int64_t p, prev, moved = 0
        for i in range(n):
            p = added[i]
            prev = self.last_owner[p]
            if prev != -1 and prev != m:
                moved += 1
            self.last_owner[p] = m
        self.partitions_moved = add(self.partitions_moved, moved)
        return 0

    cdef int add_paused_c(self, int64_t m, int64_t ms) except -1:
        """`add_paused`: only a positive pause counts; a member's first one records it in
        `pause_order` (the reference's dict gains its key then)."""
        cdef bint first
        if ms > 0:
            self.ensure_member(m)
            first = self.paused_ms[m] == 0
            self.member_paused_ms = add(self.member_paused_ms, ms)
            self.paused_ms[m] = add(self.paused_ms[m], ms)
            if first:  # after the checked additions: a refused one records nobody
                self.pause_order.append(m)
        return 0

    cdef int processed_c(self, int64_t done, int64_t dup) except -1:
        """A finished batch: `w.duplicates += dup`, `w.processed += done`."""
        self.duplicates = add(self.duplicates, dup)
        self.processed = add(self.processed, done)
        return 0

    cdef void lag_sample_c(self, int64_t lag) noexcept:
        if lag > self.lag_max:
            self.lag_max = lag

    cdef int finish_c(self, int64_t end) except -1:
        """`Simulation.run`'s end: the partitions nobody processes count as unavailable until end."""
        cdef Py_ssize_t p
        for p in range(self.partitions):
            if self.avail_owner[p] == -1:
                self.unavailable_ms = add(self.unavailable_ms, sub64(end, self.unavail_since[p]))
        return 0

    # ------------------------------------------------ Python-level twins (tests, the summary)

    cdef list _indices(self, ps):
        out = list(ps)
        for p in out:
            self.check(p)
        return out

    def _call(self, ps, int kind, int64_t now, int64_t m):
        cdef list lst = self._indices(ps)
        cdef Py_ssize_t i, n = len(lst)
        cdef int64_t* buf
        if not 0 <= now < LIMIT:
            raise OverflowError(f"time {now} outside [0, 2**61)")
        buf = _grow(NULL, n + 1)
        try:
            for i in range(n):
                buf[i] = lst[i]
            if kind == 0:
                self.set_available_c(buf, n, now, m)
            elif kind == 1:
                self.set_unavailable_c(buf, n, now)
            elif kind == 2:
                self.revoke_c(buf, n, now)
            else:
                self.assigned_c(m, buf, n)
        finally:
            free(buf)

    def set_available_many(self, ps, now, member):
        self.ensure_member(member)
        self._call(ps, 0, now, member)

    def set_unavailable_many(self, ps, now):
        self._call(ps, 1, now, -1)

    def revoke(self, ps, now):
        self._call(ps, 2, now, -1)

    def lose(self, ps, now):
        self._call(ps, 1, now, -1)

    def assigned(self, member, added):
        self.ensure_member(member)
        self._call(added, 3, 0, member)

    def add_paused(self, member, ms):
        self.add_paused_c(member, ms)

    def add_processed(self, done, dup):
        self.processed_c(done, dup)

    def lag_sample(self, lag):
        self.lag_sample_c(lag)

    def finish(self, end):
        if not 0 <= end < LIMIT:  # as every other time here (review 8 F5: it wrapped)
            raise OverflowError(f"time {end} outside [0, 2**61)")
        self.finish_c(end)

    def on_generation(self, generation, now):
        """`on_generation`: a rebalance completed; the timeline row takes the pending cause."""
        self.generation = generation
        self.rebalances = add(self.rebalances, 1)
        self.timeline.append({"ts_ms": now, "generation": generation, "cause": self.pending_cause})

    def paused_by_member(self):
        """{member index: paused ms} for members that paused, in the order they first paused (the
        reference's `paused_by_member`, a dict in insertion order)."""
        cdef int64_t m
        return {m: self.paused_ms[m] for m in self.pause_order}

    def owners(self):
        """(last_owner, avail_owner, unavail_since) as lists, -1 for None."""
        cdef Py_ssize_t p
        return (
            [self.last_owner[p] for p in range(self.partitions)],
            [self.avail_owner[p] for p in range(self.partitions)],
            [self.unavail_since[p] for p in range(self.partitions)],
        )


cdef class Network:
    """`WorldCore._arrival`: when a message sent now arrives, base latency plus the seeded jitter (or
    a measured sample), never before an earlier one on the same connection and direction. A
    connection is (member, incarnation): the current incarnation's last arrivals live in arrays by
    member, an older incarnation's (a failed commit answered after a restart) in a dict."""

    def __cinit__(self, rand, int64_t latency, int64_t jitter, samples=()):
        """`rand`: the world's `rng.random` (drawn in the reference's order, so the same stream)."""
        if not 0 <= latency < LIMIT or not 0 <= jitter < LIMIT:
            raise OverflowError("latency or jitter outside [0, 2**61)")
        for s in samples:
            if not 0 <= s < LIMIT:
                raise OverflowError(f"latency sample {s} outside [0, 2**61)")
        self.rand = rand
        self.latency = latency
        self.jitter1 = jitter + 1 if jitter else 0
        self.samples = tuple(samples)
        self.older = {}

    def __dealloc__(self):
        free(self.incarnation)
        free(self.last_up)
        free(self.last_down)

    cdef int ensure_member(self, int64_t m) except -1:
        cdef Py_ssize_t i, cap
        if m < 0:
            raise IndexError(f"member {m}")
        if m >= self.cap:
            cap = m + 1 if m + 1 > 2 * self.cap else 2 * self.cap
            self.incarnation = _grow(self.incarnation, cap)
            self.last_up = _grow(self.last_up, cap)
            self.last_down = _grow(self.last_down, cap)
            self.cap = cap
        for i in range(self.members, m + 1):
            self.incarnation[i] = NONE
            self.last_up[i] = NONE
            self.last_down[i] = NONE
        if m >= self.members:
            self.members = m + 1
        return 0

    cdef int64_t arrival_c(self, int64_t m, int64_t inc, bint up, int64_t now) except? -1:
        """When a message sent now on member m's connection of incarnation `inc` arrives (`up`: to
        the coordinator, else to the member)."""
        cdef int64_t t, last, cur = self.incarnation[m]
        cdef int64_t* slot
        if self.samples:
            t = now + self.samples[<Py_ssize_t>(<double>self.rand() * <double>len(self.samples))]
        else:
            t = now + self.latency
            if self.jitter1:
                t += <int64_t>(<double>self.rand() * <double>self.jitter1)
        if inc != cur:
            if cur != NONE and inc > cur:  # a new connection: keep the old one's arrivals
                self.older[(m, cur, True)] = self.last_up[m]
                self.older[(m, cur, False)] = self.last_down[m]
            if cur == NONE or inc > cur:
                self.incarnation[m] = inc
                self.last_up[m] = NONE
                self.last_down[m] = NONE
            else:  # an older incarnation's connection
                key = (m, inc, up)
                last = self.older.get(key, NONE)
                if last != NONE and t < last:
                    t = last
                self.older[key] = t
                return t
        slot = &self.last_up[m] if up else &self.last_down[m]
        if slot[0] != NONE and t < slot[0]:
            t = slot[0]
        slot[0] = t
        return t

    def arrival(self, member, incarnation, up, now):
        if not 0 <= now < LIMIT or not 0 <= incarnation < LIMIT:
            raise OverflowError("time or incarnation outside [0, 2**61)")
        self.ensure_member(member)
        return self.arrival_c(member, incarnation, up, now)
