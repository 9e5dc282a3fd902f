"""Consumer-side decisions: protocol choice, revocation, error handling (ConsumerCoordinator semantics)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.group import consumer_client as cc
from kafka_rebalance.group.consumer_client import MemberState, RebalanceProtocol
from kafka_rebalance.group.errors import Errors
from kafka_rebalance.model import TopicPartition

TP = [TopicPartition("t", i) for i in range(8)]


@pytest.mark.parametrize(
    "assignors, expected",
    [
        (["range"], RebalanceProtocol.EAGER),
        (["cooperative-sticky"], RebalanceProtocol.COOPERATIVE),
        (
            ["range", "cooperative-sticky"],
            RebalanceProtocol.EAGER,
        ),  # Kafka's default list runs eager
        (["cooperative-sticky", "range"], RebalanceProtocol.EAGER),
        (["sticky", "roundrobin"], RebalanceProtocol.EAGER),
    ],
)
def test_protocol_is_highest_common(assignors, expected):
    assert cc.choose_protocol(assignors) is expected


def test_no_assignor_is_an_error():
    with pytest.raises(ValueError):
        cc.choose_protocol([])


def test_eager_revokes_everything_before_rejoin_and_commits_first():
    prep = cc.on_join_prepare(
        TP[:3], RebalanceProtocol.EAGER, generation_valid=True, auto_commit=True
    )
    assert prep.commit_first and prep.revoked == tuple(TP[:3]) and prep.lost == ()


def test_cooperative_revokes_nothing_before_rejoin():
    prep = cc.on_join_prepare(
        TP[:3], RebalanceProtocol.COOPERATIVE, generation_valid=True, auto_commit=True
    )
    assert prep.revoked == () and prep.lost == () and prep.commit_first


def test_lost_membership_loses_partitions_without_commit():
    for proto in RebalanceProtocol:
        prep = cc.on_join_prepare(TP[:2], proto, generation_valid=False, auto_commit=True)
        assert prep.lost == tuple(TP[:2]) and prep.revoked == () and not prep.commit_first


def test_cooperative_join_complete_revokes_only_what_moves_then_rejoins():
    done = cc.on_join_complete(TP[:4], TP[2:6], RebalanceProtocol.COOPERATIVE)
    assert done.revoked == (TP[0], TP[1]) and done.added == (TP[4], TP[5]) and done.rejoin
    done = cc.on_join_complete(TP[:4], TP[:4] + TP[6:7], RebalanceProtocol.COOPERATIVE)
    assert done.revoked == () and done.added == (TP[6],) and not done.rejoin


def test_eager_join_complete_assigns_all():
    done = cc.on_join_complete((), TP[:3], RebalanceProtocol.EAGER)
    assert done.added == tuple(TP[:3]) and done.owned == tuple(TP[:3]) and not done.rejoin


def test_cooperative_adjust_withholds_partitions_changing_owner():
    owned_by = {TP[0]: "a", TP[1]: "a", TP[2]: "b"}
    out = cc.cooperative_adjust({"a": [TP[0]], "b": [TP[1], TP[2], TP[3]]}, owned_by)
    assert out == {"a": [TP[0]], "b": [TP[2], TP[3]]}


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.sampled_from(TP), st.sampled_from("abc")),
    st.dictionaries(st.sampled_from(TP), st.sampled_from("abc")),
)
def test_cooperative_adjust_never_double_owns(owned_by, target_owner):
    assignment: dict[str, list[TopicPartition]] = {m: [] for m in "abc"}
    for tp, m in target_owner.items():
        assignment[m].append(tp)
    adjusted = cc.cooperative_adjust(assignment, owned_by)
    for m, tps in adjusted.items():
        for tp in tps:
            assert (
                owned_by.get(tp, m) == m
            )  # only unowned or already-owned partitions are handed out


@pytest.mark.parametrize(
    "error, action",
    [
        (Errors.NONE, cc.HeartbeatAction.CONTINUE),
        (Errors.REBALANCE_IN_PROGRESS, cc.HeartbeatAction.REJOIN),
        (Errors.ILLEGAL_GENERATION, cc.HeartbeatAction.RESET_GENERATION_AND_REJOIN),
        (Errors.UNKNOWN_MEMBER_ID, cc.HeartbeatAction.RESET_MEMBER_AND_REJOIN),
        (Errors.NOT_COORDINATOR, cc.HeartbeatAction.FIND_COORDINATOR),
        (Errors.COORDINATOR_NOT_AVAILABLE, cc.HeartbeatAction.FIND_COORDINATOR),
        (Errors.FENCED_INSTANCE_ID, cc.HeartbeatAction.FATAL),
        # AbstractCoordinator.HeartbeatThread: any other failure only fails the heartbeat, which is retried
        (Errors.REQUEST_TIMED_OUT, cc.HeartbeatAction.RETRY),
        (Errors.COORDINATOR_LOAD_IN_PROGRESS, cc.HeartbeatAction.RETRY),
        (Errors.GROUP_AUTHORIZATION_FAILED, cc.HeartbeatAction.RETRY),
        (Errors.UNKNOWN_SERVER_ERROR, cc.HeartbeatAction.RETRY),
    ],
)
def test_heartbeat_error_handling(error, action):
    assert cc.on_heartbeat_error(error) is action


def test_commit_errors_map_to_kafka_exceptions():
    o = cc.on_commit_error(
        Errors.REBALANCE_IN_PROGRESS, generation_unchanged=True, state=MemberState.STABLE
    )
    assert (
        o.exception is cc.RebalanceInProgressException
        and o.request_rejoin
        and not o.reset_generation
    )
    assert not o.retriable
    o = cc.on_commit_error(
        Errors.ILLEGAL_GENERATION, generation_unchanged=True, state=MemberState.STABLE
    )
    assert o.exception is cc.CommitFailedException and o.reset_generation and not o.reset_member_id
    o = cc.on_commit_error(
        Errors.UNKNOWN_MEMBER_ID, generation_unchanged=True, state=MemberState.STABLE
    )
    assert o.exception is cc.CommitFailedException and o.reset_member_id
    # the member already rejoined under a new generation: it is told to finish the rebalance, not that it failed
    o = cc.on_commit_error(
        Errors.ILLEGAL_GENERATION, generation_unchanged=False, state=MemberState.PREPARING_REBALANCE
    )
    assert o.exception is cc.RebalanceInProgressException
    o = cc.on_commit_error(
        Errors.FENCED_INSTANCE_ID, generation_unchanged=True, state=MemberState.STABLE
    )
    assert o.exception is cc.FencedInstanceIdException
    o = cc.on_commit_error(
        Errors.NOT_COORDINATOR, generation_unchanged=True, state=MemberState.STABLE
    )
    assert o.exception is cc.NotCoordinatorException and o.coordinator_unknown and o.retriable
    assert (
        o.async_exception is cc.RetriableCommitFailedException
    )  # commitAsync's callback sees the wrapper
    assert (
        cc.on_commit_error(
            Errors.NONE, generation_unchanged=True, state=MemberState.STABLE
        ).exception
        is None
    )


# ConsumerCoordinator.OffsetCommitResponseHandler: (error) -> (exception raised, retriable, marks coordinator unknown)
@pytest.mark.parametrize(
    "error, exception, retriable, coordinator_unknown",
    [
        (Errors.OFFSET_METADATA_TOO_LARGE, cc.OffsetMetadataTooLarge, False, False),
        (Errors.INVALID_COMMIT_OFFSET_SIZE, cc.InvalidCommitOffsetSizeException, False, False),
        (Errors.GROUP_AUTHORIZATION_FAILED, cc.GroupAuthorizationException, False, False),
        (Errors.UNKNOWN_TOPIC_OR_PARTITION, cc.UnknownTopicOrPartitionException, True, False),
        (Errors.COORDINATOR_LOAD_IN_PROGRESS, cc.CoordinatorLoadInProgressException, True, False),
        (Errors.COORDINATOR_NOT_AVAILABLE, cc.CoordinatorNotAvailableException, True, True),
        (Errors.NOT_COORDINATOR, cc.NotCoordinatorException, True, True),
        (Errors.REQUEST_TIMED_OUT, cc.TimeoutException, True, True),
        (Errors.REBALANCE_IN_PROGRESS, cc.RebalanceInProgressException, False, False),
        (Errors.FENCED_INSTANCE_ID, cc.FencedInstanceIdException, False, False),
        (
            Errors.UNKNOWN_SERVER_ERROR,
            cc.KafkaException,
            False,
            False,
        ),  # "Unexpected error in commit"
        (Errors.INVALID_GROUP_ID, cc.KafkaException, False, False),
    ],
)
def test_commit_error_exceptions_and_retriability(error, exception, retriable, coordinator_unknown):
    o = cc.on_commit_error(error, generation_unchanged=True, state=MemberState.STABLE)
    assert o.exception is exception
    assert o.retriable is retriable
    assert o.coordinator_unknown is coordinator_unknown
    assert o.async_exception is (cc.RetriableCommitFailedException if retriable else exception)
    assert not (o.reset_generation or o.reset_member_id)


def test_commit_exception_hierarchy_matches_kafka():
    assert issubclass(cc.UnknownTopicOrPartitionException, cc.InvalidMetadataException)
    assert issubclass(cc.InvalidMetadataException, cc.RetriableException)
    assert issubclass(cc.RetriableCommitFailedException, cc.RetriableException)
    assert issubclass(cc.GroupAuthorizationException, cc.AuthorizationException)
    for exc in (
        cc.CommitFailedException,
        cc.RebalanceInProgressException,
        cc.FencedInstanceIdException,
        cc.OffsetMetadataTooLarge,
        cc.InvalidCommitOffsetSizeException,
        cc.GroupAuthorizationException,
    ):
        assert issubclass(exc, cc.KafkaException) and not issubclass(exc, cc.RetriableException)


@pytest.mark.parametrize(
    "state",
    [MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE, MemberState.UNJOINED],
)
def test_heartbeat_rebalance_in_progress_ignored_unless_stable(state):
    # AbstractCoordinator.HeartbeatResponseHandler: heartbeats continue during a rebalance
    assert (
        cc.on_heartbeat_error(Errors.REBALANCE_IN_PROGRESS, state=state)
        is cc.HeartbeatAction.IGNORE
    )
    assert (
        cc.on_heartbeat_error(Errors.REBALANCE_IN_PROGRESS, state=MemberState.STABLE)
        is cc.HeartbeatAction.REJOIN
    )


@pytest.mark.parametrize(
    "error", [Errors.ILLEGAL_GENERATION, Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_INSTANCE_ID]
)
def test_heartbeat_error_for_an_old_generation_is_ignored(error):
    assert cc.on_heartbeat_error(error, generation_unchanged=False) is cc.HeartbeatAction.IGNORE
    for state in MemberState:
        assert (
            cc.on_heartbeat_error(error, state=state, generation_unchanged=False)
            is cc.HeartbeatAction.IGNORE
        )
    assert cc.on_heartbeat_error(error, generation_unchanged=True) is not cc.HeartbeatAction.IGNORE


def test_heartbeat_defaults_keep_the_stable_current_generation_handling():
    for error in Errors:
        assert cc.on_heartbeat_error(error) is cc.on_heartbeat_error(
            error, state=MemberState.STABLE, generation_unchanged=True
        )
        assert cc.on_heartbeat_error(error) is not cc.HeartbeatAction.IGNORE


TOPICS_TP = [
    TopicPartition("a", 0),
    TopicPartition("b", 0),
    TopicPartition("a", 1),
    TopicPartition("c", 2),
]


def test_cooperative_revokes_partitions_of_unsubscribed_topics_before_rejoin():
    # ConsumerCoordinator.onJoinPrepare, COOPERATIVE: revoke owned partitions whose topic left the subscription
    prep = cc.on_join_prepare(
        TOPICS_TP,
        RebalanceProtocol.COOPERATIVE,
        generation_valid=True,
        auto_commit=True,
        subscribed_topics={"a"},
    )
    assert prep.revoked == (TopicPartition("b", 0), TopicPartition("c", 2)) and prep.lost == ()
    assert prep.commit_first
    prep = cc.on_join_prepare(
        TOPICS_TP,
        RebalanceProtocol.COOPERATIVE,
        generation_valid=True,
        auto_commit=False,
        subscribed_topics=["a", "b", "c"],
    )
    assert prep.revoked == () and not prep.commit_first


def test_unsubscribed_topics_with_partition_indexes_and_topic_of():
    names = {0: "a", 1: "b", 2: "a"}
    prep = cc.on_join_prepare(
        [0, 1, 2],
        RebalanceProtocol.COOPERATIVE,
        generation_valid=True,
        auto_commit=True,
        subscribed_topics=("a",),
        topic_of=names.__getitem__,
    )
    assert prep.revoked == (1,)


def test_subscription_change_does_not_alter_eager_or_lost():
    prep = cc.on_join_prepare(
        TOPICS_TP,
        RebalanceProtocol.EAGER,
        generation_valid=True,
        auto_commit=True,
        subscribed_topics={"a"},
    )
    assert prep.revoked == tuple(TOPICS_TP)
    prep = cc.on_join_prepare(
        TOPICS_TP,
        RebalanceProtocol.COOPERATIVE,
        generation_valid=False,
        auto_commit=True,
        subscribed_topics={"a"},
    )
    assert prep.lost == tuple(TOPICS_TP) and prep.revoked == ()


def test_poll_timeout_leave_only_for_dynamic_members():
    assert cc.should_leave_on_poll_timeout(is_static=False)
    assert not cc.should_leave_on_poll_timeout(is_static=True)
