"""The leader's MemberSubscriptions, built by `world_core.member_subscription` from slots (the
dataclass's __init__ and __post_init__ run as Python): the same values as the constructor gives, on
the installed build and on the source."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest

from compiled_legs import no_compiled_leg
from kafka_rebalance import native, sim
from kafka_rebalance.model import MemberSubscription, TopicPartition
from kafka_rebalance.sim import world_core

PURE_CORE = native.sources_of("kafka_rebalance.sim", sim.COMPILED_TOGETHER)["world_core"]

TP = TopicPartition
CASES: list[tuple[Any, ...]] = [
    ("m-1", ("a", "b"), (TP("a", 0), TP("b", 3)), 7, "r1", "i-1"),
    ("m-2", ["a"], [TP("a", 1)], -1, None, None),  # lists: __post_init__ makes tuples
    ("m-3", (), (), 0, None, "static"),
]


@pytest.mark.parametrize("leg", ["pure", "compiled"])
@pytest.mark.parametrize("fields", CASES)
def test_a_member_subscription_equals_the_constructors(leg: str, fields: tuple) -> None:
    if leg == "pure":
        mod = PURE_CORE
        assert mod.__file__.endswith(".py")
    else:
        if not sim.COORDINATOR_COMPILED:
            no_compiled_leg("the simulator has no fresh compiled build: only the pure leg ran")
        mod = world_core
        assert native.is_fresh_build(mod.__file__)
    got = mod.member_subscription(*fields)
    built = MemberSubscription(*fields)
    assert type(got) is MemberSubscription
    names = ("member_id", "topics", "owned", "generation", "rack", "instance_id")
    assert [getattr(got, n) for n in names] == [getattr(built, n) for n in names]
    assert type(got.topics) is tuple and type(got.owned) is tuple
    assert got == built and hash(got) == hash(built) and repr(got) == repr(built)
    assert pickle.loads(pickle.dumps(got)) == built == copy.deepcopy(got)
    with pytest.raises(AttributeError):
        got.generation = 3  # type: ignore[misc]
