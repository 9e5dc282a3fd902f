# The classic group's native twin (native_group_core.pyx): its C-level API, for modules that cimport it.
from libc.stdint cimport int64_t

# Kafka's error codes (group/errors.py)
cdef enum:
    E_NONE = 0
    E_COORDINATOR_NOT_AVAILABLE = 15
    E_ILLEGAL_GENERATION = 22
    E_INCONSISTENT_GROUP_PROTOCOL = 23
    E_UNKNOWN_MEMBER_ID = 25
    E_INVALID_SESSION_TIMEOUT = 26
    E_REBALANCE_IN_PROGRESS = 27
    E_MEMBER_ID_REQUIRED = 79
    E_FENCED_INSTANCE_ID = 82

# group states (ClassicGroupState, in this order: STATE_NAMES in the .pyx)
cdef enum:
    ST_EMPTY = 0
    ST_PREPARING = 1
    ST_COMPLETING = 2
    ST_STABLE = 3
    ST_DEAD = 4

# effect kinds (group/classic_messages.py's effects and responses)
cdef enum:
    FX_SCHEDULE_HEARTBEAT = 0  # member, deadline
    FX_SCHEDULE_JOIN = 1  # deadline; flags 1: ("initial", a, b) else ("join",)
    FX_SCHEDULE_SYNC = 2  # deadline; ("sync", a)
    FX_CANCEL_HEARTBEAT = 3  # member
    FX_CANCEL_JOIN = 4
    FX_CANCEL_SYNC = 5
    FX_JOIN_RESPONSE = 6  # client, error, member, a generation, b leader, c protocol, flags, obj
    FX_SYNC_RESPONSE = 7  # client, error, obj assignment (-1: None), c protocol
    FX_HEARTBEAT_RESPONSE = 8  # client, error
    FX_LEAVE_RESPONSE = 9  # client, error; a, b: the member errors' slice of `leave_errors`
    FX_STATE_CHANGED = 10  # a old, b new, c generation, reason, obj (reason text or -1)
    FX_MEMBER_REMOVED = 11  # member, instance, reason
    FX_METADATA_CHANGED = 12  # obj: the snapshot when `build_objects`, else -1

# JoinGroupResponse flags
cdef enum:
    JF_MEMBERS = 1  # the leader's answer: obj is the members tuple (when `build_objects`)
    JF_SKIP_ASSIGNMENT = 2

# reasons: StateChanged (member: the id the text names) and MemberRemoved
cdef enum:
    R_NONE = 0
    R_ADD_NEW = 1  # adding new member {id}
    R_UPDATE_META = 2  # updating metadata for member {id}
    R_LEADER_REJOIN = 3  # leader {id} re-joining
    R_STATIC_PROTOCOL = 4  # static member {id} changed protocol
    R_STATIC_META = 5  # updating metadata for static member {id}
    R_JOIN_COMPLETE = 6
    R_NO_MEMBERS = 7
    R_LEADER_ASSIGNMENT = 8
    R_SESSION_EXPIRED = 9  # member {id} session expired
    R_PENDING_SYNC = 10
    R_LEAVE = 11  # the text is obj
    R_UNLOADED = 12
    RM_REPLACED = 13  # MemberRemoved reasons from here on
    RM_NOT_REJOINED = 14
    RM_LEAVE_BY_INSTANCE = 15
    RM_LEAVE = 16
    RM_SESSION_TIMEOUT = 17
    RM_PENDING_SYNC = 18

cdef struct Effect:
    int kind
    int error  # Kafka's error code (group/errors.py Errors)
    int64_t client  # a client handle (responses)
    int64_t member  # a member id handle: 0 is "", -1 the request's own member id (one this group never made)
    int64_t instance  # an instance id handle, -1 None
    int64_t deadline
    int64_t a
    int64_t b
    int64_t c
    int reason
    int flags
    Py_ssize_t obj  # index into `fx_objs`, -1 none

cdef struct Member:
    int64_t seq  # member id handle
    int64_t instance
    int64_t client_id  # client handle of its JoinGroup
    int64_t rebalance_ms
    int64_t session_ms
    int64_t awaiting_join  # client handle, -1 None
    int64_t awaiting_sync
    bint is_new
    bint pending_sync
    int nproto
    int proto[8]  # protocol name indices, the client's order
    Py_ssize_t prev
    Py_ssize_t next


