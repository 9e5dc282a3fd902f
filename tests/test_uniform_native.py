"""The uniform assignor's Cython kernels (assign/uniform_native.pyx, uniform_native_plan.pyx,
uniform_native_balance.pyx) give
exactly what their Python twins (`kernels.uniform_homogeneous`, `uniform._iteration_plan`,
kernels_heterogeneous; mypyc-compiled or not) and the numpy reference give.

Three legs per group: the reference (`USE_COMPILED` off: uniform_homogeneous.build_homogeneous),
the twin (`NATIVE` off), and the Cython kernel (`NATIVE` on, counted: it must take the homogeneous
groups of the usual shape, not decline them all). Outputs must be equal, order within each member
included, on every parity vector round (tests/vectors/assignors and assignors-large) and on
hypothesis-generated groups with odd inputs. When the install built the kernel its leg is
required (tests/compiled_legs.py); without a build it skips, saying why.
"""

from __future__ import annotations

import functools
import itertools
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
from kafka_rebalance.assign import kernels_hashmap, kernels_heterogeneous
from kafka_rebalance.assign import uniform as uniform_mod
from kafka_rebalance.assign.base import AssignorFailure
from kafka_rebalance.assign.rounds import next_round_spec
from kafka_rebalance.assign.uniform_group import member_id_hashes
from kafka_rebalance.model import (
    GroupSpec,
    MemberSubscription,
    TopicMetadata,
    TopicPartition,
    parse_group_scenario,
)
from kafka_rebalance.ops.assign import assign_partitions

VECTORS = Path(__file__).resolve().parent / "vectors"
PYX = Path(uniform_mod.__file__).with_name("uniform_native.pyx")
NAMES = ("uniform_native", "uniform_native_plan", "uniform_native_balance")
INSTALLED = uniform_mod.NATIVE


class Counted:
    """The Cython kernel with its calls counted: groups taken, and declined (NotImplemented: the
    twin ran) or heterogeneous (None)."""

    def __init__(self, module: Any) -> None:
        self.module = module
        self.member_order = module.member_order
        self.heterogeneous_plan = module.heterogeneous_plan
        self.deal_and_balance = module.deal_and_balance
        self.keep_unshared = module.keep_unshared
        self.owned_over_quota = module.owned_over_quota
        self.id_offset = module.id_offset
        self.taken = 0
        self.declined = 0
        self.heterogeneous = 0

    def member_order_packed(self, *args: Any) -> Any:
        out = self.module.member_order_packed(*args)
        if out is NotImplemented:  # the group's order declined: the twin's path runs
            self.declined += 1
        return out

    def uniform_assign(self, *args: Any) -> Any:
        out = self.module.uniform_assign(*args)
        if out is NotImplemented:
            self.declined += 1
        elif out is None:
            self.heterogeneous += 1
        else:
            self.taken += 1
        return out


@contextmanager
def _leg(kind: str, counted: Counted | None = None) -> Iterator[None]:
    saved = (uniform_mod.USE_COMPILED, uniform_mod.NATIVE)
    try:
        uniform_mod.USE_COMPILED = kind != "reference"
        uniform_mod.NATIVE = counted if kind == "native" else None
        yield
    finally:
        uniform_mod.USE_COMPILED, uniform_mod.NATIVE = saved


def _run(spec: GroupSpec, kind: str, counted: Counted | None = None):
    with _leg(kind, counted):
        try:
            result = uniform_mod.UniformAssignor().assign(spec)
        except AssignorFailure as e:
            return ("failure", type(e).__name__, str(e))
    return [
        (m, _kind(spec, tps), [(tp.topic, tp.partition) for tp in tps]) for m, tps in result.items()
    ]


def _kind(spec: GroupSpec, value: Any) -> str:
    """ "shared": the value is a member's own `owned` tuple (uniform.py: an unchanged member's);
    "list": a list; anything else by its type's name (no leg may give one)."""
    if type(value) is tuple and any(value is m.owned for m in spec.members):
        return "shared"
    return "list" if type(value) is list else type(value).__name__


