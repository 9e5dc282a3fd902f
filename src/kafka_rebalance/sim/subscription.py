"""The JoinGroup metadata a simulated member sends (its ConsumerProtocolSubscription)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import TopicPartition


@dataclass(frozen=True, slots=True)
class Subscription:
    """ConsumerProtocolSubscription: what a member tells the leader in JoinGroup metadata."""

    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...]
    generation: int
    rack: str | None
    # the assignor's subscriptionUserData(): StickyAssignor's V1 bytes (its last assignment and generation),
    # CooperativeStickyAssignor's V0 bytes (the generation of its last onAssignment; its leader reads the
    # protocol's generation field instead), None for the others
    user_data: bytes | None = None
    # the same owned partitions as the simulator's partition indices (a shortcut for the leader; not part
    # of the protocol: None when rebuilt from the offsets log, ignored by equality)
    owned_idx: tuple[int, ...] | None = field(default=None, compare=False)
