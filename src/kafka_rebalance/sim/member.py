"""A simulated consumer: poll loop, record processing, commits and the classic rebalance client.

Decisions (what to revoke, how to react to an error code, which protocol the
assignor list selects) come from `group.consumer_client`; this module only
carries them out in virtual time. Like the Java client, rebalance progress
(JoinGroup/SyncGroup responses, revocation callbacks) is handled inside
poll(): a member busy processing a batch handles them when the batch is done.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ..assign.userdata import DEFAULT_GENERATION
from ..group import consumer_client as cc
from ..group.classic_messages import (
    LeaveGroupRequest,
)
from ..group.consumer_client import MemberState
from ..group.errors import Errors
from .member_rebalance import PrepareCommit, RebalanceClient, mypyc_attr
from .poll_kernels import changed_positions as _k_changed_positions
from .poll_kernels import fetch as _k_fetch
from .poll_kernels import finish as _k_finish
from .poll_kernels import next_arrival as _k_next_arrival
from .poll_kernels import uncommitted as _k_uncommitted

if TYPE_CHECKING:
    from .world_core import WorldCore

# the per-partition loops of poll() (sim/poll_kernels.py): compiled with this module (sim/__init__.py
# runs all of their fresh builds or all of their sources), so the build calls them directly, not
# through their Python entry points; bound as `_k_` names so that a source-loaded member can be
# given the kernels' sources (tests/test_sim_fingerprint_legs.py's pure leg)

_NEVER = 1 << 62

# read as C statics in the build (enum members and the pure core's decisions, looked up once)
_UNJOINED: Final = MemberState.UNJOINED
_STABLE: Final = MemberState.STABLE
_COMMIT_NONE: Final = PrepareCommit.NONE
_COMMIT_IN_FLIGHT: Final = PrepareCommit.IN_FLIGHT
_COMMIT_DONE: Final = PrepareCommit.DONE
_NONE: Final = Errors.NONE
_on_commit_error: Final = cc.on_commit_error


@mypyc_attr(allow_interpreted_subclasses=True)  # consumer_world.ConsumerSimMember (KIP-848)
class SimMember(RebalanceClient):
    """A classic consumer: lifecycle, the poll loop, record processing and commits."""

    def __init__(self, world: WorldCore, name: str, rack: str | None) -> None:
        self.w = world
        self.name = name
        self.rack = rack
        g = world.sc.group
        self.instance_id = name if g.static_membership else None
        self.protocol = cc.choose_protocol(g.assignors)
        self.ms_per_record = world.sc.processing_ms_per_record
        # configuration read on every poll, resolved once
        self._auto_commit = g.delivery == "at-least-once" and g.enable_auto_commit
        self._at_most_once = g.delivery == "at-most-once"
        self._budget: int = g.max_poll_records
        self._poll_idle: int = world.sc.poll_idle_ms
        self._pjitter = world.sc.processing_jitter
        self.leave_delay_ms = (
            0  # close(): how long after it the LeaveGroup goes (World._close_member)
        )
        self._aci = g.auto_commit_interval_ms
        self._hb_interval = g.heartbeat_interval_ms
        self._hb_latency = world.sc.network_latency_ms
        self._join_auto_commit = g.enable_auto_commit and g.delivery == "at-least-once"
        self._session_timeout = g.session_timeout_ms
        self._rebalance_timeout = g.max_poll_interval_ms
        self._assignors = tuple(g.assignors)
        self.alive = False
        self.incarnation = 0
        self.client = ""
        self.state = _UNJOINED
        self.member_id = ""
        self.generation = -1
        self.is_leader = False
        self.owned: list[int] = []
        self.positions: dict[int, int] = {}
        self.sent_offsets: dict[int, int] = {}
        self.rejoin_needed = False
        self.join_inflight = False
        self.prepare_commit = _COMMIT_NONE
        self.fetch_paused = False
        self.waiting = False  # blocked inside poll() on the rebalance (eager, or nothing owned yet)
        self.deferred: list = []  # responses that arrived while the member was busy processing
        self.batch: list[tuple[int, int, int]] = []
        self.batch_t0: float = (
            0.0  # when processing of the batch in flight began (dated back: _busy_for)
        )
        self.batch_taken = 0  # records in the batch in flight
        self.batch_last_t = 0  # when the batch's newest record reached the broker
        self.caught_up_from = 0  # since when the member could fetch from every partition it owns
        self.busy_until = 0
        self.stall_until = 0
        self.last_poll = 0
        self.poll_token = 0
        self.next_autocommit = 0
        self.joined_protocol = None
        self.sticky_memory = None
        self.coop_generation = DEFAULT_GENERATION
        self.hb_base = 0
        self.hb_first = 0
        self.batch_rate = self.ms_per_record
        self.hb_ticking = False
        self.pause_start: int | None = None
        self.known_partitions: dict[str, int] = {}
        self.assigned_view: dict[str, int] = {}
        self.started_at = 0
        self.poll_timed_out = False
        self._in_poll = False

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        w = self.w
        now = w.loop.now
        self.alive = True
        self.incarnation += 1
        self.client = f"{self.name}#{self.incarnation}"
        self.state = _UNJOINED
        self.member_id = ""
        self.generation = -1
        self.is_leader = False
        self.joined_protocol = None
        self.sticky_memory = (
            None  # a new consumer instance: a new StickyAssignor, nothing assigned yet
        )
        self.coop_generation = DEFAULT_GENERATION  # and a new CooperativeStickyAssignor
        self.owned, self.positions = [], {}
        self.sent_offsets = {}
        self.rejoin_needed = True
        self.join_inflight = False
        self.prepare_commit = _COMMIT_NONE
        self.fetch_paused = False
        self.waiting = False
        self.deferred = []
        self.batch = []
        self.busy_until = now
        self.caught_up_from = now
        self.stall_until = 0
        self.last_poll = now
        self.next_autocommit = now + self._aci
        self.hb_ticking = False
        self.started_at = now
        self.poll_timed_out = False
        self.known_partitions = w.partition_counts()
        self.pause_start = now
        w.emit("start", self.name)
        self._schedule_poll(now)

    def shutdown(self) -> None:
        """Clean close(): commit, revoke, LeaveGroup (dynamic members only, KIP-345)."""
        if not self.alive:
            return
        w = self.w
        now = w.loop.now
        self._finish_batch(now)
        if self.generation >= 0 and self.owned:
            self._commit_positions("close")
        if self.owned:
            # ConsumerCoordinator.onLeavePrepare: mid-rebalance (or with no generation) they are lost
            if self.join_inflight or self.generation < 0:
                w.lose(self, list(self.owned), "close during rebalance")
            else:
                w.revoke(self, list(self.owned), "close")
        self.owned, self.positions = [], {}
        if self.instance_id is None and self.member_id:
            w.send_leave(
                self,
                "leave",
                LeaveGroupRequest(self.client, ((self.member_id, None),), "consumer closed"),
            )
        self._die("stop")

    def crash(self, killed: bool = False) -> None:
        """Hard stop: no commit, no LeaveGroup; a batch in flight is processed only partly. `killed`: the
        process was killed (the scenario's crash event), so what Java's poll() had already returned is
        processed first; a fatal error (fenced, FENCED_INSTANCE_ID...) is not a kill: Java's commitSync and
        poll() throw at once, so nothing more is committed or processed."""
        if not self.alive:
            return
        now = self.w.loop.now
        self._finish_batch(now, partial=True)
        if killed and now >= self.busy_until:
            self._catch_up(now)
        self.w.set_unavailable_many(self.owned, now)
        self._die("crash")

    def _catch_up_before_commit(self, now: int) -> None:
        """Before a pre-rejoin commit: a consumer that keeps up had processed what arrived since its last
        poll_idle tick (Java's poll() returned it as it came, one record at most still in hand), so
        the commit carries those positions and nothing of them is processed after it."""
        if (
            now < self.busy_until
            or self.fetch_paused
            or self.waiting
            or now < self.stall_until
            or self.generation < 0
            or self._at_most_once
        ):
            return
        n = self._fetch(now)
        if not n:
            return
        self.batch_rate = rate = self.ms_per_record
        self._busy_for(now, n * rate, rate)
        self._finish_batch(now)

    def _catch_up(self, now: int) -> None:
        """What a consumer that keeps up had consumed by `now` since its last poll: Java's poll() returned
        those records as they arrived (the simulator fetches them at its next poll_idle tick), so at a
        crash they are processed as far as Java would have got, and under at-most-once committed first."""
        if self.fetch_paused or self.waiting or now < self.stall_until or self.generation < 0:
            return
        n = self._fetch(now)
        if not n:
            return
        if self._at_most_once:
            self._commit_positions("before-processing")
        self.batch_rate = rate = self.ms_per_record
        self._busy_for(now, n * rate, rate)
        self._finish_batch(now, partial=True)

    def _stop_heartbeats(self) -> None:
        if self.heartbeating():
            self.w.coord.heartbeat_stopped(
                self.member_id,
                self.hb_base,
                self.hb_first,
                self.w.loop.now,
                self.generation,
                self.client,
            )

    def _die(self, kind: str) -> None:
        now = self.w.loop.now
        self._stop_heartbeats()
        if self.pause_start is not None:
            self.w.add_paused(self, now - self.pause_start)
            self.pause_start = None
        self.alive = False
        self.owned, self.positions = [], {}
        self.poll_token += 1
        self.state = _UNJOINED
        self.w.emit(kind, self.name, self.generation)

    def pause(self, for_ms: int) -> None:
        """A stuck poll (long processing): heartbeats continue, polling and processing stop."""
        if not self.alive:
            return
        w = self.w
        now = w.loop.now
        if now >= self.busy_until and now >= self.stall_until:
            self.last_poll = (
                now  # an idle consumer is blocked inside poll(): the poll timer starts now
            )
        self.stall_until = max(self.stall_until, now + for_ms)
        w.set_unavailable_many(self.owned, now)
        w.emit("pause", self.name, self.generation, detail={"for_ms": for_ms})
        deadline = self.last_poll + w.sc.group.max_poll_interval_ms
        if deadline < self.stall_until:
            w.loop.at(deadline, self._poll_timeout, self.incarnation, self.last_poll)
        w.loop.at(self.stall_until, self._stall_end, self.incarnation)

    def _stall_end(self, inc: int) -> None:
        if inc != self.incarnation or not self.alive or self.w.loop.now < self.stall_until:
            return
        now = self.w.loop.now
        if not self.waiting:
            self.w.set_available_many(self.owned, now, self.name)

    def _poll_timeout(self, inc: int, last_poll: int) -> None:
        """The heartbeat thread sees max.poll.interval.ms exceeded (AbstractCoordinator.maybeLeaveGroup)."""
        if inc != self.incarnation or not self.alive or self.last_poll != last_poll:
            return
        w = self.w
        w.emit("poll_timeout", self.name, self.generation)
        if cc.should_leave_on_poll_timeout(self.instance_id is not None) and self.member_id:
            w.send(
                self,
                "leave",
                LeaveGroupRequest(
                    self.client, ((self.member_id, None),), "consumer poll timeout has expired"
                ),
            )
            w.emit("leave", self.name, self.generation, detail={"reason": "poll timeout"})
        # the generation is reset either way; a static member simply goes silent
        self._stop_heartbeats()
        self.generation = -1
        if self.instance_id is None:
            self.member_id = ""
        self.state = _UNJOINED
        self.join_inflight = False
        self.rejoin_needed = True
        self.poll_timed_out = True

    def on_metadata_refresh(self, inc: int) -> None:
        """metadata.max.age.ms elapsed: the leader rejoins if partition counts changed since it assigned."""
        if inc != self.incarnation or not self.alive:
            return
        self.known_partitions = self.w.partition_counts()
        if self.is_leader and self.assigned_view and self.assigned_view != self.known_partitions:
            self.w.emit(
                "metadata_changed",
                self.name,
                self.generation,
                detail={"partitions": self.known_partitions},
            )
            self.rejoin_needed = True
            self.wake()

    # ------------------------------------------------------------- poll loop

    def _schedule_poll(self, t: int) -> None:
        self.poll_token += 1
        self.w.loop.at(t, self._poll, self.poll_token)

    def _poll_soon(self, t: int) -> None:
        """Poll at t; at once (no event) when t is now and we are not already inside poll()."""
        now: int = self.w.loop.now
        if t <= now and not self._in_poll:
            self.poll_token += 1
            self._poll(self.poll_token)
        else:
            self._schedule_poll(t)

    def wake(self) -> None:
        """Something needs poll() (a rejoin, a response): run it as soon as the current batch is done."""
        if self.alive and not self.waiting:
            # _poll_soon, inlined (every response of every rebalance comes through here)
            now: int = self.w.loop.now  # unboxed once: compared and added natively
            t = self.busy_until
            if self.stall_until > t:
                t = self.stall_until
            if t <= now and not self._in_poll:
                self.poll_token += 1
                self._poll(self.poll_token)
            else:
                self._schedule_poll(t if t > now else now)

    def _poll(self, token: int) -> None:
        if token != self.poll_token or not self.alive:
            return
        self._in_poll = True
        try:
            w = self.w
            now: int = w.loop.now  # unboxed once: compared and added natively
            if self.batch:
                self._finish_batch(now)
            if now < self.stall_until:
                self._schedule_poll(self.stall_until)
                return
            self.last_poll = now
            if self.poll_timed_out:
                self.poll_timed_out = False
                if self.owned:
                    w.lose(self, list(self.owned), "poll timeout")
                    self.owned, self.positions = [], {}
            while self.deferred:
                resp = self.deferred.pop(0)
                self._handle_response(resp)
                if not self.alive:
                    return
            rejoining = self.rejoin_needed or self.join_inflight
            if (
                rejoining
                and not self.join_inflight
                and self.prepare_commit is not _COMMIT_IN_FLIGHT
                and self.state in (_UNJOINED, _STABLE)
            ):
                self._prepare_join()
            if self.waiting or not self.alive:
                return
            auto = self._auto_commit
            # ConsumerCoordinator.poll: while a rejoin is needed or JoinGroup/SyncGroup is in flight,
            # ensureActiveGroup returns false and poll() skips maybeAutoCommitOffsetsAsync
            if auto and now >= self.next_autocommit and not rejoining:
                self.next_autocommit = now + self._aci
                if self.generation >= 0 and self.owned:
                    self._commit_positions("auto")
            n = self._fetch(now)
            if n:
                if self._at_most_once and self.generation >= 0:
                    self._commit_positions("before-processing")
                # this batch's per-record time: processing_ms_per_record with seeded jitter
                pj = self._pjitter
                rate = (
                    self.ms_per_record * (1.0 + pj * (2.0 * w.rand() - 1.0))
                    if pj
                    else self.ms_per_record
                )
                self.batch_rate = rate
                dur = self._busy_for(now, n * rate, rate)
            else:
                dur = 0
            self.busy_until = now + dur
            if n >= self._budget:
                nxt = now + dur
            elif n:
                idle = self._poll_idle
                nxt = now + (dur if dur > idle else idle)
            else:
                nxt = max(now + self._poll_idle, self._next_arrival(now))
            if auto and not rejoining and (n or self._uncommitted()):
                ac = self.next_autocommit
                if now + dur > ac:
                    ac = now + dur
                if ac < nxt:
                    nxt = ac
            if nxt != _NEVER:
                self._schedule_poll(nxt if nxt > now else now + 1)
        finally:
            self._in_poll = False

    def _busy_for(self, now: int, work: float, rate: float) -> int:
        """How long the member is still busy with this poll's batch, as the Java client would be.

        poll(Duration) returns as soon as records arrive, so a consumer that keeps up processes each
        record when it lands; the simulator only polls such a consumer every poll_idle_ms, and its batch
        holds what arrived since. Java processed those records as they came (from when it could fetch
        them: its last batch done, its partitions assigned, a stall over), so the batch is dated back:
        it is done `work` after that start, and no sooner than one record after the newest arrived.
        A backlog (records waiting before the start) keeps the member busy for all of `work`."""
        start = self.busy_until
        if self.caught_up_from > start:
            start = self.caught_up_from
        if self.stall_until > start:
            start = self.stall_until
        end = start + work
        tail = self.batch_last_t + rate
        if tail > end:
            end = tail
        self.batch_t0 = end - work  # the batch is processed over [end - work, end)
        return int(end - now + 0.999999) if end > now else 0

    def _next_arrival(self, now: int) -> int:
        """When the next record lands on an owned partition (never, when nothing is produced to them)."""
        w = self.w
        return _k_next_arrival(self.owned, self.positions, w.p_base, w.p_base_t, w.p_num, w.p_den)

    def _uncommitted(self) -> bool:
        """Has any owned partition a position not yet sent in a commit?"""
        return _k_uncommitted(self.owned, self.sent_offsets, self.positions)

    def _fetch(self, now: int) -> int:
        """One poll's records: up to max.poll.records, partition by partition (rotating the start)."""
        owned = self.owned
        k = len(owned)
        self.batch_t0 = float(now)  # exact: times stay far below 2**53
        if not k or self.fetch_paused:
            self.batch = []
            return 0
        w = self.w
        batch: list[tuple[int, int, int]] = []
        room, last = _k_fetch(
            owned,
            (self.poll_token * 7) % k,  # the partition it starts from rotates
            self.positions,
            w.p_base,
            w.p_base_t,
            w.p_num,
            w.p_den,
            now,
            self._budget,
            batch,
        )
        self.batch_last_t = last
        self.batch = batch
        taken = self.batch_taken = self._budget - room
        return taken

    def _finish_batch(self, now: int, partial: bool = False) -> None:
        """Record the batch in flight as processed (`partial`: only what was processed by now, a crash)."""
        batch = self.batch
        if not batch:
            return
        if partial:
            batch = self._processed_by(now)
            done = sum(b - a for _, a, b in batch)
        else:
            done = self.batch_taken
        self.batch = []
        w = self.w
        w.duplicates += _k_finish(batch, w.p_processed)
        w.processed += done

    def _processed_by(self, now: int) -> list[tuple[int, int, int]]:
        """The head of the batch in flight processed by now (records are processed in batch order)."""
        limit = int((now - self.batch_t0) / self.batch_rate)
        out = []
        for p, a, b in self.batch:
            if limit <= 0:
                break
            if b - a > limit:
                b = a + limit
            out.append((p, a, b))
            limit -= b - a
        return out

    # ------------------------------------------------------------- commits

    def _commit_positions(self, why: str, answer: bool = False) -> None:
        """Commit consumed positions. Unchanged ones are skipped: re-committing an offset changes
        nothing the simulator measures (Kafka's auto-commit does resend them). `answer`: the member
        waits for the response (onJoinPrepare), so the request goes out even with nothing new in it."""
        sent = self.sent_offsets
        offsets = _k_changed_positions(self.owned, self.positions, sent)
        if self.join_inflight and (offsets or answer):
            # ConsumerCoordinator.sendOffsetCommitRequest: no generation while JoinGroup/SyncGroup is in
            # flight (generationIfStable() is null), so the commit fails at once and is never sent
            self.w.emit(
                "commit_failed",
                self.name,
                self.generation,
                detail={
                    "error": "REBALANCE_IN_PROGRESS",
                    "exception": cc.RebalanceInProgressException.__name__,
                    "sent": False,
                    "reason": why,
                },
            )
            return
        if offsets or answer:
            sent.update(offsets)
            self.w.commit(self, offsets, why, answer)

    def on_commit_response(
        self, error: Errors, sent: tuple[int, str] | None = None, answered: bool = False
    ) -> None:
        """Failed commits are answered, and the one onJoinPrepare waits for (`answered`); a success
        changes nothing else on the member. `sent` is the (generation, member id) the commit went out
        with: an error about a generation left since is stale."""
        if not self.alive:
            return
        if answered and self.prepare_commit is _COMMIT_IN_FLIGHT:
            retry = (
                error is not _NONE
                and _on_commit_error(
                    error, generation_unchanged=self._generation_unchanged(sent), state=self.state
                ).retriable
            )
            # a retriable failure is committed again (after retry.backoff.ms); anything else lets the rejoin go on
            self.prepare_commit = _COMMIT_NONE if retry else _COMMIT_DONE
            if error is _NONE:
                self.wake()
                return
            if retry:
                self.w.loop.after(self.w.sc.group.retry_backoff_ms, self._wake_if, self.incarnation)
        if error is _NONE:
            return
        self.sent_offsets = {}
        outcome = _on_commit_error(
            error, generation_unchanged=self._generation_unchanged(sent), state=self.state
        )
        # the simulator's commits are asynchronous (a failed one is resent with the next commit), so the
        # exception is the one an OffsetCommitCallback would get
        exc = outcome.async_exception
        self.w.emit(
            "commit_failed",
            self.name,
            self.generation,
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
        elif answered and self.prepare_commit is _COMMIT_DONE:
            self.wake()

    def _wake_if(self, inc: int) -> None:
        if inc == self.incarnation and self.alive:
            self.wake()
