"""The simulated member's typed twins of onJoinPrepare / onJoinComplete give what the pure core gives,
and its request and subscription builders what the classes' own constructors give.

`sim/member_rebalance.join_prepare` and `join_complete` are what the compiled member runs in place
of `group.consumer_client.on_join_prepare` / `on_join_complete` (no interpreted call, no dataclass
per join); consumer_client stays the reference. Both legs of the member (its fresh build when
installed, and its source) are compared with it on generated inputs: every protocol, valid and
lost generations, auto-commit on and off, owned and assigned partitions that overlap, are empty,
or are equal. Without a fresh build the compiled leg skips, saying so (fails under
KAFKA_REBALANCE_REQUIRE_COMPILED=1).
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError, fields
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiled_legs import no_compiled_leg
from kafka_rebalance import native, sim
from kafka_rebalance.group import consumer_client as cc
from kafka_rebalance.group.classic_messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    SyncGroupRequest,
)
from kafka_rebalance.group.consumer_client import MemberState, RebalanceProtocol
from kafka_rebalance.group.errors import Errors
from kafka_rebalance.model import TopicPartition
from kafka_rebalance.sim import member_rebalance
from kafka_rebalance.sim.subscription import Subscription

PURE = native.sources_of("kafka_rebalance.sim", sim.COMPILED_TOGETHER)["member_rebalance"]
LEGS: list[ModuleType] = [PURE]
if sim.COORDINATOR_COMPILED:
    LEGS.append(member_rebalance)

partitions = st.lists(st.integers(0, 40), max_size=14, unique=True)
protocols = st.sampled_from(list(RebalanceProtocol))


def _legs() -> list[ModuleType]:
    return LEGS


def test_both_legs_when_built() -> None:
    if not sim.COORDINATOR_COMPILED:
        no_compiled_leg(
            "no fresh compiled build of sim/member_rebalance.py (pip install -e . with mypyc "
            "builds it): only its source was compared with consumer_client"
        )
    assert not member_rebalance.__file__.endswith(".py")
    assert PURE.__file__.endswith(".py")


@pytest.mark.parametrize("leg", _legs(), ids=lambda m: m.__file__.rsplit(".", 1)[-1])
@settings(max_examples=300, deadline=None)
@given(owned=partitions, protocol=protocols, valid=st.booleans(), auto=st.booleans())
def test_join_prepare_is_on_join_prepare(
    leg: ModuleType, owned: list[int], protocol: RebalanceProtocol, valid: bool, auto: bool
) -> None:
    ref = cc.on_join_prepare(owned, protocol, generation_valid=valid, auto_commit=auto)
    got = leg.join_prepare(list(owned), protocol is RebalanceProtocol.EAGER, valid, auto)
    assert got == (ref.commit_first, ref.revoked, ref.lost)
    assert all(type(x) is tuple for x in got[1:])


@pytest.mark.parametrize("leg", _legs(), ids=lambda m: m.__file__.rsplit(".", 1)[-1])
@settings(max_examples=300, deadline=None)
@given(owned=partitions, assigned=partitions, protocol=protocols, same=st.booleans())
def test_join_complete_is_on_join_complete(
    leg: ModuleType,
    owned: list[int],
    assigned: list[int],
    protocol: RebalanceProtocol,
    same: bool,
) -> None:
    if same:
        assigned = list(owned)
    ref = cc.on_join_complete(owned, assigned, protocol)
    got = leg.join_complete(list(owned), list(assigned), protocol is RebalanceProtocol.EAGER)
    assert got == (ref.revoked, ref.added, ref.owned, ref.rejoin)
    assert all(type(x) is tuple for x in got[:3])
    assert type(got[3]) is bool


texts = st.text(max_size=6)
maybe_text = st.none() | texts


@pytest.mark.parametrize("leg", _legs(), ids=lambda m: m.__file__.rsplit(".", 1)[-1])
@settings(max_examples=100, deadline=None)
@given(
    client=texts,
    member_id=texts,
    generation=st.integers(-1, 10**6),
    instance_id=maybe_text,
    timeouts=st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
    protocol_name=maybe_text,
    assignments=st.none() | st.dictionaries(texts, partitions, max_size=3),
)
def test_request_builders_are_the_constructors(
    leg: ModuleType,
    client: str,
    member_id: str,
    generation: int,
    instance_id: str | None,
    timeouts: tuple[int, int],
    protocol_name: str | None,
    assignments: dict[str, list[int]] | None,
) -> None:
    protocols = (("range", object()),)
    pairs = [
        (
            leg.heartbeat_request(client, member_id, generation, instance_id),
            HeartbeatRequest(client, member_id, generation, instance_id),
        ),
        (
            leg.join_request(client, member_id, protocols, *timeouts, instance_id),
            JoinGroupRequest(client, member_id, protocols, *timeouts, instance_id),
        ),
        (
            leg.sync_request(
                client, member_id, generation, instance_id, "consumer", protocol_name, assignments
            ),
            SyncGroupRequest(
                client, member_id, generation, instance_id, "consumer", protocol_name, assignments
            ),
        ),
    ]
    for got, want in pairs:
        assert type(got) is type(want)
        assert got == want and got._asdict() == want._asdict()
        assert all(a is b for a, b in zip(got, want, strict=True))


@pytest.mark.parametrize("leg", _legs(), ids=lambda m: m.__file__.rsplit(".", 1)[-1])
@settings(max_examples=100, deadline=None)
@given(
    owned=partitions,
    generation=st.integers(-1, 10**6),
    rack=maybe_text,
    user_data=st.none() | st.binary(max_size=8),
)
def test_subscription_builder_is_the_dataclass(
    leg: ModuleType, owned: list[int], generation: int, rack: str | None, user_data: bytes | None
) -> None:
    topics = ("t0", "t1")
    tps = tuple(TopicPartition("t0", p) for p in owned)
    idx = tuple(owned)
    got = leg.subscription(topics, tps, generation, rack, user_data, idx)
    want = Subscription(topics, tps, generation, rack, user_data, owned_idx=idx)
    assert type(got) is Subscription
    assert got == want and hash(got) == hash(want) and repr(got) == repr(want)
    for f in fields(Subscription):
        assert getattr(got, f.name) is getattr(want, f.name)
    with pytest.raises(FrozenInstanceError):
        got.generation = 1  # type: ignore[misc]


@pytest.mark.parametrize("leg", _legs(), ids=lambda m: m.__file__.rsplit(".", 1)[-1])
def test_heartbeat_action_is_on_heartbeat_error(leg: ModuleType) -> None:
    """Every error code, member state and generation check: the twin's action is the reference's."""
    for error in Errors:
        for state in MemberState:
            for unchanged in (True, False):
                ref = cc.on_heartbeat_error(error, state=state, generation_unchanged=unchanged)
                assert leg.heartbeat_action(error, state, unchanged) is ref, (error, state)
