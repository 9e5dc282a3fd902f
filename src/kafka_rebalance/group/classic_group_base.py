"""A classic group's membership data and its bookkeeping (Kafka's ClassicGroup).

What the group holds (members, static ids, pending members, the selected
protocol, the generation) and the small operations every handler of
`classic_group` uses on it: add, remove, update a member, complete a parked
join/sync, state transitions. The request handlers live in `classic_group`.

Members are kept in insertion order; Kafka keeps them in a HashMap, so where
Kafka's choice depends on HashMap order of member ids (re-electing a leader,
the order the leader sees members) we use the join order instead. Ties in the
protocol vote depend on HashMap order of protocol *names*, which is emulated
exactly (`assign.javacompat`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..assign.javacompat import insertion_order
from .classic_member import (
    ClassicGroupConfig,
    ClassicGroupMember,
    ClassicGroupSnapshot,
    MemberSnapshot,
    selected_metadata,
)
from .classic_messages import (
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    ScheduleTimer,
    StateChanged,
    SyncGroupResponse,
    heartbeat_key,
)
from .classic_state import ClassicGroupState, check_transition
from .errors import Errors
from .subscribed_topics import CONSUMER_PROTOCOL_TYPE, topics_of_subscriptions

S = ClassicGroupState


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
        self.group_id = group_id
        self.config = config or ClassicGroupConfig()
        self.state = S.EMPTY
        self.previous_state: ClassicGroupState | None = None
        self.state_timestamp_ms = now_ms
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, ClassicGroupMember] = {}
        self.pending_members: dict[str, None] = {}  # KIP-394: ids handed out, not yet joined
        self.pending_sync: set[str] = set()
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        self.num_awaiting_join = 0
        self.new_member_added = False
        self._supported: dict[str, int] = {}
        self._salt = member_id_salt
        self._seq = 0
        self._initial_delay: tuple[int, int] = (0, 0)
        # ClassicGroup.subscribedTopics: set at each new generation and on load, kept otherwise (even
        # by Dead). The members' metadata is captured then and parsed on first read (the simulator
        # never reads it on its hot path; the captured values are immutable, so this is exact).
        self._subscribed: frozenset[str] | None = None
        self._subscribed_src: tuple[Any, ...] | None = None

    # ------------------------------------------------------------------ queries

    def is_in(self, *states: ClassicGroupState) -> bool:
        return self.state in states

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def rebalance_timeout_ms(self) -> int:
        """The join barrier waits for the slowest member's max.poll.interval.ms."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_members

    def can_rebalance(self) -> bool:
        return self.state in S.PREPARING_REBALANCE.valid_previous_states

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {p for p, c in self._supported.items() if c == n}

    def supports_protocols(self, protocol_type: str, protocols: Iterable[str]) -> bool:
        """ClassicGroup.supportsProtocols: keyed on the Empty *state*, not on having no members.

        A group in PreparingRebalance with no members (the last one left during the initial
        delay) keeps its protocol type, so a join of another type is inconsistent.
        """
        names = list(protocols)
        if self.state is S.EMPTY:
            return bool(protocol_type) and bool(names)
        return protocol_type == self.protocol_type and any(
            self._supported.get(p, 0) == len(self.members) for p in names
        )

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
        best = None
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
                return Errors.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return Errors.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return Errors.UNKNOWN_MEMBER_ID
        return Errors.NONE

    def validate_offset_commit(
        self, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> Errors:
        """The error an OffsetCommit gets in the current state (ClassicGroup.validateOffsetCommit)."""
        if self.state is S.DEAD:
            return Errors.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and self.state is S.EMPTY:
            return Errors.NONE
        if generation_id >= 0 or member_id or group_instance_id is not None:
            err = self.validate_member(member_id, group_instance_id)
            if err is not Errors.NONE:
                return err
            if generation_id != self.generation_id:
                return Errors.ILLEGAL_GENERATION
        elif self.state is not S.EMPTY:
            return Errors.UNKNOWN_MEMBER_ID
        if self.state is S.COMPLETING_REBALANCE:
            return Errors.REBALANCE_IN_PROGRESS
        return Errors.NONE

    def snapshot(self) -> ClassicGroupSnapshot:
        return ClassicGroupSnapshot(
            self.group_id,
            self.protocol_type,
            self.generation_id,
            self.protocol_name,
            self.leader_id,
            self.state_timestamp_ms,
            tuple(
                MemberSnapshot(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    m.protocols,
                    m.assignment,
                )
                for m in self.members.values()
            ),
        )

    # ----------------------------------------------------------- internals

    def _transition(
        self, target: ClassicGroupState, now_ms: int, fx: list, reason: str = ""
    ) -> None:
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
        for p in member.protocol_names():
            self._supported[p] = self._supported.get(p, 0) + 1
        if self.leader_id is None:
            self.leader_id = member.member_id
        member.awaiting_join = client
        self.num_awaiting_join += 1
        self.pending_members.pop(member.member_id, None)

    def _remove(self, member_id: str) -> None:
        m = self.members.pop(member_id, None)
        if m is not None:
            for p in m.protocol_names():
                self._supported[p] -= 1
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
        for p in m.protocol_names():
            self._supported[p] -= 1
        m.protocols = req.protocols
        for p in m.protocol_names():
            self._supported[p] = self._supported.get(p, 0) + 1
        m.rebalance_timeout_ms = req.rebalance_timeout_ms
        m.session_timeout_ms = req.session_timeout_ms
        if m.awaiting_join is None:
            self.num_awaiting_join += 1
        m.awaiting_join = req.client

    def _complete_join_future(
        self, m: ClassicGroupMember, resp: JoinGroupResponse, fx: list
    ) -> None:
        if m.awaiting_join is not None:
            fx.append(
                resp if resp.client == m.awaiting_join else _with_client(resp, m.awaiting_join)
            )
            m.awaiting_join = None
            self.num_awaiting_join -= 1

    def _complete_sync_future(
        self, m: ClassicGroupMember, resp: SyncGroupResponse, fx: list
    ) -> bool:
        if m.awaiting_sync is not None:
            fx.append(
                SyncGroupResponse(m.awaiting_sync, resp.error, resp.assignment, resp.protocol_name)
            )
            m.awaiting_sync = None
            return True
        return False

    def _reschedule_heartbeat(
        self, m: ClassicGroupMember, now_ms: int, fx: list, timeout_ms: int | None = None
    ) -> None:
        fx.append(
            ScheduleTimer(
                heartbeat_key(m.member_id),
                now_ms + (m.session_timeout_ms if timeout_ms is None else timeout_ms),
            )
        )

    def _join_response(
        self, m: ClassicGroupMember, client: str, *, with_members: bool
    ) -> JoinGroupResponse:
        members: tuple[JoinGroupMember, ...] = ()
        if with_members and self.protocol_name is not None:
            members = tuple(
                JoinGroupMember(x.member_id, x.group_instance_id, x.metadata(self.protocol_name))
                for x in self.members.values()
            )
        return JoinGroupResponse(
            client,
            Errors.NONE,
            m.member_id,
            self.generation_id,
            self.protocol_name,
            self.leader_id or "",
            members,
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
        fx: list = []
        self._transition(S.DEAD, now_ms, fx, "unloaded")
        return fx


def _with_client(resp: JoinGroupResponse, client: str) -> JoinGroupResponse:
    return JoinGroupResponse(
        client,
        resp.error,
        resp.member_id,
        resp.generation_id,
        resp.protocol_name,
        resp.leader,
        resp.members,
        resp.skip_assignment,
    )
