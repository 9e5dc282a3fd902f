# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The simulator's event loop on a C heap: `sim/engine.py`'s `EventLoop`, built with Cython.

The Python `engine.py` is the reference (and its mypyc build the second choice); this runs the same
schedules in the same order (tests/test_sim_native_engine.py, and every fingerprint scenario run on
it). Where the reference keeps an int key per event in a `heapq` list and `(callback, args)` in a
dict under that key, this keeps one C struct per queued event, (time, sequence, slot), in a binary
heap ordered by (time, sequence), and the callback and its args in two lists at that slot (slots are
reused): an event costs no dict entry, no key object and no `(fn, args)` tuple, and the heap's entries
are contiguous (docs/sim-native.md, milestone 1). The callbacks stay in Python lists so the cyclic GC
sees them: a world whose queued events refer back to it (every run ends with some) is collected.

The order is the reference's exactly: events run by time, then by the order they were scheduled
(one sequence number per `at`/`after`, and per timer (re)queue, as there); a heap pops unique keys
in sorted order whatever its shape. The clock is a Python int read by the callers (`loop.now`),
kept as the object set at each event, as the reference keeps it. Times must be ints (the reference's
key arithmetic refuses anything else: so does this; a time in the past is first clamped to now, as
there). A time beyond 64 bits (a scenario may say `down_ms: 9223372036854775807` at now > 0) waits in
a small Python heap of (time, sequence, slot) beside the C one: it is later than every time the C heap
can hold, so it runs only once the C heap is empty, and from then on the clock is past 64 bits and
every event goes there (review 7 F2).

