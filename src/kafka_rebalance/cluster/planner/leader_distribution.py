"""Leadership even across brokers with no data moved (LeaderReplicaDistributionGoal,
LeaderBytesInDistributionGoal / NetworkOutboundUsageDistributionGoal in Cruise Control).

The planned leader of each partition is re-chosen among the slots that may
lead after the plan: leader counts by the exact min-cost flow of
leader_balance (fewest leader changes), then, when `by_bytes`, bytes_out and
messages_in below band x mean by a greedy pass inside the count band.
"""

from __future__ import annotations

import numpy as np

from ..leader_balance import min_change_leaders, refine_leader_bytes
from .goal import Context, Goal
from .state import PlanState


class LeaderDistributionGoal(Goal):
    name = "LeaderReplicaDistributionGoal"

    def __init__(self, band: float, by_bytes: bool = True) -> None:
        self.band = band
        self.by_bytes = by_bytes
        self.optimal_changes: int | None = None
        self._limits: list[tuple[str, float]] = []

    def satisfied(self, state: PlanState) -> bool:
        """Leader counts (and, when asked, leader bytes) under the limits the optimization aimed at."""
        el = state.eligible
        return (
            all(state.load(r)[el].max() <= lim * (1 + 1e-9) for r, lim in self._limits)
            if el.any()
            else True
        )

    def optimize(self, state: PlanState, ctx: Context) -> None:
        P = state.P
        valid = state.rep >= 0
        b = np.maximum(state.rep, 0)
        ok = valid & state.eligible[b] & ((state.rep != state.rep0) | state.isr0)
        pp, ss = np.nonzero(ok)
        edge_p = pp.astype(np.int64)
        edge_b = state.rep[pp, ss].astype(np.int64)
        has_leader = state.leader0 >= 0
        current = np.where(
            has_leader, state.rep0[np.arange(P), np.maximum(state.leader0, 0)], -1
        ).astype(np.int64)
        n_lead_brokers = int(state.eligible.sum())
        sol = min_change_leaders(edge_p, edge_b, current, P, state.B, leader_brokers=n_lead_brokers)
        self.optimal_changes = sol.changes
        choice = sol.choice
        self._limits = [("leaders", float(sol.upper))]
        if self.by_bytes:
            n_lead = int((choice >= 0).sum())
            upper = max(sol.upper, int(np.floor(self.band * n_lead / max(n_lead_brokers, 1))))
            weights, names = [], []
            for name in ("bytes_out", "messages_in"):
                w = state.partition_value(name)
                if w.sum() > 0:
                    weights.append((w, self.band * w[choice >= 0].sum() / max(n_lead_brokers, 1)))
                    names.append(name)
            if weights:
                choice = refine_leader_bytes(choice, edge_p, edge_b, state.B, weights, upper)
            self._limits = [("leaders", float(upper))] + [
                (r, lim) for r, (_, lim) in zip(names, weights)
            ]
        for p in np.nonzero(choice >= 0)[0].tolist():
            row = state.rep[p]
            s = int(np.nonzero(row == choice[p])[0][0])
            if s != state.lslot[p]:
                state.set_leader(p, s)
