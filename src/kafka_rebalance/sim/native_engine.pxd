# The event loop's C-level API (native_engine.pyx), for the native world's modules that cimport it:
# `at_c` queues a `Handler`'s event as (kind, a, payload) with no bound method and no args tuple,
# in the same sequence as `at` (one sequence number each).
from libc.stdint cimport int64_t


cdef struct Entry:
    int64_t t
    int64_t seq
    Py_ssize_t slot  # where its callback and args are (EventLoop._fns, _args)


cdef class Handler:
    """What a C-level event calls: `fire(kind, a, payload)` (a vtable call)."""
    cdef int fire(self, int kind, int64_t a, object payload) except -1


cdef class EventLoop:
    cdef Entry* _heap
    cdef Py_ssize_t _n
    cdef Py_ssize_t _cap
    cdef list _fns  # by slot: the callback of a queued event (None: a free slot), or its Handler
    cdef list _args  # by slot: its args tuple, or a Handler event's payload
    cdef int* _kind  # by slot: 0 for a callback, else the Handler event's kind
    cdef int64_t* _a  # by slot: a Handler event's int
    cdef Py_ssize_t _slot_cap
    cdef Py_ssize_t* _free  # free slots
    cdef Py_ssize_t _nfree
    cdef Py_ssize_t _free_cap
    cdef int64_t _now
    cdef object _now_obj
    cdef bint _now_far  # the clock is past 64 bits: every event goes to _far
    cdef list _far  # heap of (time, sequence, slot): the events past 64 bits
    cdef int64_t _seq
    cdef dict _timers  # key -> [deadline, payload, callback, version], as the reference
    cdef public object processed
    cdef public bint _stopped

    cdef Py_ssize_t _push(self, object t, object fn, object args) except -1
    cdef Py_ssize_t _push_near(self, int64_t ti, object fn, object args) except -1
    cdef Py_ssize_t _slot_for(self, object fn, object args) except -1
    cdef Entry _pop(self) noexcept
    cdef int _release(self, Py_ssize_t slot) except -1
    cdef int _call(self, Py_ssize_t slot) except -1
    cdef int at_c(self, int64_t t, Handler h, int kind, int64_t a, object payload) except -1
    cdef int after_c(self, int64_t delay, Handler h, int kind, int64_t a, object payload) except -1
    cdef int64_t now_c(self) noexcept
    cdef int set_timer_c(self, object key, object deadline, object callback, object payload) except -1
    cdef int cancel_timer_c(self, object key) except -1
