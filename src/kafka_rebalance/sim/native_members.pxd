# The C-level API of native_members.pyx (see its docstring), for the native core's modules that
# cimport it (a build's stamp covers this file: native.cython_digest).
cimport cython
from libc.stdint cimport int64_t


cdef struct Intervals:
    int64_t* starts
    int64_t* ends
    Py_ssize_t n, cap


cdef inline int64_t floordiv(int64_t a, int64_t b) noexcept nogil:
    """Python's a // b for b > 0 (C's division truncates towards zero)."""
    cdef int64_t q = cython.cdiv(a, b)
    if q * b != a and a < 0:
        q -= 1
    return q


cdef class PartitionColumns:
    cdef int64_t* base
    cdef int64_t* base_t
    cdef int64_t* num
    cdef int64_t* den
    cdef int64_t* committed
    cdef Py_ssize_t n
    cdef readonly object horizon, position_limit

    cdef int64_t leo_c(self, Py_ssize_t p, int64_t now) noexcept nogil
    cdef int64_t total_lag_c(self, int64_t now) noexcept nogil
    cdef int64_t produced_c(self, int64_t now) noexcept nogil
    cdef int check_partition(self, object p) except -1
    cdef int check_time(self, object now) except -1
    cdef int check_offset(self, object offset) except -1


cdef class Triples:
    cdef int64_t* data
    cdef Py_ssize_t n, cap

    cdef int append(self, int64_t p, int64_t a, int64_t b) except -1


cdef class ProcessedTable:
    cdef Intervals* rows
    cdef Py_ssize_t n

    cdef int reserve(self, Intervals* row, Py_ssize_t need) except -1
    cdef int64_t add_c(self, Py_ssize_t p, int64_t a, int64_t b) except -1
    cdef int64_t covered_below_c(self, Py_ssize_t p, int64_t limit) noexcept
    cdef int64_t finish_c(self, Triples batch) except -1
    cdef int64_t lost_c(self, PartitionColumns cols) except? -1
    cdef int check(self, object p, object a, object b) except -1


cdef class OwnedPartitions:
    cdef int64_t* owned
    cdef int64_t* position
    cdef int64_t* sent
    cdef Py_ssize_t k, cap
    cdef readonly PartitionColumns cols

    cdef int reserve(self, Py_ssize_t need) except -1
    cdef int64_t fetch_c(self, Py_ssize_t start, int64_t now, int64_t room, Triples batch,
                         int64_t* last_out) except? -1
    cdef int64_t next_arrival_c(self) noexcept
    cdef bint uncommitted_c(self) noexcept
    cdef int changed_c(self, Triples out) except -1
    cdef void mark_sent_c(self, Triples changed) noexcept
