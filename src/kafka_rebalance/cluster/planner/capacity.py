"""Hard capacity goals (Cruise Control's DiskCapacityGoal, NetworkInboundCapacityGoal,
NetworkOutboundCapacityGoal, CpuCapacityGoal, ReplicaCapacityGoal) and the soft PotentialNwOutGoal.

No broker may carry more than threshold x its capacity (defaults: disk 0.8, network in and out 0.8,
CPU 0.7); brokers without a declared capacity are unlimited. Network out and CPU follow leadership,
so leadership transfers are tried before data moves. ReplicaCapacityGoal caps replicas per broker
(`max.replicas.per.broker`, 10,000). PotentialNwOutGoal keeps the network out each broker would carry
if all its replicas led under the network-out capacity limit, by replica moves only.
"""

from __future__ import annotations

import numpy as np

from .goal import Context, Goal
from .load_goal import LoadGoal
from .options import DEFAULT_CAPACITY_THRESHOLDS
from .state import PlanState

DEFAULT_CAPACITY_THRESHOLD = 0.8
UNIT = {"size_bytes": "disk", "bytes_in": "network in", "nw_out": "network out", "cpu": "CPU"}


class CapacityGoal(LoadGoal):
    hard = True

    def __init__(self, threshold: float | None = None) -> None:
        self.threshold = (
            DEFAULT_CAPACITY_THRESHOLDS.get(self.resource, DEFAULT_CAPACITY_THRESHOLD)
            if threshold is None
            else threshold
        )

    def capacity(self, state: PlanState) -> np.ndarray:
        return state.capacity[self.resource]

    def limits(self, state: PlanState) -> np.ndarray:
        return self.capacity(state) * self.threshold

    def metric(self, state: PlanState) -> dict:
        cap = self.capacity(state)
        el = state.eligible & np.isfinite(cap) & (cap > 0)
        if not el.any():
            return {}
        used = state.load(self.resource)[el] / cap[el]
        return {"value": float(used.max()), "limit": self.threshold, "measure": "max used/capacity"}

    def explain(self, state: PlanState) -> str:
        from .explain import explain_load

        return explain_load(self, state)


class DiskCapacityGoal(CapacityGoal):
    name = "DiskCapacityGoal"
    resource = "size_bytes"


class NetworkInboundCapacityGoal(CapacityGoal):
    name = "NetworkInboundCapacityGoal"
    resource = "bytes_in"


class NetworkOutboundCapacityGoal(CapacityGoal):
    name = "NetworkOutboundCapacityGoal"
    resource = "nw_out"


class CpuCapacityGoal(CapacityGoal):
    name = "CpuCapacityGoal"
    resource = "cpu"

    def limits(self, state: PlanState) -> np.ndarray:
        from .cpu_model import CpuSource

        if state.cpu_source is CpuSource.RELATIVE:
            # no CPU sample: the estimate has no unit, a capacity in cores cannot be compared to it
            return np.full(state.B, np.inf)
        return super().limits(state)

    def metric(self, state: PlanState) -> dict:
        from .cpu_model import CpuSource

        if state.cpu_source is CpuSource.RELATIVE:
            return {}  # not checked: no CPU sample gives the estimate a unit
        return super().metric(state)


class PotentialNwOutGoal(CapacityGoal):
    name = "PotentialNwOutGoal"
    hard = False
    resource = "potential_nw_out"
    leadership = False

    def __init__(self, threshold: float | None = None) -> None:
        super().__init__(DEFAULT_CAPACITY_THRESHOLDS["nw_out"] if threshold is None else threshold)


class ReplicaCapacityGoal(Goal):
    """No broker above max.replicas.per.broker replicas (hard)."""

    name = "ReplicaCapacityGoal"
    hard = True

    def __init__(self, max_replicas: int = 10_000) -> None:
        self.max_replicas = max_replicas

    def accepts_move(self, state: PlanState, p: int, s: int, dst: int) -> bool:
        return bool(state.cnt[dst] + 1 <= self.max_replicas)

    def violation(self, state: PlanState) -> float:
        el = state.eligible
        return float(np.maximum(0, state.cnt[el] - self.max_replicas).sum())

    def lower_bound(self, state: PlanState) -> int:
        return int(self.violation(state))

    def metric(self, state: PlanState) -> dict:
        el = state.eligible
        top = int(state.cnt[el].max()) if el.any() else 0
        return {"value": top, "limit": self.max_replicas, "measure": "max replicas per broker"}

    def explain(self, state: PlanState) -> str:
        el = state.eligible
        total = int(state.cnt.sum())
        room = int(el.sum()) * self.max_replicas
        m = self.metric(state)
        why = (
            f"{total:,} replicas do not fit {int(el.sum())} brokers x {self.max_replicas:,}"
            if total > room
            else "the moves that would shed replicas are refused by the goals before it"
        )
        return f"replicas per broker max {m['value']:,} > {self.max_replicas:,}: {why}"

    def optimize(self, state: PlanState, ctx: Context) -> None:
        R = state.R
        el = np.nonzero(state.eligible & state.receives)[0]
        for b in np.nonzero(state.eligible & (state.cnt > self.max_replicas))[0].tolist():
            for f in state.slots_on(b).copy().tolist():
                if state.cnt[b] <= self.max_replicas:
                    break
                p, s = divmod(f, R)
                for dst in el[np.argsort(state.cnt[el], kind="stable")].tolist():
                    if state.cnt[dst] + 1 <= self.max_replicas and ctx.can_move(p, s, dst):
                        ctx.move(p, s, dst)
                        break
