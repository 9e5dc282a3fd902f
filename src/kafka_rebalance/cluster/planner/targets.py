"""Per-broker replica-count targets, rack aware.

When every partition has exactly one replica per rack (RF == number of racks),
no move can take a replica out of its rack, so each rack's replica total is
fixed and the even target is per rack: floor/ceil of (rack total / brokers in
the rack). Otherwise the target is the cluster-wide mean.
"""

from __future__ import annotations

import numpy as np

from .state import PlanState


def rack_pinned(state: PlanState) -> bool:
    n_racks = len(state.rack_names)
    if n_racks == 0 or (state.rack[state.eligible] < 0).any():
        return False
    if state.eligible_racks < n_racks or not (state.rf == n_racks).all():
        # (a rack with no usable broker left gives its replicas to the others: rack totals change)
        return False
    r = state.rack[np.maximum(state.rep, 0)]
    r = np.where(state.rep >= 0, r, -1)
    srt = np.sort(r, axis=1)
    distinct = (np.diff(srt, axis=1) != 0).all(axis=1) & (srt[:, 0] >= 0)
    return bool(distinct.all())


def groups(state: PlanState) -> list[np.ndarray]:
    """Broker index groups that exchange replicas: racks when pinned, else everyone."""
    if rack_pinned(state):
        return [np.nonzero(state.rack == k)[0] for k in range(len(state.rack_names))]
    return [np.arange(state.B)]


def count_targets(state: PlanState) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """(floor, ceil) per broker of the even replica count; 0 for brokers that must end empty."""
    lo = np.zeros(state.B, dtype=np.float64)
    hi = np.zeros(state.B, dtype=np.float64)
    gs = groups(state)
    for g in gs:
        total = state.cnt[g].sum()
        el = g[state.eligible[g]]
        if len(el) == 0:
            continue
        mean = total / len(el)
        lo[el] = np.floor(mean)
        hi[el] = np.ceil(mean)
    return lo, hi, gs


def count_lower_bound(
    state: PlanState, lo: np.ndarray, hi: np.ndarray, gs: list[np.ndarray]
) -> int:
    """Each move lowers one broker's count by one and raises another's: per group max(excess, deficit)."""
    total = 0
    for g in gs:
        excess = np.maximum(0, state.cnt[g] - hi[g]).sum()
        deficit = np.maximum(0, lo[g] - state.cnt[g]).sum()
        total += int(max(excess, deficit))
    return total
