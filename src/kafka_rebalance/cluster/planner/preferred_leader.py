"""PreferredLeaderElectionGoal and demotion (Cruise Control's PreferredLeaderElectionGoal and its
demote_broker endpoint).

PreferredLeaderElectionGoal makes each partition's first replica its leader wherever that replica may
lead and the goals before it accept: leadership without reordering replica lists.

Demotion moves leadership off the demoted brokers to the first other replica (in replica order) that
may lead, and the plan lists the demoted brokers last in every replica list (see materialize), so no
data moves and a preferred election never brings leadership back to them.
"""

from __future__ import annotations

import numpy as np

from .goal import Context, Goal
from .state import PlanState


class PreferredLeaderElectionGoal(Goal):
    name = "PreferredLeaderElectionGoal"

    def _off(self, state: PlanState) -> np.ndarray:
        return (state.lslot != 0) & (state.rep[:, 0] >= 0) & ~state.frozen

    def violation(self, state: PlanState) -> float:
        return float(self._off(state).sum())

    def metric(self, state: PlanState) -> dict:
        return {
            "value": int(self.violation(state)),
            "limit": 0,
            "measure": "leaders not on the first replica",
        }

    def explain(self, state: PlanState) -> str:
        off = np.nonzero(self._off(state))[0]
        cannot = sum(1 for p in off.tolist() if not state.can_lead(p, 0))
        return (
            f"{len(off):,} partitions are led by another than their first replica: {cannot:,} of those "
            f"first replicas cannot lead (out of the ISR, dead, excluded), the others' election is "
            f"refused by the goals before it"
        )

    def optimize(self, state: PlanState, ctx: Context) -> None:
        for p in np.nonzero(self._off(state))[0].tolist():
            if ctx.can_lead(p, 0):
                ctx.lead(p, 0)


class DemoteGoal(Goal):
    """Hard goal of the demote mode: no partition led from a demoted broker (where another may lead)."""

    name = "DemoteBrokerGoal"
    hard = True

    def __init__(self, demoted: np.ndarray) -> None:
        self.demoted = demoted  # bool mask over broker indexes

    def _led(self, state: PlanState) -> np.ndarray:
        lb = state.leader_broker()
        return (lb >= 0) & self.demoted[np.maximum(lb, 0)]

    def violation(self, state: PlanState) -> float:
        return float(self._led(state).sum())

    def metric(self, state: PlanState) -> dict:
        return {
            "value": int(self.violation(state)),
            "limit": 0,
            "measure": "partitions led by demoted brokers",
        }

    def explain(self, state: PlanState) -> str:
        led = np.nonzero(self._led(state))[0]
        p = int(led[0])
        return (
            f"{len(led):,} partitions stay led by a demoted broker, e.g. "
            f"{state.topic_names[state.topic[p]]}-{int(state.partition_num[p])}: no other replica of "
            f"theirs is alive and in the ISR"
        )

    def optimize(self, state: PlanState, ctx: Context) -> None:
        for p in np.nonzero(self._led(state))[0].tolist():
            for t in range(int(state.rf[p])):
                b = state.rep[p, t]
                if b >= 0 and not self.demoted[b] and state.isr0[p, t] and state.eligible[b]:
                    state.set_leader(p, t)  # demotion overrides leadership exclusions of others
                    break
