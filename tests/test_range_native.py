"""The range assignors' Cython kernel (assign/range_native.pyx) gives exactly what its Python twin
(`kernels.ranges_in_rank_order`, mypyc-compiled or not) and the numpy / plain-loop reference give.

Three legs per group, for range (no racks) and server-range: the reference (`USE_COMPILED` off),
the twin (`NATIVE` off) and the Cython kernel (`NATIVE` on, counted: it must take the usual
groups, not decline them). Outputs must be equal, the order within each member included, on every
parity vector round (tests/vectors/assignors and assignors-large) and on hypothesis-generated
groups with odd inputs (topics named twice, absent or with no partitions, shared and unshared
subscription tuples, static members, one subscription or many). When the install built the kernel
its leg is required (tests/compiled_legs.py); without a build it skips, saying why.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiled_legs import no_compiled_leg
from kafka_rebalance import native
from kafka_rebalance.assign import kernels, tpcache
from kafka_rebalance.assign import range as range_mod
from kafka_rebalance.assign.rounds import next_round_spec
from kafka_rebalance.assign.server_range import ServerRangeAssignor
from kafka_rebalance.model import GroupSpec, MemberSubscription, TopicMetadata, parse_group_scenario

VECTORS = Path(__file__).resolve().parent / "vectors"
INSTALLED = range_mod.NATIVE
ASSIGNORS = {"range": range_mod.RangeAssignor, "server-range": ServerRangeAssignor}


class Counted:
    """The Cython kernel with its calls counted: groups taken, and declined (NotImplemented) by
    ranges_in_rank_order; `by_rank` counts the groups ranges_in_member_info_order declined (a
    static member or a non-ASCII id: the caller then sorts in Python and calls the former)."""

    def __init__(self, module: Any) -> None:
        self.module = module
        self.taken = 0
        self.declined = 0
        self.by_rank = 0

    def ranges_in_member_info_order(self, *args: Any) -> Any:
        out = self.module.ranges_in_member_info_order(*args)
        if out is NotImplemented:
            self.by_rank += 1
        else:
            self.taken += 1
        return out

    def ranges_in_rank_order(self, *args: Any) -> Any:
        out = self.module.ranges_in_rank_order(*args)
        if out is NotImplemented:
            self.declined += 1
        else:
            self.taken += 1
        return out


@contextmanager
def _leg(kind: str, counted: Counted | None = None) -> Iterator[None]:
    saved = (range_mod.USE_COMPILED, range_mod.NATIVE)
    try:
        range_mod.USE_COMPILED = kind != "reference"
        range_mod.NATIVE = counted if kind == "native" else None
        yield
    finally:
        range_mod.USE_COMPILED, range_mod.NATIVE = saved


def _run(spec: GroupSpec, name: str, kind: str, counted: Counted | None = None) -> Any:
    with _leg(kind, counted):
        result = ASSIGNORS[name]().assign(spec)
    return [(m, [(tp.topic, tp.partition) for tp in tps]) for m, tps in result.items()]


def _same_on_every_leg(spec: GroupSpec, name: str, counted: Counted | None) -> Any:
    reference = _run(spec, name, "reference")
    assert _run(spec, name, "twin") == reference
    if counted is not None:
        assert _run(spec, name, "native", counted) == reference
    return reference


def test_the_build_is_used_when_present() -> None:
    if INSTALLED is None:
        no_compiled_leg("assign/range_native.pyx is not built (or its build is stale)")
    assert INSTALLED.__name__ == "kafka_rebalance.assign.range_native"
    assert native.is_fresh_build(INSTALLED.__file__, ".pyx")


def test_every_vector_round_is_identical() -> None:
    """Every parity vector, every round (each owns the previous round's result), both assignors
    on the three legs; the kernel must take the rounds without racks."""
    counted = Counted(INSTALLED) if INSTALLED is not None else None
    rounds = 0
    paths = sorted((VECTORS / "assignors").glob("*.json"))
    paths += sorted((VECTORS / "assignors-large").glob("*.json"))
    assert len(paths) > 200
    for path in paths:
        scenario = parse_group_scenario(json.loads(path.read_text(encoding="utf-8")))
        for name in ASSIGNORS:
            spec = scenario.spec
            for _ in range(scenario.rounds):
                rounds += 1
                _same_on_every_leg(spec, name, counted)
                if not spec.members:
                    break
                with _leg("reference"):
                    spec = next_round_spec(spec, ASSIGNORS[name]().assign(spec))
    if counted is None:
        no_compiled_leg("assign/range_native.pyx is not built: only the twin was compared")
    assert rounds >= 2 * len(paths)
    assert counted.declined == 0, vars(counted)
    assert counted.taken > rounds // 2, (vars(counted), rounds)


@st.composite
def groups(draw: st.DrawFn) -> GroupSpec:
    """Groups with one shared subscription, equal tuples, other orders, duplicates, topics absent
    from metadata or with no partitions, static members and more members than partitions."""
    n_topics = draw(st.integers(0, 6))
    meta = {f"t{j}": TopicMetadata(f"t{j}", draw(st.integers(0, 9))) for j in range(n_topics)}
    names = [*meta, "absent"]
    shared = tuple(draw(st.lists(st.sampled_from(names), max_size=6)))
    members = []
    for i in range(draw(st.integers(0, 12))):
        how = draw(st.integers(0, 3))
        if how == 0:
            subs = shared
        elif how == 1:
            subs = tuple(shared)  # equal, another object
        else:
            subs = tuple(draw(st.lists(st.sampled_from(names), max_size=6)))
        instance = f"i{draw(st.integers(0, 99)):02d}-{i}" if draw(st.integers(0, 4)) == 0 else None
        member_id = draw(st.sampled_from(["m", "M", "a", "é", "\U0001f600"])) + f"{i:02d}"
        members.append(MemberSubscription(member_id, subs, (), 1, None, instance))
    return GroupSpec(meta, tuple(members))


@given(groups(), st.sampled_from(sorted(ASSIGNORS)))
@settings(max_examples=300, deadline=None)
def test_generated_groups_are_identical(spec: GroupSpec, name: str) -> None:
    counted = Counted(INSTALLED) if INSTALLED is not None else None
    _same_on_every_leg(spec, name, counted)
    if counted is not None and spec.members:
        assert counted.taken == 1, vars(counted)


def test_odd_inputs_decline_to_the_twin() -> None:
    """A subscription that is not a tuple, or a rank list that is not the members' permutation:
    the kernel declines and nothing is half-built."""
    if INSTALLED is None:
        no_compiled_leg("assign/range_native.pyx is not built")
    meta = {"t": TopicMetadata("t", 4)}
    objects = tpcache.topic_objects
    assert (
        INSTALLED.ranges_in_rank_order(["a"], [["t"]], [0], meta, True, objects) is NotImplemented
    )
    assert (
        INSTALLED.ranges_in_member_info_order(["a"], [["t"]], [None], meta, True, objects)
        is NotImplemented
    )
    for ranks in ([0, 0], [1], [0, 2], [0, True]):
        got = INSTALLED.ranges_in_rank_order(
            ["a", "b"], [("t",), ("t",)], ranks, meta, True, objects
        )
        assert got is NotImplemented, ranks
    twin = kernels.ranges_in_rank_order(["a", "b"], [("t",), ("t",)], [1, 0], meta, True, objects)
    mine = INSTALLED.ranges_in_rank_order(["a", "b"], [("t",), ("t",)], [1, 0], meta, True, objects)
    assert mine == twin == {"a": list(objects("t", 4)[2:4]), "b": list(objects("t", 4)[:2])}


@pytest.mark.parametrize("n_members", [1, 2_000])
def test_nothing_leaks_or_is_kept(n_members: int) -> None:
    """The kernel keeps no reference to its inputs or results between calls."""
    if INSTALLED is None:
        no_compiled_leg("assign/range_native.pyx is not built")
    import sys

    subs = tuple(f"t{j}" for j in range(10))
    meta = {t: TopicMetadata(t, 30) for t in subs}
    ids = [f"m{i:04d}" for i in range(n_members)]
    args = (ids, [subs] * n_members, list(range(n_members)), meta, True, tpcache.topic_objects)
    by_info = (ids, [subs] * n_members, [None] * n_members, meta, True, tpcache.topic_objects)
    first = INSTALLED.ranges_in_rank_order(*args)
    assert INSTALLED.ranges_in_member_info_order(*by_info) == first
    del first
    before = sys.getrefcount(subs), sys.getrefcount(ids[0])
    for _ in range(20):
        INSTALLED.ranges_in_rank_order(*args)
        INSTALLED.ranges_in_member_info_order(*by_info)
    assert (sys.getrefcount(subs), sys.getrefcount(ids[0])) == before


_ASCII_IDS = st.text(alphabet=st.sampled_from("\x00\x01 !09AZaz~\x7f"), max_size=4)


@given(
    st.lists(
        st.one_of(_ASCII_IDS, st.sampled_from(["m", "m0", "m00", "m1", "é", "\U0001f600"])),
        max_size=40,
    ),
    st.booleans(),
)
@settings(max_examples=400, deadline=None)
def test_member_info_order_in_c_is_the_twins(ids: list[str], sorted_first: bool) -> None:
    """member_info_ranks gives `_member_info_indices`'s order for ASCII ids (ties, prefixes, ids
    already in order or not, control characters) and declines the rest: a non-ASCII id, a static
    member, a str subclass."""
    if INSTALLED is None:
        no_compiled_leg("assign/range_native.pyx is not built")
    if sorted_first:
        ids = sorted(ids)
    none = [None] * len(ids)
    twin = list(range_mod._member_info_indices(tuple(ids), tuple(none)))
    got = INSTALLED.member_info_ranks(list(ids), none)
    if all(map(str.isascii, ids)):
        assert got == twin
    else:
        assert got is NotImplemented
    if ids:
        static = [*none[:-1], "i"]
        assert INSTALLED.member_info_ranks(list(ids), static) is NotImplemented

        class Id(str):
            pass

        assert INSTALLED.member_info_ranks([Id(ids[0]), *ids[1:]], none) is NotImplemented
    assert INSTALLED.member_info_ranks(list(ids), [*none, None]) is NotImplemented


def test_member_info_order_in_c_on_the_harness_shapes() -> None:
    """2,000 ids in order, reversed and shuffled (the merge sort's passes), as the twin orders them."""
    if INSTALLED is None:
        no_compiled_leg("assign/range_native.pyx is not built")
    import random

    ids = [f"c{i:04d}" for i in range(2_000)]
    for order in (ids, ids[::-1], random.Random(7).sample(ids, len(ids))):
        none = [None] * len(order)
        twin = list(range_mod._member_info_indices(tuple(order), tuple(none)))
        assert INSTALLED.member_info_ranks(list(order), none) == twin
