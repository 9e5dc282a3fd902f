"""Leadership even across brokers with no data moved (Cruise Control's LeaderReplicaDistributionGoal;
with `by_bytes`, leader bytes out and messages in evened too).

The planned leader of each partition is re-chosen among the slots that may lead after the plan: leader
counts by the exact min-cost flow of leader_balance (fewest leader changes), then, when `by_bytes`,
bytes_out and messages_in below band x mean by a greedy pass inside the count band. When the flow's
choice would make a goal optimized before it worse (network out or CPU follow the leader), it is
dropped for a greedy pass that only makes leader changes every earlier goal accepts.
"""

from __future__ import annotations

import math

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

    def _default_limits(self, state: PlanState) -> list[tuple[str, float]]:
        n = max(int(state.eligible.sum()), 1)
        mean = int((state.leader_broker() >= 0).sum()) / n
        return [("leaders", float(max(math.ceil(mean), math.floor(self.band * mean))))]

    def violation(self, state: PlanState) -> float:
        el = state.eligible
        if not el.any():
            return 0.0
        total = 0.0
        for r, lim in self._limits or self._default_limits(state):
            load = state.load(r)[el]
            total += float(np.maximum(0.0, load - lim * (1 + 1e-9)).sum()) / max(lim, 1e-300)
        return total

    def accepts_leader(self, state: PlanState, p: int, s: int) -> bool:
        b = state.rep[p, s]
        if b == state.rep[p, state.lslot[p]]:
            return True
        for r, lim in self._limits:
            add = 1.0 if r == "leaders" else state.extra[r][p]
            if state.load(r)[b] + add > lim * (1 + 1e-9):
                return False
        return True

    def accepts_move(self, state: PlanState, p: int, s: int, dst: int) -> bool:
        return state.lslot[p] != s or self.accepts_leader_to(state, p, dst)

    def accepts_leader_to(self, state: PlanState, p: int, dst: int) -> bool:
        for r, lim in self._limits:
            add = 1.0 if r == "leaders" else state.extra[r][p]
            if state.load(r)[dst] + add > lim * (1 + 1e-9):
                return False
        return True

    def metric(self, state: PlanState) -> dict:
        el = state.eligible
        c = state.lead[el]
        mean = c.mean() if len(c) else 0.0
        lim = dict(self._limits or self._default_limits(state))["leaders"]
        return {
            "value": float(c.max() / mean) if mean > 0 else 1.0,
            "limit": float(lim / mean) if mean > 0 else 1.0,
            "measure": "max/mean",
        }

    def explain(self, state: PlanState) -> str:
        from .explain import explain_leaders

        return explain_leaders(self, state)

    def optimize(self, state: PlanState, ctx: Context) -> None:
        P = state.P
        valid = state.rep >= 0
        b = np.maximum(state.rep, 0)
        cur_slot = np.zeros_like(valid)
        cur_slot[np.arange(P), state.lslot] = True
        may = valid & state.eligible[b] & ((state.rep != state.rep0) | state.isr0)
        may &= state.leads[b] | cur_slot  # excluded brokers keep what they lead, take nothing new
        may &= ~state.frozen[:, None] | cur_slot  # excluded topics keep their leader
        pp, ss = np.nonzero(may)
        edge_p = pp.astype(np.int64)
        edge_b = state.rep[pp, ss].astype(np.int64)
        has_leader = state.leader0 >= 0
        current = np.where(
            has_leader, state.rep0[np.arange(P), np.maximum(state.leader0, 0)], -1
        ).astype(np.int64)
        n_lead_brokers = int((state.eligible & state.leads).sum()) or int(state.eligible.sum())
        sol = min_change_leaders(edge_p, edge_b, current, P, state.B, leader_brokers=n_lead_brokers)
        self.optimal_changes = sol.changes
        choice = sol.choice
        limits = [("leaders", float(sol.upper))]
        if self.by_bytes:
            n_lead = int((choice >= 0).sum())
            upper = max(sol.upper, int(np.floor(self.band * n_lead / max(n_lead_brokers, 1))))
            weights, names = [], []
            for name in ("bytes_out", "messages_in"):
                w = state.extra[name]
                if w.sum() > 0:
                    weights.append((w, self.band * w[choice >= 0].sum() / max(n_lead_brokers, 1)))
                    names.append(name)
            if weights:
                choice = refine_leader_bytes(choice, edge_p, edge_b, state.B, weights, upper)
            limits = [("leaders", float(upper))] + [(r, lim) for r, (_, lim) in zip(names, weights)]
        before = [g.violation(state) for g in ctx.done]
        saved = state.lslot.copy()
        self._apply(state, choice)
        if all(g.violation(state) <= v + 1e-9 for g, v in zip(ctx.done, before)):
            self._limits = limits
            return
        # the exact choice breaks an earlier goal: back, then only changes every earlier goal accepts
        state.set_leaders(saved)
        self._limits = []
        self.optimal_changes = None
        self._greedy(state, ctx, float(sol.upper))
        top = float(max(sol.upper, state.lead[state.eligible].max()))
        self._limits = [("leaders", top)]
        if self.by_bytes:
            n = max(n_lead_brokers, 1)
            for name in ("bytes_out", "messages_in"):
                w = state.extra[name]
                if w.sum() > 0:
                    lim = self.band * w.sum() / n
                    self._greedy_weight(state, ctx, name, lim, top)
                    self._limits.append(
                        (name, float(max(lim, state.load(name)[state.eligible].max())))
                    )

    def _apply(self, state: PlanState, choice: np.ndarray) -> None:
        has = choice >= 0
        slot = np.argmax(state.rep == choice[:, None], axis=1)
        state.set_leaders(np.where(has, slot, state.lslot))

    def _greedy_weight(
        self, state: PlanState, ctx: Context, name: str, lim: float, upper: float
    ) -> None:
        """Leadership off brokers above `lim` of a leader-carried weight, keeping counts <= upper,
        earlier weights under their limits, and every earlier goal (ctx.can_lead)."""
        R = state.R
        load = state.load(name)
        w = state.extra[name]
        el = np.nonzero(state.eligible)[0]
        earlier = list(self._limits)
        for a in el[np.argsort(-load[el], kind="stable")].tolist():
            if load[a] <= lim:
                break
            slots = state.slots_on(a)
            led = slots[state.lslot[slots // R] == slots % R] // R
            for p in led[np.argsort(-w[led], kind="stable")].tolist():
                if load[a] <= lim:
                    break
                for t in range(int(state.rf[p])):
                    b = int(state.rep[p, t])
                    if b < 0 or t == state.lslot[p] or state.lead[b] + 1 > upper:
                        continue
                    if load[b] + w[p] > lim:
                        continue
                    if any(
                        r != "leaders" and state.load(r)[b] + state.extra[r][p] > x
                        for r, x in earlier
                    ):
                        continue
                    if ctx.can_lead(p, t):
                        ctx.lead(p, t)
                        break

    def _greedy(self, state: PlanState, ctx: Context, upper: float) -> None:
        R = state.R
        el = np.nonzero(state.eligible)[0]
        for a in el[np.argsort(-state.lead[el], kind="stable")].tolist():
            if state.lead[a] <= upper:
                break
            slots = state.slots_on(a)
            led = slots[state.lslot[slots // R] == slots % R]
            for f in led.tolist():
                if state.lead[a] <= upper:
                    break
                p = f // R
                best, best_n = -1, upper
                for t in range(int(state.rf[p])):
                    b = int(state.rep[p, t])
                    if b >= 0 and state.lead[b] + 1 <= best_n and t != state.lslot[p]:
                        if ctx.can_lead(p, t):
                            best, best_n = t, state.lead[b] + 1
                if best >= 0:
                    ctx.lead(p, best)
