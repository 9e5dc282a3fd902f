"""The uniform assignor picks its builder by Kafka's subscription-type rule (ModernGroup.subscriptionType):
homogeneous iff every subscribed topic name has every member, names of missing topics included."""

from __future__ import annotations

from kafka_rebalance.assign.uniform import is_homogeneous
from kafka_rebalance.assign.uniform_group import group_view
from kafka_rebalance.model import GroupSpec, MemberSubscription, TopicMetadata


def _spec(*subs: tuple[str, ...]) -> GroupSpec:
    topics = {"a": TopicMetadata("a", 4), "b": TopicMetadata("b", 2)}
    members = tuple(MemberSubscription(f"m{i}", s, (), -1, None, None) for i, s in enumerate(subs))
    return GroupSpec(topics, members)


def test_a_missing_topic_named_by_one_member_makes_the_group_heterogeneous():
    # in metadata both members see only "a"; by name one also wants "missing"
    assert not is_homogeneous(group_view(_spec(("a",), ("a", "missing"))))


def test_the_same_names_in_any_order_are_homogeneous_even_when_missing():
    assert is_homogeneous(group_view(_spec(("a", "missing"), ("missing", "a"), ("a", "missing"))))
    assert is_homogeneous(group_view(_spec(("a", "b"), ("b", "a"))))
    assert not is_homogeneous(group_view(_spec(("a", "b"), ("a",))))
    assert is_homogeneous(group_view(_spec((), ())))
