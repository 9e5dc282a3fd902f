"""The reconciliation engine, transition by transition (the cases of Kafka's CurrentAssignmentBuilderTest)."""

from __future__ import annotations

import pytest

from kafka_rebalance.group.consumer_group_model import ConsumerGroupMember, MemberState
from kafka_rebalance.group.consumer_group_reconcile import FencedMemberEpoch, reconcile
from kafka_rebalance.model import TopicPartition

S, REV, REL, UNK = (
    MemberState.STABLE,
    MemberState.UNREVOKED_PARTITIONS,
    MemberState.UNRELEASED_PARTITIONS,
    MemberState.UNKNOWN,
)


def tps(a=(), b=()) -> frozenset[TopicPartition]:
    return frozenset([TopicPartition("a", p) for p in a] + [TopicPartition("b", p) for p in b])


def member(state, epoch, prev, assigned, pending=tps()) -> ConsumerGroupMember:
    return ConsumerGroupMember(
        "m",
        member_epoch=epoch,
        previous_member_epoch=prev,
        state=state,
        assigned=assigned,
        pending_revocation=pending,
    )


def epochs(value, only_b=False):
    return lambda tp: (value if tp.topic == "b" else -1) if only_b else value


# (name, member, target epoch, target, partition epoch fn, owned, expected)
TRANSITIONS = [
    (
        "stable to stable",
        member(S, 10, 10, tps((1, 2, 3), (4, 5, 6))),
        11,
        tps((1, 2, 3), (4, 5, 6)),
        epochs(10),
        None,
        member(S, 11, 10, tps((1, 2, 3), (4, 5, 6))),
    ),
    (
        "stable to stable with new partitions",
        member(S, 10, 10, tps((1, 2, 3), (4, 5, 6))),
        11,
        tps((1, 2, 3, 4), (4, 5, 6, 7)),
        epochs(-1),
        None,
        member(S, 11, 10, tps((1, 2, 3, 4), (4, 5, 6, 7))),
    ),
    (
        "stable to unrevoked",
        member(S, 10, 10, tps((1, 2, 3), (4, 5, 6))),
        11,
        tps((2, 3, 4), (5, 6, 7)),
        epochs(-1),
        None,
        member(REV, 10, 10, tps((2, 3), (5, 6)), tps((1,), (4,))),
    ),
    (
        "stable to unreleased",
        member(S, 10, 10, tps((1, 2, 3), (4, 5, 6))),
        11,
        tps((1, 2, 3, 4), (4, 5, 6, 7)),
        epochs(10),
        None,
        member(REL, 11, 10, tps((1, 2, 3), (4, 5, 6))),
    ),
    (
        "stable to unreleased, owned without the revoked partitions",
        member(S, 10, 10, tps((1, 2, 3), (4, 5, 6))),
        11,
        tps((1, 2, 3), (4, 5, 7)),
        epochs(10, only_b=True),
        (),
        member(REL, 11, 10, tps((1, 2, 3), (4, 5))),
    ),
    (
        "unrevoked to stable",
        member(REV, 10, 10, tps((2, 3), (5, 6)), tps((1,), (4,))),
        11,
        tps((2, 3), (5, 6)),
        epochs(-1),
        tuple(tps((2, 3), (5, 6))),
        member(S, 11, 10, tps((2, 3), (5, 6))),
    ),
    (
        "unrevoked to unrevoked",
        member(REV, 10, 10, tps((2, 3), (5, 6)), tps((1,), (4,))),
        12,
        tps((3,), (6,)),
        epochs(-1),
        tuple(tps((2, 3), (5, 6))),
        member(REV, 11, 10, tps((3,), (6,)), tps((2,), (5,))),
    ),
    (
        "unrevoked to unreleased",
        member(REV, 11, 10, tps((2, 3), (5, 6))),
        11,
        tps((2, 3, 4), (5, 6, 7)),
        epochs(10),
        tuple(tps((2, 3), (5, 6))),
        member(REL, 11, 11, tps((2, 3), (5, 6))),
    ),
    (
        "unreleased to stable",
        member(REL, 11, 11, tps((2, 3), (5, 6))),
        12,
        tps((2, 3), (5, 6)),
        epochs(10),
        None,
        member(S, 12, 11, tps((2, 3), (5, 6))),
    ),
    (
        "unreleased to stable with new partitions",
        member(REL, 11, 11, tps((2, 3), (5, 6))),
        11,
        tps((2, 3, 4), (5, 6, 7)),
        epochs(-1),
        None,
        member(S, 11, 11, tps((2, 3, 4), (5, 6, 7))),
    ),
    (
        "unreleased to unreleased",
        member(REL, 11, 11, tps((2, 3), (5, 6))),
        11,
        tps((2, 3, 4), (5, 6, 7)),
        epochs(10),
        None,
        member(REL, 11, 11, tps((2, 3), (5, 6))),
    ),
    (
        "unreleased to unrevoked",
        member(REL, 11, 11, tps((2, 3), (5, 6))),
        12,
        tps((3,), (6,)),
        epochs(10),
        None,
        member(REV, 11, 11, tps((3,), (6,)), tps((2,), (5,))),
    ),
]


@pytest.mark.parametrize(
    "name,m,target_epoch,target,pe,owned,expected", TRANSITIONS, ids=[t[0] for t in TRANSITIONS]
)
def test_transition(name, m, target_epoch, target, pe, owned, expected):
    assert reconcile(m, target_epoch, target, pe, owned) == expected


def test_unchanged_member_is_returned_as_is():
    m = member(REL, 11, 11, tps((2, 3), (5, 6)))
    assert reconcile(m, 11, tps((2, 3, 4), (5, 6, 7)), epochs(10), None) is m


@pytest.mark.parametrize(
    "owned", [None, tuple(tps((1, 2, 3), (5, 6))), tuple(tps((2, 3), (4, 5, 6)))]
)
def test_remains_unrevoked_while_any_revoked_partition_is_reported(owned):
    m = member(REV, 10, 10, tps((2, 3), (5, 6)), tps((1,), (4,)))
    assert reconcile(m, 12, tps((3,), (6,)), epochs(-1), owned) is m


def test_unknown_state_fences_until_the_member_rejoins_empty():
    m = member(UNK, 11, 11, tps((3,), (6,)), tps((2,), (5,)))
    with pytest.raises(FencedMemberEpoch):
        reconcile(m, 12, tps((3,), (6,)), epochs(10), None)
    with pytest.raises(FencedMemberEpoch):
        reconcile(m, 12, tps((3,), (6,)), epochs(10), tuple(tps((3,))))
    assert reconcile(m, 12, tps((3,), (6,)), epochs(11), ()) == member(S, 12, 11, tps((3,), (6,)))
