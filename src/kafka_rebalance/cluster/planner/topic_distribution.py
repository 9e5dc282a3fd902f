"""Each topic's replicas spread over the brokers (Cruise Control's TopicReplicaDistributionGoal).

A topic whose replicas pile up on one broker makes that broker the hot spot
when the topic's traffic grows. Limit per (topic, broker), with Cruise
Control's defaults (topic.replica.count.balance.threshold 3.0, .min.gap 2,
.max.gap 40): ceil(max(mean + min_gap, min(mean x threshold, mean + max_gap))),
mean = the topic's replicas over the brokers that can hold them. Soft goal: it
only uses moves every earlier goal accepts, so it never trades balance of
counts, disk or bytes for spread. When the brokers with room for a topic are
all at their replica-count cap, it trades: the replica goes there and one of
another topic comes back, counts unchanged (Cruise Control's swap actions).
"""

from __future__ import annotations

import numpy as np

from .goal import Context, Goal
from .replica_distribution import ReplicaDistributionGoal
from .state import PlanState
from .targets import groups


class TopicReplicaDistributionGoal(Goal):
    name = "TopicReplicaDistributionGoal"

    swap_targets = 10  # brokers tried for a trade when no single move is accepted
    swap_candidates = 200  # replicas tried to send back per trade

    def __init__(self, threshold: float = 3.0, min_gap: int = 2, max_gap: int = 40) -> None:
        self.threshold = threshold
        self.min_gap = min_gap
        self.max_gap = max_gap
        self.upper: np.ndarray = np.zeros(0, dtype=np.int64)  # per topic, set by optimize()

    def _upper(self, state: PlanState) -> np.ndarray:
        n = max(int(state.eligible.sum()), 1)
        mean = state.tcnt.sum(axis=1) / n
        return np.ceil(
            np.maximum(mean + self.min_gap, np.minimum(mean * self.threshold, mean + self.max_gap))
            - 1e-9
        )

    def accepts_move(self, state: PlanState, p: int, s: int, dst: int) -> bool:
        t = state.topic[p]
        return bool(state.tcnt[t, dst] + 1 <= max(self.upper[t], state.tcnt[t, dst]))

    def violation(self, state: PlanState) -> float:
        up = self._upper(state)
        return float(np.maximum(0, state.tcnt[:, state.eligible] - up[:, None]).sum())

    def metric(self, state: PlanState) -> dict:
        up = self._upper(state)
        el = state.eligible
        if not el.any() or len(up) == 0:
            return {}
        over = state.tcnt[:, el] - up[:, None]
        return {
            "value": max(0, int(over.max())),
            "limit": 0,
            "measure": "replicas over the topic limit",
        }

    def explain(self, state: PlanState) -> str:
        up = self._upper(state)
        el = np.nonzero(state.eligible)[0]
        over = state.tcnt[:, el] - up[:, None]
        t, j = np.unravel_index(int(np.argmax(over)), over.shape)
        b = int(el[j])
        n_t = int(state.tcnt[t].sum())
        held = int(state.tcnt[t, b])
        frozen = bool(state.frozen[state.topic == t].any())
        why = (
            "the topic is excluded from moves"
            if frozen
            else "moves off it are refused by the goals before it (counts, disk, network)"
        )
        return (
            f"topic {state.topic_names[t]}: broker {int(state.broker_ids[b])} holds {held} of its "
            f"{n_t} replicas ({held / max(n_t, 1):.0%}), limit {int(up[t])}: {why}"
        )

    def lower_bound(self, state: PlanState) -> int:
        """Each move takes one replica of one topic off one broker: the summed excess over the limits."""
        up = self._upper(state)
        over = state.tcnt - up[:, None]
        over[:, ~state.eligible] = state.tcnt[:, ~state.eligible]
        return int(np.maximum(over, 0).sum())

    def optimize(self, state: PlanState, ctx: Context) -> None:
        self.upper = up = self._upper(state)
        R = state.R
        el = state.eligible
        group_of = np.zeros(state.B, dtype=np.int64)
        for k, g in enumerate(groups(state)):
            group_of[g] = k
        over_t, over_b = np.nonzero((state.tcnt > up[:, None]) & el[None, :])
        for t, a in zip(over_t.tolist(), over_b.tolist()):
            slots = state.slots_on(a)
            mine = slots[state.topic[slots // R] == t]
            cands = np.nonzero(el & (group_of == group_of[a]))[0]
            for f in mine.tolist():
                if state.tcnt[t, a] <= up[t]:
                    break
                p, s = divmod(f, R)
                order = cands[np.lexsort((state.cnt[cands], state.tcnt[t, cands]))]
                room = [d for d in order.tolist() if state.tcnt[t, d] + 1 <= up[t]]
                for dst in room:
                    if ctx.can_move(p, s, dst):
                        ctx.move(p, s, dst)
                        break
                else:
                    # every broker with room for the topic is at its count (or load) cap: trade replicas
                    for dst in room[: self.swap_targets]:
                        if ctx.swap(
                            p,
                            s,
                            dst,
                            self._trades(state, p, a, dst),
                            (ReplicaDistributionGoal,),
                            lambda q, _s: state.tcnt[state.topic[q], a] + 1 <= up[state.topic[q]],
                        ):
                            break

    def _trades(self, state: PlanState, p: int, a: int, dst: int):
        """Replicas on dst to send back to a for (p on a -> dst): other topics dst holds more of than a,
        closest to p in size and bytes in (so the load goals accept the trade). Computed lazily."""
        R = state.R
        cand = state.slots_on(dst)
        q = cand // R
        t = state.topic[q]
        ok = (t != state.topic[p]) & (state.tcnt[t, a] + 1 <= self.upper[t])
        idx = np.nonzero(ok)[0]
        q = q[idx]
        closeness = np.abs(state.size_bytes[q] - state.size_bytes[p]) / max(
            state.size_bytes.mean(), 1e-9
        ) + np.abs(state.bytes_in[q] - state.bytes_in[p]) / max(state.bytes_in.mean(), 1e-9)
        spread = (state.tcnt[t[idx], a] - state.tcnt[t[idx], dst]).astype(np.float64)
        order = np.lexsort((closeness, spread))
        yield from cand[idx[order][: self.swap_candidates]].tolist()
