"""The KIP-848 consumer group coordinator (GroupMetadataManager.consumerGroupHeartbeat), pure.

Every transition is `(group, input, now_ms) -> (group, response, effects)`:

    heartbeat(group, ConsumerGroupHeartbeatRequest, now_ms, config)
        -> (group, ConsumerGroupHeartbeatResponse, [Effect])
    on_session_timeout(group, member_id, now_ms)                 -> (group, [Effect])
    on_rebalance_timeout(group, member_id, member_epoch, now_ms)  -> (group, [Effect])
    expire_timers(group, now_ms)  fires every due timer (a convenience for drivers)
    persisted(group) / on_loaded(group, now_ms)  coordinator failover: what the log keeps, and
                                  the timers a new coordinator arms when it loads the group
    update_topics(group, topics)  a new metadata image (e.g. partitions added)
    group_view(group)             the offsets.GroupView for OffsetCommit/Fetch validation

A heartbeat does, in Kafka's order: validate the request; leave (epoch -1,
or -2 for a static member that will come back); get or create the member
(epoch 0 joins; a static member with a released instance id takes over its
predecessor's assignment without a rebalance); apply its subscription - a new
member or a changed subscription bumps the group epoch by one; when the group
epoch is ahead of the assignment epoch, recompute every member's target with
the server-side assignor; reconcile this member one step
(consumer_group_reconcile); reschedule its session timeout. The response
carries the assignment only on a full request or when it changed.

Fencing: a member whose epoch is ahead, or behind and not the previous epoch
with a subset of its partitions, gets FENCED_MEMBER_EPOCH; an unknown member
UNKNOWN_MEMBER_ID; a member still holding revoked partitions after its
rebalance timeout, or silent for the session timeout, is removed and the
group epoch bumped, which frees its partitions for their new owners.

The coordinator never lets two members hold one partition:
`partition_owners` is updated on every member change and a conflicting update
raises `IllegalStateError` (Kafka's IllegalStateException).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..model import TopicMetadata, TopicPartition
from .consumer_group_model import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    CancelRebalanceTimeout,
    ConsumerGroup,
    ConsumerGroupConfig,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupMember,
    Effect,
    GroupEpochBumped,
    MemberJoined,
    MemberReconciled,
    MemberRemoved,
    MemberState,
    ScheduleRebalanceTimeout,
    ScheduleSessionTimeout,
    TargetAssignmentComputed,
    replace,
)
from .consumer_group_reconcile import FencedMemberEpoch, reconcile
from .consumer_group_steady import steady_heartbeat
from .consumer_group_target import (
    compute_target_assignment,
    preferred_assignor,
    subscription_metadata,
)
from .consumer_group_tx import IllegalStateError, _fence, _Tx
from .errors import Errors

__all__ = [
    "IllegalStateError",
    "heartbeat",
    "on_session_timeout",
    "on_rebalance_timeout",
    "expire_timers",
    "next_deadline",
    "persisted",
    "on_loaded",
    "update_topics",
    "group_view",
    "commit_view",
    "new_group",
]


class _Reject(Exception):
    def __init__(self, error: Errors, message: str = "") -> None:
        self.error = error
        super().__init__(message)


def new_group(group_id: str, topics: Mapping[str, TopicMetadata], now_ms: int = 0) -> ConsumerGroup:
    return ConsumerGroup(group_id, topics=dict(topics), state_timestamp_ms=now_ms)


# ---------------------------------------------------------------------------
# Validation.


def _validate(req: ConsumerGroupHeartbeatRequest, config: ConsumerGroupConfig) -> None:
    if req.group_id == "":
        raise _Reject(Errors.INVALID_REQUEST, "GroupId can't be empty.")
    if req.instance_id == "":
        raise _Reject(Errors.INVALID_REQUEST, "InstanceId can't be empty.")
    if req.rack_id == "":
        raise _Reject(Errors.INVALID_REQUEST, "RackId can't be empty.")
    e = req.member_epoch
    if e > 0 or e == LEAVE_GROUP_MEMBER_EPOCH:
        if not req.member_id:
            raise _Reject(Errors.INVALID_REQUEST, "MemberId can't be empty.")
    elif e == JOIN_GROUP_MEMBER_EPOCH:
        if req.rebalance_timeout_ms == -1:
            raise _Reject(
                Errors.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request."
            )
        if req.owned_partitions is None or req.owned_partitions:
            raise _Reject(
                Errors.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining."
            )
        if not req.subscribed_topic_names:
            raise _Reject(
                Errors.INVALID_REQUEST, "SubscribedTopicNames must be set in first request."
            )
    elif e == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if not req.member_id:
            raise _Reject(Errors.INVALID_REQUEST, "MemberId can't be empty.")
        if req.instance_id is None:
            raise _Reject(Errors.INVALID_REQUEST, "InstanceId can't be null.")
    else:
        raise _Reject(Errors.INVALID_REQUEST, "MemberEpoch is invalid.")
    if req.server_assignor is not None and req.server_assignor not in config.assignors:
        raise _Reject(
            Errors.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {req.server_assignor} is not supported."
        )


def _check_epoch(
    member: ConsumerGroupMember, epoch: int, owned: tuple[TopicPartition, ...] | None
) -> None:
    """throwIfConsumerGroupMemberEpochIsInvalid."""
    if epoch > member.member_epoch:
        raise _Reject(
            Errors.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({epoch}) "
            f"than the one known by the group coordinator ({member.member_epoch}).",
        )
    if epoch < member.member_epoch:
        subset = owned is not None and all(tp in member.assigned for tp in owned)
        if epoch != member.previous_member_epoch or not subset:
            raise _Reject(
                Errors.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a smaller member epoch "
                f"({epoch}) than the one known by the group coordinator ({member.member_epoch}).",
            )


# ---------------------------------------------------------------------------
# Heartbeat.


def heartbeat(
    group: ConsumerGroup,
    req: ConsumerGroupHeartbeatRequest,
    now_ms: int,
    config: ConsumerGroupConfig = ConsumerGroupConfig(),
    in_place: bool = False,
) -> tuple[ConsumerGroup, ConsumerGroupHeartbeatResponse, list[Effect]]:
    """Handle one ConsumerGroupHeartbeat. Errors leave the group unchanged.

    `in_place`: the caller gives `group` up and keeps only the group returned, whose maps are
    the given group's, updated where they are, and which may be the given group object itself,
    its fields updated (a heartbeat then costs what it changes, not a copy of every member and
    partition, nor a new group value per member per epoch)."""
    if in_place:
        steady = steady_heartbeat(group, req, now_ms, config)
        if steady is not None:
            return steady
    try:
        _validate(req, config)
        if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return _leave(group, req, now_ms, in_place)
        return _heartbeat(group, req, now_ms, config, in_place)
    except _Reject as r:
        return (
            group,
            ConsumerGroupHeartbeatResponse(
                r.error, req.member_id or None, req.member_epoch, error_message=str(r)
            ),
            [],
        )


def _get_member(
    tx: _Tx, req: ConsumerGroupHeartbeatRequest, member_id: str, effects: list[Effect]
) -> tuple[ConsumerGroupMember, str | None]:
    """The member before this heartbeat, and the id of a static predecessor it replaces."""
    joining = req.member_epoch == JOIN_GROUP_MEMBER_EPOCH
    if req.instance_id is None:
        member = tx.members.get(member_id)
        if member is None:
            if not joining:
                raise _Reject(
                    Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of the group."
                )
            effects.append(MemberJoined(member_id, None))
            return ConsumerGroupMember(member_id), None
        _check_epoch(member, req.member_epoch, req.owned_partitions)
        return member, None
    existing_id = tx.static_members.get(req.instance_id)
    existing = tx.members.get(existing_id) if existing_id is not None else None
    if joining:
        if existing is None:
            effects.append(MemberJoined(member_id, req.instance_id))
            return ConsumerGroupMember(member_id, instance_id=req.instance_id), None
        if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise _Reject(
                Errors.UNRELEASED_INSTANCE_ID,
                f"Static member {member_id} with instance id "
                f"{req.instance_id} cannot join the group because the instance id is owned by "
                f"{existing.member_id} member.",
            )
        # Replace the predecessor: same assignment and target, new member id, epoch 0.
        replacement = replace(
            existing, member_id=member_id, member_epoch=0, previous_member_epoch=0
        )
        target = tx.target_assignment.get(existing.member_id)
        tx.remove_member(existing.member_id)
        if target is not None:
            tx._own("target_assignment")[member_id] = target
        tx.put_member(replacement)
        effects.append(MemberRemoved(existing.member_id, "replaced"))
        effects.append(MemberJoined(member_id, req.instance_id))
        return replacement, existing.member_id
    if existing is None:
        raise _Reject(Errors.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
    if existing.member_id != member_id:
        raise _Reject(
            Errors.FENCED_INSTANCE_ID,
            f"Static member {member_id} with instance id {req.instance_id} "
            f"was fenced by member {existing.member_id}.",
        )
    _check_epoch(existing, req.member_epoch, req.owned_partitions)
    return existing, None


def _heartbeat(
    group: ConsumerGroup,
    req: ConsumerGroupHeartbeatRequest,
    now_ms: int,
    config: ConsumerGroupConfig,
    in_place: bool = False,
) -> tuple[ConsumerGroup, ConsumerGroupHeartbeatResponse, list[Effect]]:
    if len(group.members) >= config.max_size and (
        not req.member_id or req.member_id not in group.members
    ):
        raise _Reject(
            Errors.GROUP_MAX_SIZE_REACHED,
            f"The consumer group has reached its maximum capacity of {config.max_size} members.",
        )
    # a static member's rejoin changes the maps before its request may still be refused: copy
    static_join = req.instance_id is not None and req.member_epoch == JOIN_GROUP_MEMBER_EPOCH
    tx = _Tx(group, in_place and not static_join)
    effects: list[Effect] = []
    member_id = req.member_id
    if not member_id:
        counter = group.member_id_counter + 1
        tx.set(member_id_counter=counter)
        member_id = f"{group.group_id}-member-{counter}"
    member, _replaced = _get_member(tx, req, member_id, effects)

    # 1. Apply the request to the member; a changed subscription bumps the group epoch.
    updated = member
    if (
        req.instance_id is not None
        or req.rack_id is not None
        or req.rebalance_timeout_ms != -1
        or req.server_assignor is not None
        or req.subscribed_topic_names is not None
    ):
        updated = replace(
            member,
            instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(
                req.rebalance_timeout_ms
                if req.rebalance_timeout_ms != -1
                else member.rebalance_timeout_ms
            ),
            server_assignor=req.server_assignor
            if req.server_assignor is not None
            else member.server_assignor,
            subscribed_topics=(
                tuple(sorted(set(req.subscribed_topic_names)))
                if req.subscribed_topic_names is not None
                else member.subscribed_topics
            ),
        )
    bump = updated.subscribed_topics != member.subscribed_topics
    group_epoch = tx.get("group_epoch")
    if bump or tx.get("metadata_refresh_needed"):
        cause = (
            f"member {member_id} joined"
            if member.member_id not in group.members and not _replaced
            else f"member {member_id} changed its subscription"
        )
        others = [m for mid, m in tx.members.items() if mid != member_id]
        meta = subscription_metadata(others + [updated], group.topics)
        if meta != tx.get("subscription_metadata"):
            if not bump:
                cause = "topic metadata changed"
            bump = True
            tx.set(subscription_metadata=meta)
        tx.set(metadata_refresh_needed=False)
        if bump:
            group_epoch += 1
            tx.set(group_epoch=group_epoch)
            effects.append(GroupEpochBumped(group_epoch, cause))

    # 2. Recompute the target assignment when the group epoch moved ahead of it.
    if group_epoch > tx.get("assignment_epoch"):
        members_now = [updated if mid == member_id else m for mid, m in tx.members.items()]
        if member_id not in tx.members:
            members_now.append(updated)
        name = preferred_assignor(members_now, config)
        orders: dict = {}
        target_map = compute_target_assignment(
            members_now, tx.target_assignment, group.topics, name, tx.get("target_order"), orders
        )
        tx.set(target_order=orders)
        tx.target_assignment = target_map
        tx._copied.add("target_assignment")
        tx.advance_assignment_epoch(group_epoch)
        effects.append(TargetAssignmentComputed(group_epoch, name))
    target_epoch = tx.get("assignment_epoch")
    target = tx.target_assignment.get(member_id, frozenset())

    # 3. Reconcile the member one step towards its target.
    reconciled = updated
    if not updated.is_reconciled_to(target_epoch):
        owners, members = tx.partition_owners, tx.members

        def partition_epoch(tp: TopicPartition) -> int:
            owner = owners.get(tp)
            return -1 if owner is None else members[owner].member_epoch

        try:
            reconciled = reconcile(
                updated, target_epoch, target, partition_epoch, req.owned_partitions
            )
        except FencedMemberEpoch as exc:
            raise _Reject(Errors.FENCED_MEMBER_EPOCH, str(exc)) from None
        if reconciled is not updated:
            effects.append(
                MemberReconciled(
                    member_id,
                    reconciled.member_epoch,
                    reconciled.state,
                    reconciled.assigned,
                    reconciled.pending_revocation,
                )
            )
            if reconciled.state is MemberState.UNREVOKED_PARTITIONS:
                deadline = now_ms + reconciled.rebalance_timeout_ms
                reconciled = replace(reconciled, rebalance_deadline_ms=deadline)
                effects.append(
                    ScheduleRebalanceTimeout(member_id, reconciled.member_epoch, deadline)
                )
            elif reconciled.rebalance_deadline_ms is not None:
                reconciled = replace(reconciled, rebalance_deadline_ms=None)
                effects.append(CancelRebalanceTimeout(member_id))

    session_deadline = now_ms + config.session_timeout_ms
    effects.append(ScheduleSessionTimeout(member_id, session_deadline))
    tx.put_member(reconciled)
    tx.set_session_deadline(member_id, session_deadline)

    full = req.member_epoch == 0 or (
        req.rebalance_timeout_ms != -1
        and req.subscribed_topic_names is not None
        and req.owned_partitions is not None
    )
    changed = reconciled.assigned is not member.assigned and reconciled.assigned != member.assigned
    response = ConsumerGroupHeartbeatResponse(
        Errors.NONE,
        member_id,
        reconciled.member_epoch,
        config.heartbeat_interval_ms,
        reconciled.assigned if (full or changed) else None,
    )
    return tx.build(now_ms), response, effects


def _leave(
    group: ConsumerGroup, req: ConsumerGroupHeartbeatRequest, now_ms: int, in_place: bool = False
) -> tuple[ConsumerGroup, ConsumerGroupHeartbeatResponse, list[Effect]]:
    response = ConsumerGroupHeartbeatResponse(Errors.NONE, req.member_id, req.member_epoch)
    tx = _Tx(group, in_place)  # every refusal below comes before the first change
    effects: list[Effect] = []
    if req.instance_id is None:
        if req.member_id not in group.members:
            raise _Reject(
                Errors.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member of the group."
            )
        _fence(tx, req.member_id, "leave", effects)
        return tx.build(now_ms), response, effects
    existing_id = group.static_members.get(req.instance_id)
    if existing_id is None:
        raise _Reject(Errors.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
    if existing_id != req.member_id:
        raise _Reject(
            Errors.FENCED_INSTANCE_ID,
            f"Static member {req.member_id} with instance id "
            f"{req.instance_id} was fenced by member {existing_id}.",
        )
    if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        # Temporarily gone: keep its assignment (no rebalance) until it returns or its session expires.
        member = group.members[existing_id]
        tx.put_member(
            replace(
                member,
                member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                previous_member_epoch=member.previous_member_epoch,
                pending_revocation=frozenset(),
            )
        )
        effects.append(
            MemberReconciled(
                existing_id,
                LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                member.state,
                member.assigned,
                frozenset(),
            )
        )
        return (
            tx.build(now_ms),
            replace(response, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH),
            effects,
        )
    _fence(tx, existing_id, "leave", effects)
    return tx.build(now_ms), response, effects


# ---------------------------------------------------------------------------
# Timers and metadata.


def on_session_timeout(
    group: ConsumerGroup, member_id: str, now_ms: int, in_place: bool = False
) -> tuple[ConsumerGroup, list[Effect]]:
    """The member's session expired (ignored when the timer is stale). `in_place` as for heartbeat."""
    deadline = group.session_deadlines.get(member_id)
    if member_id not in group.members or deadline is None or deadline > now_ms:
        return group, []
    tx, effects = _Tx(group, in_place), list[Effect]()
    _fence(tx, member_id, "session timeout", effects)
    return tx.build(now_ms), effects


