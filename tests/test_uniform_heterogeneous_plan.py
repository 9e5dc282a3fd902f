"""The heterogeneous uniform kernel's subscription plan (kernels_heterogeneous.SubscriptionPlan):
what the members' subscriptions and the partition counts decide, built on every call.

One group after another (a changed count, a topic that appears or disappears, equal subscriptions
from new objects, another member order) and generated groups with owned partitions must each give
the reference assignment (the numpy path), never anything left from the call before. Both legs:
the kernel's source as plain Python, and the compiled build when the install made one.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from compiled_legs import from_source, no_compiled_leg
from kafka_rebalance.assign import kernels as installed_kernels
from kafka_rebalance.assign import kernels_heterogeneous as installed_heterogeneous
from kafka_rebalance.assign import uniform as uniform_mod
from kafka_rebalance.assign.base import AssignorFailure
from kafka_rebalance.model import GroupSpec, MemberSubscription, TopicMetadata, TopicPartition

SOURCE = Path(uniform_mod.__file__).with_name("kernels_heterogeneous.py")


PURE = from_source(SOURCE, "kafka_rebalance.assign._plan_kernels")
LEGS = [PURE] + (
    [installed_heterogeneous]
    if installed_heterogeneous.is_compiled() and installed_kernels.is_compiled()
    else []
)


def test_compiled_leg_present() -> None:
    if len(LEGS) == 1:
        no_compiled_leg("kernels are not compiled: only the pure-source leg was compared")


def _listed(result) -> list:
    return [(m, [(tp.topic, tp.partition) for tp in tps]) for m, tps in result.items()]


def _assigned(spec: GroupSpec) -> list | tuple:
    try:
        return _listed(uniform_mod.UniformAssignor().assign(spec))
    except AssignorFailure as e:  # both paths must fail alike
        return ("failure", type(e).__name__, str(e))


def _reference(spec: GroupSpec) -> list | tuple:
    saved = uniform_mod.USE_COMPILED
    try:
        uniform_mod.USE_COMPILED = False
        return _assigned(spec)
    finally:
        uniform_mod.USE_COMPILED = saved


def _on_leg(leg: ModuleType, spec: GroupSpec) -> list | tuple:
    saved = (uniform_mod.USE_COMPILED, uniform_mod.kernels_heterogeneous)
    try:
        uniform_mod.USE_COMPILED, uniform_mod.kernels_heterogeneous = True, leg
        return _assigned(spec)
    finally:
        uniform_mod.USE_COMPILED, uniform_mod.kernels_heterogeneous = saved


def _group(counts: dict[str, int], subs: list[tuple[str, ...]], owned=None) -> GroupSpec:
    topics = {t: TopicMetadata(t, c) for t, c in counts.items()}
    owned = owned or [()] * len(subs)
    return GroupSpec(
        topics,
        tuple(
            MemberSubscription(f"m{i}", sub, tuple(TopicPartition(t, p) for t, p in own), 1)
            for i, (sub, own) in enumerate(zip(subs, owned))
        ),
    )


SUBS = [("a", "b"), ("b", "c", "gone"), ("a", "c"), ("c",), ("a", "b", "c")]
OWNED = [[("a", 0), ("b", 3)], [("b", 0), ("c", 5)], [("a", 1)], [], [("c", 0), ("a", 0)]]


@pytest.mark.parametrize(
    "counts_then",
    [
        {"a": 4, "b": 6, "c": 8},  # the same again
        {"a": 4, "b": 2, "c": 8},  # fewer partitions of b: owned b-3 is no longer valid
        {"a": 4, "b": 6, "c": 12},  # more partitions of c
        {"a": 4, "c": 8},  # b deleted
        {"a": 4, "b": 6, "c": 8, "gone": 3},  # a subscribed name that was missing appears
    ],
)
@pytest.mark.parametrize("with_owned", [False, True])
def test_a_group_after_another_gets_its_own_assignment(counts_then, with_owned) -> None:
    for leg in LEGS:
        first = _group({"a": 4, "b": 6, "c": 8}, SUBS, OWNED if with_owned else None)
        assert _on_leg(leg, first) == _reference(first)
        then = _group(counts_then, SUBS, OWNED if with_owned else None)
        assert _on_leg(leg, then) == _reference(then), (leg, counts_then)


def test_equal_subscriptions_from_new_objects_and_another_member_order() -> None:
    for leg in LEGS:
        spec = _group({"a": 4, "b": 6, "c": 8}, SUBS, OWNED)
        assert _on_leg(leg, spec) == _reference(spec)
        copied = _group({"a": 4, "b": 6, "c": 8}, [tuple(list(s)) for s in SUBS], OWNED)
        assert _on_leg(leg, copied) == _reference(copied) == _reference(spec)
        swapped = _group({"a": 4, "b": 6, "c": 8}, [SUBS[1], SUBS[0], *SUBS[2:]], OWNED)
        assert _on_leg(leg, swapped) == _reference(swapped)


def test_no_plan_is_kept_between_calls() -> None:
    """Review 3 F1: a plan kept between calls only ever served a benchmark repeating one group."""
    for leg in LEGS:
        kept = [
            name
            for name, value in vars(leg).items()
            if isinstance(value, dict | list | set) and not name.startswith("__")
        ]
        assert kept == [], kept


@st.composite
def heterogeneous_owned_groups(draw):
    """Members subscribed to different topics, owning partitions: unbalanced (the balance pass
    takes kept partitions away), repeated within a member, past a topic's count, of topics they
    no longer name, and sometimes one partition owned by two members (the general scan)."""
    n_topics = draw(st.integers(2, 5))
    names = [f"t{j}" for j in range(n_topics)]
    counts = {t: draw(st.integers(1, 12)) for t in names}
    n = draw(st.integers(2, 7))
    subs = [
        tuple(draw(st.lists(st.sampled_from([*names, "gone"]), min_size=1, max_size=4)))
        for _ in range(n)
    ]
    pool = [(t, p) for t in names for p in range(counts[t] + 1)]
    owned = [draw(st.lists(st.sampled_from(pool), max_size=10)) for _ in range(n)]
    if not draw(st.booleans()):  # no partition owned twice across members: the unshared scan
        taken: set[tuple[str, int]] = set()
        for own in owned:
            own[:] = [tp for tp in own if tp not in taken]  # repeats within a member stay
            taken.update(own)
    return _group(counts, subs, owned)


@settings(max_examples=200, deadline=None)
@given(heterogeneous_owned_groups())
@example(  # m0 owns all 8 of t0, m1 and m2 nothing: the balance pass takes kept ones from m0
    _group(
        {"t0": 8, "t1": 2},
        [("t0", "t1"), ("t0",), ("t0", "t1")],
        [[("t0", p) for p in range(8)], [], []],
    )
)
@example(  # t0-1 owned by two members: the general scan with leftovers
    _group(
        {"t0": 4, "t1": 2},
        [("t0",), ("t0", "t1"), ("t1",)],
        [[("t0", 1)], [("t0", 1), ("t1", 0)], []],
    )
)
def test_heterogeneous_groups_with_owned_partitions_equal_the_reference(spec: GroupSpec) -> None:
    want = _reference(spec)
    for leg in LEGS:
        assert _on_leg(leg, spec) == want
        assert _on_leg(leg, spec) == want  # again: nothing left from the first call
