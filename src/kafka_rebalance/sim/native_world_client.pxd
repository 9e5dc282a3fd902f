# The native classic member's rebalance half (native_world_client.pyx): its fields and C-level methods,
# for native_world_member.pyx's NativeMember (the poll loop, processing, commits) that extends it.
# The members hold their world as native_world_base.WorldBase: its calls are vtable calls.
from libc.stdint cimport int64_t

from .native_engine cimport EventLoop, Handler
from .native_members cimport OwnedPartitions, Triples
from .native_world_base cimport WorldBase

# the member's events on the engine (native_engine.EventLoop.at_c: fire(kind, a, payload))
cdef enum:
    EV_POLL = 1  # a: the poll token
    EV_HB_TICK = 2  # a: the incarnation

# PrepareCommit as C ints (member_rebalance.PrepareCommit: NONE, IN_FLIGHT, DONE)
cdef enum:
    PC_NONE = 0
    PC_IN_FLIGHT = 1
    PC_DONE = 2


cdef class NativeClient(Handler):
    cdef public WorldBase w
    cdef public object name, rack, instance_id, protocol, client, state, member_id
    cdef public object ms_per_record, batch_rate_obj
    cdef public bint alive, is_leader, rejoin_needed, join_inflight, fetch_paused, waiting
    cdef public bint hb_ticking, poll_timed_out
    cdef bint _in_poll, _auto_commit, _at_most_once, _join_auto_commit
    cdef public int64_t incarnation, generation, leave_delay_ms
    cdef public int64_t batch_taken, batch_last_t, caught_up_from, busy_until, stall_until
    cdef public int64_t last_poll, poll_token, next_autocommit, hb_base, hb_first, started_at
    cdef int64_t _budget, _poll_idle, _aci, _hb_interval, _hb_latency, _retry_backoff
    cdef public double batch_t0, batch_rate
    cdef double _pjitter, _rate
    cdef int _prepare
    # owned partitions with their positions and sent offsets (the reference's `owned`, `positions`,
    # `sent_offsets`; Python views: the properties of the same names), the batch in flight as
    # (partition, from, to) and its processed part at a partial finish (both reused)
    cdef readonly OwnedPartitions own
    cdef readonly Triples batch
    cdef Triples _partial
    cdef public list deferred
    cdef public dict known_partitions, assigned_view
    cdef public object pause_start, joined_protocol, sticky_memory
    cdef public int64_t coop_generation
    cdef object _session_timeout, _rebalance_timeout, _assignors, _topic_names
    # the last JoinGroup's owned partitions (indices, TopicPartitions) and the TopicPartition list
    # they were read from (_protocols reuses them while owned is the same)
    cdef tuple _sub_owned_idx, _sub_owned_tps
    cdef object _sub_tps_of

    cdef int64_t _now(self) except? -1
    cdef list _owned(self)
    cdef bint _owns_exactly(self, tuple partitions) except -1
    cdef bint _generation_unchanged(self, sent) except -1
    cpdef bint heartbeating(self) except -1
    cdef int64_t _next_heartbeat_at(self, int64_t t) noexcept
    cpdef start_heartbeat_ticks(self)
    cdef int _stop_heartbeats(self) except -1
    cdef object _protocols(self)
    cdef int _prepare_join(self) except -1
    cdef int _send_join(self) except -1
    cdef int _handle_response(self, resp) except -1
    cdef int _retry_later(self) except -1
    cdef int _on_join(self, r) except -1
    cdef int _on_sync(self, r) except -1
    cdef int _reset_and_rejoin(self, bint reset_member_id) except -1
    cdef int _complete_join(self, assignment) except -1
    cdef int _hb_tick_c(self, int64_t inc) except -1
    cdef int fire(self, int kind, int64_t a, object payload) except -1
    cpdef on_response(self, resp)
    cpdef on_heartbeat_response(self, error, sent=*)
    # hooks NativeMember provides (member.SimMember's side)
    cpdef on_commit_response(self, error, sent=*, bint answered=*)
    cdef int _poll_c(self, int64_t token) except -1
    # hooks NativeMember provides (member.SimMember's side)
    cpdef wake(self)
    cpdef _finish_batch(self, int64_t now, bint partial=*)
    cdef int _poll_soon(self, int64_t t) except -1
    cdef int _catch_up_before_commit(self, int64_t now) except -1
    cdef int _commit_positions(self, str why, bint answer) except -1


# the leader's assignment as partition indices, KIP-429's withholding over C claims (the .pyx's end)
cpdef dict assignment_indices(object result, dict by_topic, int[::1] owner, dict ordinal,
                              bint coop)
