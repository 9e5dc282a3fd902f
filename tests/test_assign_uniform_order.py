"""The uniform assignor's compiled Java-order helpers (assign/kernels_hashmap.py) equal the
emulated maps.

`kernels_hashmap.owned_over_quota` (a member over quota: its current assignment walked in Java's
HashMap/HashSet order) and `kernels_hashmap.hashmap_positions` (the group's member HashMap order) replace
`uniform_group.current_assignment` and `uniform_group.hashmap_order`, which emulate the maps node
for node and stay the reference. Both legs are checked: the kernels' source loaded as plain
Python, and the compiled build when the install made one. Bins that could treeify must give None
(the caller then emulates), never a different order; whole groups with members over quota must
give the reference assignment, order included.
"""

from __future__ import annotations

import importlib.util
import itertools
import random
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from compiled_legs import no_compiled_leg
from kafka_rebalance.assign import kernels as installed_kernels
from kafka_rebalance.assign import kernels_hashmap as installed_hashmap
from kafka_rebalance.assign import uniform as uniform_mod
from kafka_rebalance.assign.javacompat import JavaHashMap, string_hash
from kafka_rebalance.assign.tpcache import topic_objects
from kafka_rebalance.assign.uniform_group import (
    current_assignment,
    hashmap_order,
    member_id_hashes,
    topic_id_hash,
)
from kafka_rebalance.model import GroupSpec, MemberSubscription, TopicMetadata, TopicPartition

SOURCE = Path(uniform_mod.__file__).with_name("kernels_hashmap.py")
KERNELS_SOURCE = Path(uniform_mod.__file__).with_name("kernels.py")


