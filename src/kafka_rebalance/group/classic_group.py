"""The classic group coordinator for one group, as an explicit state machine.

Follows Kafka's GroupMetadataManager classic paths (join, sync, heartbeat,
leave, timers) and ClassicGroup. Every entry point takes `now_ms` and returns
a list of effects (responses to send, timers to (re)schedule or cancel,
state changes, metadata to persist); nothing here reads a clock or does I/O.
Three modules, one class chain: `classic_group_base` (the group's data and
bookkeeping), `classic_group_join` (JoinGroup and the rebalance's join phase),
this one (SyncGroup, Heartbeat, LeaveGroup, the timers, the failover load).

The group is a mutable aggregate, like Kafka's: a request costs O(1) rather
than a copy of a 1,000-member group, which the simulator needs. Determinism
holds because every input (time, member id salt) is a parameter.
"""

from __future__ import annotations

from typing import Any

from .classic_group_base import (
    CANCEL_SYNC,
    COMPLETING_REBALANCE,
    DEAD,
    E_COORDINATOR_NOT_AVAILABLE,
    E_ILLEGAL_GENERATION,
    E_INCONSISTENT_GROUP_PROTOCOL,
    E_NONE,
    E_REBALANCE_IN_PROGRESS,
    E_UNKNOWN_MEMBER_ID,
    EMPTY,
    HEARTBEAT,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroupBase,
    new_tuple,
)
from .classic_group_join import ClassicGroupJoin
from .classic_member import (
    PURE,
    ClassicGroupConfig,
    ClassicGroupMember,
    ClassicGroupSnapshot,
    MemberSnapshot,
    ints,
)
from .classic_messages import (
    JOIN_KEY,
    UNKNOWN_MEMBER_ID,
    CancelTimer,
    GroupMetadataChanged,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberRemoved,
    ScheduleTimer,
    SyncGroupRequest,
    SyncGroupResponse,
)
from .classic_state import ClassicGroupState
from .errors import Errors

__all__ = [
    "ClassicGroup",
    "ClassicGroupBase",
    "ClassicGroupConfig",
    "ClassicGroupMember",
    "ClassicGroupSnapshot",
    "MemberSnapshot",
]

S = ClassicGroupState


