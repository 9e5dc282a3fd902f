"""A classic group's member as the coordinator keeps it; the broker settings and the persisted
snapshot (`classic_values`, named here too).

Compiled with mypyc together with `classic_group_base`, `classic_group_join` and `classic_group`
(setup.py): the member is a native class with typed attributes, read on every request. The source
is the reference path; `group/__init__.py` registers the set with `kafka_rebalance.native`, which
makes sure a stale build never runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from .classic_values import ClassicGroupConfig, ClassicGroupSnapshot, MemberSnapshot
from .type_names import type_name

# Times and timeouts are ints (Kafka's longs). The build's typed signatures refuse anything else
# with mypyc's TypeError ("int object expected; got float"); the source refuses the same values
# with the same error at the public entry points (`ints`). The build skips that check (a C static
# test): on a native int it would box the value on every call.
PURE: Final = __file__.endswith((".py", ".pyc"))


def ints(*values: object) -> list:
    """mypyc's TypeError for the first value that is not an int; else a new (empty) effects list.
    An int is what PyLong_Check takes (its real type int or a subclass: `isinstance` would also
    believe a `__class__` that lies), named in the message as mypyc names it (`type_name`: a tuple
    as "tuple[int]", a class as module.qualname)."""
    for value in values:
        t = type(value)
        if t is not int and not issubclass(t, int):
            raise TypeError(f"int object expected; got {type_name(value)}")
    return []


__all__ = [
    "NO_METADATA",
    "ClassicGroupConfig",
    "ClassicGroupMember",
    "ClassicGroupSnapshot",
    "MemberSnapshot",
    "selected_metadata",
]


class ClassicGroupMember:
    """One member as the coordinator knows it (Kafka's ClassicGroupMember)."""

    __slots__ = (
        "member_id",
        "group_instance_id",
        "client_id",
        "rebalance_timeout_ms",
        "session_timeout_ms",
        "protocol_type",
        "protocols",
        "assignment",
        "awaiting_join",
        "awaiting_sync",
        "is_new",
    )

    member_id: str
    group_instance_id: str | None
    client_id: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, Any], ...]
    assignment: Any
    awaiting_join: str | None  # client to answer the parked JoinGroup
    awaiting_sync: str | None  # client to answer the parked SyncGroup
    is_new: bool

    def __init__(
        self,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: tuple[tuple[str, Any], ...],
        assignment: Any = None,
    ) -> None:
        if PURE:
            ints(rebalance_timeout_ms, session_timeout_ms)
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = protocols
        self.assignment = assignment
        self.awaiting_join = None
        self.awaiting_sync = None
        self.is_new = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def protocol_names(self) -> tuple[str, ...]:
        return tuple([p[0] for p in self.protocols])

    def metadata(self, protocol: str) -> Any:
        for p in self.protocols:
            if p[0] == protocol:
                return p[1]
        raise KeyError(protocol)

    def matches(self, protocols: tuple[tuple[str, Any], ...]) -> bool:
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        for p in self.protocols:
            name = p[0]
            if name in candidates:
                return name
        raise ValueError("member does not support any candidate protocol")

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle and copy through the constructor: the mypyc build's native class has no instance
        dict or slots for the default protocol to fill."""
        return (
            _member_from_state,
            (
                type(self),
                (
                    self.member_id,
                    self.group_instance_id,
                    self.client_id,
                    self.rebalance_timeout_ms,
                    self.session_timeout_ms,
                    self.protocol_type,
                    self.protocols,
                    self.assignment,
                ),
                (self.awaiting_join, self.awaiting_sync, self.is_new),
            ),
        )

    def has_satisfied_heartbeat(self) -> bool:
        """Members parked in a rebalance count as alive; new members can still expire."""
        if self.is_new:
            return False
        return self.awaiting_join is not None or self.awaiting_sync is not None


def _member_from_state(
    cls: Any, fields: tuple[Any, ...], parked: tuple[Any, ...]
) -> ClassicGroupMember:
    m: ClassicGroupMember = cls(*fields)
    m.awaiting_join, m.awaiting_sync, m.is_new = parked
    return m


# a member without the selected protocol's metadata: not a subscription
NO_METADATA: Final = object()


def selected_metadata(members: Iterable[ClassicGroupMember], protocol: str) -> tuple[Any, ...]:
    """Each member's metadata for the selected protocol, captured when a generation starts."""
    out: list[Any] = []
    for m in members:
        meta: Any = NO_METADATA
        for p in m.protocols:
            if p[0] == protocol:
                meta = p[1]
                break
        out.append(meta)
    return tuple(out)
