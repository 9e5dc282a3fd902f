"""The optimizer: orders the goals for a mode, runs them, and reports the plan against its bounds.

Modes (as Cruise Control's endpoints):
- `full`: the goal list (Cruise Control's names and default order, see
  registry), offline replicas moved right after the leading hard goals.
- `add-brokers`: only the new brokers receive replicas, filled to the even count.
- `remove-brokers`: the removed brokers' replicas move, nothing else does.
- `leaders`: no data moves; preferred leaders re-chosen among ISR replicas.
- `fix-offline`: only the replicas on dead brokers move (then leaders even out).
- `demote`: the given brokers lead nothing and stand last in every replica list; no data moves
  (Cruise Control's demote_broker).
Replicas on dead brokers are moved in every mode but `leaders`.

After each goal the goals before it are measured again: if it made one of them worse, its work is
undone (their `accepts_move`/`accepts_leader` normally prevent that; this is the guarantee). A hard
goal left unmet makes the plan refused. Everything is deterministic: stable sorts, no randomness, ties broken by index.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ...errors import InputError
from ...model import Broker, ClusterSnapshot
from ..kafka_json import Reassignment
from .capacity import (
    CpuCapacityGoal,
    DiskCapacityGoal,
    NetworkInboundCapacityGoal,
    NetworkOutboundCapacityGoal,
    ReplicaCapacityGoal,
)
from .goal import Context, Goal
from .leader_distribution import LeaderDistributionGoal
from .load_goal import LoadGoal
from .log_dirs import LogDirPlan, plan_log_dirs
from .materialize import materialize
from .offline_replicas import OfflineReplicasGoal
from .options import PlanOptions
from .preferred_leader import DemoteGoal
from .registry import DEFAULT_GOALS, build_goals, parse_goals
from .replica_distribution import ReplicaDistributionGoal
from .state import PlanState

DEFAULT_PLAN_BAND = 1.09  # a margin inside Cruise Control's 1.10 balance band


class Mode(enum.Enum):
    FULL = "full"
    ADD_BROKERS = "add-brokers"
    REMOVE_BROKERS = "remove-brokers"
    LEADERS = "leaders"
    FIX_OFFLINE = "fix-offline"
    DEMOTE = "demote"


@dataclass(frozen=True)
class GoalReport:
    """One goal before and after the plan: its figure against its limit, met or not, and why not."""

    goal: str
    hard: bool
    satisfied: bool
    before: dict
    after: dict
    reason: str | None = None
    rolled_back: bool = False  # its moves were undone: they made a goal before it worse
    # distance from the goal right after its own optimization and at the end of the plan: the goals
    # after it may not raise it (final <= own)
    violation_own: float = 0.0
    violation_final: float = 0.0

    def as_dict(self) -> dict:
        d = {
            "goal": self.goal,
            "hard": self.hard,
            "satisfied": self.satisfied,
            "before": self.before,
            "after": self.after,
        }
        if self.reason:
            d["reason"] = self.reason
        if self.rolled_back:
            d["rolled_back"] = True
        return d


@dataclass(frozen=True)
class PlanResult:
    mode: Mode
    reassignments: tuple[Reassignment, ...]
    replica_moves: int
    bytes_moved: float
    lower_bound_moves: int
    leader_changes: int
    optimal_leader_changes: int | None
    before: dict[str, float]
    after: dict[str, float]
    goals: tuple[tuple[str, bool], ...]
    violations: tuple[str, ...]
    after_snapshot: ClusterSnapshot = field(repr=False)
    reports: tuple[GoalReport, ...] = ()
    reorder_only: int = 0
    log_dirs: LogDirPlan | None = field(default=None, repr=False)
    cpu_source: str = ""

    @property
    def complete(self) -> bool:
        """No replica is left on a dead or removed broker (leaders mode moves no data: always complete)."""
        return all(ok for g, ok in self.goals if g == OfflineReplicasGoal.name)

    @property
    def goals_satisfied(self) -> bool:
        """Every goal met; when not, the lower bound (on reaching all of them) may exceed the moves made."""
        return all(ok for _, ok in self.goals)

    @property
    def refused(self) -> bool:
        """A hard goal is not met: the plan must not be applied (Cruise Control refuses it)."""
        return any(r.hard and not r.satisfied for r in self.reports)

    @property
    def unmet(self) -> tuple[str, ...]:
        """Each unmet goal with its reason, hard goals first."""
        rs = sorted((r for r in self.reports if not r.satisfied), key=lambda r: not r.hard)
        return tuple(f"{r.goal}: {r.reason}" for r in rs)

    def headline(self) -> str:
        """ "120 replica moves in 308 partition reassignments; 188 only reorder replicas"."""
        n = len(self.reassignments)
        text = (
            f"{self.replica_moves:,} replica moves in {n:,} partition reassignments; "
            f"{self.reorder_only:,} only reorder replicas"
        )
        if self.log_dirs is not None and self.log_dirs.moves:
            text += f"; {self.log_dirs.moves:,} replicas change log dir inside their broker"
        return text

    def summary(self) -> dict:
        out: dict[str, object] = {
            "mode": self.mode.value,
            "complete": self.complete,
            "refused": self.refused,
            "goals_satisfied": self.goals_satisfied,
            "headline": self.headline(),
            "replica_moves": self.replica_moves,
            "bytes_moved": self.bytes_moved,
            "lower_bound_moves": self.lower_bound_moves,
            "leader_changes": self.leader_changes,
            "optimal_leader_changes": self.optimal_leader_changes,
            "partitions_changed": len(self.reassignments),
            "reorder_only": self.reorder_only,
            "before": self.before,
            "after": self.after,
            "goals": [r.as_dict() for r in self.reports]
            or [{"goal": g, "satisfied": ok} for g, ok in self.goals],
            "unmet": list(self.unmet),
            "violations": list(self.violations),
            "cpu_source": self.cpu_source,
        }
        if self.log_dirs is not None:
            ld = self.log_dirs
            out["log_dirs"] = {
                "moves": ld.moves,
                "bytes_moved": ld.bytes_moved,
                "before": ld.before,
                "after": ld.after,
                "over_capacity": list(ld.over_capacity),
            }
        return out


def goals_for(
    mode: Mode,
    state: PlanState,
    band: float,
    options: PlanOptions,
    topic_spread: bool = True,
    goal_names: tuple[str, ...] | None = None,
) -> list[Goal]:
    t = options.threshold
    hard: list[Goal] = [
        ReplicaCapacityGoal(options.max_replicas_per_broker),
        DiskCapacityGoal(t("size_bytes")),
        NetworkInboundCapacityGoal(t("bytes_in")),
        NetworkOutboundCapacityGoal(t("nw_out")),
        CpuCapacityGoal(t("cpu")),
        OfflineReplicasGoal(),
    ]
    if mode is Mode.DEMOTE:
        demoted = np.zeros(state.B, dtype=bool)
        for b in options.demote_brokers:
            demoted[state.index[b]] = True
        return [DemoteGoal(demoted)]
    if mode is Mode.LEADERS:
        return [LeaderDistributionGoal(band, by_bytes=False)]
    if mode in (Mode.REMOVE_BROKERS, Mode.FIX_OFFLINE):
        return hard + [LeaderDistributionGoal(band)]
    if mode is Mode.ADD_BROKERS:
        return hard + [
            ReplicaDistributionGoal(band=None, receivers=state.new.copy()),
            LeaderDistributionGoal(band),
        ]
    chosen = build_goals(goal_names or DEFAULT_GOALS, band, options, topic_spread)
    # replicas leave dead brokers right after the leading hard goals (which they must respect)
    k = 0
    while k < len(chosen) and chosen[k].hard:
        k += 1
    return chosen[:k] + [OfflineReplicasGoal()] + chosen[k:]


def plan(
    snapshot: ClusterSnapshot,
    mode: Mode | str = Mode.FULL,
    brokers: Sequence[int] = (),
    band: float = DEFAULT_PLAN_BAND,
    capacity_threshold: float | None = None,
    leaders_by_bytes: bool = False,
    topic_spread: bool = True,
    broker_racks: Mapping[int, str] | None = None,
    goals: Sequence[str] | str | None = None,
    options: PlanOptions | None = None,
) -> PlanResult:
    """Plan a reassignment; `brokers` are the brokers added, removed or demoted.

    `goals` (full mode) is an ordered list of Cruise Control goal names, highest priority first.
    `capacity_threshold` sets the disk and network-in thresholds (`options` sets each one).
    `topic_spread=False` drops the per-topic spread goal of `full` mode. `broker_racks` gives the racks of
    added brokers the snapshot does not list yet.
    """
    mode = Mode(mode) if not isinstance(mode, Mode) else mode
    check_band(band)
    opts = options or PlanOptions()
    if capacity_threshold is not None:
        check_capacity_threshold(capacity_threshold)
        th = dict(opts.capacity_thresholds)
        th.update(size_bytes=capacity_threshold, bytes_in=capacity_threshold)
        opts = replace(opts, capacity_thresholds=th)
    goal_names = parse_goals(goals) if goals is not None else None
    if goal_names is not None and mode is not Mode.FULL:
        raise InputError(f"a goal list is for mode full only, not {mode.value}", field="goals")
    check_brokers_for_mode(mode, brokers)
    if mode is Mode.ADD_BROKERS:
        snapshot = with_new_brokers(snapshot, brokers, broker_racks or {})
    elif broker_racks:
        raise InputError("racks of new brokers are for mode add-brokers only", field="broker_racks")
    ids = {b.id for b in snapshot.brokers}
    for b in brokers:
        if b not in ids:
            raise InputError(f"broker {b} is not in the cluster", field="brokers")
    if mode in (Mode.ADD_BROKERS, Mode.REMOVE_BROKERS, Mode.DEMOTE) and not brokers:
        raise InputError(f"mode {mode.value} needs --brokers", field="brokers")
    if mode is Mode.DEMOTE:
        opts = replace(opts, demote_brokers=tuple(brokers))
    for fld in ("exclude_brokers_for_leadership", "exclude_brokers_for_replica_move"):
        for b in getattr(opts, fld):
            if b not in ids:
                raise InputError(f"broker {b} is not in the cluster", field=fld)
    state = PlanState(
        snapshot,
        remove=tuple(brokers) if mode is Mode.REMOVE_BROKERS else (),
        new=tuple(brokers) if mode is Mode.ADD_BROKERS else (),
        options=opts,
    )
    goal_list = goals_for(mode, state, band, opts, topic_spread, goal_names)
    if mode is Mode.LEADERS and leaders_by_bytes:
        goal_list = [LeaderDistributionGoal(band, by_bytes=True)]
    bound = 0
    if mode not in (Mode.LEADERS, Mode.DEMOTE):
        bound = max((g.lower_bound(state) for g in goal_list), default=0)
    before_metrics = [g.metric(state) for g in goal_list]
    ctx = Context(state)
    # hard goals met from the start hold throughout, whatever their place in the list
    kept: list[Goal] = []
    for g in goal_list:
        if g.hard:
            if isinstance(g, LoadGoal):
                g.optimize_limits(state)
            if g.satisfied(state):
                kept.append(g)
                ctx.guard(g)
    rolled: set[int] = set()
    own: list[float] = []
    for k, g in enumerate(goal_list):
        g.earlier = list(ctx.done)  # type: ignore[attr-defined]
        watch = ctx.done + [h for h in kept if h is not g and h not in ctx.done]
        held = [h.violation(state) for h in watch]
        saved = state.save()
        g.optimize(state, ctx)
        if any(h.violation(state) > v + 1e-9 * max(1.0, abs(v)) for h, v in zip(watch, held)):
            state.restore(saved)  # a lower-priority goal never makes a higher one worse
            rolled.add(k)
        ctx.finished(g)
        own.append(g.violation(state))
    reports = []
    for k, g in enumerate(goal_list):
        ok = bool(g.satisfied(state))
        reports.append(
            GoalReport(
                g.name,
                bool(g.hard),
                ok,
                before_metrics[k],
                g.metric(state),
                None if ok else g.explain(state),
                k in rolled,
                own[k],
                g.violation(state),
            )
        )
    moves, nbytes = state.moved_replicas()
    dirs = None
    if mode is not Mode.DEMOTE:
        dirs = plan_log_dirs(snapshot, state, band, opts.threshold("size_bytes"))
    if dirs is not None:
        reports += _log_dir_reports(dirs, band, opts.threshold("size_bytes"))
    status = tuple((r.goal, r.satisfied) for r in reports)
    demoted = None
    if mode is Mode.DEMOTE:
        demoted = goal_list[0].demoted  # type: ignore[attr-defined]
    reassign, after_snapshot, changes, reorder_only = materialize(
        snapshot,
        state,
        demoted,
        dirs.dirs if dirs else None,
        set(dirs.moved) if dirs else None,
    )
    leader_goal = next((g for g in goal_list if isinstance(g, LeaderDistributionGoal)), None)
    after = state.ratios(np.nonzero(state.eligible)[0])
    return PlanResult(
        mode,
        tuple(reassign),
        moves,
        nbytes,
        bound,
        changes,
        leader_goal.optimal_changes if leader_goal else None,
        state.before,
        after,
        status,
        tuple(ctx.violations),
        after_snapshot,
        tuple(reports),
        reorder_only,
        dirs,
        state.cpu_source.value,
    )


def _log_dir_reports(ld: LogDirPlan, band: float, threshold: float) -> list[GoalReport]:
    """Cruise Control's intra-broker goals, judged on the directory plan."""
    out = []
    if ld.has_capacity:
        n = len(ld.over_capacity)
        out.append(
            GoalReport(
                "IntraBrokerDiskCapacityGoal",
                True,
                n == 0,
                {"value": len(ld.over_before), "limit": 0, "measure": "log dirs over capacity"},
                {"value": n, "limit": 0, "measure": "log dirs over capacity"},
                None
                if n == 0
                else f"{n} log dirs stay above {threshold:.0%} of their capacity "
                f"({', '.join(ld.over_capacity[:5])}): the other directories of their broker "
                "have no room for their replicas",
            )
        )
    ok = ld.after <= band + 1e-9
    out.append(
        GoalReport(
            "IntraBrokerDiskUsageDistributionGoal",
            False,
            ok,
            {"value": float(ld.before), "limit": band, "measure": "max/mean"},
            {"value": float(ld.after), "limit": band, "measure": "max/mean"},
            None
            if ok
            else f"worst log dir/its broker's mean {ld.after:.2f} > {band:.2f}: the replicas are "
            "too few or too large to split evenly over the directories (or of excluded topics)",
        )
    )
    return out


