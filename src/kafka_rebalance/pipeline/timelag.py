"""Time lag by interpolating log-end offsets, as kafka-lag-exporter's MemoryTable does (pure).

Source: seglo/kafka-lag-exporter LookupTable.scala. A partition keeps a
sliding table of (log_end_offset, time) points (60 by default); a flat run is
compressed to its first and last point; out-of-order or decreasing points are
refused. A group's time lag at poll time `now` is `now` minus the time at
which the log end was at the committed offset: interpolated between the two
points around it, else extrapolated along the oldest-to-newest trend line;
zero when the committed offset equals the newest log end; unknown (NaN) with
fewer than two points.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field


@dataclass
class LookupTable:
    size: int = 60
    points: deque = field(default_factory=deque)  # (offset, time_ms), oldest first

    def add_point(self, offset: int, time_ms: int) -> str:
        if self.points:
            last_offset, last_time = self.points[-1]
            if last_time >= time_ms:
                return "OutOfOrder"
            if last_offset > offset:
                return "NonMonotonic"
            if len(self.points) > 1 and last_offset == offset and self.points[-2][0] == offset:
                self.points[-1] = (offset, time_ms)
                return "Updated"
        if len(self.points) == self.size:
            self.points.popleft()
        self.points.append((offset, time_ms))
        return "Inserted"

    def lookup(self, offset: int) -> float | None:
        """The predicted time (ms) the log end was at `offset`; None for LagIsZero, NaN for TooFewPoints."""
        if self.points and offset == self.points[-1][0]:
            return None
        if len(self.points) < 2:
            return math.nan
        pts = list(self.points)
        left, right = pts[0], pts[-1]
        for i in range(len(pts) - 1, 0, -1):
            lo, hi = pts[i - 1], pts[i]
            if lo[0] <= offset <= hi[0]:
                left, right = lo, hi
                break
        dx = float(right[1] - left[1])
        dy = float(right[0] - left[0])
        if dy == 0.0:
            return math.nan  # a flat table cannot place the offset in time
        return right[1] - (right[0] - offset) * dx / dy

    def time_lag_ms(self, offset: int, now_ms: int) -> float:
        predicted = self.lookup(offset)
        if predicted is None:
            return 0.0
        return now_ms - predicted
