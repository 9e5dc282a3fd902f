"""sim/native_engine's C-level API (`sim/native_engine.pxd`: `EventLoop.at_c`, `after_c`, `now_c`,
`Handler.fire`), which the native world uses for polls, heartbeat ticks, requests and responses,
driven from Cython (tests/engine_c_driver.pyx) and mixed with `at` and `after` at equal and
different times, from outside the loop and from inside events: the order fired, the clock, each
event's kind, int and payload, and the sequence numbers taken after every call are those of
sim/engine.py (the reference) running the same schedule, where a C-level event is a plain callback.
Each C-level call takes one sequence number, as `at` does, so equal times keep the order of the
calls (review 10 S5: the API was tested only end to end)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiled_legs import no_compiled_leg, require_build
from test_sim_engine_legs import PURE

TESTS = Path(__file__).resolve().parent
BENCH = TESTS.parent / "bench"
INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1
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
        fired.append(("end", loop.now, loop.now, loop.processed, loop._seq))
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
                ("at_c", 3, INT32_MAX, -(2**63), "E"),
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
    assert kinds["E"] == ("c", INT32_MAX, -(2**63)) and kinds["C"] == ("c", 3, INT64_MAX)
    assert kinds["A"] == ("py", 1, 0) and kinds[("J", 1)] == ("c", 1, 0)
    assert taken == [1, 2, 3, 4, 5, 6, 10, 11]  # one sequence number per call, C-level or not


how = st.sampled_from(HOWS)
kind = st.sampled_from([1, 2, 3, 7, INT32_MAX, -1])  # any but 0, which marks a plain callback
a = st.sampled_from([0, 1, -1, 12_345, INT64_MAX, -(2**63)])


@st.composite
def schedules(draw: st.DrawFn) -> tuple[list[Phase], dict[Any, list[Op]]]:
    """1-3 phases of 0-12 outside calls each, and 0-20 calls made from inside events (each under an
    earlier call's payload, so each runs once): times and delays from -5 to 40, so many fall on one
    time and some in the past. Payloads are unique: ints and tuples."""
    made: list[Any] = []

    def op() -> Op:
        payload: Any = len(made) if len(made) % 2 else (len(made), "x")
        made.append(payload)
        return (draw(how), draw(st.integers(-5, 40)), draw(kind), draw(a), payload)

    phases = [
        ([op() for _ in range(draw(st.integers(0, 12)))], draw(st.integers(0, 60)))
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