def on_rebalance_timeout(
    group: ConsumerGroup, member_id: str, member_epoch: int, now_ms: int, in_place: bool = False
) -> tuple[ConsumerGroup, list[Effect]]:
    """The member failed to revoke within its rebalance timeout: fence it, unless it moved on.
    `in_place` as for heartbeat."""
    m = group.members.get(member_id)
    if (
        m is None
        or m.member_epoch != member_epoch
        or m.rebalance_deadline_ms is None
        or m.rebalance_deadline_ms > now_ms
    ):
        return group, []
    tx, effects = _Tx(group, in_place), list[Effect]()
    _fence(tx, member_id, "rebalance timeout", effects)
    return tx.build(now_ms), effects


def expire_timers(group: ConsumerGroup, now_ms: int) -> tuple[ConsumerGroup, list[Effect]]:
    """Fire every due session and rebalance timeout, in member join order."""
    effects: list[Effect] = []
    for mid in list(group.members):
        m = group.members.get(mid)
        if m is None:
            continue
        if m.rebalance_deadline_ms is not None and m.rebalance_deadline_ms <= now_ms:
            group, eff = on_rebalance_timeout(group, mid, m.member_epoch, now_ms)
        else:
            group, eff = on_session_timeout(group, mid, now_ms)
        effects += eff
    return group, effects