def _same_on_every_leg(spec: GroupSpec, counted: Counted | None) -> Any:
    reference = _run(spec, "reference")
    assert _run(spec, "twin") == reference
    if counted is not None:
        assert _run(spec, "native", counted) == reference
    return reference


def test_the_build_is_used_when_present() -> None:
    """A build beside the .pyx with a matching stamp is the one the assignor runs; a stale or
    missing one is not imported at all (its twin runs)."""
    if INSTALLED is None:
        fresh = [
            any(native.is_fresh_build(str(b), ".pyx") for b in PYX.parent.glob(f"{name}.*.so"))
            for name in NAMES
        ]
        assert not all(fresh), "every build is fresh, yet the assignor does not use them"
        no_compiled_leg(
            "assign/uniform_native*.pyx are not built (or a build is stale): `pip install -e .` "
            "builds them with Cython when it can; only the twins and the reference ran"
        )
    assert [m.__name__.rpartition(".")[2] for m in INSTALLED.modules] == list(NAMES)
    for module in INSTALLED.modules:
        assert module.__file__.endswith(".so")
        assert native.is_fresh_build(module.__file__, ".pyx")
    assert INSTALLED.modules[0].is_ready(), "the layout probe of the model's classes failed"


def test_nothing_is_kept_between_calls() -> None:
    """Review 3 F1's rule: no plan or table survives a call (module state: the probe's result)."""
    if INSTALLED is None:
        no_compiled_leg("assign/uniform_native*.pyx are not built")
    kept = [
        name
        for module in INSTALLED.modules
        for name, value in vars(module).items()
        if isinstance(value, dict | list | set) and not name.startswith("__")
    ]
    assert kept == [], kept


def test_every_vector_round_is_identical() -> None:
    """Every parity vector, every round (each round owns the previous one's result), on the three
    legs; the Cython kernel must take the homogeneous rounds, not decline them."""
    counted = Counted(INSTALLED) if INSTALLED is not None else None
    homogeneous_rounds = 0
    paths = sorted((VECTORS / "assignors").glob("*.json"))
    paths += sorted((VECTORS / "assignors-large").glob("*.json"))
    assert len(paths) > 200
    for path in paths:
        scenario = parse_group_scenario(json.loads(path.read_text(encoding="utf-8")))
        spec = scenario.spec
        for _ in range(scenario.rounds):
            if spec.members and uniform_mod.is_homogeneous(uniform_mod.group_view(spec)):
                homogeneous_rounds += 1
            reference = _same_on_every_leg(spec, counted)
            if isinstance(reference, tuple) or not spec.members:
                break
            with _leg("reference"):
                spec = next_round_spec(spec, uniform_mod.UniformAssignor().assign(spec))
    if counted is None:
        no_compiled_leg("assign/uniform_native*.pyx are not built: only the twins were compared")
    assert homogeneous_rounds > 100
    # every homogeneous round of the usual shape: taken (a round with an odd entry may decline)
    assert counted.taken >= 0.9 * homogeneous_rounds, vars(counted)
    assert counted.taken + counted.declined + counted.heterogeneous > homogeneous_rounds


class OddTopic(str):
    """A topic name that is a str subclass: the kernel declines, the twin takes it."""


class OddMember(MemberSubscription):
    __slots__ = ()