def _pure(source: Path = SOURCE) -> ModuleType:
    name = f"kafka_rebalance.assign._order_{source.stem}"
    spec = importlib.util.spec_from_file_location(name, source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PURE = _pure()
PURE_KERNELS = _pure(KERNELS_SOURCE)
# kernels.is_compiled(): kernels.py, kernels_hashmap.py and their siblings are fresh builds
LEGS = [PURE] + ([installed_hashmap] if installed_kernels.is_compiled() else [])
# the homogeneous kernel beside each leg in the whole-group checks: pure with pure, built with built
KERNEL_LEGS = [PURE_KERNELS] + ([installed_kernels] if len(LEGS) > 1 else [])


def test_compiled_leg_present() -> None:
    assert not PURE_KERNELS.is_compiled()
    assert PURE.__file__ is not None and PURE.__file__.endswith(".py")
    if len(LEGS) == 1:
        no_compiled_leg("kernels are not compiled: only the pure-source leg was compared")


def _reference_walk(owned, quota: int, topics: list[str]):
    """uniform.py's pure fallback: current_assignment (emulated maps) with the quota rule."""
    subscribed = set(topics)
    kept, revoked = [], []
    for t, parts in current_assignment(owned):
        if t not in subscribed:
            continue
        for p in parts:
            if quota > 0:
                quota -= 1
                kept.append(TopicPartition(t, p))
            else:
                revoked.append(TopicPartition(t, p))
    return kept, revoked, quota


@st.composite
def owned_lists(draw):
    n_topics = draw(st.integers(1, 14))
    topics = [f"topic-{j}" for j in range(n_topics)]
    counts = [draw(st.integers(1, 300)) for _ in topics]
    # partitions spread or colliding in a bin (multiples of 16 or 64), past a topic's count too
    part = st.integers(0, 320) | st.integers(0, 40).map(lambda k: 16 * k) | st.just(0)
    owned_names = [*topics, "not-subscribed", "also-not"]
    entries = draw(st.lists(st.tuples(st.sampled_from(owned_names), part), max_size=60))
    subscribed = topics[: draw(st.integers(0, n_topics))]
    quota = draw(st.integers(0, 40))
    return subscribed, [counts[topics.index(t)] for t in subscribed], entries, quota


@settings(max_examples=300, deadline=None)
@given(owned_lists())
@example(([f"t{j}" for j in range(3)], [100] * 3, [("t0", 16 * k) for k in range(12)], 4))
@example((["a", "b"], [5, 5], [("a", 1), ("b", 2), ("a", 1), ("c", 0), ("b", 9)], 2))
# review 2 F0: a computeIfAbsent after the 13th new topic resizes the 16-slot table first
@example(
    (
        [f"topic-{j}" for j in range(13)],
        [2] * 13,
        [*((f"topic-{j}", 0) for j in range(13)), ("topic-6", 1)],
        10,
    )
)
def test_owned_over_quota_equals_the_emulated_maps(case) -> None:
    topics, counts, entries, quota = case
    owned = tuple(TopicPartition(t, p) for t, p in entries)
    want = _reference_walk(owned, quota, topics)
    index = {t: j for j, t in enumerate(topics)}
    objects = [topic_objects(t, c) for t, c in zip(topics, counts)]
    for leg in LEGS:
        got = leg.owned_over_quota(
            owned, quota, index, counts, objects, topic_id_hash, TopicPartition
        )
        # None exactly where Java's maps make a tree bin (the caller then emulates): a kernel
        # that declined more often would pass an "allowed to decline" check (review 2 F6)
        assert (got is None) == _java_makes_a_tree(owned, topics), (leg, case)
        if got is not None:
            assert got == want


@pytest.mark.parametrize("n_topics", [12, 13, 14, 24, 25, 26, 49])
@pytest.mark.parametrize("trailing", [False, True])
def test_owned_over_quota_resizes_as_compute_if_absent_does(n_topics: int, trailing: bool) -> None:
    """Java's computeIfAbsent resizes at the start of a call, also for a key already present: a
    call after the last new topic can double the table (13 of 16 slots used, 25 of 32, 49 of 64)
    and change the iteration order. The kernel must take the order Java takes, not decline."""
    topics = [f"topic-{j}" for j in range(n_topics)]
    entries = [(t, 0) for t in topics] + ([(topics[0], 1)] if trailing else [])
    owned = tuple(TopicPartition(t, p) for t, p in entries)
    want = _reference_walk(owned, 7, topics)
    index = {t: j for j, t in enumerate(topics)}
    objects = [topic_objects(t, 2) for t in topics]
    for leg in LEGS:
        got = leg.owned_over_quota(
            owned, 7, index, [2] * n_topics, objects, topic_id_hash, TopicPartition
        )
        assert got == want, (leg, n_topics, trailing)


def _java_makes_a_tree(owned, subscribed: list[str]) -> bool:
    """Whether `owned_over_quota` must decline: a partition outside 0..2^31-1, or a tree bin at
    some point while Java builds the member's `Map<Uuid, Set<Integer>>` (computeIfAbsent per
    entry, topics keyed by their id's hash) or the `HashSet<Integer>` of a subscribed topic it
    walks. Decided with the emulated maps (javacompat), independently of the kernel."""
    if any(not 0 <= tp.partition <= 0x7FFFFFFF for tp in owned):
        return True
    topic_map = JavaHashMap(hasher=topic_id_hash)
    sets: dict[str, JavaHashMap] = {}
    tree = False
    for tp in owned:
        topic_map.compute_if_absent(tp.topic, lambda _k: True)
        tree = tree or bool(topic_map._trees)
        part_set = sets.setdefault(tp.topic, JavaHashMap())
        if tp.partition not in part_set:
            part_set.put(tp.partition, True)
            if tp.topic in subscribed and part_set._trees:
                tree = True
    return tree


def _generated_owned_lists(seed: int, count: int):
    """Owned lists of members over quota, shaped like real ones and like the hard ones: 1-60
    topics (the topic map resizes at 13, 25, 49), partitions spread, or all in one bin of a
    64-slot table (multiples of 64: a tree once 9 meet there), repeats, unsubscribed topics."""
    rng = random.Random(seed)
    for _ in range(count):
        n_topics = rng.choice((1, 2, 5, 12, 13, 14, 25, 40, 49, 60))
        topics = [f"topic-{j}" for j in range(n_topics)]
        entries = []
        for _ in range(rng.randint(1, 80)):
            t = rng.choice(topics) if rng.random() < 0.9 else "not-subscribed"
            shape = rng.random()
            if shape < 0.6:
                p = rng.randrange(0, 600)
            elif shape < 0.9:
                p = 64 * rng.randrange(0, 20)
            else:
                p = 1024 * rng.randrange(0, 4)
            entries.append(TopicPartition(t, p))
        subscribed = topics[: rng.randint(0, n_topics)]
        yield tuple(entries), subscribed, rng.randint(0, 30)


def test_owned_over_quota_declines_only_where_java_makes_a_tree() -> None:
    """Review 2 F6: on 600 generated owned lists the kernel answers every one Java answers without
    a tree bin (the same walk as the emulated maps), and declines exactly the others; the set has
    both kinds, so the count is not trivially zero."""
    declined_expected = 0
    for owned, topics, quota in _generated_owned_lists(20261126, 600):
        must = _java_makes_a_tree(owned, topics)
        declined_expected += must
        counts = [
            max([tp.partition for tp in owned if tp.topic == t], default=0) + 1 for t in topics
        ]
        index = {t: j for j, t in enumerate(topics)}
        objects = [topic_objects(t, c) for t, c in zip(topics, counts)]
        want = None if must else _reference_walk(owned, quota, topics)
        for leg in LEGS:
            got = leg.owned_over_quota(
                owned, quota, index, counts, objects, topic_id_hash, TopicPartition
            )
            assert got == want, (leg, topics, owned)
    assert 0 < declined_expected < 600 // 4, declined_expected


def test_owned_over_quota_declines_odd_partitions() -> None:
    for leg in LEGS:
        for p in (-1, 1 << 31):
            owned = (TopicPartition("a", 0), TopicPartition("a", p))
            assert (
                leg.owned_over_quota(
                    owned, 1, {"a": 0}, [3], [topic_objects("a", 3)], topic_id_hash, TopicPartition
                )
                is None
            )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text("abcAB01-é", min_size=1, max_size=4), max_size=150, unique=True)
    | st.lists(st.integers(0, 3000).map("c{:04d}".format), max_size=1500, unique=True)
)
@example(["Aa", "BB", "AaAa", "BBBB", "AaBB", "BBAa"])
def test_hashmap_positions_equal_hashmap_order(ids: list[str]) -> None:
    key = tuple(ids)
    want = hashmap_order(key)
    hashes = member_id_hashes(key)
    assert hashes == [string_hash(m) & 0xFFFFFFFF for m in ids]
    for leg in LEGS:
        got = leg.hashmap_positions(hashes)
        if got is None:
            continue
        assert [ids[k] for k in got] == list(want)


