# The classic group coordinator node on the native group twin (native_coordinator.pyx): its entry
# points as C-level methods, for a native world that cimports it.
from libc.stdint cimport int64_t

from .native_engine cimport EventLoop
from .native_group_handlers cimport GroupHandlers
from .native_members cimport Triples
from .native_world_base cimport WorldBase


cdef class NativeCoordinator:
    cdef public object w  # the world: a native_world.NativeWorld, or world.Simulation (the reference's)
    cdef WorldBase _nw  # `w` when it is a native world (its calls are C calls), else None
    cdef readonly object config
    # the SimOffsetsStore (read through the `store` property, which first flushes the pending commits)
    cdef object _store
    # a native member's commits not yet in `_store.offsets`: per partition index the last offset and
    # time, a pending flag, and the pending partitions in the order they became pending; the records
    # they add to `records_appended`
    cdef int64_t* _pend_off
    cdef int64_t* _pend_t
    cdef char* _pending
    cdef int64_t* _pend_order
    cdef Py_ssize_t _npend, _pend_cap
    cdef int64_t _pend_records
    cdef readonly GroupHandlers group
    cdef readonly int64_t epoch, up_at
    # member id -> member name (the routing table); member id string -> handle
    cdef readonly dict by_member_id
    cdef dict _handles
    # client -> requests queued behind a parked JoinGroup/SyncGroup, in order
    cdef readonly dict muted
    # member id -> (phase base, first beat, stop time, generation, client)
    cdef readonly dict hb_history
    cdef object _loop, _timer_cb, _receive, _commit
    cdef EventLoop _cloop  # `_loop` when it is the native engine's (its timers are C calls), else None
    cdef int64_t _latency, _hb_interval

    # entry points (the world's and the members' calls)
    cpdef receive(self, str kind, object req, object name)
    cpdef commit(self, object name, str client, str member_id, object instance_id,
                 int64_t generation, object offsets, object why, bint answer=*, object sent_ms=*,
                 object sent_event=*)
    cpdef bint needs_real_heartbeats(self) except -1
    cpdef heartbeat_stopped(self, str member_id, int64_t hb_base, int64_t hb_first, int64_t now,
                            int64_t generation, str client)
    cpdef on_timer(self, object key, object payload)

    # the world's calls: C calls on a native world, Python calls on the reference's
    cdef int _reply(self, str client, str kind, object resp) except -1
    cdef int _reply_many(self, list replies) except -1
    cdef int _emit(self, str kind, object member, object generation, object partitions,
                   object detail) except -1
    cdef int _on_generation(self, int64_t generation) except -1
    cdef int _set_pending_cause(self, str cause) except -1
    cdef dict _members(self)

    # internals
    cdef int64_t _member(self, str member_id) except -2
    cdef bint _answers(self, int64_t client) noexcept
    cdef int _apply(self, str own, object hb_sent, bint drop_answered) except -1
    cdef int _send_replies(self, list replies) except -1
    cdef int _unmute(self, str client) except -1
    cdef int _on_state(self, int old, int new, object reason) except -1
    cdef bint _elided_heartbeat(self, int64_t member, int64_t now) except -1
    cdef int _set_timer(self, int64_t key, int64_t deadline, object payload) except -1
    cdef int _cancel_timer(self, int64_t key) except -1
    cdef int _store_triples(self, Triples offsets) except -1
    cdef int _flush_commits(self) except -1
