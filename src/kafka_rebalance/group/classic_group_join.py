"""The join phase of a classic group's rebalance: JoinGroup and the barrier it fills.

Follows Kafka's GroupMetadataManager classic JoinGroup paths (new, existing and static members,
KIP-394's member id required, KIP-345's static replacement) and the rebalance's phases
(prepareRebalance, completeClassicGroupJoin, the initial delay) up to the leader's SyncGroup.
`classic_group` adds SyncGroup, Heartbeat, LeaveGroup, the timers and the failover load; the data
and its bookkeeping are in `classic_group_base`. Like them: effects out, no clock, no I/O.

Compiled with mypyc with `classic_member`, `classic_group_base` and `classic_group` (setup.py); the
source is the reference path, and `kafka_rebalance.native` runs it whenever one build is stale.
"""

from __future__ import annotations

from .classic_group_base import (
    CANCEL_JOIN,
    CANCEL_SYNC,
    COMPLETING_REBALANCE,
    DEAD,
    E_COORDINATOR_NOT_AVAILABLE,
    E_FENCED_INSTANCE_ID,
    E_GROUP_MAX_SIZE_REACHED,
    E_INCONSISTENT_GROUP_PROTOCOL,
    E_INVALID_SESSION_TIMEOUT,
    E_MEMBER_ID_REQUIRED,
    E_NONE,
    E_REBALANCE_IN_PROGRESS,
    E_UNKNOWN_MEMBER_ID,
    EMPTY,
    HEARTBEAT,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroupBase,
)
from .classic_member import PURE, ClassicGroupMember, ints
from .classic_messages import (
    JOIN_KEY,
    SYNC_KEY,
    UNKNOWN_MEMBER_ID,
    CancelTimer,
    GroupMetadataChanged,
    JoinGroupRequest,
    JoinGroupResponse,
    MemberRemoved,
    ScheduleTimer,
    SyncGroupResponse,
)
from .errors import Errors


