# cython: language_level=3, boundscheck=False, wraparound=False
"""The native classic group (`native_group_handlers.pyx`) with the reference's objects in and out:
`NativeClassicGroup` takes `group/classic_messages.py`'s requests and timer keys and returns their
effects as `ClassicGroup` does, for the tests that drive both side by side
(tests/test_sim_native_group.py, tests/test_sim_native_group_replay.py). A native world calls the
C-level API instead; building these objects is what that API saves (bench/group_tape.pyx measures it).

Times, timeouts and generations are ints, as `ClassicGroup` takes them: anything else (a float, a
numpy integer) is refused with its TypeError (`classic_member.ints`) before the core sees it, where
the C conversion would truncate it; a deadline that would leave int64 is refused (OverflowError) by
the core's checked sums, and the group is then as it was before the call: a call whose times and
timeouts might reach int64's end (any at or past 2**62, or negative) runs after a copy of the group
(`GroupCore.copy`), which a refusal puts back; the others cannot overflow and run as they are.
"""

from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc

from .native_group_core cimport (
    FX_CANCEL_HEARTBEAT, FX_CANCEL_JOIN, FX_CANCEL_SYNC, FX_HEARTBEAT_RESPONSE, FX_JOIN_RESPONSE,
    FX_LEAVE_RESPONSE, FX_MEMBER_REMOVED, FX_METADATA_CHANGED, FX_SCHEDULE_HEARTBEAT,
    FX_SCHEDULE_JOIN, FX_SCHEDULE_SYNC, FX_STATE_CHANGED, FX_SYNC_RESPONSE, JF_MEMBERS,
    JF_SKIP_ASSIGNMENT, R_LEAVE, Effect,
)
from .native_group_handlers cimport GroupHandlers

from ..group.classic_member import ints
from ..group.classic_messages import (
    HEARTBEAT, JOIN_KEY, SYNC_KEY, CancelTimer, GroupMetadataChanged, HeartbeatRequest,
    HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse,
    MemberRemoved, ScheduleTimer, StateChanged, SyncGroupRequest, SyncGroupResponse,
)
from ..group.classic_state import ClassicGroupState
from ..group.errors import Errors
from .native_group_core import REASONS

STATES = (ClassicGroupState.EMPTY, ClassicGroupState.PREPARING_REBALANCE,
          ClassicGroupState.COMPLETING_REBALANCE, ClassicGroupState.STABLE, ClassicGroupState.DEAD)
ERRORS = {e.value: e for e in Errors}
CANCEL_JOIN = CancelTimer(JOIN_KEY)
CANCEL_SYNC = CancelTimer(SYNC_KEY)
# times and timeouts below this: a sum or a difference of two of them stays inside int64
cdef int64_t SAFE = 1 << 62


cdef inline bint _narrow(int64_t a, int64_t b, int64_t c) noexcept:
    return 0 <= a < SAFE and 0 <= b < SAFE and 0 <= c < SAFE


