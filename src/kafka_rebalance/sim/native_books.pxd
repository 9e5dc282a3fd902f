# The C-level API of native_books.pyx (see its docstring), for the native world that cimports it.
from libc.stdint cimport int64_t


cdef class Books:
    cdef int64_t* last_owner
    cdef int64_t* avail_owner
    cdef int64_t* unavail_since
    cdef int64_t* paused_ms
    cdef Py_ssize_t partitions, members, member_cap
    cdef public int64_t unavailable_ms, member_paused_ms, partitions_moved, revocations
    cdef public int64_t duplicates, processed, lag_max, rebalances, generation
    cdef readonly list timeline
    cdef readonly list pause_order  # member indices in the order of their first positive pause
    cdef public str pending_cause

    cdef int ensure_member(self, int64_t m) except -1
    cdef int check(self, int64_t p) except -1
    cdef int set_available_c(self, const int64_t* ps, Py_ssize_t n, int64_t now, int64_t m) except -1
    cdef void set_unavailable_c(self, const int64_t* ps, Py_ssize_t n, int64_t now) noexcept
    cdef int revoke_c(self, const int64_t* ps, Py_ssize_t n, int64_t now) except -1
    cdef int assigned_c(self, int64_t m, const int64_t* added, Py_ssize_t n) except -1
    cdef int add_paused_c(self, int64_t m, int64_t ms) except -1
    cdef int processed_c(self, int64_t done, int64_t dup) except -1
    cdef void lag_sample_c(self, int64_t lag) noexcept
    cdef int finish_c(self, int64_t end) except -1
    cdef list _indices(self, ps)


cdef class Network:
    cdef int64_t latency, jitter1
    cdef tuple samples
    cdef object rand
    cdef int64_t* incarnation
    cdef int64_t* last_up
    cdef int64_t* last_down
    cdef Py_ssize_t members, cap
    cdef dict older

    cdef int ensure_member(self, int64_t m) except -1
    cdef int64_t arrival_c(self, int64_t m, int64_t inc, bint up, int64_t now) except? -1
