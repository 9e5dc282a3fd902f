"""A few fingerprint scenarios on both legs in one run: the pure path (assignors' reference paths,
poll kernels, the engine, the classic group state machine, the classic coordinator and the world
and its members loaded from their sources) and the compiled one (the installed mypyc builds).

test_sim_fingerprints.py checks the whole set on whichever build is installed; this checks that the
other build gives the same event logs too, so one run of the suite covers both.
Without a fresh compiled build the compiled leg skips (fails under KAFKA_REBALANCE_REQUIRE_COMPILED=1).
"""

from __future__ import annotations

import inspect
import json

import pytest

from compiled_legs import no_compiled_leg
from kafka_rebalance import group, native, sim
from kafka_rebalance.assign import (
    kernels,
    kernels_heterogeneous,
    kernels_sticky,
    kernels_sticky_general,
    sticky,
)
from kafka_rebalance.group import classic_group, consumer_group
from kafka_rebalance.sim import (
    compiled,
    consumer_world,
    coordinator,
    member,
    member_rebalance,
    reference_sources,
    world,
    world_core,
)
from sim_fingerprint_set import FINGERPRINTS, fingerprint, scenarios

NAMES = (
    "rolling-sticky",
    "rolling-cooperative-sticky-40",
    "rolling-consumer-uniform-40",
    "rolling-consumer-static-12",  # KIP-848 static members (review 4 F7)
    "example-coordinator-failover-consumer-seed1",  # KIP-848 coordinator failover
    "rolling-static-range",  # static membership: replaced static members, no rebalance
    "example-coordinator-failover-seed1",  # mark_dead, then load from the snapshot
    "measured-env-cooperative-sticky",  # latency samples, start-up/close/append delays (F7)
    "measured-env-consumer-uniform",
    "day-eager-seed7",  # a crash, a restart and a coordinator failover in a 20-minute day
)
REFERENCE: dict[str, str] = json.loads(FINGERPRINTS.read_text())
SET = {name: doc for name, doc in scenarios() if name in NAMES}
# the reference path from its sources (sim/reference_sources.py, shared with the group replay
# test and bench/sim_group_replay.py)
PURE_POLL = reference_sources.PURE_POLL
PURE_ENGINE = reference_sources.PURE_ENGINE
ASSIGNORS = reference_sources.ASSIGNORS
PURE_GROUP = reference_sources.PURE_GROUP
PURE_CLASSIC = reference_sources.PURE_CLASSIC
PURE_SIM = reference_sources.PURE_SIM
PURE_COORDINATOR = reference_sources.PURE_COORDINATOR
PURE_MEMBER = reference_sources.PURE_MEMBER
PURE_WORLD = reference_sources.PURE_WORLD
PURE_CORE = reference_sources.PURE_CORE


def _all_compiled() -> bool:
    return (
        kernels.is_compiled()
        and kernels_heterogeneous.is_compiled()
        and kernels_sticky.is_compiled()
        and kernels_sticky_general.is_compiled()
        and sticky.GENERAL_COMPILED
        and compiled.is_compiled()
        and group.CLASSIC_COMPILED
        and sim.COORDINATOR_COMPILED
    )


def _use_pure(monkeypatch: pytest.MonkeyPatch) -> None:
    reference_sources.use_sources(monkeypatch)


def test_the_set_names_these_scenarios() -> None:
    assert sorted(SET) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("leg", ["pure", "compiled"])
