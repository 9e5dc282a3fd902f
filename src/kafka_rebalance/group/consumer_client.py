"""The consumer side of the classic protocol (Kafka's ConsumerCoordinator), as pure decisions.

What a member does is decided here; the simulator only carries it out:
which rebalance protocol the assignor list selects, what is revoked before
rejoining (eager: everything; cooperative, KIP-429: nothing, then only what
moves, followed by a second rebalance), what a heartbeat or commit error
means (rejoin, reset generation, CommitFailedException,
RebalanceInProgressException), and what happens when max.poll.interval.ms
runs out (a dynamic member sends LeaveGroup, a static member goes silent).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import Iterable, Sequence

from ..model import TopicPartition
from .errors import Errors


class RebalanceProtocol(IntEnum):
    """Ordered as Kafka's enum: the highest protocol all assignors support wins."""

    EAGER = 0
    COOPERATIVE = 1


# ConsumerPartitionAssignor.supportedProtocols() of Kafka's built-in assignors.
ASSIGNOR_PROTOCOLS: dict[str, tuple[RebalanceProtocol, ...]] = {
    "range": (RebalanceProtocol.EAGER,),
    "roundrobin": (RebalanceProtocol.EAGER,),
    "sticky": (RebalanceProtocol.EAGER,),
    "cooperative-sticky": (RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE),
}


def choose_protocol(assignors: Sequence[str]) -> RebalanceProtocol:
    """The highest rebalance protocol every configured assignor supports.

    `[range, cooperative-sticky]` (the default list) yields EAGER: only when all
    assignors support COOPERATIVE does the consumer run cooperatively.
    """
    if not assignors:
        raise ValueError("at least one assignor is required")
    common: set[RebalanceProtocol] | None = None
    for name in assignors:
        supported = set(ASSIGNOR_PROTOCOLS.get(name, (RebalanceProtocol.EAGER,)))
        common = supported if common is None else common & supported
    if not common:
        raise ValueError(f"assignors {list(assignors)} have no commonly supported rebalance protocol")
    return max(common)


class MemberState(Enum):
    """The client's view of its membership (AbstractCoordinator.MemberState)."""

    UNJOINED = "UNJOINED"
    PREPARING_REBALANCE = "PREPARING_REBALANCE"  # JoinGroup sent
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"  # SyncGroup sent
    STABLE = "STABLE"


class HeartbeatAction(Enum):
    CONTINUE = "continue"
    REJOIN = "rejoin"  # REBALANCE_IN_PROGRESS: rejoin at the next poll
    RESET_GENERATION_AND_REJOIN = "reset-generation"  # ILLEGAL_GENERATION: keep member id
    RESET_MEMBER_AND_REJOIN = "reset-member"  # UNKNOWN_MEMBER_ID: new member id
    FIND_COORDINATOR = "find-coordinator"
    FATAL = "fatal"  # FENCED_INSTANCE_ID: another instance with our group.instance.id


def on_heartbeat_error(error: Errors) -> HeartbeatAction:
    """AbstractCoordinator.HeartbeatResponseHandler."""
    if error is Errors.NONE:
        return HeartbeatAction.CONTINUE
    if error is Errors.REBALANCE_IN_PROGRESS:
        return HeartbeatAction.REJOIN
    if error is Errors.ILLEGAL_GENERATION:
        return HeartbeatAction.RESET_GENERATION_AND_REJOIN
    if error is Errors.UNKNOWN_MEMBER_ID:
        return HeartbeatAction.RESET_MEMBER_AND_REJOIN
    if error in (Errors.COORDINATOR_NOT_AVAILABLE, Errors.NOT_COORDINATOR, Errors.REQUEST_TIMED_OUT,
                 Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.NETWORK_EXCEPTION):
        return HeartbeatAction.FIND_COORDINATOR
    return HeartbeatAction.FATAL


class CommitFailedException(Exception):
    """The commit cannot succeed: the member is no longer part of the group's current generation."""


class RebalanceInProgressException(Exception):
    """Retry after the rebalance completes (poll() then commit again)."""


class RetriableCommitFailedException(Exception):
    """Coordinator moved or unavailable; the commit may be retried."""


class FencedInstanceIdException(Exception):
    """Another consumer with the same group.instance.id took over."""


@dataclass(frozen=True, slots=True)
class CommitOutcome:
    exception: type[Exception] | None
    reset_generation: bool = False
    reset_member_id: bool = False
    request_rejoin: bool = False
    coordinator_unknown: bool = False


