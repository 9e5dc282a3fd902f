"""sim/native_books.pyx (the world's books and the network's arrival times by member index) against
`WorldCore` itself, and sim/native_batch_time.pyx (the poll's doubles) against `SimMember._busy_for`
(member.py's source) and the poll's expressions, over random inputs: the same numbers, the same
draws of the world's rng in the same order; where the reference's unbounded int would leave int64,
the native side refuses (OverflowError), never wraps."""

from __future__ import annotations

import dataclasses
import math
import random
import struct
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from compiled_legs import require_build
from kafka_rebalance import native
from kafka_rebalance.sim import member
from kafka_rebalance.sim.api import parse_simulation_scenario
from kafka_rebalance.sim.world_core import WorldCore

BUSY_FOR = native.source_module(member).SimMember.__dict__["_busy_for"]  # the reference, as Python
INT64 = range(-(2**63), 2**63)


def _books() -> Any:
    return require_build("native_books")


def _batch_time() -> Any:
    return require_build("native_batch_time")


def _world(partitions: int, **fields: Any) -> WorldCore:
    sc = parse_simulation_scenario(
        {
            "duration_ms": 10**6,
            "group": {"id": "g", "assignors": ["range"]},
            "topics": [{"name": "t", "partitions": partitions, "produce_rate": 10}],
            "members": {"count": 2, "processing_ms_per_record": 1.0},
        }
    )
    w = WorldCore(dataclasses.replace(sc, **fields))
    w.loop = SimpleNamespace(now=0)  # the clock the reference reads; the test moves it
    return w


# ------------------------------------------------------------------ books


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 12), st.integers(0, 2**32), st.integers(10, 120))
def test_the_books_are_world_cores(partitions: int, seed: int, steps: int) -> None:
    """Random availability changes, revocations, losses, assignments (moves), pauses, finished
    batches, lag samples and generations, then the run's end: every book equal."""
    nb = _books()
    rng = random.Random(seed)
    w = _world(partitions)
    books = nb.Books(partitions)
    names = [f"m{i}" for i in range(5)]
    members = [SimpleNamespace(name=n, generation=0) for n in names]
    now = 0
    for _ in range(steps):
        now += rng.choice([0, 1, 13, 400])
        w.loop.now = now
        i = rng.randrange(len(names))
        ps = rng.sample(range(partitions), rng.randint(0, partitions))
        op = rng.randrange(9)
        if op == 0:
            w.set_available_many(ps, now, names[i])
            books.set_available_many(ps, now, i)
        elif op == 1:
            w.set_unavailable_many(ps, now)
            books.set_unavailable_many(ps, now)
        elif op == 2:
            w.revoke(members[i], ps, "join prepare")
            books.revoke(ps, now)
        elif op == 3:
            w.lose(members[i], ps, "poll timeout")
            books.lose(ps, now)
        elif op == 4:
            w.assigned(members[i], ps, ps)
            books.assigned(i, ps)
        elif op == 5:
            ms = rng.choice([-5, 0, 1, 250])
            w.add_paused(members[i], ms)
            books.add_paused(i, ms)
        elif op == 6:
            done, dup = rng.randint(0, 500), rng.randint(0, 20)
            w.duplicates += dup
            w.processed += done
            books.add_processed(done, dup)
        elif op == 7:
            lag = rng.randint(0, 10**6)
            if lag > w.lag_max:  # Simulation._lag_sample
                w.lag_max = lag
            books.lag_sample(lag)
        else:
            w.pending_cause = books.pending_cause = rng.choice(["initial join", "m1 left"])
            w.on_generation(w.generation + 1)
            books.on_generation(books.generation + 1, now)
    end = now + 1000
    for p in range(partitions):  # Simulation.run's end
        if w.avail_owner[p] is None:
            w.unavailable_ms += end - w.unavail_since[p]
    books.finish(end)
    index = {n: i for i, n in enumerate(names)}
    last, avail, since = books.owners()
    assert last == [-1 if o is None else index[o] for o in w.last_owner]
    assert avail == [-1 if o is None else index[o] for o in w.avail_owner]
    assert since == w.unavail_since
    # item lists, not dicts: the reference's dict keeps first-pause order (review 9 F3)
    assert list(books.paused_by_member().items()) == [
        (index[n], ms) for n, ms in w.paused_by_member.items()
    ]
    for book in (
        "unavailable_ms",
        "member_paused_ms",
        "partitions_moved",
        "revocations",
        "duplicates",
        "processed",
        "lag_max",
        "rebalances",
        "generation",
        "timeline",
    ):
        assert getattr(books, book) == getattr(w, book), book


