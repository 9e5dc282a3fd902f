# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=False
"""The rebalance half of the native classic member (docs/sim-native.md, M2): `member_rebalance
.RebalanceClient` (heartbeats, onJoinPrepare, JoinGroup/SyncGroup, onJoinComplete) for the scenarios
`classic_native.native_support` claims, line by line in the reference's order, on C fields
(native_world_client.pxd). `native_world_member.NativeMember` extends it with the poll loop.
The owned partitions, their positions and sent offsets are one `native_members.OwnedPartitions`
(C arrays in the reference's `owned` order); a rebalance reads them as a Python list once.
`assignment_indices`: the leader's assignment as partition indices, its claims in C. The requests
and the JoinGroup metadata are built by `native_member_messages` (C calls); the owned partitions'
tuples of the JoinGroup metadata are kept while the member owns the same (`_protocols`).
"""

cimport cython
from cpython.long cimport PyLong_AsLongLongAndOverflow
from libc.stdint cimport int64_t

from ..group import consumer_client as cc
from ..group.classic_messages import JoinGroupResponse, LeaveGroupRequest, SyncGroupResponse
from ..group.consumer_client import MemberState, RebalanceProtocol
from ..group.errors import Errors
from .member_rebalance import PrepareCommit, heartbeat_action, join_complete, join_prepare
from .native_coordinator cimport NativeCoordinator
from .native_member_messages cimport (
    cooperative_user_data,
    heartbeat_request_c,
    join_request_c,
    subscription_c,
    sync_request_c,
    tp_partition,
    tp_topic,
)

cdef int64_t NEVER = 1 << 62

cdef object _UNJOINED = MemberState.UNJOINED
cdef object _STABLE = MemberState.STABLE
cdef object _COMPLETING = MemberState.COMPLETING_REBALANCE
cdef object _PREPARING = MemberState.PREPARING_REBALANCE
cdef object _EAGER = RebalanceProtocol.EAGER
cdef object _NONE = Errors.NONE
cdef object _MEMBER_ID_REQUIRED = Errors.MEMBER_ID_REQUIRED
cdef object _HB_CONTINUE = cc.HeartbeatAction.CONTINUE
cdef object _HB_IGNORE = cc.HeartbeatAction.IGNORE
cdef object _HB_FIND_COORDINATOR = cc.HeartbeatAction.FIND_COORDINATOR
cdef object _HB_RETRY = cc.HeartbeatAction.RETRY
cdef object _HB_FATAL = cc.HeartbeatAction.FATAL
cdef object _HB_RESET_GENERATION = cc.HeartbeatAction.RESET_GENERATION_AND_REJOIN
cdef object _HB_RESET_MEMBER = cc.HeartbeatAction.RESET_MEMBER_AND_REJOIN
cdef object _on_commit_error = cc.on_commit_error


_PC_OBJECTS = (PrepareCommit.NONE, PrepareCommit.IN_FLIGHT, PrepareCommit.DONE)


cdef bint _same_indices(tuple cached, OwnedPartitions o) except -1:
    """Does `cached` (a tuple of ints built from `o.owned`) hold o's owned indices, in order?"""
    cdef Py_ssize_t i
    if len(cached) != o.k:
        return False
    for i in range(o.k):
        if <int64_t>cached[i] != o.owned[i]:
            return False
    return True


cdef bint _equals_owned(object seq, OwnedPartitions o) except -1:
    """`list(seq) == owned` as the reference's list comparison decides it (item by item with `==`),
    owned's items compared as C ints when the item is an int (no Python int per item)."""
    cdef Py_ssize_t i
    cdef int overflow = 0
    cdef long long v
    if len(seq) != o.k:
        return False
    for i in range(o.k):
        x = seq[i]
        if type(x) is int:
            v = PyLong_AsLongLongAndOverflow(x, &overflow)
            if overflow or v != o.owned[i]:
                return False
        elif not (x == o.owned[i]):
            return False
    return True