def test_hashmap_positions_follow_small_table_resizes_and_decline_a_tree() -> None:
    """Java strings with one hash ("Aa" == "BB"): the 9th in one bin makes a table under 64
    slots grow instead of treeifying (same order as the emulated map); the 11th, at 64 slots,
    makes a tree, and the emulation decides."""
    ids = ["".join(w) for w in itertools.product(("Aa", "BB"), repeat=4)]
    assert len({string_hash(m) for m in ids}) == 1
    for count, declined in ((9, False), (10, False), (11, True), (16, True)):
        key = tuple(ids[:count])
        m = JavaHashMap()
        for mid in key:
            m.put(mid, True)
        assert list(hashmap_order(key)) == list(m.keys())
        for leg in LEGS:
            got = leg.hashmap_positions(member_id_hashes(key))
            if declined:
                assert got is None
            else:
                assert got is not None and [key[k] for k in got] == list(m.keys())


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 2000).map(lambda k: 16 * k) | st.integers(0, 5000), max_size=80),
    st.booleans(),
)
def test_java_bin_order_equals_the_emulated_map(keys: list[int], head: bool) -> None:
    """Integer keys (hash = value) colliding in bins: put and computeIfAbsent orders."""
    keys = list(dict.fromkeys(keys))
    m = JavaHashMap()
    for k in keys:
        if head:
            m.compute_if_absent(k, lambda _k: True)
        else:
            m.put(k, True)
    spreads = [k ^ (k >> 16) for k in keys]
    for leg in LEGS:
        got = leg.java_bin_order(spreads, head)
        if got is not None:
            assert [keys[i] for i in got] == list(m.keys())
        else:
            assert m._trees or _had_tree(keys, head)


