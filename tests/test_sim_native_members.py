"""sim/native_members.pyx (the native core's partition columns, processed intervals, owned partitions
and poll kernels) against the reference: `partitions.PartitionTable` and `ProcessedOffsets`, and
`poll_kernels.py`'s source (Python's unbounded ints), driven as `SimMember` drives them, over random
inputs. Where the int64 arithmetic could overflow, the native side must refuse, never wrap."""

from __future__ import annotations

import random
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiled_legs import from_source, require_build
from kafka_rebalance.sim.member_rebalance import join_complete
from kafka_rebalance.sim.partitions import PartitionTable, ProcessedOffsets

ROOT = Path(__file__).resolve().parent.parent
REF: ModuleType = from_source(
    ROOT / "src" / "kafka_rebalance" / "sim" / "poll_kernels.py", "poll_kernels_reference"
)


def _native() -> Any:
    return require_build("native_members")


# --------------------------------------------------------------- tables


@st.composite
def tables(draw: st.DrawFn) -> tuple[PartitionTable, int]:
    """A partition table as the world builds it (topics at 0, maybe grown later: bases and base
    times then differ), with random committed offsets; and a horizon past its last change."""
    table = PartitionTable()
    for t in range(draw(st.integers(1, 3))):
        rate = draw(st.sampled_from([0, 0.5, 1, 3.7, 10, 250, 1e6, 1e9]))
        table.add_topic(f"t{t}", draw(st.integers(1, 6)), rate, 0)
    grown_at = draw(st.integers(0, 10**6))
    if draw(st.booleans()):
        table.add_partitions("t0", draw(st.integers(1, 4)), grown_at)
    horizon = grown_at + draw(st.integers(0, 10**7))
    for p in range(len(table)):
        table.committed[p] = draw(st.integers(0, max(0, table.leo(p, horizon))))
    return table, horizon


@settings(max_examples=200, deadline=None)
@given(tables(), st.data())
def test_log_end_offsets_and_total_lag_are_the_tables(table_h: Any, data: st.DataObject) -> None:
    nm = _native()
    table, horizon = table_h
    cols = nm.PartitionColumns.from_table(table, horizon)
    for name in ("base", "base_t", "num", "den", "committed"):
        assert cols.column(name) == getattr(table, name)
    for now in data.draw(st.lists(st.integers(0, horizon), min_size=1, max_size=5)):
        assert [cols.leo(p, now) for p in range(len(table))] == [
            table.leo(p, now) for p in range(len(table))
        ]
        assert cols.total_lag(now) == table.total_lag(now)
        assert cols.produced(now) == int(table.leo_all(now).sum())  # Simulation.summary


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(-(2**62), 2**62),  # base
            st.integers(-(2**40), 2**40),  # base_t
            st.integers(-3, 2**40),  # num
            st.integers(-1, 2**40),  # den
        ),
        min_size=1,
        max_size=4,
    ),
    st.integers(0, 2**53),
    st.integers(0, 2**53),
)
def test_columns_refuse_what_could_overflow_and_else_compute_exactly(
    rows: list[tuple[int, int, int, int]], horizon: int, now: int
) -> None:
    """Any columns: refused (OverflowError) when the range check fails, else exact at every time up
    to the horizon (Python's floor division, numpy's total lag)."""
    nm = _native()
    base, base_t, num, den = (list(c) for c in zip(*rows))
    committed = [0] * len(rows)
    try:
        cols = nm.PartitionColumns(base, base_t, num, den, committed, horizon)
    except OverflowError:
        return
    assert all(nu >= 0 and d >= 1 for nu, d in zip(num, den))
    now = min(now, horizon)
    table = PartitionTable()
    table.base, table.base_t, table.num, table.den = base, base_t, num, den
    table.committed = committed
    table.tps = list(range(len(rows)))  # type: ignore[arg-type]  # only its length is read
    for p in range(len(rows)):
        assert cols.leo(p, now) == base[p] + (num[p] * (now - base_t[p])) // den[p]
    assert cols.total_lag(now) == table.total_lag(now)
    assert cols.produced(now) == int(table.leo_all(now).sum())


