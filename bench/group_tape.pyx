# cython: language_level=3, boundscheck=False, wraparound=False
"""The classic group twin's C-level API driven from C: recorded group calls as C structs, replayed
through `GroupHandlers` (sim/native_group_handlers.pxd) without building a request or an effect
object, what a native world's calls cost. Built and run by bench/sim_group_replay.py (moved out of
the shipped sim/native_group.pyx: a benchmark driver, review 8 S5).

`CallTape.run` reads every effect of every call as a caller dispatching on them would, and folds
each one's (kind, error, deadline) into `digest` (FNV-1a over 64 bits); `effects_digest` takes the
same digest from the object API's effect objects, so the bench checks the C-level replay answered
every call as the object API did, not only that it ended in the same state (review 8 S2).
"""

from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memset

from kafka_rebalance.sim.native_group_handlers cimport GroupHandlers

from kafka_rebalance.group.classic_messages import (
    HEARTBEAT, CancelTimer, GroupMetadataChanged, HeartbeatResponse, JoinGroupResponse,
    LeaveGroupResponse, MemberRemoved, ScheduleTimer, StateChanged, SyncGroupResponse,
)

cdef uint64_t FNV_OFFSET = 14695981039346656037ULL
cdef uint64_t FNV_PRIME = 1099511628211ULL


cdef inline uint64_t _fold(uint64_t h, int64_t x) noexcept:
    h ^= <uint64_t>x
    return h * FNV_PRIME


# the core's effect kinds (native_group_core.pxd's FX_*) of the object API's effects
_TIMER_KIND = {"heartbeat": 0, "join": 1, "sync": 2}
_KIND = {JoinGroupResponse: 6, SyncGroupResponse: 7, HeartbeatResponse: 8, LeaveGroupResponse: 9,
         StateChanged: 10, MemberRemoved: 11, GroupMetadataChanged: 12}


def effects_digest(list answers):
    """`CallTape.run`'s digest from the object API's answers, in call order: each effect's kind,
    Kafka error code (0 when it has none) and deadline (0 unless it schedules a timer); a commit
    validation's answer is its error code."""
    cdef uint64_t h = FNV_OFFSET
    for answer in answers:
        if type(answer) is not list:  # validate_offset_commit: an Errors
            h = _fold(h, 100 + answer.value)
            continue
        for e in answer:
            t = type(e)
            if t is ScheduleTimer:
                kind, deadline = _TIMER_KIND[e.key[0]], e.deadline_ms
            elif t is CancelTimer:
                kind, deadline = 3 + _TIMER_KIND[e.key[0]], 0
            else:
                kind, deadline = _KIND[t], 0
            err = getattr(e, "error", None)
            h = _fold(_fold(_fold(h, kind), 0 if err is None else err.value), deadline)
    return h


cdef enum:
    T_JOIN = 0
    T_SYNC = 1
    T_HEARTBEAT = 2
    T_LEAVE = 3
    T_HB_TIMER = 4
    T_JOIN_TIMER = 5
    T_SYNC_TIMER = 6
    T_COMMIT = 7

cdef struct Call:
    int kind
    int64_t client, member, instance, generation, session_ms, rebalance_ms, now, a, b
    int protocol
    Py_ssize_t obj  # index into the tape's objects (protocols, assignments, leave lists)