def next_deadline(group: ConsumerGroup) -> int | None:
    """The earliest pending timer, for drivers that sleep until something can happen."""
    ds = [*group.session_deadlines.values()]
    ds += [
        m.rebalance_deadline_ms
        for m in group.members.values()
        if m.rebalance_deadline_ms is not None
    ]
    return min(ds) if ds else None


def persisted(group: ConsumerGroup) -> ConsumerGroup:
    """The group as its records persist it: everything but the timers, which live only in memory."""
    members = {mid: replace(m, rebalance_deadline_ms=None) for mid, m in group.members.items()}
    return replace(group, members=members, session_deadlines={})


def on_loaded(
    group: ConsumerGroup, now_ms: int, config: ConsumerGroupConfig = ConsumerGroupConfig()
) -> tuple[ConsumerGroup, list[Effect]]:
    """A new coordinator loaded the group (GroupMetadataManager.onLoaded): every member gets a fresh
    session timeout, members still revoking a fresh rebalance timeout. Members that come back within
    the session timeout carry on without a rebalance."""
    members: dict[str, ConsumerGroupMember] = {}
    sessions: dict[str, int] = {}
    effects: list[Effect] = []
    for mid, m in group.members.items():
        deadline = now_ms + config.session_timeout_ms
        effects.append(ScheduleSessionTimeout(mid, deadline))
        sessions[mid] = deadline
        rebalance_deadline = None
        if m.state is MemberState.UNREVOKED_PARTITIONS:
            rebalance_deadline = now_ms + m.rebalance_timeout_ms
            effects.append(ScheduleRebalanceTimeout(mid, m.member_epoch, rebalance_deadline))
        members[mid] = replace(m, rebalance_deadline_ms=rebalance_deadline)
    return replace(group, members=members, session_deadlines=sessions), effects


