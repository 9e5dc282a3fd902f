# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The classic group's native twin: `group/classic_group*.py`'s `ClassicGroup` on C arrays, behind a
C-level API (docs/sim-native.md, "The group (coordinator side)").

`ClassicGroup` stays the reference; this does what it does for the simulator, step for step and in
its order (tests/test_sim_native_group.py drives both with random requests and timers,
tests/test_sim_native_group_replay.py replays the reference coordinator's traffic), so that a native
world can call it without a Python object per message. Members sit in slots (a `Member` struct each,
their opaque protocols and assignment in lists at the slot), in insertion order as a linked list;
member ids, clients, instance ids and protocol names are small int handles (`ids`, `clients`,
`instances`, `protocols` hold their strings). A member id handle is the sequence number of the id
(`{prefix}-{salt}{seq:08x}`): 0 is "" and -1 an id this group never made. Each call writes its effects,
in the reference's order, into `fx[0:nfx]` (Python values they carry in `fx_objs`), which the caller
reads before its next call; `native_group.pyx` turns them back into the reference's objects.

Not ported (refused, never guessed): `group.max.size` below INT32_MAX, `load` (failover), more than
64 protocol names or 8 per member, `subscribed_topics`, and the protocol vote when the members'
votes differ (the simulator's members all list the group's assignors in one order).
"""

from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memset

from .native_checked cimport (
    add64, grow, new_object, new_tuple_of, set_fresh_slot, slot_offset, sub64,
)

from dataclasses import fields as _fields

from ..fields import INT32_MAX
from ..group.classic_messages import JoinGroupMember
from ..group.classic_state import IllegalStateTransition
from ..group.classic_values import ClassicGroupSnapshot, MemberSnapshot

cdef type _JOIN_GROUP_MEMBER = JoinGroupMember  # built as its NamedTuple's __new__ builds it

# MemberSnapshot(...) without its generated __init__ (Python, one object.__setattr__ per field): what
# object.__new__ does (the class's allocator), then each slot stored as its member descriptor's
# __set__ stores it (a new reference at the slot's offset; the fresh object's slots are empty)
# (frozen, slots, no __post_init__: the same object; tests/test_sim_native_group* compare snapshots)
_MS_FIELDS = ("member_id", "group_instance_id", "client_id", "rebalance_timeout_ms",
              "session_timeout_ms", "protocols", "assignment")  # snapshot() sets them by these positions
if tuple(sorted([f.name for f in _fields(MemberSnapshot)])) != tuple(sorted(_MS_FIELDS)):
    # a field added or renamed would be left unset (review 11 S3): not loaded, the reference runs
    raise ImportError(f"MemberSnapshot's fields are not {_MS_FIELDS}: native_group_core.snapshot")
cdef type _MEMBER_SNAPSHOT = MemberSnapshot
cdef Py_ssize_t _MS_OFFSET[7]
for _i, _n in enumerate(_MS_FIELDS):
    _MS_OFFSET[_i] = slot_offset(MemberSnapshot, _n)  # ImportError unless a writable object slot

DEF MAX_PROTOCOLS = 64
DEF MAX_MEMBER_PROTOCOLS = 8

STATE_NAMES = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")
# ClassicGroupState.valid_previous_states, as bit sets over the states' numbers
cdef int VALID_PREVIOUS[5]
VALID_PREVIOUS[:] = [1 << ST_PREPARING, (1 << ST_STABLE) | (1 << ST_COMPLETING) | (1 << ST_EMPTY),
                     1 << ST_PREPARING, 1 << ST_COMPLETING, 0b11111]
# the texts of the reasons (a "{}" takes the member id)
REASONS = {
    R_ADD_NEW: "adding new member {}", R_UPDATE_META: "updating metadata for member {}",
    R_LEADER_REJOIN: "leader {} re-joining", R_STATIC_PROTOCOL: "static member {} changed protocol",
    R_STATIC_META: "updating metadata for static member {}", R_JOIN_COMPLETE: "join phase complete",
    R_NO_MEMBERS: "no members left", R_LEADER_ASSIGNMENT: "leader's assignment received",
    R_SESSION_EXPIRED: "member {} session expired", R_PENDING_SYNC: "pending sync expired",
    R_UNLOADED: "unloaded", RM_REPLACED: "replaced by a rejoining static member",
    RM_NOT_REJOINED: "did not rejoin before the rebalance timeout",
    RM_LEAVE_BY_INSTANCE: "LeaveGroup by instance id", RM_LEAVE: "LeaveGroup",
    RM_SESSION_TIMEOUT: "session timeout", RM_PENDING_SYNC: "pending SyncGroup expired",
}


cdef class GroupCore:
    """One classic group (`ClassicGroup(group_id, config, member_id_salt=salt, now_ms=now_ms)`)."""

    def __cinit__(self):
        self.m = NULL
        self.seq_slot = NULL
        self.inst_member = NULL
        self.fx = NULL
        self.leave_errors = NULL

    def __init__(self, str group_id, config, *, str member_id_salt="", int64_t now_ms=0):
        if config.max_size != INT32_MAX:
            raise NotImplementedError("group.max.size is not ported to the native group")
        self.group_id, self.salt = group_id, member_id_salt
        self.initial_delay_ms = config.initial_rebalance_delay_ms
        self.min_session_ms = config.min_session_timeout_ms
        self.max_session_ms = config.max_session_timeout_ms
        self.new_member_timeout_ms = config.new_member_join_timeout_ms
        self.require_known_member_id = config.require_known_member_id
        self.build_objects = False
        self.state, self.previous_state, self.state_timestamp_ms = ST_EMPTY, -1, now_ms
        self.generation_id, self.protocol_type, self.protocol, self.leader = 0, None, -1, 0
        self.num_awaiting_join = self.num_members = self.num_pending = self.num_pending_sync = 0
        self.new_member_added, self.seq = False, 0
        self.cap, self.head, self.tail, self.free_head = 0, -1, -1, -1
        self.m_protocols, self.m_assignment, self.m_protocol_type = [], [], []
        self.seq_cap = 64
        self.seq_slot = <int64_t*>grow(NULL, self.seq_cap, sizeof(int64_t))
        self.seq_slot[0] = -1
        self.ids = [""]
        self.clients, self.instances, self.protocols = [], [], []
        self.client_of, self.instance_of, self.protocol_of = {}, {}, {}
        self.inst_cap = 0
        memset(self.supported, 0, sizeof(self.supported))
        self.fx_cap = 64
        self.fx = <Effect*>grow(NULL, self.fx_cap, sizeof(Effect))
        self.nfx, self.fx_objs = 0, []
        self.leave_cap = 0

    def __dealloc__(self):
        free(self.m)
        free(self.seq_slot)
        free(self.inst_member)
        free(self.fx)
        free(self.leave_errors)

    # ------------------------------------------------------------------ handles

    cdef int64_t client_handle(self, str client) except -2:
        h = self.client_of.get(client)
        if h is None:
            h = len(self.clients)
            self.clients.append(client)
            self.client_of[client] = h
        return h

    cdef int64_t instance_handle(self, object instance) except -2:
        """-1 for None."""
        if instance is None:
            return -1
        h = self.instance_of.get(instance)
        if h is None:
            h = len(self.instances)
            self.instances.append(instance)
            self.instance_of[instance] = h
            if h >= self.inst_cap:
                self.inst_member = <int64_t*>grow(self.inst_member, 2 * h + 16, sizeof(int64_t))
                self.inst_cap = 2 * h + 16  # after: a failed grow leaves both as they were
            self.inst_member[<Py_ssize_t>h] = 0
        return h

    cdef int protocol_handle(self, object name) except -2:
        h = self.protocol_of.get(name)
        if h is None:
            h = len(self.protocols)
            if h >= MAX_PROTOCOLS:
                raise NotImplementedError("more than 64 protocol names in one native group")
            self.protocols.append(name)
            self.protocol_of[name] = h
        return h

    cdef int64_t _new_member_id(self, str prefix) except -1:
        """ClassicGroupBase._new_member_id: the next handle, its id `{prefix}-{salt}{seq:08x}`."""
        if self.seq + 1 == self.seq_cap:
            self.seq_slot = <int64_t*>grow(self.seq_slot, 2 * self.seq_cap, sizeof(int64_t))
            self.seq_cap *= 2
        self.seq += 1
        self.seq_slot[self.seq] = -1
        self.ids.append(f"{prefix}-{self.salt}{self.seq:08x}")
        return self.seq

    cdef Py_ssize_t slot_of(self, int64_t member) noexcept:
        """The member's slot, or -1 (unknown, pending, "" or foreign)."""
        if member <= 0 or member > self.seq:
            return -1
        return self.seq_slot[member] if self.seq_slot[member] >= 0 else -1

    # ------------------------------------------------------------------ effects

    cdef int _clear(self) except -1:
        self.nfx = 0
        if self.fx_objs:
            self.fx_objs = []
        return 0

    cdef Effect* _fx(self, int kind) except NULL:
        if self.nfx == self.fx_cap:
            self.fx = <Effect*>grow(self.fx, 2 * self.fx_cap, sizeof(Effect))
            self.fx_cap *= 2
        cdef Effect* e = &self.fx[self.nfx]
        self.nfx += 1
        memset(e, 0, sizeof(Effect))
        e.kind, e.client, e.instance, e.c, e.obj = kind, -1, -1, -1, -1
        return e

    cdef int _join_fx(self, int64_t client, int error, int64_t member) except -1:
        """JoinGroupResponse(client, error, member_id) with its defaults."""
        cdef Effect* e = self._fx(FX_JOIN_RESPONSE)
        e.client, e.error, e.member, e.a, e.b, e.c = client, error, member, -1, 0, -1
        return 0

    cdef int _state_fx(self, int target, int64_t now, int reason, int64_t arg) except -1:
        """ClassicGroupBase._transition."""
        if not (VALID_PREVIOUS[target] >> self.state) & 1:
            raise IllegalStateTransition(
                f"cannot move from {STATE_NAMES[self.state]} to {STATE_NAMES[target]}")
        cdef Effect* e = self._fx(FX_STATE_CHANGED)
        e.a, e.b, e.c, e.reason = self.state, target, self.generation_id, reason
        if reason == R_LEAVE:
            e.obj = arg
        else:
            e.member = arg
        self.previous_state, self.state = self.state, target
        self.state_timestamp_ms = now
        return 0

    cdef int _removed_fx(self, int64_t member, int64_t instance, int reason) except -1:
        cdef Effect* e = self._fx(FX_MEMBER_REMOVED)
        e.member, e.instance, e.reason = member, instance, reason
        return 0

    # ------------------------------------------------------------------ queries

    cdef int validate_member(self, int64_t member, int64_t instance) noexcept:
        cdef int64_t existing
        if instance >= 0:
            existing = self.inst_member[instance]
            if existing == 0:
                return E_UNKNOWN_MEMBER_ID
            if existing != member:
                return E_FENCED_INSTANCE_ID
        return E_NONE if self.slot_of(member) >= 0 else E_UNKNOWN_MEMBER_ID

    cdef int validate_offset_commit(self, int64_t member, int64_t instance, int64_t generation) noexcept:
        cdef int err, state = self.state
        if state == ST_DEAD:
            return E_COORDINATOR_NOT_AVAILABLE
        if generation < 0 and state == ST_EMPTY:
            return E_NONE
        if generation >= 0 or member != 0 or instance >= 0:
            err = self.validate_member(member, instance)
            if err != E_NONE:
                return err
            if generation != self.generation_id:
                return E_ILLEGAL_GENERATION
        elif state != ST_EMPTY:
            return E_UNKNOWN_MEMBER_ID
        return E_REBALANCE_IN_PROGRESS if state == ST_COMPLETING else E_NONE

    cdef int64_t _rebalance_timeout(self) noexcept:
        cdef int64_t best = 0
        cdef Py_ssize_t s = self.head
        while s >= 0:
            if self.m[s].rebalance_ms > best:
                best = self.m[s].rebalance_ms
            s = self.m[s].next
        return best

    cdef bint _all_joined(self) noexcept:
        return self.num_members == self.num_awaiting_join and self.num_pending == 0

    cdef bint _supports(self, object protocol_type, object protocols) except -1:
        names = [p for p, _ in protocols]
        if self.state == ST_EMPTY:
            return bool(protocol_type) and bool(names)
        if protocol_type != self.protocol_type:
            return False
        for p in names:
            if self.supported[self.protocol_handle(p)] == self.num_members:
                return True
        return False

    cdef int _select_protocol(self) except -2:
        """Each member's vote (its first protocol that all support); refused unless unanimous."""
        cdef int vote = -1, v, k
        cdef Py_ssize_t s = self.head
        while s >= 0:
            v = -1
            for k in range(self.m[s].nproto):
                if self.supported[self.m[s].proto[k]] == self.num_members:
                    v = self.m[s].proto[k]
                    break
            if v < 0:
                raise ValueError("member does not support any candidate protocol")
            if vote >= 0 and v != vote:
                raise NotImplementedError("a protocol vote with different votes is not ported")
            vote = v
            s = self.m[s].next
        if vote < 0:
            raise ValueError("cannot select a protocol for an empty group")
        return vote

    cdef object snapshot(self):
        """ClassicGroupBase.snapshot."""
        out = []
        cdef Py_ssize_t s = self.head
        while s >= 0:
            ms = new_object(_MEMBER_SNAPSHOT)
            set_fresh_slot(ms, _MS_OFFSET[0], self.ids[self.m[s].seq])
            set_fresh_slot(ms, _MS_OFFSET[1], None if self.m[s].instance < 0 else self.instances[self.m[s].instance])
            set_fresh_slot(ms, _MS_OFFSET[2], self.clients[self.m[s].client_id])
            set_fresh_slot(ms, _MS_OFFSET[3], self.m[s].rebalance_ms)
            set_fresh_slot(ms, _MS_OFFSET[4], self.m[s].session_ms)
            set_fresh_slot(ms, _MS_OFFSET[5], self.m_protocols[s])
            set_fresh_slot(ms, _MS_OFFSET[6], self.m_assignment[s])
            out.append(ms)
            s = self.m[s].next
        return ClassicGroupSnapshot(
            self.group_id, self.protocol_type, self.generation_id,
            None if self.protocol < 0 else self.protocols[self.protocol],
            None if self.leader == 0 else self.ids[self.leader], self.state_timestamp_ms, tuple(out))

    # ------------------------------------------------------------------ slots

    cdef Py_ssize_t _new_slot(self) except -1:
        """A free slot, linked at the end of the insertion order."""
        cdef Py_ssize_t s = self.free_head
        if s >= 0:
            self.free_head = self.m[s].next
        else:
            if self.cap == len(self.m_protocols):
                self.m = <Member*>grow(self.m, 2 * self.cap + 16, sizeof(Member))
                self.cap = 2 * self.cap + 16
            s = len(self.m_protocols)
            self.m_protocols.append(None)
            self.m_assignment.append(None)
            self.m_protocol_type.append(None)
        memset(&self.m[s], 0, sizeof(Member))
        self.m[s].awaiting_join = self.m[s].awaiting_sync = -1
        self.m[s].prev, self.m[s].next = self.tail, -1
        if self.tail >= 0:
            self.m[self.tail].next = s
        else:
            self.head = s
        self.tail = s
        self.num_members += 1
        return s

    cdef int _unlink(self, Py_ssize_t s) except -1:
        """Out of the order and the id table, back on the free list (its counts are the caller's)."""
        cdef Member* x = &self.m[s]
        if x.prev >= 0:
            self.m[x.prev].next = x.next
        else:
            self.head = x.next
        if x.next >= 0:
            self.m[x.next].prev = x.prev
        else:
            self.tail = x.prev
        if x.pending_sync:
            self.num_pending_sync -= 1
        self.seq_slot[x.seq] = -1
        x.next, x.seq = self.free_head, 0
        self.free_head = s
        self.m_protocols[s] = self.m_assignment[s] = self.m_protocol_type[s] = None
        self.num_members -= 1
        return 0

    cdef int _set_protocols(self, Py_ssize_t s, object protocols) except -1:
        """The member's protocols, counted in `supported` (ClassicGroupBase._add/_update_member)."""
        cdef int k = 0
        if len(protocols) > MAX_MEMBER_PROTOCOLS:
            raise NotImplementedError("more than 8 protocols in one native group member")
        for proto in protocols:
            self.m[s].proto[k] = self.protocol_handle(proto[0])
            self.supported[self.m[s].proto[k]] += 1
            k += 1
        self.m[s].nproto = k
        self.m_protocols[s] = protocols
        return 0

    cdef int _add(self, Py_ssize_t s, int64_t client) except -1:
        """ClassicGroupBase._add for the member just put in slot `s` (its protocols not yet set)."""
        cdef Member* x = &self.m[s]
        if x.instance >= 0:
            self.inst_member[x.instance] = x.seq
        if self.num_members == 1:
            self.protocol_type = self.m_protocol_type[s]
        if self.leader == 0:
            self.leader = x.seq
        x.awaiting_join = client
        self.num_awaiting_join += 1
        if self.seq_slot[x.seq] == -2:
            self.num_pending -= 1
        self.seq_slot[x.seq] = s
        return 0

    cdef int _remove(self, int64_t member) except -1:
        cdef Py_ssize_t s = self.slot_of(member)
        cdef int k
        if s >= 0:
            for k in range(self.m[s].nproto):
                self.supported[self.m[s].proto[k]] -= 1
            if self.m[s].awaiting_join >= 0:
                self.num_awaiting_join -= 1
            if self.m[s].instance >= 0 and self.inst_member[self.m[s].instance] == member:
                self.inst_member[self.m[s].instance] = 0
            self._unlink(s)
        if self.leader == member:
            self.leader = self.m[self.head].seq if self.head >= 0 else 0
        if member > 0 and member <= self.seq and self.seq_slot[member] == -2:
            self.seq_slot[member] = -1
            self.num_pending -= 1
        return 0

    # ------------------------------------------------------------------ bookkeeping

    cdef int _update_member(self, Py_ssize_t s, object protocols, int64_t session_ms,
                            int64_t rebalance_ms, int64_t client) except -1:
        cdef int k
        for k in range(self.m[s].nproto):
            self.supported[self.m[s].proto[k]] -= 1
        self._set_protocols(s, protocols)
        self.m[s].rebalance_ms, self.m[s].session_ms = rebalance_ms, session_ms
        if self.m[s].awaiting_join < 0:
            self.num_awaiting_join += 1
        self.m[s].awaiting_join = client
        return 0

    cdef int _join_response(self, Py_ssize_t s, int64_t client, bint with_members, int flags) except -1:
        """ClassicGroupBase._join_response, sent to `client`; the leader's lists the members."""
        cdef Effect* e = self._fx(FX_JOIN_RESPONSE)
        e.client, e.error, e.member = client, E_NONE, self.m[s].seq
        e.a, e.b, e.c, e.flags = self.generation_id, self.leader, self.protocol, flags
        cdef Py_ssize_t x
        if with_members and self.protocol >= 0:
            e.flags |= JF_MEMBERS
            if self.build_objects:
                name = self.protocols[self.protocol]
                out = []
                x = self.head
                while x >= 0:
                    for p in self.m_protocols[x]:
                        if p[0] == name:
                            meta = p[1]
                            break
                    else:
                        raise KeyError(name)
                    inst = self.m[x].instance
                    out.append(new_tuple_of(_JOIN_GROUP_MEMBER, (
                        self.ids[self.m[x].seq], None if inst < 0 else self.instances[inst], meta)))
                    x = self.m[x].next
                e = &self.fx[self.nfx - 1]
                e.obj = len(self.fx_objs)
                self.fx_objs.append(tuple(out))
        return 0

    cdef int _reschedule_heartbeat(self, Py_ssize_t s, int64_t now, int64_t timeout) except -1:
        cdef Effect* e = self._fx(FX_SCHEDULE_HEARTBEAT)
        e.member, e.deadline = self.m[s].seq, add64(now, timeout)
        return 0

    cdef int _complete_join_unknown(self, Py_ssize_t s) except -1:
        """_complete_join_future(m, JoinGroupResponse("", UNKNOWN_MEMBER_ID, ""))."""
        if self.m[s].awaiting_join >= 0:
            self._join_fx(self.m[s].awaiting_join, E_UNKNOWN_MEMBER_ID, 0)
            self.m[s].awaiting_join = -1
            self.num_awaiting_join -= 1
        return 0

    cdef int _clear_pending_sync(self) except -1:
        cdef Py_ssize_t s = self.head
        if self.num_pending_sync:
            while s >= 0:
                self.m[s].pending_sync = False
                s = self.m[s].next
            self.num_pending_sync = 0
        return 0

    cdef int _prepare_or_complete(self, int64_t now, int reason, int64_t arg) except -1:
        if (VALID_PREVIOUS[ST_PREPARING] >> self.state) & 1:
            return self._prepare_rebalance(now, reason, arg)
        return self._maybe_complete_join_phase(now)

    cdef int _maybe_complete_join_phase(self, int64_t now) except -1:
        if self.state == ST_PREPARING and self.previous_state != ST_EMPTY and self._all_joined():
            self._complete_join(now)
        return 0

    cdef int _prepare_rebalance(self, int64_t now, int reason, int64_t arg) except -1:
        cdef Py_ssize_t s
        cdef int64_t remaining
        cdef Effect* e
        if self.state == ST_COMPLETING:  # _reset_and_propagate_assignment
            s = self.head
            while s >= 0:
                self.m_assignment[s] = None
                s = self.m[s].next
            self._propagate(E_REBALANCE_IN_PROGRESS, now)
        self._clear_pending_sync()
        self._fx(FX_CANCEL_SYNC)
        cdef bint initial = self.state == ST_EMPTY
        if initial:
            remaining = sub64(self._rebalance_timeout(), self.initial_delay_ms)
            e = self._fx(FX_SCHEDULE_JOIN)
            e.deadline, e.flags = add64(now, self.initial_delay_ms), 1
            e.a, e.b = self.initial_delay_ms, remaining if remaining > 0 else 0
        self._state_fx(ST_PREPARING, now, reason, arg)
        if not initial:
            if self._all_joined():
                self._complete_join(now)
            else:
                e = self._fx(FX_SCHEDULE_JOIN)
                e.deadline = add64(now, self._rebalance_timeout())
        return 0

    cdef int _complete_join(self, int64_t now) except -1:
        self._fx(FX_CANCEL_JOIN)
        cdef Py_ssize_t s = self.head, n = 0, k
        cdef int64_t gone, inst
        cdef Effect* e
        while s >= 0:  # the members that did not rejoin: collected first, then removed in order
            if self.m[s].awaiting_join < 0 and self.m[s].instance < 0:
                n += 1
            s = self.m[s].next
        cdef int64_t* out = <int64_t*>malloc((n + 1) * sizeof(int64_t))
        if out == NULL:
            raise MemoryError()
        try:
            s, k = self.head, 0
            while s >= 0:
                if self.m[s].awaiting_join < 0 and self.m[s].instance < 0:
                    out[k] = self.m[s].seq
                    k += 1
                s = self.m[s].next
            for k in range(n):
                gone = out[k]
                inst = self.m[self.slot_of(gone)].instance
                self._remove(gone)
                e = self._fx(FX_CANCEL_HEARTBEAT)
                e.member = gone
                self._removed_fx(gone, inst, RM_NOT_REJOINED)
        finally:
            free(out)
        if self.state == ST_DEAD:
            return 0
        if not self._elect_joined_leader() and self.num_members:
            e = self._fx(FX_SCHEDULE_JOIN)
            e.deadline = add64(now, self._rebalance_timeout())
            return 0
        self.generation_id += 1
        if self.num_members:
            self.protocol = self._select_protocol()
            self._state_fx(ST_COMPLETING, now, R_JOIN_COMPLETE, 0)
        else:
            self.protocol = -1
            self._state_fx(ST_EMPTY, now, R_NO_MEMBERS, 0)
            e = self._fx(FX_METADATA_CHANGED)
            if self.build_objects:
                e.obj = len(self.fx_objs)
                self.fx_objs.append(self.snapshot())
        self._clear_pending_sync()
        if self.state == ST_COMPLETING:
            s = self.head
            while s >= 0:
                if self.m[s].awaiting_join >= 0:
                    self._join_response(s, self.m[s].awaiting_join, self.leader == self.m[s].seq, 0)
                    self.m[s].awaiting_join = -1
                    self.num_awaiting_join -= 1
                self._reschedule_heartbeat(s, now, self.m[s].session_ms)
                self.m[s].is_new = False
                self.m[s].pending_sync = True
                self.num_pending_sync += 1
                s = self.m[s].next
            e = self._fx(FX_SCHEDULE_SYNC)
            e.deadline, e.a = add64(now, self._rebalance_timeout()), self.generation_id
        return 0

    cdef bint _elect_joined_leader(self) except -1:
        if self.leader == 0:
            return False
        cdef Py_ssize_t s = self.slot_of(self.leader)
        if s >= 0 and self.m[s].awaiting_join >= 0:
            return True
        s = self.head
        while s >= 0:
            if self.m[s].awaiting_join >= 0:
                self.leader = self.m[s].seq
                return True
            s = self.m[s].next
        return False

    cdef int _propagate(self, int error, int64_t now) except -1:
        """ClassicGroupJoin._propagate_assignment: each parked SyncGroup answered, its session renewed."""
        cdef Py_ssize_t s = self.head
        cdef Effect* e
        while s >= 0:
            if self.m[s].awaiting_sync >= 0:
                e = self._fx(FX_SYNC_RESPONSE)
                e.client, e.error = self.m[s].awaiting_sync, error
                if error == E_NONE:
                    e.c = self.protocol
                    e.obj = len(self.fx_objs)
                    self.fx_objs.append(self.m_assignment[s])
                self.m[s].awaiting_sync = -1
                self._reschedule_heartbeat(s, now, self.m[s].session_ms)
            s = self.m[s].next
        return 0
