"""The consumer side of the classic protocol (Kafka's ConsumerCoordinator), as pure decisions.

What a member does is decided here; the simulator only carries it out:
which rebalance protocol the assignor list selects, what is revoked before
rejoining (eager: everything; cooperative, KIP-429: only partitions of topics
dropped from the subscription, then only what moves, followed by a second
rebalance), what a heartbeat error means (rejoin, reset generation, or nothing:
a stale response is ignored), which of Kafka's exceptions a commit error raises
and whether it is retried, and what happens when max.poll.interval.ms runs out
(a dynamic member sends LeaveGroup, a static member goes silent).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import Any, Generic, TypeVar

from ..model import TopicPartition
from .errors import Errors

P = TypeVar("P")  # a partition: TopicPartition, or the simulator's partition index


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
        raise ValueError(
            f"assignors {list(assignors)} have no commonly supported rebalance protocol"
        )
    return max(common)


class MemberState(Enum):
    """The client's view of its membership (AbstractCoordinator.MemberState)."""

    UNJOINED = "UNJOINED"
    PREPARING_REBALANCE = "PREPARING_REBALANCE"  # JoinGroup sent
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"  # SyncGroup sent
    STABLE = "STABLE"


class HeartbeatAction(Enum):
    CONTINUE = "continue"
    IGNORE = "ignore"  # an error Kafka drops (completes the heartbeat as if it succeeded): carry on as CONTINUE
    REJOIN = "rejoin"  # REBALANCE_IN_PROGRESS while STABLE: rejoin at the next poll
    RESET_GENERATION_AND_REJOIN = "reset-generation"  # ILLEGAL_GENERATION: keep member id
    RESET_MEMBER_AND_REJOIN = "reset-member"  # UNKNOWN_MEMBER_ID: new member id
    FIND_COORDINATOR = "find-coordinator"
    RETRY = "retry"  # any other error: the heartbeat thread's failHeartbeat(), next try after retry.backoff.ms
    FATAL = "fatal"  # FENCED_INSTANCE_ID: another instance with our group.instance.id


def on_heartbeat_error(
    error: Errors, *, state: MemberState = MemberState.STABLE, generation_unchanged: bool = True
) -> HeartbeatAction:
    """AbstractCoordinator.HeartbeatResponseHandler.

    `state` is the member's state when the response arrives; `generation_unchanged`
    says whether the member's generation is still the one the heartbeat was sent
    with (CoordinatorResponseHandler.generationUnchanged()). Heartbeats are sent
    during a rebalance too, so REBALANCE_IN_PROGRESS only matters to a STABLE
    member, and a generation/member error about a generation the member has
    already left is stale: both are ignored. The defaults (STABLE, unchanged)
    give the handling of a response to the current, stable generation.
    """
    if error is Errors.NONE:
        return HeartbeatAction.CONTINUE
    if error is Errors.REBALANCE_IN_PROGRESS:
        return HeartbeatAction.REJOIN if state is MemberState.STABLE else HeartbeatAction.IGNORE
    if error in (Errors.ILLEGAL_GENERATION, Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_INSTANCE_ID):
        if not generation_unchanged:
            return HeartbeatAction.IGNORE
        if error is Errors.ILLEGAL_GENERATION:
            return HeartbeatAction.RESET_GENERATION_AND_REJOIN
        if error is Errors.UNKNOWN_MEMBER_ID:
            return HeartbeatAction.RESET_MEMBER_AND_REJOIN
        return HeartbeatAction.FATAL
    if error is Errors.COORDINATOR_NOT_AVAILABLE or error is Errors.NOT_COORDINATOR:
        return HeartbeatAction.FIND_COORDINATOR  # markCoordinatorUnknown
    # GROUP_AUTHORIZATION_FAILED and "Unexpected error in heartbeat response": the heartbeat thread's onFailure
    # only fails the heartbeat (retried after the backoff); just FencedInstanceIdException stops the consumer
    return HeartbeatAction.RETRY


# Kafka's exception classes (org.apache.kafka.common.errors / clients.consumer), same hierarchy:
# `retriable` below is Kafka's `instanceof RetriableException`.