def test_total_lag_wraps_as_numpy_does() -> None:
    """Sixteen partitions each about 2**60 behind: numpy's int64 sums wrap; so do the twin's."""
    nm = _native()
    n = 16
    table = PartitionTable()
    table.base = [2**60] * n
    table.base_t, table.num, table.den, table.committed = [0] * n, [1] * n, [1] * n, [0] * n
    table.tps = list(range(n))  # type: ignore[arg-type]
    cols = nm.PartitionColumns.from_table(table, 1000)
    assert cols.total_lag(1000) == table.total_lag(1000)
    assert cols.total_lag(1000) != n * (2**60 + 1000)  # it did wrap
    assert cols.produced(1000) == int(table.leo_all(1000).sum())  # wraps the same way


def test_columns_refuse_a_run_that_could_overflow() -> None:
    nm = _native()
    table = PartitionTable()
    table.add_topic("t", 2, 1e9, 0)  # 1,000 records per ms on 2 partitions
    nm.PartitionColumns.from_table(table, 10**9)  # eleven days: fits
    with pytest.raises(OverflowError):
        nm.PartitionColumns.from_table(table, 2**53)  # log end offsets past int64's reach
    cols = nm.PartitionColumns.from_table(table, 10**6)
    with pytest.raises(OverflowError):
        cols.leo(0, 10**6 + 1)  # past the horizon checked
    with pytest.raises(OverflowError):
        cols.set_committed(0, cols.position_limit + 1)


# ------------------------------------------------------ processed intervals

intervals = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 60)).map(lambda ab: (ab[0], ab[0] + ab[1] // 3)),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(intervals, st.lists(st.integers(0, 80), max_size=5))
def test_processed_intervals_merge_and_count_duplicates_as_the_reference(
    adds: list[tuple[int, int]], limits: list[int]
) -> None:
    nm = _native()
    table = nm.ProcessedTable(2)
    ref = ProcessedOffsets()
    for a, b in adds:
        assert table.add(1, a, b) == ref.add(a, b)
        assert table.intervals(1) == (ref.starts, ref.ends)
    assert table.intervals(0) == ([], [])
    for n in limits:
        assert table.covered_below(1, n) == ref.covered_below(n)
    back = table.to_reference(1)
    assert (back.starts, back.ends) == (ref.starts, ref.ends)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.integers(2, 40), st.integers(-2, 12)).map(
            lambda t: (t[0], t[1], t[1] + t[2])
        ),
        max_size=30,
    )
)
def test_finishing_a_batch_is_poll_kernels_finish(batch: list[tuple[int, int, int]]) -> None:
    """Including the reference's fast path (a batch continuing where processing stopped) and its
    odd corners (an empty or reversed triple there)."""
    nm = _native()
    table = nm.ProcessedTable(3)
    ref = [ProcessedOffsets() for _ in range(3)]
    triples = nm.Triples()
    triples.extend(batch)
    assert triples.triples() == batch
    assert table.finish(triples) == REF.finish(batch, ref)
    for p in range(3):
        assert table.intervals(p) == (ref[p].starts, ref[p].ends)


# ----------------------------------------------------- owned partitions


