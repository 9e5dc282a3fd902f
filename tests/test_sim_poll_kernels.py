"""sim/poll_kernels.py compiled by mypyc gives exactly what its Python source gives, and both give
what small independent references give.

The fingerprint set (test_sim_fingerprints.py) runs whichever build is installed, and
test_sim_fingerprint_legs.py a few scenarios on both; this test runs each leg against plain
references on generated inputs (odd ones included: positions missing, partitions with no
production, a budget that runs out mid-partition, overlapping replays), and the legs side by side.
Without a compiled build the compiled leg skips, saying so (fails under
KAFKA_REBALANCE_REQUIRE_COMPILED=1).
"""

from __future__ import annotations

import copy
import math
import os
import shutil
from array import array
from fractions import Fraction
from pathlib import Path
from types import ModuleType

from hypothesis import example, given, settings
from hypothesis import strategies as st

from compiled_legs import from_source, no_compiled_leg, require_build
from kafka_rebalance import native
from kafka_rebalance.model import TopicPartition
from kafka_rebalance.sim import compiled
from kafka_rebalance.sim.partitions import ProcessedOffsets

SOURCE = Path(compiled.__file__).with_name("poll_kernels.py")
PURE = from_source(SOURCE, "pure_poll_kernels")
LEGS = [PURE]
if compiled.is_compiled():
    LEGS.append(compiled.KERNELS)
NEVER = PURE.NEVER


def _two_legs() -> None:
    if len(LEGS) < 2:
        no_compiled_leg(
            "no fresh compiled build of sim/poll_kernels.py (pip install -e . with mypyc builds "
            "it): only one leg, nothing to compare it with (the references still ran)"
        )


def test_the_compiled_build_is_in_use_when_it_was_built() -> None:
    if not compiled.is_compiled():
        no_compiled_leg(
            "no fresh compiled build of sim/poll_kernels.py (pip install -e . with mypyc builds it)"
        )
    assert not Path(compiled.KERNELS.__file__).name.endswith(".py")
    assert compiled.KERNELS is not PURE
    assert native.is_fresh_build(compiled.KERNELS.__file__)


def _fake_build(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the poll kernels' source and a stand-in for its build, stamped as setup.py does."""
    folder = tmp_path / "sim"
    folder.mkdir()
    source = folder / "poll_kernels.py"
    shutil.copy(SOURCE, source)
    built = folder / "poll_kernels.cpython-311-x86_64-linux-gnu.so"
    built.write_bytes(b"not loaded by these tests")
    native.stamp_for(built).write_text(native.source_digest(source) + "\n", encoding="ascii")
    return source, built


def test_a_build_is_used_by_content_not_by_modification_time(tmp_path: Path) -> None:
    """pip writes a wheel's .py after its .so: a newer source with the same content is fresh (F2)."""
    source, built = _fake_build(tmp_path)
    assert native.is_fresh_build(str(built))
    native._fresh.cache_clear()
    st_built = built.stat()
    os.utime(source, ns=(st_built.st_atime_ns, st_built.st_mtime_ns + 5_000))  # 5 µs newer
    assert native.is_fresh_build(str(built))


def test_an_edited_source_or_a_missing_stamp_makes_the_build_stale(tmp_path: Path) -> None:
    source, built = _fake_build(tmp_path)
    source.write_text(source.read_text() + "\n# edited\n")
    native._fresh.cache_clear()
    assert not native.is_fresh_build(str(built))
    stale = ModuleType("kafka_rebalance.sim.poll_kernels")
    stale.__file__ = str(built)
    loaded = native.load(stale)  # the source runs instead of the stale build
    assert loaded is not stale and loaded.__file__ == str(source)
    assert loaded.fetch is not None and not native.is_compiled(loaded)
    native.stamp_for(built).unlink()
    source.write_text(SOURCE.read_text())
    native._fresh.cache_clear()
    assert not native.is_fresh_build(str(built))


# -- small independent references (the loops member.py had before the kernels) ----------------


def _end_offset(p: int, t: int, base, base_t, num, den) -> int:
    return base[p] + math.floor(Fraction(num[p] * (t - base_t[p]), den[p]))


def _reached_at(p: int, offset: int, base, base_t, num, den) -> int:
    """The first time the log-end offset of p reaches `offset` (num[p] > 0)."""
    return base_t[p] + math.ceil(Fraction((offset - base[p]) * den[p], num[p]))


def ref_fetch(order, positions, base, base_t, num, den, now, room, batch):
    last = 0
    for p in order:
        if p not in positions or room == 0:
            continue
        n = _end_offset(p, now, base, base_t, num, den) - positions[p]
        if n <= 0:
            continue
        take = min(n, room)
        start = positions[p]
        batch.append((p, start, start + take))
        positions[p] = start + take
        room -= take
        t = _reached_at(p, start + take, base, base_t, num, den) if num[p] > 0 else base_t[p]
        last = max(last, t)
    return room, last


def ref_next_arrival(owned, positions, base, base_t, num, den) -> int:
    times = [
        max(base_t[p], _reached_at(p, positions[p] + 1, base, base_t, num, den))
        for p in owned
        if num[p] > 0 and p in positions
    ]
    return min(times, default=NEVER)


def ref_changed_positions(owned, positions, sent) -> dict:
    return {p: positions[p] for p in owned if p in positions and sent.get(p) != positions[p]}


table = st.integers(min_value=1, max_value=12).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 10_000), min_size=n, max_size=n),  # base
        st.lists(st.integers(0, 5_000), min_size=n, max_size=n),  # base_t
        st.lists(st.integers(0, 7), min_size=n, max_size=n),  # num (0: nothing produced)
        st.lists(st.integers(1, 9), min_size=n, max_size=n),  # den
        st.lists(st.one_of(st.none(), st.integers(0, 20_000)), min_size=n, max_size=n),
        st.permutations(list(range(n))),
    )
)