@st.composite
def homogeneous_groups(draw) -> GroupSpec:
    """Mostly homogeneous groups (one tuple shared, equal tuples, the same set in another order),
    sometimes not; owned partitions valid, repeated, held by two members, past a topic's count,
    negative, large (the reference reads them as int64), a bool, of unsubscribed or absent topics; members over quota (Java's hash order)."""
    n_topics = draw(st.integers(1, 6))
    counts = {f"t{j}": draw(st.integers(0, 12)) for j in range(n_topics)}
    meta = {t: TopicMetadata(t, c) for t, c in counts.items()}
    names = [*counts, "absent"]
    shared = tuple(draw(st.lists(st.sampled_from(names), min_size=1, max_size=5)))
    n = draw(st.integers(1, 9))
    odd_values = st.sampled_from([-1, 12, 13, 2**31, 2**40, True])
    members = []
    for i in range(n):
        how = draw(st.integers(0, 9))
        if how <= 5:
            subs = shared
        elif how <= 7:
            subs = tuple(reversed(shared))
        elif how == 8:
            subs = tuple(shared)  # an equal tuple, another object
        else:
            subs = tuple(draw(st.lists(st.sampled_from(names), max_size=4)))
        entries = draw(st.lists(st.tuples(st.sampled_from(names), st.integers(0, 12)), max_size=14))
        if draw(st.integers(0, 7)) == 0:
            entries.append((draw(st.sampled_from(names)), draw(odd_values)))
        owned = [TopicPartition(t, p) for t, p in entries]
        if owned and draw(st.integers(0, 15)) == 0:
            owned.append(TopicPartition(OddTopic(owned[0].topic), 0))
        cls = OddMember if draw(st.integers(0, 30)) == 0 else MemberSubscription
        members.append(cls(f"m{i:02d}", subs, tuple(owned), 1))
    return GroupSpec(meta, tuple(members))


@given(homogeneous_groups())
@settings(max_examples=300, deadline=None)
def test_generated_groups_are_identical(spec: GroupSpec) -> None:
    counted = Counted(INSTALLED) if INSTALLED is not None else None
    _same_on_every_leg(spec, counted)
    if counted is not None:
        assert counted.taken + counted.declined + counted.heterogeneous == 1


def test_odd_shapes_decline_to_the_twin() -> None:
    """A subclassed member or topic, a bool partition, a list of members: NotImplemented, and the
    assignment is the twin's."""
    meta = {"t0": TopicMetadata("t0", 4)}
    odd_specs = [
        GroupSpec(meta, (OddMember("a", ("t0",), (TopicPartition("t0", 1),), 1),)),
        GroupSpec(
            meta, (MemberSubscription("a", ("t0",), (TopicPartition(OddTopic("t0"), 1),), 1),)
        ),
        GroupSpec(meta, (MemberSubscription("a", ("t0",), (TopicPartition("t0", True),), 1),)),
        GroupSpec(meta, [MemberSubscription("a", ("t0",), (TopicPartition("t0", 1),), 1)]),  # type: ignore[arg-type]
    ]
    if INSTALLED is None:
        no_compiled_leg("assign/uniform_native*.pyx are not built")
    for spec in odd_specs:
        counted = Counted(INSTALLED)
        _same_on_every_leg(spec, counted)
        assert (counted.taken, counted.declined) == (0, 1), spec
    plain = GroupSpec(meta, (MemberSubscription("a", ("t0",), (TopicPartition("t0", 1),), 1),))
    counted = Counted(INSTALLED)
    assert _same_on_every_leg(plain, counted) == [
        ("a", "list", [("t0", 1), ("t0", 0), ("t0", 2), ("t0", 3)])
    ]
    assert counted.taken == 1


def test_members_over_quota_follow_javas_order() -> None:
    """Members over quota go to the twin's Java-order walk (kernels_hashmap): one member owning
    everything, spread over 13 and 25 topics (computeIfAbsent's resizes), then a member joins."""
    for n_topics in (13, 25):
        meta = {f"topic-{j}": TopicMetadata(f"topic-{j}", 7) for j in range(n_topics)}
        names = tuple(meta)
        everything = tuple(TopicPartition(t, p) for t in names for p in range(7))
        spec = GroupSpec(
            meta,
            (
                MemberSubscription("m0", names, everything, 1),
                MemberSubscription("m1", names, (), 1),
                MemberSubscription("m2", names, (), 1),
            ),
        )
        counted = Counted(INSTALLED) if INSTALLED is not None else None
        _same_on_every_leg(spec, counted)
        if counted is not None:
            assert counted.taken == 1
    if INSTALLED is None:
        no_compiled_leg("assign/uniform_native*.pyx are not built")


