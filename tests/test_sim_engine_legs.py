"""sim/engine.py on both legs: its source and its mypyc build run the same schedules (timers moved,
cancelled, re-armed; events scheduled from inside events) in the same order. The Cython heap that
`sim.compiled.ENGINE` prefers (`sim/native_engine.pyx`) is compared with the same source in
tests/test_sim_native_engine.py."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from compiled_legs import from_source, no_compiled_leg
from kafka_rebalance import native
from kafka_rebalance.sim import compiled, engine

MYPYC = native.load(engine)  # engine.py's build when fresh, else engine.py itself
PURE = from_source(Path(compiled.__file__).with_name("engine.py"), "pure_engine")

# (kind, time or delay, key) operations: plain events, delayed ones, timers set and cancelled
op = st.tuples(
    st.sampled_from(["at", "after", "timer", "cancel", "chain"]),
    st.integers(-5, 60),
    st.integers(0, 4),
)


def _trace(engine: ModuleType, ops: list[tuple[str, int, int]], end: int) -> list[Any]:
    loop = engine.EventLoop()
    out: list[Any] = []

    def note(*what: Any) -> None:
        out.append((loop.now, *what))

    def chain(depth: int, delay: int) -> None:
        note("chain", depth)
        if depth:
            loop.after(delay, chain, depth - 1, delay)

    for i, (kind, t, key) in enumerate(ops):
        if kind == "at":
            loop.at(t, note, "at", i)
        elif kind == "after":
            loop.after(t, note, "after", i)
        elif kind == "timer":
            loop.set_timer(key, t, lambda k, p: note("timer", k, p), i)
        elif kind == "cancel":
            loop.cancel_timer(key)
        else:
            loop.at(t, chain, key, abs(t) % 7)
    out.append(("deadlines", [loop.timer_deadline(k) for k in range(5)]))
    loop.run_until(end)
    out.append(("end", loop.now, loop.processed))
    loop.run_until(end + 100)
    out.append(("end", loop.now, loop.processed))
    return out


def test_the_reference_orders_by_time_then_insertion() -> None:
    trace = _trace(
        PURE, [("at", 5, 0), ("at", 1, 0), ("at", 5, 0), ("timer", 3, 1), ("timer", 7, 1)], 50
    )
    assert [e[1:] for e in trace if e[0] != "deadlines" and e[0] != "end"] == [
        ("at", 1),
        ("at", 0),
        ("at", 2),
        ("timer", 1, 4),
    ]


@settings(max_examples=150, deadline=None)
@given(st.lists(op, max_size=40), st.integers(0, 80))
def test_both_legs_run_the_same_schedule(ops: list[tuple[str, int, int]], end: int) -> None:
    if compiled.engine_build(MYPYC) != "mypyc":
        no_compiled_leg("no fresh mypyc build of sim/engine.py: only the reference ran")
    assert _trace(MYPYC, ops, end) == _trace(PURE, ops, end)