def update_topics(group: ConsumerGroup, topics: Mapping[str, TopicMetadata]) -> ConsumerGroup:
    """A new metadata image: the next heartbeat refreshes the subscription metadata (and bumps the epoch
    if a subscribed topic changed, e.g. gained partitions)."""
    changed = subscription_metadata(group.members.values(), topics) != group.subscription_metadata
    return replace(
        group, topics=dict(topics), metadata_refresh_needed=group.metadata_refresh_needed or changed
    )


def group_view(group: ConsumerGroup):
    """The offsets.GroupView used to validate OffsetCommit/OffsetFetch against member epochs."""
    from .offset_messages import GroupType, GroupView

    return GroupView(
        group.group_id,
        GroupType.CONSUMER,
        group.state.value,
        group.group_epoch,
        {mid: m.member_epoch for mid, m in group.members.items()},
        dict(group.static_members),
        protocol_type="consumer",
        state_timestamp_ms=group.state_timestamp_ms,
        subscribed_topics=group.subscribed_topic_names(),
    )


class _MemberEpochs(Mapping[str, int]):
    """member id -> member epoch, read through the group's members (no copy)."""

    __slots__ = ("_members",)

    def __init__(self, members: Mapping[str, ConsumerGroupMember]) -> None:
        self._members = members

    def __getitem__(self, member_id: str) -> int:
        return self._members[member_id].member_epoch

    def __contains__(self, member_id: object) -> bool:
        return member_id in self._members

    def __iter__(self):
        return iter(self._members)

    def __len__(self) -> int:
        return len(self._members)


def commit_view(group: ConsumerGroup):
    """group_view for validating one OffsetCommit, in O(1): the member epochs are read through the
    group (valid while it is unchanged) and the subscribed topics, which only offset expiry reads,
    are left out. A commit is validated per request; copying every member's epoch for each one made
    a group's commits cost its size."""
    from .offset_messages import GroupType, GroupView

    return GroupView(
        group.group_id,
        GroupType.CONSUMER,
        group.state.value,
        group.group_epoch,
        _MemberEpochs(group.members),
        group.static_members,
        protocol_type="consumer",
        state_timestamp_ms=group.state_timestamp_ms,
    )