def test_each_leg_gives_the_reference_fingerprint(
    leg: str, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if leg == "pure":
        _use_pure(monkeypatch)
    elif not _all_compiled():
        no_compiled_leg("the kernels have no fresh compiled build: only the pure leg ran")
    else:
        for module in ASSIGNORS:
            monkeypatch.setattr(module, "USE_COMPILED", True)
        assert member._k_fetch is compiled.KERNELS.fetch
        assert world_core.ENGINE is compiled.ENGINE
        assert coordinator.ClassicGroup is classic_group.ClassicGroup
        assert world.ClassicCoordinator is coordinator.ClassicCoordinator
        assert native.is_fresh_build(classic_group.__file__)
        assert native.is_fresh_build(consumer_group.__file__)
        assert consumer_world.cg is consumer_group
        for module in (coordinator, world_core, member_rebalance, member, world, consumer_world):
            assert native.is_fresh_build(module.__file__), module.__name__
        assert world_core.KERNELS is compiled.KERNELS
        assert compiled.is_compiled()  # not the sources a source import bound (review 6 F1)
    assert fingerprint(SET[name]) == REFERENCE[name], f"{name} on the {leg} leg"


def test_the_pure_leg_runs_every_bound_kernel_from_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """Review 5 F2: a kernel bound as a module constant (`_k_name: Final = KERNELS.name`) is taken
    from the installed sim.compiled when the module is loaded from source; `_use_pure` must swap
    every one, or the pure leg runs compiled kernels (the coordinator's store_commits did)."""
    _use_pure(monkeypatch)
    bound = [
        (module.__name__, name, value)
        for module in PURE_SIM.values()
        for name, value in vars(module).items()
        if name.startswith("_k_")
    ]
    assert {(m.rsplit(".", 1)[-1], n) for m, n, _ in bound} >= {("coordinator", "_k_store_commits")}
    for module_name, name, value in bound:
        assert inspect.isfunction(value), f"{module_name}.{name} is {value!r}"


def test_the_pure_leg_runs_the_classic_group_and_coordinator_from_source() -> None:
    """Every class of the pure leg's state machine is plain Python (its methods are functions), and
    none is the one the simulator runs by default."""
    assert PURE_CLASSIC.__file__.endswith("classic_group.py")
    for cls in (
        PURE_CLASSIC.ClassicGroup,
        PURE_CLASSIC.ClassicGroupBase,
        PURE_CLASSIC.ClassicGroupMember,
    ):
        assert inspect.isfunction(cls.__init__), cls
    assert PURE_CLASSIC.ClassicGroup is not classic_group.ClassicGroup
    assert inspect.isfunction(PURE_COORDINATOR.ClassicCoordinator.receive)
    assert PURE_WORLD.ClassicCoordinator is PURE_COORDINATOR.ClassicCoordinator
    assert inspect.isfunction(PURE_WORLD.Simulation.__init__)
    assert inspect.isfunction(PURE_MEMBER.SimMember._poll)
    assert inspect.isfunction(PURE_MEMBER.SimMember._prepare_join)  # member_rebalance's
    assert PURE_SIM["consumer_world"].ConsumerSimulation.__mro__[1] is PURE_WORLD.Simulation
    assert inspect.isfunction(PURE_SIM["consumer_world"].ConsumerCoordinator.receive)
    assert inspect.isfunction(PURE_SIM["consumer_world"].ConsumerSimMember._send_heartbeat)
    assert PURE_SIM["consumer_world"].ConsumerSimMember is not consumer_world.ConsumerSimMember
    # the KIP-848 world on the KIP-848 group's sources (their values, their state machine)
    pure_cg = PURE_SIM["consumer_world"].cg
    assert pure_cg is PURE_GROUP["consumer_group"] and pure_cg.__file__.endswith(
        "consumer_group.py"
    )
    assert inspect.isfunction(pure_cg.heartbeat) and inspect.isfunction(pure_cg._heartbeat)
    assert (
        PURE_SIM["consumer_world"].steady_answer
        is PURE_GROUP["consumer_group_steady"].steady_answer
    )
    assert inspect.isfunction(PURE_SIM["consumer_world"].steady_answer)
    pure_model = PURE_GROUP["consumer_group_model"]
    assert PURE_SIM["consumer_world"].ConsumerGroupHeartbeatRequest is (
        pure_model.ConsumerGroupHeartbeatRequest
    )
    assert inspect.isfunction(pure_model.ConsumerGroupMember.__init__)
    assert PURE_SIM["consumer_world"].cgm is PURE_GROUP["consumer_group_member"]
    assert PURE_WORLD.Simulation.__mro__[1] is PURE_CORE.WorldCore
    assert inspect.isfunction(PURE_CORE.WorldCore.send)
    assert PURE_WORLD.Simulation is not world.Simulation
    assert PURE_COORDINATOR.ClassicCoordinator is not coordinator.ClassicCoordinator
    assert PURE_CLASSIC.ClassicGroupBase is not classic_group.ClassicGroupBase
