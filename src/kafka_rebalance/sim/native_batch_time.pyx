# cython: language_level=3, cdivision=True
"""The poll's batch times in IEEE doubles, as `SimMember._poll`, `_busy_for` and `_processed_by`
compute them (`sim/member.py`): the same operations in the same order on the same doubles, so the
same results, provided the C compiler does not contract `a * b + c` into a fused multiply-add:
setup.py compiles this module with -ffp-contract=off (docs/sim-native.md, "Floats").

Integers enter as the reference's do: Python converts an int to the nearest double before adding
it to a float, as C's conversion does, and compares an int with a float exactly, which a double
comparison matches while the int is exact in a double: the Python-level functions refuse ints
beyond 2**53 (the world's times stay far below). Where the reference's `int(x)` would give an int
outside int64, the twin raises OverflowError (refuses) instead of wrapping; NaN raises ValueError
as `int(nan)` does. tests/test_sim_native_members.py compares them with the reference's
expressions over random doubles, edge values included.
"""

from libc.math cimport isnan
from libc.stdint cimport int64_t

EXACT = 1 << 53  # ints beyond this are not exact in a double
cdef double INT64_END = 9223372036854775808.0  # 2**63: the first double past int64


cdef double batch_rate_c(double ms_per_record, double jitter, double r) noexcept:
    """A batch's per-record time: `ms_per_record * (1.0 + pj * (2.0 * r - 1.0)) if pj else
    ms_per_record`, r the world's draw."""
    if jitter != 0.0:
        return ms_per_record * (1.0 + jitter * (2.0 * r - 1.0))
    return ms_per_record


cdef int64_t _to_int(double x) except? -1:
    """Python's int(x), for x in int64 (else refused)."""
    if isnan(x):
        raise ValueError("cannot convert float NaN to integer")
    if not (-INT64_END <= x < INT64_END):
        raise OverflowError(f"{x} outside int64")
    return <int64_t>x


cdef int64_t busy_for_c(int64_t now, int64_t n, double rate, int64_t busy_until,
                        int64_t caught_up_from, int64_t stall_until, int64_t batch_last_t,
                        double* batch_t0) except? -1:
    """`SimMember._busy_for(now, n * rate, rate)`: how long the member is busy with its batch of
    n records (the duration in whole ms, rounded up as the reference rounds); `batch_t0` gets when
    the batch's processing began."""
    cdef int64_t start = busy_until
    cdef double work = <double>n * rate
    cdef double end, tail
    if caught_up_from > start:
        start = caught_up_from
    if stall_until > start:
        start = stall_until
    end = <double>start + work
    tail = <double>batch_last_t + rate
    if tail > end:
        end = tail
    batch_t0[0] = end - work
    if end > <double>now:
        return _to_int(end - <double>now + 0.999999)
    return 0


cdef int64_t processed_limit_c(int64_t now, double batch_t0, double rate) except? -1:
    """`_processed_by`'s `int((now - batch_t0) / batch_rate)`: how many records of the batch in
    flight are processed by now."""
    if rate == 0.0:
        raise ZeroDivisionError("float division by zero")
    return _to_int((<double>now - batch_t0) / rate)


def _exact(*values):
    for v in values:
        if not -EXACT <= v <= EXACT:
            raise OverflowError(f"{v} is not exact in a double")


def batch_rate(ms_per_record, jitter, r):
    return batch_rate_c(ms_per_record, jitter, r)


def busy_for(now, n, rate, busy_until, caught_up_from, stall_until, batch_last_t):
    """(duration, batch_t0) of `_busy_for(now, n * rate, rate)` on a member with these times."""
    cdef double t0 = 0.0
    cdef int64_t dur
    _exact(now, n, busy_until, caught_up_from, stall_until, batch_last_t)
    dur = busy_for_c(now, n, rate, busy_until, caught_up_from, stall_until, batch_last_t, &t0)
    return dur, t0


def processed_limit(now, batch_t0, rate):
    _exact(now)
    return processed_limit_c(now, batch_t0, rate)