def _had_tree(keys: list[int], head: bool) -> bool:
    """Some prefix of the inserts made a tree bin (a tree may have been split back since)."""
    m = JavaHashMap()
    for k in keys:
        if head:
            m.compute_if_absent(k, lambda _k: True)
        else:
            m.put(k, True)
        if m._trees:
            return True
    return False


@st.composite
def over_quota_groups(draw):
    """Homogeneous groups whose members own more than their quota (a shrinking group)."""
    n_topics = draw(st.integers(1, 4))
    topics = {f"t{j}": TopicMetadata(f"t{j}", draw(st.integers(1, 40))) for j in range(n_topics)}
    names = tuple(topics)
    n = draw(st.integers(1, 8))
    everything = [TopicPartition(t, p) for t in names for p in range(topics[t].partitions)]
    everything = draw(st.permutations(everything))
    members = []
    for i in range(n):
        share = everything[i::n]
        extra = draw(
            st.lists(st.tuples(st.sampled_from([*names, "gone"]), st.integers(0, 50)), max_size=4)
        )
        owned = tuple(share) + tuple(TopicPartition(t, p) for t, p in extra)
        members.append(MemberSubscription(f"m{i}", names, owned, 1))
    return GroupSpec(topics, tuple(members[: draw(st.integers(1, n))]))


@settings(max_examples=150, deadline=None)
@given(over_quota_groups())
def test_uniform_with_members_over_quota_equals_the_reference(spec: GroupSpec) -> None:
    _each_leg_equals_the_reference(spec)


@pytest.mark.parametrize("n_topics", [13, 25])
def test_uniform_one_member_owning_every_topic_equals_the_reference(n_topics: int) -> None:
    """Review 2 F0, end to end: one member owns every partition of 13 (or 25) two-partition
    topics, two new members own nothing; the compiled path gave other assignments."""
    topics = {f"topic-{j}": TopicMetadata(f"topic-{j}", 2) for j in range(n_topics)}
    names = tuple(topics)
    everything = tuple(TopicPartition(t, p) for t in names for p in range(2))
    spec = GroupSpec(
        topics,
        (
            MemberSubscription("m0", names, everything, 1),
            MemberSubscription("m1", names, (), 1),
            MemberSubscription("m2", names, (), 1),
        ),
    )
    _each_leg_equals_the_reference(spec)


def _each_leg_equals_the_reference(spec: GroupSpec) -> None:
    """UniformAssignor on each kernel leg gives the pure reference's result (or failure)."""
    saved = (
        uniform_mod.USE_COMPILED,
        uniform_mod.kernels,
        uniform_mod.kernels_hashmap,
        uniform_mod.NATIVE,
    )
    try:
        uniform_mod.USE_COMPILED = False
        want = _listed(uniform_mod.UniformAssignor().assign, spec)
        # each leg with its own homogeneous kernel, and the built one also behind the Cython
        # kernel (assign/uniform_native.pyx, which hands members over quota to the leg's walk)
        natives = [None] + ([saved[3]] if saved[3] is not None else [])
        for leg, kernels_leg in zip(LEGS, KERNEL_LEGS):
            for native_kernel in natives if kernels_leg is installed_kernels else [None]:
                uniform_mod.USE_COMPILED = True
                uniform_mod.kernels, uniform_mod.kernels_hashmap = kernels_leg, leg
                uniform_mod.NATIVE = native_kernel
                assert _listed(uniform_mod.UniformAssignor().assign, spec) == want
    finally:
        (
            uniform_mod.USE_COMPILED,
            uniform_mod.kernels,
            uniform_mod.kernels_hashmap,
            uniform_mod.NATIVE,
        ) = saved