class ClassicGroupJoin(ClassicGroupBase):
    """A classic group's join phase; `ClassicGroup` adds the other requests and the timers."""

    def join(self, req: JoinGroupRequest, now_ms: int) -> list:
        fx: list = ints(req.session_timeout_ms, req.rebalance_timeout_ms, now_ms if PURE else 0)
        session_timeout_ms: int = req.session_timeout_ms
        if not (self._min_session_ms <= session_timeout_ms <= self._max_session_ms):
            fx.append(JoinGroupResponse(req.client, E_INVALID_SESSION_TIMEOUT, req.member_id))
            return fx
        is_unknown = req.member_id == UNKNOWN_MEMBER_ID
        if not self._accept_joining_member(req.member_id):
            self._remove(req.member_id)
            fx.append(JoinGroupResponse(req.client, E_GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID))
            return fx
        if is_unknown:
            self._join_new_member(req, now_ms, fx)
        else:
            self._join_existing_member(req, now_ms, fx)
        return fx

    def _accept_joining_member(self, member_id: str) -> bool:
        if self.state in (EMPTY, DEAD):
            return True
        if self.state is PREPARING_REBALANCE:
            m = self.members.get(member_id)
            return (
                m is not None and m.awaiting_join is not None
            ) or self.num_awaiting_join < self.config.max_size
        return member_id in self.members or len(self.members) < self.config.max_size

    def _join_new_member(self, req: JoinGroupRequest, now_ms: int, fx: list) -> None:
        if self.state is DEAD:
            fx.append(JoinGroupResponse(req.client, E_COORDINATOR_NOT_AVAILABLE, UNKNOWN_MEMBER_ID))
            return
        if not self.supports_protocols(req.protocol_type, [p for p, _ in req.protocols]):
            fx.append(
                JoinGroupResponse(req.client, E_INCONSISTENT_GROUP_PROTOCOL, UNKNOWN_MEMBER_ID)
            )
            return
        new_id = self._new_member_id(req.group_instance_id or req.client)
        if req.group_instance_id is not None:
            existing = self.static_members.get(req.group_instance_id)
            if existing is not None:
                self._update_static_member(req, existing, new_id, now_ms, fx)
            else:
                self._add_member_then_rebalance(req, new_id, now_ms, fx)
        elif self.config.require_known_member_id:
            self.pending_members[new_id] = None
            fx.append(ScheduleTimer((HEARTBEAT, new_id), now_ms + req.session_timeout_ms))
            fx.append(JoinGroupResponse(req.client, E_MEMBER_ID_REQUIRED, new_id))
        else:
            self._add_member_then_rebalance(req, new_id, now_ms, fx)

    def _join_existing_member(self, req: JoinGroupRequest, now_ms: int, fx: list) -> None:
        mid = req.member_id
        if self.state is DEAD:
            fx.append(JoinGroupResponse(req.client, E_COORDINATOR_NOT_AVAILABLE, mid))
            return
        if not self.supports_protocols(req.protocol_type, [p for p, _ in req.protocols]):
            fx.append(JoinGroupResponse(req.client, E_INCONSISTENT_GROUP_PROTOCOL, mid))
            return
        if mid in self.pending_members:
            self._add_member_then_rebalance(req, mid, now_ms, fx)
            return
        err = self.validate_member(mid, req.group_instance_id)
        if err is not E_NONE:
            fx.append(JoinGroupResponse(req.client, err, mid))
            return
        m = self.members[mid]
        if self.state is PREPARING_REBALANCE:
            self._update_member(m, req)
            # PreparingRebalance cannot move to PreparingRebalance: only the join phase can complete
            self._maybe_complete_join_phase(now_ms, fx)
        elif self.state is COMPLETING_REBALANCE:
            if m.matches(req.protocols):
                fx.append(self._join_response(m, req.client, with_members=self.is_leader(mid)))
            else:
                self._update_member(m, req)
                self._maybe_prepare_rebalance_or_complete_join(
                    now_ms, fx, f"updating metadata for member {mid}"
                )
        elif self.state is STABLE:
            if self.is_leader(mid) or not m.matches(req.protocols):
                self._update_member(m, req)
                why = (
                    f"leader {mid} re-joining"
                    if self.is_leader(mid)
                    else f"updating metadata for member {mid}"
                )
                self._maybe_prepare_rebalance_or_complete_join(now_ms, fx, why)
            else:
                fx.append(self._join_response(m, req.client, with_members=False))
        else:  # Empty: the member must reset its generation and rejoin
            fx.append(JoinGroupResponse(req.client, E_UNKNOWN_MEMBER_ID, mid))

    def _add_member_then_rebalance(
        self, req: JoinGroupRequest, member_id: str, now_ms: int, fx: list
    ) -> None:
        m = ClassicGroupMember(
            member_id,
            req.group_instance_id,
            req.client,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            req.protocol_type,
            req.protocols,
        )
        m.is_new = True
        if self.state is PREPARING_REBALANCE and self.previous_state is EMPTY:
            self.new_member_added = True
        self._add(m, req.client)
        self._schedule_heartbeat_in(m, now_ms, fx, self.config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance_or_complete_join(now_ms, fx, f"adding new member {member_id}")

    def _update_static_member(
        self, req: JoinGroupRequest, old_id: str, new_id: str, now_ms: int, fx: list
    ) -> None:
        """KIP-345: a returning instance id takes over its old member id, keeping its assignment."""
        old = self.members.pop(old_id)
        fx.append(CancelTimer((HEARTBEAT, old_id)))
        if old.awaiting_join is not None:
            fx.append(JoinGroupResponse(old.awaiting_join, E_FENCED_INSTANCE_ID, old_id))
            old.awaiting_join = None
            self.num_awaiting_join -= 1
        if old.awaiting_sync is not None:
            fx.append(SyncGroupResponse(old.awaiting_sync, E_FENCED_INSTANCE_ID))
            old.awaiting_sync = None
        self.pending_sync.discard(old_id)
        new = ClassicGroupMember(
            new_id,
            old.group_instance_id,
            req.client,
            old.rebalance_timeout_ms,
            old.session_timeout_ms,
            old.protocol_type,
            old.protocols,
            old.assignment,
        )
        self.members[new_id] = new
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[req.group_instance_id] = new_id  # type: ignore[index]
        fx.append(
            MemberRemoved(old_id, old.group_instance_id, "replaced by a rejoining static member")
        )
        self._reschedule_heartbeat(new, now_ms, fx)
        self._update_member(new, req)
        if self.state is STABLE:
            if (self.protocol_name or "") == self.select_protocol():
                # No rebalance: answer with the current generation; the member syncs its old assignment.
                fx.append(GroupMetadataChanged(self.snapshot()))
                resp = JoinGroupResponse(
                    req.client,
                    E_NONE,
                    new_id,
                    self.generation_id,
                    self.protocol_name,
                    self.leader_id or "",
                    (),
                    False,
                )
                if self.is_leader(new_id):
                    resp = self._join_response(new, req.client, with_members=True)
                    resp = JoinGroupResponse(
                        resp.client,
                        resp.error,
                        resp.member_id,
                        resp.generation_id,
                        resp.protocol_name,
                        resp.leader,
                        resp.members,
                        True,
                    )
                self._complete_join_future(new, resp, fx)
            else:
                self._maybe_prepare_rebalance_or_complete_join(
                    now_ms, fx, f"static member {new_id} changed protocol"
                )
        elif self.state is COMPLETING_REBALANCE:
            self._prepare_rebalance(now_ms, fx, f"updating metadata for static member {new_id}")
        else:
            self._maybe_complete_join_phase(now_ms, fx)

    def _maybe_prepare_rebalance_or_complete_join(self, now_ms: int, fx: list, reason: str) -> None:
        if self.can_rebalance():
            self._prepare_rebalance(now_ms, fx, reason)
        else:
            self._maybe_complete_join_phase(now_ms, fx)

    def _maybe_complete_join_phase(self, now_ms: int, fx: list) -> None:
        if (
            self.state is PREPARING_REBALANCE
            and self.previous_state is not EMPTY
            and self.has_all_members_joined()
        ):
            self._complete_join(now_ms, fx)

    def _prepare_rebalance(self, now_ms: int, fx: list, reason: str) -> None:
        if self.state is COMPLETING_REBALANCE:
            self._reset_and_propagate_assignment(E_REBALANCE_IN_PROGRESS, now_ms, fx)
        self.pending_sync.clear()
        fx.append(CANCEL_SYNC)
        initial = self.state is EMPTY
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(self.rebalance_timeout_ms() - delay, 0)
            self._initial_delay = (delay, remaining)
            fx.append(ScheduleTimer(JOIN_KEY, now_ms + delay, ("initial", delay, remaining)))
        self._transition(PREPARING_REBALANCE, now_ms, fx, reason)
        if not initial:
            if self.has_all_members_joined():
                self._complete_join(now_ms, fx)
            else:
                fx.append(ScheduleTimer(JOIN_KEY, now_ms + self.rebalance_timeout_ms(), ("join",)))

    def _complete_join(self, now_ms: int, fx: list) -> None:
        fx.append(CANCEL_JOIN)
        for mid in [
            mid for mid, m in self.members.items() if m.awaiting_join is None and not m.is_static
        ]:
            gi = self.members[mid].group_instance_id
            self._remove(mid)
            fx.append(CancelTimer((HEARTBEAT, mid)))
            fx.append(MemberRemoved(mid, gi, "did not rejoin before the rebalance timeout"))
        if self.state is DEAD:
            return
        if not self._maybe_elect_new_joined_leader() and self.members:
            fx.append(ScheduleTimer(JOIN_KEY, now_ms + self.rebalance_timeout_ms(), ("join",)))
            return
        self.generation_id += 1  # ClassicGroup.initNextGeneration
        if self.members:
            self.protocol_name = self.select_protocol()
            self._compute_subscribed_topics()
            self._transition(COMPLETING_REBALANCE, now_ms, fx, "join phase complete")
        else:
            self.protocol_name = None
            self._compute_subscribed_topics()
            self._transition(EMPTY, now_ms, fx, "no members left")
            fx.append(GroupMetadataChanged(self.snapshot()))
        self.pending_sync.clear()
        if self.state is COMPLETING_REBALANCE:
            for m in list(self.members.values()):
                resp = self._join_response(
                    m, m.awaiting_join or m.client_id, with_members=self.is_leader(m.member_id)
                )
                self._complete_join_future(m, resp, fx)
                self._reschedule_heartbeat(m, now_ms, fx)
                m.is_new = False
                self.pending_sync.add(m.member_id)
            fx.append(
                ScheduleTimer(
                    SYNC_KEY, now_ms + self.rebalance_timeout_ms(), ("sync", self.generation_id)
                )
            )

    # ----------------------------------------------- the leader's assignment, or none

    def _reset_and_propagate_assignment(self, error: Errors, now_ms: int, fx: list) -> None:
        for m in self.members.values():
            m.assignment = None
        self._propagate_assignment(error, now_ms, fx)

    def _propagate_assignment(self, error: Errors, now_ms: int, fx: list) -> None:
        ok = error is E_NONE
        proto = self.protocol_name if ok else None
        for m in self.members.values():
            if self._complete_sync_future(m, error, m.assignment if ok else None, proto, fx):
                self._reschedule_heartbeat(m, now_ms, fx)
