# The native simulator modules' checked helpers, shared (review 8 S4), and `new_tuple_of`. Inline:
# each module that cimports them compiles its own copy, so this `.pxd` has no `.pyx` and no module to import at run
# time; it is in the stamp of every build that cimports it (cython_deps.pxd_dependencies).
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_DECREF, Py_INCREF
from cpython.tuple cimport PyTuple_SET_ITEM
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


# tuple.__new__(cls, fields) for a tuple subclass (a NamedTuple's generated __new__ ends in that call):
# the same object, from the class's allocator (PyType_GenericAlloc: zeroed, its length set, tracked
# by the GC) with the fields stored in order, as tuple_subtype_new does, without the Python calls
cdef extern from "Python.h":
    ctypedef PyObject* (*_allocfunc)(PyTypeObject*, Py_ssize_t)
    ctypedef struct _TypeAlloc "PyTypeObject":
        _allocfunc tp_alloc


cdef extern from "structmember.h":
    ctypedef struct PyMemberDef:
        int type
        Py_ssize_t offset
        int flags
    enum:
        T_OBJECT_EX
        READONLY
cdef extern from "Python.h":
    ctypedef struct PyMemberDescrObject:
        PyMemberDef* d_member


cdef inline object new_object(type cls):
    # object.__new__(cls) for a plain slots class: its allocator's fresh object, every slot empty
    cdef PyObject* made = (<_TypeAlloc*>cls).tp_alloc(<PyTypeObject*>cls, 0)
    if made == NULL:
        raise MemoryError()
    cdef object obj = <object>made
    Py_DECREF(obj)
    return obj


cdef inline Py_ssize_t slot_offset(type cls, str name) except -1:
    # where the slot `name` of `cls` sits (its member descriptor's offset); ImportError unless it is
    # a writable object slot, so a module relying on it refuses to load and the reference runs
    descr = cls.__dict__.get(name)
    if type(descr).__name__ != "member_descriptor":
        raise ImportError(f"{cls.__name__}.{name} is not a slot")
    cdef PyMemberDef* d = (<PyMemberDescrObject*><PyObject*>descr).d_member
    if d.type != T_OBJECT_EX or d.flags & READONLY:
        raise ImportError(f"{cls.__name__}.{name} is not a writable object slot")
    return d.offset


cdef inline void set_fresh_slot(object obj, Py_ssize_t offset, object value) noexcept:
    # the empty slot at `offset` of a fresh `new_object` set to value, as its descriptor's __set__
    # does (a new reference stored there)
    Py_INCREF(value)
    (<PyObject**>((<char*><PyObject*>obj) + offset))[0] = <PyObject*>value


cdef inline object new_tuple_of(type cls, tuple fields):
    cdef Py_ssize_t i, n = len(fields)
    cdef PyObject* made = (<_TypeAlloc*>cls).tp_alloc(<PyTypeObject*>cls, n)
    if made == NULL:
        raise MemoryError()
    cdef object obj = <object>made  # a second reference: drop the allocator's
    Py_DECREF(obj)
    for i in range(n):
        item = fields[i]
        Py_INCREF(item)
        PyTuple_SET_ITEM(obj, i, item)
    return obj