def test_paused_by_member_keeps_the_order_of_first_pause() -> None:
    """The reference's dict gains a member the first time its paused time goes positive; a
    zero or negative pause adds nobody (the books kept index order: review 9 F3, note 14)."""
    w = _world(1)
    books = _books().Books(1)
    members = [SimpleNamespace(name=f"m{i}", generation=0) for i in range(5)]
    for i, ms in [(3, 0), (4, -5), (3, 5), (0, 1), (3, 2), (4, 7), (1, 0)]:
        w.add_paused(members[i], ms)
        books.add_paused(i, ms)
    assert list(books.paused_by_member().items()) == [(3, 7), (0, 1), (4, 7)]
    assert list(w.paused_by_member.items()) == [("m3", 7), ("m0", 1), ("m4", 7)]


def test_a_book_that_would_leave_int64_is_refused() -> None:
    books = _books().Books(1)
    books.add_processed(2**63 - 1, 0)
    with pytest.raises(OverflowError):
        books.add_processed(1, 0)
    with pytest.raises(OverflowError):
        books.set_available_many([0], 2**62, 0)  # a time past what the books accept


@pytest.mark.parametrize("end", [-(2**63), -1, 2**61, 2**63 - 1])
def test_an_end_outside_the_books_times_is_refused(end: int) -> None:
    """finish(end) took any int64: finish(-2**63) wrapped the unavailable time to 2**63 - 5 where
    the reference counts -2**63 - 5 (review 8 F5); now refused as every other time here."""
    books = _books().Books(1)
    books.set_available_many([0], 0, 0)
    books.set_unavailable_many([0], 5)
    with pytest.raises(OverflowError):
        books.finish(end)
    assert books.unavailable_ms == 0
    books.finish(2**61 - 1)  # the last time the books take: counted, exact
    assert books.unavailable_ms == 2**61 - 1 - 5


# ---------------------------------------------------------------- network


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 2**32),
    st.integers(0, 30),
    st.sampled_from([0, 1, 4, 25]),
    st.sampled_from([(), (3,), (1, 5, 40, 200)]),
    st.integers(10, 150),
)
def test_arrival_times_are_world_cores_with_the_same_draws(
    seed: int, latency: int, jitter: int, samples: tuple[int, ...], steps: int
) -> None:
    """Messages up and down on members' connections (restarts open new ones; an older
    incarnation's connection still answers a failed commit): the same arrival times, from the same
    rng stream drawn in the same order, with the same clamping to the connection's last arrival."""
    nb = _books()
    rng = random.Random(seed)
    w = _world(
        1,
        seed=seed,
        network_latency_ms=latency,
        network_jitter_ms=jitter,
        network_latency_samples_ms=samples,
    )
    native_rng = random.Random(seed)
    net = nb.Network(native_rng.random, latency, jitter, samples)
    incarnation = [1, 1, 1]
    now = 0
    for _ in range(steps):
        now += rng.choice([0, 0, 1, 3, 50])
        w.loop.now = now
        m = rng.randrange(3)
        if rng.random() < 0.1:
            incarnation[m] += 1  # a restart: a new connection
        inc = incarnation[m] if rng.random() < 0.9 else rng.randint(1, incarnation[m])
        up = rng.random() < 0.5
        expected = w._arrival(w._up if up else w._down, f"m{m}#{inc}")
        assert net.arrival(m, inc, up, now) == expected
    assert native_rng.getstate() == w.rng.getstate()  # as many draws


# ------------------------------------------------------------- batch times