def test_an_unchanged_member_shares_its_owned_tuple() -> None:
    """A member that keeps all it owns and is dealt nothing gets its `owned` tuple itself (as
    Kafka's builder shares the member's assignment map), on every leg; a member kept whole but
    dealt more, one that loses a partition, one owning nothing: new lists. The public path
    (assign_partitions, through run_rounds) still gives lists."""
    meta = {"a": TopicMetadata("a", 4), "b": TopicMetadata("b", 4)}  # quota 2 each
    topics = ("a", "b")
    tp = TopicPartition
    members = (
        MemberSubscription("steady", topics, (tp("a", 0), tp("b", 0)), 1),
        MemberSubscription("dealt", topics, (tp("a", 1),), 1),
        MemberSubscription("over", topics, (tp("a", 2), tp("a", 3), tp("b", 1)), 1),
        MemberSubscription("fresh", topics, (), 1),
    )
    spec = GroupSpec(meta, members)
    counted = Counted(INSTALLED) if INSTALLED is not None else None
    legs = ["reference", "twin"] + (["native"] if counted is not None else [])
    for kind in legs:
        with _leg(kind, counted):
            result = uniform_mod.UniformAssignor().assign(spec)
        assert result["steady"] is members[0].owned, kind
        for mid in ("dealt", "over", "fresh"):
            assert type(result[mid]) is list, (kind, mid)
        assert result["dealt"][0] == tp("a", 1)
    assert _same_on_every_leg(spec, counted)[0][1] == "shared"
    public = assign_partitions(spec, "uniform", rounds=2)
    for r in public.rounds:
        assert all(type(v) is list for v in r.assignment.values())
    if counted is None:
        no_compiled_leg("assign/uniform_native*.pyx are not built")
    assert counted.taken == 2  # the loop's native leg and _same_on_every_leg's


def test_a_failed_cython_compile_leaves_the_other_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """setup.py: a Cython kernel that does not compile is left out alone (no module, no stamp;
    its twin runs) and the install goes on; the mypyc builds keep their stamps."""
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    from compiled_legs import from_source

    root = Path(__file__).resolve().parent.parent
    setup = from_source(root / "setup.py", "kafka_rebalance_setup_native")
    monkeypatch.chdir(root)
    cmd = setup.OptionalMypycBuild(Distribution())
    cmd.failed = set()
    every = setup.COMPILED + setup.CYTHON
    cmd.source_digests = {s: f"{i:064x}" for i, s in enumerate(every)}
    cmd.extensions = [Extension(setup._module_name(s), []) for s in every]
    cmd.build_lib, cmd.inplace = str(tmp_path), False

    def fake_build(self, ext):  # the mypyc modules "build", the Cython one fails
        if ext.name.endswith("uniform_native"):
            raise RuntimeError("gcc: not found")
        built = tmp_path / self.get_ext_filename(self.get_ext_fullname(ext.name))
        built.parent.mkdir(parents=True, exist_ok=True)
        built.write_bytes(b"")

    monkeypatch.setattr(build_ext, "build_extension", fake_build)
    for ext in cmd.extensions:
        cmd.build_extension(ext)  # raises nothing
    assert cmd.failed == {"kafka_rebalance.assign.uniform_native"}
    cmd._write_stamps()
    stamps = {p.name for p in tmp_path.rglob("*" + setup.STAMP_SUFFIX)}
    assert "uniform_native" + setup.STAMP_SUFFIX not in stamps
    assert "kernels" + setup.STAMP_SUFFIX in stamps
    assert len(stamps) == len(setup.COMPILED) + len(setup.CYTHON) - 1


