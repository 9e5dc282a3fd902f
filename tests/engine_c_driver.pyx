# cython: language_level=3
"""Drives sim/native_engine's C-level API (`EventLoop.at_c`, `after_c`, `now_c`, `Handler.fire`:
what the native world's modules cimport) beside its Python-level `at` and `after`, for
tests/test_sim_native_engine_c.py, which runs the same schedule on sim/engine.py (the reference).
Built by bench/_cython_driver.build under build/bench-native, never installed."""

from libc.stdint cimport int64_t

from kafka_rebalance.sim.native_engine cimport EventLoop, Handler


cdef class Recorder(Handler):
    """Notes every event fired, C-level (`fire`) or Python-level (`py_event`): the clock, which way
    it came, its kind, int and payload, and the sequence numbers the loop has taken; then schedules
    the events `reactions` lists under that payload."""

    cdef EventLoop loop
    cdef public list fired
    cdef dict reactions

    def __init__(self, EventLoop loop, dict reactions):
        self.loop = loop
        self.fired = []
        self.reactions = reactions

    cdef int fire(self, int kind, int64_t a, object payload) except -1:
        # `now`, not the saturating `now_c()`: past 64 bits (the far heap) the clock is still exact
        self._note(self.loop.now, "c", kind, a, payload)
        return 0

    def py_event(self, kind, a, payload):
        self._note(self.loop.now, "py", kind, a, payload)

    cdef int _note(self, object now, str via, int kind, int64_t a, object payload) except -1:
        self.fired.append((now, via, kind, a, payload, self.loop._seq))
        for op in self.reactions.get(payload, ()):
            schedule(self.loop, self, op)
        return 0


cdef int64_t schedule(EventLoop loop, Recorder h, tuple op) except? -1:
    """One scheduling call, op = (how, time or delay, kind, a, payload); the sequence numbers taken
    after it."""
    how, t, kind, a, payload = op
    if how == "at_c":
        loop.at_c(t, h, kind, a, payload)
    elif how == "after_c":
        loop.after_c(t, h, kind, a, payload)
    elif how == "at":
        loop.at(t, h.py_event, kind, a, payload)
    elif how == "after":
        loop.after(t, h.py_event, kind, a, payload)
    else:
        raise ValueError(how)
    return loop._seq


def run(EventLoop loop, list phases, dict reactions):
    """Each phase (ops, end): its ops scheduled from outside the loop, then `run_until(end)`.
    Returns the events fired (and a row per phase's end: the clock, `now_c()`'s saturated one,
    processed, sequences taken) and the sequences taken after each outside call."""
    h = Recorder(loop, reactions)
    taken = []
    for ops, end in phases:
        for op in ops:
            taken.append(schedule(loop, h, op))
        loop.run_until(end)
        h.fired.append(("end", loop.now, loop.now_c(), loop.processed, loop._seq))
    return h.fired, taken
