"""A classic group's membership data and its bookkeeping (Kafka's ClassicGroup).

What the group holds (members, static ids, pending members, the selected
protocol, the generation) and the small operations every handler of
`classic_group` uses on it: add, remove, update a member, complete a parked
join/sync, state transitions. The request handlers live in `classic_group_join` (JoinGroup) and
`classic_group` (the others).

Members are kept in insertion order; Kafka keeps them in a HashMap, so where
Kafka's choice depends on HashMap order of member ids (re-electing a leader,
the order the leader sees members) we use the join order instead. Ties in the
protocol vote depend on HashMap order of protocol *names*, which is emulated
exactly (`assign.javacompat`).

Compiled with mypyc (setup.py) with `classic_member`, `classic_group_join` and `classic_group`:
native classes with typed attributes; states and errors are read through module constants
(`Final`), which the compiled code keeps in C statics instead of looking them up on the enum class
each time. The source is the reference path, and runs whenever one build of the set is stale
(`group/__init__.py`, `kafka_rebalance.native`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from ..assign.javacompat import insertion_order
from . import classic_messages as messages
from .classic_member import (
    PURE,
    ClassicGroupConfig,
    ClassicGroupMember,
    ClassicGroupSnapshot,
    MemberSnapshot,
    ints,
    selected_metadata,
)
from .classic_messages import (
    JOIN_KEY,
    SYNC_KEY,
    CancelTimer,
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    ScheduleTimer,
    StateChanged,
    SyncGroupResponse,
)
from .classic_state import ClassicGroupState, check_transition
from .errors import Errors
from .subscribed_topics import CONSUMER_PROTOCOL_TYPE, topics_of_subscriptions

S = ClassicGroupState
EMPTY: Final = ClassicGroupState.EMPTY
PREPARING_REBALANCE: Final = ClassicGroupState.PREPARING_REBALANCE
COMPLETING_REBALANCE: Final = ClassicGroupState.COMPLETING_REBALANCE
STABLE: Final = ClassicGroupState.STABLE
DEAD: Final = ClassicGroupState.DEAD
# PreparingRebalance's valid previous states (can_rebalance)
_CAN_REBALANCE_FROM: Final[frozenset] = PREPARING_REBALANCE.valid_previous_states

E_NONE: Final = Errors.NONE
E_UNKNOWN_MEMBER_ID: Final = Errors.UNKNOWN_MEMBER_ID
E_FENCED_INSTANCE_ID: Final = Errors.FENCED_INSTANCE_ID
E_ILLEGAL_GENERATION: Final = Errors.ILLEGAL_GENERATION
E_COORDINATOR_NOT_AVAILABLE: Final = Errors.COORDINATOR_NOT_AVAILABLE
E_REBALANCE_IN_PROGRESS: Final = Errors.REBALANCE_IN_PROGRESS
E_INVALID_SESSION_TIMEOUT: Final = Errors.INVALID_SESSION_TIMEOUT
E_GROUP_MAX_SIZE_REACHED: Final = Errors.GROUP_MAX_SIZE_REACHED
E_INCONSISTENT_GROUP_PROTOCOL: Final = Errors.INCONSISTENT_GROUP_PROTOCOL
E_MEMBER_ID_REQUIRED: Final = Errors.MEMBER_ID_REQUIRED
HEARTBEAT: Final[str] = messages.HEARTBEAT  # a C static on the build

# Calling a NamedTuple class runs its Python-level __new__; tuple.__new__ with every field given
# builds the same value in C. Used for the effects made for every member in every rebalance.
new_tuple: Final = tuple.__new__
CANCEL_SYNC: Final = CancelTimer(SYNC_KEY)  # effects are immutable values: one of each suffices
CANCEL_JOIN: Final = CancelTimer(JOIN_KEY)
# A frozen slots dataclass's generated __init__ runs as Python (object.__setattr__ per field: some
# 10 k instructions a MemberSnapshot, one per member in every rebalance's snapshot). The same value
# is built by filling its slots through their descriptors, as that __init__ does in the end
# (tests/test_classic_group_legs.py checks it against the constructor field by field).
_new_object: Final = object.__new__
_ms_slots: Final = vars(MemberSnapshot)
_MS_MEMBER_ID: Final = _ms_slots["member_id"].__set__
_MS_INSTANCE_ID: Final = _ms_slots["group_instance_id"].__set__
_MS_CLIENT_ID: Final = _ms_slots["client_id"].__set__
_MS_REBALANCE_TIMEOUT: Final = _ms_slots["rebalance_timeout_ms"].__set__
_MS_SESSION_TIMEOUT: Final = _ms_slots["session_timeout_ms"].__set__
_MS_PROTOCOLS: Final = _ms_slots["protocols"].__set__
_MS_ASSIGNMENT: Final = _ms_slots["assignment"].__set__


def member_snapshot(m: ClassicGroupMember) -> MemberSnapshot:
    """MemberSnapshot(m.member_id, ..., m.assignment), without the interpreted __init__."""
    s: Any = _new_object(MemberSnapshot)
    _MS_MEMBER_ID(s, m.member_id)
    _MS_INSTANCE_ID(s, m.group_instance_id)
    _MS_CLIENT_ID(s, m.client_id)
    _MS_REBALANCE_TIMEOUT(s, m.rebalance_timeout_ms)
    _MS_SESSION_TIMEOUT(s, m.session_timeout_ms)
    _MS_PROTOCOLS(s, m.protocols)
    _MS_ASSIGNMENT(s, m.assignment)
    snap: MemberSnapshot = s
    return snap


class ClassicGroupBase:
    """A classic consumer group's state on its coordinator; `ClassicGroup` adds the protocol handlers."""

    def __init__(
        self,
        group_id: str,
        config: ClassicGroupConfig | None = None,
        *,
        member_id_salt: str = "",
        now_ms: int = 0,
    ) -> None:
        if PURE:
            ints(now_ms)
        self.group_id: str = group_id
        self._config: ClassicGroupConfig = config or ClassicGroupConfig()
        self.state: Any = EMPTY  # a ClassicGroupState
        self.previous_state: Any = None  # a ClassicGroupState or None
        self.state_timestamp_ms: int = now_ms
        self.generation_id: int = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, ClassicGroupMember] = {}
        self.pending_members: dict[str, None] = {}  # KIP-394: ids handed out, not yet joined
        self.pending_sync: set[str] = set()
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        self.num_awaiting_join: int = 0
        self.new_member_added: bool = False
        self._supported: dict[str, int] = {}
        self._salt: str = member_id_salt
        self._seq: int = 0
        self._initial_delay: tuple[int, int] = (0, 0)
        # the session timeouts the broker accepts (read on every JoinGroup; `config` renews them)
        self._min_session_ms: int = self._config.min_session_timeout_ms
        self._max_session_ms: int = self._config.max_session_timeout_ms
        # ClassicGroup.subscribedTopics: set at each new generation and on load, kept otherwise (even
        # by Dead). The members' metadata is captured then and parsed on first read (the simulator
        # never reads it on its hot path; the captured values are immutable, so this is exact).
        self._subscribed: frozenset[str] | None = None
        self._subscribed_src: tuple[Any, ...] | None = None

    @property
    def config(self) -> ClassicGroupConfig:
        """The broker settings (group.* configs)."""
        return self._config

    @config.setter
    def config(self, config: ClassicGroupConfig) -> None:
        self._config = config
        self._min_session_ms = config.min_session_timeout_ms
        self._max_session_ms = config.max_session_timeout_ms

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle and copy through the constructor: the mypyc build's native class has no instance
        dict for the default protocol to fill."""
        return (_group_from_state, (type(self), [getattr(self, f) for f in _FIELDS]))

    # ------------------------------------------------------------------ queries

    def is_in(self, *states: ClassicGroupState) -> bool:
        return self.state in states

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def rebalance_timeout_ms(self) -> int:
        """The join barrier waits for the slowest member's max.poll.interval.ms."""
        best = 0
        for m in self.members.values():
            if m.rebalance_timeout_ms > best:
                best = m.rebalance_timeout_ms
        return best

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_members

    def can_rebalance(self) -> bool:
        return self.state in _CAN_REBALANCE_FROM

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {p for p, c in self._supported.items() if c == n}

    def supports_protocols(self, protocol_type: str, protocols: Iterable[str]) -> bool:
        """ClassicGroup.supportsProtocols: keyed on the Empty *state*, not on having no members.

        A group in PreparingRebalance with no members (the last one left during the initial
        delay) keeps its protocol type, so a join of another type is inconsistent.
        """
        names = list(protocols)
        if self.state is EMPTY:
            return bool(protocol_type) and bool(names)
        if protocol_type != self.protocol_type:
            return False
        n = len(self.members)
        supported = self._supported
        for p in names:
            if supported.get(p, 0) == n:
                return True
        return False

    def select_protocol(self) -> str:
        """ClassicGroup.selectProtocol: every member votes; the most votes wins.

        Kafka counts the votes in a HashMap and takes `entrySet().stream().max(...)`, which keeps
        the first of equal maxima in the map's iteration order (BinaryOperator.maxBy), so a tie
        goes to the protocol name that comes first in Java HashMap order, not to the first voter.
        """
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.members.values():
            p = m.vote(candidates)
            votes[p] = votes.get(p, 0) + 1
        if len(votes) == 1:
            return next(iter(votes))
        best: str | None = None
        for p in insertion_order(list(votes)):
            if best is None or votes[p] > votes[best]:
                best = p
        if best is None:
            raise ValueError("cannot select a protocol for an empty group")
        return best

    @property
    def subscribed_topics(self) -> frozenset[str] | None:
        """Topics the members subscribed to as of the current generation; None when unknown
        (protocol type not "consumer", no protocol selected, metadata not a valid subscription)."""
        if self._subscribed_src is not None:
            self._subscribed = topics_of_subscriptions(self._subscribed_src)
            self._subscribed_src = None
        return self._subscribed

    def _compute_subscribed_topics(self) -> None:
        """ClassicGroup.computeSubscribedTopics (parsing deferred to `subscribed_topics`)."""
        self._subscribed_src = None
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            self._subscribed = None
        elif not self.members:
            self._subscribed = frozenset()
        elif self.protocol_name is None:
            self._subscribed = None
        else:
            self._subscribed = None
            self._subscribed_src = selected_metadata(self.members.values(), self.protocol_name)

    def validate_member(self, member_id: str, group_instance_id: str | None) -> Errors:
        if group_instance_id is not None:
            existing = self.static_members.get(group_instance_id)
            if existing is None:
                return E_UNKNOWN_MEMBER_ID
            if existing != member_id:
                return E_FENCED_INSTANCE_ID
        if member_id not in self.members:
            return E_UNKNOWN_MEMBER_ID
        return E_NONE

    def validate_offset_commit(
        self, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> Errors:
        """The error an OffsetCommit gets in the current state (ClassicGroup.validateOffsetCommit)."""
        state = self.state
        if state is DEAD:
            return E_COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and state is EMPTY:
            return E_NONE
        if generation_id >= 0 or member_id or group_instance_id is not None:
            err = self.validate_member(member_id, group_instance_id)
            if err is not E_NONE:
                return err
            if generation_id != self.generation_id:
                return E_ILLEGAL_GENERATION
        elif state is not EMPTY:
            return E_UNKNOWN_MEMBER_ID
        if state is COMPLETING_REBALANCE:
            return E_REBALANCE_IN_PROGRESS
        return E_NONE

    def snapshot(self) -> ClassicGroupSnapshot:
        return ClassicGroupSnapshot(
            self.group_id,
            self.protocol_type,
            self.generation_id,
            self.protocol_name,
            self.leader_id,
            self.state_timestamp_ms,
            tuple([member_snapshot(m) for m in self.members.values()]),
        )

    # ----------------------------------------------------------- internals

    def _transition(self, target: Any, now_ms: int, fx: list, reason: str = "") -> None:
        check_transition(self.state, target)
        old = self.state
        self.previous_state, self.state = old, target
        self.state_timestamp_ms = now_ms
        fx.append(StateChanged(old, target, self.generation_id, reason))

    def _new_member_id(self, prefix: str) -> str:
        self._seq += 1
        return f"{prefix}-{self._salt}{self._seq:08x}"

    def _add(self, member: ClassicGroupMember, client: str) -> None:
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        supported = self._supported
        for proto in member.protocols:
            p: str = proto[0]
            supported[p] = supported.get(p, 0) + 1
        if self.leader_id is None:
            self.leader_id = member.member_id
        member.awaiting_join = client
        self.num_awaiting_join += 1
        self.pending_members.pop(member.member_id, None)

    def _remove(self, member_id: str) -> None:
        m = self.members.pop(member_id, None)
        if m is not None:
            supported = self._supported
            for proto in m.protocols:
                p: str = proto[0]
                supported[p] -= 1
            if m.awaiting_join is not None:
                self.num_awaiting_join -= 1
            if (
                m.group_instance_id is not None
                and self.static_members.get(m.group_instance_id) == member_id
            ):
                del self.static_members[m.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.pop(member_id, None)
        self.pending_sync.discard(member_id)

    def _update_member(self, m: ClassicGroupMember, req: JoinGroupRequest) -> None:
        supported = self._supported
        for proto in m.protocols:
            p: str = proto[0]
            supported[p] -= 1
        m.protocols = req.protocols
        for proto in m.protocols:
            p = proto[0]
            supported[p] = supported.get(p, 0) + 1
        m.rebalance_timeout_ms = req.rebalance_timeout_ms
        m.session_timeout_ms = req.session_timeout_ms
        if m.awaiting_join is None:
            self.num_awaiting_join += 1
        m.awaiting_join = req.client

    def _complete_join_future(
        self, m: ClassicGroupMember, resp: JoinGroupResponse, fx: list
    ) -> None:
        client = m.awaiting_join
        if client is not None:
            fx.append(resp if resp.client == client else _with_client(resp, client))
            m.awaiting_join = None
            self.num_awaiting_join -= 1

    def _complete_sync_future(
        self,
        m: ClassicGroupMember,
        error: Any,
        assignment: Any,
        protocol_name: str | None,
        fx: list,
    ) -> bool:
        client = m.awaiting_sync
        if client is not None:
            fx.append(new_tuple(SyncGroupResponse, (client, error, assignment, protocol_name)))
            m.awaiting_sync = None
            return True
        return False

    def _reschedule_heartbeat(self, m: ClassicGroupMember, now_ms: int, fx: list) -> None:
        deadline = now_ms + m.session_timeout_ms
        fx.append(new_tuple(ScheduleTimer, ((HEARTBEAT, m.member_id), deadline, None)))

    def _schedule_heartbeat_in(
        self, m: ClassicGroupMember, now_ms: int, fx: list, timeout_ms: int
    ) -> None:
        fx.append(ScheduleTimer((HEARTBEAT, m.member_id), now_ms + timeout_ms))

    def _join_response(
        self, m: ClassicGroupMember, client: str, with_members: bool
    ) -> JoinGroupResponse:
        """The answer to a completed join; the leader's (`with_members`) lists the members."""
        members: tuple[JoinGroupMember, ...] = ()
        protocol = self.protocol_name
        if with_members and protocol is not None:
            members = tuple(
                [
                    new_tuple(
                        JoinGroupMember, (x.member_id, x.group_instance_id, x.metadata(protocol))
                    )
                    for x in self.members.values()
                ]
            )
        return new_tuple(
            JoinGroupResponse,
            (
                client,
                E_NONE,
                m.member_id,
                self.generation_id,
                protocol,
                self.leader_id or "",
                members,
                False,
            ),
        )

    def _maybe_elect_new_joined_leader(self) -> bool:
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join is not None:
            return True
        for m in self.members.values():
            if m.awaiting_join is not None:
                self.leader_id = m.member_id
                return True
        return False

    def mark_dead(self, now_ms: int) -> list:
        """The coordinator unloads the group (partition emigration / failover)."""
        fx: list = ints(now_ms) if PURE else []
        self._transition(DEAD, now_ms, fx, "unloaded")
        return fx


def _with_client(resp: JoinGroupResponse, client: str) -> JoinGroupResponse:
    return new_tuple(
        JoinGroupResponse,
        (
            client,
            resp.error,
            resp.member_id,
            resp.generation_id,
            resp.protocol_name,
            resp.leader,
            resp.members,
            resp.skip_assignment,
        ),
    )


# every attribute ClassicGroupBase.__init__ sets, in its order (__reduce__)
_FIELDS: Final = (
    "group_id",
    "_config",
    "state",
    "previous_state",
    "state_timestamp_ms",
    "generation_id",
    "protocol_type",
    "protocol_name",
    "leader_id",
    "members",
    "pending_members",
    "pending_sync",
    "static_members",
    "num_awaiting_join",
    "new_member_added",
    "_supported",
    "_salt",
    "_seq",
    "_initial_delay",
    "_min_session_ms",
    "_max_session_ms",
    "_subscribed",
    "_subscribed_src",
)


def _group_from_state(cls: Any, values: list[Any]) -> Any:
    g = cls(values[0], values[1])
    for name, value in zip(_FIELDS, values):
        setattr(g, name, value)
    return g
