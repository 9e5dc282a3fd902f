"""sim/native_engine.pyx (the event loop on a C heap) against sim/engine.py, the reference: the same
schedules in the same order, the same clock, counts, timers, progress calls and refusals; and the
simulator runs on it when its build is fresh (`sim.compiled.ENGINE`). Every fingerprint scenario also
runs on it (tests/test_sim_fingerprint_legs.py's compiled leg uses `compiled.ENGINE`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from compiled_legs import no_compiled_leg
from kafka_rebalance.sim import compiled, world_core
from test_sim_engine_legs import PURE, _trace, op


def _native() -> Any:
    if compiled.NATIVE_ENGINE is None:
        no_compiled_leg("no fresh Cython build of sim/native_engine.pyx: only the reference ran")
    return compiled.NATIVE_ENGINE


def test_the_simulator_runs_the_fresh_native_build() -> None:
    native_engine = _native()
    assert compiled.ENGINE is native_engine
    assert world_core.ENGINE is native_engine
    assert compiled.engine_build() == "cython"
    assert Path(native_engine.__file__).name.startswith("native_engine.")


@settings(max_examples=200, deadline=None)
@given(st.lists(op, max_size=60), st.integers(0, 80))
def test_the_native_heap_runs_the_reference_schedule(
    ops: list[tuple[str, int, int]], end: int
) -> None:
    assert _trace(_native(), ops, end) == _trace(PURE, ops, end)


# what a callback does while the loop runs, one per event fired (in firing order): schedule an event
# at a time relative to now (the past is clamped) or after a delay, set a timer (a new one, or one
# moved earlier or later, or re-armed from its own callback), cancel one, or nothing
reaction = st.tuples(
    st.sampled_from(["at", "after", "timer", "cancel", "none"]),
    st.integers(-5, 40),
    st.integers(0, 4),
)


def _live_trace(
    engine: Any, ops: list[tuple[str, int, int]], reactions: list[tuple[str, int, int]], end: int
) -> list[Any]:
    """The simulator's use: most events and timers are added, moved and cancelled by callbacks
    while the loop runs. Each step records the clock, the event and every timer's deadline."""
    loop = engine.EventLoop()
    out: list[Any] = []
    todo = list(reversed(reactions))

    def act(kind: str, t: int, key: int) -> None:
        tag = len(out)
        if kind == "at":
            loop.at(loop.now + t, step, "at", tag)
        elif kind == "after":
            loop.after(t, step, "after", tag)
        elif kind == "timer":
            loop.set_timer(key, loop.now + t, lambda k, p: step("timer", k, p), tag)
        elif kind == "cancel":
            loop.cancel_timer(key)

    def step(*what: Any) -> None:
        out.append((loop.now, *what, [loop.timer_deadline(k) for k in range(5)]))
        if todo:
            act(*todo.pop())

    for kind, t, key in ops:
        act(kind, t, key)
    loop.run_until(end)
    out.append(("end", loop.now, loop.processed, len(todo)))
    loop.run_until(end + 200)
    out.append(("end", loop.now, loop.processed, len(todo)))
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(reaction, max_size=12), st.lists(reaction, max_size=80), st.integers(0, 80))
def test_events_and_timers_changed_while_the_loop_runs_run_as_by_the_reference(
    ops: list[tuple[str, int, int]], reactions: list[tuple[str, int, int]], end: int
) -> None:
    """Review 7 F6: the schedules above are mostly made before the run; here callbacks add, move
    and cancel timers and schedule events as the loop runs them, step by step as engine.py does."""
    assert _live_trace(_native(), ops, reactions, end) == _live_trace(PURE, ops, reactions, end)


def test_the_live_schedule_reaches_what_it_is_for() -> None:
    """The live trace is not vacuous: on a fixed schedule the reference runs a timer re-armed from
    its own callback, one moved later and one moved earlier from callbacks, and one set and then
    cancelled from callbacks, which never fires."""
    ops = [("timer", 5, 0), ("at", 1, 0), ("timer", 50, 2), ("at", 35, 0)]
    reactions = [
        ("timer", 10, 1),  # at 1 (the event): timer 1 set for 11
        ("timer", 3, 0),  # at 5 (timer 0): timer 0 re-armed from its own callback, for 8
        ("timer", 20, 1),  # at 8 (timer 0 again): timer 1 moved later, to 28
        ("timer", 2, 2),  # at 28 (timer 1): timer 2 moved earlier, from 50 to 30
        ("timer", 10, 3),  # at 30 (timer 2): timer 3 set for 40
        ("cancel", 0, 3),  # at 35 (the event): timer 3 cancelled
    ]
    trace = _live_trace(PURE, ops, reactions, 100)
    assert [row[:3] for row in trace[:-2]] == [
        (1, "at", 0),
        (5, "timer", 0),
        (8, "timer", 0),
        (28, "timer", 1),
        (30, "timer", 2),
        (35, "at", 0),
    ]
    assert trace[-3][-1] == [None, None, None, 40, None]  # timer 3 queued when cancelled
    # 6 steps and 3 heap entries that run nothing: timer 1's first (moved later: queued again),
    # timer 2's first (moved earlier: a newer version), timer 3's (cancelled); every reaction ran
    assert trace[-2:] == [("end", 100, 9, 0), ("end", 300, 9, 0)]