class ReferenceMember:
    """The member's partition state as `SimMember` holds and changes it, over poll_kernels.py."""

    def __init__(self, table: PartitionTable) -> None:
        self.table = table
        self.owned: list[int] = []
        self.positions: dict[int, int] = {}
        self.sent: dict[int, int] = {}

    def complete_join(self, assignment: list[int], eager: bool) -> tuple[Any, ...]:
        revoked, added, owned, _ = join_complete(self.owned, assignment, eager)
        for p in revoked:
            self.positions.pop(p, None)
        self.owned = list(owned)
        for p in added:
            self.positions[p] = self.sent[p] = self.table.committed[p]
        return added

    def revoke(self, revoked: set[int]) -> None:
        self.owned = [p for p in self.owned if p not in revoked]
        for p in revoked:
            self.positions.pop(p, None)

    def fetch(self, token: int, now: int, room: int) -> tuple[int, int, list]:
        batch: list[tuple[int, int, int]] = []
        if not self.owned:
            return room, 0, batch
        t = self.table
        left, last = REF.fetch(
            self.owned,
            (token * 7) % len(self.owned),
            self.positions,
            t.base,
            t.base_t,
            t.num,
            t.den,
            now,
            room,
            batch,
        )
        return left, last, batch

    def state(self) -> tuple[Any, ...]:
        t = self.table
        return (
            self.owned,
            self.positions,
            {p: self.sent[p] for p in self.owned if p in self.sent},
            REF.next_arrival(self.owned, self.positions, t.base, t.base_t, t.num, t.den),
            REF.uncommitted(self.owned, self.sent, self.positions),
            list(REF.changed_positions(self.owned, self.positions, self.sent).items()),
        )


def _native_state(owned: Any) -> tuple[Any, ...]:
    return (
        owned.owned,
        owned.positions(),
        owned.sent_offsets(),
        owned.next_arrival(),
        owned.uncommitted(),
        list(owned.changed_positions().items()),
    )


@settings(max_examples=150, deadline=None)
@given(tables(), st.integers(0, 2**32), st.integers(20, 80))
def test_owned_partitions_and_poll_kernels_are_the_references(
    table_h: Any, seed: int, steps: int
) -> None:
    """A member's partitions through random joins (eager and cooperative), revocations, losses,
    polls (fetch rotation and budget), finished batches, commits (changed positions in owned
    order), failed commits and stored offsets: every kernel's answer and the state equal."""
    nm = _native()
    table, horizon = table_h
    rng = random.Random(seed)
    n = len(table)
    cols = nm.PartitionColumns.from_table(table, horizon)
    owned = nm.OwnedPartitions(cols)
    ref = ReferenceMember(table)
    done = nm.ProcessedTable(n)
    ref_done = [ProcessedOffsets() for _ in range(n)]
    now = rng.randint(0, horizon // 2)
    token = 0
    for _ in range(steps):
        op = rng.randrange(8)
        if op == 0:
            assignment = rng.sample(range(n), rng.randint(0, n))
            eager = rng.random() < 0.5
            if eager:  # an eager member revoked everything before it joined (_prepare_join)
                owned.remove(set(ref.owned))
                ref.revoke(set(ref.owned))
            added = ref.complete_join(assignment, eager)
            owned.complete_join(assignment, added)
        elif op == 1:
            gone = set(rng.sample(ref.owned, rng.randint(0, len(ref.owned))))
            ref.revoke(gone)
            owned.remove(gone)
        elif op == 2 and rng.random() < 0.3:
            ref.owned, ref.positions = [], {}
            owned.clear()
        elif op in (3, 4):
            now = min(horizon, now + rng.choice([0, 1, 7, 100, 5000]))
            token += 1
            room = rng.choice([0, 1, 3, 500, 10**6])
            left, last, batch = ref.fetch(token, now, room)
            got = nm.Triples()
            assert owned.fetch(token, now, room, got) == (left, last)
            assert got.triples() == batch
            assert done.finish(got) == REF.finish(batch, ref_done)
        elif op == 5:
            changed = REF.changed_positions(ref.owned, ref.positions, ref.sent)
            ref.sent.update(changed)
            assert list(owned.commit_changed().items()) == list(changed.items())
            for p, off in changed.items():
                table.committed[p] = off
                cols.set_committed(p, off)
        elif op == 6 and rng.random() < 0.3:
            ref.sent = {}
            owned.clear_sent()
        assert _native_state(owned) == ref.state()
    for p in range(n):
        assert done.intervals(p) == (ref_done[p].starts, ref_done[p].ends)
        assert cols.committed_at(p) == table.committed[p]
    lost = 0  # Simulation.summary's
    for p in range(n):
        c = table.committed[p]
        if c > 0:
            lost += c - ref_done[p].covered_below(c)
    assert done.lost(cols) == lost
