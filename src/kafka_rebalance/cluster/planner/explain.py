"""Why a goal is not met, in one line a person can act on.

Each explanation names the figure against its limit and the broker where it is worst, then the causes
found on that broker: load pinned by excluded topics, one replica too big for the band's slack, a rack
with too few brokers when racks pin replicas, brokers excluded from receiving, the cluster's load above
the sum of the limits, and which earlier goals refuse the moves that would help (tried on the broker's
largest replicas towards the least loaded brokers).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from .state import PlanState
from .targets import groups, rack_pinned

LABEL = {
    "size_bytes": "disk",
    "bytes_in": "network in",
    "nw_out": "network out",
    "cpu": "CPU",
    "potential_nw_out": "potential network out",
    "leader_bytes_in": "leader bytes in",
    "replicas": "replicas",
    "leaders": "leaders",
}


def _pname(state: PlanState, p: int) -> str:
    return f"{state.topic_names[state.topic[p]]}-{int(state.partition_num[p])}"


def _bid(state: PlanState, b: int) -> int:
    return int(state.broker_ids[b])


def _blocked_by(goal, state: PlanState, a: int, slots: np.ndarray) -> list[str]:
    """Earlier goals (or rack awareness / exclusions) refusing moves off broker a, most frequent first."""
    earlier = getattr(goal, "earlier", [])
    el = np.nonzero(state.eligible & state.receives)[0]
    if len(el) == 0 or len(slots) == 0:
        return []
    load = state.load(getattr(goal, "resource", "replicas")).astype(float)
    dsts = [b for b in el[np.argsort(load[el], kind="stable")][:10].tolist() if b != a]
    tally: Counter[str] = Counter()
    R = state.R
    for f in slots[:30].tolist():
        p, s = divmod(int(f), R)
        for dst in dsts:
            if (state.rep[p] == dst).any():
                continue
            if state.frozen[p]:
                tally["topic excluded"] += 1
            elif not state.rack_ok(p, s, dst):
                tally["rack awareness"] += 1
            elif state.lslot[p] == s and not state.leads[dst]:
                tally["leadership exclusion"] += 1
            else:
                for g in earlier:
                    if not g.accepts_move(state, p, s, dst):
                        tally[g.name] += 1
                        break
    return [k for k, _ in tally.most_common(3)]


def _rack_note(state: PlanState, a: int, values: np.ndarray, limit: float) -> str | None:
    if not rack_pinned(state) or state.rack[a] < 0:
        return None
    g = next(g for g in groups(state) if a in g.tolist())
    el = g[state.eligible[g]]
    share = values[el].sum() / max(len(el), 1)
    if share > limit:
        return (
            f"rack {state.rack_names[state.rack[a]]} has only {len(el)} brokers and, with one "
            f"replica per rack, keeps its {values[el].sum() / max(values.sum(), 1e-300):.0%} of the load"
        )
    return None


def _verdict(
    head: str, causes: list[str], goal, state: PlanState, a: int, slots: np.ndarray
) -> str:
    """The line for broker `a`: its own causes, then the two every goal shares (brokers shut to
    new replicas, the moves off `a` that higher goals refuse)."""
    shut = int((state.eligible & ~state.receives).sum())
    if shut:
        causes.append(f"{shut} brokers are excluded from receiving replicas")
    blockers = _blocked_by(goal, state, a, slots)
    if blockers:
        causes.append("the moves that would help are refused by " + ", ".join(blockers))
    return head + ": " + ("; ".join(causes) if causes else "no single move off it is accepted")


def explain_load(goal, state: PlanState) -> str:
    r = goal.resource
    a = goal.worst(state)
    m = goal.metric(state)
    lim = goal.lim(state)
    load = state.load(r)
    label = LABEL.get(r, r)
    if a < 0:
        return f"{label}: no usable broker"
    if m.get("measure") == "max/mean":
        head = f"{label} max/mean {m['value']:.2f} > {m['limit']:.2f} (broker {_bid(state, a)})"
    elif "value" in m:
        head = (
            f"{label} at {m['value']:.0%} of capacity > {m['limit']:.0%} (broker {_bid(state, a)})"
        )
    else:
        head = f"{label} above its limit on broker {_bid(state, a)}"
    causes: list[str] = []
    el = state.eligible & np.isfinite(lim)
    if load[el].sum() > lim[el].sum() + 1e-9:
        causes.append(
            f"the cluster's {label} load is above the sum of the brokers' limits: no placement fits"
        )
    slots = state.slots_on(a)
    vals = state.slot_value(r, slots)
    order = np.argsort(-vals, kind="stable")
    slots, vals = slots[order], vals[order]
    frozen = state.frozen[slots // state.R]
    if frozen.any() and vals[frozen].sum() > 0:
        share = vals[frozen].sum() / max(load[a], 1e-300)
        causes.append(f"{share:.0%} of broker {_bid(state, a)}'s {label} is of excluded topics")
    if len(vals) and lim[a] > 0 and np.isfinite(lim[a]):
        band = getattr(goal, "band", None)
        slack = lim[a] - lim[a] / band if band else lim[a]
        if vals[0] > slack:
            causes.append(
                f"its largest replica ({_pname(state, int(slots[0] // state.R))}) alone carries "
                f"{vals[0] / max(lim[a], 1e-300):.0%} of the broker's limit"
            )
    note = _rack_note(state, a, load, lim[a])
    if note:
        causes.append(note)
    return _verdict(head, causes, goal, state, a, slots)


def explain_counts(goal, state: PlanState) -> str:
    m = goal.metric(state)
    el = np.nonzero(state.eligible)[0]
    c = state.cnt
    hi = goal.hi if len(goal.hi) else goal._limits(state)[1]
    lo = goal.lo if len(goal.lo) else goal._limits(state)[0]
    over = el[c[el] > hi[el]]
    under = el[c[el] < lo[el]]
    if len(over):
        a = int(over[np.argmax(c[over] - hi[over])])
    elif len(under):
        a = int(under[0])
    else:
        a = int(el[np.argmax(c[el])])
    head = f"replicas max/mean {m['value']:.2f} > {m['limit']:.2f} (broker {_bid(state, a)})"
    causes: list[str] = []
    mean = c[el].sum() / max(len(el), 1)
    if mean > 0 and np.ceil(mean) / mean > m["limit"]:
        causes.append(
            f"counts are whole numbers: {int(c[el].sum()):,} replicas on {len(el)} brokers put "
            f"{int(np.ceil(mean))} on some, already {np.ceil(mean) / mean:.2f} x the mean"
        )
    t = int(np.argmax(state.tcnt[:, a]))
    n_t = int(state.tcnt[t].sum())
    held = int(state.tcnt[t, a])
    if n_t and held / n_t > 1.5 / max(len(el), 1) and held > 1:
        causes.append(
            f"broker {_bid(state, a)} holds {held / n_t:.0%} of topic {state.topic_names[t]}'s replicas"
        )
    band = goal.band if goal.band is not None else 1.0
    note = _rack_note(state, a, c.astype(float), band * mean)
    if note:
        causes.append(note)
    slots = state.slots_on(a)
    frozen = state.frozen[slots // state.R]
    if frozen.any():
        causes.append(f"{int(frozen.sum()):,} of its replicas are of excluded topics")
    return _verdict(head, causes, goal, state, a, slots)


def explain_leaders(goal, state: PlanState) -> str:
    m = goal.metric(state)
    el = np.nonzero(state.eligible)[0]
    a = int(el[np.argmax(state.lead[el])])
    head = f"leaders max/mean {m['value']:.2f} > {m['limit']:.2f} (broker {_bid(state, a)})"
    R = state.R
    slots = state.slots_on(a)
    led = slots[state.lslot[slots // R] == slots % R] // R
    causes: list[str] = []
    alone = 0
    for p in led.tolist():
        others = [
            t for t in range(int(state.rf[p])) if t != state.lslot[p] and state.can_lead(p, t)
        ]
        alone += not others
    if alone:
        causes.append(
            f"{alone:,} of its partitions have no other replica that can lead (ISR, exclusions)"
        )
    if state.frozen[led].any():
        causes.append(f"{int(state.frozen[led].sum()):,} are of excluded topics")
    if not causes:
        causes.append("leader changes off it are refused by the goals before it (network out, CPU)")
    return head + ": " + "; ".join(causes)
