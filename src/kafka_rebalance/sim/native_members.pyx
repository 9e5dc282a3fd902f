# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The member side of the native classic core (docs/sim-native.md, "Data layout"): the partition
table's columns, the processed intervals, one member's owned partitions and the poll's kernels over
them, and the poll's busy time, as C data twinning the reference exactly.

The reference is `sim/partitions.py` (`PartitionTable`, `ProcessedOffsets`), `sim/poll_kernels.py`
and `SimMember._busy_for` (`sim/member.py`); tests/test_sim_native_members.py compares each with it
over random inputs. Not used by any run yet: the native world (M2) will call the `cdef` methods; the
Python-level methods are for the tests and the benchmark.

The reference computes with unbounded ints; C with int64. `PartitionColumns` checks once, at
construction, that every intermediate of the log-end arithmetic fits int64 for all times up to the
run's `horizon` and all positions up to `position_limit`, and refuses (OverflowError) otherwise; the
Python-level setters refuse values outside those bounds. Floor division (Python's `//`, numpy's on
int64) is `floordiv`, never C's truncating `/`: a position below a partition's base makes a
negative dividend. The poll's batch times (doubles) are `native_batch_time`.
"""

from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from libc.stdint cimport INT64_MAX, INT64_MIN, int64_t, uint64_t
from libc.string cimport memmove

from ..fields import INT64_MAX as _INT64_MAX
from .partitions import ProcessedOffsets

NEVER = 1 << 62  # poll_kernels.NEVER: no record will ever land
ABSENT = INT64_MIN  # a slot's position or sent offset that the reference's dict does not hold
TIME_LIMIT = 1 << 53  # times and batch sizes stay exact in a double (member.py's `float(now)`)
cdef int64_t C_NEVER = 1 << 62
cdef int64_t C_ABSENT = INT64_MIN


cdef int64_t* _grow(int64_t* data, Py_ssize_t cap) except NULL:
    cdef int64_t* out = <int64_t*>PyMem_Realloc(data, cap * sizeof(int64_t))
    if out == NULL:
        raise MemoryError()
    return out


def _check_range(base, base_t, num, den, committed, horizon):
    """The largest position any run up to `horizon` can reach, computed with Python ints; raises
    OverflowError when some intermediate of the kernels' arithmetic could leave int64."""
    limit = _INT64_MAX
    if not 0 <= horizon <= TIME_LIMIT:
        raise OverflowError(f"horizon {horizon} outside [0, 2**53]")
    reach = 0
    for b, bt, nu, d in zip(base, base_t, num, den):
        if nu < 0 or d < 1:
            raise OverflowError(f"rate {nu}/{d}: a log end offset must not decrease")
        # the log end offset b + num * (now - base_t) // den: its product first, then the offset
        product = nu * (horizon + abs(bt))
        if product > limit:
            raise OverflowError(f"partition arithmetic reaches {product} > int64")
        reach = max(reach, abs(b) + product // d + 1)
    position_limit = max(reach, max(committed)) if committed else reach
    for b, bt, nu, d in zip(base, base_t, num, den):
        # (end - base) * den + num - 1 (fetch), (pos + 1 - base) * den (next_arrival), base_t + both;
        # end and pos are at most position_limit
        worst = (2 * abs(b) + position_limit + 2) * d + nu + abs(bt) + horizon
        if worst > limit:
            raise OverflowError(f"partition arithmetic reaches {worst} > int64")
    if any(c < 0 for c in committed):
        raise OverflowError("a committed offset below 0")
    return position_limit


cdef class PartitionColumns:
    """`PartitionTable`'s columns base, base_t, num, den, committed as int64 arrays; the log end
    offset of p at t is base[p] + (num[p] * (t - base_t[p])) // den[p]."""

    def __cinit__(self, base, base_t, num, den, committed, horizon):
        cdef Py_ssize_t i, n = len(base)
        if not (len(base_t) == len(num) == len(den) == len(committed) == n):
            raise ValueError("columns of different lengths")
        self.position_limit = _check_range(base, base_t, num, den, committed, horizon)
        self.horizon = horizon
        self.n = n
        self.base = _grow(NULL, n + 1)
        self.base_t = _grow(NULL, n + 1)
        self.num = _grow(NULL, n + 1)
        self.den = _grow(NULL, n + 1)
        self.committed = _grow(NULL, n + 1)
        for i in range(n):
            self.base[i] = base[i]
            self.base_t[i] = base_t[i]
            self.num[i] = num[i]
            self.den[i] = den[i]
            self.committed[i] = committed[i]

    @staticmethod
    def from_table(table, horizon):
        """The columns of a `partitions.PartitionTable` as they are now."""
        return PartitionColumns(
            table.base, table.base_t, table.num, table.den, table.committed, horizon
        )

    def __dealloc__(self):
        PyMem_Free(self.base)
        PyMem_Free(self.base_t)
        PyMem_Free(self.num)
        PyMem_Free(self.den)
        PyMem_Free(self.committed)

    def __len__(self):
        return self.n

    cdef int64_t leo_c(self, Py_ssize_t p, int64_t now) noexcept nogil:
        return self.base[p] + floordiv(self.num[p] * (now - self.base_t[p]), self.den[p])

    cdef int64_t total_lag_c(self, int64_t now) noexcept nogil:
        """numpy's int64 sum of max(leo - committed, 0): wraps as numpy does (the reference's
        `PartitionTable.total_lag` is that sum)."""
        cdef uint64_t total = 0
        cdef int64_t lag
        cdef Py_ssize_t p
        for p in range(self.n):
            lag = self.leo_c(p, now) - self.committed[p]
            if lag > 0:
                total += <uint64_t>lag
        return <int64_t>total

    cdef int check_partition(self, object p) except -1:
        if not 0 <= p < self.n:
            raise IndexError(f"partition {p} outside 0..{self.n - 1}")
        return 0

    cdef int check_time(self, object now) except -1:
        if not 0 <= now <= self.horizon:
            raise OverflowError(f"time {now} outside [0, {self.horizon}]")
        return 0

    cdef int check_offset(self, object offset) except -1:
        if not 0 <= offset <= self.position_limit:
            raise OverflowError(f"offset {offset} outside [0, {self.position_limit}]")
        return 0

    def leo(self, p, now):
        self.check_partition(p)
        self.check_time(now)
        return self.leo_c(p, now)

    cdef int64_t produced_c(self, int64_t now) noexcept nogil:
        """The summary's `produced`: numpy's int64 sum of every log end offset (wrapping as it)."""
        cdef uint64_t total = 0
        cdef Py_ssize_t p
        for p in range(self.n):
            total += <uint64_t>self.leo_c(p, now)
        return <int64_t>total

    def produced(self, now):
        self.check_time(now)
        return self.produced_c(now)

    def total_lag(self, now):
        self.check_time(now)
        return self.total_lag_c(now)

    def committed_at(self, p):
        self.check_partition(p)
        return self.committed[p]

    def set_committed(self, p, offset):
        """One stored commit (`poll_kernels.store_commits`' column write)."""
        self.check_partition(p)
        self.check_offset(offset)
        self.committed[p] = offset

    def column(self, name):
        """One column as a list (the tests compare it with the table's)."""
        cdef int64_t* data
        cdef Py_ssize_t i
        if name == "base":
            data = self.base
        elif name == "base_t":
            data = self.base_t
        elif name == "num":
            data = self.num
        elif name == "den":
            data = self.den
        elif name == "committed":
            data = self.committed
        else:
            raise KeyError(name)
        return [data[i] for i in range(self.n)]


cdef class Triples:
    """int64 triples in one buffer: the batch in flight's (partition, from, to) in fetch order, or a
    commit's changed positions as (partition, position, slot) in owned order."""

    def __dealloc__(self):
        PyMem_Free(self.data)

    def __len__(self):
        return self.n

    cdef int append(self, int64_t p, int64_t a, int64_t b) except -1:
        if self.n == self.cap:
            self.cap = self.cap * 2 if self.cap else 8
            self.data = _grow(self.data, 3 * self.cap)
        self.data[3 * self.n] = p
        self.data[3 * self.n + 1] = a
        self.data[3 * self.n + 2] = b
        self.n += 1
        return 0

    def clear(self):
        self.n = 0

    def extend(self, triples):
        for p, a, b in triples:
            self.append(p, a, b)

    def triples(self):
        cdef Py_ssize_t i
        return [(self.data[3 * i], self.data[3 * i + 1], self.data[3 * i + 2]) for i in range(self.n)]


cdef class ProcessedTable:
    """`ProcessedOffsets` for every partition: sorted disjoint [start, end) pairs in a C vector
    per partition, with the reference's merge and duplicate count."""

    def __cinit__(self, Py_ssize_t partitions):
        cdef Py_ssize_t p
        self.n = partitions
        self.rows = <Intervals*>PyMem_Malloc((partitions + 1) * sizeof(Intervals))
        if self.rows == NULL:
            raise MemoryError()
        for p in range(partitions):
            self.rows[p].starts = NULL
            self.rows[p].ends = NULL
            self.rows[p].n = 0
            self.rows[p].cap = 0

    def __dealloc__(self):
        cdef Py_ssize_t p
        if self.rows != NULL:
            for p in range(self.n):
                PyMem_Free(self.rows[p].starts)
                PyMem_Free(self.rows[p].ends)
            PyMem_Free(self.rows)

    def __len__(self):
        return self.n

    cdef int reserve(self, Intervals* row, Py_ssize_t need) except -1:
        cdef Py_ssize_t cap
        if need <= row.cap:
            return 0
        cap = row.cap * 2 if row.cap else 4
        if cap < need:
            cap = need
        row.starts = _grow(row.starts, cap)
        row.ends = _grow(row.ends, cap)
        row.cap = cap
        return 0

    cdef int64_t add_c(self, Py_ssize_t p, int64_t a, int64_t b) except -1:
        """`ProcessedOffsets.add(a, b)` on partition p: how many of [a, b) were processed before."""
        cdef Intervals* row = &self.rows[p]
        cdef Py_ssize_t i, j, lo, hi, mid, n = row.n
        cdef int64_t dup = 0, new_s, new_e, x, y
        if b <= a:
            return 0
        if n == 0 or a > row.ends[n - 1]:
            self.reserve(row, n + 1)
            row.starts[n] = a
            row.ends[n] = b
            row.n = n + 1
            return 0
        if a == row.ends[n - 1]:
            row.ends[n - 1] = b
            return 0
        lo, hi = 0, n  # bisect_right(ends, a - 1): the first interval with end >= a
        while lo < hi:
            mid = (lo + hi) // 2
            if a - 1 < row.ends[mid]:
                hi = mid
            else:
                lo = mid + 1
        i = lo
        if i == n or row.starts[i] > b:
            self.reserve(row, n + 1)
            memmove(&row.starts[i + 1], &row.starts[i], (n - i) * sizeof(int64_t))
            memmove(&row.ends[i + 1], &row.ends[i], (n - i) * sizeof(int64_t))
            row.starts[i] = a
            row.ends[i] = b
            row.n = n + 1
            return 0
        j = i
        new_s = a if a < row.starts[i] else row.starts[i]
        new_e = b
        while j < n and row.starts[j] <= b:
            x = b if b < row.ends[j] else row.ends[j]
            y = a if a > row.starts[j] else row.starts[j]
            if x - y > 0:
                dup += x - y
            if row.ends[j] > new_e:
                new_e = row.ends[j]
            j += 1
        row.starts[i] = new_s
        row.ends[i] = new_e
        memmove(&row.starts[i + 1], &row.starts[j], (n - j) * sizeof(int64_t))
        memmove(&row.ends[i + 1], &row.ends[j], (n - j) * sizeof(int64_t))
        row.n = n - (j - i - 1)
        return dup

    cdef int64_t covered_below_c(self, Py_ssize_t p, int64_t limit) noexcept:
        """`ProcessedOffsets.covered_below`: how many distinct offsets < limit were processed."""
        cdef Intervals* row = &self.rows[p]
        cdef Py_ssize_t i
        cdef int64_t c = 0
        for i in range(row.n):
            if row.starts[i] >= limit:
                break
            c += (row.ends[i] if row.ends[i] < limit else limit) - row.starts[i]
        return c

    cdef int64_t finish_c(self, Triples batch) except -1:
        """`poll_kernels.finish`: every (partition, from, to) of the batch recorded as processed;
        how many of those offsets had been processed before."""
        cdef Py_ssize_t i, p
        cdef int64_t dup = 0, a, b
        cdef Intervals* row
        for i in range(batch.n):
            p = batch.data[3 * i]
            a = batch.data[3 * i + 1]
            b = batch.data[3 * i + 2]
            row = &self.rows[p]
            if row.n and row.ends[row.n - 1] == a:  # continuing where processing stopped
                row.ends[row.n - 1] = b
            else:
                dup += self.add_c(p, a, b)
        return dup

    cdef int check(self, object p, object a, object b) except -1:
        if not 0 <= p < self.n:
            raise IndexError(f"partition {p} outside 0..{self.n - 1}")
        for v in (a, b):
            if not 0 <= v < (1 << 62):
                raise OverflowError(f"offset {v} outside [0, 2**62)")
        return 0

    def add(self, p, a, b):
        self.check(p, a, b)
        return self.add_c(p, a, b)

    cdef int64_t lost_c(self, PartitionColumns cols) except? -1:
        """The summary's `lost`: per partition, committed offsets never processed (an int64 sum,
        refused with OverflowError where the reference's int would leave int64)."""
        cdef Py_ssize_t p
        cdef int64_t c, lost = 0, gap
        for p in range(self.n):
            c = cols.committed[p]
            if c > 0:
                gap = c - self.covered_below_c(p, c)
                if lost > INT64_MAX - gap:
                    raise OverflowError("lost records leave int64")
                lost += gap
        return lost

    def lost(self, PartitionColumns cols):
        if cols.n != self.n:
            raise ValueError("columns of another table")
        return self.lost_c(cols)

    def covered_below(self, p, limit):
        self.check(p, limit, 0)
        return self.covered_below_c(p, limit)

    def finish(self, Triples batch):
        cdef Py_ssize_t i
        for i in range(batch.n):
            self.check(batch.data[3 * i], batch.data[3 * i + 1], batch.data[3 * i + 2])
        return self.finish_c(batch)

    def intervals(self, p):
        """([starts], [ends]) of partition p, as `ProcessedOffsets` holds them."""
        cdef Intervals* row
        cdef Py_ssize_t i
        self.check(p, 0, 0)
        row = &self.rows[p]
        return [row.starts[i] for i in range(row.n)], [row.ends[i] for i in range(row.n)]

    def to_reference(self, p):
        """Partition p's intervals as a `ProcessedOffsets` (for the summary's `covered_below`)."""
        out = ProcessedOffsets()
        out.starts, out.ends = self.intervals(p)
        return out


cdef class OwnedPartitions:
    """One member's owned partitions, in the reference's `owned` order, with each one's position
    and last sent offset in parallel arrays (ABSENT where the reference's `positions` /
    `sent_offsets` dict holds no key). `sent_offsets` may keep keys of partitions no longer owned,
    but the member reads them only for owned ones and overwrites them when a partition is added, so
    a slot per owned partition holds the same (docs/sim-native.md, "Owned partitions")."""

    def __cinit__(self, PartitionColumns cols):
        self.cols = cols

    def __dealloc__(self):
        PyMem_Free(self.owned)
        PyMem_Free(self.position)
        PyMem_Free(self.sent)

    def __len__(self):
        return self.k

    cdef int reserve(self, Py_ssize_t need) except -1:
        if need <= self.cap:
            return 0
        self.cap = need if need > 2 * self.cap else 2 * self.cap
        self.owned = _grow(self.owned, self.cap)
        self.position = _grow(self.position, self.cap)
        self.sent = _grow(self.sent, self.cap)
        return 0

    @property
    def owned(self):
        cdef Py_ssize_t i
        return [self.owned[i] for i in range(self.k)]

    def positions(self):
        """The reference's `positions` dict (owned order)."""
        cdef Py_ssize_t i
        return {self.owned[i]: self.position[i] for i in range(self.k) if self.position[i] != C_ABSENT}

    def sent_offsets(self):
        """The reference's `sent_offsets` restricted to the owned partitions."""
        cdef Py_ssize_t i
        return {self.owned[i]: self.sent[i] for i in range(self.k) if self.sent[i] != C_ABSENT}

    def clear(self):
        """`owned, positions = [], {}` (a death, a lost membership)."""
        self.k = 0

    def clear_sent(self):
        """`sent_offsets = {}` (a failed commit, a start)."""
        cdef Py_ssize_t i
        for i in range(self.k):
            self.sent[i] = C_ABSENT

    def remove(self, revoked):
        """Revoked partitions leave `owned` (order kept) and `positions`."""
        cdef Py_ssize_t i, kept = 0
        gone = set(revoked)
        for i in range(self.k):
            if self.owned[i] not in gone:
                self.owned[kept] = self.owned[i]
                self.position[kept] = self.position[i]
                self.sent[kept] = self.sent[i]
                kept += 1
        self.k = kept

    def complete_join(self, assigned, added):
        """`owned = assigned`; each added partition's position and sent offset = its committed
        offset (`_complete_join`); the others keep theirs."""
        cdef Py_ssize_t i, n = len(assigned)
        cdef int64_t p
        new = set(added)
        if len(set(assigned)) != n:
            raise ValueError("a partition assigned twice")
        old = {self.owned[i]: (self.position[i], self.sent[i]) for i in range(self.k)} if len(new) < n else {}
        for q in assigned:
            self.cols.check_partition(q)
        self.reserve(n)
        for i in range(n):
            p = assigned[i]
            self.owned[i] = p
            if p in new:
                self.position[i] = self.sent[i] = self.cols.committed[p]
            else:
                self.position[i], self.sent[i] = old.get(p, (C_ABSENT, C_ABSENT))
        self.k = n

    def mark_sent(self, offsets):
        """`sent_offsets.update(offsets)` for owned partitions."""
        cdef Py_ssize_t i
        for off in offsets.values():
            self.cols.check_offset(off)
        for i in range(self.k):
            if self.owned[i] in offsets:
                self.sent[i] = offsets[self.owned[i]]

    cdef int64_t fetch_c(self, Py_ssize_t start, int64_t now, int64_t room, Triples batch,
                         int64_t* last_out) except? -1:
        """`poll_kernels.fetch`: what arrived by `now`, from slot `start` round to `start - 1`, up to
        `room` records, into `batch`; the positions advance. Returns the room left; `last_out`: when
        the newest record taken reached the broker."""
        cdef PartitionColumns c = self.cols
        cdef Py_ssize_t i, j, k = self.k
        cdef int64_t p, pos, b, bt, nu, d, n, end, t, last = 0
        for j in range(k):
            i = start + j
            if i >= k:
                i -= k
            pos = self.position[i]
            if pos == C_ABSENT:
                continue
            p = self.owned[i]
            b = c.base[p]
            bt = c.base_t[p]
            nu = c.num[p]
            d = c.den[p]
            n = b + floordiv(nu * (now - bt), d) - pos
            if n <= 0:
                continue
            if n >= room:  # the budget runs out on this partition
                end = pos + room
                batch.append(p, pos, end)
                self.position[i] = end
                room = 0
                t = bt + (floordiv((end - b) * d + nu - 1, nu) if nu > 0 else 0)
                if t > last:
                    last = t
                break
            end = pos + n
            batch.append(p, pos, end)
            self.position[i] = end
            room -= n
            t = bt + (floordiv((end - b) * d + nu - 1, nu) if nu > 0 else 0)
            if t > last:
                last = t
        last_out[0] = last
        return room

    cdef int64_t next_arrival_c(self) noexcept:
        """`poll_kernels.next_arrival`: when the next record lands on an owned partition."""
        cdef PartitionColumns c = self.cols
        cdef Py_ssize_t i
        cdef int64_t p, nu, pos, need, t, best = C_NEVER
        for i in range(self.k):
            p = self.owned[i]
            nu = c.num[p]
            pos = self.position[i]
            if nu <= 0 or pos == C_ABSENT:
                continue
            need = (pos + 1 - c.base[p]) * c.den[p]
            t = c.base_t[p] + (floordiv(need + nu - 1, nu) if need > 0 else 0)
            if t < best:
                best = t
        return best

    cdef bint uncommitted_c(self) noexcept:
        """`poll_kernels.uncommitted`: has an owned partition a position not sent yet?"""
        cdef Py_ssize_t i
        for i in range(self.k):
            if self.sent[i] != self.position[i]:
                return True
        return False

    cdef int changed_c(self, Triples out) except -1:
        """`poll_kernels.changed_positions` into `out` as (partition, position, slot), owned order."""
        cdef Py_ssize_t i
        for i in range(self.k):
            if self.position[i] != C_ABSENT and self.sent[i] != self.position[i]:
                out.append(self.owned[i], self.position[i], i)
        return 0

    cdef void mark_sent_c(self, Triples changed) noexcept:
        """`sent_offsets.update(changed)` for what `changed_c` wrote."""
        cdef Py_ssize_t i
        for i in range(changed.n):
            self.sent[changed.data[3 * i + 2]] = changed.data[3 * i + 1]

    def fetch(self, poll_token, now, room, Triples batch):
        """`SimMember._fetch`'s kernel call, its start rotating with the poll token: (room left,
        last arrival); the records go into `batch`."""
        cdef int64_t last = 0
        cdef int64_t left
        self.cols.check_time(now)
        if not 0 <= poll_token < (1 << 59) or not 0 <= room < TIME_LIMIT:
            raise OverflowError("poll token or room out of range")
        if self.k == 0:
            return room, 0
        left = self.fetch_c((poll_token * 7) % self.k, now, room, batch, &last)
        return left, last

    def next_arrival(self):
        return self.next_arrival_c()

    def uncommitted(self):
        return self.uncommitted_c()

    def changed_positions(self):
        """The reference's dict of changed positions (owned order)."""
        cdef Triples out = Triples()
        self.changed_c(out)
        return {p: pos for p, pos, _ in out.triples()}

    def commit_changed(self):
        """The changed positions, marked as sent (`_commit_positions` when the commit goes out)."""
        cdef Triples out = Triples()
        self.changed_c(out)
        self.mark_sent_c(out)
        return {p: pos for p, pos, _ in out.triples()}
