# The C-level API of native_batch_time.pyx (see its docstring): the poll's batch doubles, for the
# native member that cimports them (compiled with -ffp-contract=off as this module is).
from libc.stdint cimport int64_t


cdef double batch_rate_c(double ms_per_record, double jitter, double r) noexcept
cdef int64_t busy_for_c(int64_t now, int64_t n, double rate, int64_t busy_until,
                        int64_t caught_up_from, int64_t stall_until, int64_t batch_last_t,
                        double* batch_t0) except? -1
cdef int64_t processed_limit_c(int64_t now, double batch_t0, double rate) except? -1
