"""The classic group coordinator for one group, as an explicit state machine.

Follows Kafka's GroupMetadataManager classic paths (join, sync, heartbeat,
leave, timers) and ClassicGroup. Every entry point takes `now_ms` and returns
a list of effects (responses to send, timers to (re)schedule or cancel,
state changes, metadata to persist); nothing here reads a clock or does I/O.
The group's data and bookkeeping are in `classic_group_base`.

The group is a mutable aggregate, like Kafka's: a request costs O(1) rather
than a copy of a 1,000-member group, which the simulator needs. Determinism
holds because every input (time, member id salt) is a parameter.
"""

from __future__ import annotations

from typing import Any

from .classic_group_base import (
    CANCEL_JOIN,
    CANCEL_SYNC,
    COMPLETING_REBALANCE,
    DEAD,
    E_COORDINATOR_NOT_AVAILABLE,
    E_FENCED_INSTANCE_ID,
    E_GROUP_MAX_SIZE_REACHED,
    E_ILLEGAL_GENERATION,
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
    new_tuple,
)
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
    SYNC_KEY,
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
    "ClassicGroupConfig",
    "ClassicGroupMember",
    "ClassicGroupSnapshot",
    "MemberSnapshot",
]

S = ClassicGroupState


class ClassicGroup(ClassicGroupBase):
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

    # --------------------------------------------------------------- JoinGroup

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
