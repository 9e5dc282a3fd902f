"""The KIP-848 reconciliation engine (Kafka's CurrentAssignmentBuilder), pure.

`reconcile(member, target_epoch, target, partition_epoch, owned)` moves one
member one step towards its target assignment:

- Partitions it has that the target drops become `pending_revocation`; while
  the member still reports any of them in its heartbeat, it stays in
  UNREVOKED_PARTITIONS at its current epoch (revoke before assign).
- Once it stops reporting them it moves to the next epoch, and only then
  receives new partitions - and only those no other member still holds
  (`partition_epoch(tp) == -1`); the others are withheld and the member waits in
  UNRELEASED_PARTITIONS until they are released.
- Members whose partitions are all kept go straight to the target epoch, never
  pausing.

`owned` is the member's reported partitions (None = not reported, which counts
as still owning the revoked ones, as in Kafka).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..model import TopicPartition
from .consumer_group_model import ConsumerGroupMember, MemberState, replace

_EMPTY: frozenset[TopicPartition] = frozenset()


class FencedMemberEpoch(Exception):
    """The member must drop all partitions and rejoin (FENCED_MEMBER_EPOCH)."""


def _owns_any(
    owned: Iterable[TopicPartition] | None, partitions: frozenset[TopicPartition]
) -> bool:
    if owned is None:
        return True
    return any(tp in partitions for tp in owned)


def _next(
    member: ConsumerGroupMember,
    member_epoch: int,
    target_epoch: int,
    target: frozenset[TopicPartition],
    partition_epoch: Callable[[TopicPartition], int],
    owned: Iterable[TopicPartition] | None,
) -> ConsumerGroupMember:
    # A member that reaches its whole target holds the target set itself (an equal value): the
    # target stays the same object while the assignor keeps it, so the next epochs find it
    # unchanged by identity, not by hashing every partition (consumer_group_steady too).
    current = member.assigned
    if current is target or current == target:
        # everything kept, nothing to revoke or to wait for (most members at most epochs)
        return _update(member, MemberState.STABLE, target_epoch, target, _EMPTY)
    kept = current & target
    revoke = current - kept
    pending_assign = target - kept
    unreleased = frozenset(tp for tp in pending_assign if partition_epoch(tp) != -1)
    pending_assign -= unreleased

    if revoke and _owns_any(owned, revoke):
        return _update(member, MemberState.UNREVOKED_PARTITIONS, member_epoch, kept, revoke)
    if pending_assign:
        if unreleased:
            state, assigned = MemberState.UNRELEASED_PARTITIONS, kept | pending_assign
        else:  # kept | pending_assign is the whole target
            state, assigned = MemberState.STABLE, target
        return _update(member, state, target_epoch, assigned, _EMPTY)
    if unreleased:
        return _update(member, MemberState.UNRELEASED_PARTITIONS, target_epoch, kept, _EMPTY)
    # nothing to assign, nothing withheld: kept is the whole target
    return _update(member, MemberState.STABLE, target_epoch, target, _EMPTY)


def _update(
    member: ConsumerGroupMember,
    state: MemberState,
    epoch: int,
    assigned: frozenset[TopicPartition],
    pending: frozenset[TopicPartition],
) -> ConsumerGroupMember:
    """Builder.updateMemberEpoch: previous epoch := the epoch the member had before this step."""
    if (
        state is member.state
        and epoch == member.member_epoch
        and member.member_epoch == member.previous_member_epoch
        and (assigned is member.assigned or assigned == member.assigned)
        and (pending is member.pending_revocation or pending == member.pending_revocation)
    ):
        return member  # the step changes nothing
    return replace(
        member,
        state=state,
        member_epoch=epoch,
        previous_member_epoch=member.member_epoch,
        assigned=assigned,
        pending_revocation=pending,
    )


def reconcile(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: frozenset[TopicPartition],
    partition_epoch: Callable[[TopicPartition], int],
    owned: Iterable[TopicPartition] | None,
) -> ConsumerGroupMember:
    """One step of CurrentAssignmentBuilder.build(); returns `member` itself when nothing changes."""
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
        return member
    if state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            return member
        return _next(member, member.member_epoch + 1, target_epoch, target, partition_epoch, owned)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    # UNKNOWN
    if owned is None or any(True for _ in owned):
        raise FencedMemberEpoch(
            "The consumer group member is in a unknown state. "
            "The member must abandon all its partitions and rejoin."
        )
    return _next(member, target_epoch, target_epoch, target, partition_epoch, owned)
