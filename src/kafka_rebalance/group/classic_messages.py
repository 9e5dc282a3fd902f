"""Requests, responses and effects of the classic group protocol (values only).

Requests carry `client`: the connection the coordinator answers on (a parked
JoinGroup is answered later, possibly after the member id changed). Member
metadata and assignments are opaque to the coordinator, as in Kafka; the
simulator passes subscription / assignment objects through unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .errors import Errors

UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1


@dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    client: str
    member_id: str
    protocols: tuple[tuple[str, Any], ...]  # (protocol name, metadata), client preference order
    session_timeout_ms: int
    rebalance_timeout_ms: int
    group_instance_id: str | None = None
    protocol_type: str = "consumer"
    reason: str = ""


@dataclass(frozen=True, slots=True)
class JoinGroupMember:
    member_id: str
    group_instance_id: str | None
    metadata: Any


@dataclass(frozen=True, slots=True)
class JoinGroupResponse:
    client: str
    error: Errors
    member_id: str
    generation_id: int = NO_GENERATION
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[JoinGroupMember, ...] = ()  # only for the leader
    skip_assignment: bool = False


@dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    client: str
    member_id: str
    generation_id: int
    group_instance_id: str | None = None
    protocol_type: str | None = "consumer"
    protocol_name: str | None = None
    assignments: Mapping[str, Any] | None = None  # only the leader sends them


@dataclass(frozen=True, slots=True)
class SyncGroupResponse:
    client: str
    error: Errors
    assignment: Any = None
    protocol_name: str | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    client: str
    member_id: str
    generation_id: int
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    client: str
    error: Errors


@dataclass(frozen=True, slots=True)
class LeaveGroupRequest:
    client: str
    members: tuple[tuple[str, str | None], ...]  # (member id, group.instance.id)
    reason: str = ""


@dataclass(frozen=True, slots=True)
class LeaveGroupResponse:
    client: str
    error: Errors
    member_errors: tuple[tuple[str, Errors], ...] = ()


# ----------------------------------------------------------------------------
# Effects: what the driver must do after a transition.


@dataclass(frozen=True, slots=True)
class ScheduleTimer:
    """Fire `on_timer(key, payload)` at `deadline_ms`, replacing any timer with the same key."""

    key: tuple
    deadline_ms: int
    payload: Any = None


@dataclass(frozen=True, slots=True)
class CancelTimer:
    key: tuple


@dataclass(frozen=True, slots=True)
class StateChanged:
    old: Any
    new: Any
    generation_id: int
    reason: str = ""


@dataclass(frozen=True, slots=True)
class MemberRemoved:
    member_id: str
    group_instance_id: str | None
    reason: str


@dataclass(frozen=True, slots=True)
class GroupMetadataChanged:
    """Kafka appends a GroupMetadataValue record here; `snapshot` is what it would hold."""

    snapshot: Any


def heartbeat_key(member_id: str) -> tuple:
    return ("heartbeat", member_id)


JOIN_KEY = ("join",)
SYNC_KEY = ("sync",)
