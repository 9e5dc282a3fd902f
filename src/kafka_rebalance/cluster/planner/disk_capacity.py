"""Hard goal: no broker above `threshold` of its disk capacity (Cruise Control's DiskCapacityGoal, 0.8)."""

from __future__ import annotations

import numpy as np

from .goal import Context, Goal
from .state import PlanState

DEFAULT_CAPACITY_THRESHOLD = 0.8


class DiskCapacityGoal(Goal):
    name = "DiskCapacityGoal"
    hard = True

    def __init__(self, threshold: float = DEFAULT_CAPACITY_THRESHOLD) -> None:
        self.threshold = threshold

    def limit(self, state: PlanState) -> np.ndarray:
        return state.disk_cap * self.threshold

    def accepts_move(self, state: PlanState, p: int, s: int, dst: int) -> bool:
        return bool(state.disk[dst] + state.size_bytes[p] <= state.disk_cap[dst] * self.threshold)

    def satisfied(self, state: PlanState) -> bool:
        e = state.eligible
        return bool((state.disk[e] <= self.limit(state)[e]).all())

    def lower_bound(self, state: PlanState) -> int:
        lim = self.limit(state)
        total = 0
        for b in np.nonzero(state.eligible & (state.disk > lim))[0].tolist():
            sizes = np.sort(state.size_bytes[state.slots_on(b) // state.R])[::-1]
            need = state.disk[b] - lim[b]
            total += int(np.searchsorted(np.cumsum(sizes), need) + 1)
        return total

    def optimize(self, state: PlanState, ctx: Context) -> None:
        lim = self.limit(state)
        R = state.R
        elig = np.nonzero(state.eligible)[0]
        for b in np.nonzero(state.eligible & (state.disk > lim))[0].tolist():
            slots = state.slots_on(b).copy()
            slots = slots[np.argsort(-state.size_bytes[slots // R], kind="stable")]
            for f in slots.tolist():
                if state.disk[b] <= lim[b]:
                    break
                p, s = divmod(f, R)
                for dst in elig[np.argsort(state.disk[elig] / state.disk_cap[elig], kind="stable")].tolist():
                    if dst != b and ctx.can_move(p, s, dst):
                        ctx.move(p, s, dst)
                        break
            if state.disk[b] > lim[b]:
                ctx.violations.append(f"broker {state.broker_ids[b]} stays above {self.threshold:.0%} of its disk")
