"""Discrete-event engine over a virtual clock.

Events are ordered by (time, insertion sequence), so equal-time events run in
the order they were scheduled and a run is reproducible byte for byte.
Keyed timers can be rescheduled or cancelled cheaply: a stale heap entry is
skipped when it surfaces (lazy deletion), and moving a deadline later does
not push a new entry until the old one pops.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any


class EventLoop:
    __slots__ = ("now", "_heap", "_seq", "_timers", "processed", "_stopped")

    def __init__(self) -> None:
        self.now = 0
        self._heap: list = []
        self._seq = 0
        self._timers: dict[Any, list] = {}  # key -> [deadline, payload, callback, version]
        self.processed = 0
        self._stopped = False

    def at(self, t: int, fn: Callable, *args: Any) -> None:
        """Run fn(*args) at time t (never before now)."""
        if t < self.now:
            t = self.now
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, fn, args))

    def after(self, delay: int, fn: Callable, *args: Any) -> None:
        self.at(self.now + delay, fn, *args)

    # keyed timers -----------------------------------------------------------

    def set_timer(
        self, key: Any, deadline: int, callback: Callable[[Any, Any], None], payload: Any = None
    ) -> None:
        """(Re)arm the timer `key`; callback(key, payload) runs at the deadline unless re-armed or cancelled."""
        entry = self._timers.get(key)
        if entry is not None and entry[0] <= deadline and entry[3] >= 0:
            # moving later: keep the queued heap entry, it will re-queue itself when it pops
            entry[0], entry[1], entry[2] = deadline, payload, callback
            return
        version = (entry[3] + 1) if entry is not None and entry[3] >= 0 else 0
        self._timers[key] = [deadline, payload, callback, version]
        self.at(deadline, self._fire, key, version)

    def cancel_timer(self, key: Any) -> None:
        self._timers.pop(key, None)

    def timer_deadline(self, key: Any) -> int | None:
        e = self._timers.get(key)
        return None if e is None else e[0]

    def _fire(self, key: Any, version: int) -> None:
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

    def run_until(self, end: int, progress: Callable[[int], None] | None = None) -> None:
        heap = self._heap
        pop = heapq.heappop
        n = 0
        while heap and not self._stopped:
            t = heap[0][0]
            if t > end:
                break
            _, _, fn, args = pop(heap)
            self.now = t
            fn(*args)
            n += 1
            if progress is not None and not (n & 0x3FFF):
                progress(t)
        self.processed += n
        self.now = max(self.now, end) if not self._stopped else self.now