def _poll_loops(k: ModuleType, t, now: int, room: int) -> tuple:
    base, base_t, num, den, pos, order = t
    positions = {p: v for p, v in enumerate(pos) if v is not None}
    sent = {p: v for p, v in list(positions.items())[::2]}
    batch: list = []
    # fetch walks `order` from index `start` round: the reference takes the rotated list
    start = (now * 7) % len(order)
    left, last = k.fetch(order, start, positions, base, base_t, num, den, now, room, batch)
    stored: dict = {}
    committed = [0] * len(base)
    changed = k.changed_positions(order, positions, sent)
    k.store_commits(changed, now, stored, committed)
    return (
        left,
        last,
        batch,
        positions,
        k.next_arrival(order, positions, base, base_t, num, den),
        k.uncommitted(order, sent, positions),
        list(changed.items()),
        stored,
        committed,
    )


@settings(max_examples=300, deadline=None)
@given(t=table, now=st.integers(0, 20_000), room=st.integers(1, 600))
def test_fetch_next_arrival_and_changed_positions_match_the_references(t, now, room) -> None:
    base, base_t, num, den, pos, order = t
    positions = {p: v for p, v in enumerate(pos) if v is not None}
    sent = {p: v for p, v in list(positions.items())[::2]}
    batch: list = []
    start = (now * 7) % len(order)
    rotated = order[start:] + order[:start]
    left, last = ref_fetch(rotated, positions, base, base_t, num, den, now, room, batch)
    expected_next = ref_next_arrival(order, positions, base, base_t, num, den)
    expected_changed = list(ref_changed_positions(order, positions, sent).items())
    expected_uncommitted = any(sent.get(p) != positions.get(p) for p in order)
    for k in LEGS:
        got = _poll_loops(k, t, now, room)
        assert got[:4] == (left, last, batch, positions), k.__file__
        assert got[4] == expected_next, k.__file__
        assert got[5] == expected_uncommitted, k.__file__
        assert got[6] == expected_changed, k.__file__
        assert got[7] == {p: (off, now) for p, off in expected_changed}, k.__file__
        committed = [0] * len(base)
        for p, off in expected_changed:
            committed[p] = off
        assert got[8] == committed, k.__file__