class KafkaException(Exception):
    """Kafka's base exception; raised as such for an unexpected commit error."""


class ApiException(KafkaException):
    """An error the broker returned."""


class RetriableException(ApiException):
    """A transient error: the same request may succeed if retried."""


class InvalidMetadataException(RetriableException):
    """The client's metadata is stale; refresh and retry."""


class AuthorizationException(ApiException):
    pass


class CommitFailedException(KafkaException):
    """The commit cannot succeed: the member is no longer part of the group's current generation."""


class RebalanceInProgressException(ApiException):
    """Retry after the rebalance completes (poll() then commit again)."""


class RetriableCommitFailedException(RetriableException):
    """What commitAsync's callback sees for any retriable commit error (it wraps the cause)."""


class FencedInstanceIdException(ApiException):
    """Another consumer with the same group.instance.id took over."""


class OffsetMetadataTooLarge(ApiException):
    """OFFSET_METADATA_TOO_LARGE: the commit metadata exceeds offset.metadata.max.bytes."""


class InvalidCommitOffsetSizeException(ApiException):
    """INVALID_COMMIT_OFFSET_SIZE: the commit request exceeds the coordinator's maximum batch size."""


class GroupAuthorizationException(AuthorizationException):
    pass


class UnknownTopicOrPartitionException(InvalidMetadataException):
    pass


class CoordinatorLoadInProgressException(RetriableException):
    pass


class CoordinatorNotAvailableException(RetriableException):
    pass


class NotCoordinatorException(RetriableException):
    pass


class TimeoutException(RetriableException):
    """REQUEST_TIMED_OUT (Kafka's org.apache.kafka.common.errors.TimeoutException)."""


@dataclass(frozen=True, slots=True)
class CommitOutcome:
    """What OffsetCommitResponseHandler does with one error.

    `exception` is what the commit's future fails with; when `retriable`,
    commitSync (and the auto-commit before a rejoin) sends the commit again
    after retry.backoff.ms instead of throwing, and commitAsync's callback gets
    the exception wrapped in RetriableCommitFailedException (`async_exception`).
    """

    exception: type[Exception] | None
    reset_generation: bool = False
    reset_member_id: bool = False
    request_rejoin: bool = False
    coordinator_unknown: bool = False

    @property
    def retriable(self) -> bool:
        return self.exception is not None and issubclass(self.exception, RetriableException)

    @property
    def async_exception(self) -> type[Exception] | None:
        """The exception commitAsync's OffsetCommitCallback receives (doCommitOffsetsAsync)."""
        return RetriableCommitFailedException if self.retriable else self.exception


# Errors the handler raises as their own exception (`future.raise(error)`), without further action.
_RAISED_AS_IS: dict[Errors, type[Exception]] = {
    Errors.OFFSET_METADATA_TOO_LARGE: OffsetMetadataTooLarge,
    Errors.INVALID_COMMIT_OFFSET_SIZE: InvalidCommitOffsetSizeException,
    Errors.COORDINATOR_LOAD_IN_PROGRESS: CoordinatorLoadInProgressException,  # "just retry"
    Errors.UNKNOWN_TOPIC_OR_PARTITION: UnknownTopicOrPartitionException,  # "just retry"
    Errors.GROUP_AUTHORIZATION_FAILED: GroupAuthorizationException,
}
# These also mark the coordinator unknown, so the retry first looks it up again.
_COORDINATOR_ERRORS: dict[Errors, type[Exception]] = {
    Errors.COORDINATOR_NOT_AVAILABLE: CoordinatorNotAvailableException,
    Errors.NOT_COORDINATOR: NotCoordinatorException,
    Errors.REQUEST_TIMED_OUT: TimeoutException,
}


