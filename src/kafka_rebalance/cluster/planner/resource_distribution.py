"""Usage distribution goals (Cruise Control's DiskUsageDistributionGoal,
NetworkInboundUsageDistributionGoal, NetworkOutboundUsageDistributionGoal, CpuUsageDistributionGoal,
LeaderBytesInDistributionGoal): every broker at most band x its share of the cluster's load.

A broker's share is 1 / brokers, or its share of the total capacity when every usable broker declares
one (Cruise Control balances utilization: load / capacity against the cluster's average). Network out,
CPU and leader bytes in follow leadership: transfers first, then replica moves. LeaderBytesIn moves
leadership only.
"""

from __future__ import annotations

import numpy as np

from .load_goal import LoadGoal
from .state import PlanState

NAMES = {
    "size_bytes": "DiskUsageDistributionGoal",
    "bytes_in": "NetworkInboundUsageDistributionGoal",
    "nw_out": "NetworkOutboundUsageDistributionGoal",
    "cpu": "CpuUsageDistributionGoal",
    "leader_bytes_in": "LeaderBytesInDistributionGoal",
}


class ResourceDistributionGoal(LoadGoal):
    def __init__(self, resource: str, band: float) -> None:
        if resource not in NAMES:
            raise ValueError(resource)
        self.resource = resource
        self.band = band
        self.name = NAMES[resource]
        self.replica_moves = resource != "leader_bytes_in"

    def weights(self, state: PlanState) -> np.ndarray:
        """Each usable broker's share weight: its capacity when all declare one, else 1."""
        el = state.eligible
        cap = state.capacity.get(self.resource)
        if cap is not None and el.any() and np.isfinite(cap[el]).all() and (cap[el] > 0).all():
            return np.where(el, cap, 0.0)
        return el.astype(np.float64)

    def limits(self, state: PlanState) -> np.ndarray:
        w = self.weights(state)
        total = state.load(self.resource).sum()
        return self.band * total * w / max(w.sum(), 1e-300)

    def ratio(self, state: PlanState) -> float:
        """max over usable brokers of (load / weight) over (total / total weight): 1.0 is perfect."""
        w = self.weights(state)
        el = state.eligible & (w > 0)
        total = state.load(self.resource).sum()
        if not el.any() or total <= 0:
            return 1.0
        util = state.load(self.resource)[el] / w[el]
        mean = total / w[el].sum()
        return float(util.max() / mean) if mean > 0 else 1.0

    def metric(self, state: PlanState) -> dict:
        return {"value": self.ratio(state), "limit": self.band, "measure": "max/mean"}

    def explain(self, state: PlanState) -> str:
        from .explain import explain_load

        return explain_load(self, state)