@settings(max_examples=300, deadline=None)
@given(t=table, now=st.integers(0, 20_000), room=st.integers(1, 600))
def test_fetch_next_arrival_and_commits_agree_across_legs(t, now: int, room: int) -> None:
    _two_legs()
    results = [_poll_loops(k, t, now, room) for k in LEGS]
    assert all(r == results[0] for r in results)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 50), st.integers(0, 20)), max_size=30))
def test_finish_agrees_and_counts_replays(spans) -> None:
    batch = [(p, a, a + n) for p, a, n in spans]
    results = []
    for k in LEGS:
        processed = [ProcessedOffsets() for _ in range(4)]
        dup = k.finish(copy.deepcopy(batch), processed)
        results.append((dup, [(po.starts, po.ends) for po in processed]))
    assert all(r == results[0] for r in results)
    # the reference: a set of offsets per partition
    seen: dict[int, set[int]] = {}
    dup = 0
    for p, a, b in batch:
        s = seen.setdefault(p, set())
        dup += len(s.intersection(range(a, b)))
        s.update(range(a, b))
    assert results[0][0] == dup


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["m1", "m2", "m3", "m4"]),
        st.lists(st.tuples(st.sampled_from(["a", "b", "gone"]), st.integers(0, 7)), max_size=12),
    ),
    st.dictionaries(st.integers(0, 9), st.sampled_from(["m1", "m2", "m3", "m4"])),
    st.booleans(),
)
def test_assignment_indices_match_the_reference(result, owned_by, coop: bool) -> None:
    """The leader's assignment as partition indices; cooperative: what another member claims is withheld."""
    by_topic = {"a": [0, 1, 2, 3, 4], "b": [5, 6, 7, 8, 9]}  # "gone": a topic not in the table
    assignment = {mid: [TopicPartition(t, q) for t, q in tps] for mid, tps in result.items()}
    expected = {
        mid: [
            by_topic[tp.topic][tp.partition]
            for tp in tps
            if tp.partition < len(by_topic.get(tp.topic, []))
            and (not coop or owned_by.get(by_topic[tp.topic][tp.partition], mid) == mid)
        ]
        for mid, tps in assignment.items()
    }
    for k in LEGS:
        got = k.assignment_indices(assignment, by_topic, owned_by, coop)
        assert got == expected and list(got) == list(expected), k.__file__


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.dictionaries(
        st.sampled_from(["m1", "m2", "m3", "m4", "m5"]),
        st.lists(st.tuples(st.sampled_from(["a", "b", "gone"]), st.integers(0, 7)), max_size=12),
    ),
    st.dictionaries(st.integers(0, 9), st.sampled_from(["m1", "m2", "m3", "m4"])),
    st.booleans(),
)
@example({"m1": [], "m2": [("a", 1), ("a", 2)]}, {1: "m1", 2: "m2"}, True)  # withheld; empty
@example({"m5": [("b", 0), ("a", 4)]}, {5: "m1"}, True)  # m5 claims nothing: b-0 withheld
@example({"m1": [("a", 6), ("gone", 0)], "m2": []}, {0: "m2"}, False)
def test_native_assignment_indices_are_the_reference_kernels(result, owned_by, coop: bool) -> None:
    """native_world_client's C `assignment_indices` (claims as member ordinals per partition index,
    built as `NativeWorld.leader_assign` builds them) gives poll_kernels' reference result."""
    build = require_build("native_world_client")
    by_topic = {"a": [0, 1, 2, 3, 4], "b": [5, 6, 7, 8, 9]}  # "gone": a topic not in the table
    assignment = {mid: [TopicPartition(t, q) for t, q in tps] for mid, tps in result.items()}
    ordinal: dict[str, int] = {}
    owner = array("i", [-1]) * 10
    for p, mid in owned_by.items():
        owner[p] = ordinal.setdefault(mid, len(ordinal))
    expected = PURE.assignment_indices(assignment, by_topic, owned_by, coop)
    got = build.assignment_indices(assignment, by_topic, owner, ordinal, coop)
    assert got == expected and list(got) == list(expected)
