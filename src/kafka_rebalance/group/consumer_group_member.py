"""The client side of the KIP-848 protocol (Kafka's ConsumerMembershipManager, simplified), pure.

A member heartbeats every `heartbeat_interval_ms`; the first heartbeat (epoch
0) is a full request with its subscription and rebalance timeout. When a
response carries an assignment different from what the member owns, the
member *reconciles*: it revokes `owned - target` (commit offsets,
onPartitionsRevoked), then takes `target - owned` (onPartitionsAssigned) and
acknowledges with an immediate heartbeat reporting its new partitions.
`owned` is what the member holds and reports in its heartbeats (Kafka's
subscriptions.assignedPartitions): the revoked partitions until the
revocation is done, the target from then on (new partitions may still be
waiting for onPartitionsAssigned before they are fetched). The
coordinator only ever sends partitions nobody else holds, so keeping
partitions never stops processing: only the revoked ones pause.

    member = ConsumerMember("g", subscribed_topics=("orders",), instance_id=None)
    req = heartbeat_request(member)
    member, rec, lost = on_heartbeat_response(member, response)
    if rec: ... revoke rec.revoke (member = revocation_done(member)), assign rec.assign ...
        member, rec = complete_reconciliation(member)   # rec: the next one if another assignment came
    req = leave_request(member)      # epoch -1 (dynamic) or -2 (static: comes back within the session)

On FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID the member loses everything
(onPartitionsLost, no commit) and rejoins with epoch 0, keeping its member id.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ..model import TopicPartition
from .consumer_group_model import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    fast_inits,
    replace,
    sorted_partitions,
    value_reduce,
)
from .errors import Errors


class ClientState(Enum):
    """JOINING: next heartbeat is a full epoch-0 request. STABLE: owns its target.
    RECONCILING: revoking/assigning towards a new target. ACKNOWLEDGING: done, the
    next heartbeat (sent at once) reports the new partitions. LEFT: sent its leave."""

    JOINING = "joining"
    STABLE = "stable"
    RECONCILING = "reconciling"
    ACKNOWLEDGING = "acknowledging"
    LEFT = "left"


@dataclass(frozen=True, slots=True, init=False)
class Reconciliation:
    target: frozenset[TopicPartition]
    revoke: frozenset[TopicPartition]
    assign: frozenset[TopicPartition]
    member_epoch: int

    def __reduce__(self) -> tuple:  # a native build's too (see value_reduce)
        return value_reduce(self)

    def __init__(
        self,
        target: frozenset[TopicPartition],
        revoke: frozenset[TopicPartition],
        assign: frozenset[TopicPartition],
        member_epoch: int,
    ) -> None:
        # a mypyc build's constructor (stores each field); the sources' is slot_init's
        self.target = target  # type: ignore[misc]
        self.revoke = revoke  # type: ignore[misc]
        self.assign = assign  # type: ignore[misc]
        self.member_epoch = member_epoch  # type: ignore[misc]


@dataclass(frozen=True, slots=True, init=False)
class ConsumerMember:
    group_id: str
    subscribed_topics: tuple[str, ...]
    member_id: str = ""
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = 300_000  # max.poll.interval.ms
    server_assignor: str | None = None
    member_epoch: int = 0
    state: ClientState = ClientState.JOINING
    owned: frozenset[TopicPartition] = frozenset()
    reconciling: Reconciliation | None = None
    queued_assignment: frozenset[TopicPartition] | None = None  # arrived while reconciling

    def __reduce__(self) -> tuple:  # a native build's too (see value_reduce)
        return value_reduce(self)

    def __init__(
        self,
        group_id: str,
        subscribed_topics: tuple[str, ...],
        member_id: str = "",
        instance_id: str | None = None,
        rack_id: str | None = None,
        rebalance_timeout_ms: int = 300_000,
        server_assignor: str | None = None,
        member_epoch: int = 0,
        state: ClientState = ClientState.JOINING,
        owned: frozenset[TopicPartition] = frozenset(),
        reconciling: Reconciliation | None = None,
        queued_assignment: frozenset[TopicPartition] | None = None,
    ) -> None:
        # a mypyc build's constructor (stores each field); the sources' is slot_init's
        self.group_id = group_id  # type: ignore[misc]
        self.subscribed_topics = subscribed_topics  # type: ignore[misc]
        self.member_id = member_id  # type: ignore[misc]
        self.instance_id = instance_id  # type: ignore[misc]
        self.rack_id = rack_id  # type: ignore[misc]
        self.rebalance_timeout_ms = rebalance_timeout_ms  # type: ignore[misc]
        self.server_assignor = server_assignor  # type: ignore[misc]
        self.member_epoch = member_epoch  # type: ignore[misc]
        self.state = state  # type: ignore[misc]
        self.owned = owned  # type: ignore[misc]
        self.reconciling = reconciling  # type: ignore[misc]
        self.queued_assignment = queued_assignment  # type: ignore[misc]


fast_inits(Reconciliation, ConsumerMember)


def at_epoch(m: ConsumerMember, member_epoch: int) -> ConsumerMember:
    """`m` at another member epoch, nothing else changed (a stable member's heartbeat answered
    with a new epoch: every member, once per epoch), built field by field."""
    return ConsumerMember(
        m.group_id,
        m.subscribed_topics,
        m.member_id,
        m.instance_id,
        m.rack_id,
        m.rebalance_timeout_ms,
        m.server_assignor,
        member_epoch,
        m.state,
        m.owned,
        m.reconciling,
        m.queued_assignment,
    )


def heartbeat_request(m: ConsumerMember) -> ConsumerGroupHeartbeatRequest:
    if m.state is ClientState.JOINING:
        return ConsumerGroupHeartbeatRequest(
            m.group_id,
            m.member_id,
            0,
            m.instance_id,
            m.rack_id,
            m.rebalance_timeout_ms,
            tuple(m.subscribed_topics),
            m.server_assignor,
            (),
        )
    return ConsumerGroupHeartbeatRequest(
        m.group_id,
        m.member_id,
        m.member_epoch,
        m.instance_id,
        owned_partitions=tuple(sorted_partitions(m.owned)),
    )


def leave_request(m: ConsumerMember) -> ConsumerGroupHeartbeatRequest:
    epoch = (
        LEAVE_GROUP_STATIC_MEMBER_EPOCH if m.instance_id is not None else LEAVE_GROUP_MEMBER_EPOCH
    )
    return ConsumerGroupHeartbeatRequest(m.group_id, m.member_id, epoch, m.instance_id)


def on_left(m: ConsumerMember) -> ConsumerMember:
    """After the leave heartbeat: nothing owned, next start joins afresh."""
    return replace(
        m,
        state=ClientState.LEFT,
        owned=frozenset(),
        reconciling=None,
        member_epoch=0,
        queued_assignment=None,
    )


def on_heartbeat_response(
    m: ConsumerMember, resp: ConsumerGroupHeartbeatResponse
) -> tuple[ConsumerMember, Reconciliation | None, frozenset[TopicPartition]]:
    """Apply a response: (member, reconciliation to run or None, partitions lost)."""
    if resp.error in (Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID):
        lost = m.owned
        return (
            replace(
                m,
                state=ClientState.JOINING,
                member_epoch=0,
                owned=frozenset(),
                reconciling=None,
                queued_assignment=None,
            ),
            None,
            lost,
        )
    if resp.error is not Errors.NONE:
        return m, None, frozenset()  # retriable or fatal: the driver decides; nothing changes here
    member_id = resp.member_id or m.member_id
    state = m.state
    if state is ClientState.JOINING or state is ClientState.ACKNOWLEDGING:
        state = ClientState.STABLE
    if member_id != m.member_id or resp.member_epoch != m.member_epoch or state is not m.state:
        # (most responses change nothing: the member then stays the same value)
        m = replace(m, member_id=member_id, member_epoch=resp.member_epoch, state=state)
    if resp.assignment is None:
        return m, None, frozenset()
    if m.state is ClientState.RECONCILING:
        return replace(m, queued_assignment=resp.assignment), None, frozenset()
    m, rec = _start(m, resp.assignment)
    return m, rec, frozenset()


def _start(
    m: ConsumerMember, target: frozenset[TopicPartition]
) -> tuple[ConsumerMember, Reconciliation | None]:
    if target == m.owned:
        return m, None
    rec = Reconciliation(target, m.owned - target, target - m.owned, m.member_epoch)
    # With nothing to revoke the new partitions are the member's at once (Kafka marks them assigned,
    # awaiting onPartitionsAssigned, and reports them); otherwise only after the revocation.
    owned = target if not rec.revoke else m.owned
    return replace(m, state=ClientState.RECONCILING, reconciling=rec, owned=owned), rec


def revocation_done(m: ConsumerMember) -> ConsumerMember:
    """Revocation finished (offsets committed, onPartitionsRevoked returned): the member now holds and
    reports its target; onPartitionsAssigned for `reconciling.assign` may still be running."""
    if m.reconciling is None:
        return m
    return replace(m, owned=m.reconciling.target)


def complete_reconciliation(m: ConsumerMember) -> tuple[ConsumerMember, Reconciliation | None]:
    """Revocation and assignment done: own the target and acknowledge with the next heartbeat.
    Returns the next reconciliation when another assignment arrived meanwhile."""
    if m.reconciling is None:
        return m, None
    m = replace(m, owned=m.reconciling.target, reconciling=None, state=ClientState.ACKNOWLEDGING)
    if m.queued_assignment is not None:
        queued = m.queued_assignment
        m = replace(m, queued_assignment=None)
        return _start(m, queued)
    return m, None