def _run(engine: Any, n: int, times: list[int]) -> list[Any]:
    """Many events at few distinct times (the heap's order on equal times), progress calls, stop."""
    loop = engine.EventLoop()
    out: list[Any] = []
    for i in range(n):
        loop.at(times[i % len(times)], lambda i=i: out.append((loop.now, i)))
    loop.at(times[0], loop.stop)
    loop.run_until(10**6, lambda t: out.append(("progress", t)))
    out.append(("stopped", loop.now, loop.processed))
    return out


@pytest.mark.parametrize("n", [1, 7, 20_000])
def test_equal_times_progress_and_stop(n: int) -> None:
    times = [5, 3, 5, 9, 3, 2**40]
    assert _run(_native(), n, times) == _run(PURE, n, times)


def _refusal(engine: Any, t: Any) -> str:
    loop = engine.EventLoop()
    try:
        loop.at(t, print)
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__
    return "accepted"


@pytest.mark.parametrize("t", [1.5, "7", None])
def test_a_time_that_is_not_an_int_is_refused_as_by_the_reference(t: Any) -> None:
    assert _refusal(_native(), t) == _refusal(PURE, t) == "TypeError"


def test_an_exception_in_an_event_propagates_and_leaves_the_rest_queued() -> None:
    def trace(engine: Any) -> list[Any]:
        loop = engine.EventLoop()
        seen: list[Any] = []

        def boom() -> None:
            raise ValueError("boom")

        loop.at(1, seen.append, 1)
        loop.at(2, boom)
        loop.at(3, seen.append, 3)
        with pytest.raises(ValueError, match="boom"):
            loop.run_until(10)
        seen.append(("after", loop.now, loop.processed))
        loop.run_until(10)
        seen.append(("end", loop.now, loop.processed))
        return seen

    assert trace(_native()) == trace(PURE)


def test_queued_callbacks_are_released() -> None:
    """References held by queued events are dropped with the loop (no leak per event)."""
    import sys

    marker = object()
    before = sys.getrefcount(marker)
    loop = _native().EventLoop()
    for i in range(100):
        loop.at(i, id, marker)
    assert sys.getrefcount(marker) > before
    loop.run_until(49)
    del loop
    assert sys.getrefcount(marker) == before


def test_a_finished_run_is_collected() -> None:
    """Every run ends with events still queued (the next polls, the next lag sample), bound to its
    members and world: the collector must see those references, or each run's world leaks."""
    import gc

    from kafka_rebalance.sim.api import simulate_scenario
    from kafka_rebalance.sim.scenario import parse_simulation_scenario
    from sim_fingerprint_set import scenarios

    assert world_core.ENGINE is _native()
    doc = dict(scenarios())["rolling-range"]

    def members_alive() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if type(o).__name__ == "SimMember")

    before = members_alive()
    during: list[int] = []
    for _ in range(2):
        simulate_scenario(
            parse_simulation_scenario(doc),
            collect_events=False,
            on_world=lambda world: during.append(members_alive()),
            core="reference",  # the reference world's members (SimMember) on this engine
        )
    assert min(during) > before  # the run had members to leak (review 7: not 0 == 0)
    assert members_alive() == before


def _far_trace(engine: Any, times: list[int], end: int) -> list[Any]:
    """Times past 64 bits (and past `end`), scheduled before and during the run, events, timers."""
    loop = engine.EventLoop()
    out: list[Any] = []

    def note(tag: Any) -> None:
        out.append((tag, loop.now))
        if tag == "spawn":  # scheduled from inside an event, some of it past 64 bits
            loop.after(2**63 - 1, note, "spawned-far")
            loop.at(-(2**70), note, "spawned-past")
            loop.after(1, note, "spawned-near")

    loop.at(5, note, "spawn")
    for i, t in enumerate(times):
        loop.at(t, note, i)
    loop.set_timer("k", 2**64 + 3, lambda key, payload: out.append((key, payload, loop.now)), "p")
    loop.run_until(end)
    out.append(("first", loop.now, loop.processed, loop.timer_deadline("k")))
    loop.run_until(2**72)
    out.append(("second", loop.now, loop.processed, loop.timer_deadline("k")))
    loop.after(3, note, "last")
    loop.run_until(2**72 + 10)
    out.append(("third", loop.now, loop.processed))
    return out


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.integers(0, 50),
            st.integers(2**63 - 3, 2**63 + 3),
            st.integers(2**64, 2**71),
            st.integers(-(2**70), -(2**63)),
        ),
        max_size=20,
    ),
    st.one_of(st.integers(0, 60), st.integers(2**63 - 2, 2**63 + 2)),
)
def test_times_past_64_bits_run_as_by_the_reference(times: list[int], end: int) -> None:
    """A scenario may put a restart's `down_ms` at 2**63 - 1 (review 7 F2): the reference accepts
    any int; the C heap keeps such times aside, in the same order."""
    assert _far_trace(_native(), times, end) == _far_trace(PURE, times, end)


