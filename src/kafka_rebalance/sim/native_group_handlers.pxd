# The classic group's request handlers over the native group core: the C-level API a native world calls.
from libc.stdint cimport int64_t

from .native_group_core cimport GroupCore


cdef class GroupHandlers(GroupCore):
    # each call starts a new effect list (fx[0:nfx], fx_objs), read before the next call
    cdef int join(self, int64_t client, int64_t member, int64_t instance, object protocols,
                  int64_t session_ms, int64_t rebalance_ms, object protocol_type,
                  int64_t now) except -1
    cdef int sync(self, int64_t client, int64_t member, int64_t instance, int64_t generation,
                  object protocol_type, int protocol, object assignments, int64_t now) except -1
    cdef int heartbeat(self, int64_t client, int64_t member, int64_t instance, int64_t generation,
                       int64_t now) except -1
    cdef int leave(self, int64_t client, int64_t* members, int64_t* instances, Py_ssize_t n,
                   int64_t now) except -1
    cdef int heartbeat_expired(self, int64_t member, int64_t now) except -1
    cdef int join_timer(self, bint initial, int64_t delay, int64_t remaining, int64_t now) except -1
    cdef int sync_timer(self, int64_t generation, int64_t now) except -1
    cdef int mark_dead(self, int64_t now) except -1

    cdef int _join_new(self, int64_t client, int64_t instance, object protocols, int64_t session_ms,
                       int64_t rebalance_ms, object protocol_type, int64_t now) except -1
    cdef int _join_existing(self, int64_t client, int64_t member, int64_t instance, object protocols,
                            int64_t session_ms, int64_t rebalance_ms, object protocol_type,
                            int64_t now) except -1
    cdef int _add_then_rebalance(self, int64_t client, int64_t member, int64_t instance,
                                 object protocols, int64_t session_ms, int64_t rebalance_ms,
                                 object protocol_type, int64_t now) except -1
    cdef int _update_static(self, int64_t client, int64_t instance, object protocols,
                            int64_t session_ms, int64_t rebalance_ms, int64_t old, int64_t new,
                            int64_t now) except -1
    cdef int _remove_current(self, int64_t member, int reason) except -1
    cdef int _remove_pending_sync(self, Py_ssize_t s) except -1