The native world's modules queue their own events through the C-level API (native_engine.pxd):
`at_c(t, handler, kind, a, payload)` keeps the handler in the callbacks' list, `payload` in the args'
list and (kind, a) in C arrays at the slot, and the loop runs `handler.fire(kind, a, payload)`: no
bound method and no args tuple per event. It takes a sequence number as `at` does, so the order is
the same as with the `at` call it replaces.
"""

import heapq

from libc.stdint cimport INT64_MAX, INT64_MIN, int64_t
from libc.stdlib cimport free, realloc

cdef extern from "Python.h":
    bint PyLong_CheckExact(object o)
    long long PyLong_AsLongLongAndOverflow(object o, int* overflow) except? -1


# the reference's limit on sequence numbers (2**32 scheduled events): kept, so both refuse alike
cdef int64_t SEQ_LIMIT = 4294967296


cdef inline bint _before(Entry* a, Entry* b) noexcept nogil:
    return a.t < b.t or (a.t == b.t and a.seq < b.seq)


cdef inline void _sift_up(Entry* heap, Py_ssize_t i, Entry e) noexcept:
    """Put `e` in the hole at `i`, moving it up past the parents it comes before (a push's new
    entry, or `_pop`'s last entry from the leaf Floyd's sift-down left open)."""
    cdef Py_ssize_t parent
    while i > 0:
        parent = (i - 1) >> 1
        if _before(&e, &heap[parent]):
            heap[i] = heap[parent]
            i = parent
        else:
            break
    heap[i] = e


cdef class Handler:
    """The receiver of C-level events (a native world, member or coordinator extends it)."""

    cdef int fire(self, int kind, int64_t a, object payload) except -1:
        raise NotImplementedError(f"{type(self).__name__} has no event kind {kind}")


cdef class EventLoop:
    def __cinit__(self):
        self._heap = NULL
        self._n = 0
        self._cap = 0
        self._free = NULL
        self._nfree = 0
        self._free_cap = 0
        self._kind = NULL
        self._a = NULL
        self._slot_cap = 0
        self._fns = []
        self._args = []
        self._far = []
        self._now_far = False

    def __init__(self):
        self._now = 0
        self._now_obj = 0
        self._seq = 0
        self._timers = {}
        self.processed = 0
        self._stopped = False

    def __dealloc__(self):
        free(self._heap)
        free(self._free)
        free(self._kind)
        free(self._a)
        self._heap = NULL
        self._free = NULL
        self._kind = NULL
        self._a = NULL
        self._n = 0

    @property
    def now(self):
        return self._now_obj

    @now.setter
    def now(self, value):
        cdef int ovf = 0
        self._now = _as_time(value, &ovf)
        self._now_far = ovf > 0
        self._now_obj = value

    # ------------------------------------------------------------- scheduling

    cdef Py_ssize_t _push(self, object t, object fn, object args) except -1:
        """Queue fn(*args) at t (kind 0 at its slot); returns the slot."""
        cdef int64_t ti
        cdef int64_t seq
        cdef int ovf = 0
        cdef Py_ssize_t slot
        if PyLong_CheckExact(t):
            ti = PyLong_AsLongLongAndOverflow(t, &ovf)
        elif t < self._now_obj:  # the reference clamps before its key arithmetic sees the type
            t = self._now_obj
            ti = self._now
            ovf = 1 if self._now_far else 0
        else:
            ti = _as_time(t, &ovf)  # refuses a time that is not an int
        if ovf < 0:  # before every 64-bit time, so before now
            ti = self._now
            t = self._now_obj
            ovf = 1 if self._now_far else 0
        if not (ovf > 0 or self._now_far):
            return self._push_near(ti, fn, args)
        seq = self._seq + 1
        if seq >= SEQ_LIMIT:
            raise OverflowError("the simulation scheduled 2**32 events: the event keys are full")
        slot = self._slot_for(fn, args)
        self._seq = seq
        if t < self._now_obj:
            t = self._now_obj
        heapq.heappush(self._far, (t, seq, slot))
        return slot

    cdef Py_ssize_t _push_near(self, int64_t ti, object fn, object args) except -1:
        """`_push` of a 64-bit time while the clock is within 64 bits (clamped to now): the C heap."""
        cdef int64_t seq
        cdef Entry* grown
        cdef Py_ssize_t i, slot
        cdef Entry e
        if ti < self._now:
            ti = self._now
        seq = self._seq + 1
        if seq >= SEQ_LIMIT:
            raise OverflowError("the simulation scheduled 2**32 events: the event keys are full")
        if self._n == self._cap:
            grown = <Entry*>realloc(self._heap, (self._cap * 2 + 64) * sizeof(Entry))
            if grown == NULL:
                raise MemoryError()
            self._heap = grown
            self._cap = self._cap * 2 + 64
        slot = self._slot_for(fn, args)
        self._seq = seq
        e.t = ti
        e.seq = seq
        e.slot = slot
        i = self._n
        self._n += 1
        _sift_up(self._heap, i, e)
        return slot

    cdef Py_ssize_t _slot_for(self, object fn, object args) except -1:
        """A free slot holding fn and args (kind 0); `_free` keeps room for every slot."""
        cdef Py_ssize_t* grown_free
        cdef int* grown_kind
        cdef int64_t* grown_a
        cdef Py_ssize_t slot
        if self._nfree:
            self._nfree -= 1
            slot = self._free[self._nfree]
            self._fns[slot] = fn
            self._args[slot] = args
        else:
            if self._free_cap < len(self._fns) + 1:  # room to free every slot later
                grown_free = <Py_ssize_t*>realloc(
                    self._free, (self._free_cap * 2 + 64) * sizeof(Py_ssize_t)
                )
                if grown_free == NULL:
                    raise MemoryError()
                self._free = grown_free
                self._free_cap = self._free_cap * 2 + 64
            slot = len(self._fns)
            if slot == self._slot_cap:
                grown_kind = <int*>realloc(self._kind, (self._slot_cap * 2 + 64) * sizeof(int))
                if grown_kind == NULL:
                    raise MemoryError()
                self._kind = grown_kind
                grown_a = <int64_t*>realloc(self._a, (self._slot_cap * 2 + 64) * sizeof(int64_t))
                if grown_a == NULL:
                    raise MemoryError()
                self._a = grown_a
                self._slot_cap = self._slot_cap * 2 + 64
            self._fns.append(fn)
            self._args.append(args)
        self._kind[slot] = 0
        return slot

    cdef int at_c(self, int64_t t, Handler h, int kind, int64_t a, object payload) except -1:
        """`at(t, ...)` for a Handler's event: h.fire(kind, a, payload) at t (kind > 0)."""
        cdef Py_ssize_t slot
        if self._now_far:
            slot = self._push(t, h, payload)
        else:  # no int object made for t
            slot = self._push_near(t, h, payload)
        self._kind[slot] = kind
        self._a[slot] = a
        return 0

    cdef int after_c(self, int64_t delay, Handler h, int kind, int64_t a, object payload) except -1:
        """`after(delay, ...)` for a Handler's event (the reference's `now + delay`)."""
        cdef Py_ssize_t slot = self._push(self._now_obj + delay, h, payload)
        self._kind[slot] = kind
        self._a[slot] = a
        return 0

    cdef int64_t now_c(self) noexcept:
        """The clock (saturated at INT64_MAX past 64 bits; the native world's times stay below)."""
        return self._now

    cdef Entry _pop(self) noexcept:
        cdef Entry top = self._heap[0]
        cdef Entry last
        cdef Py_ssize_t n, i, child
        self._n -= 1
        n = self._n
        if n > 0:
            # Floyd's sift-down: the hole goes down to a leaf along the earlier children (one
            # comparison a level), then the last entry, usually one of the latest, sifts up from there
            # (the heap's keys are unique, so it pops the same order whatever its shape)
            last = self._heap[n]
            i = 0
            while True:
                child = 2 * i + 1
                if child >= n:
                    break
                if child + 1 < n and _before(&self._heap[child + 1], &self._heap[child]):
                    child += 1
                self._heap[i] = self._heap[child]
                i = child
            _sift_up(self._heap, i, last)
        return top

    cdef int _call(self, Py_ssize_t slot) except -1:
        """Release the slot, then run its event (the callback, or the Handler's fire)."""
        cdef object fn = self._fns[slot]
        cdef object args = self._args[slot]
        cdef int kind = self._kind[slot]
        cdef int64_t a = self._a[slot]
        self._release(slot)
        if kind:
            (<Handler>fn).fire(kind, a, args)
        else:
            fn(*args)
        return 0

    cdef int _release(self, Py_ssize_t slot) except -1:
        """A popped event's slot, free again: its callback and args dropped (before the callback
        runs, as the reference pops its entry first), the slot on the free list (`_push` keeps
        room for every slot there)."""
        self._fns[slot] = None
        self._args[slot] = None
        self._free[self._nfree] = slot
        self._nfree += 1
        return 0

    def at(self, t, fn, *args):
        """Run fn(*args) at time t (never before now)."""
        self._push(t, fn, args)

    def after(self, delay, fn, *args):
        """Run fn(*args) `delay` from now (never before now)."""
        self._push(self._now_obj + delay, fn, args)

    # ---------------------------------------------------------- keyed timers

    def set_timer(self, key, deadline, callback, payload=None):
        """(Re)arm the timer `key`; callback(key, payload) runs at the deadline unless re-armed or cancelled."""
        self.set_timer_c(key, deadline, callback, payload)

    cdef int set_timer_c(self, object key, object deadline, object callback, object payload) except -1:
        """`set_timer` as a C call (the native coordinator arms a session timer per join, sync and
        heartbeat)."""
        cdef list entry = self._timers.get(key)
        cdef object version
        if entry is not None and entry[0] <= deadline and entry[3] >= 0:
            # moving later: keep the queued heap entry, it will re-queue itself when it pops
            entry[0] = deadline
            entry[1] = payload
            entry[2] = callback
            return 0
        version = (entry[3] + 1) if entry is not None and entry[3] >= 0 else 0
        self._timers[key] = [deadline, payload, callback, version]
        self._push(deadline, self._fire, (key, version))
        return 0

    def cancel_timer(self, key):
        self._timers.pop(key, None)

    cdef int cancel_timer_c(self, object key) except -1:
        """`cancel_timer` as a C call."""
        self._timers.pop(key, None)
        return 0

    def timer_deadline(self, key):
        e = self._timers.get(key)
        return None if e is None else e[0]

    def _fire(self, key, version):
        cdef list entry = self._timers.get(key)
        if entry is None or entry[3] != version:
            return
        if entry[0] > self._now_obj:  # deadline was moved later
            self._push(entry[0], self._fire, (key, version))
            return
        del self._timers[key]
        entry[2](key, entry[1])

    # ------------------------------------------------------------------ running

    def stop(self):
        self._stopped = True

    def run_until(self, end, progress=None):
        cdef int ovf = 0
        cdef int64_t end_i = _as_time(end, &ovf)
        cdef int64_t n = 0
        cdef Py_ssize_t slot
        cdef Entry e
        cdef object t_obj
        # as the reference: an exception from an event leaves `processed` as it was
        while self._n and not self._stopped:
            if self._heap[0].t > end_i:
                break
            e = self._pop()
            if e.t != self._now:
                self._now = e.t
                self._now_obj = e.t
                self._now_far = False
            self._call(e.slot)
            n += 1
            if progress is not None and not (n & 0x3FFF):
                progress(self._now_obj)
        # the events past 64 bits: only after every C-heap event, only when `end` is past 64 bits too
        while ovf > 0 and self._far and not self._stopped and not self._n:
            if self._far[0][0] > end:
                break
            t_obj, _, slot = heapq.heappop(self._far)
            self._now_obj = t_obj
            self._now = INT64_MAX
            self._now_far = True
            self._call(slot)
            n += 1
            if progress is not None and not (n & 0x3FFF):
                progress(self._now_obj)
        self.processed += n
        if not self._stopped and end > self._now_obj:
            self._now_obj = end
            self._now = end_i
            self._now_far = ovf > 0


cdef inline int64_t _as_time(object t, int* ovf) except? -1:
    """`t` in 64 bits, saturated: *ovf is 1 past them (INT64_MAX), -1 below (INT64_MIN), else 0.
    A time that is not an int is refused."""
    cdef int64_t v
    if not PyLong_CheckExact(t):
        if not isinstance(t, int):
            raise TypeError(f"event times are ints (milliseconds), not {type(t).__name__}")
        t = int(t)
    v = PyLong_AsLongLongAndOverflow(t, ovf)
    if ovf[0] > 0:
        return INT64_MAX
    if ovf[0] < 0:
        return INT64_MIN
    return v
