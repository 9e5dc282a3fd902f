"""The compiled kernels (assign/kernels*.py, and the sticky assignors' general builder
assign/sticky_general.py, built by mypyc) give exactly the reference output.

Three paths per group: the reference (numpy / plain loops, `USE_COMPILED`
off), the kernels' Python source loaded under another name (what mypyc
compiles), and the compiled module. Outputs must be equal, order within each
member included, on every parity vector round and on generated groups with
odd inputs (duplicates, partitions past a topic's count, unknown topics,
static members). Without a compiled build the compiled leg skips, saying so.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiled_legs import CountingKernel, no_compiled_leg
from kafka_rebalance import native
from kafka_rebalance.assign import kernels as installed_kernels
from kafka_rebalance.assign import kernels_hashmap as installed_hashmap
from kafka_rebalance.assign import kernels_heterogeneous as installed_heterogeneous
from kafka_rebalance.assign import kernels_sticky as installed_sticky
from kafka_rebalance.assign import range as range_mod
from kafka_rebalance.assign import roundrobin as roundrobin_mod
from kafka_rebalance.assign import sticky as sticky_mod
from kafka_rebalance.assign import sticky_general as installed_general
from kafka_rebalance.assign import uniform as uniform_mod
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

KERNELS_SOURCE = Path(range_mod.__file__).with_name("kernels.py")
HETEROGENEOUS_SOURCE = Path(range_mod.__file__).with_name("kernels_heterogeneous.py")
STICKY_SOURCE = Path(range_mod.__file__).with_name("kernels_sticky.py")
GENERAL_SOURCE = Path(range_mod.__file__).with_name("sticky_general.py")
HASHMAP_SOURCE = Path(range_mod.__file__).with_name("kernels_hashmap.py")
VECTORS = Path(__file__).resolve().parent / "vectors"
NAMES = ("uniform", "server-range", "range", "roundrobin", "sticky", "cooperative-sticky")
MODULES = (uniform_mod, range_mod, roundrobin_mod)


def _pure(source: Path) -> ModuleType:
    """A kernels module as plain Python from its source, whatever the install built."""
    # a name inside the package: sticky_general.py imports its siblings relatively
    name = f"kafka_rebalance.assign._pure_{source.stem}"
    spec = importlib.util.spec_from_file_location(name, source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PURE = (
    _pure(KERNELS_SOURCE),
    _pure(HETEROGENEOUS_SOURCE),
    _pure(STICKY_SOURCE),
    _pure(GENERAL_SOURCE),
    _pure(HASHMAP_SOURCE),
)
for _module in PURE[1:3]:  # their helper from kernels.py: the pure one too, not the installed
    _module.sort_by_key = PURE[0].sort_by_key
COMPILED = (
    (
        installed_kernels,
        installed_heterogeneous,
        installed_sticky,
        installed_general,
        installed_hashmap,
    )
    if installed_kernels.is_compiled()
    and installed_heterogeneous.is_compiled()
    and installed_sticky.is_compiled()
    and native.is_fresh_build(installed_general.__file__)
    else None
)


Leg = tuple[ModuleType, ModuleType, ModuleType, ModuleType, ModuleType]


@contextmanager
def _path(leg: Leg | None) -> Iterator[None]:
    """Route the assignors through the kernels of `leg` (None: the reference numpy path)."""
    saved = [(m, m.USE_COMPILED, m.kernels) for m in MODULES]
    saved_heterogeneous = uniform_mod.kernels_heterogeneous
    saved_hashmap = uniform_mod.kernels_hashmap
    saved_native = uniform_mod.NATIVE
    saved_sticky = (sticky_mod.USE_COMPILED, sticky_mod.kernels_sticky, sticky_mod.general_compiled)
    saved_general_kernel = sticky_mod.GENERAL_KERNEL
    try:
        sticky_mod.USE_COMPILED = leg is not None
        # the Cython kernel has its own legs (test_uniform_native.py): off here, so the groups it
        # takes still reach the homogeneous kernel of each leg compared below
        uniform_mod.NATIVE = None
        # the general path on ints has its own legs (test_sticky_general_kernel.py): off here, so
        # the groups it takes still reach the general builder compared below
        sticky_mod.GENERAL_KERNEL = False
        if leg is not None:
            sticky_mod.kernels_sticky = leg[2]
            sticky_mod.general_compiled = leg[3]
        for m in MODULES:
            m.USE_COMPILED = leg is not None
            if leg is not None:
                m.kernels = leg[0]
        if leg is not None:
            uniform_mod.kernels_heterogeneous = leg[1]
            uniform_mod.kernels_hashmap = leg[4]
        yield
    finally:
        for m, use, k in saved:
            m.USE_COMPILED = use
            m.kernels = k
        uniform_mod.kernels_heterogeneous = saved_heterogeneous
        uniform_mod.kernels_hashmap = saved_hashmap
        uniform_mod.NATIVE = saved_native
        sticky_mod.USE_COMPILED, sticky_mod.kernels_sticky, sticky_mod.general_compiled = (
            saved_sticky
        )
        sticky_mod.GENERAL_KERNEL = saved_general_kernel


STALE = "(a compiled build older than kernels.py also differs: `make install` rebuilds it)"


def _run(name: str, spec: GroupSpec, leg: Leg | None):
    with _path(leg):
        try:
            result = get_assignor(name).assign(spec)
        except (
            AssignorFailure,
            RuntimeError,
        ) as e:  # RuntimeError: the sticky builders, as Kafka throws
            return ("failure", type(e).__name__, str(e))
    return [(m, [(tp.topic, tp.partition) for tp in tps]) for m, tps in result.items()]


def _legs() -> list[Leg]:
    return [PURE] + ([COMPILED] if COMPILED is not None else [])


def test_pure_source_is_not_the_compiled_module() -> None:
    assert not PURE[0].is_compiled()
    if COMPILED is None:
        no_compiled_leg(
            f"kernels are not compiled, or their build is stale ({installed_kernels.__file__}): "
            "`pip install -e .` builds them with mypyc when it can; only the pure leg ran"
        )
    for compiled, pure in zip(COMPILED, PURE):
        assert compiled.__file__ != pure.__file__
        assert not compiled.__file__.endswith(".py"), f"{compiled.__name__} is not compiled"
        assert native.is_fresh_build(compiled.__file__), f"{compiled.__name__}: build not fresh"
    # the assignors' own switch: the compiled general builder by default, its source as reference
    assert sticky_mod.general_compiled is installed_general
    assert sticky_mod.GENERAL_REFERENCE.__file__ == str(GENERAL_SOURCE)


def test_general_builder_runs_on_the_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    """The vectors with differing subscriptions go through the general builder on every leg, so
    the compiled one is compared with its source there, order included."""
    spec = parse_group_scenario(
        json.loads((VECTORS / "assignors-large" / "nonuniform_100c_50t_x_20p.json").read_text())
    ).spec
    for leg in _legs():
        built: list[object] = []
        real = leg[3].GeneralAssignmentBuilder

        def counting(*args, real=real, built=built):
            built.append(1)
            return real(*args)

        monkeypatch.setattr(leg[3], "GeneralAssignmentBuilder", counting)
        for name in ("sticky", "cooperative-sticky"):
            spec1 = next_round_spec(spec, get_assignor(name).assign(spec))
            _run(name, spec1, leg)
        monkeypatch.undo()
        assert len(built) >= 2


def _vector_cases() -> Iterator:
    for path in sorted((VECTORS / "assignors").glob("*.json")) + sorted(
        (VECTORS / "assignors-large").glob("*.json")
    ):
        yield pytest.param(path, id=f"{path.parent.name}/{path.stem}")


@pytest.mark.parametrize("path", list(_vector_cases()))
def test_every_vector_round_is_identical(path: Path) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    scenario = parse_group_scenario(doc)
    for name in NAMES:
        if name not in doc["expected"]:
            continue
        spec = scenario.spec
        for rnd in range(scenario.rounds):
            reference = _run(name, spec, None)
            for leg in _legs():
                assert _run(name, spec, leg) == reference, (
                    f"{path.name} {name} round {rnd + 1} {STALE}"
                )
            if isinstance(reference, tuple):
                break
            with _path(None):
                spec = next_round_spec(spec, get_assignor(name).assign(spec))
    if COMPILED is None:
        no_compiled_leg("kernels are not compiled: only the pure-source leg was compared")


# non-ASCII names too: the kernels order them as Java's String.compareTo (UTF-16 units), not by
# code point, and a metadata topic nobody subscribes to still takes part (review 6 F3)
TOPIC_NAMES = ("t0", "é1", "t2", "\U00010000", "\uffff", "ß5", "t6")


@st.composite
def groups(draw) -> GroupSpec:
    n_topics = draw(st.integers(0, len(TOPIC_NAMES)))
    picked = draw(st.permutations(TOPIC_NAMES))[:n_topics]
    topics = {t: TopicMetadata(t, draw(st.integers(0, 9))) for t in picked}
    names = list(topics) + ["absent"]
    ids = draw(st.lists(st.text("abcAB01-é", min_size=1, max_size=3), max_size=9, unique=True))
    shared = tuple(draw(st.lists(st.sampled_from(names), max_size=5)))
    equal = draw(st.booleans())
    members = []
    for mid in ids:
        subs = shared if equal else tuple(draw(st.lists(st.sampled_from(names), max_size=5)))
        # mostly partitions that exist (some repeated, some of other members); rarely odd ones
        entries = draw(st.lists(st.tuples(st.sampled_from(names), st.integers(0, 4)), max_size=8))
        if draw(st.integers(0, 9)) == 0:
            entries.append((draw(st.sampled_from(names)), draw(st.sampled_from([-1, 9, 10]))))
        owned = tuple(TopicPartition(t, p) for t, p in entries)
        members.append(
            MemberSubscription(
                mid,
                subs,
                owned,
                draw(st.integers(-1, 3)),
                None,
                draw(st.sampled_from([None, None, f"i-{mid}"])),
            )
        )
    return GroupSpec(topics, tuple(members))


def _tps(*pairs: tuple[str, int]) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(t, p) for t, p in pairs)


T2 = {"t0": TopicMetadata("t0", 4), "t1": TopicMetadata("t1", 3)}
EDGE_CASES = {
    # a member listing one partition twice keeps it once and still gets its quota
    "duplicate": GroupSpec(
        T2,
        (
            MemberSubscription("a", ("t0", "t1"), _tps(("t0", 1), ("t0", 1))),
            MemberSubscription("b", ("t0", "t1"), _tps(("t1", 0))),
        ),
    ),
    # over quota: Java's hash order decides what it keeps; the rest is dealt after the free ones
    "over quota": GroupSpec(
        T2,
        (
            MemberSubscription("a", ("t1", "t0"), _tps(*(("t0", p) for p in range(4)))),
            MemberSubscription("b", ("t1", "t0"), ()),
            MemberSubscription("c", ("t1", "t0"), _tps(("t1", 2), ("absent", 0))),
        ),
    ),
    # a partition past its topic's count, two members owning one partition
    "odd": GroupSpec(
        T2,
        (
            MemberSubscription("a", ("t0", "t1"), _tps(("t0", 7), ("t1", 1))),
            MemberSubscription("b", ("t0", "t1"), _tps(("t1", 1), ("t0", 0))),
        ),
    ),
    # heterogeneous: a partition in two current assignments (the later member owns it, the earlier
    # keeps it too); topics tie on partitions per subscriber (2 / 1 and 4 / 2)
    "conflict": GroupSpec(
        {"t0": TopicMetadata("t0", 4), "t1": TopicMetadata("t1", 2), "t2": TopicMetadata("t2", 3)},
        (
            MemberSubscription("a", ("t0",), _tps(("t0", 1), ("t0", 2))),
            MemberSubscription("b", ("t0", "t1", "t2"), _tps(("t0", 1), ("t0", 3), ("t2", 0))),
            MemberSubscription("c", ("t1", "t2"), ()),
            MemberSubscription("d", ("t2",), _tps(("t2", 0), ("t2", 1), ("t2", 2))),
        ),
    ),
    # free topics tie on partitions per subscriber (x: 2 / 1, y: 4 / 2): fewer subscribers first
    "tie": GroupSpec(
        {"x": TopicMetadata("x", 2), "y": TopicMetadata("y", 4)},
        (MemberSubscription("A", ("x", "y")), MemberSubscription("B", ("y",))),
    ),
    # sticky: members over quota give partitions to a newcomer (cooperative-sticky leaves
    # those out until they are revoked); one member owns nothing of a subscribed topic
    "moves": GroupSpec(
        T2,
        (
            MemberSubscription("b", ("t0", "t1"), _tps(("t1", 2), ("t0", 3), ("t1", 0), ("t0", 1))),
            MemberSubscription("a", ("t0", "t1"), _tps(("t0", 0), ("t0", 2), ("t1", 1)), 2),
            MemberSubscription("c", ("t0", "t1"), (), 1),
            MemberSubscription("d", ("t0", "t1"), (), 1),
        ),
    ),
    # a member with a rack (the sticky kernel leaves racks to the reference path)
    "rack": GroupSpec(
        {"t0": TopicMetadata("t0", 3, (frozenset({"r0"}), frozenset({"r1"}), frozenset({"r0"})))},
        (
            MemberSubscription("a", ("t0",), _tps(("t0", 0), ("t0", 1)), 1, "r1"),
            MemberSubscription("b", ("t0",), (), 1, "r0"),
        ),
    ),
    # topics and owned partitions given as lists (a public-API caller): the assignors key caches
    # and dicts on them, so MemberSubscription keeps tuples; over quota, so the sticky kernel runs
    "lists": GroupSpec(
        T2,
        (
            MemberSubscription("a", ["t0", "t1"], list(_tps(("t0", 0), ("t0", 1), ("t0", 2)))),
            MemberSubscription("b", ["t0", "t1"], [TopicPartition("t1", 0)], 1),
            MemberSubscription("c", ["t0", "t1"], []),
        ),
    ),
    # static members sort first (server-range, range); a topic with no partitions
    "static": GroupSpec(
        {**T2, "t2": TopicMetadata("t2", 0)},
        (
            MemberSubscription("z", ("t0", "t2"), (), -1, None, "i-1"),
            MemberSubscription("a", ("t0", "t1", "t2")),
            MemberSubscription("b", ("t1",), (), -1, None, "i-0"),
        ),
    ),
}


@pytest.mark.parametrize("case", list(EDGE_CASES))
@pytest.mark.parametrize("name", NAMES)
def test_edge_cases_are_identical(case: str, name: str) -> None:
    spec = EDGE_CASES[case]
    reference = _run(name, spec, None)
    for leg in _legs():
        assert _run(name, spec, leg) == reference, STALE


@st.composite
def sticky_groups(draw) -> GroupSpec:
    """Groups the sticky kernel takes (review F5): one subscription for all (in a random topic
    order, sometimes equal but not the same tuple), no racks, every owned partition valid and owned
    once, in random order; mixed generations, members over and under quota, sometimes fewer
    partitions than members. A topic without partitions or absent from the metadata may be named."""
    counts = [draw(st.integers(1, 8)), *draw(st.lists(st.integers(0, 8), max_size=3))]
    topics = {f"t{j}": TopicMetadata(f"t{j}", c) for j, c in enumerate(counts)}
    names = draw(st.permutations([*topics, "absent"]))
    shared = names[: draw(st.integers(1, len(names)))]
    shared = tuple(shared if "t0" in shared else [*shared, "t0"])  # some partition to own
    ids = draw(
        st.lists(st.text("abcAB01-é", min_size=1, max_size=3), min_size=1, max_size=10, unique=True)
    )
    n = len(ids)
    partitions = [(t, p) for t in shared if t in topics for p in range(topics[t].partitions)]
    partitions = draw(st.permutations(partitions))
    # an owner per partition (-1: nobody), skewed so that some members are far over quota
    owners = [draw(st.integers(-1, n - 1) | st.integers(0, min(n - 1, 1))) for _ in partitions]
    if partitions and all(o < 0 for o in owners):
        owners[0] = 0  # someone owns something: else fresh_deal answers before the kernel
    members = []
    for i, mid in enumerate(ids):
        owned = tuple(TopicPartition(t, p) for (t, p), o in zip(partitions, owners) if o == i)
        subs = shared if draw(st.booleans()) else tuple(list(shared))
        members.append(MemberSubscription(mid, subs, owned, draw(st.integers(-1, 4))))
    return GroupSpec(topics, tuple(members))


def test_sticky_kernel_takes_its_groups_and_equals_the_reference() -> None:
    legs = [(leg, CountingKernel(leg[2], "sticky_constrained")) for leg in _legs()]

    @settings(max_examples=200, deadline=None, database=None)
    @given(sticky_groups(), st.sampled_from(("sticky", "cooperative-sticky")))
    def check(spec: GroupSpec, name: str) -> None:
        if not any(m.owned for m in spec.members):
            return  # nothing owned (no partitions at all): fresh_deal's case, not the kernel's
        reference = _run(name, spec, None)
        for leg, counting in legs:
            assert _run(name, spec, (leg[0], leg[1], counting, leg[3], leg[4])) == reference, STALE

    check()
    for leg, counting in legs:
        calls = counting.accepted + counting.declined
        kind = "compiled" if leg is COMPILED else "pure source"
        assert calls >= 150, f"{kind}: the kernel was called {calls} times only"
        assert counting.accepted >= 0.8 * calls, (
            f"{kind}: the kernel took {counting.accepted} of {calls} groups drawn for it"
        )
    if COMPILED is None:
        no_compiled_leg("kernels are not compiled: only the pure-source leg was compared")


@pytest.mark.parametrize("name", NAMES)
def test_list_typed_subscriptions_equal_tuple_typed(name: str) -> None:
    lists = EDGE_CASES["lists"]
    tuples = GroupSpec(
        lists.topics,
        tuple(
            MemberSubscription(m.member_id, ("t0", "t1"), tuple(m.owned), m.generation)
            for m in lists.members
        ),
    )
    assert all(type(m.topics) is tuple and type(m.owned) is tuple for m in lists.members)
    for leg in [None, *_legs()]:
        assert _run(name, lists, leg) == _run(name, tuples, leg)


@settings(max_examples=500, deadline=None)
@given(groups(), st.sampled_from(NAMES))
def test_generated_groups_are_identical(spec: GroupSpec, name: str) -> None:
    for _ in range(2):  # the group as drawn, then owning the reference's result
        reference = _run(name, spec, None)
        for leg in _legs():
            assert _run(name, spec, leg) == reference, STALE
        if isinstance(reference, tuple):
            return
        with _path(None):
            spec = next_round_spec(spec, get_assignor(name).assign(spec))
