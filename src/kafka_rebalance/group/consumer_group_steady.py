"""The KIP-848 coordinator's commonest heartbeats, answered in place (consumer_group.heartbeat with
in_place=True tries this first).

In a rolling restart nearly every heartbeat is one of two kinds: a member reconciled to a settled
target saying it is alive, or a stable member moving to a new epoch whose target is what it
already has (every member, once per epoch). Kafka's GroupMetadataManager handles both by updating
the member record in its timeline maps; here they skip the general transaction (`_Tx`) and the
reconciliation's set algebra, and cost a member update and, for the new epoch, its partitions'
epochs. Anything else returns None and goes through consumer_group._heartbeat.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final, cast

from ..model import TopicPartition
from .consumer_group_model import (
    CancelRebalanceTimeout,
    ConsumerGroup,
    ConsumerGroupConfig,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupMember,
    Effect,
    MemberReconciled,
    MemberState,
    ScheduleSessionTimeout,
)
from .errors import Errors

__all__ = [
    "NOT_STEADY",
    "SteadyAnswer",
    "STEADY_ALIVE",
    "STEADY_MOVED",
    "STEADY_MOVED_CANCEL",
    "steady_answer",
    "steady_heartbeat",
]

_NOTHING: frozenset[TopicPartition] = frozenset()
_NONE: Final = Errors.NONE  # (read once: a compiled build reads an enum member of another
# module's class through the generic attribute lookup)
_set_field = object.__setattr__  # a frozen dataclass's field, on the group given up (in place)


class SteadyAnswer(IntEnum):
    """What steady_answer did (the answer is group.answers[member_id]; the session deadline is
    now_ms plus the configured session timeout). Negative: not a steady heartbeat."""

    NOT_STEADY = -1  # neither kind: nothing changed, `_heartbeat` must run
    ALIVE = 0  # a reconciled member's heartbeat: its session deadline moved
    MOVED = 1  # a stable member moved to the new epoch with the target it has
    MOVED_CANCEL = 2  # the same, and the member's rebalance timeout is cancelled


# (Final: a compiled build reads them as constants, not from the module's dict per heartbeat)
NOT_STEADY: Final = SteadyAnswer.NOT_STEADY
STEADY_ALIVE: Final = SteadyAnswer.ALIVE
STEADY_MOVED: Final = SteadyAnswer.MOVED
STEADY_MOVED_CANCEL: Final = SteadyAnswer.MOVED_CANCEL


def steady_heartbeat(
    group: ConsumerGroup,
    req: ConsumerGroupHeartbeatRequest,
    now_ms: int,
    config: ConsumerGroupConfig,
) -> tuple[ConsumerGroup, ConsumerGroupHeartbeatResponse, list[Effect]] | None:
    """The two heartbeats most of a group's are, in place, without `_heartbeat`'s transaction: a
    member reconciled to a settled target (only its session deadline moves), and a stable member
    whose target at a new epoch is what it has (it moves to that epoch, its partitions' epochs
    with it: every member, once per epoch). None when any step of `_heartbeat` could do more (a
    field sent, an epoch to check, a target to compute, partitions to move): that path then runs.
    The group, answer and effects are the ones `_heartbeat` gives (tests/test_consumer_group_fast.py)."""
    done = steady_answer(group, req, now_ms, config)
    if done < 0:
        return None
    member_id = req.member_id
    response = group.answers[member_id]
    deadline = ScheduleSessionTimeout(member_id, now_ms + config.session_timeout_ms)
    if done == STEADY_ALIVE:
        return group, response, [deadline]
    effects: list[Effect] = [
        MemberReconciled(
            member_id,
            response.member_epoch,
            MemberState.STABLE,
            group.members[member_id].assigned,
            _NOTHING,
        )
    ]
    if done == STEADY_MOVED_CANCEL:
        effects.append(CancelRebalanceTimeout(member_id))
    effects.append(deadline)
    return group, response, effects


def steady_answer(
    group: ConsumerGroup,
    req: ConsumerGroupHeartbeatRequest,
    now_ms: int,
    config: ConsumerGroupConfig,
) -> SteadyAnswer:
    """`steady_heartbeat`'s work without building its effects (a driver that carries them out
    itself, the simulator's coordinator, asks this: every heartbeat saves the effect objects it
    would only unpack): which kind it was (STEADY_ALIVE, STEADY_MOVED, STEADY_MOVED_CANCEL; the
    answer is `group.answers[req.member_id]`, the session deadline `now_ms` plus
    `config.session_timeout_ms`) or NOT_STEADY, when nothing was changed."""
    if (
        req.member_epoch <= 0
        or req.rebalance_timeout_ms != -1
        or req.subscribed_topic_names is not None
        or req.rack_id is not None
        or req.server_assignor is not None
        or not req.group_id
        or not req.member_id
        or group.metadata_refresh_needed
        or group.unreconciled is None
    ):
        return NOT_STEADY
    member_id = req.member_id
    # the group's maps are dicts (new_group and every update make them so): read and written
    # through the compiled dict operations, not generic Mapping method calls
    if type(group.members) is not dict or type(group.answers) is not dict:
        return NOT_STEADY
    members = cast(dict[str, ConsumerGroupMember], group.members)
    member = members.get(member_id)
    epoch = group.assignment_epoch
    if (
        member is None
        or member.member_epoch != req.member_epoch
        or member.state is not MemberState.STABLE
        or group.group_epoch != epoch
    ):
        return NOT_STEADY
    instance_id, static_id = req.instance_id, member.instance_id
    if (instance_id is not None and instance_id != static_id) or (
        static_id is not None and group.static_members.get(static_id) != member_id
    ):
        return NOT_STEADY
    moved = member.member_epoch != epoch
    target = _NOTHING
    if moved:
        # reconcile(): a stable member at an older epoch whose target is what it has
        assigned = member.assigned
        targets = group.target_assignment
        target = (
            cast(dict[str, frozenset[TopicPartition]], targets).get(member_id, _NOTHING)
            if type(targets) is dict
            else targets.get(member_id, _NOTHING)
        )
        if member.pending_revocation or not (target is assigned or target == assigned):
            return NOT_STEADY
    # steady from here on: the plain answer at `epoch` is put in `group.answers` unless the one
    # there says the same (an answer is a value: the one given last time is handed out again),
    # and the session deadline moves (written only on a steady path: NOT_STEADY changes nothing)
    answers = cast(dict[str, ConsumerGroupHeartbeatResponse], group.answers)
    interval = config.heartbeat_interval_ms
    response = answers.get(member_id)
    if (
        response is None
        or response.member_epoch != epoch
        or response.heartbeat_interval_ms != interval
    ):
        answers[member_id] = ConsumerGroupHeartbeatResponse(_NONE, member_id, epoch, interval, None)
    deadlines = group.session_deadlines
    deadline = now_ms + config.session_timeout_ms
    if type(deadlines) is dict:
        cast(dict[str, int], deadlines)[member_id] = deadline
    else:
        deadlines[member_id] = deadline  # type: ignore[index]
    if not moved:
        return STEADY_ALIVE
    # the member at the new epoch, built field by field (what replace() gives, without its
    # generic field mapping: every member once per epoch); its assignment is the target set
    # itself (equal: as consumer_group_reconcile hands it on)
    members[member_id] = ConsumerGroupMember(
        member.member_id,
        epoch,
        member.member_epoch,
        MemberState.STABLE,
        static_id,
        member.rack_id,
        member.rebalance_timeout_ms,
        member.subscribed_topics,
        member.server_assignor,
        member.client_id,
        target,
        _NOTHING,
        None,
    )
    # the group itself is updated in place too (the caller gave it up: its maps already are):
    # a group value per member per epoch was most of this path's cost
    # Its state was Reconciling (a member, the epochs equal, this member unreconciled) unless the
    # group is deleted (Dead either way); it turns Stable when this was the last unreconciled one.
    unreconciled = group.unreconciled
    _set_field(group, "unreconciled", unreconciled - 1)
    if unreconciled == 1 and not group.deleted:
        _set_field(group, "state_timestamp_ms", now_ms)
    return STEADY_MOVED if member.rebalance_deadline_ms is None else STEADY_MOVED_CANCEL
