"""The sticky kernel on the simulator's input shapes: every member owning what it was given (in
the order the builder sorts into, which the kernel then keeps without indexing it), one member
leaving or coming back. The compiled kernel and its source loaded as plain Python give the
reference's output, value, type and repr of every partition (a kept entry stands for itself);
and the double HashMap order the kernel's caller computes with one hashing equals two
insertion_order calls.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from compiled_legs import no_compiled_leg
from kafka_rebalance.assign import kernels_sticky, sticky
from kafka_rebalance.assign.javacompat import JavaHashMap, insertion_order, insertion_order_twice
from kafka_rebalance.assign.registry import get_assignor
from kafka_rebalance.assign.sticky_common import java_key_order, java_key_order_twice
from kafka_rebalance.model import GroupSpec, MemberSubscription, TopicMetadata, TopicPartition
from test_assign_compiled import _legs, _path

STICKY = ("sticky", "cooperative-sticky")


class OddPartition(TopicPartition):
    """A TopicPartition subclass: equal to the model's, but not the table's type."""

    __slots__ = ()


def _exact(name: str, spec: GroupSpec, leg) -> list:
    """Each member's result with every partition's type and repr (not only its value)."""
    with _path(leg):
        result = get_assignor(name).assign(spec)
    return [
        (m, type(tps).__name__, [(type(tp).__name__, repr(tp)) for tp in tps])
        for m, tps in result.items()
    ]


def _check(name: str, spec: GroupSpec) -> None:
    reference = _exact(name, spec, None)
    for leg in _legs():
        assert _exact(name, spec, leg) == reference


def _in_builder_order(tps) -> tuple[TopicPartition, ...]:
    return tuple(sorted(tps, key=lambda tp: (tp.partition, tp.topic)))


def _rolling(name: str, n: int, topics: dict[str, int], restarts: int, seed: int) -> int:
    """A rolling restart as the simulator's leader sees it; the number of kernel calls."""
    rng = random.Random(seed)
    meta = {t: TopicMetadata(t, c) for t, c in topics.items()}
    subs = tuple(topics)
    members: dict[str, tuple[TopicPartition, ...]] = {f"m{i}#1": () for i in range(n)}
    calls = 0

    def run(ids: list[str], gen: int) -> None:
        nonlocal calls
        spec = GroupSpec(meta, tuple(MemberSubscription(i, subs, members[i], gen) for i in ids))
        _check(name, spec)
        calls += 1
        with _path(None):
            result = get_assignor(name).assign(spec)
        for i in ids:
            members[i] = tuple(result[i])

    gen = 1
    run(list(members), gen)
    for _ in range(restarts):
        ids = list(members)
        who = rng.choice(ids)
        gen += 1
        run([i for i in ids if i != who], gen)
        del members[who]
        back = f"{who.split('#')[0]}#{gen}"
        members[back] = ()
        gen += 1
        run(list(members), gen)
        gen += 1
        run(list(members), gen)  # the follow-up (cooperative: the withheld partitions move)
    return calls


def test_rolling_restarts_equal_the_reference() -> None:
    for name in STICKY:
        for n, topics in ((12, {"t": 120}), (9, {"a": 7, "b": 11, "é": 5}), (7, {"t": 5})):
            assert _rolling(name, n, topics, restarts=4, seed=n) == 13
    if len(_legs()) < 2:
        no_compiled_leg("kernels are not compiled: only the pure-source leg was compared")


@st.composite
def owned_in_order(draw) -> GroupSpec:
    """Equal subscriptions, no racks, every owned partition valid and owned once, each member's
    in (partition, topic) order as a member owning its last result has them; some entries are
    a TopicPartition subclass, a bool partition number or in a list, which the kernel must not
    hand back as they are."""
    counts = draw(st.lists(st.integers(0, 9), min_size=1, max_size=3))
    topics = {f"t{j}": TopicMetadata(f"t{j}", c) for j, c in enumerate(counts)}
    ids = draw(
        st.lists(st.text("abAB01", min_size=1, max_size=3), min_size=1, max_size=8, unique=True)
    )
    parts = [(t, p) for t, c in zip(topics, counts) for p in range(c)]
    owners = [draw(st.integers(-1, len(ids) - 1)) for _ in parts]
    members = []
    for i, mid in enumerate(ids):
        mine = []
        for (t, p), o in zip(parts, owners):
            if o != i:
                continue
            odd = draw(st.integers(0, 19))
            if odd == 0:
                mine.append(OddPartition(t, p))
            elif odd == 1 and p == 1:
                mine.append(TopicPartition(t, True))
            else:
                mine.append(TopicPartition(t, p))
        owned = _in_builder_order(mine)
        members.append(
            MemberSubscription(
                mid,
                tuple(topics),
                list(owned) if draw(st.integers(0, 9)) == 0 else owned,
                draw(st.integers(-1, 3)),
            )
        )
    return GroupSpec(topics, tuple(members))


