"""Replica counts even across brokers (Cruise Control's ReplicaDistributionGoal).

Strict mode aims at floor/ceil of the (rack) mean, band mode keeps each broker
within [min(floor, (2 - band) x mean), max(ceil, band x mean)]. In `receivers` mode (adding brokers) only
the given brokers receive replicas. Donor-to-receiver moves come first, so the
move count meets the lower bound max(excess, deficit) whenever racks allow;
among a donor's replicas the one that best evens disk and bytes in moves.
"""

from __future__ import annotations

import numpy as np

from .goal import Context, Goal
from .state import PlanState
from .targets import count_lower_bound, count_targets


class ReplicaDistributionGoal(Goal):
    name = "ReplicaDistributionGoal"

    def __init__(self, band: float | None = None, receivers: np.ndarray | None = None) -> None:
        self.band = band  # None: strict floor/ceil
        self.receivers = receivers  # bool mask over brokers, or None for everyone
        # per-broker replica count limits, set by optimize(); empty until then
        self.lo: np.ndarray = np.zeros(0, dtype=np.int64)
        self.hi: np.ndarray = np.zeros(0, dtype=np.int64)

    def _limits(self, state: PlanState):
        lo, hi, gs = count_targets(state)
        if self.band is not None:
            el = state.eligible
            mean = state.cnt.sum() / max(int(el.sum()), 1)
            hi = np.where(el, np.maximum(hi, np.floor(self.band * mean)), 0)
            # Cruise Control's lower limit: mean x (2 - band), so an empty or new broker fills up too
            # (the rack's own floor when racks pin replicas and the rack mean is lower)
            lo = np.where(el, np.minimum(lo, np.ceil((2 - self.band) * mean)), 0)
        if self.receivers is not None:
            # only the new brokers must fill up; nobody else has a count cap
            hi = np.where(state.eligible, np.where(self.receivers, hi, np.inf), 0)
            lo = np.where(self.receivers, lo, 0)
        return lo, hi, gs

    def lower_bound(self, state: PlanState) -> int:
        lo, hi, gs = self._limits(state)
        return count_lower_bound(state, lo, hi, gs)

    def accepts_move(self, state: PlanState, p: int, s: int, dst: int) -> bool:
        src = state.rep[p, s]
        if state.cnt[dst] + 1 > max(self.hi[dst], state.cnt[dst]):
            return False
        if state.eligible[src] and state.cnt[src] - 1 < min(self.lo[src], state.cnt[src]):
            return False
        return True

    def violation(self, state: PlanState) -> float:
        lo, hi = (self.lo, self.hi) if len(self.hi) else self._limits(state)[:2]
        el = state.eligible
        c = state.cnt
        return float(np.maximum(0, c[el] - hi[el]).sum() + np.maximum(0, lo[el] - c[el]).sum())

    def satisfied(self, state: PlanState) -> bool:
        """Within the reachable targets and, in band mode, max/mean within the band (Cruise Control's test)."""
        if self.violation(state) > 0:
            return False
        return self.band is None or self.metric(state)["value"] <= self.band + 1e-9

    def metric(self, state: PlanState) -> dict:
        el = state.eligible
        c = state.cnt[el]
        mean = c.mean() if len(c) else 0.0
        return {
            "value": float(c.max() / mean) if mean > 0 else 1.0,
            "limit": self.band
            if self.band is not None
            else float(self.hi[el].max() / mean)
            if len(self.hi) and mean > 0
            else 1.0,
            "measure": "max/mean",
        }

    def explain(self, state: PlanState) -> str:
        from .explain import explain_counts

        return explain_counts(self, state)

    def _pick(self, state: PlanState, ctx: Context, d: int, r: int, k: int = 1) -> int:
        R = state.R
        slots = state.slots_on(d)
        if len(slots) == 0:
            return 0
        ps = slots // R
        t = state.topic[ps]
        # prefer a topic the donor holds more of than the receiver: count moves also even topic spread
        score = 0.05 * (state.tcnt[t, r] - state.tcnt[t, d]).astype(np.float64)
        for load, vals, mean_broker, per_replica in (
            (state.disk, state.size_bytes, *self._disk_means),
            (state.bin, state.bytes_in, *self._bin_means),
        ):
            v = vals[ps]
            # the receiver should carry an average replica's load per replica it holds
            want = per_replica * (state.cnt[r] + 1)
            # mostly the receiver: a donor over the mean would otherwise push its biggest replicas onto it
            score += (
                4 * ((load[r] + v - want) / mean_broker) ** 2
                + 0.1 * ((load[d] - v) / mean_broker - 1) ** 2
            )
        # best first; up to `k` moves from one scoring (loads shift little meanwhile), a full sort
        # only when the few best candidates are all refused
        moved = 0
        if k > 1 and len(score) > 4 * k:
            top = np.argpartition(score, 2 * k)[: 2 * k]
            topics: set[int] = (
                set()
            )  # one replica per topic per batch: its topic score is stale after a move
            for i in top[np.argsort(score[top], kind="stable")].tolist():
                p, s = divmod(int(slots[i]), R)
                if int(t[i]) in topics:
                    continue
                if ctx.can_move(p, s, r):
                    topics.add(int(t[i]))
                    ctx.move(p, s, r)
                    moved += 1
                    if moved == k:
                        return moved
                score[i] = np.inf
            if moved:
                return moved
        for i in _best_first(score):
            p, s = divmod(int(slots[i]), R)
            if ctx.can_move(p, s, r):
                ctx.move(p, s, r)
                return 1
        return 0

    def optimize(self, state: PlanState, ctx: Context) -> None:
        self.lo, self.hi, gs = self._limits(state)
        lo, hi = self.lo, self.hi
        el = state.eligible
        n_el = max(int(state.cnt[el].sum()), 1)
        # totals over the eligible brokers do not change while replicas move between them
        self._disk_means = (max(state.disk[el].mean(), 1e-9), state.disk[el].sum() / n_el)
        self._bin_means = (max(state.bin[el].mean(), 1e-9), state.bin[el].sum() / n_el)
        recv_mask = state.eligible & state.receives
        if self.receivers is not None:
            recv_mask = recv_mask & self.receivers
        for g in gs:
            stuck: set[tuple[int, int]] = set()
            dead_donors: set[int] = set()
            while True:
                cnt = state.cnt
                donors = [b for b in g.tolist() if cnt[b] > hi[b] and b not in dead_donors]
                short = [b for b in g.tolist() if recv_mask[b] and cnt[b] < lo[b]]
                if donors:
                    d = max(donors, key=lambda b: (cnt[b] - hi[b], -b))
                    pool = short or [
                        b for b in g.tolist() if recv_mask[b] and cnt[b] + 1 <= hi[b] and b != d
                    ]
                elif short:
                    donors2 = [
                        b for b in g.tolist() if cnt[b] - 1 >= lo[b] and not recv_mask[b]
                    ] or [
                        b
                        for b in g.tolist()
                        if cnt[b] - 1 >= lo[b] and cnt[b] > min(cnt[x] for x in short) + 1
                    ]
                    donors2 = [b for b in donors2 if b not in dead_donors]
                    if not donors2:
                        break
                    d = max(donors2, key=lambda b: (cnt[b] - lo[b], -b))
                    pool = short
                else:
                    break
                pool = sorted((b for b in pool if (d, b) not in stuck), key=lambda b: (cnt[b], b))
                moved = False
                for r in pool:
                    room = (lo[r] if cnt[r] < lo[r] else hi[r]) - cnt[r]
                    spare = cnt[d] - (hi[d] if cnt[d] > hi[d] else lo[d])
                    k = int(max(1, min(room, spare, 64) // 4))
                    if self._pick(state, ctx, d, r, k):
                        moved = True
                        break
                    stuck.add((d, r))
                if not moved:
                    dead_donors.add(d)


def _best_first(score: np.ndarray):
    """Indices of finite scores, lowest first: a few argmin picks (usually enough), then one full sort.
    Each index the caller comes back from (a refused move) is marked tried."""
    for _ in range(8):
        i = int(np.argmin(score))
        if not np.isfinite(score[i]):
            return
        yield i
        score[i] = np.inf
    for i in np.argsort(score, kind="stable").tolist():
        if not np.isfinite(score[i]):
            return
        yield i
