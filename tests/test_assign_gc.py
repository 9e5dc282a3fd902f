"""assign() pauses the cyclic GC for its own duration only (assign.base.gc_paused): the state the
caller had is back afterwards, also when the assignor raises, and a caller's disabled GC stays off."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from kafka_rebalance.assign import base
from kafka_rebalance.assign.registry import get_assignor
from kafka_rebalance.model import GroupSpec, MemberSubscription, TopicMetadata

PAUSED = ("uniform", "server-range", "sticky", "cooperative-sticky")


@pytest.fixture(autouse=True)
def _restore_gc() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    if enabled:
        gc.enable()
    else:
        gc.disable()


def _spec() -> GroupSpec:
    topics = {"t": TopicMetadata("t", 6)}
    return GroupSpec(topics, (MemberSubscription("a", ("t",)), MemberSubscription("b", ("t",))))


@pytest.mark.parametrize("name", PAUSED)
@pytest.mark.parametrize("enabled", [True, False])
def test_assign_restores_the_gc_state(name: str, enabled: bool) -> None:
    (gc.enable if enabled else gc.disable)()
    result = get_assignor(name).assign(_spec())
    assert sum(map(len, result.values())) == 6
    assert gc.isenabled() is enabled


@pytest.mark.parametrize("name", PAUSED)
def test_gc_is_off_inside_assign_and_back_after_an_exception(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []

    def failing(*_args: object, **_kwargs: object) -> None:
        seen.append(gc.isenabled())
        raise RuntimeError("boom")

    # GroupSpec.members is read first by every paused assign(); fail inside the paused block
    module = {
        "uniform": "kafka_rebalance.assign.uniform.UniformAssignor._assign",
        "server-range": "kafka_rebalance.assign.server_range.ranges_in_member_info_order",
        "sticky": "kafka_rebalance.assign.sticky.build_context",
        "cooperative-sticky": "kafka_rebalance.assign.sticky.build_context",
    }[name]
    if name in ("sticky", "cooperative-sticky"):
        monkeypatch.setattr("kafka_rebalance.assign.sticky.USE_COMPILED", False)
    monkeypatch.setattr(module, failing)
    gc.enable()
    with pytest.raises(RuntimeError, match="boom"):
        get_assignor(name).assign(_spec())
    assert seen == [False]
    assert gc.isenabled()


def test_gc_paused_restores_on_exception() -> None:
    gc.enable()
    with pytest.raises(ValueError), base.gc_paused():
        assert not gc.isenabled()
        raise ValueError
    assert gc.isenabled()
