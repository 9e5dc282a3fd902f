# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The classic group's request handlers on the native group core (`native_group_core.pyx`): JoinGroup
(`group/classic_group_join.py`), SyncGroup, Heartbeat, LeaveGroup and the timers
(`group/classic_group.py`), in the reference's order, effects into the core's buffer.

`GroupHandlers` is the C-level API a native world calls: typed arguments (handles for clients,
member ids, instance ids and protocol names), effects read from `fx[0:nfx]` after each call.
Split from the core as the reference is split (`classic_group_base` / `_join` / `classic_group`).
"""

from libc.stdint cimport int64_t
from libc.string cimport memcpy

from .native_group_core cimport (
    E_COORDINATOR_NOT_AVAILABLE, E_FENCED_INSTANCE_ID, E_ILLEGAL_GENERATION,
    E_INCONSISTENT_GROUP_PROTOCOL, E_INVALID_SESSION_TIMEOUT, E_MEMBER_ID_REQUIRED, E_NONE,
    E_REBALANCE_IN_PROGRESS, E_UNKNOWN_MEMBER_ID, FX_CANCEL_HEARTBEAT, FX_CANCEL_SYNC,
    FX_HEARTBEAT_RESPONSE, FX_LEAVE_RESPONSE, FX_METADATA_CHANGED, FX_SCHEDULE_HEARTBEAT,
    FX_SCHEDULE_JOIN, FX_SYNC_RESPONSE, JF_SKIP_ASSIGNMENT, R_ADD_NEW, R_LEADER_ASSIGNMENT,
    R_LEADER_REJOIN, R_LEAVE, R_PENDING_SYNC, R_SESSION_EXPIRED, R_STATIC_META,
    R_STATIC_PROTOCOL, R_UNLOADED, R_UPDATE_META, RM_LEAVE, RM_LEAVE_BY_INSTANCE,
    RM_PENDING_SYNC, RM_REPLACED, RM_SESSION_TIMEOUT, ST_COMPLETING, ST_DEAD, ST_EMPTY,
    ST_PREPARING, ST_STABLE, Effect, GroupCore, Member,
)
from .native_checked cimport add64, grow, sub64


cdef void* _copied(const void* p, Py_ssize_t n, Py_ssize_t size) except? NULL:
    """A copy of `n` items of `size` bytes at `p` (NULL for none)."""
    if p == NULL or n == 0:
        return NULL
    cdef void* q = grow(NULL, n, size)
    memcpy(q, p, n * size)
    return q


cdef class GroupHandlers(GroupCore):
    """A classic group: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the timers, C-level."""

    def copy(self):
        """The group as it is now, apart (its own C arrays; the lists and dicts copied, their items
        shared: strings, tuples, requests' assignments): `NativeClassicGroup` goes back to it when a
        call is refused half-way (a deadline leaving int64 is found after changes were made)."""
        cdef GroupHandlers c = GroupHandlers.__new__(GroupHandlers)
        c.group_id, c.salt = self.group_id, self.salt
        c.initial_delay_ms, c.min_session_ms = self.initial_delay_ms, self.min_session_ms
        c.max_session_ms, c.new_member_timeout_ms = self.max_session_ms, self.new_member_timeout_ms
        c.require_known_member_id, c.build_objects = self.require_known_member_id, self.build_objects
        c.state, c.previous_state = self.state, self.previous_state
        c.state_timestamp_ms, c.generation_id = self.state_timestamp_ms, self.generation_id
        c.protocol_type, c.protocol, c.leader = self.protocol_type, self.protocol, self.leader
        c.num_awaiting_join, c.num_members = self.num_awaiting_join, self.num_members
        c.num_pending, c.num_pending_sync = self.num_pending, self.num_pending_sync
        c.new_member_added, c.seq = self.new_member_added, self.seq
        c.cap, c.head, c.tail, c.free_head = self.cap, self.head, self.tail, self.free_head
        c.m = <Member*>_copied(self.m, self.cap, sizeof(Member))
        c.m_protocols, c.m_assignment = list(self.m_protocols), list(self.m_assignment)
        c.m_protocol_type = list(self.m_protocol_type)
        c.seq_cap = self.seq_cap
        c.seq_slot = <int64_t*>_copied(self.seq_slot, self.seq_cap, sizeof(int64_t))
        c.ids = list(self.ids)
        c.clients, c.instances = list(self.clients), list(self.instances)
        c.protocols = list(self.protocols)
        c.client_of, c.instance_of = dict(self.client_of), dict(self.instance_of)
        c.protocol_of = dict(self.protocol_of)
        c.inst_cap = self.inst_cap
        c.inst_member = <int64_t*>_copied(self.inst_member, self.inst_cap, sizeof(int64_t))
        memcpy(c.supported, self.supported, sizeof(self.supported))
        c.fx_cap, c.nfx, c.fx_objs = self.fx_cap, self.nfx, list(self.fx_objs)
        c.fx = <Effect*>_copied(self.fx, self.fx_cap, sizeof(Effect))
        c.leave_cap = self.leave_cap
        c.leave_errors = <int*>_copied(self.leave_errors, self.leave_cap, sizeof(int))
        return c

    # ------------------------------------------------------------------ JoinGroup

    cdef int join(self, int64_t client, int64_t member, int64_t instance, object protocols,
                  int64_t session_ms, int64_t rebalance_ms, object protocol_type,
                  int64_t now) except -1:
        """ClassicGroupJoin.join (group.max.size is INT32_MAX: every joining member is accepted)."""
        self._clear()
        if not (self.min_session_ms <= session_ms <= self.max_session_ms):
            self._join_fx(client, E_INVALID_SESSION_TIMEOUT, member)
        elif member == 0:
            self._join_new(client, instance, protocols, session_ms, rebalance_ms, protocol_type, now)
        else:
            self._join_existing(client, member, instance, protocols, session_ms, rebalance_ms,
                                protocol_type, now)
        return 0

    cdef int _join_new(self, int64_t client, int64_t instance, object protocols, int64_t session_ms,
                       int64_t rebalance_ms, object protocol_type, int64_t now) except -1:
        if self.state == ST_DEAD:
            return self._join_fx(client, E_COORDINATOR_NOT_AVAILABLE, 0)
        if not self._supports(protocol_type, protocols):
            return self._join_fx(client, E_INCONSISTENT_GROUP_PROTOCOL, 0)
        prefix = self.instances[instance] if instance >= 0 else None
        cdef int64_t new = self._new_member_id(prefix or self.clients[client])
        cdef Effect* e
        if instance >= 0:
            if self.inst_member[instance] != 0:
                return self._update_static(client, instance, protocols, session_ms, rebalance_ms,
                                           self.inst_member[instance], new, now)
            return self._add_then_rebalance(client, new, instance, protocols, session_ms,
                                            rebalance_ms, protocol_type, now)
        if self.require_known_member_id:
            self.seq_slot[new] = -2
            self.num_pending += 1
            e = self._fx(FX_SCHEDULE_HEARTBEAT)
            e.member, e.deadline = new, add64(now, session_ms)
            return self._join_fx(client, E_MEMBER_ID_REQUIRED, new)
        return self._add_then_rebalance(client, new, instance, protocols, session_ms, rebalance_ms,
                                        protocol_type, now)

    cdef int _join_existing(self, int64_t client, int64_t member, int64_t instance, object protocols,
                            int64_t session_ms, int64_t rebalance_ms, object protocol_type,
                            int64_t now) except -1:
        if self.state == ST_DEAD:
            return self._join_fx(client, E_COORDINATOR_NOT_AVAILABLE, member)
        if not self._supports(protocol_type, protocols):
            return self._join_fx(client, E_INCONSISTENT_GROUP_PROTOCOL, member)
        if member > 0 and member <= self.seq and self.seq_slot[member] == -2:
            return self._add_then_rebalance(client, member, instance, protocols, session_ms,
                                            rebalance_ms, protocol_type, now)
        cdef int err = self.validate_member(member, instance)
        if err != E_NONE:
            return self._join_fx(client, err, member)
        cdef Py_ssize_t s = self.slot_of(member)
        cdef bint leader = self.leader == member
        if self.state == ST_PREPARING:
            self._update_member(s, protocols, session_ms, rebalance_ms, client)
            self._maybe_complete_join_phase(now)
        elif self.state == ST_COMPLETING:
            if self.m_protocols[s] == protocols:
                self._join_response(s, client, leader, 0)
            else:
                self._update_member(s, protocols, session_ms, rebalance_ms, client)
                self._prepare_or_complete(now, R_UPDATE_META, member)
        elif self.state == ST_STABLE:
            if leader or not self.m_protocols[s] == protocols:
                self._update_member(s, protocols, session_ms, rebalance_ms, client)
                self._prepare_or_complete(now, R_LEADER_REJOIN if leader else R_UPDATE_META, member)
            else:
                self._join_response(s, client, False, 0)
        else:  # Empty: the member must reset its generation and rejoin
            self._join_fx(client, E_UNKNOWN_MEMBER_ID, member)
        return 0

    cdef int _add_then_rebalance(self, int64_t client, int64_t member, int64_t instance,
                                 object protocols, int64_t session_ms, int64_t rebalance_ms,
                                 object protocol_type, int64_t now) except -1:
        cdef Py_ssize_t s = self._new_slot()
        cdef Member* x = &self.m[s]
        x.seq, x.instance, x.client_id = member, instance, client
        x.rebalance_ms, x.session_ms, x.is_new = rebalance_ms, session_ms, True
        self.m_protocol_type[s] = protocol_type
        if self.state == ST_PREPARING and self.previous_state == ST_EMPTY:
            self.new_member_added = True
        self._add(s, client)
        self._set_protocols(s, protocols)
        self._reschedule_heartbeat(s, now, self.new_member_timeout_ms)
        return self._prepare_or_complete(now, R_ADD_NEW, member)

    cdef int _update_static(self, int64_t client, int64_t instance, object protocols,
                            int64_t session_ms, int64_t rebalance_ms, int64_t old, int64_t new,
                            int64_t now) except -1:
        """KIP-345: a returning instance id takes over its old member id, keeping its assignment."""
        cdef Py_ssize_t o = self.slot_of(old), s
        cdef Member copy = self.m[o]
        cdef Effect* e = self._fx(FX_CANCEL_HEARTBEAT)
        e.member = old
        if copy.awaiting_join >= 0:
            self._join_fx(copy.awaiting_join, E_FENCED_INSTANCE_ID, old)
            self.num_awaiting_join -= 1
        if copy.awaiting_sync >= 0:
            e = self._fx(FX_SYNC_RESPONSE)
            e.client, e.error = copy.awaiting_sync, E_FENCED_INSTANCE_ID
        protocols_old, assignment, ptype = self.m_protocols[o], self.m_assignment[o], self.m_protocol_type[o]
        self._unlink(o)  # its protocols stay counted in `supported`: the new member takes them over
        s = self._new_slot()
        cdef Py_ssize_t prev = self.m[s].prev
        self.m[s] = copy
        self.m[s].prev, self.m[s].next, self.m[s].seq, self.m[s].client_id = prev, -1, new, client
        self.m[s].awaiting_join = self.m[s].awaiting_sync = -1
        self.m[s].is_new = self.m[s].pending_sync = False
        self.m_protocols[s], self.m_assignment[s], self.m_protocol_type[s] = protocols_old, assignment, ptype
        self.seq_slot[new] = s
        if self.leader == old:
            self.leader = new
        self.inst_member[instance] = new
        self._removed_fx(old, copy.instance, RM_REPLACED)
        self._reschedule_heartbeat(s, now, self.m[s].session_ms)
        self._update_member(s, protocols, session_ms, rebalance_ms, client)
        if self.state == ST_STABLE:
            selected = self.protocols[self._select_protocol()]
            if (self.protocols[self.protocol] if self.protocol >= 0 else "") == selected:
                # no rebalance: the current generation; the member syncs its old assignment
                e = self._fx(FX_METADATA_CHANGED)
                if self.build_objects:
                    e.obj = len(self.fx_objs)
                    self.fx_objs.append(self.snapshot())
                if self.leader == new:
                    self._join_response(s, self.m[s].awaiting_join, True, JF_SKIP_ASSIGNMENT)
                else:
                    self._join_response(s, self.m[s].awaiting_join, False, 0)
                self.m[s].awaiting_join = -1
                self.num_awaiting_join -= 1
            else:
                self._prepare_or_complete(now, R_STATIC_PROTOCOL, new)
        elif self.state == ST_COMPLETING:
            self._prepare_rebalance(now, R_STATIC_META, new)
        else:
            self._maybe_complete_join_phase(now)
        return 0

    cdef int _remove_current(self, int64_t member, int reason) except -1:
        """ClassicGroup._remove_current_member."""
        cdef Py_ssize_t s = self.slot_of(member)
        cdef Effect* e = self._fx(FX_CANCEL_HEARTBEAT)
        e.member = member
        self._complete_join_unknown(s)
        cdef int64_t inst = self.m[s].instance
        self._remove(member)
        return self._removed_fx(member, inst, reason)

    # ------------------------------------------------------------------ SyncGroup

    cdef int sync(self, int64_t client, int64_t member, int64_t instance, int64_t generation,
                  object protocol_type, int protocol, object assignments, int64_t now) except -1:
        """ClassicGroup.sync; `protocol` -1 is None."""
        self._clear()
        cdef int err
        cdef Effect* e
        cdef Py_ssize_t s, x
        if self.state == ST_DEAD:
            err = E_COORDINATOR_NOT_AVAILABLE
        else:
            err = self.validate_member(member, instance)
            if err == E_NONE and generation != self.generation_id:
                err = E_ILLEGAL_GENERATION
            if err == E_NONE and (
                (protocol_type is not None and self.protocol_type is not None
                 and protocol_type != self.protocol_type)
                or (protocol >= 0 and self.protocol >= 0 and protocol != self.protocol)):
                err = E_INCONSISTENT_GROUP_PROTOCOL
        if err == E_NONE and self.state == ST_PREPARING:
            err = E_REBALANCE_IN_PROGRESS
        if err != E_NONE:
            e = self._fx(FX_SYNC_RESPONSE)
            e.client, e.error = client, err
            return 0
        s = self.slot_of(member)
        if self.state == ST_COMPLETING:
            self.m[s].awaiting_sync = client
            self._remove_pending_sync(s)
            if self.leader == member:
                assignment = dict(assignments or {})
                x = self.head
                while x >= 0:
                    self.m_assignment[x] = assignment.get(self.ids[self.m[x].seq])
                    x = self.m[x].next
                self._propagate(E_NONE, now)
                self._state_fx(ST_STABLE, now, R_LEADER_ASSIGNMENT, 0)
                e = self._fx(FX_METADATA_CHANGED)
                if self.build_objects:
                    e.obj = len(self.fx_objs)
                    self.fx_objs.append(self.snapshot())
        elif self.state == ST_STABLE:
            self._remove_pending_sync(s)
            e = self._fx(FX_SYNC_RESPONSE)
            e.client, e.error, e.c, e.obj = client, E_NONE, self.protocol, len(self.fx_objs)
            self.fx_objs.append(self.m_assignment[s])
        return 0

    cdef int _remove_pending_sync(self, Py_ssize_t s) except -1:
        if self.m[s].pending_sync:
            self.m[s].pending_sync = False
            self.num_pending_sync -= 1
        if self.num_pending_sync == 0 or not (self.state == ST_COMPLETING or self.state == ST_STABLE):
            self._fx(FX_CANCEL_SYNC)
        return 0

    # ------------------------------------------------------------------ Heartbeat

    cdef int heartbeat(self, int64_t client, int64_t member, int64_t instance, int64_t generation,
                       int64_t now) except -1:
        self._clear()
        cdef int err, state = self.state
        cdef Py_ssize_t s
        if state == ST_DEAD:
            err = E_COORDINATOR_NOT_AVAILABLE
        else:
            err = self.validate_member(member, instance)
            if err == E_NONE and generation != self.generation_id:
                err = E_ILLEGAL_GENERATION
            if err == E_NONE:
                if state == ST_EMPTY:
                    err = E_UNKNOWN_MEMBER_ID
                else:
                    s = self.slot_of(member)
                    self._reschedule_heartbeat(s, now, self.m[s].session_ms)
                    if state == ST_PREPARING:
                        err = E_REBALANCE_IN_PROGRESS
        cdef Effect* e = self._fx(FX_HEARTBEAT_RESPONSE)
        e.client, e.error = client, err
        return 0

    # ------------------------------------------------------------------ LeaveGroup

    cdef int leave(self, int64_t client, int64_t* members, int64_t* instances, Py_ssize_t n,
                   int64_t now) except -1:
        """ClassicGroup.leave; the member errors go to `leave_errors[0:n]` (the response's a, b)."""
        self._clear()
        cdef Effect* e
        if self.state == ST_DEAD:
            e = self._fx(FX_LEAVE_RESPONSE)
            e.client, e.error = client, E_COORDINATOR_NOT_AVAILABLE
            return 0
        if n > self.leave_cap:
            self.leave_errors = <int*>grow(self.leave_errors, 2 * n, sizeof(int))
            self.leave_cap = 2 * n
        cdef Py_ssize_t i
        cdef int64_t mid, inst
        cdef int err
        names = []
        for i in range(n):
            mid, inst = members[i], instances[i]
            if mid == 0:
                if inst >= 0 and self.inst_member[inst] != 0:
                    self._remove_current(self.inst_member[inst], RM_LEAVE_BY_INSTANCE)
                    err = E_NONE
                else:
                    err = E_UNKNOWN_MEMBER_ID
            elif mid > 0 and mid <= self.seq and self.seq_slot[mid] == -2:
                self._remove(mid)
                e = self._fx(FX_CANCEL_HEARTBEAT)
                e.member = mid
                err = E_NONE
            else:
                err = self.validate_member(mid, inst)
                if err == E_NONE:
                    self._remove_current(mid, RM_LEAVE)
            self.leave_errors[i] = err
            if err == E_NONE:
                names.append(self.ids[mid] if mid != 0 else str(self.instances[inst]))
        if names:
            self.fx_objs.append("explicit LeaveGroup from " + ", ".join(names))
            if self.state == ST_STABLE or self.state == ST_COMPLETING:
                self._prepare_or_complete(now, R_LEAVE, len(self.fx_objs) - 1)
            elif self.state == ST_PREPARING:
                self._maybe_complete_join_phase(now)
        e = self._fx(FX_LEAVE_RESPONSE)
        e.client, e.error, e.a, e.b = client, E_NONE, 0, n
        return 0

    # ------------------------------------------------------------------ timers

    cdef int heartbeat_expired(self, int64_t member, int64_t now) except -1:
        """on_timer(("heartbeat", member id), None): ClassicGroup._expire_heartbeat."""
        self._clear()
        if self.state == ST_DEAD:
            return 0
        if member > 0 and member <= self.seq and self.seq_slot[member] == -2:
            self._remove(member)
            if self.state == ST_PREPARING and self._all_joined():
                self._complete_join(now)
            return 0
        cdef Py_ssize_t s = self.slot_of(member)
        if s < 0 or (not self.m[s].is_new and (self.m[s].awaiting_join >= 0 or self.m[s].awaiting_sync >= 0)):
            return 0
        self._complete_join_unknown(s)
        cdef int64_t inst = self.m[s].instance
        self._remove(member)
        self._removed_fx(member, inst, RM_SESSION_TIMEOUT)
        if self.state == ST_STABLE or self.state == ST_COMPLETING:
            self._prepare_or_complete(now, R_SESSION_EXPIRED, member)
        elif self.state == ST_PREPARING and self._all_joined():
            self._complete_join(now)
        return 0

    cdef int join_timer(self, bint initial, int64_t delay, int64_t remaining, int64_t now) except -1:
        """on_timer(("join",), ("initial", delay, remaining) or ("join",))."""
        self._clear()
        cdef Effect* e
        cdef int64_t new_delay
        if self.state != ST_PREPARING:
            return 0
        if initial and self.new_member_added and remaining != 0:
            self.new_member_added = False
            new_delay = self.initial_delay_ms if self.initial_delay_ms < remaining else remaining
            e = self._fx(FX_SCHEDULE_JOIN)
            e.deadline, e.flags, e.a = add64(now, new_delay), 1, new_delay
            e.b = sub64(remaining, delay)
            if e.b < 0:
                e.b = 0
            return 0
        return self._complete_join(now)

    cdef int sync_timer(self, int64_t generation, int64_t now) except -1:
        """on_timer(("sync",), ("sync", generation)): ClassicGroup._expire_pending_sync."""
        self._clear()
        if generation != self.generation_id or not (
                self.state == ST_COMPLETING or self.state == ST_STABLE):
            return 0
        if self.num_pending_sync == 0:
            return 0
        cdef Py_ssize_t s = self.head
        cdef int64_t mid, inst
        cdef Effect* e
        late = []
        while s >= 0:
            if self.m[s].pending_sync:
                late.append(self.m[s].seq)
            s = self.m[s].next
        late.sort(key=self.ids.__getitem__)  # sorted(pending_sync): by member id
        for mid in late:
            inst = self.m[self.slot_of(mid)].instance
            self._remove(mid)
            e = self._fx(FX_CANCEL_HEARTBEAT)
            e.member = mid
            self._removed_fx(mid, inst, RM_PENDING_SYNC)
        return self._prepare_rebalance(now, R_PENDING_SYNC, 0)

    cdef int mark_dead(self, int64_t now) except -1:
        """ClassicGroupBase.mark_dead: the coordinator unloads the group."""
        self._clear()
        return self._state_fx(ST_DEAD, now, R_UNLOADED, 0)
