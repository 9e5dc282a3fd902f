"""The classic rebalance client of a simulated consumer: heartbeats, JoinGroup and SyncGroup.

Kafka's AbstractCoordinator/ConsumerCoordinator as carried out in virtual
time: the heartbeat thread, onJoinPrepare, the JoinGroup/SyncGroup exchange
and onJoinComplete. Decisions come from `group.consumer_client`; `member.SimMember`
adds the poll loop, processing and commits this class calls back into.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any, Final

from ..assign.userdata import encode_cooperative_user_data, encode_sticky_user_data
from ..group import consumer_client as cc
from ..group.classic_messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from ..group.consumer_client import MemberState, RebalanceProtocol
from ..group.errors import Errors
from .subscription import Subscription

if TYPE_CHECKING:
    from .world_core import WorldCore

try:
    from mypy_extensions import mypyc_attr
except ImportError:  # a pure install: the decorator only instructs mypyc

    def mypyc_attr(*_attrs: str, **_flags: object):  # type: ignore[misc]
        return lambda cls: cls


class PrepareCommit(Enum):
    """The auto-commit onJoinPrepare sends before JoinGroup, and where it is."""

    NONE = "none"
    IN_FLIGHT = "in-flight"  # sent; JoinGroup waits for its response
    DONE = "done"  # answered: the next poll() sends JoinGroup


# read as C statics in the build (enum members and the pure core's decisions, looked up once)
_UNJOINED: Final = MemberState.UNJOINED
_STABLE: Final = MemberState.STABLE
_COMPLETING_REBALANCE: Final = MemberState.COMPLETING_REBALANCE
_PREPARING_REBALANCE: Final = MemberState.PREPARING_REBALANCE
_COMMIT_NONE: Final = PrepareCommit.NONE
_COMMIT_IN_FLIGHT: Final = PrepareCommit.IN_FLIGHT
_COMMIT_DONE: Final = PrepareCommit.DONE
_NONE: Final = Errors.NONE
_HB_CONTINUE: Final = cc.HeartbeatAction.CONTINUE
_HB_IGNORE: Final = cc.HeartbeatAction.IGNORE
_HB_REJOIN: Final = cc.HeartbeatAction.REJOIN
_HB_FIND_COORDINATOR: Final = cc.HeartbeatAction.FIND_COORDINATOR
_HB_RETRY: Final = cc.HeartbeatAction.RETRY
_HB_FATAL: Final = cc.HeartbeatAction.FATAL
_HB_RESET_GENERATION: Final = cc.HeartbeatAction.RESET_GENERATION_AND_REJOIN
_HB_RESET_MEMBER: Final = cc.HeartbeatAction.RESET_MEMBER_AND_REJOIN
_EAGER: Final = RebalanceProtocol.EAGER
_REBALANCE_IN_PROGRESS: Final = Errors.REBALANCE_IN_PROGRESS
_ILLEGAL_GENERATION: Final = Errors.ILLEGAL_GENERATION
_UNKNOWN_MEMBER_ID: Final = Errors.UNKNOWN_MEMBER_ID
_FENCED_INSTANCE_ID: Final = Errors.FENCED_INSTANCE_ID
_COORDINATOR_NOT_AVAILABLE: Final = Errors.COORDINATOR_NOT_AVAILABLE
_NOT_COORDINATOR: Final = Errors.NOT_COORDINATOR

# The requests and the JoinGroup metadata the member sends, built as their own constructors build
# them but without an interpreted frame: a NamedTuple's generated __new__ is
# `tuple.__new__(cls, (fields...))`, and a frozen slots dataclass's __init__ sets each field's slot
# in order. tests/test_sim_join_twins.py checks each builder against the class itself. Values only
# passed on are typed `Any`: the build hands the same objects on (an `int` would be boxed again).
_tuple_new: Final = tuple.__new__
_object_new: Final = object.__new__
_JOIN_DEFAULTS: Final = (
    JoinGroupRequest._field_defaults["protocol_type"],
    JoinGroupRequest._field_defaults["reason"],
)
_set_topics: Final = Subscription.__dict__["topics"].__set__
_set_owned: Final = Subscription.__dict__["owned"].__set__
_set_generation: Final = Subscription.__dict__["generation"].__set__
_set_rack: Final = Subscription.__dict__["rack"].__set__
_set_user_data: Final = Subscription.__dict__["user_data"].__set__
_set_owned_idx: Final = Subscription.__dict__["owned_idx"].__set__


def heartbeat_request(
    client: str, member_id: str, generation: Any, instance_id: str | None
) -> HeartbeatRequest:
    """`HeartbeatRequest(client, member_id, generation, instance_id)`."""
    return _tuple_new(HeartbeatRequest, (client, member_id, generation, instance_id))


def join_request(
    client: str,
    member_id: str,
    protocols: tuple[tuple[str, Any], ...],
    session_timeout_ms: Any,
    rebalance_timeout_ms: Any,
    instance_id: str | None,
) -> JoinGroupRequest:
    """`JoinGroupRequest(client, member_id, protocols, session, rebalance, instance_id)`."""
    return _tuple_new(
        JoinGroupRequest,
        (
            client,
            member_id,
            protocols,
            session_timeout_ms,
            rebalance_timeout_ms,
            instance_id,
            _JOIN_DEFAULTS[0],
            _JOIN_DEFAULTS[1],
        ),
    )


def sync_request(
    client: str,
    member_id: str,
    generation: Any,
    instance_id: str | None,
    protocol_type: str | None,
    protocol_name: str | None,
    assignments: Any,
) -> SyncGroupRequest:
    """`SyncGroupRequest(...)` with every field given."""
    return _tuple_new(
        SyncGroupRequest,
        (client, member_id, generation, instance_id, protocol_type, protocol_name, assignments),
    )


def subscription(
    topics: tuple[str, ...],
    owned: tuple[Any, ...],
    generation: Any,
    rack: str | None,
    user_data: bytes | None,
    owned_idx: tuple[int, ...] | None,
) -> Subscription:
    """`Subscription(topics, owned, generation, rack, user_data, owned_idx=owned_idx)`."""
    s: Any = _object_new(Subscription)
    _set_topics(s, topics)
    _set_owned(s, owned)
    _set_generation(s, generation)
    _set_rack(s, rack)
    _set_user_data(s, user_data)
    _set_owned_idx(s, owned_idx)
    return s


def heartbeat_action(
    error: Errors, state: MemberState, generation_unchanged: bool
) -> cc.HeartbeatAction:
    """`consumer_client.on_heartbeat_error(error, state=..., generation_unchanged=...)`, its typed
    twin (see `join_prepare`): no interpreted call with keywords per heartbeat error."""
    if error is _NONE:
        return _HB_CONTINUE
    if error is _REBALANCE_IN_PROGRESS:
        return _HB_REJOIN if state is _STABLE else _HB_IGNORE
    if error is _ILLEGAL_GENERATION or error is _UNKNOWN_MEMBER_ID or error is _FENCED_INSTANCE_ID:
        if not generation_unchanged:
            return _HB_IGNORE
        if error is _ILLEGAL_GENERATION:
            return _HB_RESET_GENERATION
        if error is _UNKNOWN_MEMBER_ID:
            return _HB_RESET_MEMBER
        return _HB_FATAL
    if error is _COORDINATOR_NOT_AVAILABLE or error is _NOT_COORDINATOR:
        return _HB_FIND_COORDINATOR
    return _HB_RETRY


def join_prepare(
    owned: list[Any], eager: bool, generation_valid: bool, auto_commit: bool
) -> tuple[bool, tuple[Any, ...], tuple[Any, ...]]:
    """`consumer_client.on_join_prepare` for the simulator's member (its subscription never changes:
    `subscribed_topics=None`), as (commit_first, revoked, lost): a typed twin the build runs without
    an interpreted call or a dataclass per join. consumer_client stays the reference
    (tests/test_sim_join_twins.py compares the two)."""
    if not generation_valid:
        return False, (), tuple(owned)
    if eager:
        return auto_commit, tuple(owned), ()
    return auto_commit, (), ()


def join_complete(
    owned: list[Any], assigned: list[Any], eager: bool
) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...], bool]:
    """`consumer_client.on_join_complete` as (revoked, added, owned, rejoin): its typed twin (see
    `join_prepare`)."""
    if eager:
        got = tuple(assigned)
        return (), got, got, False
    if assigned == owned:  # most members of a cooperative rebalance: nothing revoked or added
        return (), (), tuple(assigned), False
    assigned_set = set(assigned)
    owned_set = set(owned)
    revoked = tuple([p for p in owned if p not in assigned_set])
    added = tuple([p for p in assigned if p not in owned_set])
    return revoked, added, tuple(assigned), bool(revoked)


def _drop_keys(d: dict[int, int], keys: tuple[Any, ...]) -> None:
    """`d.pop(k, None)` for each key, as direct dict operations (the build's `pop` is a method call)."""
    for k in keys:
        if k in d:
            del d[k]


@mypyc_attr(allow_interpreted_subclasses=True)  # SimMember's KIP-848 subclass
class RebalanceClient:
    """The rebalance half of a simulated member (the state lives on `SimMember`, declared here)."""

    w: WorldCore
    name: str
    rack: str | None
    instance_id: str | None
    protocol: RebalanceProtocol
    alive: bool
    incarnation: int
    client: str
    state: MemberState
    member_id: str
    generation: int
    is_leader: bool
    owned: list[int]
    positions: dict[int, int]
    sent_offsets: dict[int, int]
    rejoin_needed: bool
    join_inflight: bool
    waiting: bool
    deferred: list
    busy_until: int
    stall_until: int
    hb_base: int
    hb_first: int
    hb_ticking: bool
    pause_start: int | None
    known_partitions: dict[str, int]
    assigned_view: dict[str, int]
    poll_timed_out: bool
    prepare_commit: PrepareCommit
    fetch_paused: bool
    caught_up_from: int
    next_autocommit: int
    joined_protocol: str | None
    # StickyAssignor's own state in this consumer instance (memberAssignment and generation, from
    # onAssignment), as the user data subscriptionUserData() serializes; None until it is first assigned
    sticky_memory: bytes | None
    # CooperativeStickyAssignor's own state (its `generation` field): the generation of the last
    # onAssignment it was given, DEFAULT_GENERATION (-1) for a new consumer instance; not reset when the
    # member's generation is (resetStateAndRejoin does not touch the assignor)
    coop_generation: int
    # configuration, resolved once (SimMember.__init__): `int` where scenario.py validates an int
    _aci: int  # auto.commit.interval.ms
    _hb_interval: int  # heartbeat.interval.ms
    _hb_latency: Any  # network_latency_ms: a heartbeat's send + arrival, one event
    _join_auto_commit: Any  # what onJoinPrepare is told about auto-commit
    _session_timeout: Any
    _rebalance_timeout: Any  # max.poll.interval.ms
    _assignors: tuple[str, ...]  # partition.assignment.strategy, in preference order

    def _generation_unchanged(self, sent: tuple[int, str] | None) -> bool:
        """CoordinatorResponseHandler.generationUnchanged(): is the member still in the (generation, member id)
        the request went out with? (None: not known, taken as unchanged)"""
        return sent is None or (sent[0] == self.generation and sent[1] == self.member_id)

    # hooks SimMember provides
    def wake(self) -> None:
        raise NotImplementedError

    def crash(self, killed: bool = False) -> None:
        raise NotImplementedError

    def _stop_heartbeats(self) -> None:
        raise NotImplementedError

    def _commit_positions(self, why: str, answer: bool = False) -> None:
        raise NotImplementedError

    def _finish_batch(self, now: int, partial: bool = False) -> None:
        raise NotImplementedError

    def _catch_up_before_commit(self, now: int) -> None:
        raise NotImplementedError

    def _poll_soon(self, t: int) -> None:
        raise NotImplementedError

    # ---------------------------------------------------------- heartbeats

    def heartbeating(self) -> bool:
        """Is the heartbeat thread sending heartbeats for the current member id?"""
        return (
            self.generation >= 0
            and self.alive
            and self.member_id != ""
            and not self.poll_timed_out
            and (self.state is _STABLE or self.state is _COMPLETING_REBALANCE)
        )

    def last_heartbeat_at(self, t: int) -> int:
        hb = self._hb_interval
        if t < self.hb_base:
            return self.hb_base
        return self.hb_base + ((t - self.hb_base) // hb) * hb

    def next_heartbeat_at(self, t: int) -> int:
        hb = self._hb_interval
        if t <= self.hb_base:
            return self.hb_base + hb
        return self.hb_base + ((t - self.hb_base) // hb + 1) * hb

    def start_heartbeat_ticks(self) -> None:
        if self.hb_ticking or not self.heartbeating():
            return
        self.hb_ticking = True
        lat = self._hb_latency
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
            heartbeat_request(self.client, self.member_id, self.generation, self.instance_id),
            self.name,
        )

    def on_heartbeat_response(self, error: Errors, sent: tuple[int, str] | None = None) -> None:
        """`sent` is the (generation, member id) the heartbeat went out with (generationUnchanged())."""
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
            self.w.emit("heartbeat_error", self.name, self.generation, detail={"error": error.name})
        if action is _HB_FIND_COORDINATOR or action is _HB_RETRY:
            return  # the heartbeat thread carries on (after finding the coordinator / the backoff)
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

    def _subscription(self, user_data: bytes | None = None) -> Subscription:
        tps = self.w.p_tps
        owned_idx = tuple(self.owned)
        return subscription(
            self.w.topic_names,
            tuple([tps[p] for p in owned_idx]),
            self.generation,
            self.rack,
            user_data,
            owned_idx,
        )

    def _protocols(self) -> tuple[tuple[str, Subscription], ...]:
        """ConsumerCoordinator.metadata(): one subscription per assignor, each with that assignor's
        subscriptionUserData(): StickyAssignor's last assignment and generation (an eager member has
        revoked everything before it joins, so its user data is how it stays sticky), and
        CooperativeStickyAssignor's generation as of its last onAssignment (4 bytes, always sent)."""
        return tuple([(a, self._subscription(self._user_data(a))) for a in self._assignors])

    def _user_data(self, assignor: str) -> bytes | None:
        """That assignor's subscriptionUserData() in this consumer instance."""
        if assignor == "cooperative-sticky":
            return encode_cooperative_user_data(self.coop_generation)
        if assignor == "sticky":
            return self.sticky_memory
        return None

    def _prepare_join(self) -> None:
        w = self.w
        now: int = w.loop.now
        commit_first, revoked, lost = join_prepare(
            self.owned, self.protocol is _EAGER, self.generation >= 0, self._join_auto_commit
        )
        if commit_first and self.owned and self.prepare_commit is not _COMMIT_DONE:
            # ConsumerCoordinator.onJoinPrepare: the auto-commit goes out asynchronously and JoinGroup
            # waits for its response (joinGroupIfNeeded returns false until then); an eager member's
            # partitions are pending revocation meanwhile (nothing is fetched from them)
            self.prepare_commit = _COMMIT_IN_FLIGHT
            self._catch_up_before_commit(now)
            if self.protocol is _EAGER:
                self.fetch_paused = True
                w.set_unavailable_many(self.owned, now)
            self._commit_positions("before-rejoin", answer=True)
            return
        self.prepare_commit = _COMMIT_NONE
        self.fetch_paused = False
        if revoked:
            w.revoke(self, revoked, "join prepare")
            owned = self.owned
            if len(revoked) == len(owned):  # join_prepare revokes all of them (eager) or none
                self.owned = []
            else:
                keep = set(revoked)
                self.owned = [p for p in owned if p not in keep]
            _drop_keys(self.positions, revoked)
        if lost:
            w.lose(self, list(lost), "membership lost")
            self.owned, self.positions = [], {}
        if not self.owned:
            self.waiting = True
            if self.pause_start is None:
                self.pause_start = now
        self._send_join()

    def _send_join(self) -> None:
        self._stop_heartbeats()
        self.join_inflight = True
        self.rejoin_needed = False
        self.state = _PREPARING_REBALANCE
        protocols = self._protocols()
        req = join_request(
            self.client,
            self.member_id,
            protocols,
            self._session_timeout,
            self._rebalance_timeout,
            self.instance_id,
        )
        if self.w.wants_events:
            self.w.emit("join", self.name, self.generation, list(self.owned))
        self.w.send(self, "join", req)

    def on_response(self, resp) -> None:
        """A JoinGroup/SyncGroup response arrives; a busy member handles it at its next poll()."""
        if not self.alive:
            return
        now: int = self.w.loop.now
        if not self.waiting and now < max(self.busy_until, self.stall_until):
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
        if e is _NONE:
            self.member_id = r.member_id
            self.generation = r.generation_id
            self.state = _COMPLETING_REBALANCE
            # HeartbeatThread.enable() resets the heartbeat timer when the JoinGroup answer is read: every
            # member reading it at once beats in phase, heartbeat.interval.ms apart from then on
            self.hb_first = self.hb_base = self.w.loop.now
            self.is_leader = r.leader == self.member_id
            self.joined_protocol = r.protocol_name
            assignments = None
            if self.is_leader and not r.skip_assignment:
                assignments = self.w.leader_assign(self, r)
            self.w.send(
                self,
                "sync",
                sync_request(
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
        if e is _NONE:
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
        self.state = _UNJOINED
        self.join_inflight = False
        self._prepare_join()

    def _complete_join(self, assignment: list[int]) -> None:
        w = self.w
        now: int = w.loop.now
        self.join_inflight = False
        self.state = _STABLE
        revoked, added, owned, rejoin = join_complete(
            self.owned, assignment, self.protocol is _EAGER
        )
        if revoked:
            self._finish_batch(now)
            w.revoke(self, revoked, "cooperative")
            _drop_keys(self.positions, revoked)
        self.owned = list(owned)
        if self.joined_protocol == "sticky":
            # invokeOnAssignment -> StickyAssignor.onAssignment: the assignment as received, and the generation
            tps = w.parts.tps
            self.sticky_memory = encode_sticky_user_data(
                [(tps[p].topic, tps[p].partition) for p in assignment], self.generation
            )
        elif self.joined_protocol == "cooperative-sticky":
            # CooperativeStickyAssignor.onAssignment: the generation of the group metadata onJoinComplete built
            self.coop_generation = self.generation
        # ConsumerCoordinator.onJoinComplete: "Reschedule the auto commit starting from now"
        self.next_autocommit = now + self._aci
        committed = w.p_committed
        positions, sent = self.positions, self.sent_offsets
        for p in added:
            positions[p] = sent[p] = committed[p]
        if added:
            self.caught_up_from = now  # their records can be fetched from now on only
        w.assigned(self, added, owned)
        if self.pause_start is not None:
            w.add_paused(self, now - self.pause_start)
            self.pause_start = None
        if now >= self.stall_until:
            w.set_available_many(self.owned, now, self.name)
        if rejoin:
            self.rejoin_needed = True
        if self.waiting:
            self.waiting = False
        self._poll_soon(max(now, self.busy_until))
        if w.group_needs_heartbeats():
            self.start_heartbeat_ticks()
