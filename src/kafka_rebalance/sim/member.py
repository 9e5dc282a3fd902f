"""A simulated consumer: poll loop, record processing, commits and the classic rebalance client.

Decisions (what to revoke, how to react to an error code, which protocol the
assignor list selects) come from `group.consumer_client`; this module only
carries them out in virtual time. Like the Java client, rebalance progress
(JoinGroup/SyncGroup responses, revocation callbacks) is handled inside
poll(): a member busy processing a batch handles them when the batch is done.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..group import consumer_client as cc
from ..group.classic_messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)
from ..group.consumer_client import MemberState
from ..group.errors import Errors
from ..model import TopicPartition

if TYPE_CHECKING:
    from .world import Simulation

_NEVER = 1 << 62


@dataclass(frozen=True, slots=True)
class Subscription:
    """ConsumerProtocolSubscription: what a member tells the leader in JoinGroup metadata."""

    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...]
    generation: int
    rack: str | None
    # the same owned partitions as the simulator's partition indices (a shortcut for the leader; not part
    # of the protocol: None when rebuilt from the offsets log, ignored by equality)
    owned_idx: tuple[int, ...] | None = field(default=None, compare=False)


class SimMember:
    # slots: attribute access on the hot path (every poll, every rebalance of every member)
    __slots__ = (
        "w",
        "name",
        "rack",
        "instance_id",
        "protocol",
        "ms_per_record",
        "alive",
        "incarnation",
        "client",
        "state",
        "member_id",
        "generation",
        "is_leader",
        "owned",
        "positions",
        "rejoin_needed",
        "join_inflight",
        "waiting",
        "deferred",
        "batch",
        "batch_t0",
        "batch_rate",
        "busy_until",
        "stall_until",
        "last_poll",
        "poll_token",
        "next_autocommit",
        "batch_taken",
        "hb_base",
        "hb_first",
        "hb_phase",
        "hb_ticking",
        "pause_start",
        "known_partitions",
        "assigned_view",
        "started_at",
        "poll_timed_out",
        "_in_poll",
        "sent_offsets",
        "_auto_commit",
        "_at_most_once",
        "_budget",
        "_poll_idle",
        "_pjitter",
        "_aci",
        "__dict__",
    )

    def __init__(self, world: Simulation, name: str, rack: str | None) -> None:
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
        self._budget = g.max_poll_records
        self._poll_idle = world.sc.poll_idle_ms
        self._pjitter = world.sc.processing_jitter
        self._aci = g.auto_commit_interval_ms
        self.alive = False
        self.incarnation = 0
        self.client = ""
        self.state = MemberState.UNJOINED
        self.member_id = ""
        self.generation = -1
        self.is_leader = False
        self.owned: list[int] = []
        self.positions: dict[int, int] = {}
        self.sent_offsets: dict[int, int] = {}
        self.rejoin_needed = False
        self.join_inflight = False
        self.waiting = False  # blocked inside poll() on the rebalance (eager, or nothing owned yet)
        self.deferred: list = []  # responses that arrived while the member was busy processing
        self.batch: list[tuple[int, int, int]] = []
        self.batch_t0 = 0
        self.batch_taken = 0  # records in the batch in flight
        self.busy_until = 0
        self.stall_until = 0
        self.last_poll = 0
        self.poll_token = 0
        self.next_autocommit = 0
        self.hb_base = 0
        self.hb_first = 0
        self.hb_phase = 0
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
        self.state = MemberState.UNJOINED
        self.member_id = ""
        self.generation = -1
        self.is_leader = False
        self.owned, self.positions = [], {}
        self.sent_offsets: dict[int, int] = {}
        self.rejoin_needed = True
        self.join_inflight = False
        self.waiting = False
        self.deferred = []
        self.batch = []
        self.busy_until = now
        self.stall_until = 0
        self.last_poll = now
        self.next_autocommit = now + w.sc.group.auto_commit_interval_ms
        self.hb_ticking = False
        # the heartbeat thread's phase: its first beat comes up to heartbeat.interval.ms sooner (seeded)
        self.hb_phase = int(w.rand() * w.sc.group.heartbeat_interval_ms)
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
            w.revoke(self, list(self.owned), "close")
        self.owned, self.positions = [], {}
        if self.instance_id is None and self.member_id:
            w.send(
                self,
                "leave",
                LeaveGroupRequest(self.client, ((self.member_id, None),), "consumer closed"),
            )
        self._die("stop")

    def crash(self) -> None:
        """Hard kill: no commit, no LeaveGroup; a batch in flight is processed only partly."""
        if not self.alive:
            return
        now = self.w.loop.now
        self._finish_batch(now, partial=True)
        self.w.set_unavailable_many(self.owned, now)
        self._die("crash")

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
        self.state = MemberState.UNJOINED
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
        self.state = MemberState.UNJOINED
        self.join_inflight = False
        self.rejoin_needed = True
        self.poll_timed_out = True

    # ------------------------------------------------------------- poll loop

    def _schedule_poll(self, t: int) -> None:
        self.poll_token += 1
        self.w.loop.at(t, self._poll, self.poll_token)

    def _poll_soon(self, t: int) -> None:
        """Poll at t; at once (no event) when t is now and we are not already inside poll()."""
        if t <= self.w.loop.now and not self._in_poll:
            self.poll_token += 1
            self._poll(self.poll_token)
        else:
            self._schedule_poll(t)

    def wake(self) -> None:
        """Something needs poll() (a rejoin, a response): run it as soon as the current batch is done."""
        if self.alive and not self.waiting:
            self._poll_soon(max(self.w.loop.now, self.busy_until, self.stall_until))

    def _poll(self, token: int) -> None:
        if token != self.poll_token or not self.alive:
            return
        self._in_poll = True
        try:
            self._poll_body()
        finally:
            self._in_poll = False

    def _poll_body(self) -> None:
        w = self.w
        now = w.loop.now
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
        if (
            self.rejoin_needed
            and not self.join_inflight
            and self.state in (MemberState.UNJOINED, MemberState.STABLE)
        ):
            self._prepare_join()
        if self.waiting or not self.alive:
            return
        auto = self._auto_commit
        if auto and now >= self.next_autocommit:
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
            dur = int(n * rate + 0.999999)
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
        if auto and (n or self._uncommitted()):
            ac = self.next_autocommit
            if now + dur > ac:
                ac = now + dur
            if ac < nxt:
                nxt = ac
        if nxt != _NEVER:
            self._schedule_poll(nxt if nxt > now else now + 1)

    def _next_arrival(self, now: int) -> int:
        """When the next record lands on an owned partition (never, when nothing is produced to them)."""
        parts = self.w.parts
        base, base_t, nums, den = parts.base, parts.base_t, parts.num, parts.den
        get = self.positions.get
        best = _NEVER
        for p in self.owned:
            num = nums[p]
            pos = get(p)
            if num <= 0 or pos is None:
                continue
            need = (pos + 1 - base[p]) * den[p]
            t = base_t[p] + (-(-need // num) if need > 0 else 0)
            if t < best:
                best = t
        return best

    def _uncommitted(self) -> bool:
        """Has any owned partition a position not yet sent in a commit? (a loop, not any(genexpr): hot path)"""
        sent, pos = self.sent_offsets.get, self.positions.get
        for p in self.owned:
            if sent(p) != pos(p):
                return True
        return False

    def _fetch(self, now: int) -> int:
        """One poll's records: up to max.poll.records, partition by partition (rotating the start)."""
        owned = self.owned
        k = len(owned)
        self.batch_t0 = now
        if not k:
            self.batch = []
            return 0
        room = self._budget
        parts = self.w.parts
        base, base_t, num, den = parts.base, parts.base_t, parts.num, parts.den
        positions = self.positions
        get = positions.get  # bound once: this loop runs for every owned partition of every poll
        batch: list[tuple[int, int, int]] = []
        append = batch.append
        start = (self.poll_token * 7) % k
        order = owned[start:] + owned[:start] if start else owned
        for p in order:
            pos = get(p)
            if pos is None:
                continue
            n = base[p] + (num[p] * (now - base_t[p])) // den[p] - pos
            if n <= 0:
                continue
            if n >= room:  # the budget runs out on this partition
                append((p, pos, pos + room))
                positions[p] = pos + room
                room = 0
                break
            end = pos + n
            append((p, pos, end))
            positions[p] = end
            room -= n
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
        processed = w.parts.processed
        for p, a, b in batch:
            ends = processed[p].ends
            if ends and ends[-1] == a:  # the common case: continuing where processing stopped
                ends[-1] = b
            else:
                w.duplicates += processed[p].add(a, b)
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

    def _commit_positions(self, why: str) -> None:
        """Commit consumed positions. Unchanged ones are skipped: re-committing an offset changes
        nothing the simulator measures (Kafka's auto-commit does resend them)."""
        sent = self.sent_offsets
        get_pos, get_sent = (
            self.positions.get,
            sent.get,
        )  # bound once: every owned partition of every commit
        offsets = {}
        for p in self.owned:
            pos = get_pos(p)
            if pos is not None and get_sent(p) != pos:
                offsets[p] = pos
        if offsets:
            sent.update(offsets)
            self.w.commit(self, offsets, why)

    def _generation_unchanged(self, sent: tuple[int, str] | None) -> bool:
        """CoordinatorResponseHandler.generationUnchanged(): is the member still in the (generation, member id)
        the request went out with? (None: not known, taken as unchanged)"""
        return sent is None or (sent[0] == self.generation and sent[1] == self.member_id)

    def on_commit_response(self, error: Errors, sent: tuple[int, str] | None = None) -> None:
        """Only failed commits are answered (a success changes nothing on the member). `sent` is the
        (generation, member id) the commit went out with: an error about a generation left since is stale."""
        if error is Errors.NONE or not self.alive:
            return
        self.sent_offsets = {}
        outcome = cc.on_commit_error(
            error, generation_unchanged=self._generation_unchanged(sent), state=self.state
        )
        # the simulator's commits are asynchronous (a failed one is resent with the next commit), so the
        # exception is the one an OffsetCommitCallback would get
        exc = outcome.async_exception
        self.w.emit(
            "commit_failed",
            self.name,
            self.generation,
            detail={"error": error.name, "exception": exc.__name__ if exc else None},
        )
        if outcome.reset_generation:
            self._stop_heartbeats()
            self.generation = -1
            self.state = MemberState.UNJOINED
        if outcome.reset_member_id:
            self.member_id = ""
        if outcome.request_rejoin:
            self.rejoin_needed = True
            self.wake()

    # ---------------------------------------------------------- heartbeats

    def heartbeating(self) -> bool:
        """Is the heartbeat thread sending heartbeats for the current member id?"""
        return (
            self.generation >= 0
            and self.alive
            and self.member_id != ""
            and not self.poll_timed_out
            and (self.state is MemberState.STABLE or self.state is MemberState.COMPLETING_REBALANCE)
        )

    def last_heartbeat_at(self, t: int) -> int:
        hb = self.w.sc.group.heartbeat_interval_ms
        if t < self.hb_base:
            return self.hb_base
        return self.hb_base + ((t - self.hb_base) // hb) * hb

    def next_heartbeat_at(self, t: int) -> int:
        hb = self.w.sc.group.heartbeat_interval_ms
        if t <= self.hb_base:
            return self.hb_base + hb
        return self.hb_base + ((t - self.hb_base) // hb + 1) * hb

    def start_heartbeat_ticks(self) -> None:
        if self.hb_ticking or not self.heartbeating():
            return
        self.hb_ticking = True
        lat = self.w.sc.network_latency_ms
        self.w.loop.at(
            self.next_heartbeat_at(self.w.loop.now) + lat, self._hb_tick, self.incarnation
        )

    def _hb_tick(self, inc: int) -> None:
        """The heartbeat sent at the phase time reaches the coordinator (one event for send + arrival)."""
        self.hb_ticking = False
        if inc != self.incarnation or not self.heartbeating() or self.rejoin_needed:
            return
        self.w.coord.receive(
            "heartbeat",
            HeartbeatRequest(self.client, self.member_id, self.generation, self.instance_id),
            self.name,
        )

    def on_heartbeat_response(self, error: Errors, sent: tuple[int, str] | None = None) -> None:
        """`sent` is the (generation, member id) the heartbeat went out with (generationUnchanged())."""
        if not self.alive:
            return
        if error is Errors.NONE:
            action = cc.HeartbeatAction.CONTINUE
        else:
            action = cc.on_heartbeat_error(
                error, state=self.state, generation_unchanged=self._generation_unchanged(sent)
            )
        if action is cc.HeartbeatAction.CONTINUE or action is cc.HeartbeatAction.IGNORE:
            if self.w.group_needs_heartbeats():
                self.start_heartbeat_ticks()
            return
        if self.w.wants_events:
            self.w.emit("heartbeat_error", self.name, self.generation, detail={"error": error.name})
        if action is cc.HeartbeatAction.FIND_COORDINATOR or action is cc.HeartbeatAction.RETRY:
            return  # the heartbeat thread carries on (after finding the coordinator / the backoff)
        if action is cc.HeartbeatAction.FATAL:
            self.w.emit("fenced", self.name, self.generation)
            self.crash()
            return
        self._stop_heartbeats()
        if action is cc.HeartbeatAction.RESET_GENERATION_AND_REJOIN:
            self.generation = -1
            self.state = MemberState.UNJOINED
        elif action is cc.HeartbeatAction.RESET_MEMBER_AND_REJOIN:
            self.generation = -1
            self.member_id = ""
            self.state = MemberState.UNJOINED
        self.rejoin_needed = True
        self.wake()

    # ------------------------------------------------------------- rebalance

    def _subscription(self) -> Subscription:
        tps = self.w.parts.tps
        owned_idx = tuple(self.owned)
        return Subscription(
            self.w.topic_names,
            tuple([tps[p] for p in owned_idx]),
            self.generation,
            self.rack,
            owned_idx,
        )

    def _prepare_join(self) -> None:
        w = self.w
        now = w.loop.now
        g = w.sc.group
        prep = cc.on_join_prepare(
            self.owned,
            self.protocol,
            generation_valid=self.generation >= 0,
            auto_commit=g.enable_auto_commit and g.delivery == "at-least-once",
        )
        if prep.commit_first and self.owned:
            self._commit_positions("before-rejoin")
        if prep.revoked:
            w.revoke(self, prep.revoked, "join prepare")
            keep = set(prep.revoked)
            self.owned = [p for p in self.owned if p not in keep]
            for p in prep.revoked:
                self.positions.pop(p, None)
        if prep.lost:
            w.lose(self, list(prep.lost), "membership lost")
            self.owned, self.positions = [], {}
        if not self.owned:
            self.waiting = True
            if self.pause_start is None:
                self.pause_start = now
        self._send_join()

    def _send_join(self) -> None:
        g = self.w.sc.group
        self._stop_heartbeats()
        self.join_inflight = True
        self.rejoin_needed = False
        self.state = MemberState.PREPARING_REBALANCE
        sub = self._subscription()
        protocols = tuple((a, sub) for a in g.assignors)
        req = JoinGroupRequest(
            self.client,
            self.member_id,
            protocols,
            g.session_timeout_ms,
            g.max_poll_interval_ms,
            self.instance_id,
        )
        if self.w.wants_events:
            self.w.emit("join", self.name, self.generation, list(self.owned))
        self.w.send(self, "join", req)

    def on_response(self, resp) -> None:
        """A JoinGroup/SyncGroup response arrives; a busy member handles it at its next poll()."""
        if not self.alive:
            return
        if not self.waiting and self.w.loop.now < max(self.busy_until, self.stall_until):
            self.deferred.append(resp)
            self.wake()
            return
        self._handle_response(resp)

    def _handle_response(self, resp) -> None:
        if isinstance(resp, JoinGroupResponse):
            self._on_join(resp)
        elif isinstance(resp, SyncGroupResponse):
            self._on_sync(resp)

    def _retry_later(self, what: str) -> None:
        """Coordinator unavailable: rediscover it and resend (retry.backoff.ms steps)."""
        t = self.w.coordinator_retry_time(self.w.loop.now, self.w.sc.group.retry_backoff_ms)
        self.w.loop.at(t, self._resend_join, self.incarnation)

    def _resend_join(self, inc: int) -> None:
        if inc == self.incarnation and self.alive:
            self._send_join()

    def _on_join(self, r: JoinGroupResponse) -> None:
        e = r.error
        if e is Errors.NONE:
            self.member_id = r.member_id
            self.generation = r.generation_id
            self.state = MemberState.COMPLETING_REBALANCE
            self.is_leader = r.leader == self.member_id
            assignments = None
            if self.is_leader and not r.skip_assignment:
                assignments = self.w.leader_assign(self, r)
            self.w.send(
                self,
                "sync",
                SyncGroupRequest(
                    self.client,
                    self.member_id,
                    self.generation,
                    self.instance_id,
                    "consumer",
                    r.protocol_name,
                    assignments,
                ),
            )
            return
        if e is Errors.MEMBER_ID_REQUIRED:
            self.member_id = r.member_id
            self._send_join()
            return
        self.w.emit("join_error", self.name, self.generation, detail={"error": e.name})
        if e in (
            Errors.COORDINATOR_NOT_AVAILABLE,
            Errors.NOT_COORDINATOR,
            Errors.COORDINATOR_LOAD_IN_PROGRESS,
        ):
            self._retry_later("join")
        elif e is Errors.UNKNOWN_MEMBER_ID:
            self._reset_and_rejoin(reset_member_id=True)
        elif e is Errors.ILLEGAL_GENERATION:
            self._reset_and_rejoin(reset_member_id=False)
        elif e is Errors.REBALANCE_IN_PROGRESS:
            self._send_join()
        else:  # FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED, INCONSISTENT_GROUP_PROTOCOL...: fatal
            self.w.emit("fatal", self.name, self.generation, detail={"error": e.name})
            self.crash()

    def _on_sync(self, r: SyncGroupResponse) -> None:
        e = r.error
        if e is Errors.NONE:
            self._complete_join(r.assignment or [])
            return
        self.w.emit("sync_error", self.name, self.generation, detail={"error": e.name})
        if e in (Errors.COORDINATOR_NOT_AVAILABLE, Errors.NOT_COORDINATOR):
            self._retry_later("sync")
        elif e is Errors.REBALANCE_IN_PROGRESS:
            self._send_join()
        elif e is Errors.ILLEGAL_GENERATION:
            self._reset_and_rejoin(reset_member_id=False)
        elif e is Errors.UNKNOWN_MEMBER_ID:
            self._reset_and_rejoin(reset_member_id=True)
        else:
            self.w.emit("fatal", self.name, self.generation, detail={"error": e.name})
            self.crash()

    def _reset_and_rejoin(self, reset_member_id: bool) -> None:
        """AbstractCoordinator.resetStateAndRejoin: generation gone, so onJoinPrepare runs again and
        whatever the member still holds is lost (it may already belong to someone else)."""
        self.generation = -1
        if reset_member_id:
            self.member_id = ""
        self.state = MemberState.UNJOINED
        self.join_inflight = False
        self._prepare_join()

    def _complete_join(self, assignment: list[int]) -> None:
        w = self.w
        now = w.loop.now
        self.join_inflight = False
        self.state = MemberState.STABLE
        self.hb_first = now
        self.hb_base = now - self.hb_phase
        done = cc.on_join_complete(self.owned, assignment, self.protocol)
        if done.revoked:
            self._finish_batch(now)
            w.revoke(self, done.revoked, "cooperative")
            for p in done.revoked:
                self.positions.pop(p, None)
        self.owned = list(done.owned)
        committed = w.parts.committed
        positions, sent = self.positions, self.sent_offsets
        for p in done.added:
            positions[p] = sent[p] = committed[p]
        w.assigned(self, done.added, done.owned)
        if self.pause_start is not None:
            w.add_paused(self, now - self.pause_start)
            self.pause_start = None
        if now >= self.stall_until:
            w.set_available_many(self.owned, now, self.name)
        if done.rejoin:
            self.rejoin_needed = True
        if self.waiting:
            self.waiting = False
        self._poll_soon(max(now, self.busy_until))
        if w.group_needs_heartbeats():
            self.start_heartbeat_ticks()

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
