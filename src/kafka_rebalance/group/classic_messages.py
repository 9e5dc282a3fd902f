"""Requests, responses and effects of the classic group protocol (values only).

Requests carry `client`: the connection the coordinator answers on (a parked
JoinGroup is answered later, possibly after the member id changed). Member
metadata and assignments are opaque to the coordinator, as in Kafka; the
simulator passes subscription / assignment objects through unchanged.

They are NamedTuples: immutable values like frozen dataclasses, but about
three times cheaper to build, and a large simulation builds tens of millions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from .errors import Errors

UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1


class JoinGroupRequest(NamedTuple):
    client: str
    member_id: str
    protocols: tuple[tuple[str, Any], ...]  # (protocol name, metadata), client preference order
    session_timeout_ms: int
    rebalance_timeout_ms: int
    group_instance_id: str | None = None
    protocol_type: str = "consumer"
    reason: str = ""


class JoinGroupMember(NamedTuple):
    member_id: str
    group_instance_id: str | None
    metadata: Any


class JoinGroupResponse(NamedTuple):
    client: str
    error: Errors
    member_id: str
    generation_id: int = NO_GENERATION
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[JoinGroupMember, ...] = ()  # only for the leader
    skip_assignment: bool = False


class SyncGroupRequest(NamedTuple):
    client: str
    member_id: str
    generation_id: int
    group_instance_id: str | None = None
    protocol_type: str | None = "consumer"
    protocol_name: str | None = None
    assignments: Mapping[str, Any] | None = None  # only the leader sends them


class SyncGroupResponse(NamedTuple):
    client: str
    error: Errors
    assignment: Any = None
    protocol_name: str | None = None


class HeartbeatRequest(NamedTuple):
    client: str
    member_id: str
    generation_id: int
    group_instance_id: str | None = None


class HeartbeatResponse(NamedTuple):
    client: str
    error: Errors


class LeaveGroupRequest(NamedTuple):
    client: str
    members: tuple[tuple[str, str | None], ...]  # (member id, group.instance.id)
    reason: str = ""


class LeaveGroupResponse(NamedTuple):
    client: str
    error: Errors
    member_errors: tuple[tuple[str, Errors], ...] = ()


# ----------------------------------------------------------------------------
# Effects: what the driver must do after a transition.


class ScheduleTimer(NamedTuple):
    """Fire `on_timer(key, payload)` at `deadline_ms`, replacing any timer with the same key."""

    key: tuple
    deadline_ms: int
    payload: Any = None


class CancelTimer(NamedTuple):
    key: tuple


class StateChanged(NamedTuple):
    old: Any
    new: Any
    generation_id: int
    reason: str = ""


class MemberRemoved(NamedTuple):
    member_id: str
    group_instance_id: str | None
    reason: str


class GroupMetadataChanged(NamedTuple):
    """Kafka appends a GroupMetadataValue record here; `snapshot` is what it would hold."""

    snapshot: Any


HEARTBEAT = "heartbeat"  # the kind of a member's session timer key


def heartbeat_key(member_id: str) -> tuple:
    return (HEARTBEAT, member_id)


JOIN_KEY = ("join",)
SYNC_KEY = ("sync",)
