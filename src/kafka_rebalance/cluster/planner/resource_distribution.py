"""Replica-carried resources even across brokers: disk (size_bytes) and network in (bytes_in).

Cruise Control's DiskUsageDistributionGoal / NetworkInboundUsageDistributionGoal:
every broker at most band x mean. The busiest broker gives away the replica
whose size best fits both its excess and the receiver's room; when the
replica-count goal leaves the receiver no room, a swap (big replica out, a
smaller one back) keeps counts where they are at the cost of two moves.
"""

from __future__ import annotations

import numpy as np

from .goal import Context, Goal
from .replica_distribution import ReplicaDistributionGoal
from .state import PlanState
from .targets import groups


class ResourceDistributionGoal(Goal):
    def __init__(self, resource: str, band: float) -> None:
        if resource not in ("size_bytes", "bytes_in"):
            raise ValueError(resource)
        self.resource = resource
        self.band = band
        self.name = {
            "size_bytes": "DiskUsageDistributionGoal",
            "bytes_in": "NetworkInboundUsageDistributionGoal",
        }[resource]
        self.limit = np.inf

    def _limit(self, state: PlanState) -> float:
        el = state.eligible
        total = state.load(self.resource).sum()
        return self.band * total / max(int(el.sum()), 1)

    def accepts_move(self, state: PlanState, p: int, s: int, dst: int) -> bool:
        load = state.load(self.resource)
        v = state.partition_value(self.resource)[p]
        return bool(load[dst] + v <= max(self.limit, load[dst]))

    def satisfied(self, state: PlanState) -> bool:
        return bool(
            (state.load(self.resource)[state.eligible] <= self._limit(state) * (1 + 1e-9)).all()
        )

    def lower_bound(self, state: PlanState) -> int:
        return state.replicas_to_shed(self.resource, self._limit(state))

    def optimize(self, state: PlanState, ctx: Context) -> None:
        self.limit = lim = self._limit(state)
        load = state.load(self.resource)
        vals = state.partition_value(self.resource)
        R = state.R
        el = np.nonzero(state.eligible)[0]
        group_of = np.zeros(state.B, dtype=np.int64)
        for k, g in enumerate(groups(state)):
            group_of[g] = k  # replicas only move inside a group (a rack, when racks pin them)
        stuck: set[int] = set()
        while True:
            over = [
                b
                for b in el[np.argsort(-load[el], kind="stable")].tolist()
                if load[b] > lim and b not in stuck
            ]
            if not over:
                return
            a = over[0]
            excess = load[a] - lim
            slots = state.slots_on(a)
            v = vals[slots // R]
            moved = False
            same = el[group_of[el] == group_of[a]]
            for r in same[np.argsort(load[same], kind="stable")][:20].tolist():
                if r == a:
                    continue
                room = lim - load[r]
                if room <= 0:
                    break
                fit = (v > 0) & (v <= room)
                if not fit.any():
                    continue
                # prefer the largest value not above the excess, then the smallest above it
                key = np.where(v <= excess, excess - v, 2 * (v - excess) + excess)
                key = np.where(fit, key, np.inf)
                order = np.argsort(key, kind="stable")
                for i in order[:200].tolist():
                    if not np.isfinite(key[i]):
                        break
                    p, s = divmod(int(slots[i]), R)
                    if ctx.can_move(p, s, r):
                        ctx.move(p, s, r)
                        moved = True
                        break
                    if self._swap(state, ctx, p, s, a, r, vals, lim):
                        moved = True
                        break
                if moved:
                    break
            if not moved:
                stuck.add(a)

    def _swap(
        self,
        state: PlanState,
        ctx: Context,
        p: int,
        s: int,
        a: int,
        r: int,
        vals: np.ndarray,
        lim: float,
    ) -> bool:
        """Move (p, s) a -> r past the count cap, then a smaller replica r -> a to restore counts."""

        def smaller():  # computed only once the first move is allowed
            cand = state.slots_on(r)
            cv = vals[cand // state.R]
            # y must be smaller than x: a sheds vx - vy (progress, even when one swap cannot finish the job)
            idx = np.nonzero(cv < vals[p])[0]
            yield from cand[idx[np.argsort(cv[idx], kind="stable")][:200]].tolist()

        return ctx.swap(p, s, r, smaller(), (ReplicaDistributionGoal,))