cdef class CallTape:
    """Recorded group calls as C structs, replayed through the C-level API (`run`). The handles are
    those of `model` (a `NativeClassicGroup` that answered the same calls), so a fresh core given
    its names in the same order makes the same member ids."""

    cdef Call* calls
    cdef Py_ssize_t n, cap
    cdef list objs
    cdef object model
    cdef readonly uint64_t digest

    def __cinit__(self):
        self.calls, self.n, self.cap = NULL, 0, 0

    def __init__(self, model):
        self.model, self.objs = model, []

    def __dealloc__(self):
        free(self.calls)

    def __len__(self):
        return self.n

    cdef Call* _add(self, int kind, int64_t now) except NULL:
        if self.n == self.cap:
            self.cap = 2 * self.cap + 1024
            p = realloc(self.calls, self.cap * sizeof(Call))
            if p == NULL:
                raise MemoryError()
            self.calls = <Call*>p
        cdef Call* c = &self.calls[self.n]
        self.n += 1
        memset(c, 0, sizeof(Call))
        c.kind, c.now, c.obj, c.protocol = kind, now, -1, -1
        return c

    cdef Py_ssize_t _obj(self, value):
        self.objs.append(value)
        return len(self.objs) - 1

    def add(self, str method, tuple args):
        """One call as `ClassicGroup.<method>(*args)` takes it, turned into handles now."""
        cdef GroupHandlers g = <GroupHandlers?>self.model.core
        cdef Call* c
        if method in ("join", "sync", "heartbeat"):
            req, now = args
            kind = T_JOIN if method == "join" else T_SYNC if method == "sync" else T_HEARTBEAT
            c = self._add(kind, now)
            c.client = g.client_handle(req.client)
            c.member = self.model.member_handle(req.member_id)
            c.instance = g.instance_handle(req.group_instance_id)
            if method == "join":
                c.session_ms, c.rebalance_ms = req.session_timeout_ms, req.rebalance_timeout_ms
                c.obj = self._obj((req.protocols, req.protocol_type))
            else:
                c.generation = req.generation_id
            if method == "sync":
                if req.protocol_name is not None:
                    c.protocol = g.protocol_handle(req.protocol_name)
                c.obj = self._obj((req.protocol_type, req.assignments))
        elif method == "leave":
            req, now = args
            c = self._add(T_LEAVE, now)
            c.client = g.client_handle(req.client)
            c.obj = self._obj([(self.model.member_handle(m), g.instance_handle(i)) for m, i in req.members])
        elif method == "on_timer":
            key, payload, now = args
            if key[0] == HEARTBEAT:
                c = self._add(T_HB_TIMER, now)
                c.member = self.model.member_handle(key[1])
            elif key[0] == "join":
                c = self._add(T_JOIN_TIMER, now)
                if payload and payload[0] == "initial":
                    c.a, c.b, c.generation = payload[1], payload[2], 1
            else:
                c = self._add(T_SYNC_TIMER, now)
                c.generation = payload[1]
        elif method == "validate_offset_commit":
            member_id, instance, generation = args
            c = self._add(T_COMMIT, 0)
            c.member = self.model.member_handle(member_id)
            c.instance = g.instance_handle(instance)
            c.generation = generation
        else:
            raise ValueError(method)

    def fresh_core(self, str group_id, config, str member_id_salt="", int64_t now_ms=0):
        """A new core knowing the model's names under the same handles (the members' ids it makes
        itself, in the same order, as the model did)."""
        cdef GroupHandlers g = GroupHandlers(group_id, config, member_id_salt=member_id_salt, now_ms=now_ms)
        for client in self.model.core.clients:
            g.client_handle(client)
        for instance in self.model.core.instances:
            g.instance_handle(instance)
        for name in self.model.core.protocols:
            g.protocol_handle(name)
        return g

    def run(self, GroupHandlers g):
        """Every call through the C-level API, each call's effects read in order (folded into
        `digest`, as a caller dispatching on them would read them); returns the digest."""
        cdef Py_ssize_t i, j, k, n
        cdef Call* c
        cdef uint64_t total = FNV_OFFSET
        cdef int64_t* buf = NULL
        cdef Py_ssize_t buf_cap = 0
        try:
            for i in range(self.n):
                c = &self.calls[i]
                if c.kind == T_JOIN:
                    protocols, ptype = self.objs[c.obj]
                    g.join(c.client, c.member, c.instance, protocols, c.session_ms,
                           c.rebalance_ms, ptype, c.now)
                elif c.kind == T_SYNC:
                    ptype, assignments = self.objs[c.obj]
                    g.sync(c.client, c.member, c.instance, c.generation, ptype, c.protocol,
                           assignments, c.now)
                elif c.kind == T_HEARTBEAT:
                    g.heartbeat(c.client, c.member, c.instance, c.generation, c.now)
                elif c.kind == T_LEAVE:
                    pairs = self.objs[c.obj]
                    n = len(pairs)
                    if 2 * n > buf_cap:
                        buf_cap = 2 * n
                        buf = <int64_t*>realloc(buf, buf_cap * sizeof(int64_t))
                        if buf == NULL:
                            raise MemoryError()
                    for j in range(n):
                        buf[j], buf[n + j] = pairs[j]
                    g.leave(c.client, buf, buf + n, n, c.now)
                elif c.kind == T_HB_TIMER:
                    g.heartbeat_expired(c.member, c.now)
                elif c.kind == T_JOIN_TIMER:
                    g.join_timer(c.generation == 1, c.a, c.b, c.now)
                elif c.kind == T_SYNC_TIMER:
                    g.sync_timer(c.generation, c.now)
                else:
                    total = _fold(total, 100 + g.validate_offset_commit(c.member, c.instance, c.generation))
                    continue
                for k in range(g.nfx):
                    total = _fold(_fold(_fold(total, g.fx[k].kind), g.fx[k].error), g.fx[k].deadline)
        finally:
            free(buf)
        self.digest = total
        return total
