# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=False
"""The native classic member (docs/sim-native.md, M2, first step): `member.SimMember` (its rebalance
half, `member_rebalance.RebalanceClient`, is native_world_client.NativeClient) for the scenarios `classic_native.native_support` claims (eager
`range`/`roundrobin`, `sticky`, `cooperative-sticky`; dynamic members, no faults), as a Cython class with C fields.

The reference is `sim/member.py` and `sim/member_rebalance.py`: every method here is theirs, line by
line, in the same order, with the same calls into the world (`world_core.WorldCore`, the reference
world: its network, books and coordinator) and so the same `loop.at`/`after`, the same draws of the
world's rng and the same event-log rows. The member's numbers (times, generation, flags, the batch in
flight) are C fields; owned partitions, positions and sent offsets are one
`native_members.OwnedPartitions` over the world's `PartitionColumns`, and the poll kernels are its C
methods (`fetch_c` into the reused batch `Triples`, `next_arrival_c`, `uncommitted_c`, `changed_c`;
the world's `ProcessedTable.finish_c`), twins of `poll_kernels` (tests/test_sim_native_members.py):
a poll builds no Python container. A run is checked against the fingerprints
(tests/test_sim_native_fingerprints.py). The
batch's doubles are computed as `_busy_for` and `_processed_by` compute them: setup.py compiles this
module with -ffp-contract=off, and `native_support` refuses scenarios whose times or rates are not
exact in a double.
"""

from libc.stdint cimport int64_t