cdef class NativeClient:
    """The rebalance client of a native member (its state is declared in the .pxd)."""

    @property
    def prepare_commit(self):
        return _PC_OBJECTS[self._prepare]

    cdef int64_t _now(self) except? -1:
        return self.w.loop.now_c()

    cdef list _owned(self):
        """The reference's `owned` list (a copy)."""
        cdef OwnedPartitions o = self.own
        cdef Py_ssize_t i
        return [o.owned[i] for i in range(o.k)]

    @property
    def owned(self):
        return self._owned()

    cdef bint _owns_exactly(self, tuple partitions) except -1:
        """Is `owned` equal to `partitions` (same partitions, same order), compared with `==` as
        `_equals_owned` does?"""
        return _equals_owned(partitions, self.own)

    @property
    def positions(self):
        return self.own.positions()

    @property
    def sent_offsets(self):
        return self.own.sent_offsets()

    cdef bint _generation_unchanged(self, sent) except -1:
        return sent is None or (sent[0] == self.generation and sent[1] == self.member_id)

    cdef int _stop_heartbeats(self) except -1:
        if self.heartbeating():
            coord = self.w.coord
            if type(coord) is NativeCoordinator:  # a C call (twice per member per rebalance)
                (<NativeCoordinator>coord).heartbeat_stopped(
                    self.member_id, self.hb_base, self.hb_first, self._now(), self.generation,
                    self.client,
                )
            else:
                coord.heartbeat_stopped(
                    self.member_id, self.hb_base, self.hb_first, self._now(), self.generation,
                    self.client,
                )
        return 0

    # hooks NativeMember provides

    cdef int fire(self, int kind, int64_t a, object payload) except -1:
        """The member's engine events (native_engine.Handler)."""
        if kind == EV_POLL:
            return self._poll_c(a)
        if kind == EV_HB_TICK:
            return self._hb_tick_c(a)
        raise ValueError(f"no member event kind {kind}")

    cdef int _poll_c(self, int64_t token) except -1:
        raise NotImplementedError

    cpdef on_commit_response(self, error, sent=None, bint answered=False):
        raise NotImplementedError

    cpdef wake(self):
        raise NotImplementedError

    cpdef _finish_batch(self, int64_t now, bint partial=False):
        raise NotImplementedError

    cdef int _poll_soon(self, int64_t t) except -1:
        raise NotImplementedError

    cdef int _catch_up_before_commit(self, int64_t now) except -1:
        raise NotImplementedError

    cdef int _commit_positions(self, str why, bint answer) except -1:
        raise NotImplementedError

    # ---------------------------------------------------------- heartbeats

    cpdef bint heartbeating(self) except -1:
        return (
            self.generation >= 0
            and self.alive
            and self.member_id != ""
            and not self.poll_timed_out
            and (self.state is _STABLE or self.state is _COMPLETING)
        )

    cdef int64_t _next_heartbeat_at(self, int64_t t) noexcept:
        cdef int64_t hb = self._hb_interval
        if t <= self.hb_base:
            return self.hb_base + hb
        return self.hb_base + ((t - self.hb_base) // hb + 1) * hb

    cpdef start_heartbeat_ticks(self):
        if self.hb_ticking or not self.heartbeating():
            return
        self.hb_ticking = True
        self.w.loop.at_c(
            self._next_heartbeat_at(self._now()) + self._hb_latency, self, EV_HB_TICK,
            self.incarnation, None,
        )

    def _hb_tick(self, int64_t inc):
        self._hb_tick_c(inc)

    cdef int _hb_tick_c(self, int64_t inc) except -1:
        self.hb_ticking = False
        if inc != self.incarnation or not self.heartbeating() or self.rejoin_needed:
            return 0
        self.w.to_coordinator(
            "heartbeat",
            heartbeat_request_c(self.client, self.member_id, self.generation, self.instance_id),
            self.name,
        )
        return 0

    cpdef on_heartbeat_response(self, error, sent=None):
        if not self.alive:
            return
        if error is _NONE:
            action = _HB_CONTINUE
        else:
            action = heartbeat_action(error, self.state, self._generation_unchanged(sent))
        if action is _HB_CONTINUE or action is _HB_IGNORE:
            if self.w.group_needs_heartbeats():
                self.start_heartbeat_ticks()
            return
        if self.w.wants_events:
            self.w.emit("heartbeat_error", self.name, self.generation, None, detail={"error": error.name})
        if action is _HB_FIND_COORDINATOR or action is _HB_RETRY:
            return
        if action is _HB_FATAL:
            self.w.emit("fenced", self.name, self.generation)
            self.crash()
            return
        self._stop_heartbeats()
        if action is _HB_RESET_GENERATION:
            self.generation = -1
            self.state = _UNJOINED
        elif action is _HB_RESET_MEMBER:
            self.generation = -1
            self.member_id = ""
            self.state = _UNJOINED
        self.rejoin_needed = True
        self.wake()

    # ------------------------------------------------------------- rebalance

    cdef object _protocols(self):
        """ConsumerCoordinator.metadata(): one subscription per assignor, with its user data.

        The owned partitions' two tuples (indices, TopicPartitions) are kept from the last JoinGroup
        and reused while `owned` holds the same indices in the same order (compared in C each time:
        the key is the content, so no path that changes `owned` can leave them stale) and the
        world's TopicPartition list is the same list (append-only: index p's TopicPartition never
        changes). Each Subscription is new: it carries the generation, which changes every
        rebalance."""
        cdef OwnedPartitions o = self.own
        cdef Py_ssize_t i
        cdef tuple owned_idx = self._sub_owned_idx
        tps = self.w.p_tps
        if owned_idx is None or tps is not self._sub_tps_of or not _same_indices(owned_idx, o):
            owned_idx = tuple([o.owned[i] for i in range(o.k)])
            self._sub_owned_tps = tuple([tps[p] for p in owned_idx])
            self._sub_owned_idx = owned_idx
            self._sub_tps_of = tps
        owned_tps = self._sub_owned_tps
        out = []
        for a in self._assignors:
            if a == "cooperative-sticky":
                ud = cooperative_user_data(self.coop_generation)
            elif a == "sticky":
                ud = self.sticky_memory
            else:
                ud = None
            out.append(
                (
                    a,
                    subscription_c(
                        self._topic_names, owned_tps, self.generation, self.rack, ud, owned_idx
                    ),
                )
            )
        return tuple(out)

    cdef int _prepare_join(self) except -1:
        cdef WorldBase w = self.w
        cdef int64_t now = self._now()
        owned = None
        if self.generation >= 0 and self.protocol is not _EAGER:
            # join_prepare's cooperative branch (a valid generation): nothing revoked or lost, the
            # commit first with auto-commit; no owned list built (every member, every rebalance)
            commit_first = self._join_auto_commit
            revoked = lost = ()
        else:
            owned = self._owned()
            commit_first, revoked, lost = join_prepare(
                owned, self.protocol is _EAGER, self.generation >= 0, self._join_auto_commit
            )
        if commit_first and self.own.k and self._prepare != PC_DONE:
            self._prepare = PC_IN_FLIGHT
            self._catch_up_before_commit(now)
            if self.protocol is _EAGER:
                self.fetch_paused = True
                w.set_unavailable_many(owned, now)
            self._commit_positions("before-rejoin", True)
            return 0
        self._prepare = PC_NONE
        self.fetch_paused = False
        if revoked:
            w.revoke(self, revoked, "join prepare")
            self.own.remove(revoked)  # from owned (order kept) and positions
        if lost:
            w.lose(self, list(lost), "membership lost")
            self.own.k = 0  # owned and positions: none
        if not self.own.k:
            self.waiting = True
            if self.pause_start is None:
                self.pause_start = now
        self._send_join()
        return 0

    cdef int _send_join(self) except -1:
        self._stop_heartbeats()
        self.join_inflight = True
        self.rejoin_needed = False
        self.state = _PREPARING
        protocols = self._protocols()
        req = join_request_c(
            self.client, self.member_id, protocols, self._session_timeout,
            self._rebalance_timeout, self.instance_id,
        )
        if self.w.wants_events:
            self.w.emit("join", self.name, self.generation, self._owned())
        self.w.send(self, "join", req)
        return 0

    cpdef on_response(self, resp):
        if not self.alive:
            return
        cdef int64_t now = self._now()
        cdef int64_t t = self.busy_until if self.busy_until > self.stall_until else self.stall_until
        if not self.waiting and now < t:
            self.deferred.append(resp)
            self.wake()
            return
        self._handle_response(resp)

    cdef int _handle_response(self, resp) except -1:
        if isinstance(resp, JoinGroupResponse):
            self._on_join(resp)
        elif isinstance(resp, SyncGroupResponse):
            self._on_sync(resp)
        return 0

    def _resend_join(self, int64_t inc):
        if inc == self.incarnation and self.alive:
            self._send_join()

    cdef int _retry_later(self) except -1:
        cdef int64_t t = self.w.coordinator_retry_time(self._now(), self._retry_backoff)
        self.w.loop.at(t, self._resend_join, self.incarnation)
        return 0

    cdef int _on_join(self, r) except -1:
        e = r.error
        if e is _NONE:
            self.member_id = r.member_id
            self.generation = r.generation_id
            self.state = _COMPLETING
            self.hb_first = self.hb_base = self._now()
            self.is_leader = r.leader == self.member_id
            self.joined_protocol = r.protocol_name
            assignments = None
            if self.is_leader and not r.skip_assignment:
                assignments = self.w.leader_assign(self, r)
            self.w.send(
                self,
                "sync",
                sync_request_c(
                    self.client, self.member_id, self.generation, self.instance_id, "consumer",
                    r.protocol_name, assignments,
                ),
            )
            return 0
        if e is _MEMBER_ID_REQUIRED:
            self.member_id = r.member_id
            self._send_join()
            return 0
        self.w.emit("join_error", self.name, self.generation, None, detail={"error": e.name})
        if e in (
            Errors.COORDINATOR_NOT_AVAILABLE,
            Errors.NOT_COORDINATOR,
            Errors.COORDINATOR_LOAD_IN_PROGRESS,
        ):
            self._retry_later()
        elif e is Errors.UNKNOWN_MEMBER_ID:
            self._reset_and_rejoin(True)
        elif e is Errors.ILLEGAL_GENERATION:
            self._reset_and_rejoin(False)
        elif e is Errors.REBALANCE_IN_PROGRESS:
            self._send_join()
        else:
            self.w.emit("fatal", self.name, self.generation, None, detail={"error": e.name})
            self.crash()
        return 0

    cdef int _on_sync(self, r) except -1:
        e = r.error
        if e is _NONE:
            self._complete_join(r.assignment or [])
            return 0
        self.w.emit("sync_error", self.name, self.generation, None, detail={"error": e.name})
        if e in (Errors.COORDINATOR_NOT_AVAILABLE, Errors.NOT_COORDINATOR):
            self._retry_later()
        elif e is Errors.REBALANCE_IN_PROGRESS:
            self._send_join()
        elif e is Errors.ILLEGAL_GENERATION:
            self._reset_and_rejoin(False)
        elif e is Errors.UNKNOWN_MEMBER_ID:
            self._reset_and_rejoin(True)
        else:
            self.w.emit("fatal", self.name, self.generation, None, detail={"error": e.name})
            self.crash()
        return 0

    cdef int _reset_and_rejoin(self, bint reset_member_id) except -1:
        self.generation = -1
        if reset_member_id:
            self.member_id = ""
        self.state = _UNJOINED
        self.join_inflight = False
        self._prepare_join()
        return 0

    cdef int _complete_join(self, assignment) except -1:
        cdef WorldBase w = self.w
        cdef int64_t now = self._now()
        cdef bint kept = False
        self.join_inflight = False
        self.state = _STABLE
        if (
            self.protocol is not _EAGER
            and type(assignment) is list
            and _equals_owned(assignment, self.own)
        ):
            # join_complete's `assigned == owned` branch (most members of a cooperative rebalance):
            # nothing revoked or added, owned unchanged; no owned list built
            revoked = added = ()
            owned = tuple(assignment)
            rejoin = False
            kept = True
        else:
            revoked, added, owned, rejoin = join_complete(
                self._owned(), assignment, self.protocol is _EAGER
            )
        if revoked:
            # KIP-429: what the member gives up, after its batch in flight is finished
            self._finish_batch(now)
            w.revoke(self, revoked, "cooperative")
            self.own.remove(revoked)  # from owned (order kept) and positions
        if self.joined_protocol == "sticky":
            # StickyAssignor.onAssignment: the assignment as received, and the generation
            tps = w.parts.tps
            self.sticky_memory = cc_encode_sticky(
                [(tps[p].topic, tps[p].partition) for p in assignment], self.generation
            )
        elif self.joined_protocol == "cooperative-sticky":
            # CooperativeStickyAssignor.onAssignment: the generation onJoinComplete's metadata has
            self.coop_generation = self.generation
        self.next_autocommit = now + self._aci
        # owned = the assignment; each added partition's position and sent offset = its committed one
        # (most members of a cooperative rebalance keep what they own, in the same order: nothing to do)
        if not kept and (added or not self._owns_exactly(owned)):
            self.own.complete_join(owned, added)
        if added:
            self.caught_up_from = now
        w.assigned(self, added, owned)
        if self.pause_start is not None:
            w.add_paused(self, now - <int64_t>self.pause_start)
            self.pause_start = None
        if now >= self.stall_until:
            w.set_available_many(owned, now, self.name)
        if rejoin:
            self.rejoin_needed = True
        if self.waiting:
            self.waiting = False
        self._poll_soon(now if now > self.busy_until else self.busy_until)
        if w.group_needs_heartbeats():
            self.start_heartbeat_ticks()
        return 0


from ..assign.userdata import encode_sticky_user_data as cc_encode_sticky  # noqa: E402


@cython.boundscheck(True)
@cython.wraparound(True)  # ps[q] as the reference indexes (a negative q from the end)
cpdef dict assignment_indices(object result, dict by_topic, int[::1] owner, dict ordinal,
                              bint coop):
    """`poll_kernels.assignment_indices` with the claims in C: `owner[p]` is the ordinal (member id
    -> ordinal in `ordinal`) of the member still claiming partition index p, -1 if none; no dict
    look-up per partition. A partition number beyond Py_ssize_t raises OverflowError (the reference
    drops it; an assignor returns only the topic metadata's partitions, < INT32_MAX)."""
    cdef dict out = {}
    cdef list idx, ps = []
    cdef Py_ssize_t n = 0, q
    cdef int o, c
    for mid, tps in result.items():
        o = ordinal.get(mid, -1) if coop else -1
        idx = []
        topic = None
        for tp in tps:
            t = tp_topic(tp)
            if t != topic:
                topic = t
                ps = by_topic.get(t, [])
                n = len(ps)
            q = tp_partition(tp)
            if q < n:
                p = ps[q]
                if coop:
                    c = owner[<Py_ssize_t>p]
                    if c >= 0 and c != o:
                        continue
                idx.append(p)
        out[mid] = idx
    return out
