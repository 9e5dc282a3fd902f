"""Disks inside each broker (Cruise Control's IntraBrokerDiskCapacityGoal and
IntraBrokerDiskUsageDistributionGoal), once replicas are placed on brokers.

A replica that stays on its broker keeps its log directory unless balancing moves it; a replica new to
a broker of several directories goes to the least used one (largest first). Then, per broker, replicas
move from the most used directory to the least used while a directory is above band x the broker's
mean use (use = bytes / capacity when every directory declares one, else bytes) or above threshold x its
capacity. Excluded topics stay where they are. Pure: the arrays in, the directory per slot out.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...model import ClusterSnapshot
from .state import PlanState


@dataclass(frozen=True)
class LogDirPlan:
    dirs: dict[int, list[str | None]]  # partition index -> directory per slot (None: unknown/any)
    moved: frozenset[int]  # partitions with a replica moved between directories of one broker
    moves: int
    bytes_moved: float
    before: float  # worst directory use over its broker's mean, over brokers with several dirs
    after: float
    over_capacity: tuple[str, ...]  # "broker:dir" still above threshold x capacity
    over_before: tuple[str, ...] = ()  # ... and before the plan
    has_capacity: bool = False  # some directory declares a capacity


def _broker_dirs(snapshot: ClusterSnapshot, state: PlanState) -> dict[int, dict[str, float | None]]:
    out: dict[int, dict[str, float | None]] = {}
    for b in snapshot.brokers:
        if b.log_dirs:
            out[state.index[b.id]] = {d.path: d.capacity_bytes for d in b.log_dirs}
    for p in snapshot.partitions:
        if p.log_dirs is None:
            continue
        for r, d in zip(p.replicas, p.log_dirs):
            if d is not None:
                out.setdefault(state.index[r], {}).setdefault(d, None)
    return out


def _worst(use: dict[str, float], cap: dict[str, float | None]) -> float:
    if len(use) < 2:
        return 1.0
    w = _weights(cap)
    util = {d: use[d] / w[d] for d in use}
    mean = sum(use.values()) / sum(w.values())
    return max(util.values()) / mean if mean > 0 else 1.0


def _weights(cap: dict[str, float | None]) -> dict[str, float]:
    if all(c for c in cap.values()):
        return {d: float(c) for d, c in cap.items()}  # type: ignore[arg-type]
    return {d: 1.0 for d in cap}


def plan_log_dirs(
    snapshot: ClusterSnapshot, state: PlanState, band: float, threshold: float
) -> LogDirPlan | None:
    if not any(p.log_dirs is not None for p in snapshot.partitions):
        return None
    bdirs = _broker_dirs(snapshot, state)
    size = state.size_bytes
    dirs: dict[int, list[str | None]] = {}
    use: dict[int, dict[str, float]] = {b: {d: 0.0 for d in ds} for b, ds in bdirs.items()}
    before_use: dict[int, dict[str, float]] = {b: {d: 0.0 for d in ds} for b, ds in bdirs.items()}
    new: list[tuple[int, int]] = []
    for i, p in enumerate(snapshot.partitions):
        old = dict(zip(p.replicas, p.log_dirs)) if p.log_dirs is not None else {}
        for r, d in old.items():
            if d is not None and state.index[r] in before_use:
                before_use[state.index[r]][d] += size[i]
        row: list[str | None] = []
        for s in range(int(state.rf[i])):
            b = int(state.rep[i, s])
            d = old.get(int(state.broker_ids[b]))
            if int(state.broker_ids[b]) not in p.replicas:
                d = None
                if len(bdirs.get(b, {})) > 1:
                    new.append((i, s))
            elif d is not None:
                use[b][d] += size[i]
            row.append(d)
        dirs[i] = row
    # new replicas: largest first, each to its broker's least used directory
    new.sort(key=lambda x: -size[x[0]])
    for i, s in new:
        b = int(state.rep[i, s])
        w = _weights(bdirs[b])
        d = min(sorted(use[b]), key=lambda x: (use[b][x] + size[i]) / w[x])
        use[b][d] += size[i]
        dirs[i][s] = d
    before = max((_worst(before_use[b], bdirs[b]) for b in before_use), default=1.0)
    moved: set[int] = set()
    moves, nbytes = 0, 0.0
    R = state.R
    for b, cap in bdirs.items():
        if len(cap) < 2 or not state.eligible[b]:
            continue
        w = _weights(cap)
        total = sum(use[b].values())
        mean = total / sum(w.values())
        # replicas on b with a known directory, by directory
        by_dir: dict[str, list[tuple[float, int, int]]] = {d: [] for d in cap}
        for f in state.slots_on(b).tolist():
            i, s = divmod(f, R)
            d = dirs[i][s]
            if d is not None and not state.frozen[i] and size[i] > 0:
                by_dir[d].append((float(size[i]), i, s))
        for _ in range(10_000):
            util = {d: use[b][d] / w[d] for d in cap}
            hi = max(sorted(util), key=lambda d: util[d])
            lo = min(sorted(util), key=lambda d: util[d])
            lim_hi = band * mean * w[hi]
            over_cap = cap[hi] is not None and use[b][hi] > threshold * float(cap[hi] or 0)
            if use[b][hi] <= lim_hi and not over_cap:
                break
            excess = use[b][hi] - mean * w[hi]
            room = mean * w[lo] - use[b][lo]
            cap_lo = cap[lo]
            if cap_lo is not None and over_cap:
                room = min(room, threshold * cap_lo - use[b][lo])
            cands = [c for c in by_dir[hi] if c[0] <= max(room, 0) + 1e-9]
            if not cands:
                break
            # the largest replica that does not overshoot the excess, else the smallest
            fit = [c for c in cands if c[0] <= excess]
            pick = max(fit) if fit else min(cands)
            by_dir[hi].remove(pick)
            by_dir[lo].append(pick)
            sz, i, s = pick
            use[b][hi] -= sz
            use[b][lo] += sz
            dirs[i][s] = lo
            moved.add(i)
            moves += 1
            nbytes += sz
    after = max((_worst(use[b], bdirs[b]) for b in use), default=1.0)

    def over_in(u: dict[int, dict[str, float]]) -> tuple[str, ...]:
        return tuple(
            f"{int(state.broker_ids[b])}:{d}"
            for b, cap in sorted(bdirs.items())
            for d, c in sorted(cap.items())
            if c is not None and u[b][d] > threshold * c
        )

    has_cap = any(c is not None for cap in bdirs.values() for c in cap.values())
    return LogDirPlan(
        dirs,
        frozenset(moved),
        moves,
        nbytes,
        before,
        after,
        over_in(use),
        over_in(before_use),
        has_cap,
    )
