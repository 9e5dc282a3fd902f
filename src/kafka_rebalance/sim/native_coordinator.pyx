# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The classic group coordinator node on the native group twin: `coordinator.ClassicCoordinator`, line
by line, driving `native_group_handlers.GroupHandlers` through its C-level API (docs/sim-native.md,
M2). It makes the reference's world calls in the reference's order (the same `loop.at`/`set_timer`,
`emit` rows, replies and response objects, heartbeat elision, the commit path and the offsets
store), so a run with it is the reference's run (tests/test_sim_native_fingerprints.py).

The group's timers are keyed by ints instead of the reference's `(epoch, ("heartbeat", member id))`
tuples (a member id handle, -1 the join timer, -2 the sync timer): one key per reference key, so the
engine queues the same events. What `classic_native.native_support` does not claim is refused with
NotImplementedError, never guessed: coordinator failover, `log_append_ms`, static membership,
`group.max.size`, a first assignor that is not client-side (range, roundrobin, sticky,
cooperative-sticky: the group twin runs either rebalance protocol alike).

The world's calls are few and named (`loop`, `reply`, `reply_many`, `emit`, `members`,
`on_generation`, `pending_cause`, the partition table and the scenario): on a native world
(`native_world_base.WorldBase`) they are C calls through its vtable, on the reference's world
(`world.Simulation`, mypyc) Python calls; the same calls in the same order either way.
"""

import re

from libc.stdint cimport int64_t

cdef extern from "Python.h":
    Py_ssize_t PyUnicode_FindChar(object s, Py_UCS4 ch, Py_ssize_t start, Py_ssize_t end,
                                  int direction) except -2
from libc.stdlib cimport free, malloc
from libc.string cimport memset

from .native_group_core cimport (
    E_MEMBER_ID_REQUIRED, E_NONE, FX_CANCEL_HEARTBEAT, FX_CANCEL_JOIN, FX_CANCEL_SYNC,
    FX_HEARTBEAT_RESPONSE, FX_JOIN_RESPONSE, FX_LEAVE_RESPONSE, FX_MEMBER_REMOVED,
    FX_METADATA_CHANGED, FX_SCHEDULE_HEARTBEAT, FX_SCHEDULE_JOIN, FX_SCHEDULE_SYNC,
    FX_STATE_CHANGED, FX_SYNC_RESPONSE, JF_MEMBERS, JF_SKIP_ASSIGNMENT, R_LEAVE, ST_COMPLETING,
    ST_EMPTY, ST_PREPARING, ST_STABLE, Effect,
)
from .native_checked cimport grow, new_tuple_of
from .native_engine cimport EventLoop
from .native_group_handlers cimport GroupHandlers
from .native_members cimport PartitionColumns, Triples
from .native_world_base cimport WorldBase

from ..group.classic_group import ClassicGroupConfig
from ..group.classic_messages import (
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest,
    SyncGroupRequest, SyncGroupResponse,
)
from ..group.consumer_client import MemberState
from ..group.errors import Errors
from . import classic_native
from .compiled import KERNELS
from .native_group_core import REASONS, STATE_NAMES
from .offsets_store import SimOffsetsStore

_MEMBER_ID = re.compile(r"([^\s,#]+)(?:#\d+)?-\d+-[0-9a-f]{8}")  # coordinator._MEMBER_ID
cdef dict ERRORS = {e.value: e for e in Errors}
cdef object _NONE = Errors.NONE
cdef object _MEMBER_STABLE = MemberState.STABLE
cdef object _k_store_commits = KERNELS.store_commits
# the responses built as their NamedTuple's __new__ builds them (tuple.__new__(cls, fields)): the same
# objects, without the generated Python-level __new__ (native_checked.new_tuple_of)
cdef type _JOIN_REQUEST = JoinGroupRequest
cdef type _SYNC_REQUEST = SyncGroupRequest
cdef type _HEARTBEAT_REQUEST = HeartbeatRequest
cdef type _LEAVE_REQUEST = LeaveGroupRequest
for _r in (JoinGroupRequest, SyncGroupRequest, HeartbeatRequest, LeaveGroupRequest):
    if _r._fields[0] != "client":
        raise ImportError(f"{_r.__name__}'s first field is not client: native_coordinator.receive")
# a request's fields by position (a NamedTuple's attribute is its item at the field's index)
cdef Py_ssize_t JR_MEMBER, JR_INSTANCE, JR_PROTOCOLS, JR_SESSION, JR_REBALANCE, JR_TYPE
cdef Py_ssize_t SR_MEMBER, SR_INSTANCE, SR_GENERATION, SR_TYPE, SR_PROTOCOL, SR_ASSIGNMENTS
cdef Py_ssize_t HR_MEMBER, HR_INSTANCE, HR_GENERATION
JR_MEMBER, JR_INSTANCE, JR_PROTOCOLS, JR_SESSION, JR_REBALANCE, JR_TYPE = [
    JoinGroupRequest._fields.index(n) for n in ("member_id", "group_instance_id", "protocols",
                                                "session_timeout_ms", "rebalance_timeout_ms",
                                                "protocol_type")]
SR_MEMBER, SR_INSTANCE, SR_GENERATION, SR_TYPE, SR_PROTOCOL, SR_ASSIGNMENTS = [
    SyncGroupRequest._fields.index(n) for n in ("member_id", "group_instance_id", "generation_id",
                                                "protocol_type", "protocol_name", "assignments")]
HR_MEMBER, HR_INSTANCE, HR_GENERATION = [
    HeartbeatRequest._fields.index(n) for n in ("member_id", "group_instance_id", "generation_id")]


cdef inline object _field(object req, type cls, Py_ssize_t i, str name):
    """req.<name>: read by position when req is exactly the NamedTuple `cls` (the same value)."""
    if type(req) is cls:
        return (<tuple>req)[i]
    return getattr(req, name)


cdef inline str _client(object req):
    """req.client (every request's first field)."""
    t = type(req)
    if t is _JOIN_REQUEST or t is _SYNC_REQUEST or t is _HEARTBEAT_REQUEST or t is _LEAVE_REQUEST:
        return (<tuple>req)[0]
    return req.client


cdef type _JOIN_RESPONSE = JoinGroupResponse
cdef type _SYNC_RESPONSE = SyncGroupResponse
cdef type _HEARTBEAT_RESPONSE = HeartbeatResponse
# the group's timer keys (a heartbeat timer's key is its member id handle, > 0)
cdef enum:
    K_JOIN = -1
    K_SYNC = -2


cdef inline str _client_name(str client):
    """client.rpartition("#")[0]: the member name of a client id `name#incarnation` ("" without '#')."""
    cdef Py_ssize_t i = PyUnicode_FindChar(client, 35, 0, len(client), -1)  # '#'
    return client[:i] if i > 0 else ""


def refusal(sc):
    """What this coordinator does not do for scenario `sc` (None: nothing), checked at construction:
    the group settings the claim refuses too (`classic_native.group_refusal`, one list for both),
    and coordinator failover."""
    why = classic_native.group_refusal(sc)
    if why is not None:
        return why
    for e in sc.events:
        if e.kind == "coordinator_failover":
            return "coordinator_failover events"
    return None


cdef class NativeCoordinator:
    """`ClassicCoordinator(world)` for the scenarios `classic_native.native_support` claims."""

    def __cinit__(self):
        self._pend_off = NULL
        self._pend_t = NULL
        self._pending = NULL
        self._pend_order = NULL
        self._npend = 0
        self._pend_cap = 0
        self._pend_records = 0

    def __dealloc__(self):
        free(self._pend_off)
        free(self._pend_t)
        free(self._pending)
        free(self._pend_order)
        self._pend_off = self._pend_t = self._pend_order = NULL
        self._pending = NULL
        self._pend_cap = self._npend = 0

    def __init__(self, world):
        sc = world.sc
        why = refusal(sc)
        if why is not None:
            raise NotImplementedError(f"the native coordinator does not handle {why}")
        self.w = world
        self._nw = world if isinstance(world, WorldBase) else None
        g = sc.group
        self.config = ClassicGroupConfig(
            initial_rebalance_delay_ms=g.group_initial_rebalance_delay_ms, max_size=g.group_max_size
        )
        self.epoch = 0
        self.group = GroupHandlers(g.id, self.config, member_id_salt="0-", now_ms=0)
        self.group.build_objects = True  # the leader's members tuple, the snapshots for the store
        self.up_at = 0
        self._store = SimOffsetsStore(g.id)
        self.by_member_id = {}
        self._handles = {}
        self.muted = {}
        self.hb_history = {}
        self._loop = world.loop
        self._cloop = world.loop if isinstance(world.loop, EventLoop) else None
        self._timer_cb = self.on_timer
        self._receive = self.receive
        self._commit = self.commit
        self._latency = sc.network_latency_ms
        self._hb_interval = g.heartbeat_interval_ms

    @property
    def up(self):
        return True

    @property
    def store(self):
        """The offsets store (`SimOffsetsStore`), with every commit so far in it."""
        self._flush_commits()
        return self._store

    cdef int64_t _member(self, str member_id) except -2:
        """A member id's handle: 0 for "", -1 for an id this group never made."""
        if not member_id:
            return 0
        cdef list ids = self.group.ids
        cdef Py_ssize_t k
        if len(self._handles) + 1 < len(ids):
            for k in range(len(self._handles) + 1, len(ids)):
                self._handles[ids[k]] = k
        return self._handles.get(member_id, -1)

    # ------------------------------------------------------------------ the world's calls

    cdef int _reply(self, str client, str kind, object resp) except -1:
        if self._nw is not None:
            self._nw.reply(client, kind, resp)
        else:
            self.w.reply(client, kind, resp)
        return 0

    cdef int _reply_many(self, list replies) except -1:
        if self._nw is not None:
            self._nw.reply_many(replies)
        else:
            self.w.reply_many(replies)
        return 0

    cdef int _emit(self, str kind, object member, object generation, object partitions,
                   object detail) except -1:
        if self._nw is not None:
            self._nw.emit(kind, member, generation, partitions, detail)
        else:
            self.w.emit(kind, member, generation, partitions, detail)
        return 0

    cdef int _on_generation(self, int64_t generation) except -1:
        if self._nw is not None:
            self._nw.on_generation(generation)
        else:
            self.w.on_generation(generation)
        return 0

    cdef int _set_pending_cause(self, str cause) except -1:
        if self._nw is not None:
            self._nw.pending_cause = cause
        else:
            self.w.pending_cause = cause
        return 0

    cdef dict _members(self):
        return self._nw.members if self._nw is not None else self.w.members

    # ------------------------------------------------------------------ requests

    cpdef receive(self, str kind, object req, object name):
        cdef str client = _client(req)
        cdef GroupHandlers g = self.group
        cdef int64_t ch, now
        cdef Py_ssize_t i, n
        cdef int64_t* buf
        if self.muted:
            queued = self.muted.get(client)
            if queued is not None:
                queued.append((self._receive, kind, req, name))
                return
        now = self._loop.now
        if kind == "join" or kind == "sync":
            ch = g.client_handle(client)
            if kind == "join":
                member_id = _field(req, _JOIN_REQUEST, JR_MEMBER, "member_id")
                g.join(ch, self._member(member_id),
                       g.instance_handle(_field(req, _JOIN_REQUEST, JR_INSTANCE, "group_instance_id")),
                       _field(req, _JOIN_REQUEST, JR_PROTOCOLS, "protocols"),
                       _field(req, _JOIN_REQUEST, JR_SESSION, "session_timeout_ms"),
                       _field(req, _JOIN_REQUEST, JR_REBALANCE, "rebalance_timeout_ms"),
                       _field(req, _JOIN_REQUEST, JR_TYPE, "protocol_type"), now)
            else:
                member_id = _field(req, _SYNC_REQUEST, SR_MEMBER, "member_id")
                protocol_name = _field(req, _SYNC_REQUEST, SR_PROTOCOL, "protocol_name")
                g.sync(ch, self._member(member_id),
                       g.instance_handle(_field(req, _SYNC_REQUEST, SR_INSTANCE, "group_instance_id")),
                       _field(req, _SYNC_REQUEST, SR_GENERATION, "generation_id"),
                       _field(req, _SYNC_REQUEST, SR_TYPE, "protocol_type"),
                       -1 if protocol_name is None else g.protocol_handle(protocol_name),
                       _field(req, _SYNC_REQUEST, SR_ASSIGNMENTS, "assignments"), now)
            answered = self._answers(ch)  # read before applying: an unmuted request reuses fx
            self._apply(member_id, None, False)
            if not answered:
                self.muted[client] = []  # parked: the connection waits for its answer
            return
        elif kind == "heartbeat":
            member_id = _field(req, _HEARTBEAT_REQUEST, HR_MEMBER, "member_id")
            generation = _field(req, _HEARTBEAT_REQUEST, HR_GENERATION, "generation_id")
            g.heartbeat(g.client_handle(client), self._member(member_id),
                        g.instance_handle(_field(req, _HEARTBEAT_REQUEST, HR_INSTANCE,
                                                 "group_instance_id")), generation, now)
            self._apply(member_id, (generation, member_id), False)
            return
        elif kind == "leave":
            n = len(req.members)
            buf = <int64_t*>malloc((2 * n + 1) * sizeof(int64_t))
            if buf == NULL:
                raise MemoryError()
            try:
                for i in range(n):
                    mid, inst = req.members[i]
                    buf[i], buf[n + i] = self._member(mid), g.instance_handle(inst)
                g.leave(g.client_handle(client), buf, buf + n, n, now)
            finally:
                free(buf)
        else:
            raise ValueError(kind)
        self._apply("", None, False)

    cpdef commit(self, object name, str client, str member_id, object instance_id,
                 int64_t generation, object offsets, object why, bint answer=False,
                 object sent_ms=-1, object sent_event=-1):
        """An OffsetCommit sent at `sent_ms`, after the first `sent_event` event-log rows. Failures
        are answered, and successes the member waits for (`answer`). `offsets`: {partition: offset}
        from the reference's members, or a native member's changed positions
        (`native_members.Triples` of (partition, offset, slot), owned order, as the dict's order)."""
        queued = self.muted.get(client) if self.muted else None
        if queued is not None:
            queued.append((self._commit, name, client, member_id, instance_id, generation, offsets,
                           why, answer, sent_ms, sent_event))
            return
        w = self.w
        cdef GroupHandlers g = self.group
        err = ERRORS[g.validate_offset_commit(
            self._member(member_id), g.instance_handle(instance_id), generation)]
        if err is _NONE:
            # one OffsetCommit record per partition of the request, into the store and the
            # partition table's committed column in one pass
            if type(offsets) is Triples:
                self._store_triples(<Triples>offsets)
            else:
                store = self.store  # the pending commits first: the dict keeps first-insertion order
                _k_store_commits(offsets, self._loop.now, store.offsets, w.p_committed)
                store.records_appended += len(offsets)
            if w.wants_events:
                parts = w.parts
                tps = parts.tps
                if type(offsets) is Triples:
                    offsets = {p: off for p, off, _ in (<Triples>offsets).triples()}
                for p, off in offsets.items():
                    tp = tps[p]
                    self._emit(
                        "commit",
                        name,
                        generation,
                        [parts.names[p]],
                        {
                            "topic": tp.topic,
                            "partition": tp.partition,
                            "offset": off,
                            "metadata": "",
                            "generation": generation,
                            "member_id": member_id,
                            "reason": why,
                            "sent_ms": sent_ms,
                            "sent_event": sent_event,
                        },
                    )
            if answer:
                self._reply(client, "commit", (err, (generation, member_id), True))
            return
        self._reply(client, "commit", (err, (generation, member_id), answer))

    cdef int _store_triples(self, Triples offsets) except -1:
        """`poll_kernels.store_commits` for a native member's offsets: the store's records
        (partition -> (offset, time)) and the native world's committed column, in offsets order.
        The records wait in C columns until the store is read (`_flush_commits`): a (offset, time)
        tuple and a dict store per partition per commit were 3.8% of a cooperative run."""
        cdef PartitionColumns cols = self._nw.cols
        cdef Py_ssize_t i, cap
        cdef int64_t p, off
        cdef int64_t now = self._loop.now
        for i in range(offsets.n):
            p = offsets.data[3 * i]
            off = offsets.data[3 * i + 1]
            if p >= self._pend_cap:
                cap = max(p + 1, 2 * self._pend_cap, 64)
                self._pend_off = <int64_t*>grow(self._pend_off, cap, sizeof(int64_t))
                self._pend_t = <int64_t*>grow(self._pend_t, cap, sizeof(int64_t))
                self._pend_order = <int64_t*>grow(self._pend_order, cap, sizeof(int64_t))
                self._pending = <char*>grow(self._pending, cap, sizeof(char))
                memset(self._pending + self._pend_cap, 0, cap - self._pend_cap)
                self._pend_cap = cap
            self._pend_off[p] = off
            self._pend_t[p] = now
            if not self._pending[p]:
                self._pending[p] = 1
                self._pend_order[self._npend] = p
                self._npend += 1
            cols.committed[p] = off
        self._pend_records += offsets.n
        return 0

    cdef int _flush_commits(self) except -1:
        """The pending commits into the store, as `_store_triples` would have stored them: a
        partition first pending since the last flush was first stored in that order (the dict's
        insertion order is the reference's), each with its last offset and time."""
        cdef Py_ssize_t i
        cdef int64_t p
        cdef dict stored
        if self._npend:
            stored = self._store.offsets
            for i in range(self._npend):
                p = self._pend_order[i]
                self._pending[p] = 0
                stored[p] = (self._pend_off[p], self._pend_t[p])
            self._npend = 0
        if self._pend_records:
            self._store.records_appended += self._pend_records
            self._pend_records = 0
        return 0

    # ------------------------------------------------------------------ effects

    cdef bint _answers(self, int64_t client) noexcept:
        """The last call's effects answer `client`'s JoinGroup or SyncGroup."""
        cdef GroupHandlers g = self.group
        cdef Py_ssize_t i
        for i in range(g.nfx):
            if (g.fx[i].kind == FX_JOIN_RESPONSE or g.fx[i].kind == FX_SYNC_RESPONSE) and g.fx[i].client == client:
                return True
        return False

    cdef int _apply(self, str own, object hb_sent, bint drop_answered) except -1:
        """Carry out the group's last effects (`own`: the request's member id, for responses that
        echo it; `hb_sent`: the (generation, member id) of the heartbeat they answer;
        `drop_answered`: an elided heartbeat's error-free answer is not sent again)."""
        cdef GroupHandlers g = self.group
        cdef Effect* e
        cdef Py_ssize_t i
        cdef int k
        cdef list replies = []  # responses leave together: one network event for a batch
        w = self.w
        loop = self._loop
        ids, clients, protocols, objs = g.ids, g.clients, g.protocols, g.fx_objs
        for i in range(g.nfx):
            e = &g.fx[i]
            k = e.kind
            if k == FX_SCHEDULE_HEARTBEAT:
                self._set_timer(e.member, e.deadline, None)
            elif k == FX_SCHEDULE_JOIN:
                self._set_timer(K_JOIN, e.deadline, (e.a, e.b) if e.flags & 1 else None)
            elif k == FX_SCHEDULE_SYNC:
                self._set_timer(K_SYNC, e.deadline, e.a)
            elif k == FX_CANCEL_HEARTBEAT:
                self._cancel_timer(e.member)
            elif k == FX_CANCEL_JOIN:
                self._cancel_timer(K_JOIN)
            elif k == FX_CANCEL_SYNC:
                self._cancel_timer(K_SYNC)
            elif k == FX_JOIN_RESPONSE:
                client = clients[e.client]
                mid = own if e.member < 0 else ids[e.member]
                if e.error == E_NONE or e.error == E_MEMBER_ID_REQUIRED:
                    self.by_member_id[mid] = _client_name(client)
                replies.append((client, "join", new_tuple_of(_JOIN_RESPONSE, (
                    client, ERRORS[e.error], mid, e.a, None if e.c < 0 else protocols[e.c], ids[e.b],
                    objs[e.obj] if e.flags & JF_MEMBERS else (), bool(e.flags & JF_SKIP_ASSIGNMENT)))))
            elif k == FX_SYNC_RESPONSE:
                client = clients[e.client]
                replies.append((client, "sync", new_tuple_of(_SYNC_RESPONSE, (
                    client, ERRORS[e.error], None if e.obj < 0 else objs[e.obj],
                    None if e.c < 0 else protocols[e.c]))))
            elif k == FX_HEARTBEAT_RESPONSE:
                if drop_answered and e.error == E_NONE:
                    continue
                client = clients[e.client]
                replies.append((client, "heartbeat",
                                (new_tuple_of(_HEARTBEAT_RESPONSE, (client, ERRORS[e.error])), hb_sent)))
            elif k == FX_LEAVE_RESPONSE:
                pass
            elif k == FX_STATE_CHANGED:
                if e.reason == R_LEAVE:
                    reason = objs[e.obj]
                else:
                    reason = REASONS.get(e.reason, "")
                    if "{}" in reason:
                        reason = reason.format(ids[e.member])
                self._on_state(<int>e.a, <int>e.b, reason)
            elif k == FX_MEMBER_REMOVED:
                mid = ids[e.member]
                self._emit("member_removed", self.by_member_id.get(mid, mid), None, None,
                           {"member_id": mid, "reason": REASONS[e.reason]})
            elif k == FX_METADATA_CHANGED:
                self._store.write_group(objs[e.obj], loop.now)
        return self._send_replies(replies)

    cdef int _set_timer(self, int64_t key, int64_t deadline, object payload) except -1:
        """loop.set_timer(key, deadline, on_timer, payload): a C call on the native engine."""
        if self._cloop is not None:
            return self._cloop.set_timer_c(key, deadline, self._timer_cb, payload)
        self._loop.set_timer(key, deadline, self._timer_cb, payload)
        return 0

    cdef int _cancel_timer(self, int64_t key) except -1:
        if self._cloop is not None:
            return self._cloop.cancel_timer_c(key)
        self._loop.cancel_timer(key)
        return 0

    cdef int _send_replies(self, list replies) except -1:
        if len(replies) == 1:
            r = replies[0]
            self._reply(r[0], r[1], r[2])
        elif replies:
            self._reply_many(replies)
        if self.muted:
            for r in replies:
                if r[1] == "join" or r[1] == "sync":
                    self._unmute(r[0])
        return 0

    cdef int _unmute(self, str client) except -1:
        """The parked request was answered: the connection's next requests are handled, in order."""
        queued = self.muted.pop(client, None)
        while queued:
            call = queued.pop(0)
            call[0](*call[1:])
            if client in self.muted:  # parked again: the rest keeps waiting behind it
                self.muted[client].extend(queued)
                return 0
        return 0

    cdef int _on_state(self, int old, int new, object reason) except -1:
        cdef int64_t generation = self.group.generation_id
        self._emit("group_state", "", generation, None,
                   {"from": STATE_NAMES[old], "to": STATE_NAMES[new], "reason": reason})
        if new == ST_PREPARING:
            self._set_pending_cause(_MEMBER_ID.sub(r"\1", reason))
            for m in self._members().values():
                if m.state is _MEMBER_STABLE:
                    m.start_heartbeat_ticks()  # no-op unless its heartbeat thread runs and is idle
        elif new == ST_COMPLETING or (new == ST_EMPTY and old == ST_PREPARING):
            self._on_generation(generation)
            self._set_pending_cause("-")
        return 0

    cpdef bint needs_real_heartbeats(self) except -1:
        return self.group.state != ST_STABLE

    # ------------------------------------------------------------------ timers

    cpdef on_timer(self, object key, object payload):
        """A group timer fired (`key`: a member id handle, K_JOIN or K_SYNC)."""
        cdef GroupHandlers g = self.group
        cdef int64_t kk = key
        cdef int64_t now = self._loop.now
        if kk > 0:
            if self._elided_heartbeat(kk, now):
                return
            g.heartbeat_expired(kk, now)
        elif kk == K_JOIN:
            if payload is None:
                g.join_timer(False, 0, 0, now)
            else:
                g.join_timer(True, payload[0], payload[1], now)
        else:
            g.sync_timer(payload, now)
        self._apply("", None, False)

    cdef bint _elided_heartbeat(self, int64_t member, int64_t now) except -1:
        """Deliver the last heartbeat `member` really sent, if it keeps the session alive past now."""
        cdef GroupHandlers g = self.group
        cdef int64_t hb_base, hb_first, stop, generation, sent, lat = self._latency
        cdef Py_ssize_t s, i
        member_id = g.ids[member]
        name = self.by_member_id.get(member_id)
        m = self._members().get(name) if name is not None else None
        if m is None:
            return False
        if m.member_id == member_id and m.heartbeating():
            hb_base, hb_first, stop, generation, client = (
                m.hb_base, m.hb_first, now, m.generation, m.client)
        else:
            hist = self.hb_history.get(member_id)
            if hist is None:
                return False
            hb_base, hb_first, stop, generation, client = hist
        if stop - lat < hb_base:
            return False
        sent = hb_base + ((stop - lat - hb_base) // self._hb_interval) * self._hb_interval
        if sent < hb_first:  # its phase put that beat before the join completed: none was sent
            return False
        sent += lat
        s = g.slot_of(member)
        if s < 0 or sent + g.m[s].session_ms <= now:
            return False
        g.heartbeat(g.client_handle(client), member, g.instance_handle(m.instance_id), generation,
                    sent)
        rescheduled = False
        for i in range(g.nfx):
            if (g.fx[i].kind == FX_SCHEDULE_HEARTBEAT or g.fx[i].kind == FX_SCHEDULE_JOIN
                    or g.fx[i].kind == FX_SCHEDULE_SYNC):
                rescheduled = True
        # the member already had its (error-free) answer back then; only errors still need delivering
        self._apply(member_id, (generation, member_id), True)
        return rescheduled

    cpdef heartbeat_stopped(self, str member_id, int64_t hb_base, int64_t hb_first, int64_t now,
                            int64_t generation, str client):
        """A member's heartbeat thread stopped (crash, close, poll timeout): remember its last phase."""
        if member_id:
            self.hb_history[member_id] = (hb_base, hb_first, now, generation, client)

    # ------------------------------------------------------------------ failover

    def failover(self, down_ms):
        raise NotImplementedError("coordinator failover is not ported to the native coordinator")