EDGES = [0.0, -0.0, 5e-324, 1e-300, 1e-6, 0.1, 0.5, 0.999999, 1.0, 3.7, 2.0**53, 1e300, 1e308]
doubles = st.one_of(
    st.sampled_from(EDGES + [-x for x in EDGES] + [math.inf, -math.inf, math.nan]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(0.0, 100.0),
)
times = st.one_of(st.integers(-(2**53), 2**53), st.integers(0, 10**7), st.sampled_from([0, 2**53]))


def _bits(x: Any) -> bytes:
    """The double's bits; every NaN alike: which operand's payload and sign a NaN result carries
    differs between C's and Python's evaluation of the same expression (the CI draw pj=NaN with a
    payload, r=NaN), and nothing the simulator does with a NaN (compare, int()) can tell them apart."""
    if isinstance(x, float) and math.isnan(x):
        return b"nan"
    return struct.pack("<d", x)


def _outcome(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except (OverflowError, ValueError, ZeroDivisionError) as e:
        return type(e)


def _same(native_out: Any, ref_out: Any) -> bool:
    """Equal, bit for bit for doubles; a refusal (OverflowError) where the reference's int leaves
    int64 or the reference raised it too."""
    if native_out is OverflowError:
        value = ref_out[0] if isinstance(ref_out, tuple) else ref_out
        return ref_out is OverflowError or (isinstance(value, int) and value not in INT64)
    if isinstance(native_out, tuple):
        return (
            isinstance(ref_out, tuple)
            and native_out[0] == ref_out[0]
            and _bits(native_out[1]) == _bits(float(ref_out[1]))
        )
    if isinstance(native_out, float):
        return _bits(native_out) == _bits(ref_out)
    return bool(native_out == ref_out)


def _reference_busy_for(
    now: int, n: int, rate: Any, busy_until: int, caught_up: int, stall: int, last_t: int
) -> tuple[int, Any]:
    m = SimpleNamespace(
        busy_until=busy_until, caught_up_from=caught_up, stall_until=stall, batch_last_t=last_t
    )
    dur = BUSY_FOR(m, now, n * rate, rate)
    return dur, m.batch_t0


@settings(max_examples=2000, deadline=None)
@given(doubles, doubles, doubles)
@example(0.5, 0.2, 0.999999)
@example(59.57816607368379, struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000001))[0], math.nan)
@example(1.0, 0.0, 0.5)
def test_the_batch_rate_is_the_polls_expression(ms: float, pj: float, r: float) -> None:
    nt = _batch_time()
    expected = ms * (1.0 + pj * (2.0 * r - 1.0)) if pj else ms  # SimMember._poll
    assert _bits(nt.batch_rate(ms, pj, r)) == _bits(expected)


@settings(max_examples=3000, deadline=None)
@given(times, st.integers(0, 2**31), doubles, times, times, times, times)
@example(100, 500, 0.5, 90, 95, 0, 99)
@example(2**53, 1, 1e-300, 2**53, 0, 0, 0)
@example(0, 2**31, 1e300, 0, 0, 0, 0)
def test_the_busy_time_is_busy_fors(
    now: int, n: int, rate: float, busy_until: int, caught_up: int, stall: int, last_t: int
) -> None:
    """Random doubles (edges, infinities and NaN included) and times: the same duration and batch
    start, bit for bit, or the same refusal."""
    nt = _batch_time()
    args = (now, n, rate, busy_until, caught_up, stall, last_t)
    assert _same(_outcome(nt.busy_for, *args), _outcome(_reference_busy_for, *args))


@settings(max_examples=500, deadline=None)
@given(st.integers(0, 10**7), st.integers(1, 2**20), st.integers(1, 1000), st.data())
def test_an_integer_rate_gives_the_same_busy_time(
    now: int, n: int, ms: int, data: st.DataObject
) -> None:
    """An int processing_ms_per_record without jitter: the reference's arithmetic is then all in
    ints; the doubles give the same while everything is exact in a double (here)."""
    nt = _batch_time()
    ts = [data.draw(st.integers(0, 10**7)) for _ in range(4)]
    got = nt.busy_for(now, n, float(ms), *ts)
    assert _same(got, _reference_busy_for(now, n, ms, *ts))


@settings(max_examples=2000, deadline=None)
@given(times, doubles, doubles)
def test_the_processed_limit_is_processed_bys(now: int, t0: float, rate: float) -> None:
    nt = _batch_time()

    def reference(now: int, t0: float, rate: float) -> int:
        return int((now - t0) / rate)  # SimMember._processed_by

    assert _same(_outcome(nt.processed_limit, now, t0, rate), _outcome(reference, now, t0, rate))


def test_ints_beyond_a_double_are_refused() -> None:
    nt = _batch_time()
    with pytest.raises(OverflowError):
        nt.busy_for(2**53 + 1, 1, 1.0, 0, 0, 0, 0)