from ..group import consumer_client as cc
from ..group.classic_messages import JoinGroupResponse, LeaveGroupRequest, SyncGroupResponse
from ..group.consumer_client import MemberState, RebalanceProtocol
from ..group.errors import Errors
from .member_rebalance import (
    PrepareCommit,
    heartbeat_action,
    heartbeat_request,
    join_complete,
    join_prepare,
    join_request,
    subscription,
    sync_request,
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


from .native_batch_time cimport busy_for_c, processed_limit_c
from .native_members cimport OwnedPartitions, ProcessedTable, Triples
from .native_world_base cimport WorldBase
from .native_world_client cimport EV_POLL, PC_DONE, PC_IN_FLIGHT, PC_NONE, NativeClient


cdef class NativeMember(NativeClient):
    """A classic consumer (eager or cooperative): lifecycle, poll loop, processing, commits, the rebalance client."""

    def __init__(self, world, name, rack):
        self.w = world
        self.own = OwnedPartitions(world.cols)
        self.batch = Triples()
        self._partial = Triples()
        self.name = name
        self.rack = rack
        g = world.sc.group
        self.instance_id = name if g.static_membership else None
        self.protocol = cc.choose_protocol(g.assignors)
        self.ms_per_record = world.sc.processing_ms_per_record
        self._rate = self.ms_per_record
        self._auto_commit = g.delivery == "at-least-once" and g.enable_auto_commit
        self._at_most_once = g.delivery == "at-most-once"
        self._budget = g.max_poll_records
        self._poll_idle = world.sc.poll_idle_ms
        self._pjitter = world.sc.processing_jitter
        self.leave_delay_ms = 0
        self._aci = g.auto_commit_interval_ms
        self._hb_interval = g.heartbeat_interval_ms
        self._hb_latency = world.sc.network_latency_ms
        self._retry_backoff = g.retry_backoff_ms
        self._join_auto_commit = bool(g.enable_auto_commit and g.delivery == "at-least-once")
        self._session_timeout = g.session_timeout_ms
        self._rebalance_timeout = g.max_poll_interval_ms
        self._assignors = tuple(g.assignors)
        self._topic_names = world.topic_names
        self.alive = False
        self.incarnation = 0
        self.client = ""
        self._reset(False)
        self.batch_t0 = 0.0
        self.batch_taken = 0
        self.batch_last_t = 0
        self.caught_up_from = 0
        self.busy_until = 0
        self.stall_until = 0
        self.last_poll = 0
        self.poll_token = 0
        self.next_autocommit = 0
        self.hb_base = 0
        self.hb_first = 0
        self.batch_rate = self._rate
        self.pause_start = None
        self.known_partitions = {}
        self.assigned_view = {}
        self.started_at = 0
        self._in_poll = False

    cdef int _reset(self, bint rejoin) except -1:
        """The rebalance state of a member that has not joined (at construction, and at each start
        with `rejoin`): the same fields `SimMember.__init__` and `start` set."""
        self.state = _UNJOINED
        self.member_id = ""
        self.generation = -1
        self.is_leader = False
        self.joined_protocol = None
        self.sticky_memory = None
        self.coop_generation = -1
        self.own.k = 0  # owned, positions, sent offsets: none
        self.rejoin_needed = rejoin
        self.join_inflight = False
        self._prepare = PC_NONE
        self.fetch_paused = False
        self.waiting = False
        self.deferred = []
        self.batch.n = 0
        self.hb_ticking = False
        self.poll_timed_out = False
        return 0

    # ------------------------------------------------------------ lifecycle

    def start(self):
        cdef WorldBase w = self.w
        cdef int64_t now = self._now()
        self.alive = True
        self.incarnation += 1
        self.client = f"{self.name}#{self.incarnation}"
        self._reset(True)
        self.busy_until = now
        self.caught_up_from = now
        self.stall_until = 0
        self.last_poll = now
        self.next_autocommit = now + self._aci
        self.started_at = now
        self.known_partitions = w.partition_counts()
        self.pause_start = now
        w.emit("start", self.name)
        self._schedule_poll(now)

    def shutdown(self):
        if not self.alive:
            return
        cdef WorldBase w = self.w
        cdef int64_t now = self._now()
        self._finish_batch(now, False)
        if self.generation >= 0 and self.own.k:
            self._commit_positions("close", False)
        if self.own.k:
            if self.join_inflight or self.generation < 0:
                w.lose(self, self._owned(), "close during rebalance")
            else:
                w.revoke(self, self._owned(), "close")
        self.own.k = 0
        if self.instance_id is None and self.member_id:
            w.send_leave(
                self,
                "leave",
                LeaveGroupRequest(self.client, ((self.member_id, None),), "consumer closed"),
            )
        self._die("stop")

    def crash(self, killed=False):
        """A fatal error's stop (no kill in the claimed scenarios): nothing more is processed."""
        if not self.alive:
            return
        cdef int64_t now = self._now()
        self._finish_batch(now, True)
        if killed and now >= self.busy_until:
            raise NotImplementedError("a killed member is not in the native core's claim")
        self.w.set_unavailable_many(self._owned(), now)
        self._die("crash")

    cdef int _catch_up_before_commit(self, int64_t now) except -1:
        cdef int64_t n
        if (
            now < self.busy_until
            or self.fetch_paused
            or self.waiting
            or now < self.stall_until
            or self.generation < 0
            or self._at_most_once
        ):
            return 0
        n = self._fetch(now)
        if not n:
            return 0
        self.batch_rate = self._rate
        self._busy_for(now, n, self._rate)
        self._finish_batch(now, False)
        return 0

    cdef int _die(self, str kind) except -1:
        cdef int64_t now = self._now()
        self._stop_heartbeats()
        if self.pause_start is not None:
            self.w.add_paused(self, now - <int64_t>self.pause_start)
            self.pause_start = None
        self.alive = False
        self.own.k = 0
        self.poll_token += 1
        self.state = _UNJOINED
        self.w.emit(kind, self.name, self.generation)
        return 0

    # ------------------------------------------------------------- poll loop

    cdef int _schedule_poll(self, int64_t t) except -1:
        self.poll_token += 1
        self.w.loop.at_c(t, self, EV_POLL, self.poll_token, None)
        return 0

    cdef int _poll_soon(self, int64_t t) except -1:
        cdef int64_t now = self._now()
        if t <= now and not self._in_poll:
            self.poll_token += 1
            self._poll_c(self.poll_token)
        else:
            self._schedule_poll(t)
        return 0

    cpdef wake(self):
        cdef int64_t now, t
        if self.alive and not self.waiting:
            now = self._now()
            t = self.busy_until
            if self.stall_until > t:
                t = self.stall_until
            if t <= now and not self._in_poll:
                self.poll_token += 1
                self._poll_c(self.poll_token)
            else:
                self._schedule_poll(t if t > now else now)

    def _poll(self, int64_t token):
        self._poll_c(token)

    cdef int _poll_c(self, int64_t token) except -1:
        if token != self.poll_token or not self.alive:
            return 0
        self._in_poll = True
        try:
            self._poll_body()
        finally:
            self._in_poll = False
        return 0

    cdef int _poll_body(self) except -1:
        cdef WorldBase w = self.w
        cdef int64_t now = self._now()
        cdef int64_t n, dur, nxt, idle, ac
        cdef double rate
        cdef bint rejoining, auto
        if self.batch.n:
            self._finish_batch(now, False)
        if now < self.stall_until:
            self._schedule_poll(self.stall_until)
            return 0
        self.last_poll = now
        if self.poll_timed_out:
            self.poll_timed_out = False
            if self.own.k:
                w.lose(self, self._owned(), "poll timeout")
                self.own.k = 0
        while self.deferred:
            resp = self.deferred.pop(0)
            self._handle_response(resp)
            if not self.alive:
                return 0
        rejoining = self.rejoin_needed or self.join_inflight
        if (
            rejoining
            and not self.join_inflight
            and self._prepare != PC_IN_FLIGHT
            and (self.state is _UNJOINED or self.state is _STABLE)
        ):
            self._prepare_join()
        if self.waiting or not self.alive:
            return 0
        auto = self._auto_commit
        if auto and now >= self.next_autocommit and not rejoining:
            self.next_autocommit = now + self._aci
            if self.generation >= 0 and self.own.k:
                self._commit_positions("auto", False)
        n = self._fetch(now)
        if n:
            if self._at_most_once and self.generation >= 0:
                self._commit_positions("before-processing", False)
            if self._pjitter:
                rate = self._rate * (1.0 + self._pjitter * (2.0 * <double>w.rand() - 1.0))
            else:
                rate = self._rate
            self.batch_rate = rate
            dur = self._busy_for(now, n, rate)
        else:
            dur = 0
        self.busy_until = now + dur
        if n >= self._budget:
            nxt = now + dur
        elif n:
            idle = self._poll_idle
            nxt = now + (dur if dur > idle else idle)
        else:
            nxt = self._next_arrival()
            if now + self._poll_idle > nxt:
                nxt = now + self._poll_idle
        if auto and not rejoining and (n or self._uncommitted()):
            ac = self.next_autocommit
            if now + dur > ac:
                ac = now + dur
            if ac < nxt:
                nxt = ac
        if nxt != NEVER:
            self._schedule_poll(nxt if nxt > now else now + 1)
        return 0

    cdef int64_t _busy_for(self, int64_t now, int64_t n, double rate) except? -1:
        """`SimMember._busy_for(now, n * rate, rate)`: native_batch_time's doubles."""
        return busy_for_c(
            now, n, rate, self.busy_until, self.caught_up_from, self.stall_until,
            self.batch_last_t, &self.batch_t0,
        )

    cdef int64_t _next_arrival(self) except? -1:
        return self.own.next_arrival_c()

    cdef bint _uncommitted(self) except -1:
        return self.own.uncommitted_c()

    cdef int64_t _fetch(self, int64_t now) except? -1:
        """`SimMember._fetch`: the batch (reused) from the rotating start; the records taken."""
        cdef OwnedPartitions own = self.own
        cdef Py_ssize_t k = own.k
        cdef int64_t room, last = 0
        self.batch_t0 = <double>now
        self.batch.n = 0
        if not k or self.fetch_paused:
            return 0
        room = own.fetch_c((self.poll_token * 7) % k, now, self._budget, self.batch, &last)
        self.batch_last_t = last
        self.batch_taken = self._budget - room
        return self.batch_taken

    cpdef _finish_batch(self, int64_t now, bint partial=False):
        cdef Triples batch = self.batch
        cdef int64_t done
        cdef Py_ssize_t i
        if not batch.n:
            return
        if partial:
            batch = self._processed_by(now)
            done = 0
            for i in range(batch.n):
                done += batch.data[3 * i + 2] - batch.data[3 * i + 1]
        else:
            done = self.batch_taken
        cdef WorldBase w = self.w
        cdef int64_t dup = w.processed_table.finish_c(batch)
        self.batch.n = 0  # after finish_c: `batch` may be this very buffer
        w.add_processed(done, dup)

    cdef Triples _processed_by(self, int64_t now):
        """The batch's part processed by `now` (into the reused `_partial`)."""
        cdef int64_t limit = processed_limit_c(now, self.batch_t0, self.batch_rate)
        cdef int64_t a, b
        cdef Triples batch = self.batch, out = self._partial
        cdef Py_ssize_t i
        out.n = 0
        for i in range(batch.n):
            if limit <= 0:
                break
            a = batch.data[3 * i + 1]
            b = batch.data[3 * i + 2]
            if b - a > limit:
                b = a + limit
            out.append(batch.data[3 * i], a, b)
            limit -= b - a
        return out

    # ------------------------------------------------------------- commits

    cdef int _commit_positions(self, str why, bint answer) except -1:
        # the changed positions as (partition, position, slot) in owned order: the OffsetCommit's
        # offsets (one object per commit, handed to the coordinator's event)
        cdef Triples offsets = Triples()
        self.own.changed_c(offsets)
        if self.join_inflight and (offsets.n or answer):
            self.w.emit(
                "commit_failed",
                self.name,
                self.generation,
                None,
                detail={
                    "error": "REBALANCE_IN_PROGRESS",
                    "exception": cc.RebalanceInProgressException.__name__,
                    "sent": False,
                    "reason": why,
                },
            )
            return 0
        if offsets.n or answer:
            self.own.mark_sent_c(offsets)
            self.w.commit(self, offsets, why, answer)
        return 0

    cpdef on_commit_response(self, error, sent=None, bint answered=False):
        if not self.alive:
            return
        cdef bint retry
        if answered and self._prepare == PC_IN_FLIGHT:
            retry = (
                error is not _NONE
                and _on_commit_error(
                    error, generation_unchanged=self._generation_unchanged(sent), state=self.state
                ).retriable
            )
            self._prepare = PC_NONE if retry else PC_DONE
            if error is _NONE:
                self.wake()
                return
            if retry:
                self.w.loop.after(self._retry_backoff, self._wake_if, self.incarnation)
        if error is _NONE:
            return
        self.own.clear_sent()
        outcome = _on_commit_error(
            error, generation_unchanged=self._generation_unchanged(sent), state=self.state
        )
        exc = outcome.async_exception
        self.w.emit(
            "commit_failed",
            self.name,
            self.generation,
            None,
            detail={"error": error.name, "exception": exc.__name__ if exc else None, "sent": True},
        )
        if outcome.reset_generation:
            self._stop_heartbeats()
            self.generation = -1
            self.state = _UNJOINED
        if outcome.reset_member_id:
            self.member_id = ""
        if outcome.request_rejoin:
            self.rejoin_needed = True
            self.wake()
        elif answered and self._prepare == PC_DONE:
            self.wake()

    def _wake_if(self, int64_t inc):
        if inc == self.incarnation and self.alive:
            self.wake()

