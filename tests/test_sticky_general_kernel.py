"""The sticky assignors' general path on ints (assign/kernels_sticky_general.py and its balancing,
kernels_sticky_moves.py, compiled by mypyc) gives exactly the reference output, order within each
member included.

The reference is sticky.py with `USE_COMPILED` off (member data, owned-partition resolution,
sticky_general.GeneralAssignmentBuilder as plain Python, cooperative-sticky's adjustment). Two
legs of the kernel: its source as plain Python, and the compiled build (skips, saying so, when
there is none). Each leg counts the groups it took, so a kernel that declines everything fails.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiled_legs import CountingKernel, from_source, no_compiled_leg
from kafka_rebalance.assign import kernels_sticky_general as installed
from kafka_rebalance.assign import sticky as sticky_mod
from kafka_rebalance.assign.base import AssignorFailure
from kafka_rebalance.assign.registry import get_assignor
from kafka_rebalance.assign.rounds import next_round_spec
from kafka_rebalance.model import (
    GroupSpec,
    MemberSubscription,
    TopicMetadata,
    TopicPartition,
    parse_group_scenario,
)

SOURCE = Path(installed.__file__).with_name("kernels_sticky_general.py")
MOVES_SOURCE = SOURCE.with_name("kernels_sticky_moves.py")
PURE_MOVES = from_source(MOVES_SOURCE, "kafka_rebalance.assign._pure_kernels_sticky_moves")
PURE = from_source(SOURCE, "kafka_rebalance.assign._pure_kernels_sticky_general")
# its balancing from the pure source too, not the installed (compiled) module
PURE.Members = PURE_MOVES.Members
PURE.Reassignments = PURE_MOVES.Reassignments
PURE.first_subscriber = PURE_MOVES.first_subscriber
COMPILED = installed if installed.is_compiled() else None
VECTORS = Path(__file__).resolve().parent / "vectors"
STICKY = ("sticky", "cooperative-sticky")
STALE = "(a compiled build older than kernels_sticky_general.py also differs: `make install`)"


@contextmanager
def _path(kernel: object | None) -> Iterator[None]:
    """Route sticky/cooperative-sticky through `kernel` (None: the reference path)."""
    saved = (sticky_mod.USE_COMPILED, sticky_mod.GENERAL_KERNEL, sticky_mod.kernels_sticky_general)
    try:
        sticky_mod.USE_COMPILED = kernel is not None
        sticky_mod.GENERAL_KERNEL = kernel is not None
        if kernel is not None:
            sticky_mod.kernels_sticky_general = kernel
        yield
    finally:
        (sticky_mod.USE_COMPILED, sticky_mod.GENERAL_KERNEL, sticky_mod.kernels_sticky_general) = (
            saved
        )


def _run(name: str, spec: GroupSpec, kernel: object | None):
    with _path(kernel):
        try:
            result = get_assignor(name).assign(spec)
        except (AssignorFailure, RuntimeError) as e:
            return ("failure", type(e).__name__, str(e))
    return [(m, [(tp.topic, tp.partition) for tp in tps]) for m, tps in result.items()]


def _legs() -> list[CountingKernel]:
    return [CountingKernel(PURE, "sticky_general")] + (
        [CountingKernel(COMPILED, "sticky_general")] if COMPILED is not None else []
    )


def _kind(leg: CountingKernel) -> str:
    return "compiled" if leg.module is COMPILED else "pure source"


def test_pure_source_is_plain_python() -> None:
    assert PURE.__file__ == str(SOURCE)
    assert PURE_MOVES.__file__ == str(MOVES_SOURCE)
    assert not PURE.is_compiled()
    assert PURE.Reassignments.perform.__code__.co_filename == str(MOVES_SOURCE)


def test_every_vector_round_is_identical() -> None:
    legs = _legs()
    paths = sorted((VECTORS / "assignors").glob("*.json")) + sorted(
        (VECTORS / "assignors-large").glob("*.json")
    )
    assert paths, "no parity vectors"
    for path in paths:
        doc = json.loads(path.read_text(encoding="utf-8"))
        scenario = parse_group_scenario(doc)
        for name in STICKY:
            if name not in doc["expected"]:
                continue
            spec = scenario.spec
            for rnd in range(scenario.rounds):
                reference = _run(name, spec, None)
                for leg in legs:
                    assert _run(name, spec, leg) == reference, (
                        f"{path.name} {name} round {rnd + 1} {STALE}"
                    )
                if isinstance(reference, tuple):
                    break
                with _path(None):
                    spec = next_round_spec(spec, get_assignor(name).assign(spec))
    for leg in legs:
        # the vectors' differing subscriptions without racks or conflicts (e.g. case 3's group)
        assert leg.accepted >= 50, f"{_kind(leg)}: the kernel took {leg.accepted} vector rounds"
    if COMPILED is None:
        no_compiled_leg("kernels_sticky_general is not compiled: only its source was compared")


@st.composite
def general_groups(draw) -> GroupSpec:
    """Groups the kernel takes: differing non-empty subscriptions (some naming a topic without
    partitions or absent from the metadata), no racks, each owned partition valid and owned once,
    in random order; some owned partitions of topics the owner no longer subscribes to (revoked),
    some of a topic nobody subscribes to (dropped); mixed generations (previous owners), members
    far over quota, fewer partitions than members, and members with nothing."""
    counts = draw(st.lists(st.integers(0, 7), min_size=2, max_size=5))
    topics = {f"t{j}": TopicMetadata(f"t{j}", c) for j, c in enumerate(counts)}
    names = [*topics, "absent"]
    ids = draw(
        st.lists(st.text("abcAB01-é", min_size=1, max_size=3), min_size=2, max_size=9, unique=True)
    )
    subs = [tuple(draw(st.permutations(names))[: draw(st.integers(1, len(names)))]) for _ in ids]
    if all(set(s) == set(subs[0]) for s in subs):
        subs[0] = (
            subs[0][:-1] if len(subs[0]) > 1 else (*subs[0], "t0" if "t0" not in subs[0] else "t1")
        )
    subscribed = {t for s in subs for t in s}
    partitions = [(t, p) for t in topics for p in range(topics[t].partitions)]
    partitions = draw(st.permutations(partitions))
    n = len(ids)
    owned: list[list[TopicPartition]] = [[] for _ in ids]
    for t, p in partitions:
        i = draw(st.integers(-1, n - 1) | st.integers(0, min(n - 1, 1)))
        if i >= 0 and (t in subs[i] or t not in subscribed or draw(st.integers(0, 3)) == 0):
            owned[i].append(TopicPartition(t, p))
    members = [
        MemberSubscription(mid, subs[i], tuple(owned[i]), draw(st.integers(-1, 3)))
        for i, mid in enumerate(ids)
    ]
    return GroupSpec(topics, tuple(members))


def test_generated_groups_are_taken_and_identical() -> None:
    legs = _legs()

    @settings(max_examples=150, deadline=None, database=None)
    @given(general_groups(), st.sampled_from(STICKY))
    def check(spec: GroupSpec, name: str) -> None:
        for _ in range(2):  # the group as drawn, then owning the reference's result
            reference = _run(name, spec, None)
            for leg in legs:
                assert _run(name, spec, leg) == reference, STALE
            if isinstance(reference, tuple):
                return
            with _path(None):
                spec = next_round_spec(spec, get_assignor(name).assign(spec))

    check()
    for leg in legs:
        calls = leg.accepted + leg.declined
        assert calls >= 200, f"{_kind(leg)}: the kernel was called {calls} times only"
        assert leg.accepted >= 0.8 * calls, (
            f"{_kind(leg)}: the kernel took {leg.accepted} of {calls} groups drawn for it"
        )
    if COMPILED is None:
        no_compiled_leg("kernels_sticky_general is not compiled: only its source was compared")


def _tps(*pairs: tuple[str, int]) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(t, p) for t, p in pairs)


_T = {"a": TopicMetadata("a", 4), "b": TopicMetadata("b", 3)}
M = MemberSubscription
# groups the kernel declines (the reference path answers) and one where Kafka throws
DECLINED = {
    "equal subscriptions": GroupSpec(
        _T, (M("x", ("a", "b"), _tps(("a", 0)), 1), M("y", ("b", "a"), (), 1))
    ),
    "a rack": GroupSpec(_T, (M("x", ("a",), _tps(("a", 0)), 1, "r1"), M("y", ("a", "b"), (), 1))),
    "an empty subscription": GroupSpec(
        _T, (M("x", (), _tps(("a", 0)), 1), M("y", ("a", "b"), (), 1))
    ),
    "a topic named twice": GroupSpec(
        _T, (M("x", ("a", "a"), _tps(("a", 0)), 1), M("y", ("a", "b"), (), 1))
    ),
    "a partition claimed twice": GroupSpec(
        _T, (M("x", ("a",), _tps(("a", 0)), 1), M("y", ("a", "b"), _tps(("a", 0)), 2))
    ),
    "a partition past the count": GroupSpec(
        _T, (M("x", ("a",), _tps(("a", 7)), 1), M("y", ("a", "b"), (), 1))
    ),
    "ids repeat": GroupSpec(_T, (M("x", ("a",), _tps(("a", 0)), 1), M("x", ("a", "b"), (), 1))),
}
# a previous owner (older generation) that takes no part in the balancing: Kafka throws
FIXED_PREVIOUS_OWNER = GroupSpec(
    {"a": TopicMetadata("a", 4), "s": TopicMetadata("s", 2)},
    (
        M("x", ("s",), _tps(("a", 0)), 1),
        M("y", ("a",), _tps(("a", 1), ("a", 2), ("a", 3)), 2),
        M("z", ("a",), (), 2),
    ),
)


@pytest.mark.parametrize("case", sorted(DECLINED))
@pytest.mark.parametrize("name", STICKY)
def test_declined_groups_take_the_reference_path(case: str, name: str) -> None:
    reference = _run(name, DECLINED[case], None)
    for leg in _legs():
        assert _run(name, DECLINED[case], leg) == reference, STALE
        assert leg.accepted == 0, f"{_kind(leg)} took a group with {case}"


@pytest.mark.parametrize("name", STICKY)
def test_kafka_failure_is_the_reference_failure(name: str) -> None:
    reference = _run(name, FIXED_PREVIOUS_OWNER, None)
    assert reference[0] == "failure", reference
    for leg in _legs():
        assert _run(name, FIXED_PREVIOUS_OWNER, leg) == reference, STALE


@st.composite
def larger_groups(draw) -> GroupSpec:
    """Larger groups of differing subscriptions, a heavy member owning a third of everything and
    mixed generations: the balancing then moves many partitions, often some back and forth
    (MOVED_TWICE below is one such group, fixed)."""
    counts = draw(st.lists(st.integers(1, 12), min_size=2, max_size=6))
    topics = {f"t{j}": TopicMetadata(f"t{j}", c) for j, c in enumerate(counts)}
    names = list(topics)
    n = draw(st.integers(4, 14))
    subs = [
        tuple(draw(st.permutations(names))[: draw(st.integers(1, len(names)))]) for _ in range(n)
    ]
    heavy = draw(st.integers(0, n - 1))
    owned: list[list[TopicPartition]] = [[] for _ in range(n)]
    every = [(t, p) for t, count in topics.items() for p in range(count.partitions)]
    for t, p in draw(st.permutations(every)):
        i = draw(st.sampled_from([heavy, heavy, -1]) | st.integers(0, n - 1))
        if i >= 0 and (t in subs[i] or draw(st.integers(0, 4)) == 0):
            owned[i].append(TopicPartition(t, p))
    members = tuple(
        MemberSubscription(f"c{i:02d}", subs[i], tuple(owned[i]), draw(st.sampled_from([1, 2, -1])))
        for i in range(n)
    )
    return GroupSpec(topics, members)


def test_larger_groups_equal_the_reference() -> None:
    legs = _legs()

    @settings(max_examples=40, deadline=None, database=None)
    @given(larger_groups(), st.sampled_from(STICKY))
    def check(spec: GroupSpec, name: str) -> None:
        for _ in range(2):
            reference = _run(name, spec, None)
            for leg in legs:
                assert _run(name, spec, leg) == reference, STALE
            if isinstance(reference, tuple):
                return
            with _path(None):
                spec = next_round_spec(spec, get_assignor(name).assign(spec))

    check()
    for leg in legs:
        assert leg.accepted >= 0.8 * (leg.accepted + leg.declined), _kind(leg)
    if COMPILED is None:
        no_compiled_leg("kernels_sticky_general is not compiled: only its source was compared")


# c1 owns five partitions, c0 and c3 none: the balancing moves t2-0 away and then the partition
# that came the other way back (PartitionMovements replaces and removes a record)
MOVED_TWICE = GroupSpec(
    {"t0": TopicMetadata("t0", 1), "t1": TopicMetadata("t1", 3), "t2": TopicMetadata("t2", 2)},
    (
        M("c0", ("t2", "t0"), (), 2),
        M("c1", ("t0", "t1", "t2"), _tps(("t0", 0), ("t2", 0), ("t1", 0), ("t2", 1), ("t1", 2)), 2),
        M("c2", ("t0",), (), 1),
        M("c3", ("t1", "t2", "t0"), (), 2),
    ),
)


def test_a_partition_moved_twice_equals_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    removed: list[int] = []
    real_remove = PURE_MOVES.Reassignments._remove_record

    def counting_remove(self, g):
        removed.append(g)
        return real_remove(self, g)

    monkeypatch.setattr(PURE_MOVES.Reassignments, "_remove_record", counting_remove)
    legs = _legs()
    reference = _run("sticky", MOVED_TWICE, None)
    for leg in legs:
        assert _run("sticky", MOVED_TWICE, leg) == reference, STALE
        assert leg.accepted == 1, _kind(leg)
    assert removed, "the pure leg did not move a partition twice"
    if COMPILED is None:
        no_compiled_leg("kernels_sticky_general is not compiled: only its source was compared")
