"""Rack goals (Cruise Control's RackAwareGoal and RackAwareDistributionGoal, both hard).

RackAwareGoal: each partition's replicas on distinct racks, as many as the usable racks allow
(min(RF, racks); Cruise Control refuses RF above the rack count, we ask the most that is possible).
RackAwareDistributionGoal: for RF above the rack count, replicas spread as evenly as possible (per
rack counts differ by at most one). No move anywhere ever lowers a partition's rack spread below what
it needs (PlanState.rack_ok), so these goals only repair partitions that start out wrong.
"""

from __future__ import annotations

import numpy as np

from .goal import Context, Goal
from .state import PlanState


def rack_counts(state: PlanState) -> np.ndarray:
    """(P, racks) replicas of each partition per rack, over usable brokers."""
    K = len(state.rack_names)
    if K == 0:
        return np.zeros((state.P, 1), dtype=np.int32)
    r = np.where(state.rep >= 0, state.rack[np.maximum(state.rep, 0)], -1)
    # one-hot over the few racks: (P, R, K) booleans summed over the slots
    return (r[:, :, None] == np.arange(K)[None, None, :]).sum(axis=1, dtype=np.int32)


def usable_racks(state: PlanState) -> np.ndarray:
    K = len(state.rack_names)
    have = np.zeros(max(K, 1), dtype=bool)
    r = state.rack[state.eligible & (state.rack >= 0)]
    have[r] = True
    return have[:K] if K else have[:0]


class RackAwareGoal(Goal):
    name = "RackAwareGoal"
    hard = True

    def bad(self, state: PlanState) -> np.ndarray:
        if not state.rack_names:
            return np.zeros(state.P, dtype=bool)
        spread = (rack_counts(state) > 0).sum(axis=1)
        need = np.minimum(state.rf, state.eligible_racks)
        return spread < need

    def violation(self, state: PlanState) -> float:
        return float(self.bad(state).sum())

    def lower_bound(self, state: PlanState) -> int:
        if not state.rack_names:
            return 0
        spread = (rack_counts(state) > 0).sum(axis=1)
        return int(np.maximum(0, np.minimum(state.rf, state.eligible_racks) - spread).sum())

    def metric(self, state: PlanState) -> dict:
        return {
            "value": int(self.violation(state)),
            "limit": 0,
            "measure": "partitions short of racks",
        }

    def explain(self, state: PlanState) -> str:
        bad = np.nonzero(self.bad(state))[0]
        p = int(bad[0])
        racks = [
            state.rack_names[state.rack[b]] if state.rack[b] >= 0 else "no rack"
            for b in state.rep[p, : state.rf[p]].tolist()
        ]
        frozen = int(state.frozen[bad].sum())
        why = (
            f"{frozen} of them are of excluded topics"
            if frozen
            else "no broker of a missing rack accepts the replica"
        )
        return (
            f"{len(bad):,} partitions span fewer racks than min(RF, {state.eligible_racks} racks), "
            f"e.g. {state.topic_names[state.topic[p]]}-{state.partition_num[p]} on {', '.join(racks)}: {why}"
        )

    def optimize(self, state: PlanState, ctx: Context) -> None:
        if not state.rack_names:
            return
        R = state.R
        el = np.nonzero(state.eligible & state.receives)[0]
        for p in np.nonzero(self.bad(state))[0].tolist():
            row = state.rep[p, : state.rf[p]]
            racks = state.rack[row].tolist()
            for s in range(int(state.rf[p])):
                if racks[s] >= 0 and racks.count(racks[s]) == 1:
                    continue  # alone in its rack: keep it
                have = set(state.rack[state.rep[p, : state.rf[p]]].tolist())
                cand = el[~np.isin(state.rack[el], list(have)) & (state.rack[el] >= 0)]
                for dst in cand[np.argsort(state.cnt[cand], kind="stable")].tolist():
                    if ctx.can_move(p, s, dst):
                        ctx.move(p, s, dst)
                        racks[s] = int(state.rack[dst])
                        break
                if len({r for r in racks if r >= 0}) >= min(int(state.rf[p]), state.eligible_racks):
                    break
        del R


class RackAwareDistributionGoal(Goal):
    name = "RackAwareDistributionGoal"
    hard = True

    def _gap(self, counts: np.ndarray, have: np.ndarray) -> np.ndarray:
        if not have.any():
            return np.zeros(len(counts), dtype=np.int32)
        c = counts[:, have]
        return c.max(axis=1) - c.min(axis=1)

    def bad(self, state: PlanState) -> np.ndarray:
        if not state.rack_names:
            return np.zeros(state.P, dtype=bool)
        have = usable_racks(state)
        counts = rack_counts(state)
        gap = self._gap(counts, have)
        # fewer replicas than racks: at most one per rack (spread), else counts within one of each other
        few = state.rf <= have.sum()
        return np.where(few, counts.max(axis=1) > 1, gap > 1)

    def violation(self, state: PlanState) -> float:
        return float(self.bad(state).sum())

    def metric(self, state: PlanState) -> dict:
        return {
            "value": int(self.violation(state)),
            "limit": 0,
            "measure": "partitions unevenly over racks",
        }

    def explain(self, state: PlanState) -> str:
        bad = np.nonzero(self.bad(state))[0]
        p = int(bad[0])
        return (
            f"{len(bad):,} partitions have replicas unevenly over the racks, e.g. "
            f"{state.topic_names[state.topic[p]]}-{state.partition_num[p]}: no broker of a less used "
            f"rack accepts the replica"
        )

    def accepts_move(self, state: PlanState, p: int, s: int, dst: int) -> bool:
        rs, rd = state.rack[state.rep[p, s]], state.rack[dst]
        if rs == rd or rd < 0:
            return rs == rd
        K = len(state.rack_names)
        c = np.bincount(np.maximum(state.rack[state.rep[p, : state.rf[p]]], 0), minlength=K).astype(
            np.int64
        )
        have = usable_racks(state)
        before = c[have].max() - c[have].min() if have.any() else 0
        if rs >= 0:
            c[rs] -= 1
        c[rd] += 1
        after = c[have].max() - c[have].min() if have.any() else 0
        return bool(after <= max(before, 1))

    def optimize(self, state: PlanState, ctx: Context) -> None:
        if not state.rack_names:
            return
        have = usable_racks(state)
        el = np.nonzero(state.eligible & state.receives)[0]
        for p in np.nonzero(self.bad(state))[0].tolist():
            for _ in range(int(state.rf[p])):
                K = len(state.rack_names)
                row = state.rep[p, : state.rf[p]]
                c = np.bincount(np.maximum(state.rack[row], 0), minlength=K)
                c = np.where(have, c, -1)
                hi = int(np.argmax(c))
                lo_c = np.where(have, c, 1 << 30)
                lo = int(np.argmin(lo_c))
                if c[hi] - lo_c[lo] <= 1 and (state.rf[p] > have.sum() or c[hi] <= 1):
                    break
                s_list = [s for s in range(int(state.rf[p])) if state.rack[row[s]] == hi]
                cand = el[state.rack[el] == lo]
                done = False
                for s in s_list:
                    for dst in cand[np.argsort(state.cnt[cand], kind="stable")].tolist():
                        if ctx.can_move(p, s, dst):
                            ctx.move(p, s, dst)
                            done = True
                            break
                    if done:
                        break
                if not done:
                    break
