"""Discrete-event engine over a virtual clock.

Events are ordered by (time, insertion sequence), so equal-time events run in
the order they were scheduled and a run is reproducible byte for byte.
Keyed timers can be rescheduled or cancelled cheaply: a stale heap entry is
skipped when it surfaces (lazy deletion), and moving a deadline later does
not push a new entry until the old one pops.

The heap holds one int per event, time * 2**32 + sequence: the same order as (time, sequence),
and heapq compares two ints where it compared two tuples item by item (a rolling restart at 1,000
members keeps about 6,000 entries queued, so every event costs some 15 comparisons). What to run is
kept beside it, under that key. Times are ints (milliseconds); a run can schedule 2**32 events
before sequences would reach the time bits, and `at` refuses more rather than misorder them.

Written for mypyc (`setup.py` compiles it; `sim/compiled.py` picks the build only when it was made
from this source, else this file runs as it is). The clock and the keys are typed `Any`: they are
Python ints only compared and passed along, and a native int would be boxed again (a new object)
every time interpreted code reads `loop.now`.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any, Final

# Final: C statics in the build (a plain module global is a dict lookup at every use)
_SEQ_BITS: Final = 32
_SEQ_LIMIT: Final = 1 << 32
heappush: Final = heapq.heappush
heappop: Final = heapq.heappop


class EventLoop:
    def __init__(self) -> None:
        self.now: Any = 0
        self._heap: list[Any] = []  # time << 32 | sequence, one per queued event
        self._events: dict[Any, tuple[Any, tuple[Any, ...]]] = {}  # key -> (fn, args)
        self._seq = 0
        self._timers: dict[Any, list[Any]] = {}  # key -> [deadline, payload, callback, version]
        self.processed = 0
        self._stopped = False

    def at(self, t: Any, fn: Callable[..., Any], *args: Any) -> None:
        """Run fn(*args) at time t (never before now)."""
        now = self.now
        if t < now:
            t = now
        seq = self._seq + 1
        if seq >= _SEQ_LIMIT:
            raise OverflowError("the simulation scheduled 2**32 events: the event keys are full")
        self._seq = seq
        ti: int = t  # the key in native arithmetic, boxed once for the dict and the heap
        key: Any = (ti << _SEQ_BITS) | seq
        self._events[key] = (fn, args)
        heappush(self._heap, key)

    def after(self, delay: Any, fn: Callable[..., Any], *args: Any) -> None:
        """Run fn(*args) `delay` from now (never before now)."""
        now = self.now
        t = now + delay
        if t < now:
            t = now
        seq = self._seq + 1
        if seq >= _SEQ_LIMIT:
            raise OverflowError("the simulation scheduled 2**32 events: the event keys are full")
        self._seq = seq
        ti: int = t  # the key in native arithmetic, boxed once for the dict and the heap
        key: Any = (ti << _SEQ_BITS) | seq
        self._events[key] = (fn, args)
        heappush(self._heap, key)

    # keyed timers -----------------------------------------------------------

    def set_timer(
        self, key: Any, deadline: Any, callback: Callable[[Any, Any], None], payload: Any = None
    ) -> None:
        """(Re)arm the timer `key`; callback(key, payload) runs at the deadline unless re-armed or cancelled."""
        entry = self._timers.get(key)
        if entry is not None and entry[0] <= deadline and entry[3] >= 0:
            # moving later: keep the queued heap entry, it will re-queue itself when it pops
            entry[0] = deadline
            entry[1] = payload
            entry[2] = callback
            return
        version = (entry[3] + 1) if entry is not None and entry[3] >= 0 else 0
        self._timers[key] = [deadline, payload, callback, version]
        self.at(deadline, self._fire, key, version)

    def cancel_timer(self, key: Any) -> None:
        self._timers.pop(key, None)

    def timer_deadline(self, key: Any) -> Any:
        e = self._timers.get(key)
        return None if e is None else e[0]

    def _fire(self, key: Any, version: Any) -> None:
        entry = self._timers.get(key)
        if entry is None or entry[3] != version:
            return
        if entry[0] > self.now:  # deadline was moved later
            self.at(entry[0], self._fire, key, version)
            return
        del self._timers[key]
        entry[2](key, entry[1])

    # running ----------------------------------------------------------------

    def stop(self) -> None:
        self._stopped = True

    def run_until(self, end: Any, progress: Callable[[int], None] | None = None) -> None:
        heap = self._heap
        events = self._events
        n = 0
        while heap and not self._stopped:
            key = heap[0]
            ki: int = key
            t: Any = ki >> _SEQ_BITS
            if t > end:
                break
            heappop(heap)
            self.now = t
            entry = events.pop(key)
            fn: Any = entry[0]
            fn(*entry[1])
            n += 1
            if progress is not None and not (n & 0x3FFF):
                progress(t)
        self.processed += n
        if not self._stopped and end > self.now:
            self.now = end