def on_commit_error(error: Errors, *, generation_unchanged: bool, state: MemberState) -> CommitOutcome:
    """ConsumerCoordinator.OffsetCommitResponseHandler: what the caller of commitSync sees."""
    if error is Errors.NONE:
        return CommitOutcome(None)
    if error in (Errors.COORDINATOR_NOT_AVAILABLE, Errors.NOT_COORDINATOR, Errors.REQUEST_TIMED_OUT):
        return CommitOutcome(RetriableCommitFailedException, coordinator_unknown=True)
    if error is Errors.COORDINATOR_LOAD_IN_PROGRESS:
        return CommitOutcome(RetriableCommitFailedException)
    if error is Errors.REBALANCE_IN_PROGRESS:
        return CommitOutcome(RebalanceInProgressException, request_rejoin=True)
    if error is Errors.FENCED_INSTANCE_ID:
        if generation_unchanged:
            return CommitOutcome(FencedInstanceIdException)
        exc = RebalanceInProgressException if state is MemberState.PREPARING_REBALANCE else CommitFailedException
        return CommitOutcome(exc)
    if error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
        if not generation_unchanged and state is MemberState.PREPARING_REBALANCE:
            return CommitOutcome(RebalanceInProgressException)
        return CommitOutcome(CommitFailedException, reset_generation=True,
                             reset_member_id=error is Errors.UNKNOWN_MEMBER_ID, request_rejoin=True)
    return CommitOutcome(Exception)


# ----------------------------------------------------------------------------
# Partition bookkeeping around a rebalance.


@dataclass(frozen=True, slots=True)
class JoinPrepare:
    """What onJoinPrepare does before JoinGroup is sent."""

    commit_first: bool  # auto-commit (sync) of consumed positions before giving anything up
    revoked: tuple[TopicPartition, ...]  # onPartitionsRevoked
    lost: tuple[TopicPartition, ...]  # onPartitionsLost (membership was lost: no commit possible)


def on_join_prepare(owned: Iterable[TopicPartition], protocol: RebalanceProtocol, *, generation_valid: bool,
                    auto_commit: bool) -> JoinPrepare:
    owned_t = tuple(owned)
    if not generation_valid:
        # The member was kicked out: its partitions may already belong to someone else.
        return JoinPrepare(False, (), owned_t)
    if protocol is RebalanceProtocol.EAGER:
        return JoinPrepare(auto_commit, owned_t, ())
    return JoinPrepare(auto_commit, (), ())


@dataclass(frozen=True, slots=True)
class JoinComplete:
    """What onJoinComplete does with the assignment from SyncGroup."""

    revoked: tuple[TopicPartition, ...]
    added: tuple[TopicPartition, ...]
    owned: tuple[TopicPartition, ...]  # after this rebalance
    rejoin: bool  # cooperative: something was revoked, so a follow-up rebalance is needed


def on_join_complete(owned: Iterable[TopicPartition], assigned: Iterable[TopicPartition],
                     protocol: RebalanceProtocol) -> JoinComplete:
    owned_s = list(owned)
    assigned_l = list(assigned)
    if protocol is RebalanceProtocol.EAGER:
        # Everything was revoked in onJoinPrepare.
        return JoinComplete((), tuple(assigned_l), tuple(assigned_l), False)
    assigned_set = set(assigned_l)
    owned_set = set(owned_s)
    revoked = tuple(tp for tp in owned_s if tp not in assigned_set)
    added = tuple(tp for tp in assigned_l if tp not in owned_set)
    return JoinComplete(revoked, added, tuple(assigned_l), bool(revoked))


def cooperative_adjust(assignment: dict[str, list[TopicPartition]],
                       owned_by: dict[TopicPartition, str]) -> dict[str, list[TopicPartition]]:
    """KIP-429: a partition changing owner is withheld from its new owner until the old one revokes it.

    CooperativeStickyAssignor.adjustAssignment does this; applying it again is
    harmless, so the leader applies it whatever the assignor did.
    """
    out: dict[str, list[TopicPartition]] = {}
    for member, tps in assignment.items():
        out[member] = [tp for tp in tps if owned_by.get(tp, member) == member]
    return out


def should_leave_on_poll_timeout(is_static: bool) -> bool:
    """max.poll.interval.ms ran out: dynamic members send LeaveGroup; static ones only stop heartbeating."""
    return not is_static