class ClassicGroup(ClassicGroupJoin):
    """A classic consumer group on its coordinator: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, timers."""

    def handle(self, event: Any, now_ms: int) -> list:
        """(state, event, now_ms) -> effects: one entry point for every request and timer.

        `event` is a JoinGroup/SyncGroup/Heartbeat/LeaveGroup request or a
        `(timer key, payload)` pair the driver scheduled from a ScheduleTimer effect.
        """
        t = type(event)
        if t is JoinGroupRequest:
            return self.join(event, now_ms)
        if t is SyncGroupRequest:
            return self.sync(event, now_ms)
        if t is HeartbeatRequest:
            return self.heartbeat(event, now_ms)
        if t is LeaveGroupRequest:
            return self.leave(event, now_ms)
        if t is tuple and len(event) == 2:
            return self.on_timer(event[0], event[1], now_ms)
        raise TypeError(f"not a classic group event: {event!r}")

    # --------------------------------------------------------------- SyncGroup

    def sync(self, req: SyncGroupRequest, now_ms: int) -> list:
        fx: list = ints(now_ms) if PURE else []
        err = self._validate_sync(req)
        if err is not E_NONE:
            fx.append(SyncGroupResponse(req.client, err))
        elif self.state is PREPARING_REBALANCE:
            fx.append(SyncGroupResponse(req.client, E_REBALANCE_IN_PROGRESS))
        elif self.state is COMPLETING_REBALANCE:
            m = self.members[req.member_id]
            m.awaiting_sync = req.client
            self._remove_pending_sync(req.member_id, fx)
            if self.is_leader(req.member_id):
                assignment = dict(req.assignments or {})
                for x in self.members.values():
                    x.assignment = assignment.get(x.member_id)
                self._propagate_assignment(E_NONE, now_ms, fx)
                self._transition(STABLE, now_ms, fx, "leader's assignment received")
                fx.append(GroupMetadataChanged(self.snapshot()))
        elif self.state is STABLE:
            self._remove_pending_sync(req.member_id, fx)
            ours = self.members[req.member_id].assignment
            fields = (req.client, E_NONE, ours, self.protocol_name)
            fx.append(new_tuple(SyncGroupResponse, fields))
        return fx

    def _validate_sync(self, req: SyncGroupRequest) -> Errors:
        if self.state is DEAD:
            return E_COORDINATOR_NOT_AVAILABLE
        err = self.validate_member(req.member_id, req.group_instance_id)
        if err is not E_NONE:
            return err
        if req.generation_id != self.generation_id:
            return E_ILLEGAL_GENERATION
        if (
            req.protocol_type is not None
            and self.protocol_type is not None
            and req.protocol_type != self.protocol_type
        ) or (
            req.protocol_name is not None
            and self.protocol_name is not None
            and req.protocol_name != self.protocol_name
        ):
            return E_INCONSISTENT_GROUP_PROTOCOL
        return E_NONE

    def _remove_pending_sync(self, member_id: str, fx: list) -> None:
        self.pending_sync.discard(member_id)
        if self.state in (COMPLETING_REBALANCE, STABLE):
            if not self.pending_sync:
                fx.append(CANCEL_SYNC)
        else:
            fx.append(CANCEL_SYNC)

    # --------------------------------------------------------------- Heartbeat

    def heartbeat(self, req: HeartbeatRequest, now_ms: int) -> list:
        fx: list = ints(now_ms) if PURE else []
        state = self.state
        err: Any
        if state is DEAD:
            err = E_COORDINATOR_NOT_AVAILABLE
        else:
            member_id: str = req.member_id
            err = self.validate_member(member_id, req.group_instance_id)
            if err is E_NONE and req.generation_id != self.generation_id:
                err = E_ILLEGAL_GENERATION
            if err is E_NONE:
                if state is EMPTY:
                    err = E_UNKNOWN_MEMBER_ID
                else:
                    self._reschedule_heartbeat(self.members[member_id], now_ms, fx)
                    if state is PREPARING_REBALANCE:
                        err = E_REBALANCE_IN_PROGRESS
        fx.append(new_tuple(HeartbeatResponse, (req.client, err)))
        return fx

    # -------------------------------------------------------------- LeaveGroup

    def leave(self, req: LeaveGroupRequest, now_ms: int) -> list:
        fx: list = ints(now_ms) if PURE else []
        if self.state is DEAD:
            fx.append(LeaveGroupResponse(req.client, E_COORDINATOR_NOT_AVAILABLE))
            return fx
        results: list[tuple[str, Errors]] = []
        for mid, inst in req.members:
            if mid == UNKNOWN_MEMBER_ID:
                if inst is not None and inst in self.static_members:
                    self._remove_current_member(
                        self.static_members[inst], fx, "LeaveGroup by instance id"
                    )
                    results.append((mid, E_NONE))
                else:
                    results.append((mid, E_UNKNOWN_MEMBER_ID))
            elif mid in self.pending_members:
                self._remove(mid)
                fx.append(CancelTimer((HEARTBEAT, mid)))
                results.append((mid, E_NONE))
            else:
                err = self.validate_member(mid, inst)
                if err is E_NONE:
                    self._remove_current_member(mid, fx, "LeaveGroup")
                results.append((mid, err))
        if any(e is E_NONE for _, e in results):
            reason = "explicit LeaveGroup from " + ", ".join(
                mid or str(inst) for (mid, inst), (_, e) in zip(req.members, results) if e is E_NONE
            )
            if self.state in (STABLE, COMPLETING_REBALANCE):
                self._maybe_prepare_rebalance_or_complete_join(now_ms, fx, reason)
            elif self.state is PREPARING_REBALANCE:
                self._maybe_complete_join_phase(now_ms, fx)
        fx.append(LeaveGroupResponse(req.client, E_NONE, tuple(results)))
        return fx

    def _remove_current_member(self, member_id: str, fx: list, reason: str) -> None:
        m = self.members[member_id]
        fx.append(CancelTimer((HEARTBEAT, member_id)))
        self._complete_join_future(
            m, JoinGroupResponse("", E_UNKNOWN_MEMBER_ID, UNKNOWN_MEMBER_ID), fx
        )
        self._remove(member_id)
        fx.append(MemberRemoved(member_id, m.group_instance_id, reason))

    # ------------------------------------------------------------------ timers

    def on_timer(self, key: tuple, payload: Any, now_ms: int) -> list:
        fx: list = ints(now_ms) if PURE else []
        kind = key[0]
        if kind == HEARTBEAT:
            self._expire_heartbeat(key[1], now_ms, fx)
        elif kind == "join" and self.state is PREPARING_REBALANCE:
            if payload and payload[0] == "initial":
                _, delay, remaining = payload
                if self.new_member_added and remaining != 0:
                    self.new_member_added = False
                    new_delay = min(self.config.initial_rebalance_delay_ms, remaining)
                    new_remaining = max(remaining - delay, 0)
                    fx.append(
                        ScheduleTimer(
                            JOIN_KEY, now_ms + new_delay, ("initial", new_delay, new_remaining)
                        )
                    )
                else:
                    self._complete_join(now_ms, fx)
            else:
                self._complete_join(now_ms, fx)
        elif kind == "sync":
            self._expire_pending_sync(payload[1] if payload else self.generation_id, now_ms, fx)
        return fx

    def _expire_heartbeat(self, member_id: str, now_ms: int, fx: list) -> None:
        if self.state is DEAD:
            return
        if member_id in self.pending_members:
            self._remove(member_id)
            if self.state is PREPARING_REBALANCE and self.has_all_members_joined():
                self._complete_join(now_ms, fx)
            return
        m = self.members.get(member_id)
        if m is None or m.has_satisfied_heartbeat():
            return
        self._complete_join_future(
            m, JoinGroupResponse("", E_UNKNOWN_MEMBER_ID, UNKNOWN_MEMBER_ID), fx
        )
        self._remove(member_id)
        fx.append(MemberRemoved(member_id, m.group_instance_id, "session timeout"))
        if self.state in (STABLE, COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance_or_complete_join(
                now_ms, fx, f"member {member_id} session expired"
            )
        elif self.state is PREPARING_REBALANCE and self.has_all_members_joined():
            self._complete_join(now_ms, fx)

    def _expire_pending_sync(self, generation_id: int, now_ms: int, fx: list) -> None:
        if generation_id != self.generation_id or self.state not in (
            COMPLETING_REBALANCE,
            STABLE,
        ):
            return
        if self.pending_sync:
            for mid in sorted(self.pending_sync):
                gi = self.members[mid].group_instance_id if mid in self.members else None
                self._remove(mid)
                fx.append(CancelTimer((HEARTBEAT, mid)))
                fx.append(MemberRemoved(mid, gi, "pending SyncGroup expired"))
            self._prepare_rebalance(now_ms, fx, "pending sync expired")

    # ------------------------------------------------------------ coordinator

    @classmethod
    def load(
        cls,
        snap: ClassicGroupSnapshot,
        config: ClassicGroupConfig | None,
        now_ms: int,
        member_id_salt: str = "",
    ) -> tuple[ClassicGroup, list]:
        """Rebuild a group from its last GroupMetadataValue: Stable (or Empty), fresh session timers."""
        g = cls(snap.group_id, config, member_id_salt=member_id_salt, now_ms=now_ms)
        # GroupMetadataManager.replay: "" or null is no type, but adding the first loaded member
        # sets the group's type to the members' (value.protocolType()) as ClassicGroup.add does
        g.protocol_type = (
            (snap.protocol_type or "") if snap.members else (snap.protocol_type or None)
        )
        g.generation_id = snap.generation_id
        g.protocol_name = snap.protocol_name
        g.state_timestamp_ms = snap.state_timestamp_ms
        fx: list = []
        for ms in snap.members:
            m = ClassicGroupMember(
                ms.member_id,
                ms.group_instance_id,
                ms.client_id,
                ms.rebalance_timeout_ms,
                ms.session_timeout_ms,
                snap.protocol_type or "",
                ms.protocols,
                ms.assignment,
            )
            g.members[m.member_id] = m
            if m.group_instance_id is not None:
                g.static_members[m.group_instance_id] = m.member_id
            for p in m.protocol_names():
                g._supported[p] = g._supported.get(p, 0) + 1
        g.leader_id = snap.leader if snap.leader in g.members else next(iter(g.members), None)
        g._compute_subscribed_topics()
        if g.members:
            g.state = STABLE
            for m in g.members.values():
                g._reschedule_heartbeat(m, now_ms, fx)
            if len(g.members) > g.config.max_size:
                g._prepare_rebalance(now_ms, fx, "group size above group.max.size after load")
        return g, fx
