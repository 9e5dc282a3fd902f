"""sim/native_engine's C-level API (`sim/native_engine.pxd`: `EventLoop.at_c`, `after_c`, `now_c`,
`Handler.fire`), which the native world uses for polls, heartbeat ticks, requests and responses,
driven from Cython (tests/engine_c_driver.pyx) and mixed with `at` and `after` at equal and
different times, from outside the loop and from inside events: the order fired, the clock, each
event's kind, int and payload, and the sequence numbers taken after every call are those of
sim/engine.py (the reference) running the same schedule, where a C-level event is a plain callback.
Each C-level call takes one sequence number, as `at` does, so equal times keep the order of the
calls (review 10 S5: the API was tested only end to end). Times past 64 bits go to the loop's far
heap (`_push`'s far branch): C-level events there keep their kind, int and payload, fire after every
64-bit event, and `now_c()` saturates at INT64_MAX while `now` stays exact (review 11 S2)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiled_legs import no_compiled_leg, require_build
from kafka_rebalance.fields import INT32_MAX, INT64_MAX, INT64_MIN
from test_sim_engine_legs import PURE

TESTS = Path(__file__).resolve().parent
BENCH = TESTS.parent / "bench"
HOWS = ("at", "after", "at_c", "after_c")

Op = tuple[str, int, int, int, Any]  # (how, time or delay, kind, a, payload)
Phase = tuple[list[Op], int]  # the ops scheduled from outside, then run_until(end)


@pytest.fixture(scope="module")
def driver() -> Any:
    engine = require_build("native_engine")  # the driver cimports its .pxd: only a fresh build
    if importlib.util.find_spec("Cython") is None:
        # a skip, or under KAFKA_REBALANCE_REQUIRE_COMPILED=1 a failure: the only direct test of
        # the engine's C-level API must not vanish from a compiled run
        no_compiled_leg("the driver is Cython (pip install -e '.[dev]')")
    sys.path.insert(0, str(BENCH))
    try:
        from _cython_driver import build
    finally:
        sys.path.remove(str(BENCH))
    module = build("engine_c_driver", TESTS)
    return lambda phases, reactions: module.run(engine.EventLoop(), phases, reactions)


def reference(phases: list[Phase], reactions: dict[Any, list[Op]]) -> tuple[list, list]:
    """The same schedule on sim/engine.py's source: `at_c`/`after_c` are `at`/`after` of a callback
    that notes the event as the C-level one would."""
    loop = PURE.EventLoop()
    fired: list[Any] = []

    def note(via: str, kind: int, a: int, payload: Any) -> None:
        fired.append((loop.now, via, kind, a, payload, loop._seq))
        for op in reactions.get(payload, ()):
            schedule(op)

    def fire_c(kind: int, a: int, payload: Any) -> None:
        note("c", kind, a, payload)

    def fire_py(kind: int, a: int, payload: Any) -> None:
        note("py", kind, a, payload)

    def schedule(op: Op) -> int:
        how, t, kind, a, payload = op
        fn = fire_c if how.endswith("_c") else fire_py
        (loop.at if how.startswith("at") else loop.after)(t, fn, kind, a, payload)
        return loop._seq

    taken = []
    for ops, end in phases:
        taken += [schedule(op) for op in ops]
        loop.run_until(end)
        fired.append(("end", loop.now, min(loop.now, INT64_MAX), loop.processed, loop._seq))
    return fired, taken


def test_equal_times_fire_in_the_order_of_the_calls(driver: Any) -> None:
    """At one time, events fire in the order they were scheduled, whatever the call (`at`, `after`,
    `at_c`, `after_c`), and an event scheduled in the past or at now from inside an event runs at
    now after those already queued there."""
    phases: list[Phase] = [
        (
            [
                ("at", 5, 1, 0, "A"),
                ("at_c", 5, 2, -1, "B"),
                ("after_c", 5, 3, INT64_MAX, "C"),
                ("after", 5, 1, 7, "D"),
                ("at_c", 3, INT32_MAX, INT64_MIN, "E"),
                ("at", 3, 1, 0, "E2"),
            ],
            4,
        ),
        ([("after_c", 1, 1, 0, "H"), ("at_c", 5, 1, 0, "I")], 100),
    ]
    reactions: dict[Any, list[Op]] = {
        "E": [("at_c", 1, 9, 9, "F"), ("after", -3, 1, 0, "G"), ("after_c", 0, 1, 0, ("J", 1))],
        "B": [("at_c", 5, 1, 0, "K")],
    }
    fired, taken = driver(phases, reactions)
    assert (fired, taken) == reference(phases, reactions)
    order = [(row[0], row[4]) for row in fired if row[0] != "end"]
    assert order == [
        (3, "E"),
        (3, "E2"),
        (3, "F"),  # at_c in the past: clamped to now, after E2 (queued before it)
        (3, "G"),
        (3, ("J", 1)),
        (5, "A"),
        (5, "B"),
        (5, "C"),
        (5, "D"),
        (5, "H"),  # scheduled at now = 4 (run_until's end) + 1
        (5, "I"),
        (5, "K"),  # scheduled by B, after every event queued before B fired
    ]
    kinds = {row[4]: row[1:4] for row in fired if row[0] != "end"}
    assert kinds["E"] == ("c", INT32_MAX, INT64_MIN) and kinds["C"] == ("c", 3, INT64_MAX)
    assert kinds["A"] == ("py", 1, 0) and kinds[("J", 1)] == ("c", 1, 0)
    assert taken == [1, 2, 3, 4, 5, 6, 10, 11]  # one sequence number per call, C-level or not


def test_c_level_events_past_64_bits_fire_from_the_far_heap(driver: Any) -> None:
    """Times past 64 bits go to the far heap (`_push`'s far branch), whether the time is past them
    or the clock already is: C-level events there keep their kind, int and payload (the slot's
    `_kind`/`_a`), fire after the 64-bit events in time-then-call order, clamp a time in the past
    to now, and `now_c()` saturates at INT64_MAX while `now` stays exact (review 11 S2)."""
    top = INT64_MAX
    phases: list[Phase] = [
        ([("at", 3, 1, 0, "A")], 4),
        (
            [
                ("after_c", top, 2, 7, "F1"),  # now 4 + INT64_MAX: far from the start
                ("at", top + 3, 1, 0, "P1"),
                ("at_c", top, 3, INT64_MIN, "N1"),  # INT64_MAX itself is a 64-bit time
                ("after_c", top - 4, 1, 1, "N2"),
            ],
            top + 10,
        ),
        ([("at_c", 5, 1, 0, "L1"), ("after_c", 1, 2, 3, "L2"), ("after", 0, 1, 0, "L3")], top + 10),
        ([], top + 20),
    ]
    reactions: dict[Any, list[Op]] = {
        "N2": [("after_c", 1, 4, 9, "R1")],  # from a 64-bit event to the far heap
        "F1": [  # the clock is past 64 bits: every call goes far, a past time clamped to now
            ("at_c", 0, 5, -1, "R2"),
            ("after_c", 0, 6, 2, "R3"),
            ("at", 1, 1, 0, "R4"),
            ("after", -2, 1, 0, "R5"),
        ],
    }
    fired, taken = driver(phases, reactions)
    assert (fired, taken) == reference(phases, reactions)
    events = [row for row in fired if row[0] != "end"]
    assert [(row[0] - top, row[4]) for row in events[1:]] == [
        (0, "N1"),
        (0, "N2"),
        (1, "R1"),
        (3, "P1"),
        (4, "F1"),
        (4, "R2"),
        (4, "R3"),
        (4, "R4"),
        (4, "R5"),
        (10, "L1"),
        (10, "L3"),
        (11, "L2"),
    ]
    kinds = {row[4]: row[1:4] for row in events}
    assert kinds["F1"] == ("c", 2, 7) and kinds["R1"] == ("c", 4, 9) and kinds["R2"] == ("c", 5, -1)
    assert kinds["N1"] == ("c", 3, INT64_MIN) and kinds["L2"] == ("c", 2, 3)
    assert kinds["P1"] == ("py", 1, 0) and kinds["R5"] == ("py", 1, 0)
    ends = [row[1:3] for row in fired if row[0] == "end"]
    assert ends == [(4, 4), (top + 10, top), (top + 10, top), (top + 20, top)]  # now, now_c()
    assert taken == [1, 2, 3, 4, 5, 11, 12, 13]


how = st.sampled_from(HOWS)
kind = st.sampled_from([1, 2, 3, 7, INT32_MAX, -1])  # any but 0, which marks a plain callback
a = st.sampled_from([0, 1, -1, 12_345, INT64_MAX, INT64_MIN])


@st.composite
def schedules(draw: st.DrawFn) -> tuple[list[Phase], dict[Any, list[Op]]]:
    """1-3 phases of 0-12 outside calls each, and 0-20 calls made from inside events (each under an
    earlier call's payload, so each runs once): times and delays mostly from -5 to 40, so many fall
    on one time and some in the past; one in five near INT64_MAX, and one phase end in four past
    it, so events reach the far heap (review 11 S2). Payloads are unique: ints and tuples."""
    made: list[Any] = []

    def op() -> Op:
        payload: Any = len(made) if len(made) % 2 else (len(made), "x")
        made.append(payload)
        h = draw(how)
        if draw(st.integers(0, 4)):
            t = draw(st.integers(-5, 40))
        else:  # a C-level call takes a 64-bit time or delay; `at` and `after` take any int
            t = INT64_MAX + draw(st.integers(-8, 0 if h.endswith("_c") else 8))
        return (h, t, draw(kind), draw(a), payload)

    def end() -> int:
        if draw(st.integers(0, 3)):
            return draw(st.integers(0, 60))
        return INT64_MAX + draw(st.integers(-4, 40))

    phases = [
        ([op() for _ in range(draw(st.integers(0, 12)))], end())
        for _ in range(draw(st.integers(1, 3)))
    ]
    reactions: dict[Any, list[Op]] = {}
    for _ in range(draw(st.integers(0, 20))):
        if made:
            parent = made[draw(st.integers(0, len(made) - 1))]
            reactions.setdefault(parent, []).append(op())
    return phases, reactions


@settings(
    max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
@given(schedules())
def test_mixed_schedules_run_as_the_reference(
    driver: Any, schedule: tuple[list[Phase], dict[Any, list[Op]]]
) -> None:
    phases, reactions = schedule
    assert driver(phases, reactions) == reference(phases, reactions)