def check_brokers_for_mode(mode: Mode | str, brokers: Sequence[int]) -> None:
    """Only add-brokers and remove-brokers have brokers to add or remove; elsewhere they would be ignored."""
    mode = Mode(mode) if not isinstance(mode, Mode) else mode
    if brokers and mode not in (Mode.ADD_BROKERS, Mode.REMOVE_BROKERS, Mode.DEMOTE):
        raise InputError(
            f"brokers are added, removed or demoted in modes add-brokers, remove-brokers and demote "
            f"only; mode "
            f"{mode.value} has no use for them (got {','.join(map(str, brokers))})",
            field="brokers",
        )


def check_band(band: float) -> None:
    """max/mean is never below 1, so a band under 1 (or NaN, or infinite) asks for nothing meaningful."""
    if not (math.isfinite(band) and band >= 1.0):
        raise InputError(f"a max/mean ratio: a finite number >= 1, got {band!r}", field="band")


def check_capacity_threshold(threshold: float) -> None:
    """A share of a broker's capacity, as Cruise Control's capacity thresholds: in (0, 1]."""
    if not (math.isfinite(threshold) and 0.0 < threshold <= 1.0):
        raise InputError(
            f"a share of broker capacity: a number in (0, 1], got {threshold!r}",
            field="capacity_threshold",
        )


