"""The classic group's subscribed topics (group/subscribed_topics.py through `ClassicGroup`): computed at
each generation from subscription objects or wire bytes, unknown for another protocol type or
unparsable bytes, and kept, emptied or recomputed as the group moves and loads."""

from __future__ import annotations

from classic_group_driver import (
    Driver,
    one,
)
from kafka_rebalance.group.classic_group import ClassicGroup
from kafka_rebalance.group.classic_messages import (
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from kafka_rebalance.group.classic_state import ClassicGroupState as S


def _sub(*topics: str) -> object:
    from kafka_rebalance.assign.protocol import Subscription

    return Subscription(tuple(topics))


def _wire(*topics: str, version: int = 3) -> bytes:
    from kafka_rebalance.assign.protocol import Subscription, encode_subscription

    return encode_subscription(Subscription(tuple(topics)), version)


def _static_group(metas: list[object], protocol_type: str = "consumer") -> tuple[Driver, list[str]]:
    d = Driver()
    for i, meta in enumerate(metas):
        d.apply(
            d.g.join(
                JoinGroupRequest(
                    f"c{i}", "", (("range", meta),), 45_000, 300_000, f"i{i}", protocol_type
                ),
                0,
            )
        )
    d.advance(10_000)
    assert d.g.state is S.COMPLETING_REBALANCE
    return d, [d.g.static_members[f"i{i}"] for i in range(len(metas))]


def test_subscribed_topics_computed_at_each_generation_from_objects_or_wire_bytes():
    """ClassicGroup.computeSubscribedTopics at initNextGeneration: the union of the members' topics in
    the selected protocol's metadata (a decoded subscription, or ConsumerProtocolSubscription bytes of
    any version read as version 0)."""
    d, ids = _static_group([_sub("a", "b"), _wire("c"), _wire("b", version=0)])
    assert d.g.subscribed_topics == frozenset({"a", "b", "c"})
    assert Driver().g.subscribed_topics is None  # a new group knows nothing
    # a member changes its subscription: the next generation recomputes
    d.apply(d.g.sync(SyncGroupRequest("c0", ids[0], 1, "i0", assignments={}), 10_000))
    d.apply(
        d.g.join(
            JoinGroupRequest("c0", ids[0], (("range", _sub("z")),), 45_000, 300_000, "i0"), 11_000
        )
    )
    assert d.g.state is S.PREPARING_REBALANCE and d.g.subscribed_topics == frozenset(
        {"a", "b", "c"}
    )
    d.apply(
        d.g.join(
            JoinGroupRequest("c1", ids[1], (("range", _wire("c")),), 45_000, 300_000, "i1"), 11_001
        )
    )
    d.apply(
        d.g.join(
            JoinGroupRequest("c2", ids[2], (("range", _wire("b")),), 45_000, 300_000, "i2"), 11_002
        )
    )
    assert d.g.generation_id == 2 and d.g.subscribed_topics == frozenset({"z", "b", "c"})


def test_subscribed_topics_unknown_when_not_consumer_protocol_or_unparsable():
    d, _ = _static_group(
        [_wire("a"), b"\x00\x00\x00\x00\x00\x05\x00\x01a"]
    )  # 5 topics promised, 1 present
    assert d.g.subscribed_topics is None  # Kafka logs the SchemaException: topics unknown
    d, _ = _static_group(
        [_wire("a", version=0)[:-4]]
    )  # version 0 without its user data: buffer underflow
    assert d.g.subscribed_topics is None
    d, _ = _static_group([_wire("a"), _wire("b")], protocol_type="connect")
    assert d.g.subscribed_topics is None


def test_subscribed_topics_empty_when_empty_kept_when_dead_and_between_generations():
    d, ids = _static_group([_sub("a"), _sub("b")])
    d.apply(d.g.sync(SyncGroupRequest("c0", ids[0], 1, "i0", assignments={}), 10_000))
    # a static member rejoining in Stable without changing the selected protocol updates its metadata
    # but starts no generation: the subscribed topics are not recomputed
    fx = d.apply(
        d.g.join(
            JoinGroupRequest("c1-new", "", (("range", _sub("x")),), 45_000, 300_000, "i1"), 20_000
        )
    )
    assert one(fx, JoinGroupResponse).generation_id == 1 and d.g.state is S.STABLE
    assert d.g.subscribed_topics == frozenset({"a", "b"})
    # everyone leaves: the next generation is Empty and subscribes to nothing (not "unknown")
    d.apply(d.g.leave(LeaveGroupRequest("c0", (("", "i0"), ("", "i1"))), 30_000))
    assert d.g.state is S.EMPTY and d.g.generation_id == 2 and d.g.subscribed_topics == frozenset()
    d2, ids2 = _static_group([_sub("a")])
    d2.apply(d2.g.mark_dead(20_000))
    assert d2.g.state is S.DEAD and d2.g.subscribed_topics == frozenset({"a"})  # Dead keeps them


def test_subscribed_topics_recomputed_on_load():
    d, ids = _static_group([_wire("a"), _wire("b", "c")])
    d.apply(d.g.sync(SyncGroupRequest("c0", ids[0], 1, "i0", assignments={}), 10_000))
    g2, _ = ClassicGroup.load(d.g.snapshot(), None, 50_000)
    assert g2.state is S.STABLE and g2.subscribed_topics == frozenset({"a", "b", "c"})
    d.apply(d.g.leave(LeaveGroupRequest("c0", (("", "i0"), ("", "i1"))), 60_000))
    g3, _ = ClassicGroup.load(d.g.snapshot(), None, 70_000)
    assert g3.state is S.EMPTY and g3.subscribed_topics == frozenset()
    assert g3.protocol_type == "consumer"
