"""sim/poll_kernels.py compiled by mypyc gives exactly what its Python source gives.

The fingerprint set (test_sim_fingerprints.py) runs whichever build is installed; this test runs
both legs side by side on generated inputs (odd ones included: positions missing, partitions
with no production, a budget that runs out mid-partition, overlapping replays). Without a
compiled build the compiled leg skips, saying so.
"""

from __future__ import annotations

import copy
import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.sim import compiled
from kafka_rebalance.sim.partitions import ProcessedOffsets

SOURCE = Path(compiled.__file__).with_name("poll_kernels.py")


def _pure() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pure_poll_kernels", SOURCE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PURE = _pure()
LEGS = [PURE]
if compiled.is_compiled():
    LEGS.append(compiled.KERNELS)


def test_the_compiled_build_is_in_use_when_it_was_built() -> None:
    if not compiled.is_compiled():
        pytest.skip(
            "no compiled build of sim/poll_kernels.py (pip install -e . with mypyc builds it)"
        )
    assert not Path(compiled.KERNELS.__file__).name.endswith(".py")
    assert compiled.KERNELS is not PURE


def test_an_edited_source_is_used_over_an_older_build(tmp_path: Path) -> None:
    """compiled._load: a build older than the source would run stale code; the source wins."""
    if not compiled.is_compiled():
        pytest.skip("no compiled build of sim/poll_kernels.py to be stale")
    built = Path(compiled.KERNELS.__file__)
    st_src, st_built = SOURCE.stat(), built.stat()
    try:
        os.utime(SOURCE, (st_built.st_atime + 10, st_built.st_mtime + 10))
        assert Path(compiled._load().__file__).suffix == ".py"
    finally:
        os.utime(SOURCE, (st_src.st_atime, st_src.st_mtime))
    assert compiled._load() is compiled.KERNELS or Path(compiled._load().__file__) == built


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


@settings(max_examples=300, deadline=None)
@given(t=table, now=st.integers(0, 20_000), room=st.integers(1, 600))
def test_fetch_next_arrival_and_commits_agree(t, now: int, room: int) -> None:
    base, base_t, num, den, pos, order = t
    results = []
    for k in LEGS:
        positions = {p: v for p, v in enumerate(pos) if v is not None}
        sent = {p: v for p, v in list(positions.items())[::2]}
        batch: list = []
        left, last = k.fetch(order, positions, base, base_t, num, den, now, room, batch)
        stored: dict = {}
        committed = [0] * len(base)
        changed = k.changed_positions(order, positions, sent)
        k.store_commits(changed, now, stored, committed)
        results.append(
            (
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
        )
    assert all(r == results[0] for r in results)
    left, _, batch, *_ = results[0]
    assert room - left == sum(b - a for _, a, b in batch)


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
