# uniform_native_plan.pyx's C-level API, for the kernels that cimport it (uniform_native_balance):
# the one C copy of Java's HashMap iteration rule (kernels_hashmap.java_bin_order with head=False).

cdef Py_ssize_t java_put_order(
    unsigned int *spreads, Py_ssize_t n, Py_ssize_t *at, Py_ssize_t *position
) except -1
