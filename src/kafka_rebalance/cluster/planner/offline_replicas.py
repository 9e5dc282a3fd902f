"""Hard goal: no replica stays on a dead broker or on one being removed (decommission, offline fix).

Each such replica moves exactly once, to the least loaded broker that keeps
the partition's rack spread (state.rack_ok), so the move count equals its
lower bound. One rack per replica can always be kept while the usable racks
allow it, so the goal fails only when fewer usable brokers remain than the
partition's replication factor, or capacity forbids every target.
"""

from __future__ import annotations

import numpy as np

from .goal import Context, Goal
from .state import PlanState


class OfflineReplicasGoal(Goal):
    name = "OfflineReplicasGoal"
    hard = True

    def _leaving(self, state: PlanState) -> np.ndarray:
        return np.nonzero(~state.eligible)[0]

    def lower_bound(self, state: PlanState) -> int:
        return int(state.cnt[self._leaving(state)].sum())

    def violation(self, state: PlanState) -> float:
        return float(self.lower_bound(state))

    def metric(self, state: PlanState) -> dict:
        return {
            "value": self.lower_bound(state),
            "limit": 0,
            "measure": "replicas on dead or removed brokers",
        }

    def explain(self, state: PlanState) -> str:
        return (
            f"{self.lower_bound(state):,} replicas stay on dead or removed brokers: "
            f"{int(state.eligible.sum())} usable brokers for replication factors up to {int(state.rf.max())}, "
            "or no usable broker has room"
        )

    def accepts_move(self, state: PlanState, p: int, s: int, dst: int) -> bool:
        return bool(state.eligible[dst])

    def optimize(self, state: PlanState, ctx: Context) -> None:
        elig = np.nonzero(state.eligible)[0]
        if len(elig) == 0:
            ctx.violations.append("no broker left to hold replicas")
            return
        R = state.R
        for b in self._leaving(state).tolist():
            slots = state.slots_on(b).copy()
            # largest partitions first: they are the hardest to fit under disk limits
            slots = slots[np.argsort(-state.size_bytes[slots // R], kind="stable")]
            for f in slots.tolist():
                p, s = divmod(f, R)
                score = (
                    state.cnt[elig] / max(state.cnt[elig].mean(), 1.0)
                    + state.disk[elig] / max(state.disk[elig].mean(), 1.0)
                    + state.bin[elig] / max(state.bin[elig].mean(), 1.0)
                    + 0.1 * state.tcnt[state.topic[p], elig]
                )
                # only brokers that keep the partition's rack spread and do not hold it yet
                fits = (
                    ~np.isin(elig, state.rep[p, : state.rf[p]])
                    & state.rack_ok_many(p, s, elig)
                    & state.receives[elig]
                )
                score = np.where(fits, score, np.inf)
                for dst in elig[np.argsort(score, kind="stable")].tolist():
                    if ctx.can_move(p, s, dst):
                        ctx.move(p, s, dst)
                        break
                else:
                    ctx.violations.append(
                        f"{state.topic_names[state.topic[p]]}-{state.partition_num[p]}: no broker can take the "
                        f"replica on broker {state.broker_ids[b]} (replication factor {state.rf[p]}, "
                        f"{int(state.eligible.sum())} usable brokers; or disk/network capacity)"
                    )
