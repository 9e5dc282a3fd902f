"""Hard goals: no broker above `threshold` of a capacity (Cruise Control's DiskCapacityGoal and
NetworkInboundCapacityGoal, threshold 0.8 by default).

Both resources are carried by every replica (size_bytes, bytes_in), so only
replica moves fix them: the broker's largest replicas go first, each to the
broker with the most headroom that every goal accepts. Brokers without a
declared capacity are unlimited.
"""

from __future__ import annotations

import numpy as np

from .goal import Context, Goal
from .state import PlanState

DEFAULT_CAPACITY_THRESHOLD = 0.8


class CapacityGoal(Goal):
    hard = True
    resource = "size_bytes"

    def __init__(self, threshold: float = DEFAULT_CAPACITY_THRESHOLD) -> None:
        self.threshold = threshold

    def capacity(self, state: PlanState) -> np.ndarray:
        raise NotImplementedError

    def limit(self, state: PlanState) -> np.ndarray:
        return self.capacity(state) * self.threshold

    def accepts_move(self, state: PlanState, p: int, s: int, dst: int) -> bool:
        load = state.load(self.resource)
        return bool(
            load[dst] + state.partition_value(self.resource)[p]
            <= self.capacity(state)[dst] * self.threshold
        )

    def satisfied(self, state: PlanState) -> bool:
        e = state.eligible
        return bool((state.load(self.resource)[e] <= self.limit(state)[e]).all())

    def lower_bound(self, state: PlanState) -> int:
        return state.replicas_to_shed(self.resource, self.limit(state))

    def optimize(self, state: PlanState, ctx: Context) -> None:
        lim = self.limit(state)
        cap = self.capacity(state)
        load = state.load(self.resource)
        vals = state.partition_value(self.resource)
        R = state.R
        elig = np.nonzero(state.eligible)[0]
        for b in np.nonzero(state.eligible & (load > lim))[0].tolist():
            slots = state.slots_on(b).copy()
            slots = slots[np.argsort(-vals[slots // R], kind="stable")]
            for f in slots.tolist():
                if load[b] <= lim[b]:
                    break
                p, s = divmod(f, R)
                for dst in elig[np.argsort(load[elig] / cap[elig], kind="stable")].tolist():
                    if dst != b and ctx.can_move(p, s, dst):
                        ctx.move(p, s, dst)
                        break
            if load[b] > lim[b]:
                ctx.violations.append(
                    f"broker {state.broker_ids[b]} stays above {self.threshold:.0%} of its "
                    f"{self.resource} capacity"
                )


class DiskCapacityGoal(CapacityGoal):
    name = "DiskCapacityGoal"
    resource = "size_bytes"

    def capacity(self, state: PlanState) -> np.ndarray:
        return state.disk_cap


class NetworkInboundCapacityGoal(CapacityGoal):
    name = "NetworkInboundCapacityGoal"
    resource = "bytes_in"

    def capacity(self, state: PlanState) -> np.ndarray:
        return state.nw_in_cap