cdef class NativeClassicGroup:
    """`ClassicGroup(group_id, config, member_id_salt=..., now_ms=...)`'s answers, from the twin."""

    cdef readonly GroupHandlers core
    cdef dict _handles  # member id string -> handle (the strings this group made)
    cdef bint _wide  # a timeout of the config or of a join was outside [0, SAFE): copy every call

    def __init__(self, str group_id, config, *, str member_id_salt="", now_ms=0):
        ints(now_ms)
        self.core = GroupHandlers(group_id, config, member_id_salt=member_id_salt, now_ms=now_ms)
        self.core.build_objects = True
        self._handles = {}
        self._wide = not (
            _narrow(config.initial_rebalance_delay_ms, config.new_member_join_timeout_ms, 0)
            and _narrow(config.min_session_timeout_ms, config.max_session_timeout_ms, 0))

    def copy(self):
        """This group as it is now, apart (the core's `copy`)."""
        cdef NativeClassicGroup c = NativeClassicGroup.__new__(NativeClassicGroup)
        c.core, c._handles, c._wide = self.core.copy(), dict(self._handles), self._wide
        return c

    cdef object _before(self, int64_t now, int64_t a, int64_t b):
        """The group to go back to if this call is refused: None when it cannot be (every time and
        timeout it may add narrow)."""
        if not self._wide and _narrow(now, a, b):
            return None
        return self.core.copy()

    cdef int _refused(self, object before) except -1:
        """A call was refused (OverflowError): the group as it was before it."""
        if before is not None:
            self.core = before
        return 0

    cdef int64_t _member(self, str member_id) except -2:
        """A member id's handle: 0 for "", -1 for an id this group never made."""
        if not member_id:
            return 0
        cdef Py_ssize_t k
        if len(self._handles) + 1 < len(self.core.ids):
            for k in range(len(self._handles) + 1, len(self.core.ids)):
                self._handles[self.core.ids[k]] = k
        return self._handles.get(member_id, -1)

    def member_handle(self, str member_id):
        """The core's handle of a member id (0 for "", -1 for one this group never made)."""
        return self._member(member_id)

    # ------------------------------------------------------------------ the reference's API

    @property
    def state(self):
        return STATES[self.core.state]

    @property
    def generation_id(self):
        return self.core.generation_id

    @property
    def protocol_type(self):
        return self.core.protocol_type

    @property
    def state_timestamp_ms(self):
        return self.core.state_timestamp_ms

    @property
    def previous_state(self):
        return None if self.core.previous_state < 0 else STATES[self.core.previous_state]

    @property
    def leader_id(self):
        return None if self.core.leader == 0 else self.core.ids[self.core.leader]

    @property
    def protocol_name(self):
        return None if self.core.protocol < 0 else self.core.protocols[self.core.protocol]

    def member_ids(self):
        """The members' ids in insertion order (`list(ClassicGroup.members)`)."""
        out = []
        cdef Py_ssize_t s = self.core.head
        while s >= 0:
            out.append(self.core.ids[self.core.m[s].seq])
            s = self.core.m[s].next
        return out

    def snapshot(self):
        return self.core.snapshot()

    def handle(self, event, now_ms):
        t = type(event)
        if t is JoinGroupRequest:
            return self.join(event, now_ms)
        if t is SyncGroupRequest:
            return self.sync(event, now_ms)
        if t is HeartbeatRequest:
            return self.heartbeat(event, now_ms)
        if t is LeaveGroupRequest:
            return self.leave(event, now_ms)
        if t is tuple and len(event) == 2:
            return self.on_timer(event[0], event[1], now_ms)
        raise TypeError(f"not a classic group event: {event!r}")

    def join(self, req, now_ms):
        ints(now_ms, req.session_timeout_ms, req.rebalance_timeout_ms)
        before = self._before(now_ms, req.session_timeout_ms, req.rebalance_timeout_ms)
        if not _narrow(req.session_timeout_ms, req.rebalance_timeout_ms, 0):
            self._wide = True  # the member may keep them: every later call may reach int64's end
        try:
            self.core.join(
                self.core.client_handle(req.client), self._member(req.member_id),
                self.core.instance_handle(req.group_instance_id), req.protocols,
                req.session_timeout_ms, req.rebalance_timeout_ms, req.protocol_type, now_ms)
        except OverflowError:
            self._refused(before)
            raise
        return self._effects(req.member_id, None)

    def sync(self, req, now_ms):
        ints(now_ms, req.generation_id)
        before = self._before(now_ms, 0, 0)
        try:
            self.core.sync(
                self.core.client_handle(req.client), self._member(req.member_id),
                self.core.instance_handle(req.group_instance_id), req.generation_id,
                req.protocol_type,
                -1 if req.protocol_name is None else self.core.protocol_handle(req.protocol_name),
                req.assignments, now_ms)
        except OverflowError:
            self._refused(before)
            raise
        return self._effects(req.member_id, None)

    def heartbeat(self, req, now_ms):
        ints(now_ms, req.generation_id)
        before = self._before(now_ms, 0, 0)
        try:
            self.core.heartbeat(
                self.core.client_handle(req.client), self._member(req.member_id),
                self.core.instance_handle(req.group_instance_id), req.generation_id, now_ms)
        except OverflowError:
            self._refused(before)
            raise
        return self._effects(req.member_id, None)

    def leave(self, req, now_ms):
        ints(now_ms)
        cdef Py_ssize_t i, n = len(req.members)
        before = self._before(now_ms, 0, 0)
        cdef int64_t* buf = <int64_t*>malloc((2 * n + 1) * sizeof(int64_t))
        if buf == NULL:
            raise MemoryError()
        try:
            for i in range(n):
                mid, inst = req.members[i]
                buf[i], buf[n + i] = self._member(mid), self.core.instance_handle(inst)
            self.core.leave(self.core.client_handle(req.client), buf, buf + n, n, now_ms)
        except OverflowError:
            self._refused(before)
            raise
        finally:
            free(buf)
        return self._effects("", req.members)

    def on_timer(self, key, payload, now_ms):
        ints(now_ms)
        if payload and len(payload) > 1:
            ints(*payload[1:])  # the delays or the generation the group scheduled
        kind = key[0]
        initial = kind == "join" and payload and payload[0] == "initial"
        if initial:
            _, delay, remaining = payload
            before = self._before(now_ms, delay, remaining)
        else:
            before = self._before(now_ms, 0, 0)
        try:
            if kind == HEARTBEAT:
                self.core.heartbeat_expired(self._member(key[1]), now_ms)
            elif kind == "join":
                self.core.join_timer(initial, delay if initial else 0,
                                     remaining if initial else 0, now_ms)
            elif kind == "sync":
                self.core.sync_timer(payload[1] if payload else self.core.generation_id, now_ms)
            else:
                self.core._clear()
        except OverflowError:
            self._refused(before)
            raise
        return self._effects("", None)

    def validate_offset_commit(self, member_id, group_instance_id, generation_id):
        ints(generation_id)
        return ERRORS[self.core.validate_offset_commit(
            self._member(member_id), self.core.instance_handle(group_instance_id), generation_id)]

    def mark_dead(self, now_ms):
        ints(now_ms)
        before = self._before(now_ms, 0, 0)
        try:
            self.core.mark_dead(now_ms)
        except OverflowError:
            self._refused(before)
            raise
        return self._effects("", None)

    # ------------------------------------------------------------------ effects as objects

    cdef str _id(self, int64_t member, str own):
        return own if member < 0 else self.core.ids[member]

    cdef object _reason(self, Effect* e):
        if e.reason == R_LEAVE:
            return self.core.fx_objs[e.obj]
        text = REASONS.get(e.reason, "")
        return text.format(self.core.ids[e.member]) if "{}" in text else text

    cdef list _effects(self, str own, object leave_members):
        """The core's effects of the last call, as the reference's objects, in order."""
        out = []
        cdef Py_ssize_t i
        cdef Effect* e
        for i in range(self.core.nfx):
            e = &self.core.fx[i]
            k = e.kind
            if k == FX_SCHEDULE_HEARTBEAT:
                out.append(ScheduleTimer((HEARTBEAT, self.core.ids[e.member]), e.deadline, None))
            elif k == FX_SCHEDULE_JOIN:
                payload = ("initial", e.a, e.b) if e.flags & 1 else ("join",)
                out.append(ScheduleTimer(JOIN_KEY, e.deadline, payload))
            elif k == FX_SCHEDULE_SYNC:
                out.append(ScheduleTimer(SYNC_KEY, e.deadline, ("sync", e.a)))
            elif k == FX_CANCEL_HEARTBEAT:
                out.append(CancelTimer((HEARTBEAT, self.core.ids[e.member])))
            elif k == FX_CANCEL_JOIN:
                out.append(CANCEL_JOIN)
            elif k == FX_CANCEL_SYNC:
                out.append(CANCEL_SYNC)
            elif k == FX_JOIN_RESPONSE:
                out.append(JoinGroupResponse(
                    self.core.clients[e.client], ERRORS[e.error], self._id(e.member, own), e.a,
                    None if e.c < 0 else self.core.protocols[e.c], self.core.ids[e.b],
                    self.core.fx_objs[e.obj] if e.flags & JF_MEMBERS else (),
                    bool(e.flags & JF_SKIP_ASSIGNMENT)))
            elif k == FX_SYNC_RESPONSE:
                out.append(SyncGroupResponse(
                    self.core.clients[e.client], ERRORS[e.error],
                    None if e.obj < 0 else self.core.fx_objs[e.obj],
                    None if e.c < 0 else self.core.protocols[e.c]))
            elif k == FX_HEARTBEAT_RESPONSE:
                out.append(HeartbeatResponse(self.core.clients[e.client], ERRORS[e.error]))
            elif k == FX_LEAVE_RESPONSE:
                results = tuple([(leave_members[j][0], ERRORS[self.core.leave_errors[j]])
                                 for j in range(e.a, e.b)])
                out.append(LeaveGroupResponse(self.core.clients[e.client], ERRORS[e.error], results))
            elif k == FX_STATE_CHANGED:
                out.append(StateChanged(STATES[e.a], STATES[e.b], e.c, self._reason(e)))
            elif k == FX_MEMBER_REMOVED:
                out.append(MemberRemoved(
                    self.core.ids[e.member], None if e.instance < 0 else self.core.instances[e.instance],
                    REASONS[e.reason]))
            elif k == FX_METADATA_CHANGED:
                out.append(GroupMetadataChanged(self.core.fx_objs[e.obj]))
        return out
