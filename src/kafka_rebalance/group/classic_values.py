"""The classic group's values: the broker settings and the snapshot a GroupMetadataValue holds.

Frozen dataclasses, kept out of the mypyc build of `classic_member` / `classic_group*` on purpose:
compiled, a frozen dataclass becomes a native class that neither pickles nor deep-copies the way
the dataclass does, and their generated __init__ would run as Python all the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..fields import INT32_MAX


@dataclass(frozen=True, slots=True)
class ClassicGroupConfig:
    """Broker-side settings (Kafka defaults)."""

    initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    max_size: int = INT32_MAX  # group.max.size
    min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000  # group.max.session.timeout.ms
    new_member_join_timeout_ms: int = 300_000  # classic new member join timeout
    require_known_member_id: bool = True  # JoinGroup v4+ (KIP-394)


@dataclass(frozen=True, slots=True)
class MemberSnapshot:
    member_id: str
    group_instance_id: str | None
    client_id: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocols: tuple[tuple[str, Any], ...]
    assignment: Any


@dataclass(frozen=True, slots=True)
class ClassicGroupSnapshot:
    """What a GroupMetadataValue record holds: enough to reload the group after failover."""

    group_id: str
    protocol_type: str | None
    generation_id: int
    protocol_name: str | None
    leader: str | None
    state_timestamp_ms: int
    members: tuple[MemberSnapshot, ...]