cdef class GroupCore:
    cdef readonly str group_id
    cdef readonly str salt
    cdef int64_t initial_delay_ms, min_session_ms, max_session_ms, new_member_timeout_ms
    cdef bint require_known_member_id
    cdef public bint build_objects  # leader member tuples and snapshots into fx_objs, at effect time
    # the group
    cdef readonly int state
    cdef readonly int previous_state  # -1 None
    cdef readonly int64_t state_timestamp_ms
    cdef readonly int64_t generation_id
    cdef readonly object protocol_type
    cdef readonly int protocol  # protocol name index, -1 None
    cdef readonly int64_t leader  # member id handle, 0 None
    cdef readonly int64_t num_awaiting_join
    cdef readonly int64_t num_members
    cdef readonly int64_t num_pending  # KIP-394 pending member ids
    cdef readonly int64_t num_pending_sync
    cdef bint new_member_added
    cdef int64_t seq  # the last member id handle made
    # members in slots, insertion order as a linked list
    cdef Member* m
    cdef Py_ssize_t cap, head, tail, free_head
    cdef list m_protocols, m_assignment, m_protocol_type
    # member id handle -> slot (>= 0), -1 unknown, -2 pending; and their strings
    cdef int64_t* seq_slot
    cdef Py_ssize_t seq_cap
    cdef readonly list ids
    # names interned to handles
    cdef readonly list clients, instances, protocols
    cdef dict client_of, instance_of, protocol_of
    cdef int64_t* inst_member  # instance handle -> member id handle (0: none)
    cdef Py_ssize_t inst_cap
    cdef int64_t supported[64]
    # the effects of the last call
    cdef Effect* fx
    cdef readonly Py_ssize_t nfx
    cdef Py_ssize_t fx_cap
    cdef readonly list fx_objs
    cdef int* leave_errors
    cdef Py_ssize_t leave_cap

    # handles
    cdef int64_t client_handle(self, str client) except -2
    cdef int64_t instance_handle(self, object instance) except -2
    cdef int protocol_handle(self, object name) except -2
    cdef Py_ssize_t slot_of(self, int64_t member) noexcept
    cdef int64_t _new_member_id(self, str prefix) except -1

    # internals
    cdef int _clear(self) except -1
    cdef Effect* _fx(self, int kind) except NULL
    cdef int _join_fx(self, int64_t client, int error, int64_t member) except -1
    cdef int _state_fx(self, int target, int64_t now, int reason, int64_t arg) except -1
    cdef int _removed_fx(self, int64_t member, int64_t instance, int reason) except -1
    cdef int validate_member(self, int64_t member, int64_t instance) noexcept
    cdef int validate_offset_commit(self, int64_t member, int64_t instance, int64_t generation) noexcept
    cdef bint _elect_joined_leader(self) except -1
    cdef Py_ssize_t _new_slot(self) except -1
    cdef int _unlink(self, Py_ssize_t s) except -1
    cdef int _set_protocols(self, Py_ssize_t s, object protocols) except -1
    cdef int _add(self, Py_ssize_t s, int64_t client) except -1
    cdef int _remove(self, int64_t member) except -1
    cdef int64_t _rebalance_timeout(self) noexcept
    cdef bint _all_joined(self) noexcept
    cdef bint _supports(self, object protocol_type, object protocols) except -1
    cdef int _select_protocol(self) except -2
    cdef int _join_response(self, Py_ssize_t s, int64_t client, bint with_members, int flags) except -1
    cdef int _reschedule_heartbeat(self, Py_ssize_t s, int64_t now, int64_t timeout) except -1
    cdef int _clear_pending_sync(self) except -1
    cdef int _complete_join_unknown(self, Py_ssize_t s) except -1
    cdef int _propagate(self, int error, int64_t now) except -1
    cdef int _update_member(self, Py_ssize_t s, object protocols, int64_t session_ms,
                            int64_t rebalance_ms, int64_t client) except -1
    cdef int _prepare_or_complete(self, int64_t now, int reason, int64_t arg) except -1
    cdef int _maybe_complete_join_phase(self, int64_t now) except -1
    cdef int _prepare_rebalance(self, int64_t now, int reason, int64_t arg) except -1
    cdef int _complete_join(self, int64_t now) except -1
    cdef object snapshot(self)