def _python_plan(ids: tuple[str, ...]) -> Any:
    """uniform._iteration_plan, and whether Java's map would hold a tree bin (the emulated map's
    order then: the Cython kernel declines those)."""
    if len(set(ids)) != len(ids):
        return None, False
    tree = kernels_hashmap.hashmap_positions(member_id_hashes(ids)) is None
    return uniform_mod._iteration_plan(ids), tree


# ids that collide in Java's String.hashCode ("Aa" and "BB"), non-ASCII and beyond the BMP
id_text = st.lists(
    st.sampled_from(["Aa", "BB", "c", "é", "\u4e2d", "\U0001f600", "0"]), max_size=6
).map("".join)


@given(st.lists(id_text.map(lambda s: s or "x"), min_size=1, max_size=120))
@settings(max_examples=300, deadline=None)
def test_member_order_is_javas_hashmap_order(ids: list[str]) -> None:
    """member_order (C, every call) gives uniform._iteration_plan's order and positions, or
    declines exactly where that has repeated ids or Java's map would treeify a bin."""
    if INSTALLED is None:
        no_compiled_leg("assign/uniform_native*.pyx are not built")
    members = tuple(MemberSubscription(mid, ("t",), (), 1) for mid in ids)
    got = INSTALLED.member_order(members, INSTALLED.id_offset)
    want, tree = _python_plan(tuple(ids))
    if want is None or tree:
        assert got is NotImplemented
    else:
        assert got == (list(ids), want[0], want[1])


def test_member_order_at_a_thousand_members_and_in_bins_near_the_threshold() -> None:
    if INSTALLED is None:
        no_compiled_leg("assign/uniform_native*.pyx are not built")
    cases = [
        [f"consumer-{i}-{i * 7919 % 10007}" for i in range(1000)],
        # 2^k strings of "Aa"/"BB" blocks share one hash: bins of 8+ in small and large tables
        ["".join(bits) for bits in itertools.product(["Aa", "BB"], repeat=3)] + ["z"],
        ["".join(bits) for bits in itertools.product(["Aa", "BB"], repeat=3)]
        + [f"m{i}" for i in range(60)],
        ["".join(bits) for bits in itertools.product(["Aa", "BB"], repeat=4)]
        + [f"m{i}" for i in range(60)],
    ]
    declined = 0
    for ids in cases:
        members = tuple(MemberSubscription(mid, ("t",), (), 1) for mid in ids)
        got = INSTALLED.member_order(members, INSTALLED.id_offset)
        want, tree = _python_plan(tuple(ids))
        if tree:
            assert got is NotImplemented
            declined += 1
        else:
            assert want is not None and got == (list(ids), want[0], want[1])
    assert declined >= 1  # the 16 colliding ids in a 64+ table: a tree bin


def _fresh_str(text: str) -> str:
    """An equal str that is another object (as a parser makes one per occurrence)."""
    copy = "".join([text[:1], text[1:]])
    assert copy == text and (copy is not text or len(text) < 2)
    return copy


