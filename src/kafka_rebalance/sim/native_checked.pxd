# The native simulator modules' checked helpers, shared (review 8 S4). Inline: each module that
# cimports them compiles its own copy, so this `.pxd` has no `.pyx` and no module to import at run
# time; it is in the stamp of every build that cimports it (cython_deps.pxd_dependencies).
from libc.stdint cimport INT64_MAX, INT64_MIN, int64_t
from libc.stdlib cimport realloc


cdef inline void* grow(void* p, Py_ssize_t n, Py_ssize_t size) except NULL:
    # `p` reallocated to `n` items of `size` bytes (free it with libc's free); MemoryError when that
    # fails (`p` is then still the caller's, unchanged)
    cdef void* q = realloc(p, n * size)
    if q == NULL:
        raise MemoryError()
    return q


cdef inline int64_t add64(int64_t a, int64_t b) except? -1:
    # a + b; OverflowError when it leaves int64 (the reference's int would not wrap: refuse)
    if (b > 0 and a > INT64_MAX - b) or (b < 0 and a < INT64_MIN - b):
        raise OverflowError(f"{a} + {b} leaves int64")
    return a + b


cdef inline int64_t sub64(int64_t a, int64_t b) except? -1:
    # a - b; OverflowError when it leaves int64
    if (b < 0 and a > INT64_MAX + b) or (b > 0 and a < INT64_MIN + b):
        raise OverflowError(f"{a} - {b} leaves int64")
    return a - b