def with_new_brokers(
    snapshot: ClusterSnapshot, brokers: Sequence[int], broker_racks: Mapping[int, str]
) -> ClusterSnapshot:
    """The snapshot plus the added brokers it does not list yet (describe text lists no empty broker).

    In a cluster with racks a broker of unknown rack would make rack awareness unverifiable, so an
    added broker the snapshot does not know needs its rack given.
    """
    by_id = {b.id: b for b in snapshot.brokers}
    for b, rack in sorted(broker_racks.items()):
        if b not in brokers:
            raise InputError(
                f"broker {b} has a rack given but is not among the added brokers",
                field="broker_racks",
            )
        if b in by_id and by_id[b].rack != rack:
            raise InputError(
                f"broker {b} is in rack {by_id[b].rack!r} in the snapshot, not {rack!r}",
                field="broker_racks",
            )
    racked = any(b.rack is not None for b in snapshot.brokers)
    extra = []
    for b in brokers:
        if b in by_id:
            continue
        new_rack = broker_racks.get(b)
        if racked and new_rack is None:
            raise InputError(
                f"broker {b} is not in the snapshot and the cluster has racks: give its rack "
                f"({b}:RACK with --broker-racks)",
                field="brokers",
            )
        if not racked and new_rack is not None:
            raise InputError(
                f"broker {b}: the cluster's brokers have no racks", field="broker_racks"
            )
        extra.append(Broker(b, new_rack))
    return (
        ClusterSnapshot(snapshot.brokers + tuple(extra), snapshot.partitions) if extra else snapshot
    )