@pytest.mark.timeout(60)
def test_every_partition_with_its_own_topic_object() -> None:
    """Owned partitions parsed from text carry a topic str object each (the harness's owned pass
    reads Java's output so): thousands of addresses for a few topics. The kernel's address table
    grows past half full instead of filling up (which looped forever), and the result is the
    twin's."""
    if INSTALLED is None:
        no_compiled_leg("assign/uniform_native*.pyx are not built")
    meta = {f"topic-{j}": TopicMetadata(f"topic-{j}", 100) for j in range(30)}
    names = tuple(meta)
    members = []
    for i in range(300):
        owned = tuple(
            TopicPartition(_fresh_str(names[(i * 10 + k) % 30]), (i * 10 + k) // 30)
            for k in range(10)
        )
        members.append(MemberSubscription(f"m{i:03d}", names, owned, 1))
    spec = GroupSpec(meta, tuple(members))
    assert len({id(tp.topic) for m in spec.members for tp in m.owned}) == 3000
    counted = Counted(INSTALLED)
    _same_on_every_leg(spec, counted)
    assert counted.taken == 1


def _plan_fields(plan: Any) -> tuple:
    return (
        plan.topics,
        plan.counts,
        plan.index,
        plan.member_cols,
        plan.base,
        plan.total,
        plan.subscribers,
        plan.subscribed,
    )


@given(homogeneous_groups())
@settings(max_examples=200, deadline=None)
def test_heterogeneous_plan_equals_its_twin(spec: GroupSpec) -> None:
    """heterogeneous_plan (C) gives kernels_heterogeneous._build_plan's fields, the sharing of
    one column list by members with one subscription tuple included."""
    if INSTALLED is None:
        no_compiled_leg("assign/uniform_native*.pyx are not built")
    order = list(range(len(spec.members)))[::-1]
    got = INSTALLED.heterogeneous_plan(spec.members, order, spec.topics)
    if any(type(m) is not MemberSubscription for m in spec.members):
        assert got is NotImplemented  # the twin takes it
        return
    subs = [spec.members[k].topics for k in order]
    want = kernels_heterogeneous._build_plan(subs, spec.topics, uniform_mod.topic_id)
    assert got == _plan_fields(want)
    by_sub: dict[int, int] = {}
    for i, sub in enumerate(subs):
        first = by_sub.setdefault(id(sub), i)
        assert (got[3][i] is got[3][first]) == (want.member_cols[i] is want.member_cols[first])


def test_heterogeneous_plan_on_the_large_vectors() -> None:
    if INSTALLED is None:
        no_compiled_leg("assign/uniform_native*.pyx are not built")
    for path in sorted((VECTORS / "assignors-large").glob("*.json")):
        spec = parse_group_scenario(json.loads(path.read_text(encoding="utf-8"))).spec
        ids, order, _ = INSTALLED.member_order(spec.members, INSTALLED.id_offset)
        got = INSTALLED.heterogeneous_plan(spec.members, order, spec.topics)
        subs = [spec.members[k].topics for k in order]
        want = kernels_heterogeneous._build_plan(subs, spec.topics, uniform_mod.topic_id)
        assert got == _plan_fields(want), path.name


@st.composite
def unshared_heterogeneous(draw) -> GroupSpec:
    """Members with differing subscriptions owning partitions no two share, unbalanced (the
    balance pass moves kept partitions), some of topics they no longer name."""
    n_topics = draw(st.integers(1, 6))
    counts = {f"t{j}": draw(st.integers(0, 15)) for j in range(n_topics)}
    names = list(counts)
    n = draw(st.integers(1, 12))
    pool = [(t, p) for t in names for p in range(counts[t])] or [("t0", 0)]
    taken: set[tuple[str, int]] = set()
    members = []
    for i in range(n):
        subs = tuple(draw(st.lists(st.sampled_from(names), min_size=1, max_size=n_topics)))
        owned = draw(st.lists(st.sampled_from(pool), max_size=12))
        owned = [tp for tp in owned if tp not in taken]
        taken.update(owned)
        members.append(
            MemberSubscription(f"m{i:02d}", subs, tuple(TopicPartition(*tp) for tp in owned), 1)
        )
    return GroupSpec({t: TopicMetadata(t, c) for t, c in counts.items()}, tuple(members))


@given(unshared_heterogeneous())
@settings(max_examples=300, deadline=None)
def test_deal_and_balance_equals_its_twin(spec: GroupSpec) -> None:
    """deal_and_balance (C) leaves owners and sizes as kernels_heterogeneous._deal_and_balance
    does (no leftovers: the unshared path), and whole groups give the reference assignment."""
    if INSTALLED is None:
        no_compiled_leg("assign/uniform_native*.pyx are not built")
    order = list(range(len(spec.members)))
    subs = [m.topics for m in spec.members]
    plan = kernels_heterogeneous._build_plan(subs, spec.topics, uniform_mod.topic_id)
    owners, sizes, mine = [-1] * plan.total, [0] * len(order), []
    if not kernels_heterogeneous._keep_unshared(spec.members, order, plan, owners, sizes, mine):
        return
    c_owners, c_sizes, c_mine = [-1] * plan.total, [0] * len(order), []
    assert INSTALLED.keep_unshared(
        spec.members,
        order,
        plan.index,
        plan.counts,
        plan.base,
        plan.subscribed,
        c_owners,
        c_sizes,
        c_mine,
    )
    assert (c_owners, c_sizes, c_mine) == (owners, sizes, mine)
    twin_owners, twin_sizes = owners[:], sizes[:]
    kernels_heterogeneous._deal_and_balance(plan, twin_owners, twin_sizes, {})
    assert INSTALLED.deal_and_balance(
        plan.ranked_topics, plan.counts, plan.base, plan.subscribers, owners, sizes
    )
    assert (owners, sizes) == (twin_owners, twin_sizes)
    _same_on_every_leg(spec, Counted(INSTALLED))


_OVER_QUOTA_COUNT = 300_001  # partitions per topic: past 65,536 * 4


@functools.cache
def _over_quota_objects() -> list[Any]:
    return [uniform_mod.topic_objects(t, _OVER_QUOTA_COUNT) for t in ("t0", "t1")]


@st.composite
def over_quota_entries(draw) -> tuple[tuple[TopicPartition, ...], int]:
    """A member's owned tuple and quota as the homogeneous builder hands them to its slow path:
    mostly one topic (the C kernel's case), some of two topics, of a topic not in the plan, or
    out of range (it declines those); duplicates; partitions a multiple of 16 or 64 apart, and
    enough of them, to fill one bin up to the treeify threshold; partitions past 65,536, where
    Java's spread `h ^ (h >>> 16)` is not the identity (review 11 S6)."""
    topic = draw(st.sampled_from(["t0", "t0", "t0", "t1", "zz"]))
    step = draw(st.sampled_from([1, 1, 16, 64, 4096, 65_536, 65_552]))
    ps = draw(st.lists(st.integers(0, 40), min_size=1, max_size=60))
    entries = [TopicPartition(topic, min(p * step, _OVER_QUOTA_COUNT - 1)) for p in ps]
    if draw(st.integers(0, 9)) == 0:
        entries.append(TopicPartition("t1" if topic != "t1" else "t0", 1))
    if draw(st.integers(0, 9)) == 0:
        entries.append(TopicPartition(topic, _OVER_QUOTA_COUNT))
    return tuple(entries), draw(st.integers(-1, 70))


@given(over_quota_entries())
@settings(max_examples=400, deadline=None, derandomize=True)
def test_owned_over_quota_equals_its_twin(case: tuple[tuple[TopicPartition, ...], int]) -> None:
    """owned_over_quota (C, one topic) gives what kernels_hashmap.owned_over_quota gives, the
    same objects in the same order, wherever it does not decline; it takes every plain one-topic
    member whose bins cannot treeify."""
    if INSTALLED is None:
        no_compiled_leg("assign/uniform_native*.pyx are not built")
    entries, quota = case
    counts = [_OVER_QUOTA_COUNT, _OVER_QUOTA_COUNT]
    args = (entries, quota, {"t0": 0, "t1": 1}, counts, _over_quota_objects())
    got = INSTALLED.owned_over_quota(*args)
    twin = kernels_hashmap.owned_over_quota(*args, uniform_mod.topic_id_hash, TopicPartition)
    if got is NotImplemented:
        one_topic = {tp.topic for tp in entries} in ({"t0"}, {"t1"})
        in_range = all(tp.partition < _OVER_QUOTA_COUNT for tp in entries)
        assert not (one_topic and in_range) or twin is None  # declined only what it must
        return
    assert twin is not None
    kept, revoked, left = got
    assert (kept, revoked, left) == twin
    assert all(a is b for a, b in zip(kept + revoked, twin[0] + twin[1]))