# absolute times for the far live trace: near, just below and past 2**63, past 2**64
FAR = st.one_of(
    st.integers(-5, 60), st.integers(2**63 - 3, 2**63 + 3), st.integers(2**64, 2**64 + 5)
)
far_reaction = st.tuples(st.sampled_from(["at", "timer", "cancel", "none"]), FAR, st.integers(0, 3))


def _far_live_trace(
    engine: Any, ops: list[tuple[str, int, int]], reactions: list[tuple[str, int, int]], end: int
) -> list[Any]:
    """`_live_trace` with absolute times that reach past 64 bits: events and timers set, moved and
    cancelled at or past 2**63, from callbacks while the loop runs, and `end` near 2**63."""
    loop = engine.EventLoop()
    out: list[Any] = []
    todo = list(reversed(reactions))

    def act(kind: str, t: int, key: int) -> None:
        tag = len(out)
        if kind == "at":
            loop.at(t, step, "at", tag)
        elif kind == "timer":
            loop.set_timer(key, t, lambda k, p: step("timer", k, p), tag)
        elif kind == "cancel":
            loop.cancel_timer(key)

    def step(*what: Any) -> None:
        out.append((loop.now, *what, [loop.timer_deadline(k) for k in range(4)]))
        if todo:
            act(*todo.pop())

    for kind, t, key in ops:
        act(kind, t, key)
    out.append(("deadlines", [loop.timer_deadline(k) for k in range(4)]))
    loop.run_until(end)
    out.append(("end", loop.now, loop.processed, [loop.timer_deadline(k) for k in range(4)]))
    loop.run_until(2**72)
    out.append(("end", loop.now, loop.processed, len(todo)))
    return out


# a far timer moved (later, then earlier) and cancelled from callbacks, always in the draws: the
# events at 1, 2 and 3 move timer 0 past 2**64, cancel timer 1, move timer 0 below 2**63
FAR_EXAMPLE = (
    [("timer", 2**63 + 1, 0), ("at", 1, 0), ("at", 2, 0), ("at", 3, 0), ("timer", 2**64 + 2, 1)],
    [("timer", 2**64 + 5, 0), ("cancel", 0, 1), ("timer", 2**63 - 2, 0)],
    2**63,
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(far_reaction, max_size=12),
    st.lists(far_reaction, max_size=40),
    st.one_of(st.integers(0, 80), st.integers(2**63 - 2, 2**63 + 2)),
)
@example(*FAR_EXAMPLE)
def test_far_timers_moved_and_cancelled_while_the_loop_runs_run_as_by_the_reference(
    ops: list[tuple[str, int, int]], reactions: list[tuple[str, int, int]], end: int
) -> None:
    """Review 8 F8: no committed test moved or cancelled a timer at or past 2**63 (the claim that
    one caught a reference whose cancel_timer misses far timers was not backed by a test); here
    callbacks set, move and cancel events and timers at -5..60, 2**63 +- 3 and past 2**64."""
    assert _far_live_trace(_native(), ops, reactions, end) == _far_live_trace(
        PURE, ops, reactions, end
    )


def test_the_far_example_moves_and_cancels_far_timers() -> None:
    """FAR_EXAMPLE is not vacuous: on the reference, timer 0 (at 2**63 + 1) is moved later past
    2**64 and then earlier below 2**63, and timer 1 (past 2**64) is cancelled and never fires."""
    trace = _far_live_trace(PURE, *FAR_EXAMPLE)
    assert trace[0] == ("deadlines", [2**63 + 1, 2**64 + 2, None, None])
    # each row: the clock, the step, the deadlines before its reaction runs
    rows = [(row[0], row[1], row[-1]) for row in trace[1:5]]
    assert rows == [
        (1, "at", [2**63 + 1, 2**64 + 2, None, None]),  # then: timer 0 moved later, past 2**64
        (2, "at", [2**64 + 5, 2**64 + 2, None, None]),  # then: timer 1 (past 2**64) cancelled
        (3, "at", [2**64 + 5, None, None, None]),  # then: timer 0 moved earlier, below 2**63
        (2**63 - 2, "timer", [None, None, None, None]),  # it fires there, once
    ]
    assert trace[5] == ("end", 2**63, 4, [None] * 4)
    assert trace[6][:2] == ("end", 2**72)  # the far entries left run nothing: no step after


def test_a_past_time_that_is_not_an_int_is_clamped_as_by_the_reference() -> None:
    def trace(engine: Any) -> list[Any]:
        loop = engine.EventLoop()
        out: list[Any] = []
        loop.run_until(10)
        loop.at(2.5, lambda: out.append(loop.now))  # in the past: now, before any key arithmetic
        loop.run_until(20)
        return [*out, loop.now, loop.processed]

    assert trace(_native()) == trace(PURE) == [10, 20, 1]
