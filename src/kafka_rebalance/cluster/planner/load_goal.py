"""The shape shared by every per-broker load goal: keep each broker's load of one resource under a
per-broker limit, by leadership transfers first (no data moves) where the resource follows the
leader, then by replica moves (with a swap when the replica-count goal leaves no room).

Capacity goals set the limit at threshold x capacity; distribution goals at band x the broker's
share of the cluster total (its share of the total capacity when every broker declares one, as
Cruise Control balances utilization, not raw load).
"""

from __future__ import annotations

import numpy as np

from .goal import Context, Goal
from .state import PlanState
from .targets import groups

TOL = 1e-9


class LoadGoal(Goal):
    resource = "size_bytes"
    leadership = True  # may transfer leadership (when the resource follows the leader)
    replica_moves = True
    receivers_tried = 20
    swaps_tried = 8  # per receiver: a failed swap costs two moves and their undoing

    def limits(self, state: PlanState) -> np.ndarray:
        raise NotImplementedError

    def optimize_limits(self, state: PlanState) -> None:
        """Fix the limits for the rest of the plan (totals do not change while replicas move)."""
        self._lim = self.limits(state)

    def lim(self, state: PlanState) -> np.ndarray:
        lim = getattr(self, "_lim", None)
        return lim if lim is not None else self.limits(state)

    # -- acceptance ---------------------------------------------------------------

    def accepts_move(self, state: PlanState, p: int, s: int, dst: int) -> bool:
        r = self.resource
        v = state.follower[r][p]
        if state.lslot[p] == s:
            v = v + state.extra[r][p]
        if v <= 0:
            return True
        return bool(state.loads[r][dst] + v <= self._lim[dst] * (1 + TOL))

    def accepts_leader(self, state: PlanState, p: int, s: int) -> bool:
        r = self.resource
        e = state.extra[r][p]
        if e <= 0:
            return True
        b = state.rep[p, s]
        if b == state.rep[p, state.lslot[p]]:
            return True
        return bool(state.loads[r][b] + e <= self._lim[b] * (1 + TOL))

    # -- measures -------------------------------------------------------------------

    def violation(self, state: PlanState) -> float:
        lim = self.lim(state)
        el = state.eligible & np.isfinite(lim)
        load = state.load(self.resource)[el]
        excess = np.maximum(0.0, load - lim[el] * (1 + TOL))
        return float(excess.sum())

    def lower_bound(self, state: PlanState) -> int:
        if self.leadership and state.extra[self.resource].any():
            return 0  # leadership transfers may do it without moving data
        return state.replicas_to_shed(self.resource, self.lim(state))

    def worst(self, state: PlanState) -> int:
        """The eligible broker furthest above its limit (relative), or -1."""
        lim = self.lim(state)
        el = np.nonzero(state.eligible)[0]
        if len(el) == 0:
            return -1
        load = state.load(self.resource)[el]
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(lim[el] > 0, load / lim[el], np.where(load > 0, np.inf, 0.0))
        return int(el[int(np.argmax(rel))])

    # -- optimization ------------------------------------------------------------------

    def optimize(self, state: PlanState, ctx: Context) -> None:
        self.optimize_limits(state)
        lim = self._lim
        r = self.resource
        load = state.loads[r]
        el = np.nonzero(state.eligible)[0]
        group_of = np.zeros(state.B, dtype=np.int64)
        for k, g in enumerate(groups(state)):
            group_of[g] = k  # replicas only move inside a group (a rack, when racks pin them)
        lead_ok = self.leadership and state.extra[r].any()
        stuck: set[int] = set()
        while True:
            hot = el[(load[el] > lim[el] * (1 + TOL))]
            over = [
                b
                for b in hot[np.argsort(-(load[hot] - lim[hot]), kind="stable")].tolist()
                if b not in stuck
            ]
            if not over:
                return
            a = over[0]
            if lead_ok and self._shed_leadership(state, ctx, a, lim):
                continue
            if self.replica_moves and self._shed_replica(state, ctx, a, lim, el, group_of):
                continue
            stuck.add(a)

    def _shed_leadership(self, state: PlanState, ctx: Context, a: int, lim: np.ndarray) -> bool:
        """Hand the leadership of partitions led on `a` to followers on brokers with room."""
        r = self.resource
        load = state.loads[r]
        R = state.R
        slots = state.slots_on(a)
        ps = slots // R
        led = slots[state.lslot[ps] == slots % R]
        if len(led) == 0:
            return False
        p_led = led // R
        ext = state.extra[r][p_led]
        excess = load[a] - lim[a]
        # the largest share not above the excess first, then the smallest above it
        key = np.where(ext <= excess, excess - ext, 2 * (ext - excess) + excess)
        key = np.where(ext > 0, key, np.inf)
        moved = 0
        for i in np.argsort(key, kind="stable")[:400].tolist():
            if not np.isfinite(key[i]):
                break
            p = int(p_led[i])
            e = ext[i]
            best, best_rel = -1, np.inf
            for t in range(int(state.rf[p])):
                b = int(state.rep[p, t])
                if t == state.lslot[p] or b < 0 or load[b] + e > lim[b] * (1 + TOL):
                    continue
                rel = (load[b] + e) / lim[b] if lim[b] > 0 else np.inf
                if rel < best_rel and ctx.can_lead(p, t):
                    best, best_rel = t, rel
            if best >= 0:
                ctx.lead(p, best)
                moved += 1
                if load[a] <= lim[a] * (1 + TOL) or moved >= 16:
                    return True
        return moved > 0

    def _shed_replica(
        self,
        state: PlanState,
        ctx: Context,
        a: int,
        lim: np.ndarray,
        el: np.ndarray,
        group_of: np.ndarray,
    ) -> bool:
        r = self.resource
        load = state.loads[r]
        R = state.R
        excess = load[a] - lim[a]
        slots = state.slots_on(a)
        v = state.slot_value(r, slots)
        same = el[(group_of[el] == group_of[a]) & state.receives[el]]
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(lim[same] > 0, load[same] / lim[same], np.inf)
        for dst in same[np.argsort(rel, kind="stable")][: self.receivers_tried].tolist():
            if dst == a:
                continue
            room = lim[dst] - load[dst]
            if room <= 0:
                break
            fit = (v > 0) & (v <= room)
            if not fit.any():
                continue
            key = np.where(v <= excess, excess - v, 2 * (v - excess) + excess)
            key = np.where(fit, key, np.inf)
            swaps = 0
            for i in np.argsort(key, kind="stable")[:200].tolist():
                if not np.isfinite(key[i]):
                    break
                p, s = divmod(int(slots[i]), R)
                if ctx.can_move(p, s, dst):
                    ctx.move(p, s, dst)
                    return True
                if swaps < self.swaps_tried:
                    swaps += 1
                    if self._swap(state, ctx, p, s, dst, v[i]):
                        return True
        return False

    def _swap(self, state: PlanState, ctx: Context, p: int, s: int, dst: int, vp: float) -> bool:
        """Move (p, s) to dst past the count caps, then a smaller replica of dst back."""
        from .replica_distribution import ReplicaDistributionGoal

        r = self.resource

        def smaller():  # computed only once the first move is allowed
            cand = state.slots_on(dst)
            cv = state.slot_value(r, cand)
            idx = np.nonzero(cv < vp)[0]
            yield from cand[idx[np.argsort(cv[idx], kind="stable")][:200]].tolist()

        return ctx.swap(p, s, dst, smaller(), (ReplicaDistributionGoal,))