def on_commit_error(
    error: Errors, *, generation_unchanged: bool, state: MemberState
) -> CommitOutcome:
    """ConsumerCoordinator.OffsetCommitResponseHandler for a partition's error code.

    (TOPIC_AUTHORIZATION_FAILED, which Kafka collects over all partitions into a
    TopicAuthorizationException, is not among the codes `Errors` models; its
    wire code decodes to UNKNOWN_SERVER_ERROR.)
    """
    if error is Errors.NONE:
        return CommitOutcome(None)
    raised = _RAISED_AS_IS.get(error)
    if raised is not None:
        return CommitOutcome(raised)
    raised = _COORDINATOR_ERRORS.get(error)
    if raised is not None:
        return CommitOutcome(raised, coordinator_unknown=True)
    if error is Errors.FENCED_INSTANCE_ID:
        if generation_unchanged:
            return CommitOutcome(FencedInstanceIdException)
        exc = (
            RebalanceInProgressException
            if state is MemberState.PREPARING_REBALANCE
            else CommitFailedException
        )
        return CommitOutcome(exc)
    if error is Errors.REBALANCE_IN_PROGRESS:
        return CommitOutcome(RebalanceInProgressException, request_rejoin=True)
    if error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
        if not generation_unchanged and state is MemberState.PREPARING_REBALANCE:
            return CommitOutcome(RebalanceInProgressException)
        return CommitOutcome(
            CommitFailedException,
            reset_generation=True,
            reset_member_id=error is Errors.UNKNOWN_MEMBER_ID,
            request_rejoin=True,
        )
    return CommitOutcome(KafkaException)  # "Unexpected error in commit"


# ----------------------------------------------------------------------------
# Partition bookkeeping around a rebalance.


@dataclass(frozen=True, slots=True)
class JoinPrepare(Generic[P]):
    """What onJoinPrepare does before JoinGroup is sent."""

    commit_first: bool  # auto-commit (sync) of consumed positions before giving anything up
    revoked: tuple[P, ...]  # onPartitionsRevoked
    lost: tuple[P, ...]  # onPartitionsLost (membership was lost: no commit possible)


def on_join_prepare(
    owned: Iterable[P],
    protocol: RebalanceProtocol,
    *,
    generation_valid: bool,
    auto_commit: bool,
    subscribed_topics: Collection[str] | None = None,
    topic_of: Callable[[P], str] | None = None,
) -> JoinPrepare[P]:
    """ConsumerCoordinator.onJoinPrepare.

    Eager revokes everything. Cooperative keeps its partitions through the
    rebalance, except those of topics no longer in `subscribed_topics` (the
    consumer's subscription now): they are revoked before JoinGroup, so they
    are not reported as owned. `subscribed_topics=None` means the subscription
    has not changed (nothing dropped). `topic_of` names a partition's topic
    (default: its `.topic`, for TopicPartition items).
    """
    owned_t = tuple(owned)
    if not generation_valid:
        # The member was kicked out: its partitions may already belong to someone else.
        return JoinPrepare(False, (), owned_t)
    if protocol is RebalanceProtocol.EAGER:
        return JoinPrepare(auto_commit, owned_t, ())
    if subscribed_topics is None:
        return JoinPrepare(auto_commit, (), ())
    topic: Callable[[P], str] = topic_of if topic_of is not None else _topic_attr
    subscribed = (
        subscribed_topics
        if isinstance(subscribed_topics, (set, frozenset))
        else set(subscribed_topics)
    )
    return JoinPrepare(auto_commit, tuple(tp for tp in owned_t if topic(tp) not in subscribed), ())


def _topic_attr(tp: Any) -> str:
    return tp.topic


@dataclass(frozen=True, slots=True)
class JoinComplete(Generic[P]):
    """What onJoinComplete does with the assignment from SyncGroup."""

    revoked: tuple[P, ...]
    added: tuple[P, ...]
    owned: tuple[P, ...]  # after this rebalance
    rejoin: bool  # cooperative: something was revoked, so a follow-up rebalance is needed


def on_join_complete(
    owned: Iterable[P], assigned: Iterable[P], protocol: RebalanceProtocol
) -> JoinComplete[P]:
    """ConsumerCoordinator.onJoinComplete: what is revoked, added and owned after SyncGroup."""
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


def cooperative_adjust(
    assignment: dict[str, list[TopicPartition]], owned_by: dict[TopicPartition, str]
) -> dict[str, list[TopicPartition]]:
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