@settings(max_examples=300, deadline=None, database=None)
@given(owned_in_order(), st.sampled_from(STICKY))
def test_owned_in_order_equals_the_reference(spec: GroupSpec, name: str) -> None:
    _check(name, spec)


def test_the_kernel_takes_the_rolling_groups() -> None:
    """The shapes above reach the kernel (not a decline to the reference path)."""
    took = []
    real = kernels_sticky.sticky_constrained

    def counting(*args):
        out = real(*args)
        took.append(out is not None)
        return out

    kernels_sticky.sticky_constrained = counting
    try:
        leg = _legs()[-1]
        spec = GroupSpec(
            {"t": TopicMetadata("t", 20)},
            tuple(
                MemberSubscription(
                    f"m{i}", ("t",), tuple(TopicPartition("t", p) for p in range(i, 20, 4)), 1
                )
                for i in range(3)
            )
            + (MemberSubscription("m3", ("t",), (), -1),),
        )
        with _path(leg[:2] + (kernels_sticky,) + leg[3:]):
            get_assignor("cooperative-sticky").assign(spec)
    finally:
        kernels_sticky.sticky_constrained = real
    assert took == [True]


def _colliding(n: int, seed: int) -> list[str]:
    """Keys whose Java hashCodes collide ("Aa" and "BB" hash alike): bins that treeify."""
    rng = random.Random(seed)
    keys: set[str] = set()
    while len(keys) < n:
        keys.add("".join(rng.choice(("Aa", "BB")) for _ in range(6)) + rng.choice("xyz"))
    return list(keys)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=6), max_size=300, unique=True))
def test_insertion_order_twice_is_two_insertion_orders(keys: list[str]) -> None:
    first = insertion_order(keys)
    assert insertion_order_twice(keys) == (first, insertion_order(first))


def test_insertion_order_twice_on_treeifying_and_member_id_keys() -> None:
    for keys in (
        _colliding(100, 1),
        _colliding(64, 2),
        [f"m{i}#1-0-{i + 1:08x}" for i in range(1000)],
        [f"consumer-{i}" for i in range(70)],
    ):
        first = insertion_order(keys)
        assert insertion_order_twice(keys) == (first, insertion_order(first))


def test_member_plan_order_is_the_double_hashmap_order() -> None:
    """sticky._member_plan's consumerToOwnedPartitions order (the hashes computed once) is
    java_key_order applied twice, on ids that collide in Java's hashCode too."""
    rng = random.Random(7)
    for keys in (
        _colliding(100, 3),
        _colliding(40, 4),
        [f"m{i}#1-0-{rng.randrange(1 << 30):08x}" for i in range(rng.choice((1, 63, 64, 700)))],
        [f"consumer-{i}" for i in range(130)],
    ):
        ids = tuple(keys)
        at = {m: k for k, m in enumerate(ids)}
        twice = [at[c] for c in java_key_order(java_key_order(ids))]
        plan = sticky._member_plan(ids)
        assert plan is not None and plan[0] == twice
        assert java_key_order_twice(ids) == java_key_order(java_key_order(ids))


def test_the_bench_script_times_each_shape_and_the_share() -> None:
    """bench/assign_sim_shapes.py: a line per assignor and input shape, and the --share line."""
    script = Path(__file__).resolve().parents[1] / "bench" / "assign_sim_shapes.py"
    run = subprocess.run(
        [sys.executable, str(script), "--members", "12", "--restarts", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    shapes = [line.split(":")[0].split() for line in run.stdout.splitlines()[1:]]
    assert shapes == [
        ["range", "leave"],
        ["range", "rejoin"],
        ["cooperative-sticky", "leave"],
        ["cooperative-sticky", "rejoin"],
        ["cooperative-sticky", "follow-up"],
        ["uniform", "leave"],
        ["uniform", "rejoin"],
    ]
    assert all(": 2 calls, best " in line for line in run.stdout.splitlines()[1:])
    share = subprocess.run(
        [sys.executable, str(script), "--share", "rolling-cooperative"]
        + ["--members", "10", "--restarts", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert share.returncode == 0, share.stderr
    assert "rolling-cooperative, 10 members, 1 restarts: run " in share.stdout
    assert "cooperative-sticky.assign: " in share.stdout
    bad = subprocess.run(
        [sys.executable, str(script), "--restarts", "0"], capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 2 and "--restarts" in bad.stderr


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(max_size=6), min_size=64, max_size=300, unique=True),
    st.booleans(),
)
def test_str_keys_bulk_order_matches_the_emulated_map(keys: list[str], head: bool) -> None:
    """insertion_order on str keys (their spread computed in one numpy pass) against a map that
    is emulated key by key (javacompat.JavaHashMap)."""
    m = JavaHashMap()
    for k in keys:
        if head:
            m.compute_if_absent(k, lambda _k: 1)
        else:
            m.put(k, 1)
    assert insertion_order(keys, head=head) == list(m.keys())
