"""The simulated member's typed twins of onJoinPrepare / onJoinComplete give what the pure core gives.

`sim/member_rebalance.join_prepare` and `join_complete` are what the compiled member runs in place
of `group.consumer_client.on_join_prepare` / `on_join_complete` (no interpreted call, no dataclass
per join); consumer_client stays the reference. Both legs of the member (its fresh build when
installed, and its source) are compared with it on generated inputs: every protocol, valid and
lost generations, auto-commit on and off, owned and assigned partitions that overlap, are empty,
or are equal. Without a fresh build the compiled leg skips, saying so (fails under
KAFKA_REBALANCE_REQUIRE_COMPILED=1).
"""

from __future__ import annotations

from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiled_legs import no_compiled_leg
from kafka_rebalance import native, sim
from kafka_rebalance.group import consumer_client as cc
from kafka_rebalance.group.consumer_client import RebalanceProtocol
from kafka_rebalance.sim import member_rebalance

PURE = native.sources_of(
    "kafka_rebalance.sim",
    ("coordinator", "world_core", "member_rebalance", "member", "world", "consumer_world"),
)["member_rebalance"]
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