def _listed(assign, spec):
    try:
        result = assign(spec)
    except Exception as e:  # noqa: BLE001 - both paths must fail alike
        return ("failure", type(e).__name__, str(e))
    return [(m, [(tp.topic, tp.partition) for tp in tps]) for m, tps in result.items()]


@pytest.mark.parametrize("n", [0, 1, 13, 1000])
def test_member_id_hashes_are_remembered_and_bounded(n: int, monkeypatch) -> None:
    from kafka_rebalance.assign import uniform_group

    monkeypatch.setattr(uniform_group, "_ID_HASHES", {})
    monkeypatch.setattr(uniform_group, "MAX_ID_HASHES", 500)
    ids = tuple(f"member-{k}" for k in range(n))
    assert member_id_hashes(ids) == [string_hash(m) & 0xFFFFFFFF for m in ids]
    assert len(uniform_group._ID_HASHES) <= max(500, n)
    if n <= 500:  # remembered: a second call computes nothing
        assert all(uniform_group._ID_HASHES.get(m) == string_hash(m) & 0xFFFFFFFF for m in ids)
        monkeypatch.setattr(uniform_group, "string_hash", _no_hashing)
        monkeypatch.setattr(uniform_group, "_string_hashes", _no_hashing)
        assert member_id_hashes(ids) == [string_hash(m) & 0xFFFFFFFF for m in ids]


def _no_hashing(*_args):
    raise AssertionError("hashed again")


def test_member_id_hashes_survive_a_cache_started_over_meanwhile(monkeypatch) -> None:
    """Review 2 F11: another thread may clear the shared cache between this call's update and its
    reads; the call then answers from its own hashes instead of raising KeyError."""
    from kafka_rebalance.assign import uniform_group

    class ClearedOnUpdate(dict):
        def update(self, *args, **kwargs):
            super().update(*args, **kwargs)
            self.clear()  # what a concurrent call past MAX_ID_HASHES does

    monkeypatch.setattr(uniform_group, "_ID_HASHES", ClearedOnUpdate(old=1))
    for n in (3, 100):  # the per-id and the numpy way
        ids = tuple(f"member-{k}" for k in range(n))
        assert member_id_hashes(ids) == [string_hash(m) & 0xFFFFFFFF for m in ids]


def test_the_gc_pause_allocates_nothing_before_the_collector_is_off() -> None:
    """With a collection due at the next allocation, the pause that uniform and server-range take
    (base.pause_gc) starts none; `with gc_paused()` does (its bound __enter__/__exit__ are
    allocated before the collector is off), which this test shows too, so that it can fail."""
    import gc

    from kafka_rebalance.assign import base

    phases: list[str] = []

    def record(phase: str, _info: dict) -> None:
        phases.append(phase)

    enabled, threshold = gc.isenabled(), gc.get_threshold()
    gc.enable()
    gc.callbacks.append(record)
    try:
        gc.set_threshold(1)  # every tracked allocation starts a collection
        phases.clear()
        was = base.pause_gc()
        during = len(phases)
        assert not gc.isenabled()
        base.resume_gc(was)
        assert gc.isenabled()
        phases.clear()
        with base.gc_paused():
            during_with = len(phases)
    finally:
        gc.callbacks.remove(record)
        gc.set_threshold(*threshold)
        (gc.enable if enabled else gc.disable)()
    assert during == 0
    assert during_with > 0
